// EmbeddingBag (sum) over a bf16 table, as PyTorch computes it on the CPU: each bag is
// accumulated in f32 in lookup order and rounded to bf16 once, with ties rounded away from zero
// (fbgemm's float -> bfloat16 conversion adds 0x8000 and truncates; measured against
// F.embedding_bag, tests/compiler/test_dtypes.py). The rounding mode is MLIR's
// arith::RoundingMode::to_nearest_away = 4 (written as an attribute: xDSL 0.74 does not parse
// the `to_nearest_away` keyword). bf16 memrefs are NumPy uint16 arrays of the bit patterns.
func.func @embedding_bag_sum_bf16(%table: memref<?x?xbf16>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xbf16>) -> memref<?x?xbf16> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %nbags = memref.dim %out, %c0 : memref<?x?xbf16>
  %dim = memref.dim %table, %c1 : memref<?x?xbf16>
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
        %v = memref.load %table[%row, %d] : memref<?x?xbf16>
        %w = arith.extf %v : bf16 to f32
        %a = memref.load %acc[%d] : memref<?xf32>
        %s = arith.addf %a, %w : f32
        memref.store %s, %acc[%d] : memref<?xf32>
      }
    }
    scf.for %k = %c0 to %dim step %c1 {
      %a = memref.load %acc[%k] : memref<?xf32>
      %h = arith.truncf %a {roundingmode = 4 : i32} : f32 to bf16
      memref.store %h, %out[%b, %k] : memref<?x?xbf16>
    }
  }
  return %out : memref<?x?xbf16>
}
