"""The structural moves worked out in a child of the run's warm fork server, not in the run's own process.

Reading a problem's family runs the user's reference on the meta device: it needs torch and `torch._dynamo` (about
6 s of a 2-core host's CPU to import in a run's process) and runs the user's code. As a service job of the harness
(harness/sandbox/service.py) both are already imported in the fork server, a hang or crash of the reference is the
child's, under the runner's watchdog, and the run's process imports neither. The child answers with plain values
(`moves_json`); the run's process rebuilds a `Moves` whose family is a `FamilyTag` (its name and dtype: all the graph
reads of it). A problem's moves for one best kernel are worked out once per process (`_CACHE`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelopt.harness import run_service_job
from kernelopt.harness.problem import source_hash
from kernelopt.offline.moves import L2_MB, SM_COUNT, FamilyTag, MoveInstance, Moves, Skipped

if TYPE_CHECKING:
    from kernelopt.harness.verify import Verifier

ENTRY = "kernelopt.offline.moves.remote:run_moves"
# The child's time in any phase: tracing a reference on the meta device and checking its family's formula on a small
# input took under 10 s for every KernelBench level-1 problem on a 2-core host; the rest is the templates' text.
MOVES_LIMIT_S = 300.0
CACHED = 64  # moves kept per process (a run asks again each round, and a beam's branches each)


_CACHE: OrderedDict[tuple[Any, ...], Moves] = OrderedDict()
_LOCK = threading.Lock()


def moves_in_child(verifier: Verifier, problem_path: str | Path, sm_count: int = SM_COUNT, source: str | None = None,
                   capability: str = "9.0", l2_mb: float = L2_MB) -> Moves:
    """`structural_moves` (offline/moves/__init__.py) with the same arguments, worked out in a forked child. A child
    that fails (killed past its limit, crashed) gives no family and one `Skipped("all", why)`, as a reference that
    cannot be traced does."""
    problem = Path(problem_path)
    key = (source_hash(problem.read_text()), str(problem), sm_count, source_hash(source) if source else None,
           capability, l2_mb)
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    request = {"problem_path": str(problem.resolve()), "sm_count": sm_count, "source": source,
               "capability": capability, "l2_mb": l2_mb}
    answer, failure = run_service_job(verifier, ENTRY, request, MOVES_LIMIT_S, "moves")
    moves = moves_from_json(answer) if answer is not None else \
        Moves(None, (), (Skipped("all", f"the moves' own process failed: {failure}"),))  # not asked again
    with _LOCK:
        _CACHE[key] = moves
        while len(_CACHE) > CACHED:
            _CACHE.popitem(last=False)
    return moves


def family_in_child(verifier: Verifier, problem_path: str | Path) -> tuple[str, str]:
    """The problem's family name ("other" when none is recognised or the child failed) and its first input's dtype
    ("" when unknown): from moves this process already has for the problem (on any GPU: the family is the
    reference's), else from its moves worked out now."""
    key = (source_hash(Path(problem_path).read_text()), str(Path(problem_path)))
    with _LOCK:
        known = next((m for k, m in _CACHE.items() if k[:2] == key), None)
    family = (known or moves_in_child(verifier, problem_path)).family
    return (family.name, family.dtype) if family else ("other", "")


# ── the child's side ──────────────────────────────────────────────────────────────────────────────────────────────


def run_moves(request: dict[str, Any]) -> dict[str, Any]:
    """The job: the moves as plain values."""
    from kernelopt.offline.moves import structural_moves

    moves = structural_moves(request["problem_path"], request["sm_count"], request["source"],
                             request["capability"], request["l2_mb"])
    return {"ok": True, **moves_json(moves)}


def moves_json(moves: Moves) -> dict[str, Any]:
    family = moves.family
    return {
        "family": {"name": family.name, "dtype": family.dtype} if family is not None else None,
        "instances": [{"name": m.name, "why": m.why, "source": m.source, "grid": list(m.grid)}
                      for m in moves.instances],
        "skipped": [{"name": s.name, "why": s.why} for s in moves.skipped],
        "rewrites": sorted(moves.rewrites),
    }


def moves_from_json(data: dict[str, Any]) -> Moves:
    family = data["family"]
    return Moves(
        FamilyTag(family["name"], family["dtype"]) if family else None,
        tuple(MoveInstance(m["name"], m["why"], m["source"], tuple(m["grid"])) for m in data["instances"]),
        tuple(Skipped(s["name"], s["why"]) for s in data["skipped"]),
        frozenset(data["rewrites"]),
    )
