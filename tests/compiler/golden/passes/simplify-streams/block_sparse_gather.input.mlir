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
