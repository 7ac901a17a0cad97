// RUN: %ember opt %s --split-input-file --passes vectorize-callbacks | filecheck %s
// Golden test of the pass vectorize-callbacks: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/vectorize-callbacks/), then what it must print.

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
      slcv.for %j = %start to %end step 1 vlen 8 config broadcast check_order : !slc.stream<index>, !slc.stream<index> {
        %row = slc.mem_stream %indices[%j] : memref<?xindex>, !slc.stream<index>
        slcv.for %d, %mask = %c0 to %dim step 1 vlen 8 config vector : index, index {
          %v = slcv.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
          %d0 = slcv.first_lane %d : !slcv.vstream<index, 8> -> !slc.stream<index>
          slc.callback iter {
            %b_1 = slc.from_stream %b : !slc.stream<index>
            %d0_1 = slc.from_stream %d0 : !slc.stream<index>
            %v_vec = slcv.from_stream %v : !slcv.vstream<f32, 8> -> vector<8xf32>
            %c0_1 = arith.constant 0 : index
            %c8 = arith.constant 8 : index
            %c1_1 = arith.constant 1 : index
            scf.for %lane = %c0_1 to %c8 step %c1_1 {
              %d_1 = arith.addi %d0_1, %lane : index
              %active = arith.cmpi slt, %d_1, %dim : index
              scf.if %active {
                %v_1 = vector.extract %v_vec[%lane] : f32 from vector<8xf32>
                %acc = memref.load %out[%b_1, %d_1] : memref<?x?xf32>
                %sum = arith.addf %acc, %v_1 : f32
                memref.store %sum, %out[%b_1, %d_1] : memref<?x?xf32>
              }
            } {slcv.lane_loop}
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
// CHECK-NEXT:             %0 = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-NEXT:             %live = arith.subi %dim, %d0_1 : index
// CHECK-NEXT:             %mask_1 = vector.create_mask %live : vector<8xi1>
// CHECK-NEXT:             %acc = vector.maskedload %out[%b_1, %d0_1], %mask_1, %0 : memref<?x?xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK-NEXT:             %sum = arith.addf %acc, %v_vec : vector<8xf32>
// CHECK-NEXT:             vector.maskedstore %out[%b_1, %d0_1], %mask_1, %sum : memref<?x?xf32>, vector<8xi1>, vector<8xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

// examples/transe_score.mlir
builtin.module {
  func.func @transe_score(%triples: memref<?xi64>, %entity: memref<?x?xf32>, %relation: memref<?x?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %n = memref.dim %out, %c0 : memref<?xf32>
    %dim = memref.dim %entity, %c1 : memref<?x?xf32>
    slcv.for %t = %c0 to %n step 1 vlen 8 config broadcast : index, index {
      %th = slc.alu_stream mul %t, %c3 : !slc.stream<index>, index -> !slc.stream<index>
      %tr = slc.alu_stream add %th, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %tt = slc.alu_stream add %tr, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %h_i64 = slc.mem_stream %triples[%th] : memref<?xi64>, !slc.stream<index>
      %h = slc.cast %h_i64 : !slc.stream<i64> to !slc.stream<index>
      %r_i64 = slc.mem_stream %triples[%tr] : memref<?xi64>, !slc.stream<index>
      %r = slc.cast %r_i64 : !slc.stream<i64> to !slc.stream<index>
      %tl_i64 = slc.mem_stream %triples[%tt] : memref<?xi64>, !slc.stream<index>
      %tl = slc.cast %tl_i64 : !slc.stream<i64> to !slc.stream<index>
      slcv.for %d, %mask = %c0 to %dim step 1 vlen 8 config vector : index, index {
        %eh = slcv.mem_stream %entity[%h, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
        %er = slcv.mem_stream %relation[%r, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
        %et = slcv.mem_stream %entity[%tl, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
        %d0 = slcv.first_lane %d : !slcv.vstream<index, 8> -> !slc.stream<index>
        slc.callback iter {
          %eh_vec = slcv.from_stream %eh : !slcv.vstream<f32, 8> -> vector<8xf32>
          %er_vec = slcv.from_stream %er : !slcv.vstream<f32, 8> -> vector<8xf32>
          %et_vec = slcv.from_stream %et : !slcv.vstream<f32, 8> -> vector<8xf32>
          %t_1 = slc.from_stream %t : !slc.stream<index>
          %i0 = slc.from_stream %d0 : !slc.stream<index>
          %c0_1 = arith.constant 0 : index
          %c8 = arith.constant 8 : index
          %c1_1 = arith.constant 1 : index
          scf.for %lane = %c0_1 to %c8 step %c1_1 {
            %i = arith.addi %i0, %lane : index
            %active = arith.cmpi slt, %i, %dim : index
            scf.if %active {
              %eh_1 = vector.extract %eh_vec[%lane] : f32 from vector<8xf32>
              %er_1 = vector.extract %er_vec[%lane] : f32 from vector<8xf32>
              %et_1 = vector.extract %et_vec[%lane] : f32 from vector<8xf32>
              %hr = arith.addf %eh_1, %er_1 : f32
              %diff = arith.subf %hr, %et_1 : f32
              %sq = arith.mulf %diff, %diff : f32
              %acc = memref.load %out[%t_1] : memref<?xf32>
              %s = arith.addf %acc, %sq : f32
              memref.store %s, %out[%t_1] : memref<?xf32>
            }
          } {slcv.lane_loop}
        }
      }
      slc.callback end {
        %t_2 = slc.from_stream %t : !slc.stream<index>
        %ss = memref.load %out[%t_2] : memref<?xf32>
        %norm = math.sqrt %ss : f32
        memref.store %norm, %out[%t_2] : memref<?xf32>
      }
    }
    func.return %out : memref<?xf32>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @transe_score(%triples: memref<?xi64>, %entity: memref<?x?xf32>, %relation: memref<?x?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %n = memref.dim %out, %c0 : memref<?xf32>
// CHECK-NEXT:     %dim = memref.dim %entity, %c1 : memref<?x?xf32>
// CHECK-NEXT:     slcv.for %t = %c0 to %n step 1 vlen 8 config broadcast : index, index {
// CHECK-NEXT:       %th = slc.alu_stream mul %t, %c3 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %tr = slc.alu_stream add %th, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %tt = slc.alu_stream add %tr, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %h_i64 = slc.mem_stream %triples[%th] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %h = slc.cast %h_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       %r_i64 = slc.mem_stream %triples[%tr] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %r = slc.cast %r_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       %tl_i64 = slc.mem_stream %triples[%tt] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %tl = slc.cast %tl_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       slcv.for %d, %mask = %c0 to %dim step 1 vlen 8 config vector : index, index {
// CHECK-NEXT:         %eh = slcv.mem_stream %entity[%h, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
// CHECK-NEXT:         %er = slcv.mem_stream %relation[%r, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
// CHECK-NEXT:         %et = slcv.mem_stream %entity[%tl, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
// CHECK-NEXT:         %d0 = slcv.first_lane %d : !slcv.vstream<index, 8> -> !slc.stream<index>
// CHECK-NEXT:         slc.callback iter {
// CHECK-NEXT:           %eh_vec = slcv.from_stream %eh : !slcv.vstream<f32, 8> -> vector<8xf32>
// CHECK-NEXT:           %er_vec = slcv.from_stream %er : !slcv.vstream<f32, 8> -> vector<8xf32>
// CHECK-NEXT:           %et_vec = slcv.from_stream %et : !slcv.vstream<f32, 8> -> vector<8xf32>
// CHECK-NEXT:           %t_1 = slc.from_stream %t : !slc.stream<index>
// CHECK-NEXT:           %i0 = slc.from_stream %d0 : !slc.stream<index>
// CHECK-NEXT:           %c0_1 = arith.constant 0 : index
// CHECK-NEXT:           %c8 = arith.constant 8 : index
// CHECK-NEXT:           %c1_1 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %lane = %c0_1 to %c8 step %c1_1 {
// CHECK-NEXT:             %i = arith.addi %i0, %lane : index
// CHECK-NEXT:             %active = arith.cmpi slt, %i, %dim : index
// CHECK-NEXT:             scf.if %active {
// CHECK-NEXT:               %eh_1 = vector.extract %eh_vec[%lane] : f32 from vector<8xf32>
// CHECK-NEXT:               %er_1 = vector.extract %er_vec[%lane] : f32 from vector<8xf32>
// CHECK-NEXT:               %et_1 = vector.extract %et_vec[%lane] : f32 from vector<8xf32>
// CHECK-NEXT:               %hr = arith.addf %eh_1, %er_1 : f32
// CHECK-NEXT:               %diff = arith.subf %hr, %et_1 : f32
// CHECK-NEXT:               %sq = arith.mulf %diff, %diff : f32
// CHECK-NEXT:               %acc = memref.load %out[%t_1] : memref<?xf32>
// CHECK-NEXT:               %s = arith.addf %acc, %sq : f32
// CHECK-NEXT:               memref.store %s, %out[%t_1] : memref<?xf32>
// CHECK-NEXT:             }
// CHECK-NEXT:           } {slcv.lane_loop}
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       slc.callback end {
// CHECK-NEXT:         %t_2 = slc.from_stream %t : !slc.stream<index>
// CHECK-NEXT:         %ss = memref.load %out[%t_2] : memref<?xf32>
// CHECK-NEXT:         %norm = math.sqrt %ss : f32
// CHECK-NEXT:         memref.store %norm, %out[%t_2] : memref<?xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
