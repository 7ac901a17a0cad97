builtin.module {
  func.func @hashed_gather(%table: memref<?xf32>, %remap: memref<?xindex>, %ids: memref<?xi64>, %logb: i64, %logd: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %golden = arith.constant -7046029254386353131 : i64
    %c64 = arith.constant 64 : i64
    %n = memref.dim %ids, %c0 : memref<?xi64>
    %dim = memref.dim %out, %c1 : memref<?x?xf32>
    %shift = arith.subi %c64, %logb : i64
    slc.for %i = %c0 to %n step 1 : index, index {
      %id = slc.mem_stream %ids[%i] : memref<?xi64>, !slc.stream<index>
      %prod = slc.alu_stream mul %id, %golden : !slc.stream<i64>, i64 -> !slc.stream<i64>
      %h64 = slc.alu_stream shr %prod, %shift : !slc.stream<i64>, i64 -> !slc.stream<i64>
      %h = slc.cast %h64 : !slc.stream<i64> to !slc.stream<index>
      %row = slc.mem_stream %remap[%h] : memref<?xindex>, !slc.stream<index>
      %base = slc.alu_stream shl %row, %logd : !slc.stream<index>, index -> !slc.stream<index>
      %v_buf = slcv.buf_stream %table[%base] len %dim : memref<?xf32>, !slc.stream<index>, index -> !slcv.buffer<f32>
      slc.callback iter {
        %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
        %i_1 = slc.from_stream %i : !slc.stream<index>
        %c1_1 = arith.constant 1 : index
        scf.for %d = %c0 to %dim step %c1_1 {
          %v = memref.load %v_row[%d] : memref<?xf32>
          memref.store %v, %out[%i_1, %d] : memref<?x?xf32>
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
