"""setup: load the problem, check the starting kernel, time the eager and compile baselines."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from kernelopt.context import Context
from kernelopt.events import BaselinesTimed, CompilerSeedMade, ModelDropped, SetupDone
from kernelopt.hardware.gpus import run_gpus
from kernelopt.hardware.specs import UnknownGPUError
from kernelopt.harness.problem import checked_sources, read_source
from kernelopt.llm import ChatModels, chat_models, check_endpoints
from kernelopt.nodes.approval import STARTING_KERNEL
from kernelopt.nodes.branches import new_round
from kernelopt.nodes.common import after, context_of, emit, resolve_gpu, run_moves, verifier_for, written
from kernelopt.nodes.profile import prepare_profiles
from kernelopt.nodes.spread import SPREAD_FROM
from kernelopt.nodes.stop import Step, should_stop
from kernelopt.offline.moves import TEMPLATE_START
from kernelopt.offline.tuner import with_config
from kernelopt.records import Candidate, InputError
from kernelopt.runs import default_runs_dir, kernel_path, new_run_dir, released_on_failure
from kernelopt.seed import COMPILER_SEED
from kernelopt.seed.errors import WHAT_TO_DO, SeedError
from kernelopt.seed.obtain import SeedAhead, compiler_seed, no_gpu_reason, seed_ahead
from kernelopt.state import KernelOptState


def _sources(state: KernelOptState) -> tuple[str, str | None]:
    problem = state.get("problem_source") or ""
    if not problem.strip():
        if not state.get("problem_path"):
            raise InputError("no problem given; pass problem_source (the problem file's text) or problem_path")
        problem = read_source(state["problem_path"], "problem")  # type: ignore[arg-type]
    kernel = state.get("kernel_source")
    if not kernel and state.get("kernel_path"):
        kernel = read_source(state["kernel_path"], "kernel")  # type: ignore[arg-type]
    names = (Path(state.get("problem_path") or "problem.py").name, Path(state.get("kernel_path") or "kernel.py").name)
    return checked_sources(problem, kernel, *names)


def make_setup(chat_model: BaseChatModel | ChatModels | None = None) -> Callable[..., dict[str, Any]]:
    """The setup node; `chat_model` (one, or several by name) tells it whether LLMs will write and repair kernels."""

    def setup(state: KernelOptState, runtime: Runtime[Context]) -> Command[Literal["verifier", "optimizer", "report"]]:
        """Prepare the run directory and baselines; hand the starting kernel to the verifier, or
        have the optimizer write the first one; stop on bad input."""
        ctx = context_of(runtime)
        models = list(chat_models(chat_model, ctx))
        uses_llm = bool(models)
        unreachable = check_endpoints(ctx) if chat_model is None and uses_llm else {}
        # every endpoint down: the run stops before any work; some down: those models are dropped
        unreachable, dropped = (unreachable, {}) if len(unreachable) == len(models) else ({}, unreachable)
        update, input_error = _setup(state, ctx, uses_llm, baselines=not unreachable)
        update["uses_llm"] = uses_llm
        update |= {"models": models, "dropped_models": dropped} if models else {}
        for name, why in dropped.items():
            emit(update, ModelDropped(model=name, reason=why, round=0))
        halts = (f"llm_unavailable: {next(iter(unreachable.values()))}",) if unreachable else ()
        reason = should_stop(update, ctx, Step(input_error=input_error, halts=halts, wrote=not halts))
        if reason:
            return Command(goto="report", update={**update, "stop_reason": reason})
        if update.get("candidates") and update["candidates"].value:
            return Command(goto="verifier", update=update)
        return Command(goto=new_round(after(state, update), 1), update=update)

    return setup


def _setup(
    state: KernelOptState, ctx: Context, uses_llm: bool, baselines: bool = True
) -> tuple[dict[str, Any], str | None]:
    """The fresh run's state, and what was wrong with its input (None when nothing); without
    `baselines`, the run's folder only (the run stops before any work)."""
    from kernelopt.harness import likely_cuda, prewarm

    prewarm()  # the fork server's imports (torch, Triton) overlap this process's own
    if ctx.candidates_per_round >= SPREAD_FROM and likely_cuda():  # the other GPUs' too (nodes/spread.py)
        try:
            for gpu in run_gpus(ctx.gpus)[1:]:
                prewarm(True, gpu)
        except InputError:
            pass  # said once, where the verifier is made
    fresh: dict[str, Any] = {
        "round": 0,
        "repairs": 0,
        "rounds_without_gain": 0,
        "best": None,
        "roofline": None,
        "diagnosis": None,
        "last_error": None,
        "candidates": Overwrite([]),
        "stop_reason": None,
        "baselines": None,
        "started_at": time.time(),  # the time budget counts from here
        "json_schema_ok": True,
    }
    try:
        problem, kernel = _sources(state)
        gpu = resolve_gpu(ctx)
    except (InputError, UnknownGPUError) as err:
        return {**fresh, "run_dir": state.get("run_dir") or "", "gpu_key": ""}, str(err)
    run_dir = Path(state["run_dir"]) if state.get("run_dir") else new_run_dir(ctx.runs_dir, problem)
    run_dir.mkdir(parents=True, exist_ok=True)
    problem_file = run_dir / "problem.py"
    problem_file.write_text(problem)
    update: dict[str, Any] = {**fresh, "run_dir": str(run_dir), "problem_file": str(problem_file), "gpu_key": gpu.key}
    emit(update, SetupDone(run_dir=str(run_dir), gpu=gpu.key))
    if not baselines:
        return update, None
    # the seed's process loads torch and the compiler while the baselines are timed; it uses the GPU after them
    ahead = _seed_ahead(update, ctx)
    try:  # a failure stops its reference process here: watch.watched knows no run folder yet
        with released_on_failure(update.get("run_dir")):
            return _timed_and_started(update, ctx, kernel, uses_llm, ahead)
    finally:
        if ahead is not None:  # used, or the run stopped before the seed: never left waiting
            ahead.cancel()


def _timed_and_started(
    update: dict[str, Any], ctx: Context, kernel: str | None, uses_llm: bool, ahead: SeedAhead | None
) -> tuple[dict[str, Any], str | None]:
    """The baselines timed, the profiles started ahead, and round 0's candidates: the user's kernel, the seed."""
    run_dir = Path(update["run_dir"])
    try:
        baselines = verifier_for(update, ctx).baselines()  # type: ignore[arg-type]
    except InputError as err:
        return update, str(err)
    update["baselines"] = baselines
    emit(update, BaselinesTimed(
        eager_ms=baselines.eager.median_ms if baselines.eager else None,
        compile_ms=baselines.compile.median_ms if baselines.compile else None,
        compile_error=baselines.compile_error,
        max_autotune_ms=baselines.max_autotune.median_ms if baselines.max_autotune else None,
        max_autotune_error=baselines.max_autotune_error,
        cuda_graph_ms=baselines.cuda_graph.median_ms if baselines.cuda_graph else None,
        wall_s=baselines.wall_s,
    ))
    prepare_profiles(update, ctx)
    starts: list[Candidate] = []
    if kernel:
        starts.append(written(kernel_path(run_dir, 0, 0), kernel, STARTING_KERNEL))
    seed, no_seed = _compiler_seed(update, ctx, len(starts), ahead)
    starts += [seed] if seed else []
    if not starts and not uses_llm:  # the offline optimizer tunes a verified kernel: it needs one to start
        template, no_template = _template_start(update, ctx, no_seed) if ctx.compiler_seed else (None, "")  # off: asked
        if template is None:
            none = f", no template for the problem{no_template}" if ctx.compiler_seed else ""
            return update, f"nothing to start from: no kernel, no model{none}, and {no_seed}"
        starts.append(template)
    if starts:
        update["candidates"] = Overwrite(starts)
    return update, None


def _template_start(update: dict[str, Any], ctx: Context, no_seed: str) -> tuple[Candidate | None, str]:
    """Round 0's kernel where there is no kernel, no model and no compiler seed could be made (no GPU here, or the
    compiler handing the work to a library): the first structural move of the problem's family at its first
    configuration, a template kernelopt writes for the family; else None and why not (" (...)", or "" where the
    problem has no family)."""
    moves = run_moves(update, ctx)  # a reference that cannot be read: no family, its one skip says why
    if not moves.instances:
        return None, f" ({moves.skipped[0].why})" if moves.family is None and moves.skipped else ""
    move = moves.instances[0]
    config = move.grid[0] if move.grid else {}
    knobs = ", ".join(f"{k}={v}" for k, v in config.items()) or "its own launch"
    return written(kernel_path(update["run_dir"], 0, 0, 0), with_config(move.source, config) if config else move.source,
                   f"{TEMPLATE_START} {move.name} at {knobs} ({no_seed.removeprefix('no compiler seed: ')})"), ""


def _seed_ahead(update: dict[str, Any], ctx: Context) -> SeedAhead | None:
    """The seed's child started before the baselines, where the run will make a seed here."""
    if not ctx.compiler_seed or no_gpu_reason():
        return None
    try:
        gpu = run_gpus(ctx.gpus)[0]
    except InputError:  # GPUs that are not here: the baselines say so, as the run's input error
        return None
    return seed_ahead(update["problem_file"], Path(ctx.runs_dir or default_runs_dir()), gpu)


def _compiler_seed(
    update: dict[str, Any], ctx: Context, branch: int, ahead: SeedAhead | None = None
) -> tuple[Candidate | None, str]:
    """Round 0's compiler seed as a candidate beside the user's kernel (or alone), or why there is none;
    `ahead`: the seed's child started before the baselines, if any."""
    why = no_gpu_reason() if ctx.compiler_seed else f"the compiler seed is turned off; {WHAT_TO_DO}"
    if why:
        return None, why
    try:
        seed = compiler_seed(update["problem_file"], Path(ctx.runs_dir or default_runs_dir()), run_gpus(ctx.gpus)[0],
                             ahead=ahead)
    except (SeedError, InputError) as err:
        emit(update, CompilerSeedMade(error=str(err), stages_s=getattr(err, "stages_s", None)))
        return None, f"no compiler seed: {err}"
    path = kernel_path(update["run_dir"], 0, 0, branch)
    candidate = written(path, Path(seed.path).read_text(), f"{COMPILER_SEED} (torch {seed.torch_version}, {seed.gpu})",
                        branch)
    # a cached seed's stages were another run's time: not this run's
    emit(update, CompilerSeedMade(path=str(path), cached=seed.cached, compile_s=seed.compile_s, kernels=seed.kernels,
                                  stages_s=None if seed.cached else seed.stages_s or None))
    return candidate, ""
