// The pass pipeline text is checked before the input is read; each message in full.
// RUN: not %ember opt %s --passes no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN
// UNKNOWN: ember: error: passes: unknown pass 'no-such-pass' (known: affine-streams, align-queues, bufferize, choose-decoupling, coalesce-rows, convert-scf-to-slc, convert-slc-to-dlc, count-segment-index, hoist-streams, move-to-callback, replace-to-val-ops, segment-callbacks, simplify-streams, vectorize-access, vectorize-callbacks)
// RUN: not %ember opt %s --passes 'vectorize-access{lanes=4}' 2>&1 | filecheck %s --check-prefix=OPTION
// OPTION: ember: error: passes 'vectorize-access{lanes=4}': Provided arguments ["lanes"] not found in expected arguments ["vlen"]
// RUN: not %ember opt %s --passes 'vectorize-access{vlen=four}' 2>&1 | filecheck %s --check-prefix=TYPE
// TYPE: ember: error: passes 'vectorize-access{vlen=four}': Incompatible types: given ('four',), expected <class 'int'>
// RUN: not %ember opt %s --passes 'bufferize{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// SYNTAX: ember: error: passes 'bufferize{' is not a pass pipeline: column 11: Expected argument name here
// RUN: not %ember opt %s --passes '' 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY: ember: error: passes must name at least one pass, not ''
// RUN: not %ember opt %s 2>&1 | filecheck %s --check-prefix=MISSING
// MISSING: ember: error: opt needs FILE.mlir and --passes (or --list-passes)

func.func @f() {
  return
}
