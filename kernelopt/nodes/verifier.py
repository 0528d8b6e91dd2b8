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
from langgraph.types import Overwrite, Send

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
from kernelopt.nodes.common import context_of, emit, verifier_for
from kernelopt.runs import save_best
from kernelopt.state import Attempt, Candidate, KernelOptState, KernelRecord, Outcome, PendingBest

# Stops that end the run even when other branches wrote candidates (the LLM is down, a budget
# is spent); "nothing left to try" ends it only when no branch wrote anything.
SEARCH_EXHAUSTED = "search_exhausted"


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


def verify(state: KernelOptState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Verify this step's candidates; update the best, counters and stop reason; record attempts.

    With Context.approve the person is asked about every candidate first (all questions before
    any verification: a resumed verifier repeats only the questions, never a verification), and
    a new best over an existing one is not taken here: the verdicts wait in `pending` for the
    accept node, which asks before it records them.
    """
    ctx = context_of(runtime)
    batch: list[Candidate] = state.get("candidates") or []
    stops = [c.stop for c in batch if c.stop]
    real = [c for c in batch if not c.stop]
    update: dict[str, Any] = {"candidates": Overwrite([]), "repair_next": False}
    if not real:
        update.update(stop_reason=stops[0] if stops else "no candidate was written", last_batch=0)
        return update
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
        return {**update, "pending": pending}
    if not live:
        for attempt, branch, record in zip(attempts, branches, records, strict=True):
            _report(state, attempt, branch, record)
    update.update(conclude(state, ctx, attempts, best, stops))
    return update


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
    state: KernelOptState, ctx: Context, attempts: list[Attempt], best: KernelRecord | None, stops: list[str]
) -> dict[str, Any]:
    """The state update of a verified step: its attempts, the best, counters and stop reason."""
    update: dict[str, Any] = {"attempts": attempts, "best": best, "last_batch": len(attempts), "repair_next": False}
    passed = [a for a in attempts if a.time_ms is not None]  # correct and timed (a new best or not)
    round_, repair = state["round"], state["repairs"]
    if passed:
        update.update(last_error=None, repairs=0)
        round_over = True
    else:
        can_repair = repair < ctx.max_repairs and (state.get("uses_llm", False) or round_ > 0)
        update.update(last_error=attempts[0].error, repairs=repair + 1, repair_next=can_repair)
        round_over = not can_repair
    gained = any(a.new_best for a in attempts) or any(
        a.new_best for a in state.get("attempts", []) if a.round == round_
    )
    if round_over and round_ > 0:
        update["rounds_without_gain"] = 0 if gained else state["rounds_without_gain"] + 1
    fatal = [s for s in stops if not s.startswith(SEARCH_EXHAUSTED)]
    if fatal:
        update["stop_reason"] = fatal[0]
    elif round_over:
        update["stop_reason"] = _stop_reason(state, ctx, update, best)
    return update


def accept(state: KernelOptState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Ask the person whether the step's new best is taken (Context.approve), then record the step.

    The verdicts were stored in `pending` by the verifier before this node asks, so answering
    (or resuming a stopped run here) never repeats a verification.
    """
    pending: PendingBest | None = state.get("pending")
    if pending is None:
        return {}
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
    return {"pending": None, **conclude(state, ctx, attempts, best, list(pending.stops))}


def _stop_reason(state: KernelOptState, ctx: Context, update: dict[str, Any], best: KernelRecord | None) -> str | None:
    """Why the run ends after this round, or None to go on."""
    if best is None:
        return f"no correct kernel: {update.get('last_error')}"
    if state["round"] >= ctx.max_rounds:
        return "max_rounds"
    if update.get("rounds_without_gain", state["rounds_without_gain"]) >= ctx.patience:
        return "no_gain"
    return None


def _last_step(state: KernelOptState) -> list[tuple[int, Attempt]]:
    attempts = state["attempts"]
    first = len(attempts) - state.get("last_batch", 0)
    return [(i, attempts[i]) for i in range(first, len(attempts))]


def repair_tasks(state: KernelOptState) -> list[Send]:
    """One optimizer branch per failed candidate of the last step, each with its own error."""
    failed = [i for i, attempt in _last_step(state) if not attempt.time_ms]
    return [Send("optimizer", {**state, "task": {"repair_of": i, "branch": n}}) for n, i in enumerate(failed)]


def route_after_verify(state: KernelOptState) -> list[Send] | Literal["accept", "judger", "profile", "__end__"]:
    """Ask about a new best that awaits approval; else as after the accept node."""
    if state.get("pending"):
        return "accept"
    return route_after_accept(state)


def route_after_accept(state: KernelOptState) -> list[Send] | Literal["judger", "profile", "__end__"]:
    """Profile a new best (also the last one); stop when a reason is set; repair; else the next idea."""
    if any(attempt.new_best for _, attempt in _last_step(state)):
        return "profile"
    if state.get("stop_reason"):
        return "__end__"
    return repair_tasks(state) if state.get("repair_next") else "judger"
