// RUN: %ember opt %s --split-input-file --passes choose-decoupling | filecheck %s
// Golden test of the pass choose-decoupling: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/choose-decoupling/), then what it must print.

// examples/embedding_bag_mean.mlir
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

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @embedding_bag_mean(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> attributes {ember.readonly = [#builtin.int<0>, #builtin.int<1>, #builtin.int<2>]} {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %nbags = memref.dim %out, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %dim = memref.dim %table, %c1 : memref<?x?xf32>
// CHECK-NEXT:     scf.for %b = %c0 to %nbags step %c1 {
// CHECK-NEXT:       %b1 = arith.addi %b, %c1 : index
// CHECK-NEXT:       %start = memref.load %offsets[%b] : memref<?xindex>
// CHECK-NEXT:       %end = memref.load %offsets[%b1] : memref<?xindex>
// CHECK-NEXT:       scf.for %j = %start to %end step %c1 {
// CHECK-NEXT:         %row = memref.load %indices[%j] : memref<?xindex>
// CHECK-NEXT:         scf.for %d = %c0 to %dim step %c1 {
// CHECK-NEXT:           %v = memref.load %table[%row, %d] : memref<?x?xf32>
// CHECK-NEXT:           %acc = memref.load %out[%b, %d] : memref<?x?xf32>
// CHECK-NEXT:           %sum = arith.addf %acc, %v : f32
// CHECK-NEXT:           memref.store %sum, %out[%b, %d] : memref<?x?xf32>
// CHECK-NEXT:         } {ember.decoupled}
// CHECK-NEXT:       } {ember.decoupled}
// CHECK-NEXT:       %len = arith.subi %end, %start : index
// CHECK-NEXT:       %n = arith.maxsi %len, %c1 : index
// CHECK-NEXT:       %n_i64 = arith.index_cast %n : index to i64
// CHECK-NEXT:       %nf = arith.sitofp %n_i64 : i64 to f32
// CHECK-NEXT:       scf.for %d_1 = %c0 to %dim step %c1 {
// CHECK-NEXT:         %s = memref.load %out[%b, %d_1] : memref<?x?xf32>
// CHECK-NEXT:         %m = arith.divf %s, %nf : f32
// CHECK-NEXT:         memref.store %m, %out[%b, %d_1] : memref<?x?xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     } {ember.decoupled}
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
