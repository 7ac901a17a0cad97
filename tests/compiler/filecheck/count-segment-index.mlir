// RUN: %ember opt %s --split-input-file --passes count-segment-index | filecheck %s
// Test of the pass count-segment-index. First case: a block gather in CSR form after
// segment-callbacks (key blocks idx[j] of query block q, j = ptr[q] .. ptr[q+1]; the output block
// j*bs pushed per key block): j is counted on the core (dlc.get_var / dlc.increment_var in the
// segment's loop), starting at ptr[0] that the core loads once, guarded by 0 <u dim(ptr); j*bs is
// computed on the core and no longer pushed. Then the cases left alone (j*bs stays pushed): the
// upper bound ptr[q + 2] (ranges overlap), bounds whose order the unit does not check (no
// check_order: a decreasing range would not fault), the bounds from two arrays, an outer layer of
// step 2.

builtin.module {
  func.func @gather(%ptr: memref<?xindex>, %idx: memref<?xindex>, %key: memref<?x?xf32>, %bs: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nptr = memref.dim %ptr, %c0 : memref<?xindex>
    %nq = arith.subi %nptr, %c1 : index
    %dim = memref.dim %key, %c1 : memref<?x?xf32>
    %len = arith.muli %bs, %dim : index
    dlc.configure_access {
      %q = dlc.tu layer 0 %c0 to %nq step 1 : index, index
      %q1 = dlc.alu_stream layer 0 add %q, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %ptr[%q] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %ptr[%q1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %seg_len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %blk = dlc.mem_stream layer 1 %idx[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %blk, %len : !dlc.stream<index>, index -> !dlc.stream<index>
      %rows = dlc.buf_stream layer 1 %key[%0] len %len stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %obase = dlc.alu_stream layer 1 mul %j, %bs : !dlc.stream<index>, index -> !dlc.stream<index>
      dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
      dlc.register_operand layer 1 iter %rows : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %obase : !dlc.stream<index>
      dlc.register_callback layer 1 begin 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %n = dlc.pop_operand : index
        %c0_1 = arith.constant 0 : index
        %c1_1 = arith.constant 1 : index
        scf.for %lookup = %c0_1 to %n step %c1_1 {
          %k_rows = dlc.pop_buffer %len : memref<?xf32>
          %obase_1 = dlc.pop_operand : index
          scf.for %r = %c0 to %bs step %c1 {
            %orow = arith.addi %obase_1, %r : index
            %row_start = arith.muli %r, %dim : index
            scf.for %d = %c0 to %dim step %c1 {
              %at = arith.addi %row_start, %d : index
              %k = memref.load %k_rows[%at] : memref<?xf32>
              memref.store %k, %out[%orow, %d] : memref<?x?xf32>
            }
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @gather(%ptr: memref<?xindex>, %idx: memref<?xindex>, %key: memref<?x?xf32>, %bs: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %nptr = memref.dim %ptr, %c0 : memref<?xindex>
// CHECK-NEXT:     %nq = arith.subi %nptr, %c1 : index
// CHECK-NEXT:     %dim = memref.dim %key, %c1 : memref<?x?xf32>
// CHECK-NEXT:     %len = arith.muli %bs, %dim : index
// CHECK-NEXT:     dlc.configure_access {
// CHECK-NEXT:       %q = dlc.tu layer 0 %c0 to %nq step 1 : index, index
// CHECK-NEXT:       %q1 = dlc.alu_stream layer 0 add %q, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %start = dlc.mem_stream layer 0 %ptr[%q] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %end = dlc.mem_stream layer 0 %ptr[%q1] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %seg_len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
// CHECK-NEXT:       %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
// CHECK-NEXT:       %blk = dlc.mem_stream layer 1 %idx[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
// CHECK-NEXT:       %0 = dlc.alu_stream layer 1 mul %blk, %len : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %rows = dlc.buf_stream layer 1 %key[%0] len %len stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
// CHECK-NEXT:       dlc.register_operand layer 1 iter %rows : !dlc.buffer<f32>
// CHECK-NEXT:       dlc.register_callback layer 1 begin 0
// CHECK-NEXT:     }
// CHECK-NEXT:     %ptr_len = memref.dim %ptr, %c0 : memref<?xindex>
// CHECK-NEXT:     %first_inside = arith.cmpi ult, %c0, %ptr_len : index
// CHECK-NEXT:     %var0_init = scf.if %first_inside -> (index) {
// CHECK-NEXT:       %first_start = memref.load %ptr[%c0] : memref<?xindex>
// CHECK-NEXT:       scf.yield %first_start : index
// CHECK-NEXT:     } else {
// CHECK-NEXT:       scf.yield %c0 : index
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.set_var 0, %var0_init : index
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %n = dlc.pop_operand : index
// CHECK-NEXT:         %c0_1 = arith.constant 0 : index
// CHECK-NEXT:         %c1_1 = arith.constant 1 : index
// CHECK-NEXT:         scf.for %lookup = %c0_1 to %n step %c1_1 {
// CHECK-NEXT:           %j_1 = dlc.get_var 0 : index
// CHECK-NEXT:           %k_rows = dlc.pop_buffer %len : memref<?xf32>
// CHECK-NEXT:           %obase = arith.muli %j_1, %bs : index
// CHECK-NEXT:           scf.for %r = %c0 to %bs step %c1 {
// CHECK-NEXT:             %orow = arith.addi %obase, %r : index
// CHECK-NEXT:             %row_start = arith.muli %r, %dim : index
// CHECK-NEXT:             scf.for %d = %c0 to %dim step %c1 {
// CHECK-NEXT:               %at = arith.addi %row_start, %d : index
// CHECK-NEXT:               %k = memref.load %k_rows[%at] : memref<?xf32>
// CHECK-NEXT:               memref.store %k, %out[%orow, %d] : memref<?x?xf32>
// CHECK-NEXT:             }
// CHECK-NEXT:           }
// CHECK-NEXT:           dlc.increment_var 0 by 1
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?x?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

builtin.module {
  func.func @gather_q_plus_2(%ptr: memref<?xindex>, %idx: memref<?xindex>, %key: memref<?x?xf32>, %bs: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %nptr = memref.dim %ptr, %c0 : memref<?xindex>
    %nq = arith.subi %nptr, %c1 : index
    %dim = memref.dim %key, %c1 : memref<?x?xf32>
    %len = arith.muli %bs, %dim : index
    dlc.configure_access {
      %q = dlc.tu layer 0 %c0 to %nq step 1 : index, index
      %q1 = dlc.alu_stream layer 0 add %q, %c2 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %ptr[%q] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %ptr[%q1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %seg_len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %blk = dlc.mem_stream layer 1 %idx[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %blk, %len : !dlc.stream<index>, index -> !dlc.stream<index>
      %rows = dlc.buf_stream layer 1 %key[%0] len %len stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %obase = dlc.alu_stream layer 1 mul %j, %bs : !dlc.stream<index>, index -> !dlc.stream<index>
      dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
      dlc.register_operand layer 1 iter %rows : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %obase : !dlc.stream<index>
      dlc.register_callback layer 1 begin 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %n = dlc.pop_operand : index
        %c0_1 = arith.constant 0 : index
        %c1_1 = arith.constant 1 : index
        scf.for %lookup = %c0_1 to %n step %c1_1 {
          %k_rows = dlc.pop_buffer %len : memref<?xf32>
          %obase_1 = dlc.pop_operand : index
          scf.for %r = %c0 to %bs step %c1 {
            %orow = arith.addi %obase_1, %r : index
            %row_start = arith.muli %r, %dim : index
            scf.for %d = %c0 to %dim step %c1 {
              %at = arith.addi %row_start, %d : index
              %k = memref.load %k_rows[%at] : memref<?xf32>
              memref.store %k, %out[%orow, %d] : memref<?x?xf32>
            }
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}

// CHECK-LABEL: func.func @gather_q_plus_2(
// CHECK-NOT:   dlc.get_var
// CHECK:       dlc.register_operand layer 1 iter %obase : !dlc.stream<index>
// CHECK-NOT:   dlc.get_var
// CHECK:       %obase_1 = dlc.pop_operand : index

// -----

builtin.module {
  func.func @gather_unordered(%ptr: memref<?xindex>, %idx: memref<?xindex>, %key: memref<?x?xf32>, %bs: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nptr = memref.dim %ptr, %c0 : memref<?xindex>
    %nq = arith.subi %nptr, %c1 : index
    %dim = memref.dim %key, %c1 : memref<?x?xf32>
    %len = arith.muli %bs, %dim : index
    dlc.configure_access {
      %q = dlc.tu layer 0 %c0 to %nq step 1 : index, index
      %q1 = dlc.alu_stream layer 0 add %q, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %ptr[%q] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %ptr[%q1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %seg_len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 : !dlc.stream<index>, !dlc.stream<index>
      %blk = dlc.mem_stream layer 1 %idx[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %blk, %len : !dlc.stream<index>, index -> !dlc.stream<index>
      %rows = dlc.buf_stream layer 1 %key[%0] len %len stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %obase = dlc.alu_stream layer 1 mul %j, %bs : !dlc.stream<index>, index -> !dlc.stream<index>
      dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
      dlc.register_operand layer 1 iter %rows : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %obase : !dlc.stream<index>
      dlc.register_callback layer 1 begin 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %n = dlc.pop_operand : index
        %c0_1 = arith.constant 0 : index
        %c1_1 = arith.constant 1 : index
        scf.for %lookup = %c0_1 to %n step %c1_1 {
          %k_rows = dlc.pop_buffer %len : memref<?xf32>
          %obase_1 = dlc.pop_operand : index
          scf.for %r = %c0 to %bs step %c1 {
            %orow = arith.addi %obase_1, %r : index
            %row_start = arith.muli %r, %dim : index
            scf.for %d = %c0 to %dim step %c1 {
              %at = arith.addi %row_start, %d : index
              %k = memref.load %k_rows[%at] : memref<?xf32>
              memref.store %k, %out[%orow, %d] : memref<?x?xf32>
            }
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}

// CHECK-LABEL: func.func @gather_unordered(
// CHECK-NOT:   dlc.get_var
// CHECK:       dlc.register_operand layer 1 iter %obase : !dlc.stream<index>
// CHECK-NOT:   dlc.get_var
// CHECK:       %obase_1 = dlc.pop_operand : index

// -----

builtin.module {
  func.func @gather_two_arrays(%ptr: memref<?xindex>, %idx: memref<?xindex>, %key: memref<?x?xf32>, %bs: index, %out: memref<?x?xf32>, %ends: memref<?xindex>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nptr = memref.dim %ptr, %c0 : memref<?xindex>
    %nq = arith.subi %nptr, %c1 : index
    %dim = memref.dim %key, %c1 : memref<?x?xf32>
    %len = arith.muli %bs, %dim : index
    dlc.configure_access {
      %q = dlc.tu layer 0 %c0 to %nq step 1 : index, index
      %q1 = dlc.alu_stream layer 0 add %q, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %ptr[%q] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %ends[%q] stride 8 : memref<?xindex>, !dlc.stream<index>
      %seg_len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %blk = dlc.mem_stream layer 1 %idx[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %blk, %len : !dlc.stream<index>, index -> !dlc.stream<index>
      %rows = dlc.buf_stream layer 1 %key[%0] len %len stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %obase = dlc.alu_stream layer 1 mul %j, %bs : !dlc.stream<index>, index -> !dlc.stream<index>
      dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
      dlc.register_operand layer 1 iter %rows : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %obase : !dlc.stream<index>
      dlc.register_callback layer 1 begin 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %n = dlc.pop_operand : index
        %c0_1 = arith.constant 0 : index
        %c1_1 = arith.constant 1 : index
        scf.for %lookup = %c0_1 to %n step %c1_1 {
          %k_rows = dlc.pop_buffer %len : memref<?xf32>
          %obase_1 = dlc.pop_operand : index
          scf.for %r = %c0 to %bs step %c1 {
            %orow = arith.addi %obase_1, %r : index
            %row_start = arith.muli %r, %dim : index
            scf.for %d = %c0 to %dim step %c1 {
              %at = arith.addi %row_start, %d : index
              %k = memref.load %k_rows[%at] : memref<?xf32>
              memref.store %k, %out[%orow, %d] : memref<?x?xf32>
            }
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}

// CHECK-LABEL: func.func @gather_two_arrays(
// CHECK-NOT:   dlc.get_var
// CHECK:       dlc.register_operand layer 1 iter %obase : !dlc.stream<index>
// CHECK-NOT:   dlc.get_var
// CHECK:       %obase_1 = dlc.pop_operand : index

// -----

builtin.module {
  func.func @gather_outer_step_2(%ptr: memref<?xindex>, %idx: memref<?xindex>, %key: memref<?x?xf32>, %bs: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nptr = memref.dim %ptr, %c0 : memref<?xindex>
    %nq = arith.subi %nptr, %c1 : index
    %dim = memref.dim %key, %c1 : memref<?x?xf32>
    %len = arith.muli %bs, %dim : index
    dlc.configure_access {
      %q = dlc.tu layer 0 %c0 to %nq step 2 : index, index
      %q1 = dlc.alu_stream layer 0 add %q, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %start = dlc.mem_stream layer 0 %ptr[%q] stride 8 : memref<?xindex>, !dlc.stream<index>
      %end = dlc.mem_stream layer 0 %ptr[%q1] stride 8 : memref<?xindex>, !dlc.stream<index>
      %seg_len = dlc.alu_stream layer 0 sub %end, %start : !dlc.stream<index>, !dlc.stream<index> -> !dlc.stream<index>
      %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
      %blk = dlc.mem_stream layer 1 %idx[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
      %0 = dlc.alu_stream layer 1 mul %blk, %len : !dlc.stream<index>, index -> !dlc.stream<index>
      %rows = dlc.buf_stream layer 1 %key[%0] len %len stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
      %obase = dlc.alu_stream layer 1 mul %j, %bs : !dlc.stream<index>, index -> !dlc.stream<index>
      dlc.register_operand layer 1 begin %seg_len : !dlc.stream<index>
      dlc.register_operand layer 1 iter %rows : !dlc.buffer<f32>
      dlc.register_operand layer 1 iter %obase : !dlc.stream<index>
      dlc.register_callback layer 1 begin 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %n = dlc.pop_operand : index
        %c0_1 = arith.constant 0 : index
        %c1_1 = arith.constant 1 : index
        scf.for %lookup = %c0_1 to %n step %c1_1 {
          %k_rows = dlc.pop_buffer %len : memref<?xf32>
          %obase_1 = dlc.pop_operand : index
          scf.for %r = %c0 to %bs step %c1 {
            %orow = arith.addi %obase_1, %r : index
            %row_start = arith.muli %r, %dim : index
            scf.for %d = %c0 to %dim step %c1 {
              %at = arith.addi %row_start, %d : index
              %k = memref.load %k_rows[%at] : memref<?xf32>
              memref.store %k, %out[%orow, %d] : memref<?x?xf32>
            }
          }
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}

// CHECK-LABEL: func.func @gather_outer_step_2(
// CHECK-NOT:   dlc.get_var
// CHECK:       dlc.register_operand layer 1 iter %obase : !dlc.stream<index>
// CHECK-NOT:   dlc.get_var
// CHECK:       %obase_1 = dlc.pop_operand : index
