// EmbeddingBag (sum) in the style of a torch-mlir lowering: i32 index arrays widened with
// arith.index_cast, offsets with nbags + 1 entries, and the output allocated and zero-filled
// inside the function (the zero fill is core prologue; nbags = dim(offsets) - 1 is an argument
// register the core computes before the start).
func.func @embedding_bag_alloc(%table: memref<?x?xf32>, %indices: memref<?xi32>, %offsets: memref<?xi32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %noffsets = memref.dim %offsets, %c0 : memref<?xi32>
  %nbags = arith.subi %noffsets, %c1 : index
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  %out = memref.alloc(%nbags, %dim) : memref<?x?xf32>
  scf.for %i = %c0 to %nbags step %c1 {
    scf.for %k = %c0 to %dim step %c1 {
      memref.store %zero, %out[%i, %k] : memref<?x?xf32>
    }
  }
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start_i32 = memref.load %offsets[%b] : memref<?xi32>
    %start = arith.index_cast %start_i32 : i32 to index
    %end_i32 = memref.load %offsets[%b1] : memref<?xi32>
    %end = arith.index_cast %end_i32 : i32 to index
    scf.for %j = %start to %end step %c1 {
      %row_i32 = memref.load %indices[%j] : memref<?xi32>
      %row = arith.index_cast %row_i32 : i32 to index
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %table[%row, %d] : memref<?x?xf32>
        %acc = memref.load %out[%b, %d] : memref<?x?xf32>
        %sum = arith.addf %acc, %v : f32
        memref.store %sum, %out[%b, %d] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
