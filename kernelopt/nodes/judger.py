"""judger: turn the roofline, NCU's metrics and the code into one cause and one fix per round."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime
from langgraph.types import Send

from kernelopt.budget import add_tokens, check_budget, token_totals
from kernelopt.context import Context
from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.llm import (
    RetryPolicy,
    ask,
    describe_error,
    make_chat_model,
    stop_reason_for,
    supports_json_schema,
)
from kernelopt.nodes.common import context_of, emit
from kernelopt.offline import judge as offline_judge
from kernelopt.prompts import (
    AttemptNote,
    BottleneckResult,
    ResponseParseError,
    bottleneck_json_schema,
    build_bottleneck_prompt,
    parse_bottleneck_response,
)
from kernelopt.state import Attempt, Diagnosis, KernelOptState

HISTORY_SIZE = 6  # the last attempts the prompts recall
LESSONS_SIZE = 6  # changes listed under each of "avoid" and "prioritise"


def attempt_notes(attempts: list[Attempt], limit: int = HISTORY_SIZE) -> tuple[AttemptNote, ...]:
    """The last attempts as the prompts recall them."""
    known = {"faster", "within_noise", "slower", "incorrect"}
    return tuple(
        AttemptNote(a.round, a.outcome if a.outcome in known else "failed", a.time_ms, a.change, a.error)  # type: ignore[arg-type]
        for a in attempts[-limit:]
    )


def _one_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _gain(a: Attempt) -> str:
    gain = f"{a.speedup_vs_best:.2f}x faster" if a.speedup_vs_best else "a new best"
    return gain + (f" once repaired ({a.repair} repairs)" if a.repair else "")


def _loss(a: Attempt) -> str:
    if a.error:
        why = _one_line(a.error)
    elif a.time_ms is not None:
        why = f"{a.time_ms:.4g} ms, no faster than the best"
    else:
        why = "no kernel"
    return f"{a.outcome.replace('_', ' ')}: {why}"


def lessons(attempts: list[Attempt], before_round: int | None = None, limit: int = LESSONS_SIZE) -> str:
    """The run's lessons for a prompt: ideas to avoid (and why), ideas to build on; '' when none.

    Drawn from every finished round, not only the last attempts: an idea that failed in round 1
    should not come back in round 5. A round's idea is its first candidate's change; its repairs
    only fix that idea, so the round's verdict is its best outcome and last error.
    """
    rounds: dict[int, list[Attempt]] = {}
    for a in attempts:
        if a.round > 0 and (before_round is None or a.round < before_round):  # round 0: the starting kernel
            rounds.setdefault(a.round, []).append(a)
    avoid: dict[str, str] = {}
    prioritise: dict[str, str] = {}
    for tries in rounds.values():
        idea = _one_line(tries[0].change) or "(no change named)"
        won = [a for a in tries if a.new_best]
        if won:
            prioritise.pop(idea, None)
            prioritise[idea] = f"{idea}: {_gain(won[-1])}"
        else:
            avoid.pop(idea, None)
            avoid[idea] = f"{idea}: {_loss(tries[-1])}"
    if not avoid and not prioritise:
        return ""
    lines = ["LESSONS FROM THIS RUN"]
    if avoid:
        lines.append("Avoid these ideas, which failed or were no faster (or fix what went wrong with them first):")
        lines += [f"- {text}" for text in list(avoid.values())[-limit:]]
    if prioritise:
        lines.append("Prioritise ideas like these, which made the kernel faster:")
        lines += [f"- {text}" for text in list(prioritise.values())[-limit:]]
    return "\n".join(lines) + "\n"


def with_lessons(prompt: str, attempts: list[Attempt], before_round: int | None = None) -> str:
    """The prompt with the run's lessons placed before its closing task or output rules."""
    text = lessons(attempts, before_round)
    if not text:
        return prompt
    for heading in ("\nOUTPUT RULES\n", "\nTASK\n"):
        at = prompt.rfind(heading)
        if at >= 0:
            return f"{prompt[:at + 1]}{text}\n{prompt[at + 1:]}"
    return f"{prompt}\n{text}"


def _choose(
    bottlenecks: list[BottleneckResult], rounds_without_gain: int, source: Literal["llm", "rules"]
) -> Diagnosis:
    # After a round without gain, move on to the next bottleneck instead of repeating the idea.
    chosen = bottlenecks[rounds_without_gain % len(bottlenecks)]
    cause = chosen.root_causes[0] if chosen.root_causes else chosen.summary
    fix = chosen.recommended_fixes[0] if chosen.recommended_fixes else "remove the bottleneck named above"
    return Diagnosis(tuple(bottlenecks), chosen.category, cause, fix, source)


@dataclass
class LLMCalls:
    """One node's LLM calls: the retry policy, the tokens they spent, and a way to report retries."""

    state: KernelOptState
    node: str
    policy: RetryPolicy
    counts: dict[str, int] = field(default_factory=dict)

    def ask(self, model: Any, prompt: str) -> tuple[Any, str]:
        """The reply and its text; retries are reported as llm_retry events."""
        return ask(model, prompt, self.policy, self.counts, on_retry=self._report)

    def _report(self, retry: int, wait_s: float, err: BaseException) -> None:
        emit(self.state, "llm_retry", node=self.node, retry=retry, retries=self.policy.max_retries,
             wait_s=round(wait_s, 3), error=describe_error(err))

    def update(self) -> dict[str, Any]:
        """The state update for the tokens spent (none when no call was made)."""
        return {"tokens": {self.node: dict(self.counts)}} if self.counts else {}

    def run_totals(self) -> dict[str, int]:
        """The run's token totals including these calls, for progress events."""
        return token_totals(add_tokens(self.state.get("tokens"), {self.node: self.counts}))


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
    except openai.BadRequestError as err:
        return [], f"json_schema unsupported ({describe_error(err)}); asking for plain JSON text"
    except openai.LengthFinishReasonError as err:
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


def _diagnose(
    llm: BaseChatModel, state: KernelOptState, ctx: Context, calls: LLMCalls
) -> tuple[list[BottleneckResult], dict[str, Any], str | None]:
    """The LLM's bottlenecks (none when its replies were unusable), a state update, and a note."""
    prompt = build_bottleneck_prompt(
        Path(state["best"].path).read_text(), state.get("ncu_metrics") or {}, state.get("roofline"),  # type: ignore[union-attr]
        get_gpu_spec(state["gpu_key"]), problem_source=Path(state["problem_file"]).read_text(),
        num_bottlenecks=ctx.num_bottlenecks, history=attempt_notes(state.get("attempts", [])),
    )
    prompt = with_lessons(prompt, state.get("attempts", []))
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


def make_judger(chat_model: BaseChatModel | None = None) -> Callable[..., dict[str, Any]]:
    """The judger node, using `chat_model` when given, else the model the context names."""

    def judger(state: KernelOptState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Diagnose the best kernel's bottleneck; starts a new round, or stops on a spent budget."""
        ctx = context_of(runtime)
        stop, update = check_budget(state, ctx)
        if stop:
            return {**update, "stop_reason": stop}
        round_ = state["round"] + 1
        emit(state, "round_started", round=round_)
        llm = chat_model or make_chat_model(ctx)
        calls = LLMCalls(state, "judger", RetryPolicy.from_context(ctx))
        bottlenecks: list[BottleneckResult] = []
        source: Literal["llm", "rules"] = "rules"
        note = None
        if llm is not None and state.get("best") is not None:
            try:
                bottlenecks, found_update, note = _diagnose(llm, state, ctx, calls)
            except Exception as err:  # the endpoint's failure ends the run; the best is on disk
                return {**update, **calls.update(), "stop_reason": stop_reason_for(err)}
            update |= found_update
            source = "llm" if bottlenecks else "rules"
        if not bottlenecks:
            bottlenecks = offline_judge.diagnose(state.get("roofline"), state.get("ncu_metrics") or {})
        diagnosis = _choose(bottlenecks, state.get("rounds_without_gain", 0), source)
        emit(state, "diagnosis", round=round_, category=diagnosis.category, root_cause=diagnosis.root_cause,
             fix=diagnosis.recommended_fix, source=source, note=note,
             tokens=calls.run_totals() if calls.counts else None)
        return {**update, **calls.update(), "round": round_, "repairs": 0, "repair_next": False, "last_error": None,
                "diagnosis": diagnosis}

    return judger


def route_after_judge(state: KernelOptState) -> list[Send] | Literal["__end__"]:
    """One optimizer branch per candidate of the round (their LLM calls run concurrently);
    end when the judger stopped the run (a spent budget, the LLM down)."""
    if state.get("stop_reason"):
        return "__end__"
    return [Send("optimizer", {**state, "task": {"branch": i}}) for i in range(max(1, state.get("branches", 1)))]
