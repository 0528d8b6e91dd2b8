"""A verified step's end, shared by the nodes that finish one (review, verifier, accept): its
events, and where the run goes next with the step's attempts, best, counters and stop reason."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.types import Command

from kernelopt.context import Context
from kernelopt.events import NewBest, VerdictGiven
from kernelopt.nodes.beam import entered, parents, widened, width
from kernelopt.nodes.branches import repairs
from kernelopt.nodes.common import after, emit
from kernelopt.nodes.models import drop_failing
from kernelopt.nodes.stop import Step, should_stop
from kernelopt.nodes.tune import moves_can_replace_start
from kernelopt.records import Attempt, KernelRecord
from kernelopt.runs import save_best
from kernelopt.state import KernelOptState

Route = Literal["optimizer", "judger", "profile", "report"]


def report_verdict(state: KernelOptState, attempt: Attempt, branch: int) -> None:
    """The verdict event of one attempt."""
    emit(state, VerdictGiven(round=attempt.round, repair=attempt.repair, branch=branch, outcome=attempt.outcome,
                             time_ms=attempt.time_ms, error=attempt.error, change=attempt.change, where=attempt.where,
                             duplicate_of=attempt.duplicate_of, model=attempt.model or None))


def take_best(state: KernelOptState, attempt: Attempt, best: KernelRecord) -> None:
    """A new best taken: best_kernel.py, and the new_best event."""
    save_best(state["run_dir"], best.path)
    emit(state, NewBest(round=attempt.round, time_ms=best.time_ms, path=best.path))


def conclude(
    state: KernelOptState,
    ctx: Context,
    attempts: list[Attempt],
    best: KernelRecord | None,
    stops: list[str],
    update: dict[str, Any] | None = None,
    entrants: tuple[KernelRecord, ...] = (),
) -> Command[Route]:
    """A verified step's update (its attempts, the best, counters and stop reason) and where the run goes.

    `entrants` are the step's kernels timed on the run's GPU: with a beam, those among the K best
    distinct kernels become parents. A beam's round goes on while a failed branch has repairs
    left, whatever its siblings did; a chain's ends once a candidate passes.
    """
    update = {**(update or {}), "attempts": attempts, "best": best}
    k = width(state, ctx)
    round_, repair = state["round"], state["repairs"]
    failed = [a for a in attempts if a.time_ms is None]
    passed = len(failed) < len(attempts)  # correct and timed (a new best or not)
    if passed and k == 1:
        update.update(last_error=None, repairs=0)
        can_repair = False
    else:
        can_repair = bool(failed) and repair < ctx.max_repairs and (
            state.get("uses_llm", False) or round_ > 0
            or moves_can_replace_start(state, ctx, [*state.get("attempts", []), *attempts])
        )
        update.update(last_error=failed[0].error if failed else None, repairs=repair + 1)
    round_over = not can_repair
    earlier = [a for a in state.get("attempts", []) if a.round == round_]
    gained = any(a.new_best for a in [*attempts, *earlier])
    if k > 1:
        accepted = {a.source_hash for a in attempts if a.outcome != "rejected"}
        update["beam"] = widened(parents(state), [r for r in entrants if r.source_hash in accepted], best, k)
        gained = gained or entered(update["beam"], [*attempts, *earlier])
    if round_over and round_ > 0:
        update["rounds_without_gain"] = 0 if gained else state["rounds_without_gain"] + 1
    update |= drop_failing(after(state, update), ctx)  # several models: those that keep failing leave the run
    reason = should_stop(after(state, update), ctx, Step(halts=tuple(stops), round_over=round_over))
    if reason:
        update["stop_reason"] = reason
    if (round_over or reason) and any(a.new_best for a in [*attempts, *earlier]):  # profile a new best, also the last
        return Command(goto="profile", update=update)
    if reason:
        return Command(goto="report", update=update)
    if can_repair:
        return Command(goto=repairs(after(state, update), len(state.get("attempts", []))), update=update)
    return Command(goto="judger", update=update)
