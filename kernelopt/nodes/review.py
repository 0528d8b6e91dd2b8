"""review: the step before the verifier that a person can take part in (Context.approve).

It asks about every candidate of the step ("try"), applies the replies (an edited candidate
replaces its file; a rejected one becomes a settled attempt and is not verified), then hands the
rest to the verifier. Without approval it only passes on. It may be resumed: a node that called
interrupt() runs again from its start and gets the stored replies back by order, so it asks all
its questions before any side effect. The questions themselves are in nodes/approval.py.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from kernelopt.context import Context
from kernelopt.events import Reviewed
from kernelopt.nodes.approval import REJECTED_RULE, STARTING_KERNEL, rejection_error, review
from kernelopt.nodes.beam import parent_of
from kernelopt.nodes.common import context_of, digest_of, emit
from kernelopt.nodes.conclude import conclude, report_verdict
from kernelopt.records import Attempt, Candidate
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
            emit(state, Reviewed(round=round_, repair=repair, branch=candidate.branch, action=reply["action"],
                                 change=candidate.change, path=candidate.path, reason=reply.get("reason")))
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
        digest = digest_of(candidate)
        if digest in hashes:
            skip.add(i)
        hashes.add(digest)
    return skip


def _rejected(candidate: Candidate, round_: int, repair: int, reply: dict[str, Any], parent: str) -> Attempt:
    """The attempt for a candidate the person turned down: a failure, the reason its error."""
    assert candidate.path is not None
    return Attempt(
        round=round_, repair=repair, kernel_path=candidate.path, source_hash=digest_of(candidate), outcome="failed",
        change=candidate.change, error=rejection_error(reply), rule=REJECTED_RULE, model=candidate.model, parent=parent,
    )
