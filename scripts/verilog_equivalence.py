"""Check that a refactor of the RTL did not change the hardware: write the Verilog of
``hw.tmu.tmu.Tmu`` for some configurations, normalised, and compare it with an earlier write.

Normalisation removes what a pure refactor legitimately changes without changing the netlist:

* ``(* src = "file:line" *)`` attributes (source locations);
* auto-numbered names (``\\$123``, ``_45_``, ``name$6``): renumbered canonically, in the order of
  their first appearance in the text, so that two texts equal after normalisation describe the
  same netlist up to the renaming of those auto-numbered wires (a changed connection still
  shows, since the renumbering is a bijection on each text).

Usage (the repository the script lies in is the code converted, a worktree included)::

    python3 scripts/verilog_equivalence.py write /tmp/before      # on the old code
    python3 scripts/verilog_equivalence.py write /tmp/after       # on the new code
    python3 scripts/verilog_equivalence.py compare /tmp/before /tmp/after

``write`` prints one line per configuration: the SHA-1 of the raw and of the normalised text.
``compare`` exits 0 when every normalised text is identical, else 1 with a unified diff excerpt.
"""

import argparse
import difflib
import hashlib
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:          # this checkout's hw/, not an installed one
    sys.path.insert(0, str(REPO))

CONFIGS = ("small", "default")

_SRC_ATTR = re.compile(r'[ \t]*\(\* src = "[^"]*" \*\)[ \t]*\n?')
# Auto-numbered names: Amaranth's ``$N`` wires and ``name$N`` duplicates (escaped identifiers),
# and Yosys-style ``_N_`` wires.
_AUTO_NAMES = (
    ("D", re.compile(r"\$\d+\b")),
    ("U", re.compile(r"\b_\d+_\b")),
)


def normalise(text):
    """``text`` without source attributes, auto-numbered names renumbered canonically."""
    text = _SRC_ATTR.sub("", text)
    for tag, pattern in _AUTO_NAMES:
        seen = {}

        def renumber(match, seen=seen, tag=tag):
            return seen.setdefault(match.group(0), f"<{tag}{len(seen)}>")

        text = pattern.sub(renumber, text)
    return text


def verilog(config_name):
    from amaranth.back import verilog as back
    from hw.tmu import TmuConfig
    from hw.tmu.tmu import Tmu
    if config_name == "small":
        config = TmuConfig.small()
    elif config_name == "default":
        config = TmuConfig()
    else:
        raise ValueError(f"config must be one of {CONFIGS}, not {config_name!r}")
    return back.convert(Tmu(config), name="tmu")


def _sha1(text):
    return hashlib.sha1(text.encode()).hexdigest()


def write(out_dir, configs):
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in configs:
        raw = verilog(name)
        norm = normalise(raw)
        (out / f"{name}.v").write_text(raw)
        (out / f"{name}.norm.v").write_text(norm)
        print(f"{name}: raw sha1 {_sha1(raw)}  normalised sha1 {_sha1(norm)}  "
              f"({len(norm.splitlines())} lines)")


def compare(dir_a, dir_b, configs):
    same = True
    for name in configs:
        a = (pathlib.Path(dir_a) / f"{name}.norm.v").read_text()
        b = (pathlib.Path(dir_b) / f"{name}.norm.v").read_text()
        if a == b:
            print(f"{name}: identical (normalised sha1 {_sha1(a)})")
            continue
        same = False
        print(f"{name}: DIFFERENT")
        diff = difflib.unified_diff(a.splitlines(), b.splitlines(), str(dir_a), str(dir_b),
                                    lineterm="", n=2)
        for i, line in enumerate(diff):
            if i == 60:
                print("... (diff cut)")
                break
            print(line)
    return 0 if same else 1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="write raw and normalised Verilog into DIR")
    w.add_argument("dir")
    c = sub.add_parser("compare", help="compare the normalised Verilog of two DIRs")
    c.add_argument("dir_a")
    c.add_argument("dir_b")
    for p in (w, c):
        p.add_argument("--config", nargs="+", choices=CONFIGS, default=list(CONFIGS),
                       help="configurations (default: both)")
    args = parser.parse_args(argv)
    if args.command == "write":
        write(args.dir, args.config)
        return 0
    return compare(args.dir_a, args.dir_b, args.config)


if __name__ == "__main__":
    sys.exit(main())
