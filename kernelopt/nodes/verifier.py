"""verifier: prove each candidate correct in a fresh process, time it, keep the best.

The verifier is the join of the optimizer's branches: it takes every candidate written this
step, one at a time (measurements on one device never overlap), and decides what happens next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from kernelopt.context import Context
from kernelopt.harness.measure.timing import Timing, beats
from kernelopt.harness.problem import source_hash
from kernelopt.harness.verify import Verifier, floor_ms_for
from kernelopt.nodes.approval import (
    ACCEPT_REPLIES,
    REJECTED_RULE,
    STARTING_KERNEL,
    accept_payload,
    ask,
    rejection_error,
    review,
)
from kernelopt.nodes.branches import repairs
from kernelopt.nodes.common import after, context_of, emit, verifier_for
from kernelopt.nodes.stop import Step, should_stop
from kernelopt.runs import save_best
from kernelopt.state import Attempt, Candidate, KernelOptState, KernelRecord, Outcome, PendingBest


def floor_time_ms(state: KernelOptState) -> float | None:
    """The problem's floor on the run's GPU, for the impossible-speed rule."""
    baselines = state.get("baselines")
    return floor_ms_for(baselines.floor if baselines else None, state.get("gpu_key") or None)


def _outcome(faster: bool, timing: Timing, best: KernelRecord | None) -> Outcome:
    if faster:
        return "faster"
    return "within_noise" if best is not None and timing.median_ms < best.time_ms else "slower"


# A candidate running longer than this is reported as running, and again every REPORT_EVERY_S.
REPORT_AFTER_S = 10.0
REPORT_EVERY_S = 5.0


def _report_long_runs(state: KernelOptState, path: str) -> Callable[[str, float], None]:
    """A progress callback for the verifier that tells watchers a candidate is running long."""
    next_report_s = REPORT_AFTER_S

    def report(phase: str, elapsed_s: float) -> None:
        nonlocal next_report_s
        if elapsed_s >= next_report_s:
            next_report_s = elapsed_s + REPORT_EVERY_S
            emit(state, "candidate_running", path=path, phase=phase, elapsed_s=round(elapsed_s, 1))

    return report


def _judge(
    candidate: Candidate,
    state: KernelOptState,
    ctx: Context,
    verifier: Verifier,
    best: KernelRecord | None,
    seen: set[str],
) -> tuple[Attempt, KernelRecord | None]:
    """The attempt for one candidate, and the new best when it is one."""
    round_, repair = state["round"], state["repairs"]
    if candidate.path is None:  # the optimizer's reply held nothing runnable: its error is the verdict
        return Attempt(
            round_, repair, "", "", "failed", candidate.change, error=candidate.error, rule="bad-reply"
        ), None
    digest = source_hash(Path(candidate.path).read_text())
    if digest in seen:
        error = "the same kernel as another candidate of this step (after normalising); make a different change"
        return Attempt(
            round_, repair, candidate.path, digest, "failed", candidate.change, error=error, rule="duplicate"
        ), None
    seen.add(digest)
    verdict = verifier.verify(
        candidate.path, floor_time_ms=floor_time_ms(state), on_progress=_report_long_runs(state, candidate.path)
    )
    if not verdict.accepted or verdict.timing is None:
        outcome: Outcome = "incorrect" if verdict.rule == "incorrect" else "rejected"
        return Attempt(
            round_, repair, candidate.path, digest, outcome, candidate.change, error=verdict.reason, rule=verdict.rule
        ), None
    timing = verdict.timing
    faster = best is None or beats(timing, best.timing, ctx.min_gain_pct)
    attempt = Attempt(
        round_,
        repair,
        candidate.path,
        digest,
        _outcome(faster, timing, best),
        candidate.change,
        time_ms=timing.median_ms,
        speedup_vs_best=best.time_ms / timing.median_ms if best else None,
        new_best=faster,
    )
    return attempt, KernelRecord(candidate.path, digest, timing, round_) if faster else None


Route = Literal["accept", "optimizer", "judger", "profile", "report"]


def verify(state: KernelOptState, runtime: Runtime[Context]) -> Command[Route]:
    """Verify this step's candidates; update the best, counters and stop reason; record attempts;
    then go on: profile a new best, stop, repair the failed candidates, or ask for the next idea.

    With Context.approve the person is asked about every candidate first (all questions before
    any verification: a resumed verifier repeats only the questions, never a verification), and
    a new best over an existing one is not taken here: the verdicts wait in `pending` for the
    accept node, which asks before it records them.
    """
    ctx = context_of(runtime)
    batch: list[Candidate] = state.get("candidates") or []
    stops = [c.stop for c in batch if c.stop]
    real = [c for c in batch if not c.stop]
    update: dict[str, Any] = {"candidates": Overwrite([])}
    if not real:
        reason = should_stop(state, ctx, Step(halts=tuple(stops), wrote=False))
        return Command(goto="report", update={**update, "stop_reason": reason})
    old_best: KernelRecord | None = state.get("best")
    best = old_best
    round_, repair = state["round"], state["repairs"]
    seen = {a.source_hash for a in state.get("attempts", []) if a.source_hash}
    if ctx.approve:
        reviewed = review(real, round_, repair, best, skip=_not_asked(real, state, seen))
        for candidate, reply in reviewed:  # after the last question: once per step, however often resumed
            if reply is not None:
                emit(state, "review", round=round_, repair=repair, branch=candidate.branch, action=reply["action"],
                     change=candidate.change, path=candidate.path, reason=reply.get("reason"))
    else:
        reviewed = [(c, None) for c in real]
    verifier = verifier_for(state, ctx)
    live = not ctx.approve  # report each verdict as it comes; with approval once the step's best is settled
    attempts: list[Attempt] = []
    records: list[KernelRecord | None] = []
    for candidate, reply in reviewed:
        if reply is not None and reply["action"] == "reject":
            attempt, new_best = _rejected(candidate, round_, repair, reply, seen), None
        else:
            attempt, new_best = _judge(candidate, state, ctx, verifier, best, seen)
        attempts.append(attempt)
        records.append(new_best)
        best = new_best or best
        if live:
            _report(state, attempt, candidate.branch, new_best)
    branches = [c.branch for c, _ in reviewed]
    proposed = max((i for i, r in enumerate(records) if r is not None), default=None)
    if ctx.approve and old_best is not None and proposed is not None and best is not None:
        attempts = _demoted(attempts, proposed)
        for attempt, branch in zip(attempts, branches, strict=True):
            _report(state, attempt, branch, None)
        pending = PendingBest(tuple(attempts), proposed, best, tuple(stops), branches[proposed])
        return Command(goto="accept", update={**update, "pending": pending})
    if not live:
        for attempt, branch, record in zip(attempts, branches, records, strict=True):
            _report(state, attempt, branch, record)
    return conclude(state, ctx, attempts, best, stops, update)


def _not_asked(candidates: list[Candidate], state: KernelOptState, seen: set[str]) -> set[int]:
    """Candidates the person is not asked about: the starting kernel (their own), and repeats of
    a kernel already tried (the verifier turns those down by itself)."""
    skip, hashes = set(), set(seen)
    for i, candidate in enumerate(candidates):
        if candidate.path is None:
            continue
        if state["round"] == 0 and candidate.change == STARTING_KERNEL:
            skip.add(i)
            continue
        digest = source_hash(Path(candidate.path).read_text())
        if digest in hashes:
            skip.add(i)
        hashes.add(digest)
    return skip


def _rejected(candidate: Candidate, round_: int, repair: int, reply: dict[str, Any], seen: set[str]) -> Attempt:
    """The attempt for a candidate the person turned down: a failure, the reason its error."""
    assert candidate.path is not None
    digest = source_hash(Path(candidate.path).read_text())
    seen.add(digest)
    return Attempt(
        round_, repair, candidate.path, digest, "failed", candidate.change,
        error=rejection_error(reply), rule=REJECTED_RULE,
    )


def _demoted(attempts: list[Attempt], proposed: int) -> list[Attempt]:
    """One new best per step awaits approval: earlier bests of the step, beaten by the proposed
    kernel, become plain verdicts against it."""
    target = attempts[proposed].time_ms
    assert target is not None
    return [
        a if i == proposed or not a.new_best or a.time_ms is None
        else replace(a, new_best=False, outcome="within_noise" if a.time_ms < target else "slower")
        for i, a in enumerate(attempts)
    ]


def _report(state: KernelOptState, attempt: Attempt, branch: int, new_best: KernelRecord | None) -> None:
    """The verdict event, and for a new best: best_kernel.py and the new_best event."""
    emit(
        state,
        "verdict",
        round=attempt.round,
        repair=attempt.repair,
        branch=branch,
        outcome=attempt.outcome,
        time_ms=attempt.time_ms,
        error=attempt.error,
        change=attempt.change,
    )
    if new_best is not None:
        save_best(state["run_dir"], new_best.path)
        emit(state, "new_best", round=attempt.round, time_ms=new_best.time_ms, path=new_best.path)


def conclude(
    state: KernelOptState,
    ctx: Context,
    attempts: list[Attempt],
    best: KernelRecord | None,
    stops: list[str],
    update: dict[str, Any] | None = None,
) -> Command[Route]:
    """A verified step's update (its attempts, the best, counters and stop reason) and where the run goes."""
    update = {**(update or {}), "attempts": attempts, "best": best}
    passed = [a for a in attempts if a.time_ms is not None]  # correct and timed (a new best or not)
    round_, repair = state["round"], state["repairs"]
    if passed:
        update.update(last_error=None, repairs=0)
        can_repair = False
    else:
        can_repair = repair < ctx.max_repairs and (state.get("uses_llm", False) or round_ > 0)
        update.update(last_error=attempts[0].error, repairs=repair + 1)
    round_over = not can_repair
    gained = any(a.new_best for a in attempts) or any(
        a.new_best for a in state.get("attempts", []) if a.round == round_
    )
    if round_over and round_ > 0:
        update["rounds_without_gain"] = 0 if gained else state["rounds_without_gain"] + 1
    reason = should_stop(after(state, update), ctx, Step(halts=tuple(stops), round_over=round_over))
    if reason:
        update["stop_reason"] = reason
    if any(a.new_best for a in attempts):  # profile a new best, also the last one
        return Command(goto="profile", update=update)
    if reason:
        return Command(goto="report", update=update)
    if can_repair:
        return Command(goto=repairs(after(state, update), len(state.get("attempts", []))), update=update)
    return Command(goto="judger", update=update)


def accept(
    state: KernelOptState, runtime: Runtime[Context]
) -> Command[Literal["optimizer", "judger", "profile", "report"]]:
    """Ask the person whether the step's new best is taken (Context.approve), then record the step.

    The verdicts were stored in `pending` by the verifier before this node asks, so answering
    (or resuming a stopped run here) never repeats a verification.
    """
    pending: PendingBest | None = state.get("pending")
    assert pending is not None, "the verifier routes here only with a new best awaiting approval"
    ctx = context_of(runtime)
    attempts = list(pending.attempts)
    proposed, old = attempts[pending.index], state["best"]
    assert old is not None, "only a new best over an existing one waits for approval"
    reply = ask(accept_payload(proposed.round, proposed.change, pending.branch, pending.best, old), ACCEPT_REPLIES)
    if reply["action"] == "approve":
        best = pending.best
        save_best(state["run_dir"], best.path)
        emit(state, "new_best", round=proposed.round, time_ms=best.time_ms, path=best.path)
    else:
        best, error = old, rejection_error(reply)
        attempts[pending.index] = replace(proposed, outcome="rejected", rule=REJECTED_RULE, error=error, new_best=False)
        emit(state, "best_rejected", round=proposed.round, time_ms=proposed.time_ms, error=error)
    return conclude(state, ctx, attempts, best, list(pending.stops), {"pending": None})
