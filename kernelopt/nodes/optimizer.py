"""optimizer: rewrite the kernel to remove the diagnosed bottleneck (or repair a failed rewrite)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from kernelopt.context import Context
from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.harness.problem import source_hash
from kernelopt.llm import make_chat_model, reply_text
from kernelopt.nodes.common import context_of, emit
from kernelopt.nodes.judger import attempt_notes
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
    return PROMPTS.render_kernel_optimization_prompt(args), what


def make_optimizer(chat_model: BaseChatModel | None = None) -> Callable[..., dict[str, Any]]:
    """The optimizer node, using `chat_model` when given, else the model the context names."""

    def optimizer(state: KernelOptState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Write the next candidate kernel into the run directory, or say why there is none."""
        ctx = context_of(runtime)
        llm = chat_model or make_chat_model(ctx)
        round_, repair = state["round"], state["repairs"]
        if llm is None:
            source, change = _offline(state)
            if source is None:
                return {"stop_reason": "search_exhausted: every one-step launch-parameter change was tried"}
        else:
            prompt, change = _prompt(state, ctx)
            try:
                reply = reply_text(llm.invoke(prompt))
            except Exception as err:  # the endpoint's failure ends the run; the best is on disk
                return {"stop_reason": f"llm_error: {type(err).__name__}: {str(err)[:300]}"}
            Path(state["run_dir"], "llm").mkdir(exist_ok=True)
            Path(state["run_dir"], "llm", f"r{round_:03d}_a{repair}.md").write_text(f"{prompt}\n\n---\n\n{reply}")
            try:
                source = extract_kernel(reply)
            except KernelExtractionError as err:
                emit(state, "candidate", round=round_, repair=repair, change=change, error=str(err))
                return {"candidate_path": None, "candidate_change": change, "last_error": str(err)}
            if source_hash(source) in _tried(state):
                error = "the reply repeats a kernel already tried; make a different change"
                return {"candidate_path": None, "candidate_change": change, "last_error": error}
        path = kernel_path(state["run_dir"], round_, repair)
        path.write_text(source)
        emit(state, "candidate", round=round_, repair=repair, change=change, path=str(path))
        return {"candidate_path": str(path), "candidate_change": change}

    return optimizer


def route_after_optimize(state: KernelOptState) -> Literal["verifier", "__end__"]:
    """Verify the candidate; end when the optimizer had nothing left to try."""
    return "__end__" if state.get("stop_reason") else "verifier"
