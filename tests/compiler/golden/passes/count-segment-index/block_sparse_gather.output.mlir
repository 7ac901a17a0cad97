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
    dlc.configure_access {
      %q = dlc.tu layer 0 %c0 to %nq step 1 : index, index
      %q1 = dlc.alu_stream layer 0 add %q, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start_i64 = dlc.mem_stream layer 0 %block_ptr[%q] stride 8 : memref<?xi64>, !dlc.stream<index>
      %end_i64 = dlc.mem_stream layer 0 %block_ptr[%q1] stride 8 : memref<?xi64>, !dlc.stream<index>
      %seg_len = dlc.alu_stream layer 0 sub %end_i64, %start_i64 : !dlc.stream<i64>, !dlc.stream<i64> -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start_i64 to %end_i64 step 1 check_order : !dlc.stream<i64>, !dlc.stream<i64>
      %blk_i64 = dlc.mem_stream layer 1 %block_idx[%j] stride 8 : memref<?xi64>, !dlc.stream<index>
      %base = dlc.alu_stream layer 1 mul %blk_i64, %bs : !dlc.stream<i64>, index -> !dlc.stream<index>
      %2 = dlc.alu_stream layer 1 mul %base, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
      %key_block = dlc.buf_stream layer 1 %key[%2] len %key_block_len stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %3 = dlc.alu_stream layer 1 mul %base, %value_row : !dlc.stream<index>, index -> !dlc.stream<index>
      %value_block = dlc.buf_stream layer 1 %value[%3] len %value_block_len stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
      dlc.register_operand layer 1 iter %key_block : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %value_block : !dlc.buffer<f32>
      dlc.register_callback layer 1 begin 0
    }
    %block_ptr_len = memref.dim %block_ptr, %c0 : memref<?xi64>
    %first_inside = arith.cmpi ult, %c0, %block_ptr_len : index
    %var0_init = scf.if %first_inside -> (index) {
      %first_start = memref.load %block_ptr[%c0] : memref<?xi64>
      %first_start_index = arith.index_cast %first_start : i64 to index
      scf.yield %first_start_index : index
    } else {
      scf.yield %c0 : index
    }
    dlc.set_var 0, %var0_init : index
    dlc.compute_loop {
      dlc.case 0 {
        %seg_len_1 = dlc.pop_operand : index
        %c0_1 = arith.constant 0 : index
        %c1_1 = arith.constant 1 : index
        scf.for %lookup = %c0_1 to %seg_len_1 step %c1_1 {
          %j_1 = dlc.get_var 0 : index
          %k_rows = dlc.pop_buffer %key_block_len : memref<?xf32>
          %v_rows = dlc.pop_buffer %value_block_len : memref<?xf32>
          %obase = arith.muli %j_1, %bs : index
          %c1_2 = arith.constant 1 : index
          scf.for %r = %c0 to %bs step %c1_2 {
            %row_start = arith.muli %r, %key_row : index
            %row_start_1 = arith.muli %r, %value_row : index
            %orow = arith.addi %obase, %r : index
            %c1_3 = arith.constant 1 : index
            scf.for %d = %c0 to %dim step %c1_3 {
              %at = arith.addi %row_start, %d : index
              %k = memref.load %k_rows[%at] : memref<?xf32>
              %at_1 = arith.addi %row_start_1, %d : index
              %v = memref.load %v_rows[%at_1] : memref<?xf32>
              memref.store %k, %k_out[%orow, %d] : memref<?x?xf32>
              memref.store %v, %v_out[%orow, %d] : memref<?x?xf32>
            }
          }
          dlc.increment_var 0 by 1
        }
      }
    }
    func.return %k_out, %v_out : memref<?x?xf32>, memref<?x?xf32>
  }
}
