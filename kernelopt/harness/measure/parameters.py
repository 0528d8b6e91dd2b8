"""The parameters case: a norm layer's affine parameters, which start as ones and zeros, drawn
from the case's seed in the reference and the candidate alike.

A LayerNorm, GroupNorm, BatchNorm or RMSNorm starts with weight 1 and bias 0, so a kernel that
leaves them out computes the same outputs as one that applies them on every other case: that
part of the work could never fail a check. In this case both models have those parameters (found
by name in the reference) set to values drawn on the CPU from the case's seed and the name, so
both processes draw the same: weights in [0.5, 1.5), biases in [-0.5, 0.5). They are restored
after the case. A candidate that keeps them under other names or shapes is not run on the case,
and its verdict says so.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

_NORMS: tuple[type, ...] = (nn.LayerNorm, nn.GroupNorm, nn.modules.batchnorm._NormBase) + (
    (nn.RMSNorm,) if hasattr(nn, "RMSNorm") else ()
)


def norm_parameters(model: nn.Module) -> dict[str, tuple[int, ...]]:
    """The floating parameters of the model's norm layers, by name, with their shapes."""
    found: dict[str, tuple[int, ...]] = {}
    for prefix, module in model.named_modules():
        if isinstance(module, _NORMS):
            for name, param in module.named_parameters(recurse=False):
                if param.is_floating_point():
                    found[f"{prefix}.{name}" if prefix else name] = tuple(param.shape)
    return found


def reference_norm_parameters(problem: Any) -> dict[str, tuple[int, ...]]:
    """The reference Model's norm parameters, built on the meta device (no memory, no init)."""
    try:
        with torch.device("meta"):
            return norm_parameters(problem.Model(*problem.get_init_inputs()))
    except Exception:  # a model that cannot be built on meta: no parameters case
        return {}


def mismatch(model: nn.Module, wanted: dict[str, tuple[int, ...]]) -> str | None:
    """Why the candidate cannot take the parameters case (a name or a shape not the reference's), or None."""
    own = {name: tuple(p.shape) for name, p in model.named_parameters()}
    for name, shape in wanted.items():
        if own.get(name) != shape:
            found = "missing" if name not in own else f"of shape {list(own[name])}"
            return f"ModelNew's parameter {name} is {found} where Model's is of shape {list(shape)}"
    return None


def _drawn(seed: int, name: str, param: torch.Tensor) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
    values = torch.rand(param.shape, generator=generator, dtype=torch.float32)  # fp32: the float64 twin gets the same
    values = values + 0.5 if name.rsplit(".", 1)[-1] == "weight" else values - 0.5
    return values.to(device=param.device, dtype=param.dtype)


@contextlib.contextmanager
def perturbed(
    model: nn.Module | None, case: dict[str, Any], names: dict[str, tuple[int, ...]] | None = None
) -> Iterator[None]:
    """The model with the named parameters (its own norm parameters where none are named) drawn
    from the case's "params" seed, restored after; nothing changes for a case without one."""
    if model is None or "params" not in case:
        yield
        return
    names = norm_parameters(model) if names is None else names
    params = dict(model.named_parameters())
    saved = {name: params[name].detach().clone() for name in names if name in params}
    try:
        with torch.no_grad():
            for name in saved:
                params[name].copy_(_drawn(int(case["params"]), name, params[name]))
        yield
    finally:
        with torch.no_grad():
            for name, value in saved.items():
                params[name].copy_(value)
