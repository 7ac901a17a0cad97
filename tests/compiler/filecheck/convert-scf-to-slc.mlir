// RUN: %ember opt %s --split-input-file --passes convert-scf-to-slc | filecheck %s
// Golden test of the pass convert-scf-to-slc: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/convert-scf-to-slc/), then what it must print.

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
// CHECK-NEXT:   func.func @embedding_bag_mean(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %nbags = memref.dim %out, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %dim = memref.dim %table, %c1 : memref<?x?xf32>
// CHECK-NEXT:     slc.for %b = %c0 to %nbags step 1 : index, index {
// CHECK-NEXT:       %b1 = slc.alu_stream add %b, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %start = slc.mem_stream %offsets[%b] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:       %end = slc.mem_stream %offsets[%b1] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:       %len = slc.alu_stream sub %end, %start : !slc.stream<index>, !slc.stream<index> -> !slc.stream<index>
// CHECK-NEXT:       %n = slc.alu_stream max %len, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %n_i64 = slc.cast %n : !slc.stream<index> to !slc.stream<i64>
// CHECK-NEXT:       slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
// CHECK-NEXT:         %row = slc.mem_stream %indices[%j] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:         slc.for %d = %c0 to %dim step 1 : index, index {
// CHECK-NEXT:           %v = slc.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
// CHECK-NEXT:           slc.callback iter {
// CHECK-NEXT:             %b_1 = slc.from_stream %b : !slc.stream<index>
// CHECK-NEXT:             %d_1 = slc.from_stream %d : !slc.stream<index>
// CHECK-NEXT:             %v_1 = slc.from_stream %v : !slc.stream<f32>
// CHECK-NEXT:             %acc = memref.load %out[%b_1, %d_1] : memref<?x?xf32>
// CHECK-NEXT:             %sum = arith.addf %acc, %v_1 : f32
// CHECK-NEXT:             memref.store %sum, %out[%b_1, %d_1] : memref<?x?xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       slc.callback end {
// CHECK-NEXT:         %n_i64_1 = slc.from_stream %n_i64 : !slc.stream<i64>
// CHECK-NEXT:         %b_2 = slc.from_stream %b : !slc.stream<index>
// CHECK-NEXT:         %nf = arith.sitofp %n_i64_1 : i64 to f32
// CHECK-NEXT:         scf.for %d_2 = %c0 to %dim step %c1 {
// CHECK-NEXT:           %s = memref.load %out[%b_2, %d_2] : memref<?x?xf32>
// CHECK-NEXT:           %m = arith.divf %s, %nf : f32
// CHECK-NEXT:           memref.store %m, %out[%b_2, %d_2] : memref<?x?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
