// RUN: %ember opt %s --split-input-file --passes coalesce-rows | filecheck %s
// Test of the pass coalesce-rows: the bs consecutive key/value rows of a block
// (examples/block_sparse_gather.mlir, the SLCV -O3 hands the pass) become one block of bs whole rows
// each, read on the core at r * row_size + d. Second case, left alone: the rows start at column 1
// (a block of whole rows would not be where the loop reads).

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
          %k_buf = slcv.buf_stream %key[%row, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
          %v_buf = slcv.buf_stream %value[%row, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
          slc.callback iter {
            %k_row = slcv.from_buffer %k_buf : !slcv.buffer<f32> -> memref<?xf32>
            %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
            %orow_1 = slc.from_stream %orow : !slc.stream<index>
            %c1_1 = arith.constant 1 : index
            scf.for %d = %c0 to %dim step %c1_1 {
              %k = memref.load %k_row[%d] : memref<?xf32>
              %v = memref.load %v_row[%d] : memref<?xf32>
              memref.store %k, %k_out[%orow_1, %d] : memref<?x?xf32>
              memref.store %v, %v_out[%orow_1, %d] : memref<?x?xf32>
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
// CHECK-NEXT:     %0 = arith.constant 1 : index
// CHECK-NEXT:     %key_row = memref.dim %key, %0 : memref<?x?xf32>
// CHECK-NEXT:     %key_block_len = arith.muli %bs, %key_row : index
// CHECK-NEXT:     %1 = arith.constant 1 : index
// CHECK-NEXT:     %value_row = memref.dim %value, %1 : memref<?x?xf32>
// CHECK-NEXT:     %value_block_len = arith.muli %bs, %value_row : index
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
// CHECK-NEXT:         %key_block = slcv.buf_stream %key[%base, %c0] len %key_block_len : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:         %value_block = slcv.buf_stream %value[%base, %c0] len %value_block_len : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:         slc.callback iter {
// CHECK-NEXT:           %k_rows = slcv.from_buffer %key_block : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:           %v_rows = slcv.from_buffer %value_block : !slcv.buffer<f32> -> memref<?xf32>
// CHECK-NEXT:           %obase_1 = slc.from_stream %obase : !slc.stream<index>
// CHECK-NEXT:           %c1_1 = arith.constant 1 : index
// CHECK-NEXT:           scf.for %r = %c0 to %bs step %c1_1 {
// CHECK-NEXT:             %row_start = arith.muli %r, %key_row : index
// CHECK-NEXT:             %row_start_1 = arith.muli %r, %value_row : index
// CHECK-NEXT:             %orow = arith.addi %obase_1, %r : index
// CHECK-NEXT:             %c1_2 = arith.constant 1 : index
// CHECK-NEXT:             scf.for %d = %c0 to %dim step %c1_2 {
// CHECK-NEXT:               %at = arith.addi %row_start, %d : index
// CHECK-NEXT:               %k = memref.load %k_rows[%at] : memref<?xf32>
// CHECK-NEXT:               %at_1 = arith.addi %row_start_1, %d : index
// CHECK-NEXT:               %v = memref.load %v_rows[%at_1] : memref<?xf32>
// CHECK-NEXT:               memref.store %k, %k_out[%orow, %d] : memref<?x?xf32>
// CHECK-NEXT:               memref.store %v, %v_out[%orow, %d] : memref<?x?xf32>
// CHECK-NEXT:             }
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %k_out, %v_out : memref<?x?xf32>, memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

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
          %k_buf = slcv.buf_stream %key[%row, %c1] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
          %v_buf = slcv.buf_stream %value[%row, %c1] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
          slc.callback iter {
            %k_row = slcv.from_buffer %k_buf : !slcv.buffer<f32> -> memref<?xf32>
            %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
            %orow_1 = slc.from_stream %orow : !slc.stream<index>
            %c1_1 = arith.constant 1 : index
            scf.for %d = %c0 to %dim step %c1_1 {
              %k = memref.load %k_row[%d] : memref<?xf32>
              %v = memref.load %v_row[%d] : memref<?xf32>
              memref.store %k, %k_out[%orow_1, %d] : memref<?x?xf32>
              memref.store %v, %v_out[%orow_1, %d] : memref<?x?xf32>
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
// CHECK-NEXT:           %k_buf = slcv.buf_stream %key[%row, %c1] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
// CHECK-NEXT:           %v_buf = slcv.buf_stream %value[%row, %c1] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
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
