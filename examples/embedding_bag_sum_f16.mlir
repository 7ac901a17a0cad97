// EmbeddingBag (sum) over an f16 table, as PyTorch computes it on the CPU: each bag is
// accumulated in f32 in lookup order and rounded to f16 once (at::native's embedding_bag for
// Half). %acc is one f32 row on the core: zeroed on the bag's begin callback, accumulated on the
// iter callback (arith.extf of the 2-byte elements the access unit loads), rounded into %out
// (arith.truncf, to nearest even) on the bag's end callback.
func.func @embedding_bag_sum_f16(%table: memref<?x?xf16>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf16>) -> memref<?x?xf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %nbags = memref.dim %out, %c0 : memref<?x?xf16>
  %dim = memref.dim %table, %c1 : memref<?x?xf16>
  %acc = memref.alloc(%dim) : memref<?xf32>
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start = memref.load %offsets[%b] : memref<?xindex>
    %end = memref.load %offsets[%b1] : memref<?xindex>
    scf.for %k = %c0 to %dim step %c1 {
      memref.store %zero, %acc[%k] : memref<?xf32>
    }
    scf.for %j = %start to %end step %c1 {
      %row = memref.load %indices[%j] : memref<?xindex>
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %table[%row, %d] : memref<?x?xf16>
        %w = arith.extf %v : f16 to f32
        %a = memref.load %acc[%d] : memref<?xf32>
        %s = arith.addf %a, %w : f32
        memref.store %s, %acc[%d] : memref<?xf32>
      }
    }
    scf.for %k = %c0 to %dim step %c1 {
      %a = memref.load %acc[%k] : memref<?xf32>
      %h = arith.truncf %a : f32 to f16
      memref.store %h, %out[%b, %k] : memref<?x?xf16>
    }
  }
  return %out : memref<?x?xf16>
}
