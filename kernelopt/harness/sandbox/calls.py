"""Calling a problem's or a candidate's model the same way in every process: building it from
the seed on the device, reading its outputs, syncing, and running without reduced precision;
and the device memory a candidate's cases take (refilled, give_back)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch


class Rejected(Exception):
    """The candidate broke a rule; `rule` is the rule's id, the message says how."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


def outputs_of(result: Any) -> list[torch.Tensor]:
    # Exact container types too: a list subclass can run work when it is iterated (after the timer).
    values = list(result) if type(result) in (tuple, list) else [result]
    for value in values:
        # Exact type: a Tensor subclass can defer work until it is read (outside the timer).
        if type(value) is not torch.Tensor:
            raise Rejected(
                "output-type",
                f"forward returned {type(value).__name__}; return plain torch.Tensor outputs",
            )
    return values


def build_model(cls: type, problem: Any, init_seed: int, device: torch.device) -> Any:
    """The problem's (or the candidate's) module, its parameters drawn on the CPU from the seed
    (as KernelBench builds them), then moved to the device with any tensor it keeps outside its
    parameters and buffers.

    Drawn on the device, they depended on more than the seed: on the H200 a process whose
    allocator had been primed with NaN blocks (a candidate's worker) drew other weights from the
    same seed than one that had not (the reference), and every problem with drawn parameters was
    rejected. The CPU's generator gives the same values in every process.
    """
    torch.manual_seed(init_seed)
    with torch.device("cpu"):
        model = cls(*problem.get_init_inputs())
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
        for module in model.modules():
            for name, value in list(vars(module).items()):
                if type(value) is torch.Tensor and value.device.type != device.type:
                    setattr(module, name, value.to(device))
    return model


def state_bytes(model: Any) -> int:
    """The bytes of a module's parameters and buffers (0 for a function): what each built copy of it holds."""
    if not isinstance(model, torch.nn.Module):
        return 0
    return sum(t.nbytes for t in (*model.parameters(), *model.buffers()))


def parameter_digest(model: Any) -> str:
    """A short fingerprint of a module's floating parameters and buffers for the logs: the
    reference's and a candidate's, built from one seed, should read the same."""
    if not isinstance(model, torch.nn.Module):
        return "not a module"
    tensors = [t for t in (*model.parameters(), *model.buffers()) if t.is_floating_point()]
    with torch.no_grad():
        total = sum(float(t.double().sum()) for t in tensors)
        size = sum(t.numel() for t in tensors)
    return f"{len(tensors)} tensors, {size} values, sum {total:.9e}"


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def exact_math() -> Iterator[None]:
    """No reduced-precision shortcuts (TF32 convolutions, fp16/bf16 partial sums) while the
    expected outputs are computed: the yardstick's own error must stay under the tolerances.
    The baselines are timed with PyTorch's defaults, as users run them."""
    flags = (
        (torch.backends.cuda.matmul, "allow_tf32"),
        (torch.backends.cudnn, "allow_tf32"),
        (torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"),
        (torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"),
    )
    saved = [getattr(owner, name) for owner, name in flags]
    for owner, name in flags:
        setattr(owner, name, False)
    try:
        yield
    finally:
        for (owner, name), value in zip(flags, saved, strict=True):
            setattr(owner, name, value)


def refilled(buffers: list[Any], values: list[Any]) -> list[Any]:
    """`buffers` refilled with `values`, which go on return: a multi-GB input is held twice only to copy it."""
    for buf, value in zip(buffers, values, strict=True):
        if isinstance(buf, torch.Tensor):
            buf.copy_(value)
    return buffers


def give_back(device: torch.device) -> None:
    """Hand a multi-GB case's freed blocks back to the driver: the reference process, beside
    this one on the GPU, needs that memory to judge the case."""
    if device.type == "cuda" and torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device) > 1 << 30:
        torch.cuda.empty_cache()


def send_timed(link: Any, snapshots: list[Any], device: torch.device) -> None:
    """The sampled timed calls' outputs to the reference process as each call left them (its snapshot: not as later
    calls may have rewritten them), one at a time, each dropped once judged, the freed blocks given back first: the
    reference computes the timing case's yardstick beside what this process holds. At KernelBench 34's 7.5 GB outputs,
    three returned outputs, three snapshots and the inputs held 50 of an H100's 80 GB, and the reference ran out."""
    while snapshots:
        give_back(device)
        link.send("timed", -1, 0, outputs_of(snapshots.pop(0)))
