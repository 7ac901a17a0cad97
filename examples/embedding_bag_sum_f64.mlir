func.func @embedding_bag_f64(%table: memref<?x?xf64>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf64>) -> memref<?x?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nbags = memref.dim %out, %c0 : memref<?x?xf64>
  %dim = memref.dim %table, %c1 : memref<?x?xf64>
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start = memref.load %offsets[%b] : memref<?xindex>
    %end = memref.load %offsets[%b1] : memref<?xindex>
    scf.for %j = %start to %end step %c1 {
      %row = memref.load %indices[%j] : memref<?xindex>
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %table[%row, %d] : memref<?x?xf64>
        %acc = memref.load %out[%b, %d] : memref<?x?xf64>
        %sum = arith.addf %acc, %v : f64
        memref.store %sum, %out[%b, %d] : memref<?x?xf64>
      }
    }
  }
  return %out : memref<?x?xf64>
}
