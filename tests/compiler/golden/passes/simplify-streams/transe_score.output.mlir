builtin.module {
  func.func @transe_score(%triples: memref<?xi64>, %entity: memref<?x?xf32>, %relation: memref<?x?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %n = memref.dim %out, %c0 : memref<?xf32>
    %dim = memref.dim %entity, %c1 : memref<?x?xf32>
    slc.for %t = %c0 to %n step 1 : index, index {
      %th = slc.alu_stream mul %t, %c3 : !slc.stream<index>, index -> !slc.stream<index>
      %tr = slc.alu_stream add %th, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %tt = slc.alu_stream add %tr, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %h_i64 = slc.mem_stream %triples[%th] : memref<?xi64>, !slc.stream<index>
      %h = slc.cast %h_i64 : !slc.stream<i64> to !slc.stream<index>
      %r_i64 = slc.mem_stream %triples[%tr] : memref<?xi64>, !slc.stream<index>
      %r = slc.cast %r_i64 : !slc.stream<i64> to !slc.stream<index>
      %tl_i64 = slc.mem_stream %triples[%tt] : memref<?xi64>, !slc.stream<index>
      %tl = slc.cast %tl_i64 : !slc.stream<i64> to !slc.stream<index>
      %eh_buf = slcv.buf_stream %entity[%h, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
      %er_buf = slcv.buf_stream %relation[%r, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
      %et_buf = slcv.buf_stream %entity[%tl, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
      slc.callback iter {
        %eh_row = slcv.from_buffer %eh_buf : !slcv.buffer<f32> -> memref<?xf32>
        %er_row = slcv.from_buffer %er_buf : !slcv.buffer<f32> -> memref<?xf32>
        %et_row = slcv.from_buffer %et_buf : !slcv.buffer<f32> -> memref<?xf32>
        %t_1 = slc.from_stream %t : !slc.stream<index>
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
      slc.callback iter {
        %t_2 = slc.from_stream %t : !slc.stream<index>
        %ss = memref.load %out[%t_2] : memref<?xf32>
        %norm = math.sqrt %ss : f32
        memref.store %norm, %out[%t_2] : memref<?xf32>
      }
    }
    func.return %out : memref<?xf32>
  }
}
