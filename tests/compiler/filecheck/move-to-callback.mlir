// RUN: %ember opt %s --split-input-file --passes move-to-callback | filecheck %s
// Golden test of the pass move-to-callback: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/move-to-callback/), then what it must print.

// examples/embedding_bag_mean.mlir
builtin.module {
  func.func @embedding_bag_mean(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nbags = memref.dim %out, %c0 : memref<?x?xf32>
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    slc.for %b = %c0 to %nbags step 1 : index, index {
      %b1 = slc.alu_stream add %b, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start = slc.mem_stream %offsets[%b] : memref<?xindex>, !slc.stream<index>
      %end = slc.mem_stream %offsets[%b1] : memref<?xindex>, !slc.stream<index>
      %len = slc.alu_stream sub %end, %start : !slc.stream<index>, !slc.stream<index> -> !slc.stream<index>
      %n = slc.alu_stream max %len, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %n_i64 = slc.cast %n : !slc.stream<index> to !slc.stream<i64>
      slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
        %row = slc.mem_stream %indices[%j] : memref<?xindex>, !slc.stream<index>
        slc.for %d = %c0 to %dim step 1 : index, index {
          %v = slc.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
          slc.callback iter {
            %b_1 = slc.from_stream %b : !slc.stream<index>
            %d_1 = slc.from_stream %d : !slc.stream<index>
            %v_1 = slc.from_stream %v : !slc.stream<f32>
            %acc = memref.load %out[%b_1, %d_1] : memref<?x?xf32>
            %sum = arith.addf %acc, %v_1 : f32
            memref.store %sum, %out[%b_1, %d_1] : memref<?x?xf32>
          }
        }
      }
      slc.callback end {
        %n_i64_1 = slc.from_stream %n_i64 : !slc.stream<i64>
        %b_2 = slc.from_stream %b : !slc.stream<index>
        %nf = arith.sitofp %n_i64_1 : i64 to f32
        scf.for %d_2 = %c0 to %dim step %c1 {
          %s = memref.load %out[%b_2, %d_2] : memref<?x?xf32>
          %m = arith.divf %s, %nf : f32
          memref.store %m, %out[%b_2, %d_2] : memref<?x?xf32>
        }
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

// -----

// examples/spmm_csr.mlir
builtin.module {
  func.func @spmm_csr(%rowptr: memref<?xindex>, %col: memref<?xindex>, %val: memref<?xf32>, %x: memref<?x?xf32>, %nrows: memref<1xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.load %nrows[%c0] : memref<1xindex>
    %dim = memref.dim %x, %c1 : memref<?x?xf32>
    slc.for %i = %c0 to %n step 1 : index, index {
      %i1 = slc.alu_stream add %i, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start = slc.mem_stream %rowptr[%i] : memref<?xindex>, !slc.stream<index>
      %end = slc.mem_stream %rowptr[%i1] : memref<?xindex>, !slc.stream<index>
      slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
        %c = slc.mem_stream %col[%j] : memref<?xindex>, !slc.stream<index>
        %a = slc.mem_stream %val[%j] : memref<?xf32>, !slc.stream<index>
        slc.for %d = %c0 to %dim step 1 : index, index {
          %v = slc.mem_stream %x[%c, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
          slc.callback iter {
            %i_1 = slc.from_stream %i : !slc.stream<index>
            %d_1 = slc.from_stream %d : !slc.stream<index>
            %a_1 = slc.from_stream %a : !slc.stream<f32>
            %v_1 = slc.from_stream %v : !slc.stream<f32>
            %acc = memref.load %out[%i_1, %d_1] : memref<?x?xf32>
            %p = arith.mulf %a_1, %v_1 : f32
            %s = arith.addf %acc, %p : f32
            memref.store %s, %out[%i_1, %d_1] : memref<?x?xf32>
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @spmm_csr(%rowptr: memref<?xindex>, %col: memref<?xindex>, %val: memref<?xf32>, %x: memref<?x?xf32>, %nrows: memref<1xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.load %nrows[%c0] : memref<1xindex>
// CHECK-NEXT:     %dim = memref.dim %x, %c1 : memref<?x?xf32>
// CHECK-NEXT:     slc.for %i = %c0 to %n step 1 : index, index {
// CHECK-NEXT:       %i1 = slc.alu_stream add %i, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %start = slc.mem_stream %rowptr[%i] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:       %end = slc.mem_stream %rowptr[%i1] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:       slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
// CHECK-NEXT:         %c = slc.mem_stream %col[%j] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:         %a = slc.mem_stream %val[%j] : memref<?xf32>, !slc.stream<index>
// CHECK-NEXT:         slc.for %d = %c0 to %dim step 1 : index, index {
// CHECK-NEXT:           %v = slc.mem_stream %x[%c, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
// CHECK-NEXT:           slc.callback iter {
// CHECK-NEXT:             %i_1 = slc.from_stream %i : !slc.stream<index>
// CHECK-NEXT:             %d_1 = slc.from_stream %d : !slc.stream<index>
// CHECK-NEXT:             %a_1 = slc.from_stream %a : !slc.stream<f32>
// CHECK-NEXT:             %v_1 = slc.from_stream %v : !slc.stream<f32>
// CHECK-NEXT:             %acc = memref.load %out[%i_1, %d_1] : memref<?x?xf32>
// CHECK-NEXT:             %p = arith.mulf %a_1, %v_1 : f32
// CHECK-NEXT:             %s = arith.addf %acc, %p : f32
// CHECK-NEXT:             memref.store %s, %out[%i_1, %d_1] : memref<?x?xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
