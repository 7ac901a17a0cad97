// RUN: %ember opt %s --split-input-file --passes bufferize | filecheck %s
// Golden test of the pass bufferize: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/bufferize/), then what it must print.

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
// CHECK-NEXT:       slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
// CHECK-NEXT:         %row = slc.mem_stream %indices[%j] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:         %v_buf = slcv.for %d = %c0 to %dim step 1 vlen 1 config scalar : index, index -> !slcv.buffer<f32> {
// CHECK-NEXT:           %v = slc.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
// CHECK-NEXT:           slcv.to_buffer %v : !slc.stream<f32>
// CHECK-NEXT:         }
// CHECK-NEXT:         slc.callback end {
// CHECK-NEXT:           %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:           %b_1 = slc.from_stream %b : !slc.stream<index>
// CHECK-NEXT:           %c1_1 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %d_1 = %c0 to %dim step %c1_1 {
// CHECK-NEXT:             %v_1 = memref.load %v_row[%d_1] : memref<?xf32>
// CHECK-NEXT:             %acc = memref.load %out[%b_1, %d_1] : memref<?x?xf32>
// CHECK-NEXT:             %sum = arith.addf %acc, %v_1 : f32
// CHECK-NEXT:             memref.store %sum, %out[%b_1, %d_1] : memref<?x?xf32>
// CHECK-NEXT:           }
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
// CHECK-NEXT:         %v_buf = slcv.for %d = %c0 to %dim step 1 vlen 1 config scalar : index, index -> !slcv.buffer<f32> {
// CHECK-NEXT:           %v = slc.mem_stream %x[%c, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
// CHECK-NEXT:           slcv.to_buffer %v : !slc.stream<f32>
// CHECK-NEXT:         }
// CHECK-NEXT:         slc.callback end {
// CHECK-NEXT:           %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:           %i_1 = slc.from_stream %i : !slc.stream<index>
// CHECK-NEXT:           %a_1 = slc.from_stream %a : !slc.stream<f32>
// CHECK-NEXT:           %c1_1 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %d_1 = %c0 to %dim step %c1_1 {
// CHECK-NEXT:             %v_1 = memref.load %v_row[%d_1] : memref<?xf32>
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

// -----

// examples/transe_score.mlir
builtin.module {
  func.func @transe_score(%triples: memref<?xi64>, %entity: memref<?x?xf32>, %relation: memref<?x?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %n = memref.dim %out, %c0 : memref<?xf32>
    %dim = memref.dim %entity, %c1 : memref<?x?xf32>
    slc.for %t = %c0 to %n step 1 : index, index {
      %th = slc.alu_stream mul %t, %c3 : !slc.stream<index>, index -> !slc.stream<index>
      %tr = slc.alu_stream add %th, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %tt = slc.alu_stream add %tr, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %h_i64 = slc.mem_stream %triples[%th] : memref<?xi64>, !slc.stream<index>
      %h = slc.cast %h_i64 : !slc.stream<i64> to !slc.stream<index>
      %r_i64 = slc.mem_stream %triples[%tr] : memref<?xi64>, !slc.stream<index>
      %r = slc.cast %r_i64 : !slc.stream<i64> to !slc.stream<index>
      %tl_i64 = slc.mem_stream %triples[%tt] : memref<?xi64>, !slc.stream<index>
      %tl = slc.cast %tl_i64 : !slc.stream<i64> to !slc.stream<index>
      slc.for %d = %c0 to %dim step 1 : index, index {
        %eh = slc.mem_stream %entity[%h, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
        %er = slc.mem_stream %relation[%r, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
        %et = slc.mem_stream %entity[%tl, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
        slc.callback iter {
          %eh_1 = slc.from_stream %eh : !slc.stream<f32>
          %er_1 = slc.from_stream %er : !slc.stream<f32>
          %et_1 = slc.from_stream %et : !slc.stream<f32>
          %t_1 = slc.from_stream %t : !slc.stream<index>
          %hr = arith.addf %eh_1, %er_1 : f32
          %diff = arith.subf %hr, %et_1 : f32
          %sq = arith.mulf %diff, %diff : f32
          %acc = memref.load %out[%t_1] : memref<?xf32>
          %s = arith.addf %acc, %sq : f32
          memref.store %s, %out[%t_1] : memref<?xf32>
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
// CHECK-NEXT:     slc.for %t = %c0 to %n step 1 : index, index {
// CHECK-NEXT:       %th = slc.alu_stream mul %t, %c3 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %tr = slc.alu_stream add %th, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %tt = slc.alu_stream add %tr, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %h_i64 = slc.mem_stream %triples[%th] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %h = slc.cast %h_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       %r_i64 = slc.mem_stream %triples[%tr] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %r = slc.cast %r_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       %tl_i64 = slc.mem_stream %triples[%tt] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %tl = slc.cast %tl_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       slc.for %d = %c0 to %dim step 1 : index, index {
// CHECK-NEXT:         %eh = slc.mem_stream %entity[%h, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
// CHECK-NEXT:         %er = slc.mem_stream %relation[%r, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
// CHECK-NEXT:         %et = slc.mem_stream %entity[%tl, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
// CHECK-NEXT:         slc.callback iter {
// CHECK-NEXT:           %eh_1 = slc.from_stream %eh : !slc.stream<f32>
// CHECK-NEXT:           %er_1 = slc.from_stream %er : !slc.stream<f32>
// CHECK-NEXT:           %et_1 = slc.from_stream %et : !slc.stream<f32>
// CHECK-NEXT:           %t_1 = slc.from_stream %t : !slc.stream<index>
// CHECK-NEXT:           %hr = arith.addf %eh_1, %er_1 : f32
// CHECK-NEXT:           %diff = arith.subf %hr, %et_1 : f32
// CHECK-NEXT:           %sq = arith.mulf %diff, %diff : f32
// CHECK-NEXT:           %acc = memref.load %out[%t_1] : memref<?xf32>
// CHECK-NEXT:           %s = arith.addf %acc, %sq : f32
// CHECK-NEXT:           memref.store %s, %out[%t_1] : memref<?xf32>
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

// -----

// examples/hashed_gather.mlir
builtin.module {
  func.func @hashed_gather(%table: memref<?xf32>, %remap: memref<?xindex>, %ids: memref<?xi64>, %logb: i64, %logd: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %golden = arith.constant -7046029254386353131 : i64
    %c64 = arith.constant 64 : i64
    %n = memref.dim %ids, %c0 : memref<?xi64>
    %dim = memref.dim %out, %c1 : memref<?x?xf32>
    %shift = arith.subi %c64, %logb : i64
    slc.for %i = %c0 to %n step 1 : index, index {
      %id = slc.mem_stream %ids[%i] : memref<?xi64>, !slc.stream<index>
      %prod = slc.alu_stream mul %id, %golden : !slc.stream<i64>, i64 -> !slc.stream<i64>
      %h64 = slc.alu_stream shr %prod, %shift : !slc.stream<i64>, i64 -> !slc.stream<i64>
      %h = slc.cast %h64 : !slc.stream<i64> to !slc.stream<index>
      %row = slc.mem_stream %remap[%h] : memref<?xindex>, !slc.stream<index>
      %base = slc.alu_stream shl %row, %logd : !slc.stream<index>, index -> !slc.stream<index>
      slc.for %d = %c0 to %dim step 1 : index, index {
        %a = slc.alu_stream add %base, %d : !slc.stream<index>, !slc.stream<index> -> !slc.stream<index>
        %v = slc.mem_stream %table[%a] : memref<?xf32>, !slc.stream<index>
        slc.callback iter {
          %v_1 = slc.from_stream %v : !slc.stream<f32>
          %i_1 = slc.from_stream %i : !slc.stream<index>
          %d_1 = slc.from_stream %d : !slc.stream<index>
          memref.store %v_1, %out[%i_1, %d_1] : memref<?x?xf32>
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @hashed_gather(%table: memref<?xf32>, %remap: memref<?xindex>, %ids: memref<?xi64>, %logb: i64, %logd: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %golden = arith.constant -7046029254386353131 : i64
// CHECK-NEXT:     %c64 = arith.constant 64 : i64
// CHECK-NEXT:     %n = memref.dim %ids, %c0 : memref<?xi64>
// CHECK-NEXT:     %dim = memref.dim %out, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %shift = arith.subi %c64, %logb : i64
// CHECK-NEXT:     slc.for %i = %c0 to %n step 1 : index, index {
// CHECK-NEXT:       %id = slc.mem_stream %ids[%i] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %prod = slc.alu_stream mul %id, %golden : !slc.stream<i64>, i64 -> !slc.stream<i64>
// CHECK-NEXT:       %h64 = slc.alu_stream shr %prod, %shift : !slc.stream<i64>, i64 -> !slc.stream<i64>
// CHECK-NEXT:       %h = slc.cast %h64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       %row = slc.mem_stream %remap[%h] : memref<?xindex>, !slc.stream<index>
// CHECK-NEXT:       %base = slc.alu_stream shl %row, %logd : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %v_buf = slcv.for %d = %c0 to %dim step 1 vlen 1 config scalar : index, index -> !slcv.buffer<f32> {
// CHECK-NEXT:         %a = slc.alu_stream add %base, %d : !slc.stream<index>, !slc.stream<index> -> !slc.stream<index>
// CHECK-NEXT:         %v = slc.mem_stream %table[%a] : memref<?xf32>, !slc.stream<index>
// CHECK-NEXT:         slcv.to_buffer %v : !slc.stream<f32>
// CHECK-NEXT:       }
// CHECK-NEXT:       slc.callback end {
// CHECK-NEXT:         %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:         %i_1 = slc.from_stream %i : !slc.stream<index>
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %d_1 = %c0 to %dim step %c1_1 {
// CHECK-NEXT:           %v_1 = memref.load %v_row[%d_1] : memref<?xf32>
// CHECK-NEXT:           memref.store %v_1, %out[%i_1, %d_1] : memref<?x?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
