"""A suite's results.md and results.png, drawn from results.json's content (see suite.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kernelopt.report.figures import method_lines
from kernelopt.report.story import phases_words

RESULTS_JSON, RESULTS_MD, RESULTS_PNG = "results.json", "results.md", "results.png"

NOT_GPU_NOTE = (
    "Triton-interpreter times on the CPU against PyTorch on the CPU: they show the suite ran, "
    "not GPU performance, and their speedups are no GPU's"
)
SERIES = (("eager", "PyTorch eager", "tab:purple"), ("compile", "torch.compile (default)", "tab:orange"),
          ("max_autotune", "torch.compile (max-autotune)", "tab:red"), ("best", "kernelopt", "tab:green"))


def _num(value: float | None, unit: str = "", digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}{unit}"


def _cell(text: str | None, limit: int = 120) -> str:
    text = " ".join((text or "").split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _mode(settings: dict[str, Any]) -> str:
    if not settings["optimize"]:
        return "verify only"
    policy = f"model {settings['model']}" if settings["model"] else "the offline policy"
    return f"optimize with {policy}, at most {settings['max_rounds']} rounds"


def render_markdown(data: dict[str, Any], has_plot: bool) -> str:
    """results.md: how the suite ran, its summary (fast_p, geomeans) and one row per problem."""
    suite, summary, problems = data["suite"], data["summary"], data["problems"]
    placed = any(r.get("where") for r in problems)  # run on several GPUs or nodes: say which judged each
    lines = [
        "# kernelopt suite", "",
        f"- Problems: `{suite['problems_dir']}` ({summary['problems']}); kernels: `{suite['kernels_dir'] or '-'}`",
        f"- Mode: {_mode(suite['settings'])}",
        *([f"- Timed on: {'the CPU (the interpreter)' if suite['device'] == 'cpu' else suite['device']} (a resume on "
           "another device is refused)"] if suite.get("device") else []),
        f"- Finished: {summary['finished']} of {summary['problems']}"
        + ("" if summary["finished"] == summary["problems"] else f" (continue with `kernelopt suite --resume "
                                                                  f"{suite['out_dir']}`)"),
        "",
    ]
    if problems and not summary["is_gpu_time"]:
        lines += [f"> **{NOT_GPU_NOTE}.** % of the floor is computed only for GPU times.", ""]
    fast = summary["fast_p"]
    gap = summary.get("gap_closed") or {}
    lines += [
        "## Summary", "",
        "| " + " | ".join(f"fast_{p}" for p in fast) + " | geomean vs eager | geomean vs torch.compile (default) "
        "| geomean vs strongest torch.compile | geomean vs best baseline | gap closed (mean / median) "
        "| geomean % of floor |",
        "|" + "---:|" * (len(fast) + 6),
        "| " + " | ".join(f"{share:.2f}" for share in fast.values())
        + f" | {_num(summary['geomean_speedup_vs_eager'], 'x')} | {_num(summary['geomean_speedup_vs_compile'], 'x')}"
        f" | {_num(summary.get('geomean_speedup_vs_strongest_compile'), 'x')}"
        f" | {_num(summary.get('geomean_speedup_vs_best_baseline'), 'x')}"
        f" | {_share(gap.get('mean'))} / {_share(gap.get('median'))} | {_num(summary['geomean_pct_of_floor'], '%')} |",
        "", *aggregate_lines(summary), "",
        "## Problems", "",
        "| problem | result | eager (ms) | torch.compile default (ms) | max-autotune (ms) | CUDA graph (ms) "
        "| start (ms) | best (ms) | vs eager | vs compile (default) | vs strongest compile | vs best baseline "
        f"| gap closed | % of floor | rounds | stop | reason |{' where |' * placed}",
        f"|---|---|{'---:|' * 14}---|---|{'---|' * placed}",
    ]
    for r in problems:
        lines.append(_problem_row(r, placed))
    if has_plot:
        caption = "% of the floor per problem" if summary["is_gpu_time"] else "speed relative to eager per problem"
        lines += ["", f"![{caption}](results.png)"]
    lines += ["", "## Method", "", *method_lines(summary.get("method"), summary.get("max_autotune_limit_s")),
              *aggregate_method(summary)]
    return "\n".join(lines) + "\n"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _reason_cell(r: dict[str, Any]) -> str:
    """The reason, once: no rule said twice ("[incorrect] incorrect: ..."), no stop the stop column
    already says, no log path (problems/NAME.json keeps the whole reason and the log)."""
    reason = re.sub(r"\s*\((?:log|see|the traceback is in):? /\S+\)|;? (?:see|log:) /\S+", "", r["reason"] or "")
    if r.get("stop_reason") and reason == f"stopped: {r['stop_reason']}":
        return "-"
    rule = r.get("rule")
    said = f"[{rule}] {reason}" if rule and not reason.startswith(rule) else reason
    return _cell(said, 160)


def _problem_row(r: dict[str, Any], placed: bool) -> str:
    f = r.get("figures") or {}
    where = f" {_cell(r.get('where') or '-')}{' (2nd try)' * (r.get('tries', 1) > 1)} |" if placed else ""
    autotune = _num(f.get("max_autotune_ms"), digits=4) if not f.get("max_autotune_error") else "failed"
    graph = _num(f.get("cuda_graph_ms"), digits=4) if not f.get("cuda_graph_error") else "failed"
    strongest = _num(f.get("speedup_vs_strongest_compile"), "x")
    strongest += f" ({f['strongest_compile']})" if f.get("strongest_compile") and strongest != "-" else ""
    best = _num(f.get("speedup_vs_best_baseline"), "x")
    best += f" ({f['best_baseline']})" if f.get("best_baseline") and best != "-" else ""
    return (
        f"| {r['name']} | {r['status'].replace('_', ' ')} | {_num(r['eager_ms'], digits=4)} "
        f"| {_num(r['compile_ms'], digits=4)} | {autotune} | {graph} | {_num(r['start_ms'], digits=4)} "
        f"| {_num(r['best_ms'], digits=4)} | {_num(r['speedup_vs_eager'], 'x')} | {_num(r['speedup_vs_compile'], 'x')} "
        f"| {strongest} | {best} | {_share(f.get('gap_closed'))} "
        f"| {_num(r['pct_of_floor'], '%')} | {r['rounds']} | {r['stop_reason'] or '-'} "
        f"| {_reason_cell(r)} |{where}"
    )


def _names(named: dict[str, Any] | list[str]) -> str:
    if isinstance(named, dict):
        return ", ".join(f"{name} ({_cell(str(why), 80)})" if why else name for name, why in named.items())
    return ", ".join(named)


def aggregate_lines(summary: dict[str, Any]) -> list[str]:
    """What the summary's figures leave out and why: the excluded problems, the modes, the gap's undefined ones."""
    gap = summary.get("gap_closed") or {}
    modes = summary.get("strongest_compile_modes") or {}
    by_mode = {mode: [name for name, m in modes.items() if m == mode] for mode in sorted(set(modes.values()))}
    lines = [f"- Geomeans over the {summary['correct']} correct problems"
             + (f"; excluded: {_names(summary['excluded'])}" if summary.get("excluded") else "; none excluded")]
    if by_mode:
        lines.append("- Strongest torch.compile per problem: "
                     + "; ".join(f"{mode} on {', '.join(names)}" for mode, names in by_mode.items()))
    if gap:
        lines.append(f"- Gap closed: over {gap.get('problems', 0)} problems"
                     + (f"; negative (slower than the best baseline) on {_names(gap['negative'])}"
                        if gap.get("negative") else "")
                     + (f"; undefined on {_names(gap['undefined'])}" if gap.get("undefined") else ""))
    if summary.get("launch_dominated"):
        lines.append(f"- Launch overhead dominates eager on {_names(summary['launch_dominated'])} "
                     "(a CUDA-graph replay of eager takes at most half of eager's time)")
    if summary.get("max_autotune_failed"):
        failed = _names(summary["max_autotune_failed"])
        lines.append(f"- torch.compile (max-autotune) failed or ran past its limit on {failed}")
    if summary.get("reduced_precision"):
        against = ", ".join(f"{name} {_num(ratio, 'x')}" for name, ratio in summary["reduced_precision"].items())
        lines.append("- The verifier would refuse PyTorch's default baselines as kernels on "
                     f"{_names(list(summary['reduced_precision']))} (reduced precision); the kernel against "
                     f"torch.compile at the verifier's precision: {against}. The geomeans above use the defaults.")
    if summary.get("baselines_wall_s"):
        lines.append(f"- The baselines took {summary['baselines_wall_s']:.0f} s of wall time in all")
    if summary.get("median_wall_s") is not None:
        phases = summary.get("median_phases_s") or {}
        lines.append(f"- Median wall time per problem: {summary['median_wall_s']:.0f} s"
                     + (f"; per phase (medians over the problems with it): {phases_words(phases)}" if phases else ""))
    if summary.get("fast_p_vs_best_baseline"):
        lines.append("- fast_p against the best baseline of each problem (not eager): "
                     + ", ".join(f"fast_{p} {v:.2f}" for p, v in summary["fast_p_vs_best_baseline"].items()))
    return lines


def aggregate_method(summary: dict[str, Any]) -> list[str]:
    """How the suite's figures are aggregated."""
    return [
        "- Speedup: baseline median / kernel median, per problem. Aggregate: the geometric mean over the correct "
        "problems (the ones excluded are named above); a rejected problem has no speedup to average.",
        f"- fast_p: the share of all {summary['problems']} problems (rejected and unfinished ones count as not fast) "
        "that are correct and whose speedup over PyTorch eager is above p (KernelBench's definition: fast_0 counts "
        "the correct ones, fast_1 those faster than eager).",
        "- Gap closed: (t_baseline - t_kernel) / (t_baseline - t_floor) with t_baseline the fastest baseline of the "
        "problem (eager, every torch.compile mode, the CUDA-graph replay) and t_floor the least bytes at the "
        "datasheet bandwidth, the FLOPs at the datasheet peak: 100% is at the floor, negative is slower than the "
        "baseline. Aggregate: the arithmetic mean and the median over the correct problems where it is defined; not a "
        "geometric mean, which a negative share makes undefined. Undefined where there is no floor (no GPU times) "
        "or the baseline is already at or below it.",
    ]


def _heights(problem: dict[str, Any], on_gpu: bool) -> dict[str, float | None]:
    """Bar heights: % of the floor on GPU times; else speed relative to eager (eager = 1)."""
    autotune_ms = (problem.get("figures") or {}).get("max_autotune_ms")
    if on_gpu:
        floor = problem["floor_ms"]
        return {"eager": problem["eager_pct_of_floor"], "compile": problem["compile_pct_of_floor"],
                "max_autotune": 100 * floor / autotune_ms if floor and autotune_ms else None,
                "best": problem["pct_of_floor"]}
    eager = problem["eager_ms"]
    return {"eager": 1.0 if eager else None,
            "compile": eager / problem["compile_ms"] if eager and problem["compile_ms"] else None,
            "max_autotune": eager / autotune_ms if eager and autotune_ms else None,
            "best": problem["speedup_vs_eager"]}


def draw_results(data: dict[str, Any], path: str | Path) -> bool:
    """Draw results.png: per problem, eager / torch.compile / kernelopt side by side; False
    when no problem has a figure to draw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    problems, on_gpu = data["problems"], data["summary"]["is_gpu_time"]
    heights = [_heights(p, on_gpu) for p in problems]
    if not any(v for h in heights for v in h.values()):
        return False
    figure = Figure(figsize=(max(7.0, 1.1 * len(problems) + 2), 5.5), dpi=110)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    width = 0.2
    for k, (key, label, colour) in enumerate(SERIES):
        xs = [i + (k - 1.5) * width for i, h in enumerate(heights) if h[key]]
        if not xs:  # e.g. no torch.compile baseline: no empty entry in the legend
            continue
        ax.bar(xs, [h[key] for h in heights if h[key]], width, color=colour, edgecolor="black", linewidth=0.4,
               label=label)
    for i, problem in enumerate(problems):  # why a problem has no kernelopt bar
        if problem["status"] != "correct":
            ax.annotate(problem["status"].replace("_", " "), (i + 1.5 * width, 0), xytext=(0, 4),
                        textcoords="offset points", rotation=90, ha="center", va="bottom", fontsize=7, color="tab:red",
                        xycoords=("data", "axes fraction"))
    ax.set_xlim(-0.6, len(problems) - 0.4)
    ax.set_xticks(range(len(problems)), [p["name"] for p in problems], rotation=30, ha="right", fontsize=8)
    if on_gpu:
        ax.axhline(100, color="black", ls="--", lw=1, label="the floor (100%)")
        ax.set_ylabel("% of the roofline floor (floor time / time)")
        ax.set_title("kernelopt suite: % of the roofline floor per problem", fontsize=10)
    else:
        ax.set_yscale("log")
        ax.axhline(1, color="black", ls="--", lw=1)
        ax.set_ylabel("speed relative to PyTorch eager (eager time / time)")
        ax.set_title("kernelopt suite: speed relative to eager per problem\n"
                     "Triton interpreter on the CPU: not GPU performance", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    return True


def summary_text(summary: dict[str, Any], out: Path) -> str:
    """The suite's summary for the terminal: fast_p, geomeans, and the files written."""
    fast = ", ".join(f"fast_{p} {share:.2f}" for p, share in summary["fast_p"].items())
    note = "" if summary["is_gpu_time"] else " (interpreter times: not GPU performance)"
    floor = summary["geomean_pct_of_floor"]
    return "\n".join([
        f"correct: {summary['correct']} of {summary['problems']}; {fast}",
        f"geomean speedup: {_times(summary['geomean_speedup_vs_eager'])} over eager, "
        f"{_times(summary['geomean_speedup_vs_compile'])} over torch.compile (default), "
        f"{_times(summary.get('geomean_speedup_vs_strongest_compile'))} over the strongest torch.compile mode, "
        f"{_times(summary.get('geomean_speedup_vs_best_baseline'))} over the best baseline{note}; "
        f"geomean % of floor: {'n/a' if floor is None else f'{floor:.0f}%'}",
        *(str(out / name) for name in (RESULTS_MD, RESULTS_JSON, RESULTS_PNG) if (out / name).is_file()),
    ])


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}x"


STATUS_WORDS = {"correct": "correct", "rejected": "rejected", "no_kernel": "no kernel",
                "bad_problem": "bad problem", "error": "error"}


def _short(text: str, limit: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def progress_line(done: int, total: int, result: Any) -> str:
    """One line per finished problem (a suite.ProblemResult), e.g. `[3/8] 23_Softmax: correct, 1.84x eager, 91% of
    floor (12 s)`."""
    if result.status == "correct":
        parts = ["correct"]
        if result.speedup_vs_eager:
            note = "" if result.is_gpu_time else " (interpreter vs PyTorch on the CPU)"
            parts.append(f"{result.speedup_vs_eager:.3g}x eager{note}")
        if result.pct_of_floor:
            parts.append(f"{result.pct_of_floor:.0f}% of floor")
        if result.stop_reason:
            parts.append(f"{result.rounds} round{'s' * (result.rounds != 1)}, {result.stop_reason}")
    else:
        rule = f"[{result.rule}] " if result.rule else ""
        parts = [f"{STATUS_WORDS[result.status]}: {rule}{_short(result.reason)}"]
    where = f" on {result.where}" if result.where else ""
    retried = ", second try" if result.tries > 1 else ""
    return f"[{done}/{total}] {result.name}: {', '.join(parts)} ({result.wall_s:.0f} s{where}{retried})"
