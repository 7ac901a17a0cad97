"""PyTorch frontend, MLIR text building for embedding bags over float16 / bfloat16 tables (what
PyTorch's CPU kernel computes: a float32 accumulator row, one rounding per output)."""

from __future__ import annotations

from .torch_scf import _HALF, _NEG_INF, BagSpec, _count_entry, _lines, _max_update

__all__ = ["scf_for_half_bag"]


def scf_for_half_bag(spec: BagSpec, multi_table: bool, padded: bool = False,
                      divide_in_f32: bool = False) -> str:
    """The embedding bag ``spec`` over a float16 or bfloat16 table, as PyTorch's CPU kernel
    computes it (measured against ``F.embedding_bag`` with torch 2.13, ``tests/compiler/
    test_torch_half_frontend.py``): each bag is accumulated in **float32** in lookup order (the
    16-bit rows widened with ``arith.extf``; with ``per_sample_weights`` ``w * row`` is exact in
    f32, added with ``math.fma``) and rounded to the type once per output — to nearest even for
    float16; for bfloat16 to nearest with ties away from zero (fbgemm's conversion;
    ``arith.truncf {roundingmode = 4}``) unless ``padding_idx`` is set, when PyTorch takes its
    own kernel, which rounds ties to even. ``mean`` then divides the rounded sum by the bag length
    converted to the type, in the type (PyTorch's ``apply_bag_size``: a 16-bit division, so a
    length above 2048 (f16) or 256 (bf16) is itself rounded). ``max`` is exact (an empty bag is 0).
    Arguments as :func:`scf_for_bag`; the float32 accumulator is a ``memref.alloc`` row.
    """
    t = _HALF[spec.dtype]
    mt = f"memref<?x?x{t}>"
    pad = spec.padding_idx is not None
    counted = spec.mode == "max" or (pad and spec.mode == "mean")     # as scf_for_bag
    params = [f"%table: {mt}", "%indices: memref<?xi64>", "%offsets: memref<?xi64>"]
    if multi_table:
        params.append("%bag_base: memref<?xi64>")
    if spec.per_sample_weights:
        params.append(f"%weights: memref<?x{t}>")
    params.append(f"%out: {mt}")
    trunc = " {roundingmode = 4 : i32}" if t == "bf16" and not (pad or padded) else ""
    init = _NEG_INF["f32"] if spec.mode == "max" else "0.0"
    L = [f"func.func @embedding_bag({', '.join(params)}) -> {mt} {{",
         "  %c0 = arith.constant 0 : index",
         "  %c1 = arith.constant 1 : index",
         f"  %nbags = memref.dim %out, %c0 : {mt}",
         f"  %dim = memref.dim %table, %c1 : {mt}",
         f"  %init = arith.constant {init} : f32",
         "  %acc = memref.alloc(%dim) : memref<?xf32>"]
    if spec.mode == "max":
        L.append(f"  %zero = arith.constant 0.0 : {t}")
    if pad:
        L.append(f"  %pad = arith.constant {spec.padding_idx} : index")
    if counted:
        L.append("  %count = memref.alloc() : memref<1xindex>")
    L += ["  scf.for %b = %c0 to %nbags step %c1 {",
          "    %b1 = arith.addi %b, %c1 : index",
          "    %start_i64 = memref.load %offsets[%b] : memref<?xi64>",
          "    %start = arith.index_cast %start_i64 : i64 to index",
          "    %end_i64 = memref.load %offsets[%b1] : memref<?xi64>",
          "    %end = arith.index_cast %end_i64 : i64 to index"]
    if multi_table:
        L += ["    %base_i64 = memref.load %bag_base[%b] : memref<?xi64>",
              "    %base = arith.index_cast %base_i64 : i64 to index"]
    L += ["    scf.for %k0 = %c0 to %dim step %c1 {",
          "      memref.store %init, %acc[%k0] : memref<?xf32>",
          "    }"]
    if counted:
        L.append("    memref.store %c0, %count[%c0] : memref<1xindex>")
    L += ["    scf.for %j = %start to %end step %c1 {",
          "      %row_i64 = memref.load %indices[%j] : memref<?xi64>"]
    if multi_table:
        L += ["      %idx = arith.index_cast %row_i64 : i64 to index",
              "      %row = arith.addi %idx, %base : index"]
    else:
        L.append("      %row = arith.index_cast %row_i64 : i64 to index")
    if spec.per_sample_weights:
        L.append(f"      %w = memref.load %weights[%j] : memref<?x{t}>")
    if counted and pad:
        L += _count_entry(pad)
    L += ["      scf.for %d = %c0 to %dim step %c1 {",
          f"        %v = memref.load %table[%row, %d] : {mt}",
          f"        %vf = arith.extf %v : {t} to f32"]
    update = {"max": _max_update("%a", "%vf", "f32", count_here=not pad),
              "sum": "%new = arith.addf %a, %vf : f32",
              "mean": "%new = arith.addf %a, %vf : f32"}[spec.mode]
    inner = ["%a = memref.load %acc[%d] : memref<?xf32>"]
    if spec.per_sample_weights:         # the weight widened where it is used (one callback)
        inner.append(f"%wf = arith.extf %w : {t} to f32")
        update = "%new = math.fma %wf, %vf, %a : f32"
    inner += [*_lines(update),
              "memref.store %new, %acc[%d] : memref<?xf32>"]
    if pad:
        L += ["        %keep = arith.cmpi ne, %row, %pad : index",
              "        scf.if %keep {"] + [f"          {x}" for x in inner] + ["        }"]
    else:
        L += [f"        {x}" for x in inner]
    L += ["      }", "    }"]
    if spec.mode == "mean":
        L.append("    %n = memref.load %count[%c0] : memref<1xindex>" if counted else
                 "    %n = arith.subi %end, %start : index")
        L += ["    %n1 = arith.maxsi %n, %c1 : index",
              "    %n_i64 = arith.index_cast %n1 : index to i64",
              f"    %nf = arith.sitofp %n_i64 : i64 to {'f32' if divide_in_f32 else t}"]
    L += ["    scf.for %k = %c0 to %dim step %c1 {",
          "      %s = memref.load %acc[%k] : memref<?xf32>"]
    if spec.mode == "mean" and divide_in_f32:
        L += ["      %s1 = arith.divf %s, %nf : f32",
              f"      %h = arith.truncf %s1{trunc} : f32 to {t}",
              f"      memref.store %h, %out[%b, %k] : {mt}"]
    elif spec.mode == "mean":
        L += [f"      %h = arith.truncf %s{trunc} : f32 to {t}",
              f"      %m = arith.divf %h, %nf : {t}",
              f"      memref.store %m, %out[%b, %k] : {mt}"]
    else:
        L += [f"      %h = arith.truncf %s{trunc} : f32 to {t}",
              f"      memref.store %h, %out[%b, %k] : {mt}"]
    L.append("    }")
    if spec.mode == "max":
        if counted:
            L += ["    %n = memref.load %count[%c0] : memref<1xindex>",
                  "    %empty = arith.cmpi eq, %n, %c0 : index"]
        else:
            L.append("    %empty = arith.cmpi eq, %start, %end : index")
        L += ["    scf.if %empty {",
              "      scf.for %k1 = %c0 to %dim step %c1 {",
              f"        memref.store %zero, %out[%b, %k1] : {mt}",
              "      }",
              "    }"]
    L += ["  }", f"  return %out : {mt}", "}"]
    return "\n".join(L) + "\n"
