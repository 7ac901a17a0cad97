"""Compare RTL results with the golden model, token by token."""

from __future__ import annotations

from sw.runtime.golden import run_golden
from sw.runtime.isa import Limits, ProgramError

from tb.programs import Case

MASK64 = (1 << 64) - 1


def expected(case: Case, config):
    """(data tokens, control tokens, fault code, fault address) the golden model gives."""
    try:
        g = run_golden(case.program, case.memory, case.args, limits=Limits.from_tmu_config(config))
    except ProgramError as e:
        return [], [], int(e.code), e.pc
    return list(g.data_tokens), list(g.control_tokens), int(g.fault_code), g.fault_addr & MASK64


def assert_matches(case: Case, result, config):
    """``result`` has ``data_tokens``, ``control_tokens``, ``fault_code``, ``fault_addr``."""
    data, ctrl, code, addr = expected(case, config)
    got = (int(result.fault_code), int(result.fault_addr) & MASK64)
    assert got == (code, addr), f"{case.name}: fault (code, addr) {got} != golden {(code, addr)}"
    for kind, exp, act in (("data", data, result.data_tokens), ("control", ctrl, result.control_tokens)):
        if list(act) != exp:
            n = next((i for i, (x, y) in enumerate(zip(act, exp)) if x != y), min(len(act), len(exp)))
            raise AssertionError(
                f"{case.name}: {kind} tokens differ at #{n} (rtl {len(act)}, golden {len(exp)} tokens): "
                f"rtl {list(act[n:n + 4])} golden {exp[n:n + 4]}")
