// RUN: %ember opt %s --passes affine-streams | filecheck %s
// Test of the pass affine-streams: memory streams whose index is a·t + c over layer 0's index t
// (constants a >= 2, c >= 0) read %memref[%t] with stride a·elem and offset c·elem: 3t and 3t + 1
// (TransE's triples[3t + k]), 3 + (t << 1) (constant on the left). Left alone: a factor that is a
// register computed at run time (t·%m), a negative offset (2t - 1), an index that depends on a
// loaded value (h + 1), t + 1 (a = 1: the unit serves INDEX + c ahead already). ALU streams left
// without uses are erased; t << 1 stays, 2t - 1 still uses it.

builtin.module {
  func.func @affine(%x: memref<?xi64>, %y: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %n = memref.dim %out, %c0 : memref<?xf32>
    %m = memref.dim %y, %c0 : memref<?xf32>
    dlc.configure_access {
      %t = dlc.tu layer 0 %c1 to %n step 1 : index, index
      %th = dlc.alu_stream layer 0 mul %t, %c3 : !dlc.stream<index>, index -> !dlc.stream<index>
      %tr = dlc.alu_stream layer 0 add %th, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %h = dlc.mem_stream layer 0 %x[%th] stride 8 : memref<?xi64>, !dlc.stream<index>
      %r = dlc.mem_stream layer 0 %x[%tr] stride 8 : memref<?xi64>, !dlc.stream<index>
      %s = dlc.alu_stream layer 0 shl %t, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %s3 = dlc.alu_stream layer 0 add %c3, %s : index, !dlc.stream<index> -> !dlc.stream<index>
      %ys = dlc.mem_stream layer 0 %y[%s3] stride 4 : memref<?xf32>, !dlc.stream<index>
      %tm = dlc.alu_stream layer 0 mul %t, %m : !dlc.stream<index>, index -> !dlc.stream<index>
      %ym = dlc.mem_stream layer 0 %y[%tm] stride 4 : memref<?xf32>, !dlc.stream<index>
      %sm = dlc.alu_stream layer 0 sub %s, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %yn = dlc.mem_stream layer 0 %y[%sm] stride 4 : memref<?xf32>, !dlc.stream<index>
      %hl = dlc.alu_stream layer 0 add %h, %c1 : !dlc.stream<i64>, index -> !dlc.stream<index>
      %yl = dlc.mem_stream layer 0 %y[%hl] stride 4 : memref<?xf32>, !dlc.stream<index>
      %t1 = dlc.alu_stream layer 0 add %t, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
      %y1 = dlc.mem_stream layer 0 %y[%t1] stride 4 : memref<?xf32>, !dlc.stream<index>
      dlc.register_operand layer 0 iter %r : !dlc.stream<i64>
      dlc.register_operand layer 0 iter %y1 : !dlc.stream<f32>
      dlc.register_operand layer 0 iter %ys : !dlc.stream<f32>
      dlc.register_operand layer 0 iter %ym : !dlc.stream<f32>
      dlc.register_operand layer 0 iter %yn : !dlc.stream<f32>
      dlc.register_operand layer 0 iter %yl : !dlc.stream<f32>
      dlc.register_callback layer 0 iter 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %r_1 = dlc.pop_operand : i64
        %y1_1 = dlc.pop_operand : f32
        %ys_1 = dlc.pop_operand : f32
        %ym_1 = dlc.pop_operand : f32
        %yn_1 = dlc.pop_operand : f32
        %yl_1 = dlc.pop_operand : f32
      }
    }
    func.return %out : memref<?xf32>
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @affine(%x: memref<?xi64>, %y: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c1 = arith.constant 1 : index
// CHECK-NEXT:     %c3 = arith.constant 3 : index
// CHECK-NEXT:     %n = memref.dim %out, %c0 : memref<?xf32>
// CHECK-NEXT:     %m = memref.dim %y, %c0 : memref<?xf32>
// CHECK-NEXT:     dlc.configure_access {
// CHECK-NEXT:       %t = dlc.tu layer 0 %c1 to %n step 1 : index, index
// CHECK-NEXT:       %h = dlc.mem_stream layer 0 %x[%t] stride 24 : memref<?xi64>, !dlc.stream<index>
// CHECK-NEXT:       %r = dlc.mem_stream layer 0 %x[%t] stride 24 offset 8 : memref<?xi64>, !dlc.stream<index>
// CHECK-NEXT:       %s = dlc.alu_stream layer 0 shl %t, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %ys = dlc.mem_stream layer 0 %y[%t] stride 8 offset 12 : memref<?xf32>, !dlc.stream<index>
// CHECK-NEXT:       %tm = dlc.alu_stream layer 0 mul %t, %m : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %ym = dlc.mem_stream layer 0 %y[%tm] stride 4 : memref<?xf32>, !dlc.stream<index>
// CHECK-NEXT:       %sm = dlc.alu_stream layer 0 sub %s, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %yn = dlc.mem_stream layer 0 %y[%sm] stride 4 : memref<?xf32>, !dlc.stream<index>
// CHECK-NEXT:       %hl = dlc.alu_stream layer 0 add %h, %c1 : !dlc.stream<i64>, index -> !dlc.stream<index>
// CHECK-NEXT:       %yl = dlc.mem_stream layer 0 %y[%hl] stride 4 : memref<?xf32>, !dlc.stream<index>
// CHECK-NEXT:       %t1 = dlc.alu_stream layer 0 add %t, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
// CHECK-NEXT:       %y1 = dlc.mem_stream layer 0 %y[%t1] stride 4 : memref<?xf32>, !dlc.stream<index>
// CHECK-NEXT:       dlc.register_operand layer 0 iter %r : !dlc.stream<i64>
// CHECK-NEXT:       dlc.register_operand layer 0 iter %y1 : !dlc.stream<f32>
// CHECK-NEXT:       dlc.register_operand layer 0 iter %ys : !dlc.stream<f32>
// CHECK-NEXT:       dlc.register_operand layer 0 iter %ym : !dlc.stream<f32>
// CHECK-NEXT:       dlc.register_operand layer 0 iter %yn : !dlc.stream<f32>
// CHECK-NEXT:       dlc.register_operand layer 0 iter %yl : !dlc.stream<f32>
// CHECK-NEXT:       dlc.register_callback layer 0 iter 0
// CHECK-NEXT:     }
// CHECK-NEXT:     dlc.compute_loop {
// CHECK-NEXT:       dlc.case 0 {
// CHECK-NEXT:         %r_1 = dlc.pop_operand : i64
// CHECK-NEXT:         %y1_1 = dlc.pop_operand : f32
// CHECK-NEXT:         %ys_1 = dlc.pop_operand : f32
// CHECK-NEXT:         %ym_1 = dlc.pop_operand : f32
// CHECK-NEXT:         %yn_1 = dlc.pop_operand : f32
// CHECK-NEXT:         %yl_1 = dlc.pop_operand : f32
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:     func.return %out : memref<?xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
