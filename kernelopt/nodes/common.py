"""What every node needs: the run's settings, its verifier, its GPU, and a way to report."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from kernelopt.budget import add_tokens
from kernelopt.context import Context
from kernelopt.events import Event
from kernelopt.hardware.gpus import run_gpus
from kernelopt.hardware.specs import GPUSpec, detect_gpu_spec, get_gpu_spec
from kernelopt.harness import timing_config_for
from kernelopt.harness.problem import source_hash
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import Moves
from kernelopt.offline.moves.remote import moves_in_child
from kernelopt.records import Candidate
from kernelopt.runs import compile_cache_root, log_event
from kernelopt.state import KernelOptState

DEFAULT_TARGET_GPU = "H200"


def context_of(runtime: Runtime[Context] | None) -> Context:
    """The run's Context; the defaults where the caller gave none (or a plain dict)."""
    ctx = getattr(runtime, "context", None)
    if isinstance(ctx, Context):
        return ctx
    if isinstance(ctx, dict):
        return Context(**ctx)
    return Context()


def resolve_gpu(ctx: Context) -> GPUSpec:
    """The GPU named in the context, else the one present, else the default target."""
    if ctx.gpu:
        return get_gpu_spec(ctx.gpu)
    return detect_gpu_spec() or get_gpu_spec(DEFAULT_TARGET_GPU)


def verifiers_for(state: KernelOptState, ctx: Context) -> list[Verifier]:
    """The run's verifier first (its GPU takes the baselines, the profiles and the best's time),
    then one for each further GPU that verifies candidates beside it (Context.gpus; see spread.py)."""
    settings = HarnessSettings.detect(
        seeds=ctx.seeds,
        timeout_s=ctx.timeout_s,
        mem_limit_gb=ctx.mem_limit_gb,
        time_compile=ctx.time_compile,
        max_autotune=ctx.max_autotune_baseline,
        max_autotune_limit_s=ctx.max_autotune_limit_s,
        compile_cache_dir=compile_cache_root(ctx.runs_dir),
        timing=timing_config_for(
            get_gpu_spec(state["gpu_key"]).l2_cache_mb if state.get("gpu_key") else None,
            ctx.timing_target_ms,
            ctx.timing_min_trials,
            ctx.timing_max_trials,
        ),
    )
    gpus = run_gpus(ctx.gpus) if settings.use_cuda else [None]
    root = f"{state['run_dir']}/harness"
    return [Verifier(state["problem_file"], root, dataclasses.replace(settings, gpu=gpu)) for gpu in gpus]


def verifier_for(state: KernelOptState, ctx: Context) -> Verifier:
    """The run's own verifier: the one on its GPU."""
    return verifiers_for(state, ctx)[0]


def run_moves(state: KernelOptState | dict[str, Any], ctx: Context, source: str | None = None) -> Moves:
    """The structural moves for the run's problem on the run's GPU (its SMs, compute capability and L2), with the
    rewrites of the best kernel's `source` where given, worked out in a child of the run's fork server (remote.py)."""
    spec = get_gpu_spec(state["gpu_key"])
    verifier = verifier_for(state, ctx)  # type: ignore[arg-type]  (a fresh run's update has the keys it reads)
    return moves_in_child(verifier, state["problem_file"], spec.sm_count, source,
                          spec.compute_capability, spec.l2_cache_mb)


def emit(state: KernelOptState | dict[str, Any], event: Event) -> None:
    """Report progress: a custom stream event for watchers, and a line in events.jsonl (events.py)."""
    payload = event.payload()
    try:
        get_stream_writer()(payload)
    except RuntimeError:  # not running inside a graph (a node called directly)
        pass
    if state.get("run_dir"):
        log_event(state["run_dir"], payload)


def after(state: KernelOptState | dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """The state as `update` leaves it, its reducers applied: what a node routing through
    `Command` decides on, and what a branch it starts with `Send` receives."""
    merged = {**state, **update}
    for key in ("tokens", "model_tokens"):
        if key in update:
            merged[key] = add_tokens(state.get(key), update[key])
    if "attempts" in update:
        merged["attempts"] = [*state.get("attempts", []), *update["attempts"]]
    if "candidates" in update:
        written = update["candidates"]
        merged["candidates"] = written.value if isinstance(written, Overwrite) else [
            *state.get("candidates", []), *written
        ]
    merged.pop("progress", None)
    return merged


def written(path: Path, text: str, change: str, branch: int = 0, digest: str | None = None,
            **fields: Any) -> Candidate:
    """Write a candidate's kernel to `path`; the Candidate carries the file's source hash (`digest`,
    when the caller has taken it already)."""
    path.write_text(text)
    return Candidate(str(path), change, branch, source_hash=digest or source_hash(text), **fields)


def digest_of(candidate: Candidate) -> str:
    """A written candidate's source hash: the one it carries, else (a checkpoint from before
    candidates carried it) its file's."""
    assert candidate.path is not None
    return candidate.source_hash or source_hash(Path(candidate.path).read_text())
