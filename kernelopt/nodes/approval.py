"""Approval by a person (Context.approve): the questions, asked through LangGraph's interrupt().

Two questions, each an `interrupt(payload)` whose reply comes back with `Command(resume=...)`:

- "try" (in the review node, once per candidate, before anything is verified): the payload says
  what the candidate is and shows its source and a unified diff against the current best.
  Replies: {"action": "approve"}, {"action": "reject", "reason": "..."} or
  {"action": "edit", "source": "..."}.
- "accept" (in the accept node, after the verdicts are stored in the state): the payload gives
  the old and the new best time. Replies: {"action": "approve"} or {"action": "reject", "reason": "..."}.

A node that calls interrupt() runs again from its start when it is resumed, and LangGraph
hands the stored replies back to its interrupt() calls by their order in the node. So the
review node asks about every candidate of the step first (no side effect before or between the
questions), then acts on the replies: the n-th reply always answers the n-th candidate, and
nothing is verified until the last reply is in. A reply that is not understood is asked again
(a further interrupt, with `error` in its payload), which keeps that order deterministic.
The nodes themselves are nodes/review.py and nodes/accept.py.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from langgraph.types import interrupt

from kernelopt.nodes.common import written
from kernelopt.records import Candidate, KernelRecord

REJECTED_RULE = "rejected-by-person"
STARTING_KERNEL = "the starting kernel"  # setup's candidate: the person's own kernel is not asked about
TRY_REPLIES = ("approve", "reject", "edit")
ACCEPT_REPLIES = ("approve", "reject")
SHORT = {"a": "approve", "r": "reject", "e": "edit", "y": "approve", "yes": "approve", "n": "reject", "no": "reject"}


def normalize_reply(reply: Any, allowed: tuple[str, ...]) -> tuple[dict[str, Any] | None, str | None]:
    """The reply as {"action": ..., ...}, or None and why it is not understood.

    Besides the dicts above, a bare word ("approve", "a", "reject", "r") is understood.
    """
    if isinstance(reply, str):
        reply = {"action": reply}
    if not isinstance(reply, dict):
        return None, f"a reply is a dict with an action ({', '.join(allowed)}), not {type(reply).__name__}"
    action = str(reply.get("action", "")).strip().lower()
    action = SHORT.get(action, action)
    if action not in allowed:
        return None, f"unknown action {reply.get('action')!r}; one of {', '.join(allowed)}"
    if action == "edit" and not isinstance(reply.get("source"), str):
        return None, "an edit needs the kernel's new source as a string in 'source'"
    return {**reply, "action": action}, None


def ask_person(payload: dict[str, Any], allowed: tuple[str, ...]) -> dict[str, Any]:
    """interrupt() until the reply is understood; returns it normalized."""
    reply, error = normalize_reply(interrupt(payload), allowed)
    while reply is None:
        reply, error = normalize_reply(interrupt({**payload, "error": error}), allowed)
    return reply


def diff_against(best: KernelRecord | None, path: str, source: str) -> str:
    """A unified diff from the current best's source to `source` ('' without a best)."""
    if best is None or not Path(best.path).is_file():
        return ""
    lines = difflib.unified_diff(
        Path(best.path).read_text().splitlines(keepends=True),
        source.splitlines(keepends=True),
        fromfile=f"best: {Path(best.path).name}",
        tofile=f"candidate: {Path(path).name}",
    )
    return "".join(lines)


def try_payload(candidate: Candidate, round_: int, repair: int, best: KernelRecord | None) -> dict[str, Any]:
    """What the person sees before a candidate is tried."""
    assert candidate.path is not None
    source = Path(candidate.path).read_text()
    return {
        "question": "try",
        "prompt": "Verify this candidate? approve / reject (with a reason) / edit (give the new source)",
        "replies": list(TRY_REPLIES),
        "round": round_,
        "repair": repair,
        "branch": candidate.branch,
        "change": candidate.change,
        "kernel_path": candidate.path,
        "source": source,
        "best_path": best.path if best else None,
        "best_ms": best.time_ms if best else None,
        "diff": diff_against(best, candidate.path, source),
    }


def edited_path(path: str) -> Path:
    """Where an edited candidate is written: beside it, kernels/r001_a0_edited.py (then _edited2, ...)."""
    original = Path(path)
    target, n = original.with_name(f"{original.stem}_edited.py"), 2
    while target.exists():
        target, n = original.with_name(f"{original.stem}_edited{n}.py"), n + 1
    return target


def review(
    candidates: list[Candidate], round_: int, repair: int, best: KernelRecord | None, skip: set[int]
) -> list[tuple[Candidate, dict[str, Any] | None]]:
    """Ask about every candidate (but those in `skip`) before any is tried; then apply the replies.

    Returns each candidate (an edited one replaced by its new file) with its reply, or None
    where nothing was asked. All questions come first: only after the last reply is a file written.
    """
    replies: list[dict[str, Any] | None] = []
    for i, candidate in enumerate(candidates):
        asked = candidate.path is not None and i not in skip
        replies.append(ask_person(try_payload(candidate, round_, repair, best), TRY_REPLIES) if asked else None)
    reviewed = []
    for candidate, reply in zip(candidates, replies, strict=True):
        if reply is not None and reply["action"] == "edit":
            assert candidate.path is not None
            candidate = written(edited_path(candidate.path), reply["source"],
                                f"{candidate.change} (edited by the person)", candidate.branch,
                                model=candidate.model, parent=candidate.parent)
        reviewed.append((candidate, reply))
    return reviewed


def rejection_error(reply: dict[str, Any]) -> str:
    reason = str(reply.get("reason") or "").strip() or "no reason given"
    return f"rejected by the person reviewing it: {reason}"


def accept_payload(
    round_: int, change: str, branch: int, new: KernelRecord, old: KernelRecord
) -> dict[str, Any]:
    """What the person sees before a new best is accepted."""
    return {
        "question": "accept",
        "prompt": "Accept this kernel as the new best? approve / reject (with a reason)",
        "replies": list(ACCEPT_REPLIES),
        "round": round_,
        "branch": branch,
        "change": change,
        "kernel_path": new.path,
        "new_ms": new.time_ms,
        "old_ms": old.time_ms,
        "old_path": old.path,
        "speedup": old.time_ms / new.time_ms if new.time_ms else None,
        "is_gpu_time": new.timing.is_gpu_time,
        "diff": diff_against(old, new.path, Path(new.path).read_text()),
    }

