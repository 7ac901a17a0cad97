builtin.module {
  func.func @embedding_bag(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nbags = memref.dim %out, %c0 : memref<?x?xf32>
    %dim = memref.dim %table, %c1 : memref<?x?xf32>
    slc.for %b = %c0 to %nbags step 1 : index, index {
      %b1 = slc.alu_stream add %b, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start = slc.mem_stream %offsets[%b] : memref<?xindex>, !slc.stream<index>
      %end = slc.mem_stream %offsets[%b1] : memref<?xindex>, !slc.stream<index>
      slcv.for %j = %start to %end step 1 vlen 8 config broadcast check_order : !slc.stream<index>, !slc.stream<index> {
        %row = slc.mem_stream %indices[%j] : memref<?xindex>, !slc.stream<index>
        slcv.for %d, %mask = %c0 to %dim step 1 vlen 8 config vector : index, index {
          %v = slcv.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
          %d0 = slcv.first_lane %d : !slcv.vstream<index, 8> -> !slc.stream<index>
          slc.callback iter {
            %b_1 = slc.from_stream %b : !slc.stream<index>
            %d0_1 = slc.from_stream %d0 : !slc.stream<index>
            %v_vec = slcv.from_stream %v : !slcv.vstream<f32, 8> -> vector<8xf32>
            %c0_1 = arith.constant 0 : index
            %c8 = arith.constant 8 : index
            %c1_1 = arith.constant 1 : index
            scf.for %lane = %c0_1 to %c8 step %c1_1 {
              %d_1 = arith.addi %d0_1, %lane : index
              %active = arith.cmpi slt, %d_1, %dim : index
              scf.if %active {
                %v_1 = vector.extract %v_vec[%lane] : f32 from vector<8xf32>
                %acc = memref.load %out[%b_1, %d_1] : memref<?x?xf32>
                %sum = arith.addf %acc, %v_1 : f32
                memref.store %sum, %out[%b_1, %d_1] : memref<?x?xf32>
              }
            } {slcv.lane_loop}
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
