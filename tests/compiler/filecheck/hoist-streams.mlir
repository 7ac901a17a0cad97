// RUN: %ember opt %s --split-input-file --passes hoist-streams | filecheck %s
// Golden test of the pass hoist-streams: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/hoist-streams/), then what it must print.

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
      %j = dlc.tu layer 1 %start to %end step 1 check_order vlen 8 config broadcast : !dlc.stream<index>, !dlc.stream<index>
      %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %d = dlc.tu layer 2 %c0 to %dim step 1 vlen 8 config vector : index, index
      %0 = dlc.alu_stream layer 2 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
      %1 = dlc.alu_stream layer 2 add %0, %d : !dlc.stream<index>, !dlc.vstream<index, 8> -> !dlc.vstream<index, 8>
      %v = dlc.mem_stream layer 2 %table[%1] stride 4 : memref<?x?xf32>, !dlc.vstream<index, 8>
      %d0 = dlc.first_lane layer 2 %d : !dlc.vstream<index, 8> -> !dlc.stream<index>
      dlc.register_operand layer 2 iter %b : !dlc.stream<index>
      dlc.register_operand layer 2 iter %d0 : !dlc.stream<index>
      dlc.register_operand layer 2 iter %v : !dlc.vstream<f32, 8>
      dlc.register_callback layer 2 iter 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %b_1 = dlc.pop_operand : index
        %d0_1 = dlc.pop_operand : index
        %v_vec = dlc.pop_operand : vector<8xf32>
        %2 = arith.constant dense<0.000000e+00> : vector<8xf32>
        %live = arith.subi %dim, %d0_1 : index
        %mask = vector.create_mask %live : vector<8xi1>
        %acc = vector.maskedload %out[%b_1, %d0_1], %mask, %2 : memref<?x?xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
        %sum = arith.addf %acc, %v_vec : vector<8xf32>
        vector.maskedstore %out[%b_1, %d0_1], %mask, %sum : memref<?x?xf32>, vector<8xi1>, vector<8xf32>
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
// CHECK-NEXT:       %j = dlc.tu layer 1 %start to %end step 1 check_order vlen 8 config broadcast : !dlc.stream<index>, !dlc.stream<index>
// CHECK-NEXT:       %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %d = dlc.tu layer 2 %c0 to %dim step 1 vlen 8 config vector : index, index
// CHECK-NEXT:       %1 = dlc.alu_stream layer 2 add %0, %d : !dlc.stream<index>, !dlc.vstream<index, 8> -> !dlc.vstream<index, 8>
// CHECK-NEXT:       %v = dlc.mem_stream layer 2 %table[%1] stride 4 : memref<?x?xf32>, !dlc.vstream<index, 8>
// CHECK-NEXT:       %d0 = dlc.first_lane layer 2 %d : !dlc.vstream<index, 8> -> !dlc.stream<index>
// CHECK-NEXT:       dlc.register_operand layer 2 iter %b : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_operand layer 2 iter %d0 : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_operand layer 2 iter %v : !dlc.vstream<f32, 8>
// CHECK-NEXT:       dlc.register_callback layer 2 iter 0
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %b_1 = dlc.pop_operand : index
// CHECK-NEXT:         %d0_1 = dlc.pop_operand : index
// CHECK-NEXT:         %v_vec = dlc.pop_operand : vector<8xf32>
// CHECK-NEXT:         %2 = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-NEXT:         %live = arith.subi %dim, %d0_1 : index
// CHECK-NEXT:         %mask = vector.create_mask %live : vector<8xi1>
// CHECK-NEXT:         %acc = vector.maskedload %out[%b_1, %d0_1], %mask, %2 : memref<?x?xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK-NEXT:         %sum = arith.addf %acc, %v_vec : vector<8xf32>
// CHECK-NEXT:         vector.maskedstore %out[%b_1, %d0_1], %mask, %sum : memref<?x?xf32>, vector<8xi1>, vector<8xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
