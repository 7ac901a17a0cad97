builtin.module {
  func.func @block_sparse_gather(%block_ptr: memref<?xi64>, %block_idx: memref<?xi64>, %key: memref<?x?xf32>, %value: memref<?x?xf32>, %bs: index, %k_out: memref<?x?xf32>, %v_out: memref<?x?xf32>) -> (memref<?x?xf32>, memref<?x?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nptr = memref.dim %block_ptr, %c0 : memref<?xi64>
    %nq = arith.subi %nptr, %c1 : index
    %dim = memref.dim %key, %c1 : memref<?x?xf32>
    %0 = arith.constant 1 : index
    %key_row = memref.dim %key, %0 : memref<?x?xf32>
    %key_block_len = arith.muli %bs, %key_row : index
    %1 = arith.constant 1 : index
    %value_row = memref.dim %value, %1 : memref<?x?xf32>
    %value_block_len = arith.muli %bs, %value_row : index
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
        %key_block = slcv.buf_stream %key[%base, %c0] len %key_block_len : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
        %value_block = slcv.buf_stream %value[%base, %c0] len %value_block_len : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
        slc.callback iter {
          %k_rows = slcv.from_buffer %key_block : !slcv.buffer<f32> -> memref<?xf32>
          %v_rows = slcv.from_buffer %value_block : !slcv.buffer<f32> -> memref<?xf32>
          %obase_1 = slc.from_stream %obase : !slc.stream<index>
          %c1_1 = arith.constant 1 : index
          scf.for %r = %c0 to %bs step %c1_1 {
            %row_start = arith.muli %r, %key_row : index
            %row_start_1 = arith.muli %r, %value_row : index
            %orow = arith.addi %obase_1, %r : index
            %c1_2 = arith.constant 1 : index
            scf.for %d = %c0 to %dim step %c1_2 {
              %at = arith.addi %row_start, %d : index
              %k = memref.load %k_rows[%at] : memref<?xf32>
              %at_1 = arith.addi %row_start_1, %d : index
              %v = memref.load %v_rows[%at_1] : memref<?xf32>
              memref.store %k, %k_out[%orow, %d] : memref<?x?xf32>
              memref.store %v, %v_out[%orow, %d] : memref<?x?xf32>
            }
          }
        }
      }
    }
    func.return %k_out, %v_out : memref<?x?xf32>, memref<?x?xf32>
  }
}
