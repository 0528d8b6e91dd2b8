"""The least work a problem needs, counted on the reference: the roofline's floor."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

from kernelopt.hardware.roofline import dtype_name
from kernelopt.records import FloorEstimate


def _tensors(values: Any) -> list[torch.Tensor]:
    if isinstance(values, torch.Tensor):
        return [values]
    if isinstance(values, tuple | list):
        return [t for v in values for t in _tensors(v)]
    return []


def problem_dtype(inputs: list[Any]) -> str:
    """The dtype name of the first floating-point input ("fp32" when there is none)."""
    for tensor in _tensors(inputs):
        if tensor.is_floating_point():
            return dtype_name(tensor.dtype)
    return "fp32"


def estimate_floor(model: torch.nn.Module, inputs: list[Any]) -> FloorEstimate:
    """Each input, parameter and output moved once; FLOPs from torch's counter on the reference.

    torch's counter sees matmuls and convolutions only; elementwise and reduction work is
    counted as one operation per element read or written, which matters only where nothing
    else does (and there the floor is memory-bound anyway).
    """
    counter = FlopCounterMode(display=False)
    with counter:
        outputs = model(*inputs)
    parameters = [p for p in model.parameters()] + [b for b in model.buffers()]
    read_bytes = sum(t.numel() * t.element_size() for t in _tensors(inputs) + parameters)
    write_bytes = sum(t.numel() * t.element_size() for t in _tensors(outputs))
    elementwise = sum(t.numel() for t in _tensors(inputs) + _tensors(outputs))
    flops = float(max(counter.get_total_flops(), elementwise))
    return FloorEstimate(min_bytes=int(read_bytes + write_bytes), flops=flops, dtype=problem_dtype(inputs))
