"""The two steps around the verifier that a person can take part in (Context.approve).

- review (before the verifier): asks about every candidate of the step ("try"), applies the
  replies (an edited candidate replaces its file; a rejected one becomes a settled attempt and
  is not verified), then hands the rest to the verifier. Without approval it only passes on.
- accept (after the verifier, for a step with a new best): takes the new best; under approval a
  new best over an existing one is taken only once the person says yes ("accept").

Both may be resumed: a node that called interrupt() runs again from its start and gets the
stored replies back by order, so each asks all its questions before any side effect.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from kernelopt.context import Context
from kernelopt.harness.problem import source_hash
from kernelopt.nodes.approval import (
    ACCEPT_REPLIES,
    REJECTED_RULE,
    STARTING_KERNEL,
    accept_payload,
    ask,
    rejection_error,
    review,
)
from kernelopt.nodes.beam import parent_of
from kernelopt.nodes.common import context_of, emit
from kernelopt.nodes.memory import remember_gain
from kernelopt.nodes.step import conclude, report_verdict, take_best
from kernelopt.records import Attempt, Candidate, KernelRecord, PendingBest
from kernelopt.state import KernelOptState


def review_step(
    state: KernelOptState, runtime: Runtime[Context]
) -> Command[Literal["verifier", "optimizer", "judger", "report"]]:
    """Ask about each candidate before it is verified (Context.approve); pass the rest on."""
    ctx = context_of(runtime)
    batch: list[Candidate] = state.get("candidates") or []
    real = [c for c in batch if not c.stop]
    if not ctx.approve or not real:
        return Command(goto="verifier")
    round_, repair = state["round"], state["repairs"]
    seen = {a.source_hash for a in state.get("attempts", []) if a.source_hash}
    reviewed = review(real, round_, repair, state.get("best"), skip=_not_asked(real, state, seen))
    kept: list[Candidate] = [c for c in batch if c.stop]
    settled: list[tuple[int, Attempt]] = []
    for candidate, reply in reviewed:  # after the last question: once per step, however often resumed
        if reply is not None:
            emit(state, "review", round=round_, repair=repair, branch=candidate.branch, action=reply["action"],
                 change=candidate.change, path=candidate.path, reason=reply.get("reason"))
        if reply is not None and reply["action"] == "reject":
            settled.append((candidate.branch, _rejected(candidate, round_, repair, reply, parent_of(candidate, state))))
        else:
            kept.append(candidate)
    if any(not c.stop for c in kept):
        return Command(goto="verifier", update={"candidates": Overwrite(kept), "settled": settled})
    # every candidate turned down: nothing to verify, the step ends here
    for branch, attempt in settled:
        report_verdict(state, attempt, branch)
    stops = [c.stop for c in kept if c.stop]
    attempts = [a for _, a in settled]  # none timed: never a new best, never the profile
    return conclude(state, ctx, attempts, state.get("best"), stops, {"candidates": Overwrite([])})  # type: ignore[return-value]


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


def _rejected(candidate: Candidate, round_: int, repair: int, reply: dict[str, Any], parent: str) -> Attempt:
    """The attempt for a candidate the person turned down: a failure, the reason its error."""
    assert candidate.path is not None
    digest = source_hash(Path(candidate.path).read_text())
    return Attempt(
        round_, repair, candidate.path, digest, "failed", candidate.change,
        error=rejection_error(reply), rule=REJECTED_RULE, model=candidate.model, parent=parent,
    )


def accept(
    state: KernelOptState, runtime: Runtime[Context]
) -> Command[Literal["optimizer", "judger", "profile", "report"]]:
    """Take the step's new best and record the step. Under Context.approve a new best over an
    existing one waits for the person's yes; the step's earlier bests, beaten by the proposed
    kernel, become plain verdicts against it. The verdicts are already in `pending`, so
    answering (or resuming a stopped run here) never repeats a verification."""
    pending: PendingBest | None = state.get("pending")
    assert pending is not None, "the verifier routes here only with a new best"
    ctx = context_of(runtime)
    attempts, records, old = list(pending.attempts), list(pending.records), state.get("best")
    proposed = max(i for i, record in enumerate(records) if record is not None)
    if not ctx.approve or old is None:
        best = old
        for attempt, record, branch in zip(attempts, records, pending.branches, strict=True):
            if record is not None:
                take_best(state, attempt, record)
                remember_gain(state, ctx, attempt, branch, record, best)
                best = record
        return conclude(state, ctx, attempts, best, list(pending.stops), {"pending": None}, pending.entrants)
    attempts = _demoted(attempts, proposed)
    new, chosen = records[proposed], attempts[proposed]
    assert new is not None
    reply = ask(accept_payload(chosen.round, chosen.change, pending.branches[proposed], new, old), ACCEPT_REPLIES)
    taken: KernelRecord = old
    if reply["action"] == "approve":
        taken = new
        take_best(state, chosen, new)
        remember_gain(state, ctx, chosen, pending.branches[proposed], new, old)
    else:
        error = rejection_error(reply)
        attempts[proposed] = replace(chosen, outcome="rejected", rule=REJECTED_RULE, error=error, new_best=False)
        emit(state, "best_rejected", round=chosen.round, time_ms=chosen.time_ms, error=error)
    return conclude(state, ctx, attempts, taken, list(pending.stops), {"pending": None}, pending.entrants)


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
