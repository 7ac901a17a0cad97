"""PyTorch frontend, MLIR text building: the SCF functions the recognised PyTorch graphs lower to.

Each generator returns the text of one ``func.func`` in the MLIR frontend's subset
(``docs/compiler.md``, "Supported input"); the frontend compiles it with
:func:`sw.compiler.compile_mlir`. The order of every reduction is the one PyTorch's CPU kernels
use (see each docstring), so results are bit-exact where that order is fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BagSpec", "scf_for_bag", "scf_for_gather", "scf_for_segment", "scf_for_csr_mm"]

_NEG_INF = {"f32": "0xFF800000", "f64": "0xFFF0000000000000"}
_HALF = {"float16": "f16", "bfloat16": "bf16"}


@dataclass(frozen=True)
class BagSpec:
    """What one embedding bag computes (everything but the data)."""
    mode: str = "sum"                   # sum | mean | max
    dtype: str = "float32"              # float32 | float64 | float16 | bfloat16
    per_sample_weights: bool = False
    include_last_offset: bool = False
    padding_idx: int | None = None      # normalized to [0, num_embeddings)
    post: tuple = ()                    # element-wise ops on the output: ((relu|neg|mul|div|add|sub|rsub, number), ...)
    cast: str | None = None             # dtype the output is converted to last (float16 | bfloat16 | float32 | float64)


def scf_for_bag(spec: BagSpec, *, multi_table: bool = False, padded: bool = False,
                divide_in_f32: bool = False) -> str:
    """The MLIR SCF text of the embedding bag ``spec``.

    With ``multi_table`` (several bags of one module in one program, as FBGEMM's table-batched
    embedding): ``%table`` is the tables' rows concatenated, a ``%bag_base: memref<?xi64>``
    argument (after ``%offsets``) gives each bag the first row of its table, and the row of a
    lookup is ``indices[j] + bag_base[b]`` (an ALU stream); ``padding_idx`` must be None.
    ``padded``: compute as PyTorch's CPU kernel without FBGEMM, which it takes when a bag has
    a ``padding_idx`` (here one whose lookups the caller dropped) or a stride FBGEMM does not
    take: bfloat16 rounds ties to even (``torch_scf_half.scf_for_half_bag``) and float32
    ``per_sample_weights`` multiply, then add (FBGEMM: one FMA). ``divide_in_f32``: a 16-bit
    ``mean`` divides the f32 sum by the length before its one rounding (TensorFlow's
    ``SparseSegmentMean``), not the rounded sum in the type (PyTorch).
    """
    if multi_table and spec.padding_idx is not None:
        raise ValueError("multi_table bags cannot have a padding_idx")
    if spec.dtype in _HALF:
        from .torch_scf_half import scf_for_half_bag
        return scf_for_half_bag(spec, multi_table, padded, divide_in_f32)
    t = "f32" if spec.dtype == "float32" else "f64"
    mt = f"memref<?x?x{t}>"
    pad = spec.padding_idx is not None
    # count the (non-padding) entries per bag: the mean's divisor; max's first entry (_max_update)
    counted = spec.mode == "max" or (pad and spec.mode == "mean")
    params = [f"%table: {mt}", "%indices: memref<?xi64>", "%offsets: memref<?xi64>"]
    if multi_table:
        params.append("%bag_base: memref<?xi64>")
    if spec.per_sample_weights:
        params.append(f"%weights: memref<?x{t}>")
    params.append(f"%out: {mt}")
    rt = mt
    if spec.cast:                                  # the converted output, returned
        rt = f"memref<?x?x{_CAST_TYPE[spec.cast]}>"
        params.append(f"%cast_out: {rt}")
    L = [f"func.func @embedding_bag({', '.join(params)}) -> {rt} {{",
         "  %c0 = arith.constant 0 : index",
         "  %c1 = arith.constant 1 : index",
         f"  %nbags = memref.dim %out, %c0 : {mt}",
         f"  %dim = memref.dim %table, %c1 : {mt}"]
    if spec.mode == "max":
        L.append(f"  %zero = arith.constant 0.0 : {t}")
        L.append(f"  %ninf = arith.constant {_NEG_INF[t]} : {t}")
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
    if spec.mode == "max":
        L += ["    scf.for %d0 = %c0 to %dim step %c1 {",
              f"      memref.store %ninf, %out[%b, %d0] : {mt}",
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
          f"        %v = memref.load %table[%row, %d] : {mt}"]
    if spec.mode == "max":
        update = _max_update("%acc", "%v", t, count_here=not pad)
    elif spec.per_sample_weights and t == "f32" and not (pad or padded):
        update = f"%new = math.fma %w, %v, %acc : {t}"   # PyTorch's CPU float32 kernel: an FMA
    elif spec.per_sample_weights:   # ... without FBGEMM (padding_idx) and float64: mul, then add
        L.append(f"        %wv = arith.mulf %w, %v : {t}")
        update = f"%new = arith.addf %acc, %wv : {t}"
    else:
        update = f"%new = arith.addf %acc, %v : {t}"
    inner = [f"%acc = memref.load %out[%b, %d] : {mt}", *_lines(update),
             f"memref.store %new, %out[%b, %d] : {mt}"]
    if pad:
        L += ["        %keep = arith.cmpi ne, %row, %pad : index",
              "        scf.if %keep {"] + [f"          {s}" for s in inner] + ["        }"]
    else:
        L += [f"        {s}" for s in inner]
    L += ["      }", "    }"]
    if spec.mode == "mean":
        if counted:
            L.append("    %n = memref.load %count[%c0] : memref<1xindex>")
        else:
            L.append("    %n = arith.subi %end, %start : index")
        L += ["    %n1 = arith.maxsi %n, %c1 : index",
              "    %n_i64 = arith.index_cast %n1 : index to i64",
              f"    %nf = arith.sitofp %n_i64 : i64 to {t}",
              "    scf.for %d1 = %c0 to %dim step %c1 {",
              f"      %s = memref.load %out[%b, %d1] : {mt}",
              f"      %m = arith.divf %s, %nf : {t}",
              f"      memref.store %m, %out[%b, %d1] : {mt}",
              "    }"]
    elif spec.mode == "max":
        if counted:
            L += ["    %n = memref.load %count[%c0] : memref<1xindex>",
                  "    %empty = arith.cmpi eq, %n, %c0 : index"]
        else:
            L.append("    %empty = arith.cmpi eq, %start, %end : index")
        L += ["    scf.if %empty {",
              "      scf.for %d1 = %c0 to %dim step %c1 {",
              f"        memref.store %zero, %out[%b, %d1] : {mt}",
              "      }",
              "    }"]
    if spec.post or spec.cast:
        L += _post_ops(spec.post, t, mt, spec.cast)
        L[5:5] = _post_constants(spec.post, t)
    L += ["  }", f"  return {'%cast_out' if spec.cast else '%out'} : {rt}", "}"]
    return "\n".join(L) + "\n"


def _count_entry(pad: bool) -> list[str]:
    """The bag's entry count ``%count`` plus one (for a non-padding ``%row`` when ``pad``)."""
    inc = ["%n0 = memref.load %count[%c0] : memref<1xindex>", "%n1 = arith.addi %n0, %c1 : index",
           "memref.store %n1, %count[%c0] : memref<1xindex>"]
    if not pad:
        return [f"      {x}" for x in inc]
    return (["      %counts = arith.cmpi ne, %row, %pad : index", "      scf.if %counts {"]
            + [f"        {x}" for x in inc] + ["      }"])


def _max_update(acc: str, v: str, t: str, count_here: bool = False) -> list[str]:
    """``%new``: PyTorch's CPU max bag, which takes the bag's first entry, then an entry only
    when it is greater (``>``): a NaN counts only as the first entry, the first of equal zeros
    stays (``arith.maximumf`` would propagate every NaN and make +0.0 the larger zero). Needs
    ``%count``, the entries so far including this one; ``count_here``: counted here, at column
    0 (no callback per entry where the bag's lookups are not otherwise told apart)."""
    here = ["%at0 = arith.cmpi eq, %d, %c0 : index", "scf.if %at0 {",
            "  %n0 = memref.load %count[%c0] : memref<1xindex>", "  %n1 = arith.addi %n0, %c1 : index",
            "  memref.store %n1, %count[%c0] : memref<1xindex>", "}"] if count_here else []
    return here + ["%seen = memref.load %count[%c0] : memref<1xindex>",
            "%first = arith.cmpi eq, %seen, %c1 : index",
            f"%gt = arith.cmpf ogt, {v}, {acc} : {t}",
            "%take = arith.ori %first, %gt : i1",
            f"%new = arith.select %take, {v}, {acc} : {t}"]


def _lines(update) -> list[str]:
    return update if isinstance(update, list) else [update]


def _float_bits(value: float, t: str) -> str:
    """``value`` rounded to ``t`` (f32/f64) as an exact MLIR hex constant (how PyTorch converts
    a Python number for an op on a float32/float64 tensor)."""
    import struct
    if t == "f32":
        return "0x%08X" % struct.unpack("<I", struct.pack("<f", value))[0]
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


def _post_constants(post: tuple, t: str) -> list[str]:
    lines = [f"  %post_zero = arith.constant 0.0 : {t}"] if any(op == "relu" for op, _ in post) else []
    return lines + [f"  %post{k} = arith.constant {_float_bits(v, t)} : {t}"
                    for k, (op, v) in enumerate(post) if op not in ("relu", "neg")]


#: MLIR element type of a ``BagSpec.cast`` target
_CAST_TYPE = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}


def _post_ops(post: tuple, t: str, mt: str, cast: str | None = None) -> list[str]:
    """The element-wise ops PyTorch applies to the bag's output (``relu``: ``x < 0 ? 0 : x``,
    which keeps -0.0 and NaN as ``torch.relu``; ``mul``/``div``/``add``/``sub`` by a number and
    ``rsub`` (the number minus the row), one rounding each; ``neg``, a sign flip), fused into the bag's last callback: a loop over the output row on the core.
    ``cast`` (a ``.to(dtype)`` last): the row is converted there too (``arith.truncf``, to nearest
    even as PyTorch's CPU conversion, or the exact ``arith.extf``) into ``%cast_out``."""
    L = ["    scf.for %d2 = %c0 to %dim step %c1 {",
         f"      %q0 = memref.load %out[%b, %d2] : {mt}"]
    for k, (op, _) in enumerate(post):
        q, r = f"%q{k}", f"%q{k + 1}"
        if op == "relu":
            L += [f"      %neg{k} = arith.cmpf olt, {q}, %post_zero : {t}",
                  f"      {r} = arith.select %neg{k}, %post_zero, {q} : {t}"]
        elif op == "neg":                       # a sign flip, exact (NaN's sign too)
            L.append(f"      {r} = arith.negf {q} : {t}")
        elif op == "rsub":                      # number - x, one rounding (torch.rsub)
            L.append(f"      {r} = arith.subf %post{k}, {q} : {t}")
        else:
            L.append(f"      {r} = arith.{op}f {q}, %post{k} : {t}")
    if cast is None:
        L += [f"      memref.store %q{len(post)}, %out[%b, %d2] : {mt}", "    }"]
        return L
    c = _CAST_TYPE[cast]
    conv = "extf" if (t, c) == ("f32", "f64") else "truncf"
    L += [f"      %cast = arith.{conv} %q{len(post)} : {t} to {c}",
          f"      memref.store %cast, %cast_out[%b, %d2] : memref<?x?x{c}>", "    }"]
    return L


_FLOAT = ("f32", "f64")

_LOWEST = {"f32": "0xFF800000", "f64": "0xFFF0000000000000", "i32": "-2147483648",
           "i64": "-9223372036854775808"}

_HIGHEST = {"f32": "0x7F800000", "f64": "0x7FF0000000000000", "i32": "2147483647",
            "i64": "9223372036854775807"}


def scf_for_gather(t: str) -> str:
    """``nn.Embedding`` / ``F.embedding`` / ``aten.embedding``: ``out[i, :] = table[indices[i], :]``
    (element type ``t`` in f32/f64/i32/i64; a copy, so bit-exact)."""
    mt = f"memref<?x?x{t}>"
    return f"""func.func @embedding(%table: {mt}, %indices: memref<?xi64>, %out: {mt}) -> {mt} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %indices, %c0 : memref<?xi64>
  %dim = memref.dim %table, %c1 : {mt}
  scf.for %i = %c0 to %n step %c1 {{
    %row_i64 = memref.load %indices[%i] : memref<?xi64>
    %row = arith.index_cast %row_i64 : i64 to index
    scf.for %d = %c0 to %dim step %c1 {{
      %v = memref.load %table[%row, %d] : {mt}
      memref.store %v, %out[%i, %d] : {mt}
    }}
  }}
  return %out : {mt}
}}
"""


def scf_for_segment(t: str, reduce: str, include_self: bool, framework: str = "torch", *,
                    zero_self: bool = True) -> str:
    """Gather-then-scatter-reduce (GNN message passing, ``x.index_select(0, src)`` followed by
    ``out.index_add_(0, dst, ...)`` or ``out.scatter_reduce(0, dst[:, None].expand(...), ...,
    reduce, include_self)``): for each edge ``e`` in order, ``out[dst[e], :] (op)= x[src[e], :]``.

    ``reduce`` in ``sum``, ``mean``, ``amax``, ``amin``; ``out`` holds ``self`` on entry. ``mean``
    divides by the number of contributions (+1 with ``include_self``; a row without any keeps
    ``self``), floor division for integers, as ``torch.scatter_reduce``. ``amax``/``amin`` without
    ``include_self`` start a row from its first contribution. Float ``amax``/``amin`` compare as
    ``framework`` does (:func:`_extremum_update`). ``sum``/``mean`` without ``include_self``
    start a row from 0 at its first contribution (PyTorch fills the rows ``dst`` names with 0,
    ``scatter_reduce``'s ``index_fill_``) unless ``zero_self`` says ``out`` is all zeros on entry
    (a ``torch.zeros`` output, TensorFlow's segment ops), where that changes nothing.
    """
    mt = f"memref<?x?x{t}>"
    fl = t in _FLOAT
    restart = not include_self and (reduce in ("amax", "amin") or not zero_self)
    counted = reduce == "mean" or restart
    op = {("sum", True): "arith.addf", ("sum", False): "arith.addi",
          ("mean", True): "arith.addf", ("mean", False): "arith.addi",
          ("amax", True): "arith.maximumf", ("amax", False): "arith.maxsi",
          ("amin", True): "arith.minimumf", ("amin", False): "arith.minsi"}[reduce, fl]
    L = [f"func.func @segment_{reduce}(%x: {mt}, %src: memref<?xi64>, %dst: memref<?xi64>, "
         f"%out: {mt}) -> {mt} {{",
         "  %c0 = arith.constant 0 : index",
         "  %c1 = arith.constant 1 : index",
         "  %ne = memref.dim %src, %c0 : memref<?xi64>",
         f"  %dim = memref.dim %x, %c1 : {mt}",
         f"  %nseg = memref.dim %out, %c0 : {mt}"]
    if counted:
        L.append("  %count = memref.alloc(%nseg) : memref<?xindex>")
    if restart:
        first = ({"amax": _LOWEST, "amin": _HIGHEST}[reduce][t] if reduce in ("amax", "amin")
                 else "0.0" if fl else "0")
        L.append(f"  %init = arith.constant {first} : {t}")
    L += ["  scf.for %e = %c0 to %ne step %c1 {",
          "    %s_i64 = memref.load %src[%e] : memref<?xi64>",
          "    %s = arith.index_cast %s_i64 : i64 to index",
          "    %t_i64 = memref.load %dst[%e] : memref<?xi64>",
          "    %t = arith.index_cast %t_i64 : i64 to index"]
    if counted:
        L += ["    %n0 = memref.load %count[%t] : memref<?xindex>"]
        if restart:
            L += ["    %first = arith.cmpi eq, %n0, %c0 : index",
                  "    scf.if %first {",
                  "      scf.for %d0 = %c0 to %dim step %c1 {",
                  f"        memref.store %init, %out[%t, %d0] : {mt}",
                  "      }",
                  "    }"]
        L += ["    %n1 = arith.addi %n0, %c1 : index",
              "    memref.store %n1, %count[%t] : memref<?xindex>"]
    L += ["    scf.for %d = %c0 to %dim step %c1 {",
          f"      %v = memref.load %x[%s, %d] : {mt}",
          f"      %acc = memref.load %out[%t, %d] : {mt}",
          *[f"      {x}" for x in (_extremum_update(reduce, t, framework) if fl and reduce in ("amax", "amin")
                                    else [f"%new = {op} %acc, %v : {t}"])],
          f"      memref.store %new, %out[%t, %d] : {mt}",
          "    }",
          "  }"]
    if reduce == "mean":
        L += ["  scf.for %r = %c0 to %nseg step %c1 {",
              "    %k = memref.load %count[%r] : memref<?xindex>"]
        L.append("    %k1 = arith.addi %k, %c1 : index" if include_self else
                 "    %k1 = arith.maxsi %k, %c1 : index")
        L.append("    %k_i64 = arith.index_cast %k1 : index to i64")
        if fl:
            L.append(f"    %kv = arith.sitofp %k_i64 : i64 to {t}")
        elif t == "i32":
            L.append("    %kv = arith.trunci %k_i64 : i64 to i32")
        kv = "%k_i64" if t == "i64" else "%kv"
        div = "arith.divf" if fl else "arith.floordivsi"
        L += ["    scf.for %d1 = %c0 to %dim step %c1 {",
              f"      %a = memref.load %out[%r, %d1] : {mt}",
              f"      %m = {div} %a, {kv} : {t}",
              f"      memref.store %m, %out[%r, %d1] : {mt}",
              "    }",
              "  }"]
    L += [f"  return %out : {mt}", "}"]
    return "\n".join(L) + "\n"


def _extremum_update(reduce: str, t: str, framework: str) -> list[str]:
    """``%new`` from ``%acc`` and the contribution ``%v`` for a float ``amax``/``amin`` as the
    framework's CPU kernel: PyTorch's ``scatter_reduce`` takes ``%v`` when it is NaN or beyond
    ``%acc`` (NaN propagates, of equal zeros ``%acc`` stays); TensorFlow's ``UnsortedSegmentMax``
    keeps ``%acc`` only when ``%v`` is below it (a NaN ``%acc`` is replaced, of equal zeros ``%v``
    wins). ``arith.maximumf`` is neither (every NaN propagates, +0.0 is the larger zero)."""
    beyond = ("%acc, %v" if reduce == "amax" else "%v, %acc")
    if framework == "torch":
        return ["%nan = arith.cmpf uno, %v, %v : " + t,
                f"%beyond = arith.cmpf olt, {beyond} : {t}",
                "%take = arith.ori %nan, %beyond : i1",
                f"%new = arith.select %take, %v, %acc : {t}"]
    if framework == "tensorflow":
        below = "%v, %acc" if reduce == "amax" else "%acc, %v"
        return [f"%below = arith.cmpf olt, {below} : {t}",
                f"%new = arith.select %below, %acc, %v : {t}"]
    raise ValueError(f"framework must be 'torch' or 'tensorflow', not {framework!r}")


def scf_for_csr_mm(t: str) -> str:
    """Sparse CSR ``a`` (crow_indices, col_indices, values) times dense ``x``:
    ``out[i, :] = sum_j values[j] * x[col[j], :]`` over ``j`` in ``crow[i]:crow[i+1]``, in CSR order,
    one fused multiply-add per term — what PyTorch's CPU kernel for ``torch.sparse.mm`` / ``a @ x``
    with ``a.layout == torch.sparse_csr`` computes (bit-exact, checked for float32 and float64)."""
    mt = f"memref<?x?x{t}>"
    return f"""func.func @csr_mm(%crow: memref<?xi64>, %col: memref<?xi64>, %val: memref<?x{t}>, %x: {mt}, %out: {mt}) -> {mt} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %out, %c0 : {mt}
  %dim = memref.dim %x, %c1 : {mt}
  scf.for %i = %c0 to %n step %c1 {{
    %i1 = arith.addi %i, %c1 : index
    %start_i64 = memref.load %crow[%i] : memref<?xi64>
    %start = arith.index_cast %start_i64 : i64 to index
    %end_i64 = memref.load %crow[%i1] : memref<?xi64>
    %end = arith.index_cast %end_i64 : i64 to index
    scf.for %j = %start to %end step %c1 {{
      %c_i64 = memref.load %col[%j] : memref<?xi64>
      %c = arith.index_cast %c_i64 : i64 to index
      %a = memref.load %val[%j] : memref<?x{t}>
      scf.for %d = %c0 to %dim step %c1 {{
        %v = memref.load %x[%c, %d] : {mt}
        %acc = memref.load %out[%i, %d] : {mt}
        %s = math.fma %a, %v, %acc : {t}
        memref.store %s, %out[%i, %d] : {mt}
      }}
    }}
  }}
  return %out : {mt}
}}
"""
