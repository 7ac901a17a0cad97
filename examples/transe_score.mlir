// Knowledge-graph scoring, TransE (Bordes et al., NeurIPS 2013): the distance ||h + r - t||_2 of
// each (head, relation, tail) triple, with h and t rows of the entity table and r a row of the
// relation table. Three gathers per element of layer 1 (entity[h, d], relation[r, d],
// entity[t, d]); the squared differences accumulate in a callback on its iter, the square root is
// a callback on its end. The triples are one (n, 3) array so that the kernel needs three memory
// regions (triples, entity, relation); it is passed flat (3n entries, row-major) so that the
// row address 3t is computed once per triple (15 streams of the unit's 16).
func.func @transe_score(%triples: memref<?xi64>, %entity: memref<?x?xf32>, %relation: memref<?x?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = memref.dim %out, %c0 : memref<?xf32>
  %dim = memref.dim %entity, %c1 : memref<?x?xf32>
  scf.for %t = %c0 to %n step %c1 {
    %th = arith.muli %t, %c3 : index
    %tr = arith.addi %th, %c1 : index
    %tt = arith.addi %tr, %c1 : index
    %h_i64 = memref.load %triples[%th] : memref<?xi64>
    %h = arith.index_cast %h_i64 : i64 to index
    %r_i64 = memref.load %triples[%tr] : memref<?xi64>
    %r = arith.index_cast %r_i64 : i64 to index
    %tl_i64 = memref.load %triples[%tt] : memref<?xi64>
    %tl = arith.index_cast %tl_i64 : i64 to index
    scf.for %d = %c0 to %dim step %c1 {
      %eh = memref.load %entity[%h, %d] : memref<?x?xf32>
      %er = memref.load %relation[%r, %d] : memref<?x?xf32>
      %et = memref.load %entity[%tl, %d] : memref<?x?xf32>
      %hr = arith.addf %eh, %er : f32
      %diff = arith.subf %hr, %et : f32
      %sq = arith.mulf %diff, %diff : f32
      %acc = memref.load %out[%t] : memref<?xf32>
      %s = arith.addf %acc, %sq : f32
      memref.store %s, %out[%t] : memref<?xf32>
    }
    %ss = memref.load %out[%t] : memref<?xf32>
    %norm = math.sqrt %ss : f32
    memref.store %norm, %out[%t] : memref<?xf32>
  }
  return %out : memref<?xf32>
}
