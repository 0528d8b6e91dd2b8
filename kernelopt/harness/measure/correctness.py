"""Comparing a candidate's outputs with the reference's: dtype-aware, NaN/Inf never pass."""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class Judging:
    """How one case's outputs are judged: the absolute tolerance per output where it is not the
    dtype's own (None), and whether the case can tell a kernel that computes from one that does not."""

    atols: tuple[float | None, ...]
    informative: bool = True
    # The share of an output's elements that may lie beyond the allowance, none further from the truth than the
    # output's largest magnitude (yardstick.WIDE_OUTLIERS: the wide cases'; 0 elsewhere).
    outliers: float = 0.0

    @property
    def relative(self) -> bool:
        return any(a is not None for a in self.atols)


def judging_for(
    want_outputs: list[torch.Tensor],
    atol_scale: float = 1.0,
    slack: list[torch.Tensor | None] | None = None,
    outliers: float = 0.0,
) -> Judging:
    """How to judge a case whose expected outputs are `want_outputs`.

    An output whose every expected value lies within the tolerance of zero would pass an all-zero
    answer (x * 1e-6 under fp32's atol of 1e-4; a Frobenius-normalised tensor of a billion values).
    Such an output is judged on its own scale: atol becomes atol times its largest magnitude, plus
    the problem's own worst error there, so a kernel as accurate as PyTorch passes and zeros fail.
    That atol is never below the dtype's smallest normal number: a subnormal result flushed to
    zero (as the GPU's fast paths do, or a formula whose exp(-x) overflows, at swish(-104)) is no
    error. So an output whose every value is subnormal or zero tells nothing either.
    A case whose outputs are all floating and each all exactly zero (or subnormal), or all NaN/Inf,
    cannot tell a kernel that computes from one that writes a constant: it still runs (and can
    fail), but is not informative.
    """
    atols: list[float | None] = []
    all_zero = bool(want_outputs)
    for index, want in enumerate(want_outputs):
        if not want.is_floating_point() or want.numel() == 0:
            atols.append(None)
            all_zero = all_zero and want.is_floating_point()
            continue
        peak, finite, any_finite = _peak(want)
        atol, rtol = tolerance(want.dtype)
        tiny = torch.finfo(want.dtype).tiny
        all_zero = all_zero and ((finite and peak < tiny) or not any_finite)
        if not finite or peak * (1.0 - rtol) > atol * atol_scale:
            atols.append(None)
            continue
        own = slack[index] if slack else None
        own_worst = float(own.max()) if own is not None and own.numel() else 0.0
        atols.append(max(atol * peak + own_worst, tiny))
    return Judging(tuple(atols), informative=not all_zero, outliers=outliers)


def _peak(want: torch.Tensor) -> tuple[float, bool, bool]:
    """The largest finite magnitude of `want`, whether every value is finite, whether any is."""
    flat, peak, finite, any_finite = want.reshape(-1), 0.0, True, False
    for start in range(0, flat.numel(), CHUNK_ELEMENTS):
        part = flat[start : start + CHUNK_ELEMENTS]
        ok = part.isfinite()
        finite = finite and bool(ok.all())
        any_finite = any_finite or bool(ok.any())
        peak = max(peak, float(part.abs().where(ok, torch.zeros((), dtype=part.dtype, device=part.device)).max()))
    return peak, finite, any_finite


def compare_case(
    want_outputs: list[torch.Tensor],
    got_outputs: list[torch.Tensor],
    atol_scale: float = 1.0,
    slack: list[torch.Tensor | None] | None = None,
    judging: Judging | None = None,
    errors: list[tuple[float, float | None]] | None = None,
    notes: list[str] | None = None,
) -> str | None:
    """None when one case's outputs match, else where they do not (", output 1: ..."), to follow
    the case's name. `slack` adds, per element, the reference's own error to the allowance;
    `judging` (judging_for) sets the tolerance of outputs judged on their own scale and a wide case's
    share of outliers. `errors`, where given, gets each fp32 output's worst distance from the yardstick
    and the problem's own worst (its slack's largest; None where the case has no float64 yardstick);
    `notes` gets a line for each output that passed on that share ("output 0: 45 of ...")."""
    if len(want_outputs) != len(got_outputs):
        return f": forward returned {len(got_outputs)} outputs, the reference {len(want_outputs)}"
    atols = judging.atols if judging is not None else (None,) * len(want_outputs)
    outliers = judging.outliers if judging is not None else 0.0
    for index, (want, got) in enumerate(zip(want_outputs, got_outputs, strict=True)):
        passed: list[str] = []
        problem = _compare_tensor(want, got, atol_scale, slack[index] if slack else None, atols[index], errors,
                                  outliers, passed)
        if problem:
            return f", output {index}: {problem}"
        if notes is not None:
            notes += [f"output {index}: {line}" for line in passed]
    return None


# Elements compared at once: the comparison works in float64, so a 6 GB output is judged in
# slices rather than in 50 GB of temporaries.
CHUNK_ELEMENTS = 1 << 26


def _compare_tensor(
    want: torch.Tensor,
    got: torch.Tensor,
    atol_scale: float = 1.0,
    slack: torch.Tensor | None = None,
    own_scale_atol: float | None = None,
    errors: list[tuple[float, float | None]] | None = None,
    outliers: float = 0.0,
    passed: list[str] | None = None,
) -> str | None:
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)} differs from the reference's {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} differs from the reference's {want.dtype}"
    if want.numel() == 0:
        return None
    # On a CUDA host the comparison runs there: outputs of a few hundred MB take seconds on the CPU.
    device = want.device if want.is_cuda else ("cuda" if torch.cuda.is_available() else "cpu")
    flat_want, flat_got = want.reshape(-1), got.reshape(-1)
    flat_slack = slack.reshape(-1) if slack is not None else None
    if not (want.is_floating_point() or want.is_complex()):
        mismatched = sum(
            int((flat_want[i : i + CHUNK_ELEMENTS].to(device) != flat_got[i : i + CHUNK_ELEMENTS].to(device)).sum())
            for i in range(0, want.numel(), CHUNK_ELEMENTS)
        )
        return f"{mismatched} of {want.numel()} elements differ (exact match required)" if mismatched else None
    atol, rtol = tolerance(want.dtype)
    atol = own_scale_atol if own_scale_atol is not None else atol * atol_scale
    # error: the largest distance; inside (kept only where a share and the errors are): the largest within the
    # allowance, the precision rule's measure where a wide case's share lets the few beyond it through
    counts: dict[str, float] = {"nonfinite": 0, "special": 0, "off": 0, "error": 0.0, "own": 0.0}
    if outliers and errors is not None:
        counts["inside"] = 0.0
    worst: tuple[float, int, float, float] | None = None  # (excess, index, got, expected)
    for start in range(0, want.numel(), CHUNK_ELEMENTS):
        part = slice(start, start + CHUNK_ELEMENTS)
        chunk_slack = flat_slack[part] if flat_slack is not None else None
        found = _compare_chunk(flat_want[part].to(device), flat_got[part].to(device), atol, rtol, chunk_slack, counts)
        if found is not None and (worst is None or found[0] > worst[0]):
            worst = (found[0], found[1] + start, found[2], found[3])
    shared = (bool(counts["off"]) and not counts["nonfinite"] and not counts["special"]
              and counts["off"] <= outliers * want.numel() and counts["error"] <= _peak(want)[0])
    if errors is not None and want.dtype == torch.float32:  # the share's few are no measure of the arithmetic
        errors.append((counts["inside"] if shared else counts["error"], counts["own"] if slack is not None else None))
    if counts["nonfinite"]:
        return (
            f"{counts['nonfinite']} of {want.numel()} elements are NaN/Inf where the reference is finite "
            "(unwritten or overflowed output?)"
        )
    if counts["special"]:
        return (
            f"{counts['special']} of {want.numel()} elements are NaN or Inf of another kind than the "
            "reference's (NaN for inf, or the sign of inf)"
        )
    if not counts["off"] or worst is None:
        return None
    if shared:
        if passed is not None:  # a wide case's few elements beyond the allowance, each within the output's own scale
            passed.append(f"{counts['off']} of {want.numel()} elements beyond the allowance, within the wide case's "
                          f"share ({outliers:g}); worst {counts['error']:.3g} off")
        return None
    where = tuple(int(i) for i in torch.unravel_index(torch.tensor(worst[1]), want.shape))
    beyond = " plus the reference's own fp32 error" if slack is not None else ""
    if own_scale_atol is not None:
        beyond += " (judged on the output's own scale: every expected value is within the tolerance of zero)"
    return (
        f"{counts['off']} of {want.numel()} elements outside atol={atol:g}, rtol={rtol:g}{beyond}; "
        f"worst at {where}: got {worst[2]:.6g}, expected {worst[3]:.6g}"
    )


def _compare_chunk(
    want: torch.Tensor,
    got: torch.Tensor,
    atol: float,
    rtol: float,
    slack: torch.Tensor | None,
    counts: dict[str, float],
) -> tuple[float, int, float, float] | None:
    """Count this slice's failures into `counts`; its worst element beyond the allowance, if any."""
    want64, got64 = want.double(), got.double()
    want_finite, got_finite = torch.isfinite(want64), torch.isfinite(got64)
    counts["nonfinite"] += int((got_finite != want_finite).sum())
    both_special = ~want_finite & ~got_finite
    same_special = (want64 == got64) | (want64.isnan() & got64.isnan())
    counts["special"] += int((both_special & ~same_special).sum())
    both = want_finite & got_finite
    allowed = atol + rtol * want64.abs()
    if slack is not None:
        allowed += slack.to(want64.device).double()
    distance = (got64 - want64).abs().where(both, torch.zeros_like(want64))
    if distance.numel():
        counts["error"] = max(counts["error"], float(distance.max()))
        if slack is not None:
            counts["own"] = max(counts["own"], float(slack.max()))
    excess = (distance - allowed).where(both, torch.full_like(want64, -1.0))
    if "inside" in counts and distance.numel():
        counts["inside"] = max(counts["inside"], float(distance.where(excess <= 0, torch.zeros_like(distance)).max()))
    off = int((excess > 0).sum())
    if not off:
        return None
    counts["off"] += off
    index = int(torch.argmax(excess))
    return float(excess[index]), index, float(got64[index]), float(want64[index])
