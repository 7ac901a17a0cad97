// RUN: %ember opt %s --split-input-file --passes vectorize-access | filecheck %s
// Golden test of the pass vectorize-access: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/vectorize-access/), then what it must print.

// examples/embedding_bag_sum.mlir
builtin.module {
  func.func @embedding_bag(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nbags = memref.dim %out, %c0 : memref<?x?xf32>
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    slc.for %b = %c0 to %nbags step 1 : index, index {
      %b1 = slc.alu_stream add %b, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start = slc.mem_stream %offsets[%b] : memref<?xindex>, !slc.stream<index>
      %end = slc.mem_stream %offsets[%b1] : memref<?xindex>, !slc.stream<index>
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
    }
    func.return %out : memref<?x?xf32>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @embedding_bag(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %nbags = memref.dim %out, %c0 : memref<?x?xf32>
// CHECK-NEXT:     %dim = memref.dim %table, %c1 : memref<?x?xf32>
// CHECK-NEXT:     slc.for %b = %c0 to %nbags step 1 : index, index {
// CHECK-NEXT:       %b1 = slc.alu_stream add %b, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %start = slc.mem_stream %offsets[%b] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:       %end = slc.mem_stream %offsets[%b1] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:       slcv.for %j = %start to %end step 1 vlen 8 config broadcast check_order : !slc.stream<index>, !slc.stream<index> {
// CHECK-NEXT:         %row = slc.mem_stream %indices[%j] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:         slcv.for %d, %mask = %c0 to %dim step 1 vlen 8 config vector : index, index {
// CHECK-NEXT:           %v = slcv.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
// CHECK-NEXT:           %d0 = slcv.first_lane %d : !slcv.vstream<index, 8> -> !slc.stream<index>
// CHECK-NEXT:           slc.callback iter {
// CHECK-NEXT:             %b_1 = slc.from_stream %b : !slc.stream<index>
// CHECK-NEXT:             %d0_1 = slc.from_stream %d0 : !slc.stream<index>
// CHECK-NEXT:             %v_vec = slcv.from_stream %v : !slcv.vstream<f32, 8> -> vector<8xf32>
// CHECK-NEXT:             %c0_1 = arith.constant 0 : index
// CHECK-NEXT:             %c8 = arith.constant 8 : index
// CHECK-NEXT:             %c1_1 = arith.constant 1 : index
// CHECK-NEXT:             scf.for %lane = %c0_1 to %c8 step %c1_1 {
// CHECK-NEXT:               %d_1 = arith.addi %d0_1, %lane : index
// CHECK-NEXT:               %active = arith.cmpi slt, %d_1, %dim : index
// CHECK-NEXT:               scf.if %active {
// CHECK-NEXT:                 %v_1 = vector.extract %v_vec[%lane] : f32 from vector<8xf32>
// CHECK-NEXT:                 %acc = memref.load %out[%b_1, %d_1] : memref<?x?xf32>
// CHECK-NEXT:                 %sum = arith.addf %acc, %v_1 : f32
// CHECK-NEXT:                 memref.store %sum, %out[%b_1, %d_1] : memref<?x?xf32>
// CHECK-NEXT:               }
// CHECK-NEXT:             } {slcv.lane_loop}
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

// examples/spmv_csr.mlir
builtin.module {
  func.func @spmv_csr(%rowptr: memref<?xi64>, %col: memref<?xi64>, %val: memref<?xf32>, %x: memref<?xf32>, %y: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %y, %c0 : memref<?xf32>
    slc.for %i = %c0 to %n step 1 : index, index {
      %i1 = slc.alu_stream add %i, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start_i64 = slc.mem_stream %rowptr[%i] : memref<?xi64>, !slc.stream<index>
      %start = slc.cast %start_i64 : !slc.stream<i64> to !slc.stream<index>
      %end_i64 = slc.mem_stream %rowptr[%i1] : memref<?xi64>, !slc.stream<index>
      %end = slc.cast %end_i64 : !slc.stream<i64> to !slc.stream<index>
      slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
        %c_i64 = slc.mem_stream %col[%j] : memref<?xi64>, !slc.stream<index>
        %c = slc.cast %c_i64 : !slc.stream<i64> to !slc.stream<index>
        %a = slc.mem_stream %val[%j] : memref<?xf32>, !slc.stream<index>
        %xv = slc.mem_stream %x[%c] : memref<?xf32>, !slc.stream<index>
        slc.callback iter {
          %i_1 = slc.from_stream %i : !slc.stream<index>
          %a_1 = slc.from_stream %a : !slc.stream<f32>
          %xv_1 = slc.from_stream %xv : !slc.stream<f32>
          %acc = memref.load %y[%i_1] : memref<?xf32>
          %s = math.fma %a_1, %xv_1, %acc : f32
          memref.store %s, %y[%i_1] : memref<?xf32>
        }
      }
    }
    func.return %y : memref<?xf32>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @spmv_csr(%rowptr: memref<?xi64>, %col: memref<?xi64>, %val: memref<?xf32>, %x: memref<?xf32>, %y: memref<?xf32>) -> memref<?xf32> {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %n = memref.dim %y, %c0 : memref<?xf32>
// CHECK-NEXT:     slc.for %i = %c0 to %n step 1 : index, index {
// CHECK-NEXT:       %i1 = slc.alu_stream add %i, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %start_i64 = slc.mem_stream %rowptr[%i] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %start = slc.cast %start_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       %end_i64 = slc.mem_stream %rowptr[%i1] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %end = slc.cast %end_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
// CHECK-NEXT:         %c_i64 = slc.mem_stream %col[%j] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:         %c = slc.cast %c_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:         %a = slc.mem_stream %val[%j] : memref<?xf32>, !slc.stream<index>
// CHECK-NEXT:         %xv = slc.mem_stream %x[%c] : memref<?xf32>, !slc.stream<index>
// CHECK-NEXT:         slc.callback iter {
// CHECK-NEXT:           %i_1 = slc.from_stream %i : !slc.stream<index>
// CHECK-NEXT:           %a_1 = slc.from_stream %a : !slc.stream<f32>
// CHECK-NEXT:           %xv_1 = slc.from_stream %xv : !slc.stream<f32>
// CHECK-NEXT:           %acc = memref.load %y[%i_1] : memref<?xf32>
// CHECK-NEXT:           %s = math.fma %a_1, %xv_1, %acc : f32
// CHECK-NEXT:           memref.store %s, %y[%i_1] : memref<?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %y : memref<?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
