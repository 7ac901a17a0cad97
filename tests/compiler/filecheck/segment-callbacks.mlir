// RUN: %ember opt %s --split-input-file --passes segment-callbacks | filecheck %s
// Test of the pass segment-callbacks: the lookups of a bag (examples/embedding_bag_sum.mlir, the IR
// the -O3 pipeline hands the pass) fire one callback per bag on layer 1's begin: the segment length
// and the bag index b (invariant in layer 1) pushed once per bag, the rows per lookup without a
// control token, the callback's body in an scf.for over the segment. Second case, left alone: a
// lookup layer of step 2.

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
// CHECK-NEXT:       %seg_len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
// CHECK-NEXT:       %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
// CHECK-NEXT:       %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_operand layer 1 begin %b : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_callback layer 1 begin 0
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %seg_len_1 = dlc.pop_operand : index
// CHECK-NEXT:         %b_1 = dlc.pop_operand : index
// CHECK-NEXT:         %c0_1 = arith.constant 0 : index
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %lookup = %c0_1 to %seg_len_1 step %c1_1 {
// CHECK-NEXT:           %v_row = dlc.pop_buffer %dim : memref<?xf32>
// CHECK-NEXT:           %c1_2 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %d = %c0 to %dim step %c1_2 {
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
      %j = dlc.tu layer 1 %start to %end step 2 check_order : !dlc.stream<index>, !dlc.stream<index>
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
// CHECK-NEXT:       %j = dlc.tu layer 1 %start to %end step 2 check_order : !dlc.stream<index>, !dlc.stream<index>
// CHECK-NEXT:       %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %v_buf = dlc.buf_stream layer 1 %table[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %v_buf : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %b : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_callback layer 1 iter 0
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %v_row = dlc.pop_buffer %dim : memref<?xf32>
// CHECK-NEXT:         %b_1 = dlc.pop_operand : index
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
