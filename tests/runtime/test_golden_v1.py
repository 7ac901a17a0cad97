"""Golden model, ISA version 1 (docs/isa.md §7): token streams computed by hand."""

import struct

import pytest

from sw.runtime.golden import AccessFault, run_golden
from sw.runtime.isa import DONE_TOKEN, Fault, Limits, Program

VECTOR = Limits.from_file("tmu_vector")
TABLE = struct.pack("<12I", *range(100, 112))         # u32 100..111 at byte 0..47


def run(asm: str, args, memory=TABLE, **kw):
    return run_golden(Program.from_asm(asm), memory, args, limits=VECTOR, **kw)


def test_lockstep_tail_is_masked_and_counted():
    # 5 iterations over 4 lanes: one full vector iteration, then a tail of 1 active lane.
    r = run(""".version 1
.args 2
layer 0 lb=#0 ub=a1 step=#1 lockstep lanes=4
region 0 base=a0 size=#48
stream 0 layer=0 mem region=0 a=a0 b=i0 stride=4 size=4
action layer=0 iter operand c0
action layer=0 iter operand s0
action layer=0 iter control 1
""", [0, 5])
    assert r.data_tokens == [4, 100, 101, 102, 103,      # count, then 4 lanes, one per token
                             1, 104, 0, 0, 0]            # tail: lanes 1..3 masked -> 0
    assert r.control_tokens == [1, 1, DONE_TOKEN]
    assert r.loads == 5 and r.iterations == [5]          # masked lanes load nothing


def test_vector_index_first_and_step():
    # step 3, lanes 2 over [1, 8): vector iterations {1, 4}, {7, masked}
    r = run(""".version 1
.args 0
layer 0 lb=#1 ub=#8 step=#3 lockstep lanes=2
action layer=0 iter operand f0
action layer=0 iter operand i0
action layer=0 iter operand c0
""", [])
    assert r.data_tokens == [1, 1, 4, 2, 7, 7, 0, 1]


def test_packing_vector_lanes_and_join():
    # 4-byte lanes, 2 per token; count and first joined into one token (count in bytes 0..3)
    r = run(""".version 1
.args 2
layer 0 lb=#0 ub=a1 step=#1 lockstep lanes=4
region 0 base=a0 size=#48
stream 0 layer=0 mem region=0 a=a0 b=i0 stride=4 size=4
action layer=0 iter operand c0 esize=4 join
action layer=0 iter operand f0 esize=4
action layer=0 iter operand s0 esize=4
""", [0, 7])
    assert r.data_tokens == [4 | 0 << 32, 100 | 101 << 32, 102 | 103 << 32,
                             3 | 4 << 32, 104 | 105 << 32, 106]   # tail: lane 3 masked -> 0 bits


def test_packer_alignment_gap_and_spill():
    # 2-byte, then 4-byte (aligned up to byte 4), then 8-byte (spills to a new token), all joined
    r = run(""".version 1
.args 0
layer 0 lb=#0 ub=#1 step=#1
stream 0 layer=0 fwd a=#0x1234
stream 1 layer=0 fwd a=#-2
action layer=0 iter operand s0 esize=2 join
action layer=0 iter operand s1 esize=4 join
action layer=0 iter operand s0 join
action layer=0 iter operand s0 esize=1 join
action layer=0 iter control 0
action layer=0 iter operand s0 esize=1
""", [])
    assert r.data_tokens == [0x1234 | 0xFFFFFFFE << 32,   # bytes 2..3 are the alignment gap (0)
                             0x1234,                       # the 8-byte element
                             0x34 | 0x34 << 8]             # a control action does not flush; the
    #                                                        firing's end does
    assert r.control_tokens == [0, DONE_TOKEN]


def test_join_does_not_cross_firings():
    r = run(""".version 1
.args 0
layer 0 lb=#0 ub=#2 step=#1
action layer=0 iter operand i0 esize=4 join
""", [])
    assert r.data_tokens == [0, 1]


def test_block_stream_row_packed_and_broadcast_to_lanes():
    # layer 0 (broadcast) loads a row of n=a1 u16 elements as one operand; layer 1 (lockstep, 2
    # lanes) reads layer 0's row index through the broadcast.
    mem = struct.pack("<16H", *range(1, 17))
    r = run(""".version 1
.args 3
layer 0 lb=#0 ub=#2 step=#1 broadcast
layer 1 lb=#0 ub=#3 step=#1 lockstep lanes=2
region 0 base=a0 size=#32
stream 0 layer=0 alu mul a=i0 b=a1
stream 1 layer=0 mem region=0 a=a0 b=s0 size=2 block n=a1
stream 2 layer=1 alu add a=s0 b=i1
action layer=0 iter operand s1 esize=2
action layer=1 iter operand s2 esize=1
""", [0, 5, 0], memory=mem)
    row0 = [1 | 2 << 16 | 3 << 32 | 4 << 48, 5]
    row1 = [6 | 7 << 16 | 8 << 32 | 9 << 48, 10]
    assert r.data_tokens == row0 + [0 | 1 << 8, 2] + row1 + [5 | 6 << 8, 7]
    assert r.loads == 10 and r.bytes_loaded == 20


def test_empty_block_pushes_nothing_and_loads_nothing():
    r = run(""".version 1
.args 2
layer 0 lb=#0 ub=#1 step=#1
region 0 base=a0 size=#0
stream 0 layer=0 mem region=0 a=a0 b=#1000 size=4 block n=a1
action layer=0 iter operand s0 esize=4
action layer=0 iter control 2
""", [0, 0])
    assert r.data_tokens == [] and r.loads == 0 and r.control_tokens == [2, DONE_TOKEN]


@pytest.mark.parametrize("n, code, addr", [(-1, Fault.BLOCK_LENGTH, 0), (1025, Fault.BLOCK_LENGTH, 0),
                                           (5, Fault.ADDR_RANGE, 48)])
def test_block_faults_before_loading(n, code, addr):
    # row starts at element 8 (byte 32) of a 48-byte region: elements 8..11 fit, the 5th (byte 48) not
    r = run(""".version 1
.args 2
layer 0 lb=#0 ub=#1 step=#1
region 0 base=a0 size=#48
stream 0 layer=0 mem region=0 a=a0 b=#8 size=4 block n=a1
action layer=0 iter operand s0 esize=4
""", [0, n])
    assert (r.fault_code, r.fault_addr, r.fault_stream) == (code, addr, 0)   # stream 0's fault
    assert r.loads == 0 and r.data_tokens == [] and DONE_TOKEN not in r.control_tokens


def test_block_misaligned_row():
    with pytest.raises(AccessFault, match="misaligned address 0x2") as e:
        run(""".version 1
.args 2
layer 0 lb=#0 ub=#1 step=#1
region 0 base=#0 size=#48
stream 0 layer=0 mem region=0 a=#2 b=#0 size=4 block n=#2
""", [0, 0], raise_on_fault=True)
    assert e.value.code == Fault.MISALIGNED and e.value.stream == 0


def test_masked_lane_never_loads_or_faults():
    # the region ends at byte 12: lane 3 of the first vector iteration would load byte 12, but
    # ub=3 masks it, so no fault.
    r = run(""".version 1
.args 1
layer 0 lb=#0 ub=a0 step=#1 lockstep lanes=4
region 0 base=#0 size=#12
stream 0 layer=0 mem region=0 a=#0 b=i0 stride=4 size=4
action layer=0 iter operand s0
""", [3])
    assert not r.faulted and r.data_tokens == [100, 101, 102, 0] and r.loads == 3
    # with ub=4 lane 3 is active: the lowest faulting lane is reported, no token of it is pushed
    r = run(""".version 1
.args 1
layer 0 lb=#0 ub=a0 step=#1 lockstep lanes=4
region 0 base=#0 size=#12
stream 0 layer=0 mem region=0 a=#0 b=i0 stride=4 size=4
action layer=0 iter operand s0
""", [4])
    assert (r.fault_code, r.fault_addr, r.data_tokens, r.loads) == (Fault.ADDR_RANGE, 12, [], 3)


def test_gather_lanes_from_an_index_vector():
    # indices 3, 0, 2 (u32) gather table rows of 1 element each
    mem = TABLE + struct.pack("<3I", 3, 0, 2)
    r = run(""".version 1
.args 0
layer 0 lb=#0 ub=#3 step=#1 lockstep lanes=4
region 0 base=#0 size=#60
stream 0 layer=0 mem region=0 a=#48 b=i0 stride=4 size=4
stream 1 layer=0 mem region=0 a=#0 b=s0 stride=4 size=4
action layer=0 iter operand s1 esize=4
""", [], memory=mem)
    assert r.data_tokens == [103 | 100 << 32, 102]


def test_v1_program_needs_a_v1_unit():
    prog = Program.from_asm(".version 1\nlayer 0 lb=#0 ub=#1 lockstep lanes=2\n")
    with pytest.raises(Exception, match="version must be 0, not 1"):
        run_golden(prog, b"", [])


@pytest.mark.parametrize("n, fault", [(2, (Fault.ADDR_OVERFLOW, 0)), (0, (0, 0))])
def test_block_row_whose_start_wraps_faults_addr_overflow(n, fault):
    # start = a0 + 2 * 4 = 2**63: outside the signed range; an empty row is not checked
    r = run(""".version 1
.args 2
layer 0 lb=#0 ub=#1 step=#1
region 0 base=#0 size=#48
stream 0 layer=0 mem region=0 a=a0 b=#2 size=4 block n=a1
action layer=0 iter operand s0 esize=4
""", [(1 << 63) - 8, n])
    assert (r.fault_code, r.fault_addr) == fault and r.loads == 0


def test_lockstep_overflow_in_a_later_lane_comes_before_lane_0s_region_fault():
    # s0 = i * 2**62 wraps in lane 2; lane 0 of s1 reads address 0, below the region [16, 64):
    # the overflow (checked over all active lanes first) is the fault.
    prog = """.version 1
.args 2
layer 0 lb=#0 ub=#4 step=#1 lockstep lanes=4
region 0 base=#16 size=#48
stream 0 layer=0 alu mul a=i0 b=a0
stream 1 layer=0 mem region=0 a=#0 b=s0 stride=1 size=1
action layer=0 iter operand s1
"""
    r = run(prog, [1 << 62, 0])
    assert (r.fault_code, r.fault_addr) == (Fault.ADDR_OVERFLOW, 1) and r.loads == 0
    r = run(prog, [1 << 61, 0])                # 3 * 2**61 fits: lane 0's ADDR_RANGE
    assert (r.fault_code, r.fault_addr) == (Fault.ADDR_RANGE, 0)


def test_max_iterations_counts_active_lanes():
    prog = """.version 1
.args 0
layer 0 lb=#0 ub=#10 step=#1 lockstep lanes=4
action layer=0 iter operand c0
"""
    assert run(prog, [], max_iterations=10).data_tokens == [4, 4, 2]
    r = run(prog, [], max_iterations=9)                      # the tail's 2 lanes do not fit
    assert (r.fault_code, r.data_tokens) == (Fault.WATCHDOG, [4, 4])
