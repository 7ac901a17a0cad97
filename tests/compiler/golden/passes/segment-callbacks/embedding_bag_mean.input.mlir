builtin.module {
  func.func @embedding_bag_mean(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nbags = memref.dim %out, %c0 : memref<?x?xf32>
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    dlc.configure_access {
      %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
      %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
      %n = dlc.alu_stream layer 0 max %len, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
      %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %b : !dlc.stream<index>
      dlc.register_callback layer 1 iter 0
      dlc.register_operand layer 1 end %n : !dlc.stream<index>
      dlc.register_operand layer 1 end %b : !dlc.stream<index>
      dlc.register_callback layer 1 end 1
    }
    dlc.compute_loop {
      dlc.case 0 {
        %v_row = dlc.pop_buffer %dim : memref<?xf32>
        %b_1 = dlc.pop_operand : index
        %c1_1 = arith.constant 1 : index
        scf.for %d = %c0 to %dim step %c1_1 {
          %v = memref.load %v_row[%d] : memref<?xf32>
          %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
          %sum = arith.addf %acc, %v : f32
          memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
        }
      }
      dlc.case 1 {
        %n_i64 = dlc.pop_operand : i64
        %b_2 = dlc.pop_operand : index
        %nf = arith.sitofp %n_i64 : i64 to f32
        scf.for %d_1 = %c0 to %dim step %c1 {
          %s = memref.load %out[%b_2, %d_1] : memref<?x?xf32>
          %m = arith.divf %s, %nf : f32
          memref.store %m, %out[%b_2, %d_1] : memref<?x?xf32>
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
