builtin.module {
  func.func @spmm_csr(%rowptr: memref<?xindex>, %col: memref<?xindex>, %val: memref<?xf32>, %x: memref<?x?xf32>, %nrows: memref<1xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.load %nrows[%c0] : memref<1xindex>
    %dim = memref.dim %x, %c1 : memref<?x?xf32>
    dlc.configure_access {
      %i = dlc.tu layer 0 %c0 to %n step 1 : index, index
      %i1 = dlc.alu_stream layer 0 add %i, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %rowptr[%i] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %rowptr[%i1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %seg_len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %c = dlc.mem_stream layer 1 %col[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %a = dlc.mem_stream layer 1 %val[%j] stride 4 : memref<?xf32>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %c, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
      %v_buf = dlc.buf_stream layer 1 %x[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
      dlc.register_operand layer 1 begin %i : !dlc.stream<index>
      dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %a : !dlc.stream<f32>
      dlc.register_callback layer 1 begin 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %seg_len_1 = dlc.pop_operand : index
        %i_1 = dlc.pop_operand : index
        %c0_1 = arith.constant 0 : index
        %c1_1 = arith.constant 1 : index
        scf.for %lookup = %c0_1 to %seg_len_1 step %c1_1 {
          %v_row = dlc.pop_buffer %dim : memref<?xf32>
          %a_1 = dlc.pop_operand : f32
          %c1_2 = arith.constant 1 : index
          scf.for %d = %c0 to %dim step %c1_2 {
            %v = memref.load %v_row[%d] : memref<?xf32>
            %acc = memref.load %out[%i_1, %d] : memref<?x?xf32>
            %p = arith.mulf %a_1, %v : f32
            %s = arith.addf %acc, %p : f32
            memref.store %s, %out[%i_1, %d] : memref<?x?xf32>
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
