builtin.module {
  func.func @embedding_bag(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nbags = memref.dim %out, %c0 : memref<?x?xf32>
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    slc.for %b = %c0 to %nbags step 1 : index, index {
      %b1 = slc.alu_stream add %b, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start = slc.mem_stream %offsets[%b] : memref<?xindex>, !slc.stream<index>
      %end = slc.mem_stream %offsets[%b1] : memref<?xindex>, !slc.stream<index>
      slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
        %row = slc.mem_stream %indices[%j] : memref<?xindex>, !slc.stream<index>
        %v_buf = slcv.buf_stream %table[%row, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
        slc.callback iter {
          %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
          %b_1 = slc.from_stream %b : !slc.stream<index>
          %c1_1 = arith.constant 1 : index
          scf.for %d = %c0 to %dim step %c1_1 {
            %v = memref.load %v_row[%d] : memref<?xf32>
            %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
            %sum = arith.addf %acc, %v : f32
            memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
