"""optimizer: rewrite the kernel to remove the diagnosed bottleneck (or repair a failed rewrite)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from kernelopt.budget import check_budget
from kernelopt.context import Context
from kernelopt.events import CandidateWritten
from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.harness.problem import source_hash
from kernelopt.llm import ChatModels, RetryPolicy, chat_models
from kernelopt.nodes.common import context_of, emit, written
from kernelopt.nodes.history import attempt_notes, insert_lessons
from kernelopt.nodes.llm_calls import LLMCallError, LLMCalls
from kernelopt.nodes.memory import knowledge_text
from kernelopt.nodes.tune import offline_candidates
from kernelopt.prompts import (
    KernelExtractionError,
    OptimizationPromptArgs,
    PromptManager,
    extract_kernel,
)
from kernelopt.records import Candidate
from kernelopt.runs import artifact_name, kernel_path
from kernelopt.state import Branch

PROMPTS = PromptManager()


def _prompt(task: Branch, ctx: Context) -> tuple[str, str]:
    """The LLM prompt for this branch and a few words on what is asked."""
    gpu = get_gpu_spec(task["gpu_key"])
    problem = Path(task["problem_file"]).read_text()
    error, best, baselines = task["error"], task["best"], task["baselines"]
    if best is None or task["idea"] is None or task["kernel_path"] is None:
        what = "repair of the first kernel" if error else "a first kernel from the reference"
        return PROMPTS.render_kernel_generation_prompt(problem, gpu, error=error), what
    chosen, cause, fix = task["idea"]
    args = OptimizationPromptArgs(
        problem_source=problem,
        kernel_source=Path(task["kernel_path"]).read_text(),
        gpu=gpu,
        roofline=task["roofline"],
        bottleneck=chosen,
        root_cause=cause,
        recommended_fix=fix,
        current_best_ms=best.time_ms,
        eager_ms=baselines.eager.median_ms if baselines and baselines.eager else None,
        compile_ms=baselines.compile.median_ms if baselines and baselines.compile else None,
        ncu_metrics=task["ncu_metrics"],
        history=attempt_notes(task["history"]),
        error=error,
        is_gpu_time=best.timing.is_gpu_time,
    )
    what = f"repair: {error[:80]}" if error else fix
    # the knowledge base first: the run's own lessons stay nearest the output rules
    prompt = insert_lessons(PROMPTS.render_kernel_optimization_prompt(args), knowledge_text(task, ctx))
    return insert_lessons(prompt, task["lessons"]), what


def _cut_off(message: Any) -> bool:
    """Whether the reply stopped at the model's output-token limit."""
    return getattr(message, "response_metadata", {}).get("finish_reason") == "length"


class Written(NamedTuple):
    """What the LLM wrote: a kernel (None when its reply held none), what it changed, the state update."""

    source: str | None
    change: str
    update: dict[str, Any]
    tokens: dict[str, int] | None = None  # the run's token totals after the call


def _writer(task: Branch, models: ChatModels) -> str:
    """The name of the model that writes this branch: the one the branch names, else the first live one."""
    named = task.get("model")
    if named in models:
        return str(named)
    live = [name for name in task.get("live_models") or [] if name in models]
    return live[0] if live else next(iter(models))


def _from_llm(task: Branch, ctx: Context, llm: BaseChatModel, name: str) -> Written:
    """The candidate the LLM wrote for this step, or why there is none.

    A reply without exactly one complete ModelNew kernel is no failure of the run: its
    extraction error goes back to the LLM as the next repair's feedback.
    """
    round_, repair, branch = task["round"], task["repair"], task["branch"]
    calls = LLMCalls(task, "optimizer", RetryPolicy.from_context(ctx), model=name)
    prompt, change = _prompt(task, ctx)
    several = len(task.get("live_models") or []) > 1
    who = {"model": name} if several else {}
    try:
        message, reply = calls.call(llm, prompt)
    except LLMCallError as err:
        if not several:  # the endpoint's failure ends the run; the best is on disk
            stop = Candidate(None, change, branch, stop=err.stop_reason, model=name)
            return Written(None, change, {**calls.update(), "candidates": [stop]})
        error = f"the call to {name} failed: {err.stop_reason}"  # a failed candidate of that model
        emit(task, CandidateWritten(round=round_, repair=repair, branch=branch, change=change, error=error, **who))
        failed = Candidate(None, change, branch, error, model=name)
        return Written(None, change, {**calls.update(), "candidates": [failed]})
    Path(task["run_dir"], "llm").mkdir(exist_ok=True)
    artifact = artifact_name(round_, repair, branch)
    Path(task["run_dir"], "llm", f"{artifact}.md").write_text(f"{prompt}\n\n---\n\n{reply}")
    update = calls.update()
    tokens = calls.run_totals()
    try:
        source = extract_kernel(reply)
    except KernelExtractionError as err:
        error = str(err)
        if _cut_off(message):
            error += "; the reply hit the model's output-token limit: send a shorter kernel with less prose"
    else:
        if source_hash(source) not in task["tried"]:
            return Written(source, change, update, tokens)
        error = "the reply repeats a kernel already tried; make a different change"
    emit(task, CandidateWritten(round=round_, repair=repair, branch=branch, change=change, error=error, tokens=tokens,
                                **who))
    return Written(None, change, {**update, "candidates": [Candidate(None, change, branch, error=error, model=name,
                                                                parent=task["kernel_path"] or "")]})


def make_optimizer(chat_model: BaseChatModel | ChatModels | None = None) -> Callable[..., dict[str, Any]]:
    """The optimizer node, using `chat_model` (one, or several by name) when given, else the models the
    context names; each branch writes with the model it names."""

    def optimizer(task: Branch, runtime: Runtime[Context]) -> dict[str, Any]:
        """Write this branch's candidate kernel into the run directory, or say why there is none."""
        ctx = context_of(runtime)
        branch = task["branch"]
        # Branches run side by side: each writes only its candidate (and token counts); a
        # reason to stop travels in the candidate, for the verifier to act on.
        stop, _ = check_budget(task, ctx)
        if stop:
            return {"candidates": [Candidate(None, "", branch, stop=stop)]}
        models = chat_models(chat_model, ctx)
        if not models:  # the offline policy: a measured sweep, its best one or two as candidates
            return offline_candidates(task, ctx)
        round_, repair = task["round"], task["repair"]
        name = _writer(task, models)
        source, change, update, tokens = _from_llm(task, ctx, models[name], name)
        if source is None:
            return update
        path = kernel_path(task["run_dir"], round_, repair, branch)
        candidate = written(path, source, change, branch, model=name, parent=task["kernel_path"] or "")
        who = {"model": name} if len(task.get("live_models") or []) > 1 else {}
        emit(task, CandidateWritten(round=round_, repair=repair, branch=branch, change=change, path=str(path),
                                    tokens=tokens, **who))
        return {**update, "candidates": [candidate]}

    return optimizer
