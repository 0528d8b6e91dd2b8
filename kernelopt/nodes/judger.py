"""judger: turn the roofline, NCU's metrics and the code into one cause and one fix per round."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime
from langgraph.types import Command

from kernelopt.budget import check_budget
from kernelopt.context import Context
from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.llm import ChatModels, RetryPolicy, chat_models, describe_error, supports_json_schema
from kernelopt.nodes.branches import new_round
from kernelopt.nodes.calls import LLMCallError, LLMCalls
from kernelopt.nodes.common import after, context_of, emit
from kernelopt.nodes.history import attempt_notes, with_lessons
from kernelopt.nodes.ideas import choose
from kernelopt.nodes.models import live_models
from kernelopt.nodes.stop import Step, should_stop
from kernelopt.offline import judge as offline_judge
from kernelopt.prompts import (
    BottleneckResult,
    ResponseParseError,
    bottleneck_json_schema,
    build_bottleneck_prompt,
    parse_bottleneck_response,
)
from kernelopt.state import KernelOptState


def response_format(ctx: Context) -> dict[str, Any]:
    """OpenAI's strict json_schema response_format for the judger's reply ({"bottlenecks": [...]})."""
    schema = bottleneck_json_schema(ctx.num_bottlenecks, wrapped=True)
    return {"type": "json_schema", "json_schema": {"name": "bottlenecks", "strict": True, "schema": schema}}


Found = tuple[list[BottleneckResult], str | None]  # the bottlenecks, and a note on how they were got


def _structured(llm: BaseChatModel, prompt: str, ctx: Context, calls: LLMCalls) -> Found:
    """Bottlenecks asked for as a json_schema response, and a note when the server fell short.

    The note starts "json_schema unsupported" when the server refused the schema (400) or
    answered with something other than JSON: the run stops asking for it.
    """
    import openai

    try:
        with warnings.catch_warnings():  # langchain warns on the 400 that we handle below
            warnings.simplefilter("ignore", UserWarning)
            _, text = calls.ask(llm.bind(response_format=response_format(ctx)), prompt)
    except LLMCallError as failed:
        err = failed.error
        if isinstance(err, openai.BadRequestError):
            return [], f"json_schema unsupported ({describe_error(err)}); asking for plain JSON text"
        if not isinstance(err, openai.LengthFinishReasonError):
            raise
        usage = getattr(err.completion, "usage", None)
        if usage is not None:
            calls.counts["input"] = calls.counts.get("input", 0) + usage.prompt_tokens
            calls.counts["output"] = calls.counts.get("output", 0) + usage.completion_tokens
            calls.counts["calls"] = calls.counts.get("calls", 0) + 1
        return [], "structured reply cut at the output-token limit; asking again as plain text"
    try:
        found = parse_bottleneck_response(text)
    except ResponseParseError:
        found = []
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return found, "json_schema unsupported (the reply was not JSON)"
    return found, None if found else "structured reply held no bottleneck; asking again as plain text"


def _prompt(state: KernelOptState, ctx: Context) -> str:
    """The judger's prompt: the best kernel, its metrics and roofline, the GPU, the run's history."""
    prompt = build_bottleneck_prompt(
        Path(state["best"].path).read_text(), state.get("ncu_metrics") or {}, state.get("roofline"),  # type: ignore[union-attr]
        get_gpu_spec(state["gpu_key"]), problem_source=Path(state["problem_file"]).read_text(),
        num_bottlenecks=ctx.num_bottlenecks, history=attempt_notes(state.get("attempts", [])),
    )
    return with_lessons(prompt, state.get("attempts", []))


def _diagnose(
    llm: BaseChatModel, prompt: str, state: KernelOptState, ctx: Context, calls: LLMCalls
) -> tuple[list[BottleneckResult], dict[str, Any], str | None]:
    """The LLM's bottlenecks (none when its replies were unusable), a state update, and a note.

    Raises LLMCallError when a call fails (not when the server only refuses the json_schema).
    """
    update: dict[str, Any] = {}
    notes: list[str] = []
    if ctx.structured_output and state.get("json_schema_ok", True) and supports_json_schema(llm):
        found, note = _structured(llm, prompt, ctx, calls)
        if note and note.startswith("json_schema unsupported"):
            update["json_schema_ok"] = False
        if found:
            return found, update, note
        notes += [note] if note else []
    _, text = calls.ask(llm, prompt)
    try:
        return parse_bottleneck_response(text), update, "; ".join(notes) or None
    except ResponseParseError as err:
        return [], update, "; ".join([*notes, f"judger reply unusable ({err}); diagnosing by rules"])


Route = Literal["optimizer", "report"]


def make_judger(chat_model: BaseChatModel | ChatModels | None = None) -> Callable[..., Command[Route]]:
    """The judger node, using `chat_model` (one, or several by name) when given, else the models the
    context names: the first that is not dropped judges."""

    def judger(state: KernelOptState, runtime: Runtime[Context]) -> Command[Route]:
        """Diagnose the best kernel's bottleneck and start a new round: one optimizer branch per
        candidate of the round (their LLM calls run concurrently); stop on a spent budget or the LLM down."""
        ctx = context_of(runtime)
        _, update = check_budget(state, ctx)
        stop = should_stop(state, ctx, Step(before_llm=True))
        if stop:
            return Command(goto="report", update={**update, "stop_reason": stop})
        round_ = state["round"] + 1
        emit(state, "round_started", round=round_)
        models = chat_models(chat_model, ctx)
        update |= {"models": list(models)} if models else {}
        live = [name for name in live_models(after(state, update)) if name in models]
        calls = LLMCalls(state, "judger", RetryPolicy.from_context(ctx), model=live[0] if live else None)
        bottlenecks: list[BottleneckResult] = []
        source: Literal["llm", "rules"] = "rules"
        note = None
        if live and state.get("best") is not None:
            prompt = _prompt(state, ctx)
            try:
                bottlenecks, found_update, note = _diagnose(models[live[0]], prompt, state, ctx, calls)
            except LLMCallError as err:
                if len(live) == 1:  # the endpoint's failure ends the run; the best is on disk
                    stop = should_stop(state, ctx, Step(halts=(err.stop_reason,)))
                    return Command(goto="report", update={**update, **calls.update(), "stop_reason": stop})
                found_update, note = {}, f"the judging model {live[0]} failed ({err.stop_reason}); diagnosing by rules"
            update |= found_update
            source = "llm" if bottlenecks else "rules"
        if not bottlenecks:
            best = state.get("best")
            bottlenecks = offline_judge.diagnose(
                state.get("roofline"), state.get("ncu_metrics") or {},
                source=Path(best.path).read_text() if best and Path(best.path).is_file() else "",
                spec=get_gpu_spec(state["gpu_key"]) if state.get("gpu_key") else None,
            )
        diagnosis = choose(bottlenecks, state.get("rounds_without_gain", 0), source)
        emit(state, "diagnosis", round=round_, category=diagnosis.category, root_cause=diagnosis.root_cause,
             fix=diagnosis.recommended_fix, source=source, note=note,
             tokens=calls.run_totals() if calls.counts else None)
        update = {**update, **calls.update(), "round": round_, "repairs": 0, "last_error": None,
                  "diagnosis": diagnosis}
        return Command(goto=new_round(after(state, update), max(1, ctx.candidates_per_round)), update=update)

    return judger
