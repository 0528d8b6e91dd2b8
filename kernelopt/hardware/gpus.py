"""The host's GPUs, found without importing torch where the driver's tool answers: which physical
GPU a CUDA device number means under CUDA_VISIBLE_DEVICES, how many a process can use, and which
a run's candidates are verified on. The device locks (harness/sandbox/locks.py) are named by what
this module finds, so that every process on the machine agrees on one GPU's lock."""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from kernelopt.records import InputError


def device_key(device: str, visible: str | None = None, uuids: list[str] | None = None) -> str:
    """The physical device behind `device` ("cuda", "cuda:1", "cpu"), named by its UUID where the
    driver tells it ("cuda-GPU-8f2c..."), so that a GPU named by index in one run and by UUID in
    another (CUDA_VISIBLE_DEVICES=1 or =GPU-8f2c...) takes one lock; else "cuda-1" for the GPU
    that CUDA_VISIBLE_DEVICES (`visible`, default this process's) maps it to."""
    kind, _, index = device.partition(":")
    if kind != "cuda":
        return kind
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    ids = [part.strip() for part in visible.split(",")] if visible else []
    position = int(index or 0)
    physical = ids[position] if position < len(ids) else str(position)
    uuids = gpu_uuids() if uuids is None else uuids
    if physical.isdigit() and int(physical) < len(uuids):
        physical = uuids[int(physical)]
    return f"cuda-{physical}"


@functools.lru_cache(maxsize=1)
def gpu_uuids() -> list[str]:
    """The host's GPU UUIDs by index (nvidia-smi's order, the PCI bus's: CUDA's too on a host of
    like GPUs); [] where nvidia-smi is missing or fails (the locks then go by index)."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10, check=False)
    except Exception:  # no driver tool, or a process that may not start one: go by index
        return []
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return lines if done.returncode == 0 and all(line.startswith("GPU-") for line in lines) else []


def physical_gpus(indices: Sequence[int], visible: str | None) -> list[str]:
    """The physical GPUs behind `indices` in CUDA's numbering here (under CUDA_VISIBLE_DEVICES=`visible`),
    as CUDA_VISIBLE_DEVICES names them: a process started with one of these sees that GPU alone."""
    ids = [part.strip() for part in visible.split(",")] if visible else None
    return [ids[i] if ids else str(i) for i in indices]


def missing_gpus(indices: Sequence[int], count: int, flag: str = "--gpus") -> str | None:
    """What is wrong with GPU `indices` on a host that shows `count` GPUs, in one line; None when nothing is."""
    missing = [i for i in indices if i >= count]
    if not missing:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    seen = f"GPUs 0 to {count - 1}" if count else "no CUDA GPU"
    return (f"{flag} {','.join(map(str, indices))}: this host shows {seen}"
            f"{f' (CUDA_VISIBLE_DEVICES={visible})' if visible is not None else ''}; "
            f"name GPUs it has, or leave {flag} out to use what is here")


def _driver_present() -> bool:
    """Any NVIDIA device file (nvidiactl, nvidia-uvm, nvidia0, ...) or WSL's: a driver is here."""
    dev = Path("/dev")
    return any(dev.glob("nvidia*")) or (dev / "dxg").exists()


def cuda_available() -> bool:
    """torch.cuda.is_available(), without torch's seconds of imports on a host with no NVIDIA
    device file of any kind (nor WSL's): there no CUDA GPU can be, whatever torch would say."""
    if not _driver_present():
        return False
    import torch

    return bool(torch.cuda.is_available())


def visible_gpu_count() -> int:
    """The CUDA GPUs this process can use, counted without importing torch where nvidia-smi
    answers (a suite's workers then start at once, not after the driver's seconds of imports):
    the driver's list under CUDA_VISIBLE_DEVICES; else torch's count."""
    uuids = gpu_uuids()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if uuids:
        if visible is None:
            return len(uuids)
        ids = [part.strip() for part in visible.split(",") if part.strip()]
        if all((i.isdigit() and int(i) < len(uuids)) or i in uuids for i in ids):
            return len(ids)  # else (an id CUDA would stop at, a UUID's prefix): torch counts
    elif not _driver_present():
        return 0  # no NVIDIA device file (nor WSL's): no CUDA GPU, known without torch's seconds of imports
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def run_gpus(indices: Sequence[int] | None) -> list[str | None]:
    """The GPUs a run's candidates are verified on, its own first, as CUDA_VISIBLE_DEVICES names
    them (None: this process's own cuda:0, whose fork server `prewarm` has started); without
    `indices`, every visible GPU."""
    count = visible_gpu_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not indices:
        return [None, *physical_gpus(range(1, count), visible)]
    wrong = missing_gpus(indices, count, "gpus")
    if wrong:
        raise InputError(wrong)
    return [None if index == 0 else gpu for index, gpu in zip(indices, physical_gpus(indices, visible), strict=True)]
