"""Record the Triton code that torch.compile (Inductor) writes for KernelBench problems.

On a CUDA host, for each problem file and each mode, compiles the reference `Model` with dynamic
shapes, runs it once on its own inputs (made on the GPU), and writes one JSON per problem and mode:
the generated output-code modules, the launch configuration the autotuner picked for each kernel,
the input shapes and dtypes, and the torch, Triton and GPU names. The files are fixtures for the
compiler seed's translator, which CI tests on a machine without a GPU (Inductor writes Triton only
for a GPU).

    python3 benchmarks/record_inductor.py OUT_DIR PROBLEM_OR_DIR [...] [--modes default,max_autotune_triton]
        [--timeout-s 240] [--jobs 4]

Each problem runs in a child process of its own with a time limit, so one that hangs or runs out
of memory costs only its own record (written with its error); `--jobs` children run at once
(the autotuner's picks are then made on a shared GPU: good for the translator's fixtures, not
for timing).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

MODES = ("default", "max_autotune_triton")


def problem_name(path: Path) -> str:
    """The record's name: the file's stem, or its folder's name for an example's problem.py."""
    return path.parent.name if path.stem == "problem" else path.stem


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"problem_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _picked_configs() -> dict[str, dict[str, Any]]:
    """Each live autotuned kernel's chosen launch configuration, by kernel name."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    picked: dict[str, dict[str, Any]] = {}
    for obj in gc.get_objects():
        try:
            if not isinstance(obj, CachingAutotuner):
                continue
        except ReferenceError:  # a dead weak proxy among the heap's objects
            continue
        name = (getattr(obj, "inductor_meta", None) or {}).get("kernel_name") or getattr(obj.fn, "__name__", "?")
        launchers = getattr(obj, "launchers", None) or []
        configs = [launcher.config for launcher in launchers] or list(getattr(obj, "configs", []))
        if not configs:
            continue
        config = configs[0]
        picked[name] = {
            "kwargs": {k: v for k, v in config.kwargs.items() if isinstance(v, (int, float, bool, str))},
            "num_warps": config.num_warps,
            "num_stages": config.num_stages,
            "candidates": len(getattr(obj, "configs", []) or []),
        }
    return picked


def record_one(problem: Path, mode: str) -> dict[str, Any]:
    """The record of one problem compiled in one mode (run in a child process)."""
    import torch
    import triton
    from torch._inductor import config as inductor_config
    from torch._inductor.utils import run_and_get_code

    module = _load(problem)
    result: dict[str, Any] = {
        "problem": problem_name(problem),
        "mode": mode,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "gpu": torch.cuda.get_device_name(0),
        "error": None,
    }
    torch.manual_seed(0)
    with torch.device("cuda"):
        init = module.get_init_inputs()
        model = module.Model(*init).cuda()
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]
    result["init_inputs"] = [x if isinstance(x, (int, float, bool, str)) else repr(x) for x in init]
    result["inputs"] = [
        {"shape": list(x.shape), "dtype": str(x.dtype).removeprefix("torch.")} if isinstance(x, torch.Tensor)
        else {"value": x if isinstance(x, (int, float, bool)) else repr(x)}
        for x in inputs
    ]
    patches: dict[str, Any] = {}
    compile_mode: str | None = None
    if mode == "max_autotune_triton":
        patches = {"max_autotune_gemm_backends": "TRITON"}
        compile_mode = "max-autotune-no-cudagraphs"
    started = time.perf_counter()
    try:
        with inductor_config.patch(patches):
            compiled = torch.compile(model, dynamic=True, mode=compile_mode)
            _, codes = run_and_get_code(compiled, *inputs)
        torch.cuda.synchronize()
        result["codes"], result["configs"] = list(codes), {}
        result["configs"] = _picked_configs()
    except Exception as err:  # recorded: the fixture says what Inductor (or the record) could not do
        result.setdefault("codes", [])
        result.setdefault("configs", {})
        result["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:400] if str(err) else ''}"
    result["compile_s"] = round(time.perf_counter() - started, 2)
    return result


def _problems(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for name in paths:
        path = Path(name)
        found.extend(sorted(path.glob("*.py")) if path.is_dir() else [path])
    return found


def _record_in_child(out: Path, problem: Path, mode: str, timeout_s: float) -> str:
    """Record one problem in one mode in a child process; write its JSON; its progress line."""
    (out / mode).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, __file__, str(out), str(problem), "--child", str(problem), mode],
            capture_output=True, text=True, timeout=timeout_s,
        )
        lines = done.stdout.strip().splitlines()
        record = json.loads(lines[-1]) if done.returncode == 0 and lines else {
            "problem": problem_name(problem), "mode": mode, "codes": [], "configs": {},
            "error": f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}",
        }
    except subprocess.TimeoutExpired:
        record = {"problem": problem_name(problem), "mode": mode, "codes": [], "configs": {},
                  "error": f"timeout after {timeout_s:.0f} s"}
    (out / mode / f"{problem_name(problem)}.json").write_text(json.dumps(record, indent=1) + "\n")
    return (f"{mode} {problem_name(problem)}: {len(record['codes'])} module(s), {len(record['configs'])} kernel(s), "
            f"{record.get('error') or 'ok'} ({time.perf_counter() - started:.1f} s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--timeout-s", type=float, default=240.0)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(record_one(Path(args.child[0]), args.child[1])))
        return 0
    work = [(problem, mode) for mode in args.modes.split(",") for problem in _problems(args.problems)]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for line in pool.map(lambda item: _record_in_child(args.out, *item, args.timeout_s), work):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
