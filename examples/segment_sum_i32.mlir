// Segment sum of gathered i32 rows (GNN aggregation, as torch.index_add_ / tf.math.segment_sum
// over tf.gather): out[seg[i], :] += data[src[i], :] for every edge i. i32 index arrays are
// widened with arith.index_cast (free: the access unit sign-extends 4-byte loads); %s, the
// segment of edge i, is a stream the core receives as a callback operand.
func.func @segment_sum_i32(%data: memref<?x?xi32>, %src: memref<?xi32>, %seg: memref<?xi32>, %out: memref<?x?xi32>) -> memref<?x?xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nedges = memref.dim %src, %c0 : memref<?xi32>
  %dim = memref.dim %data, %c1 : memref<?x?xi32>
  scf.for %i = %c0 to %nedges step %c1 {
    %r32 = memref.load %src[%i] : memref<?xi32>
    %r = arith.index_cast %r32 : i32 to index
    %s32 = memref.load %seg[%i] : memref<?xi32>
    %s = arith.index_cast %s32 : i32 to index
    scf.for %d = %c0 to %dim step %c1 {
      %v = memref.load %data[%r, %d] : memref<?x?xi32>
      %acc = memref.load %out[%s, %d] : memref<?x?xi32>
      %sum = arith.addi %acc, %v : i32
      memref.store %sum, %out[%s, %d] : memref<?x?xi32>
    }
  }
  return %out : memref<?x?xi32>
}
