// EmbeddingBag, mode "sum" with per_sample_weights (DLRM's weighted pooling):
// out[b, :] = sum_j w[j] * table[indices[j], :]. The weight is a second stream of layer 1 (one
// load per lookup); the update is math.fma, one rounding, like PyTorch's float32 CPU kernel.
func.func @embedding_bag_weighted(%table: memref<?x?xf32>, %indices: memref<?xi64>, %offsets: memref<?xi64>, %weights: memref<?xf32>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nbags = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start_i64 = memref.load %offsets[%b] : memref<?xi64>
    %start = arith.index_cast %start_i64 : i64 to index
    %end_i64 = memref.load %offsets[%b1] : memref<?xi64>
    %end = arith.index_cast %end_i64 : i64 to index
    scf.for %j = %start to %end step %c1 {
      %row_i64 = memref.load %indices[%j] : memref<?xi64>
      %row = arith.index_cast %row_i64 : i64 to index
      %w = memref.load %weights[%j] : memref<?xf32>
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %table[%row, %d] : memref<?x?xf32>
        %acc = memref.load %out[%b, %d] : memref<?x?xf32>
        %new = math.fma %w, %v, %acc : f32
        memref.store %new, %out[%b, %d] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
