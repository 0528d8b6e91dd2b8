"""Where a suite's problems run: this process, a pool over this host's GPUs (or CPU workers), or Ray.

`--gpus 0,1` names GPUs in CUDA's numbering here (under CUDA_VISIBLE_DEVICES, as nvidia-smi
numbers them when it is unset); without it every visible GPU gets a worker when there are
several. `--workers N` is for a host without a GPU. `--ray ADDRESS` sends each problem to a
Ray cluster as a task holding one GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path

from kernelopt.hardware.gpus import missing_gpus, visible_gpu_count
from kernelopt.records import InputError
from kernelopt.scale.pool import Notify, PoolExecutor, cpu_slots, gpu_slots
from kernelopt.seed.obtain import gpu_name, no_gpu_reason
from kernelopt.suite import Executor, LocalExecutor

RAY_INSTALL = "pip install 'kernelopt[ray]'"
WORKERS = "workers"  # OUT/workers/: each pool worker's log


def gpu_list(text: str) -> list[int]:
    """An argparse type: GPU indices as `0,1` (no repeats: a GPU runs one problem at a time)."""
    try:
        indices = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of GPU indices such as 0,1") from None
    if any(i < 0 for i in indices):
        raise argparse.ArgumentTypeError(f"{text!r}: GPU indices start at 0")
    if len(set(indices)) != len(indices):
        raise argparse.ArgumentTypeError(f"{text!r} names a GPU twice; each GPU gets one worker")
    return indices


def check_placement(gpus: list[int] | None, workers: int | None, ray: str | None) -> None:
    """InputError unless at most one way of placing work is asked for, and Ray is there when asked."""
    given = [flag for flag, value in (("--gpus", gpus), ("--workers", workers), ("--ray", ray)) if value]
    if len(given) > 1:
        raise InputError(f"{' and '.join(given)} do not go together: --gpus and --workers place work on this host, "
                         "--ray on a cluster")
    if ray and importlib.util.find_spec("ray") is None:
        raise InputError(f"--ray needs Ray, which is not installed: {RAY_INSTALL} (without --ray the suite "
                         "runs on this host's GPUs)")


def choose_executor(gpus: list[int] | None, workers: int | None, ray: str | None, out_dir: Path,
                    notify: Notify) -> Executor:
    """The executor the flags ask for (see the module's docstring); InputError when this host cannot give it."""
    if ray:
        from kernelopt.scale.ray_tasks import RayExecutor

        return RayExecutor(ray, notify)
    count = visible_gpu_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if workers:
        if count:
            raise InputError(f"--workers is for a host without a GPU; this one has {count}: use --gpus "
                             f"{','.join(map(str, range(count)))} (one worker per GPU)")
        return PoolExecutor(cpu_slots(workers), out_dir / WORKERS, notify) if workers > 1 else LocalExecutor()
    if gpus:
        wrong = missing_gpus(gpus, count)
        if wrong:
            raise InputError(wrong)
        return PoolExecutor(gpu_slots(gpus, visible), out_dir / WORKERS, notify)
    if count > 1:
        return PoolExecutor(gpu_slots(range(count), visible), out_dir / WORKERS, notify)
    return LocalExecutor()


def describe(executor: Executor) -> str | None:
    """Where the problems go, said once at the start; None for this process alone."""
    if isinstance(executor, PoolExecutor):
        logs = f"; worker logs in {executor.log_dir}" if executor.log_dir else ""
        return f"on {', '.join(slot.label for slot in executor.slots)}, each problem to whichever is free{logs}"
    where = getattr(executor, "address", None)
    return f"on the Ray cluster at {where}, one task holding one GPU per problem" if where else None


def timing_device(gpus: list[int] | None, ray: str | None) -> str | None:
    """The kind of GPU a suite started here is timed on: nvidia-smi's name of the first GPU --gpus names (CUDA's
    numbering, mapped through CUDA_VISIBLE_DEVICES), else of the first visible one; "cpu" on a host without one (the
    interpreter's times); None under --ray, where the cluster's workers time, not this host."""
    if ray:
        return None
    if no_gpu_reason() is not None:
        return "cpu"
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    index = gpus[0] if gpus else 0
    return gpu_name(visible[index] if index < len(visible) else str(index))
