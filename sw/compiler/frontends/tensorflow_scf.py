"""TensorFlow frontend, MLIR text building: the weighted / sqrtn segment reduction of
``tf.nn.embedding_lookup_sparse`` (the other TensorFlow graphs use the PyTorch frontend's SCF)."""

from __future__ import annotations

__all__ = ["scf_for_weighted_segment"]


def scf_for_weighted_segment(t: str, combiner: str, weighted: bool) -> str:
    """``tf.nn.embedding_lookup_sparse`` with ``sp_weights`` or ``combiner="sqrtn"``: for each
    lookup ``k`` in order, ``out[seg[k], :] += w[k] * table[ids[k], :]`` (``w = 1`` without
    weights) and a per-segment denominator ``den[seg[k]] += 1 | w[k] | w[k]^2`` (unweighted
    ``mean``: the count, converted to ``t`` at the end, as Eigen's mean reducer); then each
    segment is divided by ``den`` (``mean``) or ``sqrt(den)`` (``sqrtn``), 0 where ``den`` is 0
    (TensorFlow's ``DivNoNan``). ``combiner == "sum"`` (weighted) has no denominator."""
    mt = f"memref<?x?x{t}>"
    params = [f"%x: {mt}", "%ids: memref<?xi64>", "%seg: memref<?xi64>"]
    if weighted:
        params.append(f"%w: memref<?x{t}>")
    params.append(f"%out: {mt}")
    scaled = combiner != "sum"
    L = [f"func.func @segment_{combiner}({', '.join(params)}) -> {mt} {{",
         "  %c0 = arith.constant 0 : index",
         "  %c1 = arith.constant 1 : index",
         "  %ne = memref.dim %ids, %c0 : memref<?xi64>",
         f"  %dim = memref.dim %x, %c1 : {mt}",
         f"  %nseg = memref.dim %out, %c0 : {mt}",
         f"  %zero = arith.constant 0.0 : {t}",
         f"  %one = arith.constant 1.0 : {t}"]
    counted = combiner == "mean" and not weighted      # a count, converted to the type last
    if counted:
        L.append("  %den = memref.alloc(%nseg) : memref<?xindex>")
    elif scaled:
        L.append(f"  %den = memref.alloc(%nseg) : memref<?x{t}>")
    L += ["  scf.for %e = %c0 to %ne step %c1 {",
          "    %s_i64 = memref.load %ids[%e] : memref<?xi64>",
          "    %s = arith.index_cast %s_i64 : i64 to index",
          "    %t_i64 = memref.load %seg[%e] : memref<?xi64>",
          "    %t = arith.index_cast %t_i64 : i64 to index"]
    if weighted:
        L.append(f"    %we = memref.load %w[%e] : memref<?x{t}>")
    if counted:
        L += ["    %d0 = memref.load %den[%t] : memref<?xindex>",
              "    %d1 = arith.addi %d0, %c1 : index",
              "    memref.store %d1, %den[%t] : memref<?xindex>"]
    elif scaled:
        L.append(f"    %d0 = memref.load %den[%t] : memref<?x{t}>")
        if not weighted:
            L.append(f"    %d1 = arith.addf %d0, %one : {t}")
        elif combiner == "mean":
            L.append(f"    %d1 = arith.addf %d0, %we : {t}")
        else:
            L += [f"    %w2 = arith.mulf %we, %we : {t}", f"    %d1 = arith.addf %d0, %w2 : {t}"]
        L.append(f"    memref.store %d1, %den[%t] : memref<?x{t}>")
    L += ["    scf.for %d = %c0 to %dim step %c1 {",
          f"      %v = memref.load %x[%s, %d] : {mt}"]
    if weighted:
        L.append(f"      %v1 = arith.mulf %v, %we : {t}")
    v = "%v1" if weighted else "%v"
    L += [f"      %acc = memref.load %out[%t, %d] : {mt}",
          f"      %new = arith.addf %acc, {v} : {t}",
          f"      memref.store %new, %out[%t, %d] : {mt}",
          "    }",
          "  }"]
    if scaled:
        L.append("  scf.for %r = %c0 to %nseg step %c1 {")
        if counted:
            L += ["    %kn = memref.load %den[%r] : memref<?xindex>",
                  "    %kn_i64 = arith.index_cast %kn : index to i64",
                  f"    %k = arith.sitofp %kn_i64 : i64 to {t}"]
        else:
            L.append(f"    %k = memref.load %den[%r] : memref<?x{t}>")
        if combiner == "sqrtn":
            L.append(f"    %kd = math.sqrt %k : {t}")
        k = "%kd" if combiner == "sqrtn" else "%k"
        L += [f"    %none = arith.cmpf oeq, {k}, %zero : {t}",
              "    scf.for %d1 = %c0 to %dim step %c1 {",
              f"      %a = memref.load %out[%r, %d1] : {mt}",
              f"      %m = arith.divf %a, {k} : {t}",
              f"      %q = arith.select %none, %zero, %m : {t}",
              f"      memref.store %q, %out[%r, %d1] : {mt}",
              "    }",
              "  }"]
    L += [f"  return %out : {mt}", "}"]
    return "\n".join(L) + "\n"
