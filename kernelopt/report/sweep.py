"""The offline optimizer's sweeps in the report: every configuration tried, its time, and a plot
of time against the swept block size (one line per num_warps)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from kernelopt.offline.tuner import kind_of
from kernelopt.records import config_text
from kernelopt.report.summary import RunSummary

SWEEP_PNG = "sweep.png"


def table_files(folder: Path) -> list[Path]:
    """A run's sweep tables in the order they were made: round-003.json, then its repairs
    round-003-a1.json, -a2 ... (as text, the repairs would sort first)."""

    def made(path: Path) -> tuple[int, int]:
        round_, _, repair = path.stem.removeprefix("round-").partition("-a")
        return int(round_) if round_.isdigit() else 0, int(repair) if repair.isdigit() else 0

    return sorted(folder.glob("round-*.json"), key=made)


def sweep_tables(run_dir: str | Path, attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each round's sweep table (sweeps/round-NNN.json), each row with the full verification's
    outcome when it was one of the configurations verified."""
    folder = Path(run_dir) / "sweeps"
    if not run_dir or not folder.is_dir():
        return []
    outcome_of = {}  # (round, source) -> outcome: a row is credited only with its own round's verification
    for attempt in attempts:
        path = Path(attempt.get("kernel_path") or "")
        if path.is_file():
            outcome = attempt["outcome"] + (" (new best)" if attempt.get("new_best") else "")
            outcome_of[(attempt["round"], path.read_text())] = outcome
    tables = []
    for table_file in table_files(folder):
        table = json.loads(table_file.read_text())
        for row in table["rows"]:
            variant = Path(row.get("path") or "")
            row["verified"] = outcome_of.get((table["round"], variant.read_text())) if variant.is_file() else None
        if table["rows"]:  # a round that swept nothing has no table to show
            tables.append(table)
    return tables


def _config(row: dict[str, Any]) -> str:
    text = config_text(row["config"])
    label = f"move {row['move']}" if row.get("move") else row.get("label")
    return f"{label}: {text}" if label else text


_NOT_RUN = ("time-budget", "not-timed")  # a row the budget kept from running, or never timed: it did not fail


def _final_structure(tables: list[dict[str, Any]], best_round: int | None) -> str | None:
    """The move of the run's best kernel where a swept configuration of `best_round` became it (the last sweep's
    note is written before its round is verified: a run that stops on that round's new best kept the old name)."""
    made = [r for t in tables if t["round"] == best_round for r in t["rows"]
            if str(r.get("verified") or "").endswith("(new best)")]
    return (made[-1].get("move") or "the starting kernel's") if made and best_round is not None else None


def moves_markdown(tables: list[dict[str, Any]], best_round: int | None = None) -> list[str]:
    """The structural moves: the problem's family, the best kernel's structure (that of the swept configuration
    of `best_round` that became the best, else the last sweep's), each move that applies with its best swept
    time, each that does not with why."""
    notes = [t["moves"] for t in tables if t.get("moves")]
    if not notes:
        return []
    note = notes[-1]
    structure = _final_structure(tables, best_round) or note.get("best_structure")
    best_ms: dict[str, float] = {}
    refused: dict[str, set[str]] = {}  # a move's rules where a configuration failed
    for row in (r for t in tables for r in t["rows"] if r.get("move")):
        if row["time_ms"] is not None:
            best_ms[row["move"]] = min(best_ms.get(row["move"], row["time_ms"]), row["time_ms"])
        elif row.get("rule") not in _NOT_RUN:
            refused.setdefault(row["move"], set()).add(str(row.get("rule")))
    lines = ["", "## Structural moves", "",
             f"Family of the reference: {note.get('family') or 'not recognised'}; "
             f"the best kernel's structure: {structure}.", ""]
    if note.get("first"):
        lines += [f"The diagnosis ({note.get('diagnosis')}) put first: {', '.join(note['first'])}.", ""]
    for move in note.get("applied", []):
        if move["name"] in best_ms:
            swept = f"best swept {best_ms[move['name']]:.4g} ms"
        elif move["name"] in refused:  # it applied, and every configuration of it failed: say how
            swept = f"every configuration failed: {', '.join(sorted(refused[move['name']]))}"
        else:
            swept = "not timed"
        lines.append(f"- **{move['name']}** (applies; {swept}): {move['why']}")
    for move in note.get("skipped", []):
        lines.append(f"- {move['name']} does not apply: {move['why']}")
    return lines


def sweep_markdown(summary: RunSummary, has_plot: bool) -> list[str]:
    """The report's section on the sweeps: one table per round, fastest first."""
    tables = summary.sweeps
    if not tables:
        return []
    lines = [*moves_markdown(tables, summary.best_round), "", "## Configurations swept", ""]
    if has_plot:
        lines += [f"![time against the swept parameter]({SWEEP_PNG})", ""]
    for table in tables:
        rows = sorted(table["rows"], key=lambda r: (r["time_ms"] is None, -r["stage"], r["time_ms"] or 0.0))
        timed = sum(r["time_ms"] is not None for r in rows)
        lines += [f"### Round {table['round']}: {len(rows)} configurations, {timed} timed",
                  f"Following: {table.get('basis') or '-'}", "",
                  "| # | configuration | time (ms) | trials | halving stage | full verification |",
                  "|---|---|---|---|---|---|"]
        for n, row in enumerate(rows, 1):
            time = f"{row['time_ms']:.4g}" if row["time_ms"] is not None else f"failed: {row.get('rule')}"
            lines.append(f"| {n} | {_config(row)} | {time} | {row['trials']} | {row['stage']} | "
                         f"{row.get('verified') or '-'} |")
        lines.append("")
    return lines


def _axis(rows: list[dict[str, Any]]) -> str | None:
    """The knob to plot time against: the size knob with the most distinct values."""
    counts: dict[str, set[int]] = {}
    for row in rows:
        for k, v in row["config"].items():
            counts.setdefault(k, set()).add(v)
    sizes = [k for k in counts if kind_of(k) == "size"] or list(counts)  # not num_warps, DW_WARPS, num_stages
    return max(sizes, key=lambda k: len(counts[k]), default=None)


def _numbers(label: str) -> tuple[int, ...]:
    """"num_warps=16, num_stages=3" -> (16, 3): legend entries in numeric order, not 16 before 2."""
    return tuple(int(n) for n in re.findall(r"=(\d+)", label))


def draw_sweep(summary: RunSummary, path: str | Path) -> bool:
    """sweep.png: time against the swept parameter, one line per num_warps; False without a sweep."""
    rows = [r for t in summary.sweeps for r in t["rows"] if r["time_ms"] is not None]
    axis = _axis(rows)
    if not rows or axis is None:
        return False
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 5), dpi=110)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot(1, 1, 1)
    groups: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        if axis not in row["config"]:
            continue
        rest = ", ".join(f"{k}={v}" for k, v in row["config"].items() if k != axis and k in ("num_warps", "num_stages"))
        groups.setdefault(rest or "all", []).append((row["config"][axis], row["time_ms"]))
    for label, points in sorted(groups.items(), key=lambda item: _numbers(item[0])):
        best: dict[int, float] = {}
        for x, ms in points:
            best[x] = min(best.get(x, math.inf), ms)
        xs = sorted(best)
        ax.plot(xs, [best[x] for x in xs], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(f"{axis} (other knobs: best time at each value)")
    ax.set_ylabel("time (ms, median)")
    clock = "GPU time" if summary.is_gpu_time else "interpreter time, not GPU performance"
    ax.set_title(f"Configurations swept ({clock})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path)
    return True
