// RUN: %ember opt %s --split-input-file --passes convert-slc-to-dlc | filecheck %s
// Golden test of the pass convert-slc-to-dlc: each case is the IR the -O pipeline hands the pass for
// examples/<case>.mlir (as tests/compiler/golden/passes/convert-slc-to-dlc/), then what it must print.

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
        %v_buf = slcv.buf_stream %table[%row, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
        slc.callback iter {
          %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
          %b_1 = slc.from_stream %b : !slc.stream<index>
          %c1_1 = arith.constant 1 : index
          scf.for %d = %c0 to %dim step %c1_1 {
            %v = memref.load %v_row[%d] : memref<?xf32>
            %acc = memref.load %out[%b_1, %d] : memref<?x?xf32>
            %sum = arith.addf %acc, %v : f32
            memref.store %sum, %out[%b_1, %d] : memref<?x?xf32>
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
// CHECK-NEXT:     dlc.configure_access {
// CHECK-NEXT:       %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
// CHECK-NEXT:       %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
// CHECK-NEXT:       %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %0 = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %1 = dlc.alu_stream layer 1 add %0, %c0 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %v_buf = dlc.buf_stream layer 1 %table[%1] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
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
    slcv.for %i = %c0 to %n step 1 vlen 8 config broadcast : index, index {
      %id = slc.mem_stream %ids[%i] : memref<?xi64>, !slc.stream<index>
      %prod = slc.alu_stream mul %id, %golden : !slc.stream<i64>, i64 -> !slc.stream<i64>
      %h64 = slc.alu_stream shr %prod, %shift : !slc.stream<i64>, i64 -> !slc.stream<i64>
      %h = slc.cast %h64 : !slc.stream<i64> to !slc.stream<index>
      %row = slc.mem_stream %remap[%h] : memref<?xindex>, !slc.stream<index>
      %base = slc.alu_stream shl %row, %logd : !slc.stream<index>, index -> !slc.stream<index>
      %v_buf = slcv.for %d, %mask = %c0 to %dim step 1 vlen 8 config vector : index, index -> !slcv.buffer<f32> {
        %a = slcv.alu_stream add %base, %d : !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<index, 8>
        %v = slcv.mem_stream %table[%a] : memref<?xf32>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
        slcv.to_buffer %v : !slcv.vstream<f32, 8>
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
// CHECK-NEXT:     dlc.configure_access {
// CHECK-NEXT:       %i = dlc.tu layer 0 %c0 to %n step 1 vlen 8 config broadcast : index, index
// CHECK-NEXT:       %id = dlc.mem_stream layer 0 %ids[%i] stride 8 : memref<?xi64>, !dlc.stream<index>
// CHECK-NEXT:       %prod = dlc.alu_stream layer 0 mul %id, %golden : !dlc.stream<i64>, i64 -> !dlc.stream<i64>
// CHECK-NEXT:       %h64 = dlc.alu_stream layer 0 shr %prod, %shift : !dlc.stream<i64>, i64 -> !dlc.stream<i64>
// CHECK-NEXT:       %row = dlc.mem_stream layer 0 %remap[%h64] stride 8 : memref<?xindex>, !dlc.stream<i64>
// CHECK-NEXT:       %base = dlc.alu_stream layer 0 shl %row, %logd : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %d = dlc.tu layer 1 %c0 to %dim step 1 vlen 8 config vector : index, index
// CHECK-NEXT:       %a = dlc.alu_stream layer 1 add %base, %d : !dlc.stream<index>, !dlc.vstream<index, 8> -> !dlc.vstream<index, 8>
// CHECK-NEXT:       %v = dlc.mem_stream layer 1 %table[%a] stride 4 : memref<?xf32>, !dlc.vstream<index, 8>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %v : !dlc.vstream<f32, 8>
// CHECK-NEXT:       dlc.register_operand layer 1 end %i : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_callback layer 1 end 0
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %v_row = dlc.pop_buffer %dim lanes 8 : memref<?xf32>
// CHECK-NEXT:         %i_1 = dlc.pop_operand : index
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
