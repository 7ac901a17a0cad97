// An embedding bag in the style torch-mlir's lowering produces, written independently of the
// compiler's examples: i64 index arrays with index_cast, f64 data, the output allocated and
// zero-filled inside the function, different names and op order.
module {
  func.func @forward(%arg0: memref<?x?xf64>, %arg1: memref<?xi64>, %arg2: memref<?xi64>, %arg3: memref<?x?xf64>) -> memref<?x?xf64> {
    %cst = arith.constant 0.000000e+00 : f64
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %0 = memref.dim %arg3, %c0 : memref<?x?xf64>
    %1 = memref.dim %arg0, %c1 : memref<?x?xf64>
    %alloc = memref.alloc(%0, %1) : memref<?x?xf64>
    scf.for %arg4 = %c0 to %0 step %c1 {
      scf.for %arg5 = %c0 to %1 step %c1 {
        memref.store %cst, %alloc[%arg4, %arg5] : memref<?x?xf64>
      }
    }
    scf.for %arg4 = %c0 to %0 step %c1 {
      %2 = memref.load %arg2[%arg4] : memref<?xi64>
      %3 = arith.index_cast %2 : i64 to index
      %4 = arith.addi %arg4, %c1 : index
      %5 = memref.load %arg2[%4] : memref<?xi64>
      %6 = arith.index_cast %5 : i64 to index
      scf.for %arg5 = %3 to %6 step %c1 {
        %7 = memref.load %arg1[%arg5] : memref<?xi64>
        %8 = arith.index_cast %7 : i64 to index
        scf.for %arg6 = %c0 to %1 step %c1 {
          %9 = memref.load %alloc[%arg4, %arg6] : memref<?x?xf64>
          %10 = memref.load %arg0[%8, %arg6] : memref<?x?xf64>
          %11 = arith.addf %9, %10 : f64
          memref.store %11, %alloc[%arg4, %arg6] : memref<?x?xf64>
        }
      }
    }
    return %alloc : memref<?x?xf64>
  }
}
