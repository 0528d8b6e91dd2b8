"""Several chat models in one run: which model writes each branch, and which are dropped.

The state names the run's models (`models`, the judging one first) and those dropped from it
(`dropped_models`, with why). Branch i of round r goes to live model (i + r) mod M, so that each
model writes and each gets the round's top idea in turn; a repair stays with the model that
wrote the failed kernel. A model whose last Context.drop_model_after candidates all failed is
dropped while another model still works; the last ones standing are never dropped, so a run of
one model behaves as it always has.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kernelopt.context import Context
from kernelopt.events import ModelDropped
from kernelopt.nodes.approval import REJECTED_RULE
from kernelopt.nodes.common import emit
from kernelopt.records import Attempt, one_line


def live_models(state: Mapping[str, Any]) -> list[str]:
    """The run's models that are not dropped, in the order given ([] for the offline policy); all of
    them when every one was (a run resumed with only dropped models named uses those)."""
    dropped, models = state.get("dropped_models") or {}, state.get("models") or []
    return [name for name in models if name not in dropped] or list(models)


def branch_model(state: Mapping[str, Any], branch: int, writer: str = "") -> str | None:
    """The model that writes `branch` of the step under way: `writer` (the model that wrote the
    kernel to repair) while it is live, else the live models in turn; None without models."""
    live = live_models(state)
    if writer in live:
        return writer
    return live[(branch + state.get("round", 0)) % len(live)] if live else None


def failing_models(attempts: Sequence[Attempt], live: Sequence[str], after: int) -> dict[str, str]:
    """The live models to drop, with why: those whose last `after` candidates all failed, while
    another live model has not ({} when every one has: none works better)."""
    if after <= 0:
        return {}
    failing: dict[str, str] = {}
    for name in live:
        # a person's rejection is their choice, not the model's failure
        last = [a for a in attempts if a.model == name and a.rule != REJECTED_RULE][-after:]
        if len(last) == after and all(a.time_ms is None for a in last):
            why = one_line(last[-1].error or "no kernel", 160)
            failing[name] = f"its last {after} candidates failed (the last {last[-1].outcome}: {why})"
    return failing if len(failing) < len(live) else {}


def drop_failing(state: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
    """The update that drops the models failing in `state` (as the step leaves it), each said in a
    model_dropped event; {} when none is."""
    live = live_models(state)
    failing = failing_models(state.get("attempts", []), live, ctx.drop_model_after) if len(live) > 1 else {}
    for name, why in failing.items():
        emit(state, ModelDropped(model=name, reason=why, round=state.get("round", 0)))
    return {"dropped_models": {**(state.get("dropped_models") or {}), **failing}} if failing else {}
