"""The run's budgets: tokens counted per node from the replies' usage, and wall time from the start.

Token counts live in the state as {node: {"input": n, "output": n, "calls": n, "estimated": n}},
merged by `add_tokens` so that nodes (and parallel branches) only ever send what they added.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelopt.context import Context

TokenCounts = dict[str, dict[str, int]]
CHARS_PER_TOKEN = 4  # a rough rate for English and code, used only when the server reports no usage


Counts = Mapping[str, Mapping[str, int]]


def add_tokens(left: Counts | None, right: Counts | None) -> TokenCounts:
    """The state's reducer: the two counts added, node by node and counter by counter."""
    total: TokenCounts = {node: dict(counts) for node, counts in (left or {}).items()}
    for node, counts in (right or {}).items():
        mine = total.setdefault(node, {})
        for key, value in counts.items():
            mine[key] = mine.get(key, 0) + value
    return total


def usage_of(reply: Any, prompt: str, reply_text: str) -> dict[str, int]:
    """One call's counts: the reply's usage_metadata, else an estimate from the text's length.

    A server that reports no usage (some local ones) would otherwise never spend a token budget;
    such calls are counted in "estimated".
    """
    usage = getattr(reply, "usage_metadata", None)
    if usage:
        return {"input": int(usage.get("input_tokens", 0)), "output": int(usage.get("output_tokens", 0)), "calls": 1}
    return {
        "input": math.ceil(len(prompt) / CHARS_PER_TOKEN),
        "output": math.ceil(len(reply_text) / CHARS_PER_TOKEN),
        "calls": 1,
        "estimated": 1,
    }


def token_totals(tokens: Counts | None) -> dict[str, int]:
    """The run's counts: every node's added up (input, output, calls, estimated)."""
    total: dict[str, int] = {"input": 0, "output": 0, "calls": 0}
    for counts in (tokens or {}).values():
        for key, value in counts.items():
            total[key] = total.get(key, 0) + value
    return total


def tokens_used(tokens: Counts | None) -> int:
    """Input plus output tokens of every call so far."""
    total = token_totals(tokens)
    return total["input"] + total["output"]


def check_budget(state: Mapping[str, Any], ctx: Context, now: float | None = None) -> tuple[str | None, dict[str, Any]]:
    """Why the run must stop before its next LLM call ("token_budget: ...", "time_budget: ...") or None,
    and the state update that records the run's start where the state has none yet."""
    now = time.time() if now is None else now
    recorded = state.get("started_at")
    start, update = (float(recorded), {}) if recorded is not None else (now, {"started_at": now})
    used = tokens_used(state.get("tokens"))
    if ctx.max_tokens is not None and used >= ctx.max_tokens:
        return f"token_budget: {used:,} tokens used of {ctx.max_tokens:,}", update
    if ctx.max_wall_s is not None and now - start >= ctx.max_wall_s:
        return f"time_budget: {now - start:,.0f} s elapsed of {ctx.max_wall_s:,.0f} s", update
    return None, update


# The events after which a round's measuring is done and its closing begins (the candidates' full verification, the
# new best's profile, the next diagnosis): round 0's start kernel after the baselines or the compiler seed, a later
# round after its sweep. The events that end a closing: the next round, or the run's stop.
_CLOSING_FROM = ("baselines", "compiler_seed", "sweep")
_CLOSING_UNTIL = ("round_started", "stopped")


def closing_s(run_dir: str | Path | None) -> float:
    """The longest a round of this run has taken to close, in seconds, from events.jsonl's times (0.0 before any
    round closed): from its measuring's end (the baselines or compiler seed for round 0, the sweep for a later one)
    to the next round or the stop. A problem of many GB verifies and profiles for tens of seconds, so a fixed
    reserve before the time budget ends lets its last round run past the budget; this measures its own."""
    events = Path(run_dir) / "events.jsonl" if run_dir else None
    if events is None or not events.is_file():
        return 0.0
    longest, began = 0.0, None
    for line in events.read_text().splitlines():
        try:
            event = json.loads(line)
            kind, now = event.get("event"), float(event["time"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue  # a line cut by a kill
        if kind in _CLOSING_FROM:
            began = now
        elif kind in _CLOSING_UNTIL and began is not None:
            longest, began = max(longest, now - began), None
        elif kind == "resumed":
            began = None  # the time a run lay stopped is no closing
    return longest
