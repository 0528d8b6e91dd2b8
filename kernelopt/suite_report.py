"""A suite's results.md and results.png, drawn from results.json's content (see suite.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

RESULTS_JSON, RESULTS_MD, RESULTS_PNG = "results.json", "results.md", "results.png"

NOT_GPU_NOTE = (
    "Triton-interpreter times on the CPU against PyTorch on the CPU: they show the suite ran, "
    "not GPU performance, and their speedups are no GPU's"
)
SERIES = (("eager", "PyTorch eager", "tab:purple"), ("compile", "torch.compile", "tab:orange"),
          ("best", "kernelopt", "tab:green"))


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
        f"- Finished: {summary['finished']} of {summary['problems']}"
        + ("" if summary["finished"] == summary["problems"] else f" (continue with `kernelopt suite --resume "
                                                                  f"{suite['out_dir']}`)"),
        "",
    ]
    if problems and not summary["is_gpu_time"]:
        lines += [f"> **{NOT_GPU_NOTE}.** % of the floor is computed only for GPU times.", ""]
    fast = summary["fast_p"]
    lines += [
        "## Summary", "",
        "fast_p: the share of all problems that are correct and faster than PyTorch eager by more than p "
        "(KernelBench's). Geomeans over the correct problems.", "",
        "| " + " | ".join(f"fast_{p}" for p in fast) + " | geomean vs eager | geomean vs torch.compile "
        "| geomean % of floor |",
        "|" + "---:|" * (len(fast) + 3),
        "| " + " | ".join(f"{share:.2f}" for share in fast.values())
        + f" | {_num(summary['geomean_speedup_vs_eager'], 'x')} | {_num(summary['geomean_speedup_vs_compile'], 'x')}"
        f" | {_num(summary['geomean_pct_of_floor'], '%')} |",
        "",
        "## Problems", "",
        "| problem | result | eager (ms) | torch.compile (ms) | start (ms) | best (ms) | vs eager | vs compile "
        f"| % of floor | rounds | stop | reason |{' where |' * placed}",
        f"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|{'---|' * placed}",
    ]
    for r in problems:
        rule = f"[{r['rule']}] " if r["rule"] else ""
        where = f" {_cell(r.get('where') or '-')}{' (2nd try)' * (r.get('tries', 1) > 1)} |" if placed else ""
        lines.append(
            f"| {r['name']} | {r['status'].replace('_', ' ')} | {_num(r['eager_ms'], digits=4)} "
            f"| {_num(r['compile_ms'], digits=4)} | {_num(r['start_ms'], digits=4)} | {_num(r['best_ms'], digits=4)} "
            f"| {_num(r['speedup_vs_eager'], 'x')} | {_num(r['speedup_vs_compile'], 'x')} "
            f"| {_num(r['pct_of_floor'], '%')} | {r['rounds']} | {r['stop_reason'] or '-'} "
            f"| {_cell(rule + r['reason'])} |{where}"
        )
    if has_plot:
        caption = "% of the floor per problem" if summary["is_gpu_time"] else "speed relative to eager per problem"
        lines += ["", f"![{caption}](results.png)"]
    return "\n".join(lines) + "\n"


def _heights(problem: dict[str, Any], on_gpu: bool) -> dict[str, float | None]:
    """Bar heights: % of the floor on GPU times; else speed relative to eager (eager = 1)."""
    if on_gpu:
        return {"eager": problem["eager_pct_of_floor"], "compile": problem["compile_pct_of_floor"],
                "best": problem["pct_of_floor"]}
    eager = problem["eager_ms"]
    return {"eager": 1.0 if eager else None,
            "compile": eager / problem["compile_ms"] if eager and problem["compile_ms"] else None,
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
    width = 0.27
    for k, (key, label, colour) in enumerate(SERIES):
        xs = [i + (k - 1) * width for i, h in enumerate(heights) if h[key]]
        if not xs:  # e.g. no torch.compile baseline: no empty entry in the legend
            continue
        ax.bar(xs, [h[key] for h in heights if h[key]], width, color=colour, edgecolor="black", linewidth=0.4,
               label=label)
    for i, problem in enumerate(problems):  # why a problem has no kernelopt bar
        if problem["status"] != "correct":
            ax.annotate(problem["status"].replace("_", " "), (i + width, 0), xytext=(0, 4), textcoords="offset points",
                        rotation=90, ha="center", va="bottom", fontsize=7, color="tab:red",
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
        f"{_times(summary['geomean_speedup_vs_compile'])} over torch.compile{note}; "
        f"geomean % of floor: {'n/a' if floor is None else f'{floor:.0f}%'}",
        *(str(out / name) for name in (RESULTS_MD, RESULTS_JSON, RESULTS_PNG) if (out / name).is_file()),
    ])


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}x"
