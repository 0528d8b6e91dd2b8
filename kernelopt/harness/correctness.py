"""Comparing a candidate's outputs with the reference's: dtype-aware, NaN/Inf never pass."""

from __future__ import annotations

from types import MappingProxyType

import torch

# (atol, rtol) per dtype, KernelBench's defaults.
TOLERANCES = MappingProxyType(
    {
        torch.float64: (1e-6, 1e-6),
        torch.float32: (1e-4, 1e-4),
        torch.float16: (1e-2, 1e-2),
        torch.bfloat16: (1e-2, 1e-2),
    }
)


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(atol, rtol) for outputs of `dtype`; exact for integers and booleans."""
    return TOLERANCES.get(dtype, (0.0, 0.0))


def compare_outputs(
    expected: list[list[torch.Tensor]],
    actual: list[list[torch.Tensor]],
    labels: list[str] | None = None,
    atol_scales: list[float] | None = None,
) -> str | None:
    """None when every case matches, else one line saying where and by how much it does not.

    `labels` name the cases in that line; `atol_scales` multiply a case's absolute tolerance
    (a case whose outputs are larger than the first case's by that factor gets it in atol, so
    that rounding on large values is judged as on ordinary ones).
    """
    if len(expected) != len(actual):
        return f"candidate produced {len(actual)} result sets for {len(expected)} test cases"
    for case, (want_outputs, got_outputs) in enumerate(zip(expected, actual, strict=True)):
        problem = compare_case(want_outputs, got_outputs, atol_scales[case] if atol_scales else 1.0)
        if problem:
            return f"case {case}" + (f" ({labels[case]})" if labels and labels[case] else "") + problem
    return None


def compare_case(
    want_outputs: list[torch.Tensor], got_outputs: list[torch.Tensor], atol_scale: float = 1.0
) -> str | None:
    """None when one case's outputs match, else where they do not (", output 1: ..."), to follow
    the case's name."""
    if len(want_outputs) != len(got_outputs):
        return f": forward returned {len(got_outputs)} outputs, the reference {len(want_outputs)}"
    for index, (want, got) in enumerate(zip(want_outputs, got_outputs, strict=True)):
        problem = _compare_tensor(want, got, atol_scale)
        if problem:
            return f", output {index}: {problem}"
    return None


def magnitude_ratios(expected: list[list[torch.Tensor]]) -> list[float]:
    """Each case's largest float output magnitude over the first case's (at least 1)."""

    def largest(outputs: list[torch.Tensor]) -> float:
        floats = [t for t in outputs if t.is_floating_point() and t.numel()]
        return max((float(t.double().abs().max()) for t in floats), default=0.0)

    base = largest(expected[0]) if expected else 0.0
    return [max(1.0, largest(case) / base) if base > 0 else 1.0 for case in expected]


def _compare_tensor(want: torch.Tensor, got: torch.Tensor, atol_scale: float = 1.0) -> str | None:
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)} differs from the reference's {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} differs from the reference's {want.dtype}"
    if want.numel() == 0:
        return None
    if not (want.is_floating_point() or want.is_complex()):
        mismatched = int((want != got).sum())
        return f"{mismatched} of {want.numel()} elements differ (exact match required)" if mismatched else None
    # On a CUDA host the comparison runs there: outputs of a few hundred MB take seconds on the CPU.
    device = want.device if want.is_cuda else ("cuda" if torch.cuda.is_available() else "cpu")
    want64, got64 = want.to(device).double(), got.to(device).double()
    want_finite = torch.isfinite(want64)
    got_finite = torch.isfinite(got64)
    bad_nonfinite = got_finite != want_finite
    if bool(bad_nonfinite.any()):
        count = int(bad_nonfinite.sum())
        return (
            f"{count} of {want.numel()} elements are NaN/Inf where the reference is finite "
            "(unwritten or overflowed output?)"
        )
    both_special = ~want_finite & ~got_finite
    same_special = (want64 == got64) | (want64.isnan() & got64.isnan())
    wrong_special = both_special & ~same_special
    if bool(wrong_special.any()):
        return (
            f"{int(wrong_special.sum())} of {want.numel()} elements are NaN or Inf of another kind than the "
            "reference's (NaN for inf, or the sign of inf)"
        )
    atol, rtol = tolerance(want.dtype)
    atol *= atol_scale
    both = want_finite & got_finite
    error = (got64 - want64).abs().where(both, torch.zeros_like(want64))
    allowed = atol + rtol * want64.abs()
    off = error > allowed.where(both, torch.full_like(want64, float("inf")))
    if not bool(off.any()):
        return None
    worst = int(torch.argmax(error - allowed.where(both, torch.zeros_like(want64))))
    where = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst), want.shape))
    return (
        f"{int(off.sum())} of {want.numel()} elements outside atol={atol:g}, rtol={rtol:g}; "
        f"worst at {where}: got {got64.flatten()[worst].item():.6g}, expected {want64.flatten()[worst].item():.6g}"
    )
