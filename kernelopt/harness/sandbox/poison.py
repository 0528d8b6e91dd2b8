"""Poisoned memory for the correctness runs of a candidate.

A kernel that returns `torch.empty` memory without writing all of it can pass when that memory
happens to hold the right answer (freed by an earlier run) or zeros. While armed, every
uninitialised allocation is filled with NaN (or a sentinel for integers), and on CUDA the
caching allocator is primed with NaN-filled blocks, so unwritten output never looks right.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

INT_SENTINEL = -1_234_567
_ORIGINALS: dict[str, Callable[..., Any]] = {}
_TARGETS = {
    "empty": torch,
    "empty_like": torch,
    "empty_strided": torch,
}


def _fill(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.numel() == 0:
        return tensor
    _STATE.busy += 1
    try:
        with torch._C.DisableTorchFunctionSubclass():  # a subclass's __torch_function__ is not run by our fill
            _fill_values(tensor)
    finally:
        _STATE.busy -= 1
    return tensor


def _fill_values(tensor: torch.Tensor) -> None:
    if tensor.is_floating_point() or tensor.is_complex():
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(INT_SENTINEL if tensor.dtype not in (torch.uint8, torch.int8) else 77)


def _poisoned(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def allocate(*args: Any, **kwargs: Any) -> Any:
        tensor = original(*args, **kwargs)
        return _fill(tensor) if _STATE.filling else tensor

    return allocate


class _State:
    filling = True
    busy = 0  # inside _fill: the fill is the harness's own, even where the candidate's code allocated


def filling_now() -> bool:
    """Whether the operator being dispatched is this module's fill of a fresh allocation."""
    return _STATE.busy > 0


_STATE = _State()


def pause() -> None:
    """Stop filling (timing must not pay for the fill) but leave the wrappers in place, so that
    the candidate cannot tell timed calls from checked ones by looking at torch.empty."""
    _STATE.filling = False


def arm(device: torch.device, prime_bytes: int = 1 << 30) -> None:
    """Poison uninitialised allocations from now on (idempotent)."""
    _STATE.filling = True
    if _ORIGINALS:
        return
    if device.type == "cuda":
        # Cached blocks that hold NaN: later allocations of any size reuse them.
        blocks = [torch.full((prime_bytes // 4 // 8,), float("nan"), device=device) for _ in range(8)]
        del blocks
    for name, owner in _TARGETS.items():
        _ORIGINALS[name] = getattr(owner, name)
        setattr(owner, name, _poisoned(_ORIGINALS[name]))
    _ORIGINALS["Tensor.new_empty"] = torch.Tensor.new_empty
    torch.Tensor.new_empty = _poisoned(torch.Tensor.new_empty)  # type: ignore[method-assign]
