"""judger: turn the roofline, NCU's metrics and the code into one cause and one fix per round."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from kernelopt.context import Context
from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.llm import make_chat_model, reply_text
from kernelopt.nodes.common import context_of, emit
from kernelopt.offline import rules
from kernelopt.prompts import (
    AttemptNote,
    BottleneckResult,
    ResponseParseError,
    build_bottleneck_prompt,
    parse_bottleneck_response,
)
from kernelopt.state import Attempt, Diagnosis, KernelOptState

HISTORY_SIZE = 6  # the last attempts the prompts recall


def attempt_notes(attempts: list[Attempt], limit: int = HISTORY_SIZE) -> tuple[AttemptNote, ...]:
    """The last attempts as the prompts recall them."""
    known = {"faster", "within_noise", "slower", "incorrect"}
    return tuple(
        AttemptNote(a.round, a.outcome if a.outcome in known else "failed", a.time_ms, a.change, a.error)  # type: ignore[arg-type]
        for a in attempts[-limit:]
    )


def _choose(bottlenecks: list[BottleneckResult], rounds_without_gain: int, source: Literal["llm", "rules"]) -> Diagnosis:
    # After a round without gain, move on to the next bottleneck instead of repeating the idea.
    chosen = bottlenecks[rounds_without_gain % len(bottlenecks)]
    cause = chosen.root_causes[0] if chosen.root_causes else chosen.summary
    fix = chosen.recommended_fixes[0] if chosen.recommended_fixes else "remove the bottleneck named above"
    return Diagnosis(tuple(bottlenecks), chosen.category, cause, fix, source)


def make_judger(chat_model: BaseChatModel | None = None) -> Callable[..., dict[str, Any]]:
    """The judger node, using `chat_model` when given, else the model the context names."""

    def judger(state: KernelOptState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Diagnose the best kernel's bottleneck; starts a new round."""
        ctx = context_of(runtime)
        round_ = state["round"] + 1
        emit(state, "round_started", round=round_)
        llm = chat_model or make_chat_model(ctx)
        roofline, metrics = state.get("roofline"), state.get("ncu_metrics") or {}
        bottlenecks: list[BottleneckResult] = []
        source: Literal["llm", "rules"] = "rules"
        note = None
        if llm is not None and state.get("best") is not None:
            prompt = build_bottleneck_prompt(
                Path(state["best"].path).read_text(), metrics, roofline, get_gpu_spec(state["gpu_key"]),
                problem_source=Path(state["problem_file"]).read_text(), num_bottlenecks=ctx.num_bottlenecks,
                history=attempt_notes(state.get("attempts", [])),
            )
            try:
                bottlenecks = parse_bottleneck_response(reply_text(llm.invoke(prompt)))
                source = "llm"
            except ResponseParseError as err:
                note = f"judger reply unusable ({err}); diagnosing by rules"
        if not bottlenecks:
            bottlenecks = rules.diagnose(roofline, metrics)
        diagnosis = _choose(bottlenecks, state.get("rounds_without_gain", 0), source)
        emit(state, "diagnosis", round=round_, category=diagnosis.category, root_cause=diagnosis.root_cause,
             fix=diagnosis.recommended_fix, source=source, note=note)
        return {"round": round_, "repairs": 0, "repair_next": False, "last_error": None, "diagnosis": diagnosis}

    return judger

