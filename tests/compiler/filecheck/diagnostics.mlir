// RUN: not %ember opt %s --split-input-file --passes choose-decoupling,convert-scf-to-slc,convert-slc-to-dlc 2>&1 | filecheck %s
// Diagnostics of the compiler, matched in full: file:line:column of the operation, then the message.
// Each case runs on its own (--split-input-file); the line numbers are those of this file.

// A loop-carried value as a bound of a decoupled loop: carried values live on the core.
func.func @iter_args(%t: memref<?xf32>, %n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %c0) -> (index) {
    scf.for %j = %c0 to %a step %c1 {
      %v = memref.load %t[%j] : memref<?xf32>
    }
    scf.yield %a : index
  }
  return %s : index
}
// CHECK: ember: error: {{.*}}diagnostics.mlir:10:5: the upper bound of this decoupled 'scf.for' depends on %a, an iter_args value of the loop at 9:3: carried values live on the core, and the access unit computes the bounds of decoupled loops

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
