"""judger: turn the roofline, NCU's metrics and the code into one cause and one fix per round."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from pathlib import Path
from typing import Any, Literal, NamedTuple

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime
from langgraph.types import Command

from kernelopt.budget import add_tokens, check_budget
from kernelopt.context import Context
from kernelopt.events import DiagnosisMade, RoundStarted
from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.llm import ChatModels, RetryPolicy, chat_models, describe_error, supports_json_schema
from kernelopt.nodes.beam import parents, width
from kernelopt.nodes.branches import new_round
from kernelopt.nodes.common import after, context_of, emit
from kernelopt.nodes.history import attempt_notes, with_lessons
from kernelopt.nodes.ideas import choose
from kernelopt.nodes.llm_calls import LLMCallError, LLMCalls
from kernelopt.nodes.models import live_models
from kernelopt.nodes.profile import roofline_for
from kernelopt.nodes.stop import Step, should_stop
from kernelopt.offline import judge as offline_judge
from kernelopt.prompts import (
    ResponseParseError,
    bottleneck_json_schema,
    build_bottleneck_prompt,
    parse_bottleneck_response,
)
from kernelopt.records import BottleneckResult, Diagnosis, JudgedParent, KernelRecord, Roofline
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
            _, text = calls.call(llm.bind(response_format=response_format(ctx)), prompt)
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


def _prompt(state: KernelOptState, ctx: Context, view: View) -> str:
    """The judger's prompt: one kernel, its metrics and roofline, the GPU, the run's history."""
    record, roofline, metrics = view
    assert record is not None, "the judger asks an LLM about a kernel only"
    prompt = build_bottleneck_prompt(
        Path(record.path).read_text(), metrics, roofline,
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
    _, text = calls.call(llm, prompt)
    try:
        return parse_bottleneck_response(text), update, "; ".join(notes) or None
    except ResponseParseError as err:
        return [], update, "; ".join([*notes, f"judger reply unusable ({err}); diagnosing by rules"])


Route = Literal["optimizer", "report"]
View = tuple[KernelRecord | None, Roofline | None, dict[str, float]]  # a kernel, its roofline and NCU metrics


class Judged(NamedTuple):
    """One kernel's diagnosis, the state update its calls made, and a note on how it was got."""

    diagnosis: Diagnosis
    update: dict[str, Any]
    note: str | None


def _judge(llm: BaseChatModel | None, view: View, state: KernelOptState, ctx: Context, calls: LLMCalls) -> Judged:
    """A kernel's diagnosis: the LLM's bottlenecks, else the rules'. Raises LLMCallError when a call fails."""
    record, roofline, metrics = view
    bottlenecks: list[BottleneckResult] = []
    source: Literal["llm", "rules"] = "rules"
    update: dict[str, Any] = {}
    note = None
    if llm is not None and record is not None:
        bottlenecks, update, note = _diagnose(llm, _prompt(state, ctx, view), state, ctx, calls)
        source = "llm" if bottlenecks else "rules"
    if not bottlenecks:
        bottlenecks = offline_judge.diagnose(
            roofline, metrics, source=Path(record.path).read_text() if record and Path(record.path).is_file() else "",
            spec=get_gpu_spec(state["gpu_key"]) if state.get("gpu_key") else None,
            dtype=floor.dtype if (floor := getattr(state.get("baselines"), "floor", None)) else None,
        )
    return Judged(choose(bottlenecks, state.get("rounds_without_gain", 0), source), update, note)


def _judge_beam(
    llm: BaseChatModel | None, state: KernelOptState, ctx: Context, calls: LLMCalls
) -> tuple[list[JudgedParent], list[Judged]]:
    """Every parent of the beam diagnosed on its own, its LLM calls at once: the best with the
    profile node's roofline and metrics, the others placed on the roofline by their own time."""
    alive = parents(state)
    views: list[View] = [(alive[0], state.get("roofline"), state.get("ncu_metrics") or {})]
    views += [(record, roofline_for(state, ctx, record, None), {}) for record in alive[1:]]
    each = [LLMCalls(state, "judger", calls.policy, model=calls.model) for _ in views]
    try:
        with ThreadPoolExecutor(max_workers=len(views)) as pool:
            futures = [pool.submit(copy_context().run, _judge, llm, view, state, ctx, own)
                       for view, own in zip(views, each, strict=True)]
            found = [future.result() for future in futures]
    finally:  # the tokens spent count, also when one parent's call failed
        for own in each:
            calls.counts = add_tokens({"judger": calls.counts}, {"judger": own.counts})["judger"]
    return [JudgedParent(view[0], view[1], judged.diagnosis) for view, judged in zip(views, found, strict=True)], found


def _judged(
    llm: BaseChatModel | None, state: KernelOptState, ctx: Context, calls: LLMCalls, update: dict[str, Any]
) -> list[Judged]:
    """The round's diagnoses: the best kernel's, or with a beam each parent's (then `update` gets
    the parents as `judged`). Raises LLMCallError when a call fails."""
    best = state.get("best")
    if width(state, ctx) > 1 and best is not None:
        judged, found = _judge_beam(llm, state, ctx, calls)
        update["judged"] = judged
        return found
    return [_judge(llm, (best, state.get("roofline"), state.get("ncu_metrics") or {}), state, ctx, calls)]


def make_judger(chat_model: BaseChatModel | ChatModels | None = None) -> Callable[..., Command[Route]]:
    """The judger node, using `chat_model` (one, or several by name) when given, else the models the
    context names: the first that is not dropped judges."""

    def judger(state: KernelOptState, runtime: Runtime[Context]) -> Command[Route]:
        """Diagnose the best kernel's bottleneck (with a beam, each parent's own) and start a new round:
        one optimizer branch per candidate of the round (their LLM calls run concurrently); stop on a
        spent budget or the LLM down."""
        ctx = context_of(runtime)
        _, update = check_budget(state, ctx)
        stop = should_stop(state, ctx, Step(before_llm=True))
        if stop:
            return Command(goto="report", update={**update, "stop_reason": stop})
        round_ = state["round"] + 1
        emit(state, RoundStarted(round=round_))
        models = chat_models(chat_model, ctx)
        update |= {"models": list(models)} if models else {}
        live = [name for name in live_models(after(state, update)) if name in models]
        llm = models[live[0]] if live else None
        calls = LLMCalls(state, "judger", RetryPolicy.from_context(ctx), model=live[0] if live else None)
        try:
            found = _judged(llm, state, ctx, calls, update)
        except LLMCallError as err:
            if len(live) <= 1:  # the endpoint's failure ends the run; the best is on disk
                stop = should_stop(state, ctx, Step(halts=(err.stop_reason,)))
                return Command(goto="report", update={**update, **calls.update(), "stop_reason": stop})
            note = f"the judging model {live[0]} failed ({err.stop_reason}); diagnosing by rules"
            found = [judged._replace(note=note) for judged in _judged(None, state, ctx, calls, update)]
        for n, (diagnosis, found_update, note) in enumerate(found):
            update |= found_update
            parent = {"parent": update["judged"][n].record.path, "parent_rank": n} if "judged" in update else {}
            emit(state, DiagnosisMade(round=round_, category=diagnosis.category, root_cause=diagnosis.root_cause,
                                      fix=diagnosis.recommended_fix, source=diagnosis.source, note=note,
                                      tokens=calls.run_totals() if calls.counts else None, **parent))
        update = {**update, **calls.update(), "round": round_, "repairs": 0, "last_error": None,
                  "diagnosis": found[0].diagnosis}
        return Command(goto=new_round(after(state, update), max(1, ctx.candidates_per_round)), update=update)

    return judger
