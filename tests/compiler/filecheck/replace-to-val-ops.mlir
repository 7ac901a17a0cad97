// RUN: %ember opt %s --split-input-file --passes replace-to-val-ops | filecheck %s
// Golden test of the pass replace-to-val-ops: each case is the IR the -O3 pipeline hands the pass
// for examples/<case>.mlir (as tests/compiler/golden/passes/replace-to-val-ops/), then what it
// must print: layer 0's index leaves the data queue (dlc.get_var) and is counted on the core.

// examples/embedding_bag_sum.mlir
builtin.module {
  func.func @embedding_bag(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nbags = memref.dim %out, %c0 : memref<?x?xf32>
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    dlc.configure_access {
      %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
      %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
      %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %b : !dlc.stream<index>
      dlc.register_callback layer 1 iter 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %v_row = dlc.pop_buffer %dim : memref<?xf32>
        %b_1 = dlc.pop_operand : index
        %c1_1 = arith.constant 1 : index
        scf.for %d = %c0 to %dim step %c1_1 {
          %v = memref.load %v_row[%d] : memref<?xf32>
          %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
          %sum = arith.addf %acc, %v : f32
          memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
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
// CHECK-NEXT:     dlc.configure_access {
// CHECK-NEXT:       %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
// CHECK-NEXT:       %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
// CHECK-NEXT:       %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_callback layer 1 iter 0
// CHECK-NEXT:       dlc.register_callback layer 1 end 1
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.set_var 0, %c0 : index
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %v_row = dlc.pop_buffer %dim : memref<?xf32>
// CHECK-NEXT:         %b_1 = dlc.get_var 0 : index
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:           %v = memref.load %v_row[%d] : memref<?xf32>
// CHECK-NEXT:           %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:           %sum = arith.addf %acc, %v : f32
// CHECK-NEXT:           memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       dlc.case 1 {
// CHECK-NEXT:         dlc.increment_var 0 by 1
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
    dlc.configure_access {
      %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
      %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
      %n = dlc.alu_stream layer 0 max %len, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
      %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %b : !dlc.stream<index>
      dlc.register_callback layer 1 iter 0
      dlc.register_operand layer 1 end %n : !dlc.stream<index>
      dlc.register_operand layer 1 end %b : !dlc.stream<index>
      dlc.register_callback layer 1 end 1
    }
    dlc.compute_loop {
      dlc.case 0 {
        %v_row = dlc.pop_buffer %dim : memref<?xf32>
        %b_1 = dlc.pop_operand : index
        %c1_1 = arith.constant 1 : index
        scf.for %d = %c0 to %dim step %c1_1 {
          %v = memref.load %v_row[%d] : memref<?xf32>
          %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
          %sum = arith.addf %acc, %v : f32
          memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
        }
      }
      dlc.case 1 {
        %n_i64 = dlc.pop_operand : i64
        %b_2 = dlc.pop_operand : index
        %nf = arith.sitofp %n_i64 : i64 to f32
        scf.for %d_1 = %c0 to %dim step %c1 {
          %s = memref.load %out[%b_2, %d_1] : memref<?x?xf32>
          %m = arith.divf %s, %nf : f32
          memref.store %m, %out[%b_2, %d_1] : memref<?x?xf32>
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
// CHECK-NEXT:     dlc.configure_access {
// CHECK-NEXT:       %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
// CHECK-NEXT:       %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
// CHECK-NEXT:       %n = dlc.alu_stream layer 0 max %len, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
// CHECK-NEXT:       %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_callback layer 1 iter 0
// CHECK-NEXT:       dlc.register_operand layer 1 end %n : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_callback layer 1 end 1
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.set_var 0, %c0 : index
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %v_row = dlc.pop_buffer %dim : memref<?xf32>
// CHECK-NEXT:         %b_1 = dlc.get_var 0 : index
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:           %v = memref.load %v_row[%d] : memref<?xf32>
// CHECK-NEXT:           %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:           %sum = arith.addf %acc, %v : f32
// CHECK-NEXT:           memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       dlc.case 1 {
// CHECK-NEXT:         %n_i64 = dlc.pop_operand : i64
// CHECK-NEXT:         %b_2 = dlc.get_var 0 : index
// CHECK-NEXT:         %nf = arith.sitofp %n_i64 : i64 to f32
// CHECK-NEXT:         scf.for %d_1 = %c0 to %dim step %c1 {
// CHECK-NEXT:           %s = memref.load %out[%b_2, %d_1] : memref<?x?xf32>
// CHECK-NEXT:           %m = arith.divf %s, %nf : f32
// CHECK-NEXT:           memref.store %m, %out[%b_2, %d_1] : memref<?x?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:         dlc.increment_var 0 by 1
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

// examples/embedding_bag_sum_bf16.mlir
builtin.module {
  func.func @embedding_bag_sum_bf16(%table: memref<?x?xbf16>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xbf16>) -> memref<?x?xbf16> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %nbags = memref.dim %out, %c0 : memref<?x?xbf16>
    %dim = memref.dim %table, %c1 : memref<?x?xbf16>
    %acc = memref.alloc(%dim) : memref<?xf32>
    dlc.configure_access {
      %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
      %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
      %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 2 : memref<?x?xbf16>, !dlc.stream<index>, index -> !dlc.buffer<bf16>
      dlc.register_callback layer 1 begin 0
      dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<bf16>
      dlc.register_callback layer 1 iter 1
      dlc.register_operand layer 1 end %b : !dlc.stream<index>
      dlc.register_callback layer 1 end 2
    }
    dlc.compute_loop {
      dlc.case 0 {
        scf.for %k = %c0 to %dim step %c1 {
          memref.store %zero, %acc[%k] : memref<?xf32>
        }
      }
      dlc.case 1 {
        %v_row = dlc.pop_buffer %dim : memref<?xbf16>
        %c1_1 = arith.constant 1 : index
        scf.for %d = %c0 to %dim step %c1_1 {
          %v = memref.load %v_row[%d] : memref<?xbf16>
          %w = arith.extf %v : bf16 to f32
          %a = memref.load %acc[%d] : memref<?xf32>
          %s = arith.addf %a, %w : f32
          memref.store %s, %acc[%d] : memref<?xf32>
        }
      }
      dlc.case 2 {
        %b_1 = dlc.pop_operand : index
        scf.for %k_1 = %c0 to %dim step %c1 {
          %a_1 = memref.load %acc[%k_1] : memref<?xf32>
          %h = arith.truncf %a_1 {roundingmode = 4 : i32} : f32 to bf16
          memref.store %h, %out[%b_1, %k_1] : memref<?x?xbf16>
        }
      }
    }
    func.return %out : memref<?x?xbf16>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @embedding_bag_sum_bf16(%table: memref<?x?xbf16>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xbf16>) -> memref<?x?xbf16> {
// CHECK-NEXT:     %cm1 = arith.constant -1 : index
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %nbags = memref.dim %out, %c0 : memref<?x?xbf16>
// CHECK-NEXT:     %dim = memref.dim %table, %c1 : memref<?x?xbf16>
// CHECK-NEXT:     %acc = memref.alloc(%dim) : memref<?xf32>
// CHECK-NEXT:     dlc.configure_access {
// CHECK-NEXT:       %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
// CHECK-NEXT:       %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
// CHECK-NEXT:       %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 2 : memref<?x?xbf16>, !dlc.stream<index>, index -> !dlc.buffer<bf16>
// CHECK-NEXT:       dlc.register_callback layer 1 begin 0
// CHECK-NEXT:       dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<bf16>
// CHECK-NEXT:       dlc.register_callback layer 1 iter 1
// CHECK-NEXT:       dlc.register_callback layer 1 end 2
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.set_var 0, %cm1 : index
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         dlc.increment_var 0 by 1
// CHECK-NEXT:         scf.for %k = %c0 to %dim step %c1 {
// CHECK-NEXT:           memref.store %zero, %acc[%k] : memref<?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       dlc.case 1 {
// CHECK-NEXT:         %v_row = dlc.pop_buffer %dim : memref<?xbf16>
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:           %v = memref.load %v_row[%d] : memref<?xbf16>
// CHECK-NEXT:           %w = arith.extf %v : bf16 to f32
// CHECK-NEXT:           %a = memref.load %acc[%d] : memref<?xf32>
// CHECK-NEXT:           %s = arith.addf %a, %w : f32
// CHECK-NEXT:           memref.store %s, %acc[%d] : memref<?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       dlc.case 2 {
// CHECK-NEXT:         %b_1 = dlc.get_var 0 : index
// CHECK-NEXT:         scf.for %k_1 = %c0 to %dim step %c1 {
// CHECK-NEXT:           %a_1 = memref.load %acc[%k_1] : memref<?xf32>
// CHECK-NEXT:           %h = arith.truncf %a_1 {roundingmode = 4 : i32} : f32 to bf16
// CHECK-NEXT:           memref.store %h, %out[%b_1, %k_1] : memref<?x?xbf16>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xbf16>
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
    %0 = memref.dim %relation, %c1 : memref<?x?xf32>
    dlc.configure_access {
      %t = dlc.tu layer 0 %c0 to %n step 1 : index, index
      %th = dlc.alu_stream layer 0 mul %t, %c3 : !dlc.stream<index>, index -> !dlc.stream<index>
      %tr = dlc.alu_stream layer 0 add %th, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %tt = dlc.alu_stream layer 0 add %tr, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %h_i64 = dlc.mem_stream layer 0 %triples[%th] stride 8 : memref<?xi64>, !dlc.stream<index>
      %r_i64 = dlc.mem_stream layer 0 %triples[%tr] stride 8 : memref<?xi64>, !dlc.stream<index>
      %tl_i64 = dlc.mem_stream layer 0 %triples[%tt] stride 8 : memref<?xi64>, !dlc.stream<index>
      %1 = dlc.alu_stream layer 0 mul %h_i64, %dim : !dlc.stream<i64>, index -> !dlc.stream<index>
      %eh_buf = dlc.buf_stream layer 0 %entity[%1] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %2 = dlc.alu_stream layer 0 mul %r_i64, %0 : !dlc.stream<i64>, index -> !dlc.stream<index>
      %er_buf = dlc.buf_stream layer 0 %relation[%2] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %3 = dlc.alu_stream layer 0 mul %tl_i64, %dim : !dlc.stream<i64>, index -> !dlc.stream<index>
      %et_buf = dlc.buf_stream layer 0 %entity[%3] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      dlc.register_operand layer 0 iter %eh_buf : !dlc.buffer<f32>
      dlc.register_operand layer 0 iter %er_buf : !dlc.buffer<f32>
      dlc.register_operand layer 0 iter %et_buf : !dlc.buffer<f32>
      dlc.register_operand layer 0 iter %t : !dlc.stream<index>
      dlc.register_callback layer 0 iter 0
      dlc.register_operand layer 0 iter %t : !dlc.stream<index>
      dlc.register_callback layer 0 iter 1
    }
    dlc.compute_loop {
      dlc.case 0 {
        %eh_row = dlc.pop_buffer %dim : memref<?xf32>
        %er_row = dlc.pop_buffer %dim : memref<?xf32>
        %et_row = dlc.pop_buffer %dim : memref<?xf32>
        %t_1 = dlc.pop_operand : index
        %c1_1 = arith.constant 1 : index
        scf.for %d = %c0 to %dim step %c1_1 {
          %eh = memref.load %eh_row[%d] : memref<?xf32>
          %er = memref.load %er_row[%d] : memref<?xf32>
          %et = memref.load %et_row[%d] : memref<?xf32>
          %hr = arith.addf %eh, %er : f32
          %diff = arith.subf %hr, %et : f32
          %sq = arith.mulf %diff, %diff : f32
          %acc = memref.load %out[%t_1] : memref<?xf32>
          %s = arith.addf %acc, %sq : f32
          memref.store %s, %out[%t_1] : memref<?xf32>
        }
      }
      dlc.case 1 {
        %t_2 = dlc.pop_operand : index
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
// CHECK-NEXT:     %cm1 = arith.constant -1 : index
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %n = memref.dim %out, %c0 : memref<?xf32>
// CHECK-NEXT:     %dim = memref.dim %entity, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %0 = memref.dim %relation, %c1 : memref<?x?xf32>
// CHECK-NEXT:     dlc.configure_access {
// CHECK-NEXT:       %t = dlc.tu layer 0 %c0 to %n step 1 : index, index
// CHECK-NEXT:       %th = dlc.alu_stream layer 0 mul %t, %c3 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %tr = dlc.alu_stream layer 0 add %th, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %tt = dlc.alu_stream layer 0 add %tr, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %h_i64 = dlc.mem_stream layer 0 %triples[%th] stride 8 : memref<?xi64>, !dlc.stream<index>
// CHECK-NEXT:       %r_i64 = dlc.mem_stream layer 0 %triples[%tr] stride 8 : memref<?xi64>, !dlc.stream<index>
// CHECK-NEXT:       %tl_i64 = dlc.mem_stream layer 0 %triples[%tt] stride 8 : memref<?xi64>, !dlc.stream<index>
// CHECK-NEXT:       %1 = dlc.alu_stream layer 0 mul %h_i64, %dim : !dlc.stream<i64>, index -> !dlc.stream<index>
// CHECK-NEXT:       %eh_buf = dlc.buf_stream layer 0 %entity[%1] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
// CHECK-NEXT:       %2 = dlc.alu_stream layer 0 mul %r_i64, %0 : !dlc.stream<i64>, index -> !dlc.stream<index>
// CHECK-NEXT:       %er_buf = dlc.buf_stream layer 0 %relation[%2] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
// CHECK-NEXT:       %3 = dlc.alu_stream layer 0 mul %tl_i64, %dim : !dlc.stream<i64>, index -> !dlc.stream<index>
// CHECK-NEXT:       %et_buf = dlc.buf_stream layer 0 %entity[%3] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 0 iter %eh_buf : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 0 iter %er_buf : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 0 iter %et_buf : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_callback layer 0 iter 0
// CHECK-NEXT:       dlc.register_callback layer 0 iter 1
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.set_var 0, %cm1 : index
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         dlc.increment_var 0 by 1
// CHECK-NEXT:         %eh_row = dlc.pop_buffer %dim : memref<?xf32>
// CHECK-NEXT:         %er_row = dlc.pop_buffer %dim : memref<?xf32>
// CHECK-NEXT:         %et_row = dlc.pop_buffer %dim : memref<?xf32>
// CHECK-NEXT:         %t_1 = dlc.get_var 0 : index
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
// CHECK-NEXT:       dlc.case 1 {
// CHECK-NEXT:         %t_2 = dlc.get_var 0 : index
// CHECK-NEXT:         %ss = memref.load %out[%t_2] : memref<?xf32>
// CHECK-NEXT:         %norm = math.sqrt %ss : f32
// CHECK-NEXT:         memref.store %norm, %out[%t_2] : memref<?xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?xf32>
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
    dlc.configure_access {
      %i = dlc.tu layer 0 %c0 to %n step 1 : index, index
      %i1 = dlc.alu_stream layer 0 add %i, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %rowptr[%i] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %rowptr[%i1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %c = dlc.mem_stream layer 1 %col[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %a = dlc.mem_stream layer 1 %val[%j] stride 4 : memref<?xf32>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %c, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
      %v_buf = dlc.buf_stream layer 1 %x[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %i : !dlc.stream<index>
      dlc.register_operand layer 1 iter %a : !dlc.stream<f32>
      dlc.register_callback layer 1 iter 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %v_row = dlc.pop_buffer %dim : memref<?xf32>
        %i_1 = dlc.pop_operand : index
        %a_1 = dlc.pop_operand : f32
        %c1_1 = arith.constant 1 : index
        scf.for %d = %c0 to %dim step %c1_1 {
          %v = memref.load %v_row[%d] : memref<?xf32>
          %acc = memref.load %out[%i_1, %d] : memref<?x?xf32>
          %p = arith.mulf %a_1, %v : f32
          %s = arith.addf %acc, %p : f32
          memref.store %s, %out[%i_1, %d] : memref<?x?xf32>
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
// CHECK-NEXT:     dlc.configure_access {
// CHECK-NEXT:       %i = dlc.tu layer 0 %c0 to %n step 1 : index, index
// CHECK-NEXT:       %i1 = dlc.alu_stream layer 0 add %i, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %start = dlc.mem_stream layer 0 %rowptr[%i] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %end = dlc.mem_stream layer 0 %rowptr[%i1] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
// CHECK-NEXT:       %c = dlc.mem_stream layer 1 %col[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %a = dlc.mem_stream layer 1 %val[%j] stride 4 : memref<?xf32>, !dlc.stream<index>
// CHECK-NEXT:       %0 = dlc.alu_stream layer 1 mul %c, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %v_buf = dlc.buf_stream layer 1 %x[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %a : !dlc.stream<f32>
// CHECK-NEXT:       dlc.register_callback layer 1 iter 0
// CHECK-NEXT:       dlc.register_callback layer 1 end 1
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.set_var 0, %c0 : index
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %v_row = dlc.pop_buffer %dim : memref<?xf32>
// CHECK-NEXT:         %i_1 = dlc.get_var 0 : index
// CHECK-NEXT:         %a_1 = dlc.pop_operand : f32
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:           %v = memref.load %v_row[%d] : memref<?xf32>
// CHECK-NEXT:           %acc = memref.load %out[%i_1, %d] : memref<?x?xf32>
// CHECK-NEXT:           %p = arith.mulf %a_1, %v : f32
// CHECK-NEXT:           %s = arith.addf %acc, %p : f32
// CHECK-NEXT:           memref.store %s, %out[%i_1, %d] : memref<?x?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       dlc.case 1 {
// CHECK-NEXT:         dlc.increment_var 0 by 1
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
