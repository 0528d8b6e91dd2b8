"""What each node's update tells a person watching the run (the studio shows every update).

LangGraph's `updates` stream shows only the output schema's keys of a node's update: a node
that writes only internal keys (the optimizer's `candidates`) shows as None. So every node's
update also carries `progress`, a small dict saying what the node did, in words and paths.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Command

from kernelopt.context import Context
from kernelopt.records import Attempt, Candidate, KernelRecord
from kernelopt.report.progress import outcome_words, verdict_detail
from kernelopt.runs import released_on_failure
from kernelopt.state import Branch, KernelOptState

Node = Callable[[KernelOptState, Runtime[Context]], Any]  # returns an update, or a Command carrying one
Describe = Callable[[KernelOptState, dict[str, Any]], dict[str, Any]]


def watched(node: Node, describe: Describe, release: bool = True) -> Node:
    """`node`, with `progress` (what `describe` says of its update) added to every update; where it raises, the run's
    reference processes are stopped first (runs.released_on_failure), unless `release` is off: a node that runs in
    parallel branches (the optimizer's, through Send) raises while its siblings may still use them, and one that
    finds its reference gone would start another that nothing stops (a suite stops it after the problem).

    The wrapper keeps the node's signature (functools.wraps): LangGraph reads the edges of a
    node that returns `Command[Literal[...]]` from that annotation, so the studio draws them.
    """

    @functools.wraps(node)
    def run(state: KernelOptState, runtime: Runtime[Context]) -> Any:
        with released_on_failure(state.get("run_dir") if release else None):  # a resume starts them again
            result = node(state, runtime)
        if isinstance(result, Command):
            update = dict(result.update or {})  # type: ignore[call-overload]
            return Command(goto=result.goto, update={**update, "progress": describe(state, update)})
        return {**result, "progress": describe(state, result)}

    return run


def _stop(update: dict[str, Any]) -> dict[str, Any]:
    return {"stop_reason": update["stop_reason"]} if update.get("stop_reason") else {}


def setup(state: KernelOptState, update: dict[str, Any]) -> dict[str, Any]:
    baselines = update.get("baselines")
    return {
        "node": "setup", "run_dir": update.get("run_dir"), "gpu": update.get("gpu_key"),
        "eager_ms": baselines.eager.median_ms if baselines and baselines.eager else None,
        "compile_ms": baselines.compile.median_ms if baselines and baselines.compile else None,
        **_stop(update),
    }


def verdict(attempt: Attempt) -> dict[str, Any]:
    """One verdict as a watcher reads it."""
    words = outcome_words(attempt.outcome, attempt.round)
    return {
        "kernel": attempt.kernel_path or None, "change": attempt.change, "outcome": words,
        "time_ms": attempt.time_ms, "error": verdict_detail(attempt.error, attempt.rule, attempt.outcome) or None,
        **({"duplicate_of": attempt.duplicate_of} if attempt.duplicate_of else {}),
    }


def verification(node: str) -> Describe:
    """The verdicts of a verifier or accept step, the new best taken, and a step handed to accept."""

    def describe(state: KernelOptState, update: dict[str, Any]) -> dict[str, Any]:
        pending = update.get("pending")
        attempts = list(pending.attempts) if pending else update.get("attempts", [])
        best: KernelRecord | None = update.get("best")
        new_best = best is not None and best != state.get("best")
        return {
            "node": node, "round": state.get("round", 0), "verdicts": [verdict(a) for a in attempts],
            "new_best": {"path": best.path, "time_ms": best.time_ms} if new_best and best else None,
            "new_best_to_take": bool(pending), **_stop(update),
        }

    return describe


def review(state: KernelOptState, update: dict[str, Any]) -> dict[str, Any]:
    """What the person let through: the candidates passed on, and those turned down."""
    settled = update.get("settled") or []
    passed = update.get("candidates")
    return {
        "node": "review", "round": state.get("round", 0),
        "asked": passed is not None or bool(settled),
        "rejected": [verdict(attempt) for _, attempt in settled], **_stop(update),
    }


def profile(state: KernelOptState, update: dict[str, Any]) -> dict[str, Any]:
    roof = update.get("roofline")
    return {
        "node": "profile", "bottleneck": roof.bottleneck if roof else None,
        "efficiency_pct": roof.efficiency_pct if roof else None, "at_roofline": bool(roof and roof.at_roofline),
        **_stop(update),
    }


def judger(state: KernelOptState, update: dict[str, Any]) -> dict[str, Any]:
    diagnosis = update.get("diagnosis")
    if diagnosis is None:
        return {"node": "judger", **_stop(update)}
    return {
        "node": "judger", "round": update.get("round"), "category": diagnosis.category,
        "root_cause": diagnosis.root_cause, "fix": diagnosis.recommended_fix, "source": diagnosis.source,
    }


def optimizer(task: Branch, update: dict[str, Any]) -> dict[str, Any]:  # type: ignore[misc]
    written: list[Candidate] = update.get("candidates", [])
    found: dict[str, Any] = {"node": "optimizer", "round": task["round"], "repair": task["repair"]}
    if not written:
        return found
    candidate = written[0]
    return {
        **found, "branch": candidate.branch, "change": candidate.change,
        "path": candidate.path, "kernel": Path(candidate.path).name if candidate.path else None,
        "error": candidate.error, "stop_reason": candidate.stop,
    }
