"""``ember hbm-trace`` on the reference model."""

import json

import pytest

from hw.hbm_model.presets import PRESETS
from hw.hbm_model.reference import run_requests
from hw.hbm_model.traces import sequential, write_trace
from sw.cli import main


def test_text_report(tmp_path, capsys):
    write_trace(sequential(1000), tmp_path / "s.trace")
    assert main(["hbm-trace", str(tmp_path / "s.trace"), "--preset", "HBM2"]) == 0
    out = capsys.readouterr().out
    r = run_requests(PRESETS["HBM2"], sequential(1000))
    assert f"bandwidth           {r.bandwidth_gbps():.2f} GB/s  ({100 * r.fraction_of_peak():.1f} % of peak 256.0 GB/s)" in out
    assert f"activates/request   {r.activates_per_request():.3f}" in out


def test_json_report_matches_reference(tmp_path, capsys):
    reqs = sequential(500, interval=3)
    write_trace(reqs, tmp_path / "s.trace")
    assert main(["hbm-trace", str(tmp_path / "s.trace"), "--preset", "HBM3", "--json",
                 "--max-outstanding", "4", "--backpressure", "0.2", "--seed", "3"]) == 0
    d = json.loads(capsys.readouterr().out)
    p = PRESETS["HBM3"]
    r = run_requests(p, reqs, max_outstanding=4, resp_backpressure=0.2, seed=3)
    assert d["cycles"] == r.cycles and d["requests"] == 500
    assert d["read_latency_p99_ns"] == round(r.read_latency_percentile(99) * 0.625, 3)
    assert d["bandwidth_gbps"] == round(r.bandwidth_gbps(), 3)


def test_csv_report(tmp_path, capsys):
    write_trace(sequential(10), tmp_path / "s.trace")
    assert main(["hbm-trace", str(tmp_path / "s.trace"), "--preset", "simple", "--csv"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.startswith("trace,preset,model,requests") and ",simple,reference,10," in row


def test_errors(tmp_path, capsys):
    assert main(["hbm-trace", str(tmp_path / "none.trace")]) == 2
    assert capsys.readouterr().err == \
        f"ember: error: TRACE {str(tmp_path / 'none.trace')!r} does not exist or is not a file\n"
    (tmp_path / "bad.trace").write_text("0x40 READ 1\n0x80 FETCH 2\n")
    assert main(["hbm-trace", str(tmp_path / "bad.trace")]) == 2
    assert capsys.readouterr().err == (f"ember: error: {tmp_path / 'bad.trace'}:2: expected "
                                       "'0x<hex address> READ|WRITE <cycle>', not '0x80 FETCH 2'\n")
    write_trace(sequential(4), tmp_path / "s.trace")
    assert main(["hbm-trace", str(tmp_path / "s.trace"), "--max-outstanding", "0"]) == 2
    assert capsys.readouterr().err == "ember: error: --max-outstanding must be a positive integer, not 0\n"
    assert main(["hbm-trace", str(tmp_path / "s.trace"), "--preset", "simple", "--ports", "2"]) == 2
    assert capsys.readouterr().err == \
        "ember: error: --ports must be 1 with --preset simple (one fixed-latency pipe), not 2\n"
    assert main(["hbm-trace", str(tmp_path / "s.trace"), "--ports", "0"]) == 2
    assert capsys.readouterr().err == "ember: error: --ports must be a positive integer, not 0\n"


def test_utf8_byte_order_mark_is_accepted(tmp_path, capsys):
    """A trace that starts with a UTF-8 byte-order mark (and has CRLF line ends, as Windows
    editors write it) reports what the same trace without them reports; it used to be a parse
    error at line 1. Other errors keep their line numbers, and a mark anywhere else is still one."""
    text = "".join(f"0x{r.addr:x} {'WRITE' if r.write else 'READ'} {r.issue_cycle}\n"
                   for r in sequential(300, interval=2))
    (tmp_path / "plain.trace").write_bytes(text.encode())
    (tmp_path / "bom.trace").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    out = {}
    for name in ("plain", "bom"):
        assert main(["hbm-trace", str(tmp_path / f"{name}.trace"), "--json"]) == 0
        out[name] = json.loads(capsys.readouterr().out)
        out[name].pop("trace")
    assert out["bom"] == out["plain"] and out["bom"]["requests"] == 300
    b = tmp_path / "b.trace"
    b.write_bytes(b"\xef\xbb\xbf0x40 READ 1\n0x80 FETCH 2\n")
    assert main(["hbm-trace", str(b)]) == 2
    assert capsys.readouterr().err == (f"ember: error: {b}:2: expected "
                                       "'0x<hex address> READ|WRITE <cycle>', not '0x80 FETCH 2'\n")
    b.write_bytes(b"\xef\xbb\xbf0x40 FETCH 1\n")
    assert main(["hbm-trace", str(b)]) == 2
    assert capsys.readouterr().err == (f"ember: error: {b}:1: expected "
                                       "'0x<hex address> READ|WRITE <cycle>', not '0x40 FETCH 1'\n")
    b.write_bytes(b"0x40 READ 1\n\xef\xbb\xbf0x80 READ 2\n")
    assert main(["hbm-trace", str(b)]) == 2
    assert capsys.readouterr().err.startswith(f"ember: error: {b}:2: expected ")
    b.write_bytes(b"\xef\xbb\xbf0x40 READ 1\n\xff READ 2\n")  # offsets stay file offsets
    assert main(["hbm-trace", str(b)]) == 2
    assert capsys.readouterr().err == \
        f"ember: error: TRACE {str(b)!r} is not UTF-8 text (byte 0xff at offset 15)\n"


@pytest.mark.slow
@pytest.mark.rtl
def test_rtl_model_of_the_simple_preset_matches_reference(tmp_path, capsys):
    """`--model rtl` on the fixed-latency preset (timing only, no storage) reports what the
    reference reports (it used to fail: the fixed-latency RTL model refused 0 storage words)."""
    write_trace(sequential(200, interval=2), tmp_path / "s.trace")
    out = {}
    for model in ("reference", "rtl"):
        assert main(["hbm-trace", str(tmp_path / "s.trace"), "--preset", "simple", "--json",
                     "--max-outstanding", "8", "--model", model]) == 0
        out[model] = json.loads(capsys.readouterr().out)
    out["rtl"].pop("model", None), out["reference"].pop("model", None)
    assert out["rtl"] == out["reference"]


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.parametrize("ports", [2, 4])
def test_rtl_model_with_ports_matches_reference(tmp_path, capsys, ports):
    """`--model rtl --ports N` on HBM2 (random 64-byte reads, 4 KiB of hot set mixed in, a limit
    on outstanding requests and back-pressure) prints exactly what `--model reference` prints
    (it used to refuse: the RTL had one port)."""
    from hw.hbm_model.traces import hot_set
    write_trace(hot_set(3000, 1 << 30, 4096, seed=ports), tmp_path / "h.trace")
    out = {}
    for model in ("reference", "rtl"):
        assert main(["hbm-trace", str(tmp_path / "h.trace"), "--preset", "HBM2", "--json",
                     "--ports", str(ports), "--max-outstanding", "96", "--backpressure", "0.1",
                     "--model", model]) == 0
        out[model] = json.loads(capsys.readouterr().out)
    out["rtl"].pop("model", None), out["reference"].pop("model", None)
    assert out["rtl"] == out["reference"]


def test_bad_inputs_name_the_option_and_the_value(tmp_path, capsys, monkeypatch):
    """Every refusal names the option or argument at fault and the bad value, exit 2 and no
    traceback: --seed -1 used to print numpy's bare 'expected non-negative integer', and a
    non-UTF-8 TRACE the codec's message without the argument."""
    write_trace(sequential(4), tmp_path / "s.trace")
    s = str(tmp_path / "s.trace")
    assert main(["hbm-trace", s, "--seed", "-1"]) == 2
    assert capsys.readouterr().err == "ember: error: --seed must be a non-negative integer, not -1\n"
    assert main(["hbm-trace", s, "--seed", "-1", "--backpressure", "0.5"]) == 2
    assert capsys.readouterr().err == "ember: error: --seed must be a non-negative integer, not -1\n"
    (tmp_path / "b.trace").write_bytes(b"0x40 READ 1\n\xff\xfe READ 2\n")
    b = str(tmp_path / "b.trace")
    assert main(["hbm-trace", b]) == 2
    assert capsys.readouterr().err == \
        f"ember: error: TRACE {b!r} is not UTF-8 text (byte 0xff at offset 12)\n"
    (tmp_path / "e.trace").write_text("# nothing\n\n")
    e = str(tmp_path / "e.trace")
    assert main(["hbm-trace", e]) == 2
    assert capsys.readouterr().err == f"ember: error: TRACE {e!r} holds no requests\n"
    assert main(["hbm-trace", s, "--backpressure", "1"]) == 2
    assert capsys.readouterr().err == \
        "ember: error: --backpressure must be a probability in [0, 1), not 1.0\n"
    assert main(["hbm-trace", s, "--backpressure", "nan"]) == 2
    assert capsys.readouterr().err == \
        "ember: error: --backpressure must be a probability in [0, 1), not nan\n"
    assert main(["hbm-trace", s, "--max-outstanding", "-3"]) == 2
    assert capsys.readouterr().err == "ember: error: --max-outstanding must be a positive integer, not -3\n"
    # a file that exists but cannot be read (permissions; simulated, the tests may run as root)
    from pathlib import Path

    def refuse(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))
    monkeypatch.setattr(Path, "read_text", refuse)
    assert main(["hbm-trace", s]) == 2
    assert capsys.readouterr().err == f"ember: error: TRACE {s!r} cannot be read (Permission denied)\n"


@pytest.mark.parametrize("argv, words", [
    (["--ports", "x"], "argument --ports: invalid int value: 'x'"),
    (["--seed", "1.5"], "argument --seed: invalid int value: '1.5'"),
    (["--preset", "HBM4"], "argument --preset: invalid choice: 'HBM4'"),
    (["--model", "foo"], "argument --model: invalid choice: 'foo'"),
    (["--json", "--csv"], "argument --csv: not allowed with argument --json"),
])
def test_argparse_refusals_name_the_option(tmp_path, capsys, argv, words):
    write_trace(sequential(4), tmp_path / "s.trace")
    with pytest.raises(SystemExit) as e:
        main(["hbm-trace", str(tmp_path / "s.trace"), *argv])
    assert e.value.code == 2 and words in capsys.readouterr().err


def test_help(capsys):
    """--help exits 0; the description's percent sign is printed once (argparse does not
    %-format a description, so '%%' was printed as it stands)."""
    with pytest.raises(SystemExit) as e:
        main(["hbm-trace", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "(GB/s, % of peak)" in " ".join(out.split()) and "%%" not in out
    assert "--seed SEED" in out and "non-negative integer" in " ".join(out.split())
