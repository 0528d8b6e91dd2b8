"""roofline.png: the target GPU's roofline with every timed attempt and the PyTorch baselines on it.

Every point sits at the problem's floor intensity (floor FLOPs / minimal bytes) and at the
FLOP rate its time implies (floor FLOPs / time): kernels that do the same work differ only
in how long they take, so they differ only in height.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from kernelopt.hardware.specs import GPUSpec, UnknownGPUError, get_gpu_spec

OUTCOME_COLOURS = {"faster": "tab:green", "within_noise": "tab:olive", "slower": "tab:gray"}
SPREAD_DECADES = 0.08  # how far sideways (log10 units) the attempts are fanned out to stay legible
LABELLED_ATTEMPTS = 24  # more attempts than this and their round labels would pile up


@dataclass(frozen=True)
class RooflinePoint:
    """One timed kernel on the roofline."""

    label: str  # "r3" or "r3.1" (round 3, repair 1)
    outcome: str
    time_ms: float
    flops_per_s: float
    best: bool = False


@dataclass(frozen=True)
class RooflineGeometry:
    """Everything the picture shows, in FLOP/s and FLOP/byte."""

    spec: GPUSpec
    dtype: str
    bandwidth_bytes_per_s: float  # the datasheet's
    peak_flops_per_s: float  # the datasheet's dense peak for the dtype
    ridge_flops_per_byte: float
    intensity_flops_per_byte: float  # the problem's floor: FLOPs / minimal bytes
    attainable_flops_per_s: float  # the roof at that intensity
    attempts: tuple[RooflinePoint, ...]
    eager_flops_per_s: float | None
    compile_flops_per_s: float | None
    untimed_attempts: int  # failed or rejected: no time, no point


def roofline_geometry(summary: dict[str, Any]) -> RooflineGeometry | None:
    """The roofline of a run's summary, or None without a floor, a known GPU or its dtype's peak."""
    floor = summary.get("floor")
    if not floor or not summary.get("gpu") or floor["min_bytes"] <= 0 or floor["flops"] <= 0:
        return None
    try:
        spec = get_gpu_spec(summary["gpu"])
        peak = spec.peak_tflops(floor["dtype"]) * 1e12
    except (UnknownGPUError, ValueError):
        return None
    flops, bandwidth = floor["flops"], spec.memory_bandwidth_gbs * 1e9
    intensity = flops / floor["min_bytes"]
    attempts = summary.get("attempts", [])
    timed = [a for a in attempts if a.get("time_ms")]
    best = max((i for i, a in enumerate(timed) if a.get("new_best")), default=None)  # the last new best
    points = tuple(
        RooflinePoint(f"r{a['round']}" + (f".{a['repair']}" if a.get("repair") else ""), a["outcome"], a["time_ms"],
                      flops / (a["time_ms"] / 1e3), best=i == best)
        for i, a in enumerate(timed)
    )
    eager, compiled = (summary.get(f"{name}_ms") for name in ("eager", "compile"))
    return RooflineGeometry(
        spec=spec, dtype=floor["dtype"], bandwidth_bytes_per_s=bandwidth, peak_flops_per_s=peak,
        ridge_flops_per_byte=peak / bandwidth, intensity_flops_per_byte=intensity,
        attainable_flops_per_s=min(bandwidth * intensity, peak), attempts=points,
        eager_flops_per_s=flops / (eager / 1e3) if eager else None,
        compile_flops_per_s=flops / (compiled / 1e3) if compiled else None,
        untimed_attempts=len(attempts) - len(timed),
    )


def draw_roofline(summary: dict[str, Any], path: str | Path) -> bool:
    """Draw the run's roofline to `path` (PNG); False when there is nothing to draw it from."""
    geo = roofline_geometry(summary)
    if geo is None:
        return False
    heights = [p.flops_per_s for p in geo.attempts] + [v for v in (geo.eager_flops_per_s, geo.compile_flops_per_s) if v]
    ridge, peak, bandwidth = geo.ridge_flops_per_byte, geo.peak_flops_per_s, geo.bandwidth_bytes_per_s
    x_low = min(geo.intensity_flops_per_byte, ridge) / 30
    x_high = max(geo.intensity_flops_per_byte, ridge) * 30
    figure = Figure(figsize=(9, 6), dpi=110)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(min([bandwidth * x_low, *heights]) / 10, peak * 8)

    # The roof: the bandwidth slope up to the ridge point, the dtype's peak after it.
    ax.plot([x_low, ridge, x_high], [bandwidth * x_low, peak, peak], color="black", lw=2,
            label=f"{geo.spec.key} roofline ({geo.dtype}, datasheet)")
    ax.axvline(ridge, color="black", ls=":", lw=1)
    _note(ax, f"ridge point {ridge:.3g} FLOP/B", (ridge, peak), (5, -14))
    _note(ax, f"{geo.dtype} peak {peak / 1e12:g} TFLOP/s", (x_high, peak), (-4, 5), ha="right")
    _note(ax, f"memory {geo.spec.memory_bandwidth_gbs:g} GB/s", (x_low * 1.5, bandwidth * x_low * 1.5), (0, -14))
    _measured_ceilings(ax, summary, geo, x_low, x_high)

    intensity = geo.intensity_flops_per_byte
    ax.axvline(intensity, color="tab:blue", ls="--", lw=0.8, alpha=0.6)
    ax.scatter([intensity], [geo.attainable_flops_per_s], marker="_", s=400, color="tab:blue", zorder=3,
               label=f"floor: {geo.attainable_flops_per_s / 1e12:.3g} TFLOP/s attainable at {intensity:.3g} FLOP/B")
    _attempts(ax, geo)
    baselines = (("PyTorch eager", "eager_ms", geo.eager_flops_per_s, "D", "tab:purple"),
                 ("torch.compile", "compile_ms", geo.compile_flops_per_s, "s", "tab:orange"))
    for name, key, value, marker, colour in baselines:
        if value:
            ax.scatter([intensity], [value], marker=marker, s=60, color=colour, edgecolor="black", zorder=4,
                       label=f"{name}: {summary[key]:.4g} ms")

    ax.set_xlabel("arithmetic intensity (floor FLOPs / minimal bytes, FLOP/byte)")
    ax.set_ylabel("achieved FLOP/s (floor FLOPs / time)")
    title = f"{geo.spec.name}: roofline for {Path(str(summary.get('problem') or 'the problem')).name} ({geo.dtype})"
    if not summary.get("is_gpu_time"):
        title += "\nTimes are Triton-interpreter times on the CPU: not GPU performance"
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    notes = ["every point is at the problem's floor intensity; attempts are fanned out sideways in round order"]
    if geo.untimed_attempts:
        notes.append(f"{geo.untimed_attempts} attempt(s) without a time (failed or rejected) not shown")
    figure.text(0.01, 0.01, "; ".join(notes), ha="left", va="bottom", fontsize=7, color="dimgray")
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path)
    return True


def _note(ax: Axes, text: str, at: tuple[float, float], offset: tuple[int, int], ha: str = "left") -> None:
    ax.annotate(text, at, xytext=offset, textcoords="offset points", ha=ha, fontsize=8)


def _measured_ceilings(ax: Axes, summary: dict[str, Any], geo: RooflineGeometry, x_low: float, x_high: float) -> None:
    """The ceilings the run's roofline verdict used, where measured ones replaced the datasheet's."""
    roof = summary.get("roofline") or {}
    if not roof.get("bandwidth_gbs") or not roof.get("peak_tflops"):
        return
    bandwidth, peak = roof["bandwidth_gbs"] * 1e9, roof["peak_tflops"] * 1e12
    if math.isclose(bandwidth, geo.bandwidth_bytes_per_s, rel_tol=1e-3) and math.isclose(
        peak, geo.peak_flops_per_s, rel_tol=1e-3
    ):
        return
    ax.plot([x_low, peak / bandwidth, x_high], [bandwidth * x_low, peak, peak], color="tab:red", ls="--", lw=1,
            label="measured ceilings (used for the verdict)")


def _attempts(ax: Axes, geo: RooflineGeometry) -> None:
    """Each timed attempt, fanned out sideways in round order so that equal heights stay apart."""
    count = len(geo.attempts)
    for i, point in enumerate(geo.attempts):
        offset = SPREAD_DECADES * (2 * i / (count - 1) - 1) if count > 1 else 0.0
        x = geo.intensity_flops_per_byte * 10**offset
        colour = OUTCOME_COLOURS.get(point.outcome, "tab:gray")
        ax.scatter([x], [point.flops_per_s], s=28, color=colour, edgecolor="black", linewidths=0.4, zorder=4,
                   alpha=0.85)
        if count <= LABELLED_ATTEMPTS:
            ax.annotate(point.label, (x, point.flops_per_s), xytext=(8, -3), textcoords="offset points", fontsize=7,
                        color="dimgray")
        if point.best:
            ax.scatter([x], [point.flops_per_s], marker="*", s=260, color="gold", edgecolor="black", zorder=5,
                       label=f"best: {point.label}, {point.time_ms:.4g} ms")
    for outcome, colour in OUTCOME_COLOURS.items():
        if any(p.outcome == outcome for p in geo.attempts):
            ax.scatter([], [], s=28, color=colour, edgecolor="black", linewidths=0.4,
                       label=f"attempt: {outcome.replace('_', ' ')}")
