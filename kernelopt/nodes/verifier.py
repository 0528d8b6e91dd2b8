"""verifier: prove a candidate correct in a fresh process, time it, keep it if it is the best."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from langgraph.runtime import Runtime

from kernelopt.context import Context
from kernelopt.harness.problem import source_hash
from kernelopt.harness.timing import Timing, beats
from kernelopt.harness.verify import floor_ms_for
from kernelopt.nodes.common import context_of, emit, verifier_for
from kernelopt.runs import save_best
from kernelopt.state import Attempt, KernelOptState, KernelRecord, Outcome


def floor_time_ms(state: KernelOptState) -> float | None:
    """The problem's floor on the run's GPU, for the impossible-speed rule."""
    baselines = state.get("baselines")
    return floor_ms_for(baselines.floor if baselines else None, state.get("gpu_key") or None)


def verify(state: KernelOptState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Verify the candidate; update best, counters and stop reason; record the attempt."""
    ctx = context_of(runtime)
    round_, repair = state["round"], state["repairs"]
    best: KernelRecord | None = state.get("best")
    path = state.get("candidate_path")
    change = state.get("candidate_change", "")
    if path is None:  # the optimizer produced nothing runnable; its error is the verdict
        attempt = Attempt(round_, repair, "", "", "failed", change, error=state.get("last_error"), rule="bad-reply")
        new_best = None
    else:
        verdict = verifier_for(state, ctx).verify(path, floor_time_ms=floor_time_ms(state))
        digest = source_hash(Path(path).read_text())
        if not verdict.accepted or verdict.timing is None:
            attempt = Attempt(
                round_,
                repair,
                path,
                digest,
                "incorrect" if verdict.rule == "incorrect" else "rejected",
                change,
                error=verdict.reason,
                rule=verdict.rule,
            )
            new_best = None
        else:
            timing = verdict.timing
            faster = best is None or beats(timing, best.timing, ctx.min_gain_pct)
            speedup = best.time_ms / timing.median_ms if best else None
            attempt = Attempt(
                round_,
                repair,
                path,
                digest,
                _outcome(faster, timing, best),
                change,
                time_ms=timing.median_ms,
                speedup_vs_best=speedup,
                new_best=faster,
            )
            new_best = KernelRecord(path, digest, timing, round_) if faster else None
    emit(
        state,
        "verdict",
        round=round_,
        repair=repair,
        outcome=attempt.outcome,
        time_ms=attempt.time_ms,
        error=attempt.error,
        change=change,
    )
    update: dict[str, Any] = {"attempts": [attempt], "candidate_path": None, "repair_next": False}
    if new_best is not None:
        save_best(state["run_dir"], new_best.path)
        update["best"] = new_best
        emit(state, "new_best", round=round_, time_ms=new_best.time_ms, path=new_best.path)
    if attempt.outcome in ("faster", "within_noise", "slower"):
        update.update(last_error=None, repairs=0)
        round_over = True
    else:
        can_repair = repair < ctx.max_repairs and (state.get("uses_llm", False) or round_ > 0)
        update.update(last_error=attempt.error, repairs=repair + 1, repair_next=can_repair)
        round_over = not can_repair
    if round_over and round_ > 0:
        gained = new_best is not None or any(a.new_best for a in state.get("attempts", []) if a.round == round_)
        update["rounds_without_gain"] = 0 if gained else state["rounds_without_gain"] + 1
    if round_over:
        update["stop_reason"] = _stop_reason(state, ctx, update, best or new_best)
    return update


def _outcome(faster: bool, timing: Timing, best: KernelRecord | None) -> Outcome:
    if faster:
        return "faster"
    return "within_noise" if best is not None and timing.median_ms < best.time_ms else "slower"


def _stop_reason(state: KernelOptState, ctx: Context, update: dict[str, Any], best: KernelRecord | None) -> str | None:
    """Why the run ends after this round, or None to go on."""
    if best is None:
        return f"no correct kernel: {update.get('last_error')}"
    if state["round"] >= ctx.max_rounds:
        return "max_rounds"
    if update.get("rounds_without_gain", state["rounds_without_gain"]) >= ctx.patience:
        return "no_gain"
    return None


def route_after_verify(state: KernelOptState) -> Literal["optimizer", "judger", "profile", "__end__"]:
    """Profile a new best (also the last one); stop when a reason is set; repair; else next idea."""
    if state["attempts"] and state["attempts"][-1].new_best:
        return "profile"
    if state.get("stop_reason"):
        return "__end__"
    return "optimizer" if state.get("repair_next") else "judger"
