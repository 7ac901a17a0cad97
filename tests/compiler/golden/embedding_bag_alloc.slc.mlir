builtin.module {
  func.func @embedding_bag_alloc(%table: memref<?x?xf32>, %indices: memref<?xi32>, %offsets: memref<?xi32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %noffsets = memref.dim %offsets, %c0 : memref<?xi32>
    %nbags = arith.subi %noffsets, %c1 : index
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    %out = memref.alloc(%nbags, %dim) : memref<?x?xf32>
    scf.for %i = %c0 to %nbags step %c1 {
      scf.for %k = %c0 to %dim step %c1 {
        memref.store %zero, %out[%i, %k] : memref<?x?xf32>
      }
    }
    slc.for %b = %c0 to %nbags step 1 : index, index {
      %b1 = slc.alu_stream add %b, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start_i32 = slc.mem_stream %offsets[%b] : memref<?xi32>, !slc.stream<index>
      %start = slc.cast %start_i32 : !slc.stream<i32> to !slc.stream<index>
      %end_i32 = slc.mem_stream %offsets[%b1] : memref<?xi32>, !slc.stream<index>
      %end = slc.cast %end_i32 : !slc.stream<i32> to !slc.stream<index>
      slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
        %row_i32 = slc.mem_stream %indices[%j] : memref<?xi32>, !slc.stream<index>
        %row = slc.cast %row_i32 : !slc.stream<i32> to !slc.stream<index>
        slc.for %d = %c0 to %dim step 1 : index, index {
          %v = slc.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
          slc.callback iter {
            %b_1 = slc.from_stream %b : !slc.stream<index>
            %d_1 = slc.from_stream %d : !slc.stream<index>
            %v_1 = slc.from_stream %v : !slc.stream<f32>
            %acc = memref.load %out[%b_1, %d_1] : memref<?x?xf32>
            %sum = arith.addf %acc, %v_1 : f32
            memref.store %sum, %out[%b_1, %d_1] : memref<?x?xf32>
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
