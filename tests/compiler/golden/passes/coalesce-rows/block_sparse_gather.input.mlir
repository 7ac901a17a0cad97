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
