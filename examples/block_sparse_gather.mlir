// Block-sparse attention, the gather: for each query block q, the key/value blocks that the
// block mask selects (CSR: block_idx[block_ptr[q]:block_ptr[q+1]], as in BigBird / Longformer
// block-sparse layouts) are copied into contiguous K/V buffers, one block of %bs rows after the
// other: k_out[j*bs + r, :] = key[block_idx[j]*bs + r, :] (and the same for values). Four layers:
// query blocks, selected blocks, rows of a block, features; the row addresses are ALU streams.
func.func @block_sparse_gather(%block_ptr: memref<?xi64>, %block_idx: memref<?xi64>, %key: memref<?x?xf32>, %value: memref<?x?xf32>, %bs: index, %k_out: memref<?x?xf32>, %v_out: memref<?x?xf32>) -> (memref<?x?xf32>, memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nptr = memref.dim %block_ptr, %c0 : memref<?xi64>
  %nq = arith.subi %nptr, %c1 : index
  %dim = memref.dim %key, %c1 : memref<?x?xf32>
  scf.for %q = %c0 to %nq step %c1 {
    %q1 = arith.addi %q, %c1 : index
    %start_i64 = memref.load %block_ptr[%q] : memref<?xi64>
    %start = arith.index_cast %start_i64 : i64 to index
    %end_i64 = memref.load %block_ptr[%q1] : memref<?xi64>
    %end = arith.index_cast %end_i64 : i64 to index
    scf.for %j = %start to %end step %c1 {
      %blk_i64 = memref.load %block_idx[%j] : memref<?xi64>
      %blk = arith.index_cast %blk_i64 : i64 to index
      %base = arith.muli %blk, %bs : index
      %obase = arith.muli %j, %bs : index
      scf.for %r = %c0 to %bs step %c1 {
        %row = arith.addi %base, %r : index
        %orow = arith.addi %obase, %r : index
        scf.for %d = %c0 to %dim step %c1 {
          %k = memref.load %key[%row, %d] : memref<?x?xf32>
          %v = memref.load %value[%row, %d] : memref<?x?xf32>
          memref.store %k, %k_out[%orow, %d] : memref<?x?xf32>
          memref.store %v, %v_out[%orow, %d] : memref<?x?xf32>
        }
      }
    }
  }
  return %k_out, %v_out : memref<?x?xf32>, memref<?x?xf32>
}
