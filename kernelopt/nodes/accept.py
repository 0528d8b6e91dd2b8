"""accept: the step after the verifier, for a step with a new best (Context.approve).

It takes the new best; under approval a new best over an existing one is taken only once the
person says yes ("accept"). It may be resumed: the verdicts are already in `pending`, so answering
(or resuming a stopped run here) never repeats a verification. The question is in nodes/approval.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from kernelopt.context import Context
from kernelopt.events import BestRejected
from kernelopt.nodes.approval import ACCEPT_REPLIES, REJECTED_RULE, accept_payload, ask_person, rejection_error
from kernelopt.nodes.common import context_of, emit
from kernelopt.nodes.conclude import conclude, take_best
from kernelopt.nodes.memory import remember_gain
from kernelopt.nodes.outcome import behind
from kernelopt.records import Attempt, KernelRecord, PendingBest
from kernelopt.state import KernelOptState


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
    payload = accept_payload(chosen.round, chosen.change, pending.branches[proposed], new, old)
    reply = ask_person(payload, ACCEPT_REPLIES)
    taken: KernelRecord = old
    if reply["action"] == "approve":
        taken = new
        take_best(state, chosen, new)
        remember_gain(state, ctx, chosen, pending.branches[proposed], new, old)
    else:
        error = rejection_error(reply)
        attempts[proposed] = replace(chosen, outcome="rejected", rule=REJECTED_RULE, error=error, new_best=False)
        emit(state, BestRejected(round=chosen.round, time_ms=chosen.time_ms, error=error))
    return conclude(state, ctx, attempts, taken, list(pending.stops), {"pending": None}, pending.entrants)


def _demoted(attempts: list[Attempt], proposed: int) -> list[Attempt]:
    """One new best per step awaits approval: earlier bests of the step, beaten by the proposed
    kernel, become plain verdicts against it."""
    target = attempts[proposed].time_ms
    assert target is not None
    return [
        a if i == proposed or not a.new_best or a.time_ms is None
        else replace(a, new_best=False, outcome=behind(a.time_ms, target))
        for i, a in enumerate(attempts)
    ]
