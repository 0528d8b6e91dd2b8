"""The figures a sceptical reader checks a speedup by, and the method behind them.

Shared by a run's report and a suite's results: every baseline's time, the speedup over the
strongest torch.compile mode (named), over the best baseline of all, the share of the gap to
the floor the kernel closed, whether launch overhead dominates, and the method in words,
written from the settings the run actually used.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from kernelopt.records import FULL, Baselines, one_line

LAUNCH_BOUND_KERNEL_MS = 0.05  # under this, a launch's few microseconds are a large share of the time
LAUNCH_DOMINATES_RATIO = 0.5  # a CUDA-graph replay at most half of eager's time: launching is most of eager
LAUNCH_DOMINATES = "launch overhead, not the kernel, dominates"


def gap_closed(baseline_ms: float | None, kernel_ms: float | None, floor_ms: float | None) -> tuple[float | None, str]:
    """(t_baseline - t_kernel) / (t_baseline - t_floor): the share of the distance from the best
    baseline to the floor that the kernel closed (1: at the floor; negative: slower than the
    baseline), and "" — or None and why it is undefined."""
    if baseline_ms is None or kernel_ms is None:
        return None, "no kernel time" if kernel_ms is None else "no baseline time"
    if floor_ms is None:
        return None, "no floor time (GPU times and a known GPU are needed)"
    if baseline_ms <= floor_ms:
        return None, "the best baseline is already at or below the floor: there is no gap to close"
    return (baseline_ms - kernel_ms) / (baseline_ms - floor_ms), ""


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator and denominator else None


def launch_note(eager_ms: float | None, graph_ms: float | None, kernel_ms: float | None) -> str | None:
    """What launch overhead does to this problem's figures, in words, or None when it is not a question."""
    if eager_ms and graph_ms:
        share = 1 - graph_ms / eager_ms
        if graph_ms <= LAUNCH_DOMINATES_RATIO * eager_ms:
            return (f"{LAUNCH_DOMINATES} eager: a CUDA-graph replay of eager takes "
                    f"{graph_ms:.4f} ms against {eager_ms:.4f} ms launched ({share:.0%} of eager's time is launching); "
                    "the CUDA-graph time is the fair bar")
        return f"launch overhead is {max(share, 0):.0%} of eager's time (CUDA-graph replay {graph_ms:.4f} ms)"
    if kernel_ms is not None and kernel_ms < LAUNCH_BOUND_KERNEL_MS and not graph_ms:
        return (f"the kernel takes under {LAUNCH_BOUND_KERNEL_MS * 1e3:.0f} us, where launch overhead weighs, but no "
                "CUDA-graph baseline was timed (every baseline was longer, or the capture failed)")
    return None


def figures(baselines: Baselines | None, best_ms: float | None, floor_ms: float | None,
            on_gpu: bool) -> dict[str, Any]:
    """The baseline figures of one problem (JSON-native): times, speedups with the mode named,
    the gap closed against the best baseline, launch overhead, the cost, and the method."""
    b = baselines or Baselines(eager=None, compile=None)
    strongest, best = b.strongest_compile(), b.best()
    strongest_ms = strongest[1].median_ms if strongest else None
    best_base_ms = best[1].median_ms if best else None
    share, why = gap_closed(best_base_ms, best_ms, floor_ms if on_gpu else None)
    if not on_gpu and best_ms is not None:
        why = "not GPU times"
    graph_ms = b.cuda_graph.median_ms if b.cuda_graph else None
    at_precision = b.compile_at_precision()
    return {
        "max_autotune_ms": b.max_autotune.median_ms if b.max_autotune else None,
        "max_autotune_error": b.max_autotune_error,
        "max_autotune_compile_s": b.max_autotune_compile_s,
        "max_autotune_cache_hit": b.max_autotune_cache_hit,
        "compile_s": b.compile_s,
        "cuda_graph_ms": graph_ms,
        "cuda_graph_error": b.cuda_graph_error,
        "baselines_wall_s": b.wall_s,
        "speedup_vs_max_autotune": _ratio(b.max_autotune.median_ms if b.max_autotune else None, best_ms),
        "strongest_compile": strongest[0] if strongest else None,
        "strongest_compile_ms": strongest_ms,
        "speedup_vs_strongest_compile": _ratio(strongest_ms, best_ms),
        "best_baseline": best[0] if best else None,
        "best_baseline_ms": best_base_ms,
        "speedup_vs_best_baseline": _ratio(best_base_ms, best_ms),
        "floor_ms": floor_ms if on_gpu else None,
        "gap_closed": share,
        "gap_closed_note": why,
        "launch_note": launch_note(b.eager.median_ms if b.eager else None, graph_ms, best_ms) if on_gpu else None,
        "method": dataclasses.asdict(b.method) if b.method else None,
        "max_autotune_limit_s": b.max_autotune_limit_s,
        "baseline_timings": {name: dataclasses.asdict(timing) for name, timing in b.every().items()},
        "refused_baselines": dict(b.refused) or None,
        "refused_at_full_precision": dict(b.refused_full) or None,
        "judge_error": b.judge_error,
        "eager_full_ms": b.eager_full.median_ms if b.eager_full else None,
        "compile_full_ms": b.compile_full.median_ms if b.compile_full else None,
        "full_error": b.full_error,
        # against torch.compile at the verifier's precision, where the yardstick refused a default baseline
        "compile_at_precision": at_precision[0] if at_precision else None,
        "speedup_vs_compile_full": _ratio(at_precision[1].median_ms if at_precision else None, best_ms),
    }


BASELINE_KEYS = (("eager", "PyTorch eager"), ("compile", "torch.compile (default)"),
                 ("max_autotune", "torch.compile (max-autotune)"), ("cuda_graph", "CUDA graph of eager"),
                 ("eager_full", f"PyTorch eager {FULL}"), ("compile_full", f"torch.compile (default) {FULL}"))


def refused_note(found: dict[str, Any]) -> str | None:
    """One line on the baselines the verifier's yardstick refused (figures' keys), or None."""
    refused, still = found.get("refused_baselines"), found.get("refused_at_full_precision") or {}
    if not refused:
        return None
    why = one_line(next(iter(refused.values())), 160)
    line = f"the verifier would refuse {' and '.join(refused)} as a kernel ({why})"
    if found.get("eager_full_ms") is None and found.get("compile_full_ms") is None:
        return f"{line}; not timed again at full precision ({one_line(found.get('full_error') or 'no time', 160)})"
    line += (": PyTorch's defaults run part of this problem at reduced precision (TF32, or fp16/bf16 reductions), "
             "so the baselines were timed again with that off, and only those the verifier accepts may raise the "
             "roofline's ceilings")
    if still:
        line += (f"; at full precision it still refuses {' and '.join(still)} "
                 f"({one_line(next(iter(still.values())), 120)}): not a matter of precision")
    return line


def baseline_text(found: dict[str, Any]) -> str:
    """The baselines for the terminal (a verify result, or a run's summary as report.json has it):
    each with the kernel's speedup over it, the mode named, then the gap closed and launch overhead."""
    kernel_ms, on_gpu = found.get("time_ms") or found.get("best_time_ms"), bool(found.get("is_gpu_time"))
    lines = []
    for key, name in BASELINE_KEYS:
        if found.get(f"{key}_ms") is not None:
            ms = found[f"{key}_ms"]
            ratio = f" ({times(ms / kernel_ms, 'faster')})" if on_gpu and kernel_ms else ""
            lines.append(f"  vs {name}: {ms:.4f} ms{ratio}")
        elif found.get(f"{key}_error"):
            lines.append(f"  {name}: failed: {one_line(found[f'{key}_error'], 200)}")
    if lines and not on_gpu:
        lines.append("  (PyTorch on the CPU against the Triton interpreter: not comparable, not GPU performance)")
    if on_gpu and kernel_ms and found.get("strongest_compile"):
        against = f"torch.compile ({found['strongest_compile']})"
        best = times(found.get("speedup_vs_best_baseline"), found.get("best_baseline") or "")
        lines.append(f"  headline: {times(found.get('speedup_vs_strongest_compile'), against)}, the strongest "
                     f"compile baseline; {best}, the best baseline")
    if on_gpu and kernel_ms:
        lines.append(f"  gap closed: {share_words(found.get('gap_closed'), found.get('gap_closed_note') or '')}")
    if note := refused_note(found):
        lines.append(f"  {note}")
    if found.get("launch_note"):
        lines.append(f"  note: {found['launch_note']}")
    if found.get("baselines_wall_s") is not None:
        lines.append(f"  the baselines took {found['baselines_wall_s']:.1f} s")
    return "\n".join(lines)


FIGURE_KEYS = tuple(figures(None, None, None, False))  # what a suite keeps of each problem's figures


def times(value: float | None, against: str) -> str:
    """'1.12x torch.compile (max-autotune)': a speedup always names what it is against."""
    return "n/a" if value is None else f"{value:.3g}x {against}"


def share_words(share: float | None, why: str) -> str:
    """A gap-closed share in words: a percentage, negative when slower, or why there is none."""
    if share is None:
        return f"undefined ({why})" if why else "undefined"
    return f"{share:.0%}" + (" (slower than the best baseline)" if share < 0 else "")


def mean_and_median(values: list[float]) -> dict[str, float | None]:
    """The aggregate of gap-closed shares: their arithmetic mean and median (a share can be
    negative, so a geometric mean is undefined for them)."""
    return {"mean": statistics.fmean(values) if values else None,
            "median": statistics.median(values) if values else None}


def geomean(values: Iterable[float | None]) -> float | None:
    """The geometric mean of the values given (None ones left out), or None without any."""
    logs = [math.log(v) for v in values if v]
    return math.exp(sum(logs) / len(logs)) if logs else None


FAST_P = (0.0, 1.0, 1.5, 2.0)  # KernelBench's fast_p thresholds: speedup above p


def suite_figures(results: Sequence[Any], total: int) -> dict[str, Any]:
    """A suite's figures against the stronger baselines (results: ProblemResults): geomeans of
    the speedups over the correct problems, the excluded problems named, the gap closed as a
    mean and a median, fast_p against the best baseline, and what the baselines cost."""
    correct = [r for r in results if r.status == "correct"]
    found = {r.name: r.figures or {} for r in results}
    shares = {r.name: found[r.name]["gap_closed"] for r in correct if found[r.name].get("gap_closed") is not None}
    return {
        "geomean_speedup_vs_strongest_compile": geomean(found[r.name].get("speedup_vs_strongest_compile")
                                                        for r in correct),
        "geomean_speedup_vs_best_baseline": geomean(found[r.name].get("speedup_vs_best_baseline") for r in correct),
        "fast_p_vs_best_baseline": {
            f"{p:g}": sum(1 for r in correct if (found[r.name].get("speedup_vs_best_baseline") or 0) > p) / total
            for p in FAST_P} if total else {},
        "excluded": {r.name: r.status for r in results if r.status != "correct"},
        "gap_closed": {**mean_and_median(list(shares.values())), "problems": len(shares),
                       "negative": sorted(name for name, share in shares.items() if share < 0),
                       "undefined": {r.name: found[r.name].get("gap_closed_note") or "" for r in correct
                                     if r.name not in shares}},
        "strongest_compile_modes": {r.name: found[r.name]["strongest_compile"] for r in correct
                                    if found[r.name].get("strongest_compile")},
        "launch_dominated": sorted(name for name, f in found.items()
                                   if (f.get("launch_note") or "").startswith(LAUNCH_DOMINATES)),
        "max_autotune_failed": {name: f["max_autotune_error"] for name, f in found.items()
                                if f.get("max_autotune_error")},
        "reduced_precision": {r.name: found[r.name].get("speedup_vs_compile_full") for r in correct
                              if found[r.name].get("refused_baselines")},
        "baselines_wall_s": round(sum(f.get("baselines_wall_s") or 0.0 for f in found.values()), 2),
        "median_wall_s": statistics.median(r.wall_s for r in results) if results else None,
        "median_phases_s": median_phases([f.get("phases_s") or {} for f in found.values()]),
        "method": next((f["method"] for f in found.values() if f.get("method")), None),
        "max_autotune_limit_s": next((f["max_autotune_limit_s"] for f in found.values()
                                      if f.get("max_autotune_limit_s")), None),
    }


def median_phases(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each phase's median wall time over the optimized problems that had it (report/story.py:phase_times),
    in the order a run goes through them."""
    names = sorted({name for phases in runs for name in phases}, key=_phase_order)
    return {name: statistics.median(p[name] for p in runs if name in p) for name in names}


def _phase_order(name: str) -> tuple[int, int]:
    first = {"baselines": 0, "compiler seed": 1, "report": 3}
    number = name.removeprefix("round ")
    return (first[name], 0) if name in first else (2, int(number) if number.isdigit() else 0)


def _mib(size_bytes: int) -> str:
    return f"{size_bytes / 2**20:g} MiB"


def method_lines(method: dict[str, Any] | None, max_autotune_limit_s: float | None = None) -> list[str]:
    """How every time was taken, from the settings the run used (report.json's "method")."""
    if not method:
        return ["- Not recorded: this run predates the record of its timing settings."]
    if method["timer"] == "CUDA events":
        lines = [
            "- Timer: a pair of CUDA events around each trial; the time of an empty event pair (measured "
            "the same way) is subtracted.",
            f"- L2 flush: before every trial, outside the timed region, {_mib(method['flush_l2_bytes'])} written and "
            f"as many other bytes read, so no trial starts with its data in L2.",
            f"- Warm-up: at least {method['warmup_ms']:g} ms of calls and at least {method['min_warmup_runs']} calls, "
            "not timed (compiles, autotuning and lazy loading happen there).",
            f"- Trials: as many as make {method['target_total_ms']:g} ms of timed work, at least "
            f"{method['min_trials']} and at most {method['max_trials']}; each row's n is its own count.",
        ]
    else:
        lines = [
            f"- Timer: {method['timer']}; no GPU was used, so no L2 flush. One untimed call, then "
            f"{method['min_trials']} trials: these times show the run worked, not GPU performance.",
        ]
    lines += [
        f"- Statistic: the {method['statistic']} of the trials; spread: the {method['spread']}.",
        "- One protocol for every figure: eager, each torch.compile mode, the CUDA-graph replay and every kernel, "
        "on inputs of the same shapes, on the same device, holding the device lock. A compile is done before its "
        "timing and never timed.",
    ]
    if max_autotune_limit_s:
        lines.append('- torch.compile (max-autotune) is timed as mode="max-autotune-no-cudagraphs": the same autotuned '
                     "templates and coordinate-descent tuning, without the CUDA-graph trees, which copy every input "
                     "that is not a parameter into buffers of their own on each replay (timing that copy, not the "
                     "compiler's kernels). Launch overhead is the CUDA-graph replay's row.")
        lines.append(f"- torch.compile (max-autotune) compiles in a process of its own, stopped after "
                     f"{max_autotune_limit_s:g} s (then marked, and the run goes on); Inductor's caches are kept per "
                     "problem under the runs folder, so a repeated run does not compile again.")
    return lines
