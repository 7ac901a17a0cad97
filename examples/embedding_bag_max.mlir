// EmbeddingBag, mode "max" (torch.nn.functional.embedding_bag(..., mode="max")): the elementwise
// maximum of each bag's rows; an empty bag is 0, as in PyTorch. The -inf fill of the bag's output
// row becomes a callback on the begin of layer 1, the zero fill of an empty bag one on its end.
func.func @embedding_bag_max(%table: memref<?x?xf32>, %indices: memref<?xi64>, %offsets: memref<?xi64>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nbags = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start_i64 = memref.load %offsets[%b] : memref<?xi64>
    %start = arith.index_cast %start_i64 : i64 to index
    %end_i64 = memref.load %offsets[%b1] : memref<?xi64>
    %end = arith.index_cast %end_i64 : i64 to index
    scf.for %d0 = %c0 to %dim step %c1 {
      memref.store %ninf, %out[%b, %d0] : memref<?x?xf32>
    }
    scf.for %j = %start to %end step %c1 {
      %row_i64 = memref.load %indices[%j] : memref<?xi64>
      %row = arith.index_cast %row_i64 : i64 to index
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %table[%row, %d] : memref<?x?xf32>
        %acc = memref.load %out[%b, %d] : memref<?x?xf32>
        %new = arith.maximumf %acc, %v : f32
        memref.store %new, %out[%b, %d] : memref<?x?xf32>
      }
    }
    %empty = arith.cmpi eq, %start, %end : index
    scf.if %empty {
      scf.for %d1 = %c0 to %dim step %c1 {
        memref.store %zero, %out[%b, %d1] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
