// RUN: not %ember opt %s --passes convert-slc-to-dlc 2>&1 | filecheck %s
// A pass run on the wrong IR level says what it expected: convert-slc-to-dlc takes SLC, this is SCF.

func.func @scf_only(%t: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %t[%i] : memref<?xf32>
  }
  return
}
// CHECK: ember: error: {{.*}}wrong_level.mlir:4:1: expected one slc.for at function level, found 0
