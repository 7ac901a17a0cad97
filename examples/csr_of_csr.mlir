// Two-level CSR (a CSR of CSR bags, e.g. users -> sessions -> items): out[g, :] is the sum of
// the rows of every item of every session of group g. %gptr (ngroups + 1 entries) delimits the
// sessions of a group, %sptr (nsessions + 1) the items of a session, %items the table rows.
// Four layers: g, s in [gptr[g], gptr[g+1]), k in [sptr[s], sptr[s+1]), d.
func.func @csr_of_csr(%table: memref<?x?xf32>, %gptr: memref<?xindex>, %sptr: memref<?xindex>, %items: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ngroups = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  scf.for %g = %c0 to %ngroups step %c1 {
    %g1 = arith.addi %g, %c1 : index
    %s0 = memref.load %gptr[%g] : memref<?xindex>
    %s1 = memref.load %gptr[%g1] : memref<?xindex>
    scf.for %s = %s0 to %s1 step %c1 {
      %sn = arith.addi %s, %c1 : index
      %k0 = memref.load %sptr[%s] : memref<?xindex>
      %k1 = memref.load %sptr[%sn] : memref<?xindex>
      scf.for %k = %k0 to %k1 step %c1 {
        %row = memref.load %items[%k] : memref<?xindex>
        scf.for %d = %c0 to %dim step %c1 {
          %v = memref.load %table[%row, %d] : memref<?x?xf32>
          %acc = memref.load %out[%g, %d] : memref<?x?xf32>
          %sum = arith.addf %acc, %v : f32
          memref.store %sum, %out[%g, %d] : memref<?x?xf32>
        }
      }
    }
  }
  return %out : memref<?x?xf32>
}
