"""``scripts/placed_timing.py``: static timing of nextpnr's SDF after placement, on hand-written
SDF text whose arrival times are worked out by hand below."""

from __future__ import annotations

import json
import random

import pytest

from script_under_test import load_script

placed_timing = load_script("placed_timing")


def _cell(kind, inst, delays="", checks=""):
    return (f'  (CELL (CELLTYPE "{kind}") (INSTANCE {inst})\n'
            f'    (DELAY (ABSOLUTE {delays}))\n'
            + (f'    (TIMINGCHECK {checks})\n' if checks else "") + "  )\n")


def _triple(ps):
    """An SDF (min:typ:max) whose maximum is ``ps``: the analysis must take the maximum."""
    return f"({ps - 30}:{ps - 15}:{ps})"


def _ff(inst, clock_to_q, setup):
    return _cell("TRELLIS_FF", inst,
                 f"(IOPATH CLK Q {_triple(clock_to_q)} {_triple(clock_to_q - 10)})",
                 f"(SETUPHOLD (posedge DI) (posedge CLK) {_triple(setup)} (-5:-5:-5)) "
                 f"(SETUPHOLD (negedge DI) (posedge CLK) {_triple(setup - 20)} (-5:-5:-5))")


def _lut(inst, a_ps, b_ps, *, extra=""):
    return _cell("TRELLIS_COMB", inst,
                 f"(IOPATH A F {_triple(a_ps)} {_triple(a_ps)}) "
                 f"(IOPATH B F {_triple(b_ps - 1)} {_triple(b_ps)}) {extra}")


def _wire(src, dst, ps):
    return f"(INTERCONNECT {src} {dst} {_triple(ps - 2)} {_triple(ps)})"


def _sdf(cells, wires):
    return ('(DELAYFILE\n  (SDFVERSION "3.0")\n  (DESIGN "top")\n  (DIVIDER /)\n'
            '  (TIMESCALE 1ps)\n' + "".join(cells)
            + '  (CELL (CELLTYPE "top") (INSTANCE )\n    (DELAY (ABSOLUTE '
            + " ".join(wires) + ")))\n)\n")


# Two registers; a's Q reaches b's DI through lut1 then lut2's A (short wires), and directly
# into lut2's B over a long wire. Instance names carry escaped '$', '.' and '/'.
A, B = r"\$ff\.a", r"ff\/b"
SDF = _sdf(
    [_ff(A, 400, 0), _ff(B, 400, 120), _lut("lut1", 300, 350), _lut("lut2", 200, 250)],
    [_wire(f"{A}/Q", "lut1/A", 500), _wire("lut1/F", "lut2/A", 600),
     _wire(f"{A}/Q", "lut2/B", 1500), _wire("lut2/F", f"{B}/DI", 100)])
# Into lut2: via A 400 + 500 + 300 + 600 = 1800 (+200 = 2000); via B 400 + 1500 = 1900
# (+250 = 2150, the rise/fall maximum): B wins. Then + 100 wire + 120 setup = 2370 ps.


def test_latest_arrival_takes_the_slower_input_and_the_worst_delay_triple():
    sdf = placed_timing.parse_sdf(SDF)
    arrival, before = placed_timing.arrivals(sdf)
    assert arrival[("lut2", "F")] == 2150
    ends = placed_timing.endpoints(sdf, arrival)
    assert ends == [(2370, ("ff/b", "DI"))], ends          # a's own DI is not reached
    path = placed_timing.trace(before, arrival, ("ff/b", "DI"))
    assert [pin for pin, _ in path] == [("$ff.a", "Q"), ("lut2", "B"), ("lut2", "F"),
                                        ("ff/b", "DI")]
    assert [t for _, t in path] == [400, 1900, 2150, 2250]


def _longest_by_enumeration(graph, launch, node):
    """The latest arrival at ``node`` by trying every path (exponential; small graphs only):
    an independent reference for the analysis' topological order."""
    best = launch.get(node, float("-inf"))
    for src, ps in graph.get(node, []):
        best = max(best, _longest_by_enumeration(graph, launch, src) + ps)
    return best


@pytest.mark.parametrize("case", range(20))
def test_random_layered_luts_match_every_path_enumerated(seed, case):
    """Random layers of two-input LUTs between registers, random wire and cell delays: each
    register input's arrival equals the maximum over all its paths."""
    rng = random.Random(seed + case)
    layers = [[f"r{i}" for i in range(rng.randint(1, 4))]]
    cells = [_ff(r, rng.randint(100, 500), rng.randint(50, 150)) for r in layers[0]]
    wires, graph = [], {}
    out = {r: (r, "Q") for r in layers[0]}
    for level in range(rng.randint(1, 6)):
        names = [f"l{level}_{i}" for i in range(rng.randint(1, 5))]
        for n in names:
            a, b = rng.randint(100, 400), rng.randint(100, 400)
            cells.append(_lut(n, a, b))
            graph[(n, "F")] = [((n, "A"), a), ((n, "B"), b)]
            for port in ("A", "B"):
                src = out[rng.choice(sorted(out))]
                ps = rng.randint(50, 3000)
                wires.append(_wire(f"{src[0]}/{src[1]}", f"{n}/{port}", ps))
                graph[(n, port)] = [(src, ps)]
            out[n] = (n, "F")
    sinks = [f"s{i}" for i in range(rng.randint(1, 3))]
    for s in sinks:
        cells.append(_ff(s, 300, 100))
        src = out[rng.choice(sorted(out))]
        ps = rng.randint(50, 3000)
        wires.append(_wire(f"{src[0]}/{src[1]}", f"{s}/DI", ps))
        graph[(s, "DI")] = [(src, ps)]
    sdf = placed_timing.parse_sdf(_sdf(cells, wires))
    launch = dict(sdf["launch"])
    setup = sdf["setup"]
    arrival, before = placed_timing.arrivals(sdf)
    for s in sinks:
        expect = _longest_by_enumeration(graph, launch, (s, "DI"))
        assert arrival[(s, "DI")] == expect, (s, arrival[(s, "DI")], expect)
        path = placed_timing.trace(before, arrival, (s, "DI"))
        assert path[-1] == ((s, "DI"), expect) and path[0][0] in launch
    assert dict((p, t) for t, p in placed_timing.endpoints(sdf, arrival)) == {
        p: arrival[p] + setup[p] for p in setup if p in arrival}


def test_a_combinational_loop_is_an_error():
    looped = _sdf([_ff("r", 100, 0), _lut("x", 10, 10), _lut("y", 10, 10)],
                  [_wire("r/Q", "x/A", 1), _wire("x/F", "y/A", 1), _wire("y/F", "x/B", 1)])
    with pytest.raises(ValueError, match="loop"):
        placed_timing.arrivals(placed_timing.parse_sdf(looped))


@pytest.mark.parametrize("text, message", [("(CELL )", "DELAYFILE"),
                                           ("(DELAYFILE (CELL ", "inside"),
                                           ("(DELAYFILE))", "unmatched")])
def test_bad_sdf_text_is_an_error(text, message):
    with pytest.raises(ValueError, match=message):
        placed_timing.parse_sdf(text)


def test_report_names_registers_by_their_output_net_and_gives_locations(tmp_path, capsys):
    (tmp_path / "p.sdf").write_text(SDF)
    placed = {"modules": {"top": {
        "cells": {"$ff.a": {"connections": {"Q": [2], "DI": [9]},
                            "attributes": {"NEXTPNR_BEL": "X3/Y4/SLICEA"}},
                  "ff/b": {"connections": {"Q": [5], "DI": [6]},
                           "attributes": {"NEXTPNR_BEL": "X40/Y7/SLICEB"}},
                  "lut2": {"connections": {"B": [2], "F": [6]},
                           "attributes": {"NEXTPNR_BEL": "X39/Y7/SLICEB"}}},
        "netnames": {"tmu.head[3]": {"bits": [2]}, "tmu.count[0]": {"bits": [5]},
                     "$auto$x": {"bits": [6]}}}}}
    (tmp_path / "p.json").write_text(json.dumps(placed))
    assert placed_timing.main(["--sdf", str(tmp_path / "p.sdf"),
                               "--placed", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert "slowest 2.37 ns" in out
    assert "| `tmu.count` | 1 | 2.37 | 2.37 |" in out
    assert "(39, 7)" in out and "tmu.head[3]" in out
    # Yosys names a flip-flop cell after the signal it holds: that name, not its Q net's.
    assert placed_timing.register_signal(None, ("tmu.x.value_2_TRELLIS_FF_Q_9", "CE")) \
        == "tmu.x.value_2"


def test_histogram_counts_the_inputs_past_each_time(tmp_path, capsys):
    """The one register input (2.37 ns, worked out above) is past 1 and 2 ns, not past 2.5;
    the CLI prints the same counts; a time that is not a positive number exits 2."""
    ends = placed_timing.endpoints(placed_timing.parse_sdf(SDF),
                                   placed_timing.arrivals(placed_timing.parse_sdf(SDF))[0])
    assert [(t, n) for t, n, _ in placed_timing.histogram(ends, [1, 2, 2.5])] \
        == [(1, 1), (2, 1), (2.5, 0)]
    assert placed_timing.histogram(ends, [2.5])[0][2] == pytest.approx(400.0)
    (tmp_path / "p.sdf").write_text(SDF)
    assert placed_timing.main(["--sdf", str(tmp_path / "p.sdf"), "--histogram", "2,2.5"]) == 0
    out = capsys.readouterr().out
    assert "| > 2 ns | 1 (100 %) | < 500.0 MHz |" in out
    assert "| > 2.5 ns | 0 (0 %) | < 400.0 MHz |" in out
    for bad in ("0", "x", "10,-1", ""):
        with pytest.raises(SystemExit) as e:
            placed_timing.main(["--sdf", str(tmp_path / "p.sdf"), "--histogram", bad])
        assert e.value.code == 2
        assert "--histogram" in capsys.readouterr().err


def test_missing_file_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        placed_timing.main(["--sdf", str(tmp_path / "none.sdf")])
    assert e.value.code == 2
    assert "none.sdf" in capsys.readouterr().err
