builtin.module {
  func.func @embedding_bag_sum_bf16(%table: memref<?x?xbf16>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xbf16>) -> memref<?x?xbf16> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %nbags = memref.dim %out, %c0 : memref<?x?xbf16>
    %dim = memref.dim %table, %c1 : memref<?x?xbf16>
    %acc = memref.alloc(%dim) : memref<?xf32>
    dlc.configure_access {
      %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
      %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
      %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 2 : memref<?x?xbf16>, !dlc.stream<index>, index -> !dlc.buffer<bf16>
      dlc.register_callback layer 1 begin 0
      dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<bf16>
      dlc.register_callback layer 1 iter 1
      dlc.register_operand layer 1 end %b : !dlc.stream<index>
      dlc.register_callback layer 1 end 2
    }
    dlc.compute_loop {
      dlc.case 0 {
        scf.for %k = %c0 to %dim step %c1 {
          memref.store %zero, %acc[%k] : memref<?xf32>
        }
      }
      dlc.case 1 {
        %v_row = dlc.pop_buffer %dim : memref<?xbf16>
        %c1_1 = arith.constant 1 : index
        scf.for %d = %c0 to %dim step %c1_1 {
          %v = memref.load %v_row[%d] : memref<?xbf16>
          %w = arith.extf %v : bf16 to f32
          %a = memref.load %acc[%d] : memref<?xf32>
          %s = arith.addf %a, %w : f32
          memref.store %s, %acc[%d] : memref<?xf32>
        }
      }
      dlc.case 2 {
        %b_1 = dlc.pop_operand : index
        scf.for %k_1 = %c0 to %dim step %c1 {
          %a_1 = memref.load %acc[%k_1] : memref<?xf32>
          %h = arith.truncf %a_1 {roundingmode = 4 : i32} : f32 to bf16
          memref.store %h, %out[%b_1, %k_1] : memref<?x?xbf16>
        }
      }
    }
    func.return %out : memref<?x?xbf16>
  }
}
