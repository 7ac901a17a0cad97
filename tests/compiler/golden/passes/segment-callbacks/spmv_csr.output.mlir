builtin.module {
  func.func @spmv_csr(%rowptr: memref<?xi64>, %col: memref<?xi64>, %val: memref<?xf32>, %x: memref<?xf32>, %y: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %y, %c0 : memref<?xf32>
    dlc.configure_access {
      %i = dlc.tu layer 0 %c0 to %n step 1 : index, index
      %i1 = dlc.alu_stream layer 0 add %i, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start_i64 = dlc.mem_stream layer 0 %rowptr[%i] stride 8 : memref<?xi64>, !dlc.stream<index>
      %end_i64 = dlc.mem_stream layer 0 %rowptr[%i1] stride 8 : memref<?xi64>, !dlc.stream<index>
      %seg_len = dlc.alu_stream layer 0 sub %end_i64, %start_i64 : !dlc.stream<i64>, !dlc.stream<i64> -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start_i64 to %end_i64 step 1 check_order : !dlc.stream<i64>, !dlc.stream<i64>
      %c_i64 = dlc.mem_stream layer 1 %col[%j] stride 8 : memref<?xi64>, !dlc.stream<index>
      %a = dlc.mem_stream layer 1 %val[%j] stride 4 : memref<?xf32>, !dlc.stream<index>
      %xv = dlc.mem_stream layer 1 %x[%c_i64] stride 4 : memref<?xf32>, !dlc.stream<i64>
      dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
      dlc.register_operand layer 1 begin %i : !dlc.stream<index>
      dlc.register_operand layer 1 iter %a : !dlc.stream<f32>
      dlc.register_operand layer 1 iter %xv : !dlc.stream<f32>
      dlc.register_callback layer 1 begin 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %seg_len_1 = dlc.pop_operand : index
        %i_1 = dlc.pop_operand : index
        %c0_1 = arith.constant 0 : index
        %c1_1 = arith.constant 1 : index
        scf.for %lookup = %c0_1 to %seg_len_1 step %c1_1 {
          %a_1 = dlc.pop_operand : f32
          %xv_1 = dlc.pop_operand : f32
          %acc = memref.load %y[%i_1] : memref<?xf32>
          %s = math.fma %a_1, %xv_1, %acc : f32
          memref.store %s, %y[%i_1] : memref<?xf32>
        }
      }
    }
    func.return %y : memref<?xf32>
  }
}
