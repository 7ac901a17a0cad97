builtin.module {
  func.func @hashed_gather(%table: memref<?xf32>, %remap: memref<?xindex>, %ids: memref<?xi64>, %logb: i64, %logd: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %golden = arith.constant -7046029254386353131 : i64
    %c64 = arith.constant 64 : i64
    %n = memref.dim %ids, %c0 : memref<?xi64>
    %dim = memref.dim %out, %c1 : memref<?x?xf32>
    %shift = arith.subi %c64, %logb : i64
    dlc.configure_access {
      %i = dlc.tu layer 0 %c0 to %n step 1 vlen 8 config broadcast : index, index
      %id = dlc.mem_stream layer 0 %ids[%i] stride 8 : memref<?xi64>, !dlc.stream<index>
      %prod = dlc.alu_stream layer 0 mul %id, %golden : !dlc.stream<i64>, i64 -> !dlc.stream<i64>
      %h64 = dlc.alu_stream layer 0 shr %prod, %shift : !dlc.stream<i64>, i64 -> !dlc.stream<i64>
      %row = dlc.mem_stream layer 0 %remap[%h64] stride 8 : memref<?xindex>, !dlc.stream<i64>
      %base = dlc.alu_stream layer 0 shl %row, %logd : !dlc.stream<index>, index -> !dlc.stream<index>
      %d = dlc.tu layer 1 %c0 to %dim step 1 vlen 8 config vector : index, index
      %a = dlc.alu_stream layer 1 add %base, %d : !dlc.stream<index>, !dlc.vstream<index, 8> -> !dlc.vstream<index, 8>
      %v = dlc.mem_stream layer 1 %table[%a] stride 4 : memref<?xf32>, !dlc.vstream<index, 8>
      dlc.register_operand layer 1 iter %v : !dlc.vstream<f32, 8>
      dlc.register_operand layer 1 end %i : !dlc.stream<index>
      dlc.register_callback layer 1 end 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %v_row = dlc.pop_buffer %dim lanes 8 : memref<?xf32>
        %i_1 = dlc.pop_operand : index
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
