// A plain embedding bag (sum) with the table and offsets in another argument order and the
// accumulator updated as out = v + out.
func.func @bag(%offs: memref<?xindex>, %tbl: memref<?x?xf32>, %out: memref<?x?xf32>, %idx: memref<?xindex>) -> memref<?x?xf32> {
  %zero = arith.constant 0 : index
  %one = arith.constant 1 : index
  %n = memref.dim %out, %zero : memref<?x?xf32>
  %w = memref.dim %out, %one : memref<?x?xf32>
  scf.for %bag = %zero to %n step %one {
    %lo = memref.load %offs[%bag] : memref<?xindex>
    %next = arith.addi %bag, %one : index
    %hi = memref.load %offs[%next] : memref<?xindex>
    scf.for %pos = %lo to %hi step %one {
      %row = memref.load %idx[%pos] : memref<?xindex>
      scf.for %col = %zero to %w step %one {
        %e = memref.load %tbl[%row, %col] : memref<?x?xf32>
        %o = memref.load %out[%bag, %col] : memref<?x?xf32>
        %s = arith.addf %e, %o : f32
        memref.store %s, %out[%bag, %col] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
