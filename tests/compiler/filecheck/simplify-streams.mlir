// RUN: %ember opt %s --split-input-file --passes simplify-streams | filecheck %s
// Golden test of the pass simplify-streams: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/simplify-streams/), then what it must print.

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
        %v_buf = slcv.for %d = %c0 to %dim step 1 vlen 1 config scalar : index, index -> !slcv.buffer<f32> {
          %v = slc.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
          slcv.to_buffer %v : !slc.stream<f32>
        }
        slc.callback end {
          %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
          %b_1 = slc.from_stream %b : !slc.stream<index>
          %c1_1 = arith.constant 1 : index
          scf.for %d_1 = %c0 to %dim step %c1_1 {
            %v_1 = memref.load %v_row[%d_1] : memref<?xf32>
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
// CHECK-NEXT:         %v_buf = slcv.buf_stream %table[%row, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:         slc.callback iter {
// CHECK-NEXT:           %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:           %b_1 = slc.from_stream %b : !slc.stream<index>
// CHECK-NEXT:           %c1_1 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:             %v = memref.load %v_row[%d] : memref<?xf32>
// CHECK-NEXT:             %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:             %sum = arith.addf %acc, %v : f32
// CHECK-NEXT:             memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

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
        %v_buf = slcv.for %d = %c0 to %dim step 1 vlen 1 config scalar : index, index -> !slcv.buffer<f32> {
          %v = slc.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
          slcv.to_buffer %v : !slc.stream<f32>
        }
        slc.callback end {
          %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
          %b_1 = slc.from_stream %b : !slc.stream<index>
          %c1_1 = arith.constant 1 : index
          scf.for %d_1 = %c0 to %dim step %c1_1 {
            %v_1 = memref.load %v_row[%d_1] : memref<?xf32>
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
// CHECK-NEXT:         %v_buf = slcv.buf_stream %table[%row, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:         slc.callback iter {
// CHECK-NEXT:           %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:           %b_1 = slc.from_stream %b : !slc.stream<index>
// CHECK-NEXT:           %c1_1 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:             %v = memref.load %v_row[%d] : memref<?xf32>
// CHECK-NEXT:             %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:             %sum = arith.addf %acc, %v : f32
// CHECK-NEXT:             memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       slc.callback end {
// CHECK-NEXT:         %n_i64_1 = slc.from_stream %n_i64 : !slc.stream<i64>
// CHECK-NEXT:         %b_2 = slc.from_stream %b : !slc.stream<index>
// CHECK-NEXT:         %nf = arith.sitofp %n_i64_1 : i64 to f32
// CHECK-NEXT:         scf.for %d_1 = %c0 to %dim step %c1 {
// CHECK-NEXT:           %s = memref.load %out[%b_2, %d_1] : memref<?x?xf32>
// CHECK-NEXT:           %m = arith.divf %s, %nf : f32
// CHECK-NEXT:           memref.store %m, %out[%b_2, %d_1] : memref<?x?xf32>
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
// CHECK-NEXT:       %eh_buf = slcv.buf_stream %entity[%h, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:       %er_buf = slcv.buf_stream %relation[%r, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:       %et_buf = slcv.buf_stream %entity[%tl, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:       slc.callback iter {
// CHECK-NEXT:         %eh_row = slcv.from_buffer %eh_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:         %er_row = slcv.from_buffer %er_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:         %et_row = slcv.from_buffer %et_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:         %t_1 = slc.from_stream %t : !slc.stream<index>
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:           %eh = memref.load %eh_row[%d] : memref<?xf32>
// CHECK-NEXT:           %er = memref.load %er_row[%d] : memref<?xf32>
// CHECK-NEXT:           %et = memref.load %et_row[%d] : memref<?xf32>
// CHECK-NEXT:           %hr = arith.addf %eh, %er : f32
// CHECK-NEXT:           %diff = arith.subf %hr, %et : f32
// CHECK-NEXT:           %sq = arith.mulf %diff, %diff : f32
// CHECK-NEXT:           %acc = memref.load %out[%t_1] : memref<?xf32>
// CHECK-NEXT:           %s = arith.addf %acc, %sq : f32
// CHECK-NEXT:           memref.store %s, %out[%t_1] : memref<?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       slc.callback iter {
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

// examples/block_sparse_gather.mlir
builtin.module {
  func.func @block_sparse_gather(%block_ptr: memref<?xi64>, %block_idx: memref<?xi64>, %key: memref<?x?xf32>, %value: memref<?x?xf32>, %bs: index, %k_out: memref<?x?xf32>, %v_out: memref<?x?xf32>) -> (memref<?x?xf32>, memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nptr = memref.dim %block_ptr, %c0 : memref<?xi64>
    %nq = arith.subi %nptr, %c1 : index
    %dim = memref.dim %key, %c1 : memref<?x?xf32>
    slc.for %q = %c0 to %nq step 1 : index, index {
      %q1 = slc.alu_stream add %q, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start_i64 = slc.mem_stream %block_ptr[%q] : memref<?xi64>, !slc.stream<index>
      %start = slc.cast %start_i64 : !slc.stream<i64> to !slc.stream<index>
      %end_i64 = slc.mem_stream %block_ptr[%q1] : memref<?xi64>, !slc.stream<index>
      %end = slc.cast %end_i64 : !slc.stream<i64> to !slc.stream<index>
      slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
        %blk_i64 = slc.mem_stream %block_idx[%j] : memref<?xi64>, !slc.stream<index>
        %blk = slc.cast %blk_i64 : !slc.stream<i64> to !slc.stream<index>
        %base = slc.alu_stream mul %blk, %bs : !slc.stream<index>, index -> !slc.stream<index>
        %obase = slc.alu_stream mul %j, %bs : !slc.stream<index>, index -> !slc.stream<index>
        slc.for %r = %c0 to %bs step 1 : index, index {
          %row = slc.alu_stream add %base, %r : !slc.stream<index>, !slc.stream<index> -> !slc.stream<index>
          %orow = slc.alu_stream add %obase, %r : !slc.stream<index>, !slc.stream<index> -> !slc.stream<index>
          slc.for %d = %c0 to %dim step 1 : index, index {
            %k = slc.mem_stream %key[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
            %v = slc.mem_stream %value[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
            slc.callback iter {
              %k_1 = slc.from_stream %k : !slc.stream<f32>
              %orow_1 = slc.from_stream %orow : !slc.stream<index>
              %d_1 = slc.from_stream %d : !slc.stream<index>
              %v_1 = slc.from_stream %v : !slc.stream<f32>
              memref.store %k_1, %k_out[%orow_1, %d_1] : memref<?x?xf32>
              memref.store %v_1, %v_out[%orow_1, %d_1] : memref<?x?xf32>
            }
          }
        }
      }
    }
    func.return %k_out, %v_out : memref<?x?xf32>, memref<?x?xf32>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @block_sparse_gather(%block_ptr: memref<?xi64>, %block_idx: memref<?xi64>, %key: memref<?x?xf32>, %value: memref<?x?xf32>, %bs: index, %k_out: memref<?x?xf32>, %v_out: memref<?x?xf32>) -> (memref<?x?xf32>, memref<?x?xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %nptr = memref.dim %block_ptr, %c0 : memref<?xi64>
// CHECK-NEXT:     %nq = arith.subi %nptr, %c1 : index
// CHECK-NEXT:     %dim = memref.dim %key, %c1 : memref<?x?xf32>
// CHECK-NEXT:     slc.for %q = %c0 to %nq step 1 : index, index {
// CHECK-NEXT:       %q1 = slc.alu_stream add %q, %c1 : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:       %start_i64 = slc.mem_stream %block_ptr[%q] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %start = slc.cast %start_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       %end_i64 = slc.mem_stream %block_ptr[%q1] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:       %end = slc.cast %end_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:       slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
// CHECK-NEXT:         %blk_i64 = slc.mem_stream %block_idx[%j] : memref<?xi64>, !slc.stream<index>
// CHECK-NEXT:         %blk = slc.cast %blk_i64 : !slc.stream<i64> to !slc.stream<index>
// CHECK-NEXT:         %base = slc.alu_stream mul %blk, %bs : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:         %obase = slc.alu_stream mul %j, %bs : !slc.stream<index>, index -> !slc.stream<index>
// CHECK-NEXT:         slc.for %r = %c0 to %bs step 1 : index, index {
// CHECK-NEXT:           %row = slc.alu_stream add %base, %r : !slc.stream<index>, !slc.stream<index> -> !slc.stream<index>
// CHECK-NEXT:           %orow = slc.alu_stream add %obase, %r : !slc.stream<index>, !slc.stream<index> -> !slc.stream<index>
// CHECK-NEXT:           %k_buf = slcv.buf_stream %key[%row, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:           %v_buf = slcv.buf_stream %value[%row, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:           slc.callback iter {
// CHECK-NEXT:             %k_row = slcv.from_buffer %k_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:             %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:             %orow_1 = slc.from_stream %orow : !slc.stream<index>
// CHECK-NEXT:             %c1_1 = arith.constant 1 : index
// CHECK-NEXT:             scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:               %k = memref.load %k_row[%d] : memref<?xf32>
// CHECK-NEXT:               %v = memref.load %v_row[%d] : memref<?xf32>
// CHECK-NEXT:               memref.store %k, %k_out[%orow_1, %d] : memref<?x?xf32>
// CHECK-NEXT:               memref.store %v, %v_out[%orow_1, %d] : memref<?x?xf32>
// CHECK-NEXT:             }
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %k_out, %v_out : memref<?x?xf32>, memref<?x?xf32>
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
      %v_buf = slcv.for %d = %c0 to %dim step 1 vlen 1 config scalar : index, index -> !slcv.buffer<f32> {
        %a = slc.alu_stream add %base, %d : !slc.stream<index>, !slc.stream<index> -> !slc.stream<index>
        %v = slc.mem_stream %table[%a] : memref<?xf32>, !slc.stream<index>
        slcv.to_buffer %v : !slc.stream<f32>
      }
      slc.callback end {
        %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
        %i_1 = slc.from_stream %i : !slc.stream<index>
        %c1_1 = arith.constant 1 : index
        scf.for %d_1 = %c0 to %dim step %c1_1 {
          %v_1 = memref.load %v_row[%d_1] : memref<?xf32>
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
// CHECK-NEXT:       %v_buf = slcv.buf_stream %table[%base] len %dim : memref<?xf32>, !slc.stream<index>, index -> !slcv.buffer<f32>
// CHECK-NEXT:       slc.callback iter {
// CHECK-NEXT:         %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:         %i_1 = slc.from_stream %i : !slc.stream<index>
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:           %v = memref.load %v_row[%d] : memref<?xf32>
// CHECK-NEXT:           memref.store %v, %out[%i_1, %d] : memref<?x?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
