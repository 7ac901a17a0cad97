// Sparse (CSR) matrix x dense vector: y[i] = sum_j val[j] * x[col[j]] for j in rowptr[i]:rowptr[i+1]
// (scipy.sparse.csr_matrix @ x, torch.sparse.mm with a one-column dense operand). Two layers: rows,
// then nonzeros; col, val and x[col] are streams of layer 1, the multiply-add a callback on its iter:
// math.fma, one rounding, as PyTorch's CPU kernel for a sparse CSR tensor @ dense computes it.
// The number of rows is dim(y).
func.func @spmv_csr(%rowptr: memref<?xi64>, %col: memref<?xi64>, %val: memref<?xf32>, %x: memref<?xf32>, %y: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %y, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %i1 = arith.addi %i, %c1 : index
    %start_i64 = memref.load %rowptr[%i] : memref<?xi64>
    %start = arith.index_cast %start_i64 : i64 to index
    %end_i64 = memref.load %rowptr[%i1] : memref<?xi64>
    %end = arith.index_cast %end_i64 : i64 to index
    scf.for %j = %start to %end step %c1 {
      %c_i64 = memref.load %col[%j] : memref<?xi64>
      %c = arith.index_cast %c_i64 : i64 to index
      %a = memref.load %val[%j] : memref<?xf32>
      %xv = memref.load %x[%c] : memref<?xf32>
      %acc = memref.load %y[%i] : memref<?xf32>
      %s = math.fma %a, %xv, %acc : f32
      memref.store %s, %y[%i] : memref<?xf32>
    }
  }
  return %y : memref<?xf32>
}
