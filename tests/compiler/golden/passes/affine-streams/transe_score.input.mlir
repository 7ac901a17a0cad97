builtin.module {
  func.func @transe_score(%triples: memref<?xi64>, %entity: memref<?x?xf32>, %relation: memref<?x?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %n = memref.dim %out, %c0 : memref<?xf32>
    %dim = memref.dim %entity, %c1 : memref<?x?xf32>
    %0 = memref.dim %relation, %c1 : memref<?x?xf32>
    dlc.configure_access {
      %t = dlc.tu layer 0 %c0 to %n step 1 : index, index
      %th = dlc.alu_stream layer 0 mul %t, %c3 : !dlc.stream<index>, index -> !dlc.stream<index>
      %tr = dlc.alu_stream layer 0 add %th, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %tt = dlc.alu_stream layer 0 add %tr, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %h_i64 = dlc.mem_stream layer 0 %triples[%th] stride 8 : memref<?xi64>, !dlc.stream<index>
      %r_i64 = dlc.mem_stream layer 0 %triples[%tr] stride 8 : memref<?xi64>, !dlc.stream<index>
      %tl_i64 = dlc.mem_stream layer 0 %triples[%tt] stride 8 : memref<?xi64>, !dlc.stream<index>
      %1 = dlc.alu_stream layer 0 mul %h_i64, %dim : !dlc.stream<i64>, index -> !dlc.stream<index>
      %2 = dlc.alu_stream layer 0 add %1, %c0 : !dlc.stream<index>, index -> !dlc.stream<index>
      %eh_buf = dlc.buf_stream layer 0 %entity[%2] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %3 = dlc.alu_stream layer 0 mul %r_i64, %0 : !dlc.stream<i64>, index -> !dlc.stream<index>
      %4 = dlc.alu_stream layer 0 add %3, %c0 : !dlc.stream<index>, index -> !dlc.stream<index>
      %er_buf = dlc.buf_stream layer 0 %relation[%4] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %5 = dlc.alu_stream layer 0 mul %tl_i64, %dim : !dlc.stream<i64>, index -> !dlc.stream<index>
      %6 = dlc.alu_stream layer 0 add %5, %c0 : !dlc.stream<index>, index -> !dlc.stream<index>
      %et_buf = dlc.buf_stream layer 0 %entity[%6] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      dlc.register_operand layer 0 iter %eh_buf : !dlc.buffer<f32>
      dlc.register_operand layer 0 iter %er_buf : !dlc.buffer<f32>
      dlc.register_operand layer 0 iter %et_buf : !dlc.buffer<f32>
      dlc.register_operand layer 0 iter %t : !dlc.stream<index>
      dlc.register_callback layer 0 iter 0
      dlc.register_operand layer 0 iter %t : !dlc.stream<index>
      dlc.register_callback layer 0 iter 1
    }
    dlc.compute_loop {
      dlc.case 0 {
        %eh_row = dlc.pop_buffer %dim : memref<?xf32>
        %er_row = dlc.pop_buffer %dim : memref<?xf32>
        %et_row = dlc.pop_buffer %dim : memref<?xf32>
        %t_1 = dlc.pop_operand : index
        %c1_1 = arith.constant 1 : index
        scf.for %d = %c0 to %dim step %c1_1 {
          %eh = memref.load %eh_row[%d] : memref<?xf32>
          %er = memref.load %er_row[%d] : memref<?xf32>
          %et = memref.load %et_row[%d] : memref<?xf32>
          %hr = arith.addf %eh, %er : f32
          %diff = arith.subf %hr, %et : f32
          %sq = arith.mulf %diff, %diff : f32
          %acc = memref.load %out[%t_1] : memref<?xf32>
          %s = arith.addf %acc, %sq : f32
          memref.store %s, %out[%t_1] : memref<?xf32>
        }
      }
      dlc.case 1 {
        %t_2 = dlc.pop_operand : index
        %ss = memref.load %out[%t_2] : memref<?xf32>
        %norm = math.sqrt %ss : f32
        memref.store %norm, %out[%t_2] : memref<?xf32>
      }
    }
    func.return %out : memref<?xf32>
  }
}
