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
      slc.for %d = %c0 to %dim step 1 : index, index {
        %eh = slc.mem_stream %entity[%h, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
        %er = slc.mem_stream %relation[%r, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
        %et = slc.mem_stream %entity[%tl, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
        slc.callback iter {
          %eh_1 = slc.from_stream %eh : !slc.stream<f32>
          %er_1 = slc.from_stream %er : !slc.stream<f32>
          %et_1 = slc.from_stream %et : !slc.stream<f32>
          %t_1 = slc.from_stream %t : !slc.stream<index>
          %hr = arith.addf %eh_1, %er_1 : f32
          %diff = arith.subf %hr, %et_1 : f32
          %sq = arith.mulf %diff, %diff : f32
          %acc = memref.load %out[%t_1] : memref<?xf32>
          %s = arith.addf %acc, %sq : f32
          memref.store %s, %out[%t_1] : memref<?xf32>
        }
      }
      slc.callback end {
        %t_2 = slc.from_stream %t : !slc.stream<index>
        %ss = memref.load %out[%t_2] : memref<?xf32>
        %norm = math.sqrt %ss : f32
        memref.store %norm, %out[%t_2] : memref<?xf32>
      }
    }
    func.return %out : memref<?xf32>
  }
}
