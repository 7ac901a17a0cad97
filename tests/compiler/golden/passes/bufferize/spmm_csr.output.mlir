builtin.module {
  func.func @spmm_csr(%rowptr: memref<?xindex>, %col: memref<?xindex>, %val: memref<?xf32>, %x: memref<?x?xf32>, %nrows: memref<1xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.load %nrows[%c0] : memref<1xindex>
    %dim = memref.dim %x, %c1 : memref<?x?xf32>
    slc.for %i = %c0 to %n step 1 : index, index {
      %i1 = slc.alu_stream add %i, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start = slc.mem_stream %rowptr[%i] : memref<?xindex>, !slc.stream<index>
      %end = slc.mem_stream %rowptr[%i1] : memref<?xindex>, !slc.stream<index>
      slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
        %c = slc.mem_stream %col[%j] : memref<?xindex>, !slc.stream<index>
        %a = slc.mem_stream %val[%j] : memref<?xf32>, !slc.stream<index>
        %v_buf = slcv.for %d = %c0 to %dim step 1 vlen 1 config scalar : index, index -> !slcv.buffer<f32> {
          %v = slc.mem_stream %x[%c, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
          slcv.to_buffer %v : !slc.stream<f32>
        }
        slc.callback end {
          %v_row = slcv.from_buffer %v_buf : !slcv.buffer<f32> -> memref<?xf32>
          %i_1 = slc.from_stream %i : !slc.stream<index>
          %a_1 = slc.from_stream %a : !slc.stream<f32>
          %c1_1 = arith.constant 1 : index
          scf.for %d_1 = %c0 to %dim step %c1_1 {
            %v_1 = memref.load %v_row[%d_1] : memref<?xf32>
            %acc = memref.load %out[%i_1, %d_1] : memref<?x?xf32>
            %p = arith.mulf %a_1, %v_1 : f32
            %s = arith.addf %acc, %p : f32
            memref.store %s, %out[%i_1, %d_1] : memref<?x?xf32>
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
