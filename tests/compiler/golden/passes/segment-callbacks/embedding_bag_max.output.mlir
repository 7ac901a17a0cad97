builtin.module {
  func.func @embedding_bag_max(%table: memref<?x?xf32>, %indices: memref<?xi64>, %offsets: memref<?xi64>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nbags = memref.dim %out, %c0 : memref<?x?xf32>
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    %zero = arith.constant 0.000000e+00 : f32
    %ninf = arith.constant 0xff800000 : f32
    dlc.configure_access {
      %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
      %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start_i64 = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xi64>, !dlc.stream<index>
      %end_i64 = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xi64>, !dlc.stream<index>
      %seg_len = dlc.alu_stream layer 0 sub %end_i64, %start_i64 : !dlc.stream<i64>, !dlc.stream<i64> -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start_i64 to %end_i64 step 1 check_order : !dlc.stream<i64>, !dlc.stream<i64>
      %row_i64 = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xi64>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %row_i64, %dim : !dlc.stream<i64>, index -> !dlc.stream<index>
      %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      dlc.register_operand layer 1 begin %b : !dlc.stream<index>
      dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
      dlc.register_operand layer 1 begin %b : !dlc.stream<index>
      dlc.register_operand layer 1 begin %b : !dlc.stream<index>
      dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
      dlc.register_callback layer 1 begin 1
    }
    dlc.compute_loop {
      dlc.case 1 {
        %b_1 = dlc.pop_operand : index
        scf.for %d0 = %c0 to %dim step %c1 {
          memref.store %ninf, %out[%b_1, %d0] : memref<?x?xf32>
        }
        %seg_len_1 = dlc.pop_operand : index
        %b_2 = dlc.pop_operand : index
        %c0_1 = arith.constant 0 : index
        %c1_1 = arith.constant 1 : index
        %b_3 = dlc.pop_operand : index
        scf.for %lookup = %c0_1 to %seg_len_1 step %c1_1 {
          %v_row = dlc.pop_buffer %dim : memref<?xf32>
          %c1_2 = arith.constant 1 : index
          scf.for %d = %c0 to %dim step %c1_2 {
            %v = memref.load %v_row[%d] : memref<?xf32>
            %acc = memref.load %out[%b_2, %d] : memref<?x?xf32>
            %new = arith.maximumf %acc, %v : f32
            memref.store %new, %out[%b_2, %d] : memref<?x?xf32>
          }
        }
        %c0_2 = arith.constant 0 : index
        %empty = arith.cmpi eq, %seg_len_1, %c0_2 : index
        scf.if %empty {
          scf.for %d1 = %c0 to %dim step %c1 {
            memref.store %zero, %out[%b_3, %d1] : memref<?x?xf32>
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
