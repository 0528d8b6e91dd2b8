"""roofline.png: the run's picture. On GPU times, the target GPU's roofline with every timed
attempt and the PyTorch baselines on it; on Triton-interpreter times, the attempts' times
against each other (and a named GPU's roof beside them, empty of points).

On the roofline every point sits at the problem's floor intensity (floor FLOPs / minimal bytes) and at the
FLOP rate its time implies (floor FLOPs / time): kernels that do the same work differ only
in how long they take, so they differ only in height.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from kernelopt.hardware.specs import GPUSpec, UnknownGPUError, get_gpu_spec
from kernelopt.report.summary import RunSummary
from kernelopt.syntax import parse

OUTCOME_COLOURS = {"faster": "tab:green", "within_noise": "tab:olive", "outpaced": "tab:cyan", "slower": "tab:gray"}
ATTEMPT_COLOURS = {"baseline": "tab:blue", **OUTCOME_COLOURS}  # round 0's kernel is the baseline, not "faster"
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
    floor_flops: float  # the problem's floor: the FLOPs it needs at least
    intensity_flops_per_byte: float  # the problem's floor: FLOPs / minimal bytes
    attainable_flops_per_s: float  # the roof at that intensity
    attempts: tuple[RooflinePoint, ...]
    eager_flops_per_s: float | None
    compile_flops_per_s: float | None
    untimed_attempts: int  # failed or rejected: no time, no point


def roofline_geometry(summary: RunSummary) -> RooflineGeometry | None:
    """The roofline of a run's summary, or None without a floor, a known GPU or its dtype's peak."""
    floor = summary.floor
    if not floor or not summary.gpu or floor["min_bytes"] <= 0 or floor["flops"] <= 0:
        return None
    try:
        spec = get_gpu_spec(summary.gpu)
        peak = spec.roof_tflops(floor["dtype"]) * 1e12
    except (UnknownGPUError, ValueError):
        return None
    flops, bandwidth = floor["flops"], spec.memory_bandwidth_gbs * 1e9
    intensity = flops / floor["min_bytes"]
    attempts = summary.attempts
    timed = [a for a in attempts if a.get("time_ms")]
    best = max((i for i, a in enumerate(timed) if a.get("new_best")), default=None)  # the last new best
    points = tuple(
        RooflinePoint(f"r{a['round']}" + (f".{a['repair']}" if a.get("repair") else ""), a["outcome"], a["time_ms"],
                      flops / (a["time_ms"] / 1e3), best=i == best)
        for i, a in enumerate(timed)
    )
    eager, compiled = summary.eager_ms, summary.compile_ms
    return RooflineGeometry(
        spec=spec, dtype=floor["dtype"], bandwidth_bytes_per_s=bandwidth, peak_flops_per_s=peak,
        ridge_flops_per_byte=peak / bandwidth, floor_flops=flops, intensity_flops_per_byte=intensity,
        attainable_flops_per_s=min(bandwidth * intensity, peak), attempts=points,
        eager_flops_per_s=flops / (eager / 1e3) if eager else None,
        compile_flops_per_s=flops / (compiled / 1e3) if compiled else None,
        untimed_attempts=len(attempts) - len(timed),
    )


def draw_picture(summary: RunSummary, path: str | Path) -> bool:
    """Draw the run's picture to `path` (PNG); False when there is nothing to draw it from.

    GPU times: the roofline with every attempt on it. Interpreter times are no GPU's: the
    attempts' times against each other, and beside them the roof of a GPU only when one was
    named (Context.gpu, --gpu), with no point of this run on it.
    """
    if summary.is_gpu_time:
        geo = roofline_geometry(summary)
        if geo is None:
            return False
        figure = _figure(1)
        _draw_roof(figure.add_subplot(), summary, geo, with_points=True)
        return _save(figure, path, _roof_notes(geo))
    timed = [a for a in summary.attempts if a.get("time_ms")]
    if not timed:
        return False
    geo = roofline_geometry(summary) if summary.gpu_named else None
    figure = _figure(2 if geo else 1)
    _draw_attempts(figure.add_subplot(1, 2 if geo else 1, 1), summary)
    if geo:
        _draw_roof(figure.add_subplot(1, 2, 2), summary, geo, with_points=False)
    return _save(figure, path, [INTERPRETER_NOTE])


INTERPRETER_NOTE = "Triton-interpreter times on the CPU: they compare the attempts with each other, not GPU performance"


def _figure(panels: int) -> Figure:
    figure = Figure(figsize=(9 if panels == 1 else 15, 6), dpi=110)
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Figure, path: str | Path, notes: list[str]) -> bool:
    figure.text(0.01, 0.01, "; ".join(notes), ha="left", va="bottom", fontsize=7, color="dimgray")
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path)
    return True


def _problem_name(summary: RunSummary) -> str:
    """The problem as a person knows it: its file's name, or for a file called problem.py its
    folder's (examples/swish/problem.py: swish), or, for the run folder's own copy, its docstring."""
    path = Path(str(summary.problem or "the problem"))
    if path.stem != "problem":
        return path.stem
    if summary.run_dir and path.parent == Path(summary.run_dir) and path.is_file():
        import ast

        try:
            doc = ast.get_docstring(parse(path.read_text())) or ""
        except SyntaxError:
            doc = ""
        first = doc.strip().splitlines()[0] if doc.strip() else ""
        return first if 0 < len(first) <= 60 else (first[:57] + "..." if first else "the problem")
    return path.parent.name or path.name


def _label(attempt: dict[str, Any]) -> str:
    """r3, r3.1 (round 3, repair 1), r3b2 for branch 2: tells a round's parallel candidates apart."""
    branch = re.search(r"_b(\d+)$", Path(attempt.get("kernel_path") or "").stem)
    return (f"r{attempt['round']}" + (f".{attempt['repair']}" if attempt.get("repair") else "")
            + (f"b{branch.group(1)}" if branch else ""))


def _draw_attempts(ax: Axes, summary: RunSummary) -> None:
    """Every attempt in order: a bar for its time, a cross for one without a time, the best starred.

    A linear axis from zero, so that the attempts' times compare at a glance; a baseline far
    off that scale (PyTorch on the CPU against the interpreter) is named, not drawn.
    """
    attempts = summary.attempts
    high = max(a["time_ms"] for a in attempts if a.get("time_ms"))
    best = max((i for i, a in enumerate(attempts) if a.get("new_best") and a.get("time_ms")), default=None)
    handles: list[Any] = []
    for i, a in enumerate(attempts):
        if a.get("time_ms"):
            kind = a["outcome"] if a.get("round") else "baseline"
            ax.bar(i, a["time_ms"], color=ATTEMPT_COLOURS.get(kind, "tab:gray"), edgecolor="black", linewidth=0.4)
            ax.annotate(f"{a['time_ms']:.4g}", (i, a["time_ms"]), xytext=(0, 3), textcoords="offset points",
                        ha="center", fontsize=7)
        else:
            ax.scatter([i], [0], marker="x", s=60, color="tab:red", zorder=4, clip_on=False)
    kinds = {a["outcome"] if a.get("round") else "baseline" for a in attempts if a.get("time_ms")}
    handles += [Patch(facecolor=c, edgecolor="black", label=k.replace("_", " ").replace("baseline", "the baseline"))
                for k, c in ATTEMPT_COLOURS.items() if k in kinds]
    if any(not a.get("time_ms") for a in attempts):
        handles.append(Line2D([], [], marker="x", ls="", color="tab:red", label="failed, incorrect or rejected"))
    if best is not None:  # above the bar's value label, so that the number stays readable
        handles.append(ax.scatter([best], [attempts[best]["time_ms"] + high * 0.08], marker="*", s=200, color="gold",
                                  edgecolor="black", zorder=5,
                                  label=f"best: {_label(attempts[best])}, {attempts[best]['time_ms']:.4g} ms"))
    baselines = (("PyTorch eager", summary.eager_ms, "tab:purple"),
                 ("torch.compile (default)", summary.compile_ms, "tab:orange"),
                 ("torch.compile (max-autotune)", summary.max_autotune_ms, "tab:red"))
    for name, value, colour in baselines:
        if not value:
            continue
        label = f"{name} on the CPU: {value:.4g} ms"
        if high / 20 <= value <= high * 2:
            handles.append(ax.axhline(value, color=colour, ls="--", lw=1, label=label))
        else:
            handles.append(Line2D([], [], ls="--", color=colour, label=f"{label} (off this scale)"))
    ax.set_ylim(0, high * 1.2)
    ax.set_xticks(range(len(attempts)), [_label(a) for a in attempts], fontsize=7,
                  rotation=90 if len(attempts) > LABELLED_ATTEMPTS else 0)
    ax.set_xlabel("attempt (round.repair), in the order tried")
    ax.set_ylabel("median time (ms, Triton interpreter on the CPU)")
    ax.set_title(f"{_problem_name(summary)}: time per attempt\n"
                 "Triton interpreter on the CPU: not GPU performance", fontsize=10)
    ax.grid(True, axis="y", which="major", alpha=0.3)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, fontsize=8, frameon=False)


def _roof_notes(geo: RooflineGeometry) -> list[str]:
    notes = ["every point is at the problem's floor intensity; attempts are fanned out sideways in round order"]
    if geo.untimed_attempts:
        notes.append(f"{geo.untimed_attempts} attempt(s) without a time (failed or rejected) not shown")
    return notes


BASELINE_MARKERS = (("PyTorch eager", "D", "tab:purple"), ("torch.compile (default)", "s", "tab:orange"),
                    ("torch.compile (max-autotune)", "^", "tab:red"), ("CUDA graph of eager", "v", "tab:cyan"))


def _draw_roof(ax: Axes, summary: RunSummary, geo: RooflineGeometry, with_points: bool) -> None:
    """The GPU's roofline at the problem's floor intensity; with the run's timed kernels when they are GPU times."""
    flops = geo.floor_flops
    times_ms = (summary.eager_ms, summary.compile_ms, summary.max_autotune_ms, summary.cuda_graph_ms)
    baselines = [(name, ms, flops / (ms / 1e3) if ms else None, marker, colour)
                 for (name, marker, colour), ms in zip(BASELINE_MARKERS, times_ms, strict=True)]
    heights = [p.flops_per_s for p in geo.attempts] + [v for _, _, v, _, _ in baselines if v]
    ridge, peak, bandwidth = geo.ridge_flops_per_byte, geo.peak_flops_per_s, geo.bandwidth_bytes_per_s
    x_low = min(geo.intensity_flops_per_byte, ridge) / 30
    x_high = max(geo.intensity_flops_per_byte, ridge) * 30
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(min([bandwidth * x_low, *(heights if with_points else [])]) / 10, peak * 8)

    # The roof: the bandwidth slope up to the ridge point, the dtype's peak after it.
    ax.plot([x_low, ridge, x_high], [bandwidth * x_low, peak, peak], color="black", lw=2,
            label=f"{geo.spec.key} roofline ({geo.dtype}, datasheet)")
    ax.axvline(ridge, color="black", ls=":", lw=1)
    _note(ax, f"ridge point {ridge:.3g} FLOP/B", (ridge, peak), (5, -14))
    _note(ax, f"{geo.dtype} peak {peak / 1e12:g} TFLOP/s", (x_high, peak), (-4, 5), ha="right")
    _note(ax, f"memory {geo.spec.memory_bandwidth_gbs:g} GB/s", (x_low * 1.5, bandwidth * x_low * 1.5), (0, -14))
    intensity = geo.intensity_flops_per_byte
    ax.axvline(intensity, color="tab:blue", ls="--", lw=0.8, alpha=0.6)
    ax.scatter([intensity], [geo.attainable_flops_per_s], marker="_", s=400, color="tab:blue", zorder=3,
               label=f"floor: {geo.attainable_flops_per_s / 1e12:.3g} TFLOP/s attainable at {intensity:.3g} FLOP/B")
    if with_points:
        _measured_ceilings(ax, summary, geo, x_low, x_high)
        _attempts(ax, geo)
        for name, ms, value, marker, colour in baselines:
            if value:
                ax.scatter([intensity], [value], marker=marker, s=60, color=colour, edgecolor="black", zorder=4,
                           label=f"{name}: {ms:.4g} ms")
    ax.set_xlabel("arithmetic intensity (floor FLOPs / minimal bytes, FLOP/byte)")
    ax.set_ylabel("achieved FLOP/s (floor FLOPs / time)")
    title = f"{geo.spec.name}: roofline for {_problem_name(summary)} ({geo.dtype})"
    if not with_points:
        title += "\nthe target GPU's roof only: no GPU time of this run to place on it"
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)


def _note(ax: Axes, text: str, at: tuple[float, float], offset: tuple[int, int], ha: str = "left") -> None:
    ax.annotate(text, at, xytext=offset, textcoords="offset points", ha=ha, fontsize=8)


def _measured_ceilings(ax: Axes, summary: RunSummary, geo: RooflineGeometry, x_low: float, x_high: float) -> None:
    """The ceilings the run's roofline verdict used, where measured ones replaced the datasheet's."""
    roof = summary.roofline or {}
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
