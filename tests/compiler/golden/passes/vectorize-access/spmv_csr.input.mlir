builtin.module {
  func.func @spmv_csr(%rowptr: memref<?xi64>, %col: memref<?xi64>, %val: memref<?xf32>, %x: memref<?xf32>, %y: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %y, %c0 : memref<?xf32>
    slc.for %i = %c0 to %n step 1 : index, index {
      %i1 = slc.alu_stream add %i, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start_i64 = slc.mem_stream %rowptr[%i] : memref<?xi64>, !slc.stream<index>
      %start = slc.cast %start_i64 : !slc.stream<i64> to !slc.stream<index>
      %end_i64 = slc.mem_stream %rowptr[%i1] : memref<?xi64>, !slc.stream<index>
      %end = slc.cast %end_i64 : !slc.stream<i64> to !slc.stream<index>
      slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
        %c_i64 = slc.mem_stream %col[%j] : memref<?xi64>, !slc.stream<index>
        %c = slc.cast %c_i64 : !slc.stream<i64> to !slc.stream<index>
        %a = slc.mem_stream %val[%j] : memref<?xf32>, !slc.stream<index>
        %xv = slc.mem_stream %x[%c] : memref<?xf32>, !slc.stream<index>
        slc.callback iter {
          %i_1 = slc.from_stream %i : !slc.stream<index>
          %a_1 = slc.from_stream %a : !slc.stream<f32>
          %xv_1 = slc.from_stream %xv : !slc.stream<f32>
          %acc = memref.load %y[%i_1] : memref<?xf32>
          %s = math.fma %a_1, %xv_1, %acc : f32
          memref.store %s, %y[%i_1] : memref<?xf32>
        }
      }
    }
    func.return %y : memref<?xf32>
  }
}
