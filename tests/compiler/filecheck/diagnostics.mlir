// RUN: not %ember opt %s --split-input-file --passes choose-decoupling,convert-scf-to-slc,convert-slc-to-dlc 2>&1 | filecheck %s
// Diagnostics of the compiler, matched in full: file:line:column of the operation, then the message.
// Each case runs on its own (--split-input-file); the line numbers are those of this file.

// A loop-carried value in a loop the access unit would run: the unit has no accumulators.
func.func @iter_args(%t: memref<?xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> (f32) {
    %v = memref.load %t[%i] : memref<?xf32>
    %b = arith.addf %a, %v : f32
    scf.yield %b : f32
  }
  return %s : f32
}
// CHECK: ember: error: {{.*}}diagnostics.mlir:10:3: unsupported 'scf.for' with iter_args in a decoupled loop

// -----

// An input that does not verify: the error names the operation and points at it.
func.func @two_indices(%t: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %t[%c0, %c0] : memref<?xf32>
  return
}
// CHECK-NEXT: ember: error: {{.*}}diagnostics.mlir:24:3: invalid 'memref.load': expected an index for each dimension

// -----

// A syntax error.
func.func @no_type(%t: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %t[%c0]
  return
}
// CHECK-NEXT: ember: error: {{.*}}diagnostics.mlir:35:3: Expected ':'
