// RUN: %ember opt %s --split-input-file --passes align-queues | filecheck %s
// Golden test of the pass align-queues: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/align-queues/), then what it must print.

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
// CHECK-NEXT:  func.func @embedding_bag(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
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
// CHECK-NEXT:       dlc.register_operand layer 1 iter %v_buf packed : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %b packed : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_callback layer 1 iter 0
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %v_row = dlc.pop_buffer %dim packed : memref<?xf32>
// CHECK-NEXT:         %b_1 = dlc.pop_packed : index
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:           %v = memref.load %v_row[%d] : memref<?xf32>
// CHECK-NEXT:           %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:           %sum = arith.addf %acc, %v : f32
// CHECK-NEXT:           memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
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
// CHECK-NEXT:       dlc.register_operand layer 1 iter %v_buf packed : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %b packed : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_callback layer 1 iter 0
// CHECK-NEXT:       dlc.register_operand layer 1 end %n packed join : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_operand layer 1 end %b packed : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_callback layer 1 end 1
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %v_row = dlc.pop_buffer %dim packed : memref<?xf32>
// CHECK-NEXT:         %b_1 = dlc.pop_packed : index
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %d = %c0 to %dim step %c1_1 {
// CHECK-NEXT:           %v = memref.load %v_row[%d] : memref<?xf32>
// CHECK-NEXT:           %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:           %sum = arith.addf %acc, %v : f32
// CHECK-NEXT:           memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:       dlc.case 1 {
// CHECK-NEXT:         %n_i64, %b_2 = dlc.pop_packed : i64, index
// CHECK-NEXT:         %nf = arith.sitofp %n_i64 : i64 to f32
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
