"""roofline.png: the target GPU's roofline with every timed attempt and the PyTorch baselines on it.

Every point sits at the problem's floor intensity (floor FLOPs / minimal bytes) and at the
FLOP rate that time implies (floor FLOPs / time): kernels that do the same work differ only
in how long they take, so they differ only in height.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from kernelopt.hardware.specs import UnknownGPUError, get_gpu_spec

OUTCOME_COLOURS = {"faster": "tab:green", "within_noise": "tab:olive", "slower": "tab:gray"}
SPREAD_DECADES = 0.08  # how far sideways (log10 units) the attempts are fanned out to stay legible
LABELLED_ATTEMPTS = 24  # more attempts than this and their round labels would pile up


def _flops_per_s(flops: float, time_ms: float | None) -> float | None:
    return flops / (time_ms / 1e3) if time_ms else None


def draw_roofline(summary: dict[str, Any], path: str | Path) -> bool:
    """Draw the run's roofline to `path` (PNG); False when the run has no floor or no known GPU."""
    floor = summary.get("floor")
    try:
        spec = get_gpu_spec(summary["gpu"]) if summary.get("gpu") else None
        peak_flops = spec.peak_tflops(floor["dtype"]) * 1e12 if spec and floor else None
    except (UnknownGPUError, ValueError):
        return False
    if spec is None or floor is None or peak_flops is None or floor["min_bytes"] <= 0 or floor["flops"] <= 0:
        return False
    bandwidth = spec.memory_bandwidth_gbs * 1e9
    ridge = peak_flops / bandwidth
    intensity = floor["flops"] / floor["min_bytes"]
    attainable = min(bandwidth * intensity, peak_flops)

    timed = [a for a in summary.get("attempts", []) if a.get("time_ms")]
    baselines = {name: _flops_per_s(floor["flops"], summary.get(f"{name}_ms")) for name in ("eager", "compile")}
    heights = [floor["flops"] / (a["time_ms"] / 1e3) for a in timed] + [v for v in baselines.values() if v]

    x_low = min(intensity, ridge) / 30
    x_high = max(intensity, ridge) * 30
    y_low = min([bandwidth * x_low, *heights]) / 10
    figure = Figure(figsize=(9, 6), dpi=110)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(y_low, peak_flops * 8)

    # The roof: bandwidth slope up to the ridge point, the dtype's peak after it.
    ax.plot([x_low, ridge, x_high], [bandwidth * x_low, peak_flops, peak_flops], color="black", lw=2,
            label=f"{spec.key} roofline ({floor['dtype']})")
    ax.axvline(ridge, color="black", ls=":", lw=1)
    ax.annotate(f"ridge point {ridge:.3g} FLOP/B", (ridge, peak_flops), xytext=(5, -14), textcoords="offset points",
                fontsize=8)
    ax.annotate(f"{floor['dtype']} peak {peak_flops / 1e12:g} TFLOP/s", (x_high, peak_flops), xytext=(-4, 5),
                textcoords="offset points", ha="right", fontsize=8)
    slope_x = x_low * 1.5
    ax.annotate(f"memory {spec.memory_bandwidth_gbs:g} GB/s", (slope_x, bandwidth * slope_x), xytext=(0, -14),
                textcoords="offset points", fontsize=8)
    _measured_ceilings(ax, summary, bandwidth, peak_flops, x_low, x_high)

    ax.axvline(intensity, color="tab:blue", ls="--", lw=0.8, alpha=0.6)
    ax.scatter([intensity], [attainable], marker="_", s=400, color="tab:blue", zorder=3,
               label=f"floor: {attainable / 1e12:.3g} TFLOP/s attainable at {intensity:.3g} FLOP/B")
    _attempts(ax, timed, floor["flops"], intensity)
    for (name, value), marker, colour in zip(baselines.items(), "Ds", ("tab:purple", "tab:orange"), strict=True):
        if value:
            label = "PyTorch eager" if name == "eager" else "torch.compile"
            ax.scatter([intensity], [value], marker=marker, s=60, color=colour, edgecolor="black", zorder=4,
                       label=f"{label}: {summary[f'{name}_ms']:.4g} ms")

    ax.set_xlabel("arithmetic intensity (floor FLOPs / minimal bytes, FLOP/byte)")
    ax.set_ylabel("achieved FLOP/s (floor FLOPs / time)")
    title = f"{spec.name}: roofline for {Path(str(summary.get('problem') or 'the problem')).name} ({floor['dtype']})"
    if not summary.get("is_gpu_time"):
        title += "\nTimes are Triton-interpreter times on the CPU: not GPU performance"
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    notes = ["every point is at the problem's floor intensity; attempts are fanned out sideways in round order"]
    untimed = len(summary.get("attempts", [])) - len(timed)
    if untimed:
        notes.append(f"{untimed} attempt(s) without a time (failed or rejected) not shown")
    figure.text(0.01, 0.01, "; ".join(notes), ha="left", va="bottom", fontsize=7, color="dimgray")
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path)
    return True


def _measured_ceilings(ax: Any, summary: dict[str, Any], bandwidth: float, peak_flops: float,
                       x_low: float, x_high: float) -> None:
    """The ceilings the run's roofline verdict used, where measured ones replaced the datasheet's."""
    roof = summary.get("roofline") or {}
    measured_bw = roof.get("bandwidth_gbs") and roof["bandwidth_gbs"] * 1e9
    measured_peak = roof.get("peak_tflops") and roof["peak_tflops"] * 1e12
    if not measured_bw or not measured_peak:
        return
    if math.isclose(measured_bw, bandwidth, rel_tol=1e-3) and math.isclose(measured_peak, peak_flops, rel_tol=1e-3):
        return
    ridge = measured_peak / measured_bw
    ax.plot([x_low, ridge, x_high], [measured_bw * x_low, measured_peak, measured_peak], color="tab:red",
            ls="--", lw=1, label="measured ceilings")


def _attempts(ax: Any, timed: list[dict[str, Any]], flops: float, intensity: float) -> None:
    """Each timed attempt, fanned out sideways in round order so that equal heights stay apart."""
    count = len(timed)
    best_at: tuple[float, float, dict[str, Any]] | None = None
    for i, attempt in enumerate(timed):
        offset = SPREAD_DECADES * (2 * i / (count - 1) - 1) if count > 1 else 0.0
        x, y = intensity * 10**offset, flops / (attempt["time_ms"] / 1e3)
        colour = OUTCOME_COLOURS.get(attempt["outcome"], "tab:gray")
        ax.scatter([x], [y], s=28, color=colour, edgecolor="black", linewidths=0.4, zorder=4, alpha=0.85)
        if count <= LABELLED_ATTEMPTS:
            ax.annotate(f"r{attempt['round']}" + (f".{attempt['repair']}" if attempt["repair"] else ""), (x, y),
                        xytext=(8, -3), textcoords="offset points", fontsize=7, color="dimgray")
        if attempt.get("new_best"):  # the last new best is the run's best
            best_at = (x, y, attempt)
    if best_at:
        x, y, best = best_at
        ax.scatter([x], [y], marker="*", s=260, color="gold", edgecolor="black", zorder=5,
                   label=f"best: round {best['round']}, {best['time_ms']:.4g} ms")
    for outcome, colour in OUTCOME_COLOURS.items():
        if any(a["outcome"] == outcome for a in timed):
            ax.scatter([], [], s=28, color=colour, edgecolor="black", linewidths=0.4,
                       label=f"attempt: {outcome.replace('_', ' ')}")
