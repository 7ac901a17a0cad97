builtin.module {
  func.func @embedding_bag_alloc(%table: memref<?x?xf32>, %indices: memref<?xi32>, %offsets: memref<?xi32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.000000e+00 : f32
    %noffsets = memref.dim %offsets, %c0 : memref<?xi32>
    %nbags = arith.subi %noffsets, %c1 : index
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    %out = memref.alloc(%nbags, %dim) : memref<?x?xf32>
    scf.for %i = %c0 to %nbags step %c1 {
      scf.for %k = %c0 to %dim step %c1 {
        memref.store %zero, %out[%i, %k] : memref<?x?xf32>
      }
    }
    dlc.configure_access {
      %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
      %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start_i32 = dlc.mem_stream layer 0 %offsets[%b] stride 4 : memref<?xi32>, !dlc.stream<index>
      %end_i32 = dlc.mem_stream layer 0 %offsets[%b1] stride 4 : memref<?xi32>, !dlc.stream<index>
      %j = dlc.tu layer 1 %start_i32 to %end_i32 step 1 check_order : !dlc.stream<i32>, !dlc.stream<i32>
      %row_i32 = dlc.mem_stream layer 1 %indices[%j] stride 4 : memref<?xi32>, !dlc.stream<index>
      %d = dlc.tu layer 2 %c0 to %dim step 1 : index, index
      %0 = dlc.alu_stream layer 2 mul %row_i32, %dim : !dlc.stream<i32>, index -> !dlc.stream<index>
      %1 = dlc.alu_stream layer 2 add %0, %d : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
      %v = dlc.mem_stream layer 2 %table[%1] stride 4 : memref<?x?xf32>, !dlc.stream<index>
      dlc.register_operand layer 2 iter %b : !dlc.stream<index>
      dlc.register_operand layer 2 iter %d : !dlc.stream<index>
      dlc.register_operand layer 2 iter %v : !dlc.stream<f32>
      dlc.register_callback layer 2 iter 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %b_1 = dlc.pop_operand : index
        %d_1 = dlc.pop_operand : index
        %v_1 = dlc.pop_operand : f32
        %acc = memref.load %out[%b_1, %d_1] : memref<?x?xf32>
        %sum = arith.addf %acc, %v_1 : f32
        memref.store %sum, %out[%b_1, %d_1] : memref<?x?xf32>
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
