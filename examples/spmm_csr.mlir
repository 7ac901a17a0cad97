// Sparse (CSR) x dense: out[i, :] = sum_j val[j] * x[col[j], :] for j in rowptr[i]:rowptr[i+1]
// (GNN neighbour aggregation). The number of rows is read from %nrows[0] by the core before the
// start (an argument register); values are weights loaded by the access unit, one per nonzero.
func.func @spmm_csr(%rowptr: memref<?xindex>, %col: memref<?xindex>, %val: memref<?xf32>, %x: memref<?x?xf32>, %nrows: memref<1xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.load %nrows[%c0] : memref<1xindex>
  %dim = memref.dim %x, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %i1 = arith.addi %i, %c1 : index
    %start = memref.load %rowptr[%i] : memref<?xindex>
    %end = memref.load %rowptr[%i1] : memref<?xindex>
    scf.for %j = %start to %end step %c1 {
      %c = memref.load %col[%j] : memref<?xindex>
      %a = memref.load %val[%j] : memref<?xf32>
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %x[%c, %d] : memref<?x?xf32>
        %acc = memref.load %out[%i, %d] : memref<?x?xf32>
        %p = arith.mulf %a, %v : f32
        %s = arith.addf %acc, %p : f32
        memref.store %s, %out[%i, %d] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
