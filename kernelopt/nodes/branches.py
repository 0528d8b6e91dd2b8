"""The optimizer's branches: each gets a `Branch` of its own through Send, not the whole state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import Send

from kernelopt.nodes.beam import spread
from kernelopt.nodes.history import HISTORY_SIZE, lessons
from kernelopt.nodes.ideas import idea_for_branch
from kernelopt.nodes.models import branch_model, live_models
from kernelopt.records import REFUSED, Attempt, JudgedParent
from kernelopt.state import Branch


def new_round(state: Mapping[str, Any], count: int) -> list[Send]:
    """`count` branches for the round under way, branch i on the i-th idea (setup: one, the first kernel).

    With a beam (the judger's `judged` parents) the branches are spread over the parents, at
    least one each, each on its own parent's ideas.
    """
    judged: list[JudgedParent] = state.get("judged") or []
    if judged:
        return [
            Send("optimizer", _branch(state, i, idea_for_branch(judged[p].diagnosis, n), judged[p].record.path,
                                      None, branch_model(state, i), judged[p]))
            for i, (p, n) in enumerate(spread(count, len(judged)))
        ]
    best, diagnosis = state.get("best"), state.get("diagnosis")
    return [
        Send("optimizer", _branch(state, i, idea_for_branch(diagnosis, i) if best and diagnosis else None,
                                  best.path if best else None, None, branch_model(state, i)))
        for i in range(count)
    ]


def repairs(state: Mapping[str, Any], first: int) -> list[Send]:
    """One branch per failed candidate of the step (attempts from `first` on), each with its own kernel
    and error; with a beam, each on its own parent's idea."""
    best, diagnosis = state.get("best"), state.get("diagnosis")
    idea = idea_for_branch(diagnosis, 0) if best and diagnosis else None  # a repair keeps the round's idea
    judged = {j.record.path: j for j in state.get("judged") or []}
    attempts: list[Attempt] = state["attempts"]
    written_from = {a.kernel_path: a.parent for a in attempts if a.kernel_path}
    failed = [a for a in attempts[first:] if not a.time_ms]
    sends = []
    for n, a in enumerate(failed):
        parent = judged.get(_ancestor(a.parent, judged, written_from))
        kernel = a.kernel_path or (parent.record.path if parent else best.path if best else None)
        own = idea_for_branch(parent.diagnosis, 0) if parent else idea
        model = branch_model(state, n, a.model)
        sends.append(Send("optimizer", _branch(state, n, own, kernel, a.error, model, parent)))
    return sends


def _ancestor(path: str, parents: Mapping[str, JudgedParent], written_from: Mapping[str, str]) -> str:
    """The parent a kernel descends from: up from a failed repair to the kernel of the round's start."""
    seen = set()
    while path not in parents and path in written_from and path not in seen:
        seen.add(path)
        path = written_from[path]
    return path


def _branch(
    state: Mapping[str, Any], branch: int, idea: Any, kernel: str | None, error: str | None,
    model: str | None, parent: JudgedParent | None = None,
) -> Branch:
    """A branch's task; a beam's branch sees its parent's roofline (NCU's metrics only for the best's).

    The kernel it rewrites (`kernel`) becomes its candidate's parent: a repair's is the failed kernel.
    """
    attempts: list[Attempt] = state.get("attempts", [])
    best = state.get("best")
    own = parent is not None and (best is None or parent.record.source_hash != best.source_hash)
    return Branch(
        round=state["round"],
        repair=state["repairs"],
        branch=branch,
        idea=idea,
        kernel_path=kernel,
        error=error,
        run_dir=state["run_dir"],
        problem_file=state["problem_file"],
        gpu_key=state["gpu_key"],
        best=best,
        baselines=state.get("baselines"),
        roofline=parent.roofline if parent and own else state.get("roofline"),
        ncu_metrics={} if own else state.get("ncu_metrics") or {},
        history=attempts[-HISTORY_SIZE:],
        # the round under way is no lesson yet: its failures are the error to fix
        lessons=lessons(attempts, state["round"]),
        tried=[a.source_hash for a in attempts if a.source_hash],
        failed=[a.source_hash for a in attempts if a.source_hash and a.outcome in REFUSED],
        tokens=state.get("tokens") or {},
        started_at=state.get("started_at"),
        model=model,
        live_models=live_models(state),
    )
