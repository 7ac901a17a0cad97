// Three levels of indirection with index arithmetic on the access unit (the "hashing trick" of
// recommendation models): out[i, :] = table[remap[h(ids[i])], :] with the multiplicative hash
// h(x) = (x * 0x9E3779B97F4A7C15) >>u (64 - %logb) (Knuth), %remap a bucket -> row table, and
// the table flattened to 1-D rows of 2^%logd elements (row start = row << %logd). Loads:
// ids[i] (1) -> remap[h] (2) -> table[...] (3); muli/shrui/shli/addi are ALU streams.
func.func @hashed_gather(%table: memref<?xf32>, %remap: memref<?xindex>, %ids: memref<?xi64>, %logb: i64, %logd: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %golden = arith.constant -7046029254386353131 : i64
  %c64 = arith.constant 64 : i64
  %n = memref.dim %ids, %c0 : memref<?xi64>
  %dim = memref.dim %out, %c1 : memref<?x?xf32>
  %shift = arith.subi %c64, %logb : i64
  scf.for %i = %c0 to %n step %c1 {
    %id = memref.load %ids[%i] : memref<?xi64>
    %prod = arith.muli %id, %golden : i64
    %h64 = arith.shrui %prod, %shift : i64
    %h = arith.index_cast %h64 : i64 to index
    %row = memref.load %remap[%h] : memref<?xindex>
    %base = arith.shli %row, %logd : index
    scf.for %d = %c0 to %dim step %c1 {
      %a = arith.addi %base, %d : index
      %v = memref.load %table[%a] : memref<?xf32>
      memref.store %v, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
