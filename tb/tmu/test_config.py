"""TmuConfig: defaults, the small configuration, argument errors."""

import dataclasses

import pytest

from hw.tmu import TmuConfig


def test_defaults():
    c = TmuConfig()
    assert (c.layers, c.streams, c.actions, c.regions, c.args) == (4, 16, 16, 4, 16)
    assert (c.max_inflight, c.data_queue_depth, c.ctrl_queue_depth) == (512, 256, 512)
    assert (c.watchdog_cycles, c.mem_latency, c.prefetchers, c.prefetch_depth) == (1 << 20, 32, 5, 32)
    assert (c.chain_engines, c.engines, c.tag_index_bits) == (1, 6, 9)
    assert (c.line_bytes, c.memory_ports, c.output_tokens) == (64, 2, 8)
    assert c.tag_bits == 12 and c.rob_bits == 9 and c.program_words == 164
    assert (c.row_chunk_lines, c.row_chunk_elements, c.line_offset_bits) == (8, 512, 6)
    assert (c.row_lines, c.drain_lines, c.drain_entries) == (2, 2, 0)
    s = TmuConfig.small()
    assert s.max_inflight >= 16 and s.layers == 3


def test_tag_index_widens_for_the_chain_engine():
    """The chain engine's two stages take two engines' run-ahead slots in the tags' index: a
    reorder buffer smaller than the engines' slots widens the tag, not an error."""
    c = TmuConfig(max_inflight=2, prefetchers=1, prefetch_depth=2)
    assert (c.rob_bits, c.tag_index_bits, c.tag_bits) == (1, 3, 6)      # 3 engines x 2 slots
    c = TmuConfig(max_inflight=2, prefetchers=1, prefetch_depth=2, chain_engines=0)
    assert (c.rob_bits, c.tag_index_bits, c.tag_bits) == (1, 1, 4)


@pytest.mark.parametrize("ports, tokens, line_bytes, row_lines, drain_lines", [
    (8, 16, 64, 8, 2), (4, 16, 64, 4, 2), (5, 16, 32, 5, 4), (8, 16, 16, 8, 4), (1, 1, 64, 1, 2),
    (8, 32, 64, 8, 4),
])
def test_wide_output_and_many_ports(ports, tokens, line_bytes, row_lines, drain_lines):
    """A 1024-bit output and up to 8 memory ports build: the row issue block offers a line per
    port per cycle, the reorder buffer drains the lines of a beat per cycle (at least 2, at most
    4)."""
    c = TmuConfig(memory_ports=ports, output_tokens=tokens, line_bytes=line_bytes)
    assert (c.row_lines, c.drain_lines) == (row_lines, drain_lines)


@pytest.mark.parametrize("kwargs, drain_lines", [
    ({"drain_entries": 1}, 1), ({"drain_entries": 3}, 3), ({"drain_entries": 4, "output_tokens": 1}, 4),
    ({"max_inflight": 2, "prefetchers": 1, "prefetch_depth": 2, "output_tokens": 32}, 2),
])
def test_drain_entries(kwargs, drain_lines):
    """``drain_entries`` sets the entries drained per cycle; 0 (automatic) never exceeds the
    reorder buffer's depth."""
    assert TmuConfig(**kwargs).drain_lines == drain_lines


@pytest.mark.parametrize("kwargs, message", [
    ({"drain_entries": 5}, "drain_entries must be 0 (automatic) or an integer in 1..4, not 5"),
    ({"drain_entries": -1}, "drain_entries must be 0 (automatic) or an integer in 1..4, not -1"),
    ({"drain_entries": True}, "drain_entries must be 0 (automatic) or an integer in 1..4, not True"),
    ({"drain_entries": 4, "max_inflight": 2, "prefetchers": 1, "prefetch_depth": 2},
     "drain_entries must be 0 (automatic) or an integer in 1..2, not 4"),
    ({"uop_stages": 3}, "uop_stages must be 1 or 2, not 3"),
    ({"uop_stages": True}, "uop_stages must be 1 or 2, not True"),
    ({"layers": 0}, "layers must be an integer in 1..255, not 0"),
    ({"args": 256}, "args must be an integer in 1..255, not 256"),
    ({"line_bytes": 128}, "line_bytes must be 8, 16, 32 or 64, not 128"),
    ({"memory_ports": 0}, "memory_ports must be an integer in 1..8, not 0"),
    ({"memory_ports": 9}, "memory_ports must be an integer in 1..8, not 9"),
    ({"memory_ports": 2.0}, "memory_ports must be an integer in 1..8, not 2.0"),
    ({"output_tokens": 3}, "output_tokens must be 1, 2, 4, 8, 16 or 32, not 3"),
    ({"output_tokens": 64}, "output_tokens must be 1, 2, 4, 8, 16 or 32, not 64"),
    ({"output_tokens": True}, "output_tokens must be 1, 2, 4, 8, 16 or 32, not True"),
    ({"max_inflight": 24}, "max_inflight must be a power of two >= 2, not 24"),
    ({"data_queue_depth": 1}, "data_queue_depth must be an integer >= 2, not 1"),
    ({"watchdog_cycles": -1}, "watchdog_cycles must be an integer in 0..2**32-1, not -1"),
    ({"mem_latency": 0}, "mem_latency must be an integer in 1..1024, not 0"),
    ({"prefetchers": 17}, "prefetchers must be an integer in 0..16, not 17"),
    ({"prefetch_depth": 3}, "prefetch_depth must be a power of two >= 2, not 3"),
    ({"prefetchers": 16, "prefetch_depth": 64},
     "prefetchers * prefetch_depth must be at most max_inflight (512), not 1024"),
    ({"chain_engines": 2}, "chain_engines must be 0 or 1, not 2"),
    ({"chain_engines": True}, "chain_engines must be 0 or 1, not True"),
])
def test_errors(kwargs, message):
    with pytest.raises(ValueError) as e:
        TmuConfig(**kwargs)
    assert str(e.value) == message


@pytest.mark.parametrize("name, config", [("tmu_rtl", TmuConfig()), ("tmu_small", TmuConfig.small())])
def test_config_files_declare_what_the_rtl_builds(name, config):
    """configs/<name>.json (what the compiler targets) = the TmuConfig's resources and ISA v1
    support, so the compiler never emits a feature the RTL lacks."""
    from sw.runtime.isa import Limits
    declared = Limits.from_file(name).to_dict()
    built = Limits.from_tmu_config(config).to_dict()
    built["name"] = name
    assert declared == built


@pytest.mark.parametrize("kwargs, message", [
    ({"versions": (1,)}, "versions must be (0,) or (0, 1), not (1,)"),
    ({"features": ("vector",)}, "features must be a tuple of distinct names from "
                                "('block', 'broadcast', 'lockstep', 'pack'), not ('vector',)"),
    ({"versions": (0,)}, "features must be empty without ISA version 1, not ('block', 'broadcast', 'lockstep', 'pack')"),
    ({"lanes": 4, "features": ("pack",), "max_block": 0},
     "lanes must be 1 without the 'lockstep' feature, not 4"),
    ({"lanes": 65}, "lanes must be an integer in 1..64, not 65"),
    ({"features": ("block",), "lanes": 1, "max_block": 0},
     "max_block must be an integer in 1..2**20 with the 'block' feature, not 0"),
    ({"features": (), "lanes": 1, "max_block": 8}, "max_block must be 0 without the 'block' feature, not 8"),
])
def test_v1_parameter_errors(kwargs, message):
    with pytest.raises(ValueError) as e:
        TmuConfig(**kwargs)
    assert str(e.value) == message


def test_with_max_inflight_fits_the_engines_depth():
    """The engines' loads must fit in the lines in flight: the depth is kept while it fits, else
    the largest power of two that does (at least 2), and a count no depth fits is refused."""
    c = TmuConfig()
    assert c.with_max_inflight(1024) == dataclasses.replace(c, max_inflight=1024)
    for lines in (16, 32, 64, 128, 256):
        got = c.with_max_inflight(lines)
        assert got.max_inflight == lines
        assert c.prefetchers * got.prefetch_depth <= lines < c.prefetchers * 2 * got.prefetch_depth \
            or got.prefetch_depth == c.prefetch_depth, (lines, got.prefetch_depth)
    assert [c.with_max_inflight(n).prefetch_depth for n in (16, 64, 256, 512)] == [2, 8, 32, 32]
    with pytest.raises(ValueError, match="prefetchers \\* prefetch_depth must be at most max_inflight"):
        c.with_max_inflight(8)
