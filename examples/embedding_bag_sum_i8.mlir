// EmbeddingBag (sum) over an int8 table (quantized embeddings, without scales), accumulated in
// i32, plus a reduction in a callback: %amax[b] = max over d of |out[b, d]|. The access unit
// loads 1-byte elements sign-extended (MEM size 1, signed); the core widens them with
// arith.extsi. The end callback of a bag runs an scf.for with iter_args (arith.maxsi).
func.func @embedding_bag_sum_i8(%table: memref<?x?xi8>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xi32>, %amax: memref<?xi32>) -> (memref<?x?xi32>, memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i32
  %nbags = memref.dim %out, %c0 : memref<?x?xi32>
  %dim = memref.dim %table, %c1 : memref<?x?xi8>
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start = memref.load %offsets[%b] : memref<?xindex>
    %end = memref.load %offsets[%b1] : memref<?xindex>
    scf.for %j = %start to %end step %c1 {
      %row = memref.load %indices[%j] : memref<?xindex>
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %table[%row, %d] : memref<?x?xi8>
        %w = arith.extsi %v : i8 to i32
        %acc = memref.load %out[%b, %d] : memref<?x?xi32>
        %sum = arith.addi %acc, %w : i32
        memref.store %sum, %out[%b, %d] : memref<?x?xi32>
      }
    }
    // |x| = max(x, 0 - x), reduced over the row in registers of the core
    %m = scf.for %k = %c0 to %dim step %c1 iter_args(%best = %zero) -> (i32) {
      %x = memref.load %out[%b, %k] : memref<?x?xi32>
      %nx = arith.subi %zero, %x : i32
      %ax = arith.maxsi %x, %nx : i32
      %nb = arith.maxsi %best, %ax : i32
      scf.yield %nb : i32
    }
    memref.store %m, %amax[%b] : memref<?xi32>
  }
  return %out, %amax : memref<?x?xi32>, memref<?xi32>
}
