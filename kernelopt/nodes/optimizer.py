"""optimizer: rewrite the kernel to remove the diagnosed bottleneck (or repair a failed rewrite)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, NamedTuple

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from kernelopt.budget import check_budget
from kernelopt.context import Context
from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.harness.problem import source_hash
from kernelopt.llm import RetryPolicy, make_chat_model, stop_reason_for
from kernelopt.nodes.common import context_of, emit
from kernelopt.nodes.judger import LLMCalls, attempt_notes, with_lessons
from kernelopt.offline.search import variants
from kernelopt.prompts import (
    KernelExtractionError,
    OptimizationPromptArgs,
    PromptManager,
    extract_kernel,
)
from kernelopt.runs import kernel_path
from kernelopt.state import KernelOptState

PROMPTS = PromptManager()


def _tried(state: KernelOptState) -> set[str]:
    return {a.source_hash for a in state.get("attempts", []) if a.source_hash}


def _offline(state: KernelOptState) -> tuple[str | None, str]:
    """The next untried one-step launch-parameter variant of the best kernel."""
    best = state["best"]
    assert best is not None, "the offline optimizer starts from a verified kernel"
    bound = state["roofline"].bottleneck if state.get("roofline") else "unknown"
    tried = _tried(state) | {best.source_hash}
    for variant in variants(Path(best.path).read_text(), bound):
        if source_hash(variant.source) not in tried:
            return variant.source, variant.change
    return None, ""


def _prompt(state: KernelOptState, ctx: Context) -> tuple[str, str]:
    """The LLM prompt for this step and a few words on what is asked."""
    gpu = get_gpu_spec(state["gpu_key"])
    problem = Path(state["problem_file"]).read_text()
    error = state.get("last_error") if state.get("repair_next") else None
    best, baselines, diagnosis = state.get("best"), state.get("baselines"), state.get("diagnosis")
    if best is None or diagnosis is None:
        what = "repair of the first kernel" if error else "a first kernel from the reference"
        return PROMPTS.render_kernel_generation_prompt(problem, gpu, error=error), what
    failed = state["attempts"][-1].kernel_path if error and state.get("attempts") else ""
    chosen = next((b for b in diagnosis.bottlenecks if b.category == diagnosis.category), diagnosis.bottlenecks[0])
    args = OptimizationPromptArgs(
        problem_source=problem,
        kernel_source=Path(failed or best.path).read_text(),
        gpu=gpu,
        roofline=state.get("roofline"),
        bottleneck=chosen,
        root_cause=diagnosis.root_cause,
        recommended_fix=diagnosis.recommended_fix,
        current_best_ms=best.time_ms,
        eager_ms=baselines.eager.median_ms if baselines and baselines.eager else None,
        compile_ms=baselines.compile.median_ms if baselines and baselines.compile else None,
        ncu_metrics=state.get("ncu_metrics") or {},
        history=attempt_notes(state.get("attempts", [])),
        error=error,
        is_gpu_time=best.timing.is_gpu_time,
    )
    what = f"repair: {error[:80]}" if error else diagnosis.recommended_fix
    # the round under way is no lesson yet: its failures are the error to fix
    return with_lessons(PROMPTS.render_kernel_optimization_prompt(args), state["attempts"], state["round"]), what


def _cut_off(message: Any) -> bool:
    """Whether the reply stopped at the model's output-token limit."""
    return getattr(message, "response_metadata", {}).get("finish_reason") == "length"


class Written(NamedTuple):
    """What the LLM wrote: a kernel (None when its reply held none), what it changed, the state update."""

    source: str | None
    change: str
    update: dict[str, Any]
    tokens: dict[str, int] | None = None  # the run's token totals after the call


def _from_llm(state: KernelOptState, ctx: Context, llm: BaseChatModel) -> Written:
    """The candidate the LLM wrote for this step, or why there is none.

    A reply without exactly one complete ModelNew kernel is no failure of the run: its
    extraction error goes back to the LLM as the next repair's feedback.
    """
    round_, repair = state["round"], state["repairs"]
    calls = LLMCalls(state, "optimizer", RetryPolicy.from_context(ctx))
    prompt, change = _prompt(state, ctx)
    try:
        message, reply = calls.ask(llm, prompt)
    except Exception as err:  # the endpoint's failure ends the run; the best is on disk
        return Written(None, change, {**calls.update(), "stop_reason": stop_reason_for(err)})
    Path(state["run_dir"], "llm").mkdir(exist_ok=True)
    Path(state["run_dir"], "llm", f"r{round_:03d}_a{repair}.md").write_text(f"{prompt}\n\n---\n\n{reply}")
    update = calls.update()
    tokens = calls.run_totals()
    no_kernel = {"candidate_path": None, "candidate_change": change}
    try:
        source = extract_kernel(reply)
    except KernelExtractionError as err:
        error = str(err)
        if _cut_off(message):
            error += "; the reply hit the model's output-token limit: send a shorter kernel with less prose"
        emit(state, "candidate", round=round_, repair=repair, change=change, error=error, tokens=tokens)
        return Written(None, change, {**update, **no_kernel, "last_error": error})
    if source_hash(source) in _tried(state):
        error = "the reply repeats a kernel already tried; make a different change"
        emit(state, "candidate", round=round_, repair=repair, change=change, error=error, tokens=tokens)
        return Written(None, change, {**update, **no_kernel, "last_error": error})
    return Written(source, change, update, tokens)


def make_optimizer(chat_model: BaseChatModel | None = None) -> Callable[..., dict[str, Any]]:
    """The optimizer node, using `chat_model` when given, else the model the context names."""

    def optimizer(state: KernelOptState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Write the next candidate kernel into the run directory, or say why there is none."""
        if state.get("stop_reason"):  # the judger stopped the run (a spent budget, the LLM down)
            return {}
        ctx = context_of(runtime)
        stop, update = check_budget(state, ctx)
        if stop:
            return {**update, "stop_reason": stop}
        llm = chat_model or make_chat_model(ctx)
        round_, repair = state["round"], state["repairs"]
        tokens = None
        if llm is None:
            source, change = _offline(state)
            if source is None:
                return {**update, "stop_reason": "search_exhausted: every one-step launch-parameter change was tried"}
        else:
            source, change, found, tokens = _from_llm(state, ctx, llm)
            if source is None:
                return {**update, **found}
            update |= found
        path = kernel_path(state["run_dir"], round_, repair)
        path.write_text(source)
        emit(state, "candidate", round=round_, repair=repair, change=change, path=str(path), tokens=tokens)
        return {**update, "candidate_path": str(path), "candidate_change": change}

    return optimizer


def route_after_optimize(state: KernelOptState) -> Literal["verifier", "__end__"]:
    """Verify the candidate; end when the optimizer had nothing left to try."""
    return "__end__" if state.get("stop_reason") else "verifier"
