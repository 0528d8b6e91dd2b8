"""The optimizer's branches: each gets a `Branch` of its own through Send, not the whole state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.types import Send

from kernelopt.nodes.history import HISTORY_SIZE, lessons
from kernelopt.nodes.ideas import idea_for_branch
from kernelopt.nodes.models import branch_model, live_models
from kernelopt.records import Attempt
from kernelopt.state import Branch


def new_round(state: Mapping[str, Any], count: int) -> list[Send]:
    """`count` branches for the round under way, branch i on the i-th idea (setup: one, the first kernel)."""
    best, diagnosis = state.get("best"), state.get("diagnosis")
    return [
        Send("optimizer", _branch(state, i, idea_for_branch(diagnosis, i) if best and diagnosis else None,
                                  best.path if best else None, None, branch_model(state, i)))
        for i in range(count)
    ]


def repairs(state: Mapping[str, Any], first: int) -> list[Send]:
    """One branch per failed candidate of the step (attempts from `first` on), each with its own kernel and error."""
    best, diagnosis = state.get("best"), state.get("diagnosis")
    idea = idea_for_branch(diagnosis, 0) if best and diagnosis else None  # a repair keeps the round's idea
    failed: list[Attempt] = [a for a in state["attempts"][first:] if not a.time_ms]
    return [
        Send("optimizer", _branch(state, n, idea, a.kernel_path or (best.path if best else None), a.error,
                                  branch_model(state, n, a.model)))
        for n, a in enumerate(failed)
    ]


def _branch(
    state: Mapping[str, Any], branch: int, idea: Any, kernel: str | None, error: str | None, model: str | None
) -> Branch:
    attempts: list[Attempt] = state.get("attempts", [])
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
        best=state.get("best"),
        baselines=state.get("baselines"),
        roofline=state.get("roofline"),
        ncu_metrics=state.get("ncu_metrics") or {},
        history=attempts[-HISTORY_SIZE:],
        # the round under way is no lesson yet: its failures are the error to fix
        lessons=lessons(attempts, state["round"]),
        tried=[a.source_hash for a in attempts if a.source_hash],
        tokens=state.get("tokens") or {},
        started_at=state.get("started_at"),
        model=model,
        live_models=live_models(state),
    )
