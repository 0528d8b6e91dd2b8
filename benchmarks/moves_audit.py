"""The offline optimizer's structural moves on problems nobody wrote them for, on a machine without a GPU.

Each problem is shrunk as seed_audit.py does (kernelbench/shrink.py, then --tiny or --even). The moves that apply to
the shrunk copy (`structural_moves`: the templates its family reader picks for its shapes), and, where the shrink
left the constructor's inputs as they were, those that apply at the problem's own size (split-K, persistent programs:
a move both take as the own size writes it; a template takes the constructor's values, such as a convolution's
groups, so one written for other values is no test) are each written at the first knob setting
their grid would try and run on the shrunk copy through kernelopt's verifier under Triton's interpreter (one seed,
every derived case, no timing): a template must compute the reference at any size, as the verifier's other-size
cases already demand. A move the family reader offers that the verifier then refuses is a fault: the
reader took the problem for something it is not, or the template is wrong at a shape nobody tested. On a GPU such a
move costs a verification and yields nothing; here it costs no device time.

    TRITON_INTERPRET=1 python benchmarks/moves_audit.py PROBLEM_OR_DIR [...] [--timeout 600] [--jobs 2] [--tiny]
                                                        [--only TEXT (the moves whose name holds it)]

One line a problem: its family, then `ok N/N` or the moves refused with the verifier's first line (`refused`); a
move past the limit is `slow` (the interpreter's pace, not a verdict), a problem no template applies to says so
(`none`), and one that failed before any verification says where (`shrink`, `moves`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import seed_audit  # noqa: E402

PHASE_LIMIT_S = 240.0
SLOW = "slow under the interpreter: "


def audit_one(problem: Path, folder: Path, tiny: bool = False, even: bool = False, only: str = "") -> dict[str, Any]:
    """One problem's moves (those whose name holds `only`): its stage (ok, refused, none, shrink, moves), family, and
    each move's verdict."""
    from kernelopt.harness.verify import HarnessSettings, Verifier
    from kernelopt.offline.moves import structural_moves
    from kernelopt.offline.tuner import with_config

    try:
        small = seed_audit.shrunk_copy(problem, folder, tiny, even)
    except Exception as err:  # noqa: BLE001  (any failure is the verdict)
        return {"stage": "shrink", "error": f"{type(err).__name__}: {str(err).strip()[:240]}"}
    try:  # the moves at the problem's own size (split-K, persistent programs, ...), then those only the copy takes
        full, found = structural_moves(problem), structural_moves(small)
    except Exception as err:  # noqa: BLE001
        return {"stage": "moves", "error": f"{type(err).__name__}: {str(err).strip()[:240]}"}
    if found.family is None and full.family is not None:  # a size the reference itself refuses (a kernel past it)
        return {"stage": "shrink", "error": "the shrunk copy's reference does not trace (its sizes too small?)"}
    family = found.family.name if found.family else "none"
    offered = {m.name: m for m in found.instances}
    if _init_inputs(problem) == _init_inputs(small):  # a template takes the constructor's values (a conv's groups)
        offered |= {m.name: m for m in full.instances}
    offered = {name: m for name, m in offered.items() if only in name}
    if not offered:
        return {"stage": "none", "family": family, "moves": {}}
    # one limit for each phase: the limits that follow the reference's time are a GPU's, not the interpreter's
    settings = HarnessSettings.detect(seeds=1, time_compile=False, timeout_s=PHASE_LIMIT_S)
    verdicts: dict[str, str] = {}
    for number, move in enumerate(offered.values()):
        kernel = folder / f"move_{number}.py"
        kernel.write_text(with_config(move.source, move.grid[0]) if move.grid else move.source)
        try:
            verdict = Verifier(small, folder / f"harness_{number}", settings).verify(kernel, time=False)
            why = "ok" if verdict.accepted else (verdict.reason or verdict.rule or "").splitlines()[0]
            # past the limit: the interpreter's pace (a scan it runs value by value), the audit's limit, not a fault
            verdicts[move.name] = f"{SLOW}{why}" if verdict.rule == "timeout" else why
        except Exception as err:  # noqa: BLE001  (the harness's own failure: reported, the rest still run)
            verdicts[move.name] = f"harness: {type(err).__name__}: {str(err).strip()[:200]}"
    refused = {name: why for name, why in verdicts.items() if why != "ok" and not why.startswith(SLOW)}
    slow = {name: why for name, why in verdicts.items() if why.startswith(SLOW)}
    return {"stage": "refused" if refused else "slow" if slow else "ok", "family": family, "moves": verdicts,
            "error": "; ".join(f"{name}: {why[:160]}" for name, why in (refused or slow).items())}


def _init_inputs(problem: Path) -> Any:
    from kernelopt.harness.problem import import_file

    try:
        return repr(import_file(problem, f"audited_init_{abs(hash(str(problem)))}").get_init_inputs())
    except Exception as err:  # noqa: BLE001  (unequal to any other: the moves at its own size only)
        return f"{problem}: {err}"


def _line(verdict: dict[str, Any]) -> str:
    moves = verdict.get("moves") or {}
    passed = sum(why == "ok" for why in moves.values())
    count = f"{passed}/{len(moves)}" if moves else ""
    return f"{verdict.get('family', ''):12s} {verdict['stage']:8s} {count:6s} {verdict.get('error', '')}"


def main(argv: list[str] | None = None) -> int:
    parsed = seed_audit.audit_parser(__doc__ or "").parse_args(argv)
    if parsed.one:  # the child: one problem, its verdict as the last line
        verdict = audit_one(Path(parsed.problems[0]), Path(parsed.problems[1]), parsed.tiny, parsed.even, parsed.only)
        print(json.dumps(verdict), flush=True)
        return 0
    return seed_audit.drive(parsed, __file__, _line)


if __name__ == "__main__":
    sys.exit(main())
