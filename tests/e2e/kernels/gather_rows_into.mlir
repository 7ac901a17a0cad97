// A destination-passing gather (returns nothing): out[j, :] = table[ids[j], :].
// Written for tests/e2e/test_cli_run.py: `ember run` writes its output argument as arg2.
func.func @gather_rows_into(%t: memref<?x?xf32>, %i: memref<?xindex>, %o: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %i, %c0 : memref<?xindex>
  %d = memref.dim %t, %c1 : memref<?x?xf32>
  scf.for %j = %c0 to %n step %c1 {
    %r = memref.load %i[%j] : memref<?xindex>
    scf.for %k = %c0 to %d step %c1 {
      %v = memref.load %t[%r, %k] : memref<?x?xf32>
      memref.store %v, %o[%j, %k] : memref<?x?xf32>
    }
  }
  return
}
