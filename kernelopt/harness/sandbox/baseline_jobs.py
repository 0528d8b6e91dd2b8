"""The baselines that could take a reference process down, each timed in a process of its own.

`torch.compile(mode="max-autotune")` may compile for minutes, and a CUDA-graph capture that an
op refuses can leave the device in a state nobody should judge candidates on. So neither runs in
the reference process (which holds the expected outputs): each is a single-use job forked from
the fork server like a candidate, under the watchdog's time limit, and a failure costs that
baseline only. Both build the reference's model and inputs from the same seeds and time them
with the candidates' protocol, holding the device lock while they do.

Inductor's caches (the FX graph cache and the autotuning cache) live in the folder the request
names (one per problem, under the runs folder): a repeated or resumed run finds the compiled
graph and its tuned configurations there and does not pay for the compile again.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from kernelopt.harness.measure.cases import case_inputs
from kernelopt.harness.measure.timing import TimingConfig, measure
from kernelopt.harness.problem import load_problem
from kernelopt.harness.sandbox.calls import build_model, outputs_of, sync
from kernelopt.harness.sandbox.locks import device_lock
from kernelopt.records import one_line

# max-autotune's kernels (autotuned templates, coordinate-descent tuning) without its CUDA-graph
# trees: a tree copies every input that is not a parameter into buffers of its own on each
# replay, so a large input's copy was timed as the compiler's kernel (on the H200, ReLU over
# 6.4 GB: 6.58 ms with the trees, 3.02 ms without). Launch overhead has its own baseline, the
# CUDA-graph replay of eager.
MAX_AUTOTUNE_MODE = "max-autotune-no-cudagraphs"
COMPILE_PHASE = "max-autotune compile"
CAPTURE_PHASE = "cuda-graph capture"
WARMUP_CALLS = 3  # eager calls on a side stream before capture: lazy initialisation stays out of the graph


def _mark(req: dict[str, Any], phase: str) -> None:
    """The phase, for the parent's watchdog (its progress file) and this job's log."""
    with open(req["progress_path"], "a") as handle:
        handle.write(f"{phase}\n")
    print(f"[{time.monotonic():12.3f}] {phase}", flush=True)


def _model_and_inputs(req: dict[str, Any]) -> tuple[Any, list[Any], torch.device]:
    """The reference's model and its timing inputs, made as the reference process makes them."""
    device = torch.device(req["device"])
    problem = load_problem(req["problem_path"])
    model = build_model(problem.Model, problem, req["init_seed"], device)
    return model, case_inputs(problem, {"seed": req["seeds"][0]}, device), device


def _timed(req: dict[str, Any], fn: Any, device: torch.device) -> dict[str, Any]:
    """`fn` timed under the device lock with the run's protocol."""
    _mark(req, "lock")
    with device_lock(req["device"], req.get("lock_path")):
        _mark(req, "timing")
        timing = measure(fn, device, TimingConfig(**req.get("timing", {})), "cpu")
    return asdict(timing)


def _failed(what: str, err: BaseException) -> dict[str, Any]:
    return {"ok": False, "reason": f"{what}: {type(err).__name__}: {one_line(str(err), 300)}"}


def fx_graph_cache_hits() -> int:
    """How many graphs this process took from Inductor's FX graph cache instead of compiling them."""
    from torch._dynamo.utils import counters

    return int(counters.get("inductor", {}).get("fxgraph_cache_hit", 0))


def time_max_autotune(req: dict[str, Any]) -> dict[str, Any]:
    """max-autotune of the reference (MAX_AUTOTUNE_MODE): compiled or taken from the cache, then timed."""
    cache_dir = Path(req["compile_cache_dir"])
    cache_dir.mkdir(parents=True, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)  # read by Inductor at each use: set before the compile
    import torch._inductor.config as inductor_config

    inductor_config.fx_graph_cache = True
    inductor_config.autotune_local_cache = True
    _mark(req, "build")
    model, inputs, device = _model_and_inputs(req)
    # On a GPU the autotuning times kernels: it holds the device lock, so that it neither
    # disturbs another process's measurement nor picks its configurations on a busy GPU.
    _mark(req, "lock")
    with device_lock(req["device"], req.get("lock_path")) if device.type == "cuda" else contextlib.nullcontext():
        _mark(req, COMPILE_PHASE)
        began = time.monotonic()
        try:
            with torch.no_grad():
                compiled = torch.compile(model, mode=MAX_AUTOTUNE_MODE)
                compiled(*inputs)  # the compile (and the autotuning) happen in the first call
                sync(device)
        except Exception as err:  # a compile that fails costs this baseline, not the run
            return _failed("the max-autotune compile failed", err)
        compile_s = time.monotonic() - began
    hit = fx_graph_cache_hits() > 0
    with torch.no_grad():
        timing = _timed(req, lambda: compiled(*inputs), device)
    _mark(req, "done")
    return {"ok": True, "timing": timing, "compile_s": round(compile_s, 3), "cache_hit": hit}


def time_cuda_graph(req: dict[str, Any]) -> dict[str, Any]:
    """Eager captured once in a CUDA graph and timed as replays: the reference without launch overhead.

    The replay's output is checked against an eager call first: a graph that does not compute
    what eager computes is no baseline.
    """
    _mark(req, "build")
    model, inputs, device = _model_and_inputs(req)
    _mark(req, CAPTURE_PHASE)
    try:
        with torch.no_grad():
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                for _ in range(WARMUP_CALLS):
                    model(*inputs)
            torch.cuda.current_stream(device).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                captured = outputs_of(model(*inputs))
            graph.replay()
            expected = outputs_of(model(*inputs))
            sync(device)
            if not all(torch.equal(a, b) or torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)
                       for a, b in zip(captured, expected, strict=True)):
                return {"ok": False, "reason": "the CUDA graph's replay does not compute what eager computes"}
    except Exception as err:  # an op that cannot be captured costs this baseline, not the run
        return _failed("the CUDA-graph capture failed", err)
    timing = _timed(req, graph.replay, device)
    _mark(req, "done")
    return {"ok": True, "timing": timing}


JOBS = {"max-autotune": time_max_autotune, "cuda-graph": time_cuda_graph}
