builtin.module {
  func.func @embedding_bag_mean(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nbags = memref.dim %out, %c0 : memref<?x?xf32>
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    scf.for %b = %c0 to %nbags step %c1 {
      %b1 = arith.addi %b, %c1 : index
      %start = memref.load %offsets[%b] : memref<?xindex>
      %end = memref.load %offsets[%b1] : memref<?xindex>
      scf.for %j = %start to %end step %c1 {
        %row = memref.load %indices[%j] : memref<?xindex>
        scf.for %d = %c0 to %dim step %c1 {
          %v = memref.load %table[%row, %d] : memref<?x?xf32>
          %acc = memref.load %out[%b, %d] : memref<?x?xf32>
          %sum = arith.addf %acc, %v : f32
          memref.store %sum, %out[%b, %d] : memref<?x?xf32>
        }
      }
      %len = arith.subi %end, %start : index
      %n = arith.maxsi %len, %c1 : index
      %n_i64 = arith.index_cast %n : index to i64
      %nf = arith.sitofp %n_i64 : i64 to f32
      scf.for %d_1 = %c0 to %dim step %c1 {
        %s = memref.load %out[%b, %d_1] : memref<?x?xf32>
        %m = arith.divf %s, %nf : f32
        memref.store %m, %out[%b, %d_1] : memref<?x?xf32>
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
