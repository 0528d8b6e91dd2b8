"""A run's story from its files: where it started, each round's diagnosis, the best kernel against
the start (report.md's headline, its attempts' diagnosis column and its diff)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelopt.report.summary import RunSummary

DIFF_FILE = "best_vs_start.diff"
DIFF_SHOWN_LINES = 80  # report.md shows this much of the diff; the file holds all of it
NOT_GPU_NOTE = "interpreter time, not GPU performance"


def start_time_ms(attempts: list[dict[str, Any]]) -> float | None:
    """The time the run started from: its first correct kernel of round 0 (a start, or a seed)."""
    return next((a["time_ms"] for a in attempts if a["round"] == 0 and a.get("time_ms") is not None), None)


def round_diagnoses(run_dir: str) -> dict[str, str]:
    """Each round's diagnosis in a few words ("memory: 64-element programs ..."), from events.jsonl
    (with a beam, the best parent's)."""
    events = Path(run_dir) / "events.jsonl" if run_dir else None
    found: dict[str, str] = {}
    if events is None or not events.is_file():
        return found
    for line in events.read_text().splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut by a kill: the rest stays readable
        if event.get("event") == "diagnosis" and event.get("round") is not None and not event.get("parent_rank"):
            words = event.get("root_cause") or event.get("summary") or event.get("fix") or ""
            found[str(event["round"])] = f"{event.get('category') or '-'}: {words}"
    return found


def phase_times(run_dir: str) -> dict[str, float]:
    """Where a run's wall time went, from events.jsonl's times: "baselines", "compiler seed",
    "round 0" (the start verified and profiled), "round N", "report". The time a run lay stopped
    before a resume is left out."""
    events = Path(run_dir) / "events.jsonl" if run_dir else None
    if events is None or not events.is_file():
        return {}
    spent: dict[str, float] = {}
    phase, last = "baselines", None
    for line in events.read_text().splitlines():
        try:
            event = json.loads(line)
            kind, now = event.get("event"), float(event["time"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue  # a line cut by a kill, or written before events had times
        if last is not None and kind != "resumed":
            into = {"baselines": "baselines", "compiler_seed": "compiler seed"}.get(kind, phase)
            spent[into] = spent.get(into, 0.0) + max(0.0, now - last)
        last = now
        if kind == "baselines":
            phase = "round 0"
        elif kind == "round_started":
            phase = f"round {event.get('round')}"
        elif kind == "stopped":
            phase = "report"
    return {name: round(seconds, 2) for name, seconds in spent.items()}


def phases_words(phases: dict[str, float]) -> str:
    """"baselines 14 s, compiler seed 37 s, round 0 14 s, ..." (in the run's order)."""
    return ", ".join(f"{name} {seconds:.0f} s" for name, seconds in phases.items())


def headline(summary: RunSummary) -> str | None:
    """start -> best, with the factor, in one line (None before any correct kernel)."""
    start, best = summary.start_time_ms, summary.best_time_ms
    if start is None or best is None:
        return None
    clock = "" if summary.is_gpu_time else f" ({NOT_GPU_NOTE})"
    return f"start -> best: {start:.4f} ms -> {best:.4f} ms ({start / best:.2f}x){clock}"


def best_vs_start_diff(run_dir: Path, summary: RunSummary) -> str | None:
    """The best kernel against the run's start as a unified diff (None when either is missing or
    they are the same)."""
    import difflib

    attempts = summary.attempts
    start = next((a["kernel_path"] for a in attempts if a["round"] == 0 and a.get("time_ms")), None)
    best = run_dir / "best_kernel.py"
    start_path = _in_run(run_dir, start)
    if start_path is None or not start_path.is_file() or not best.is_file():
        return None
    old, new = start_path.read_text().splitlines(keepends=True), best.read_text().splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(old, new, f"start/{start_path.name}", "best/best_kernel.py"))
    return diff or None


def _in_run(run_dir: Path, path: str | None) -> Path | None:
    """`path`, or where it lies now if the run folder was moved: under the folder, by its last parts."""
    if not path:
        return None
    given = Path(path)
    if given.is_file():
        return given
    for parts in (given.parts[-2:], given.parts[-1:]):
        moved = run_dir.joinpath(*parts)
        if moved.is_file():
            return moved
    return given


def diff_section(diff: str | None) -> list[str]:
    if not diff:
        return []
    shown = diff.splitlines()
    more = len(shown) - DIFF_SHOWN_LINES
    note = [f"({more} more lines in `{DIFF_FILE}`)", ""] if more > 0 else []
    return ["## The best kernel against the start", "", "```diff", *shown[:DIFF_SHOWN_LINES], "```", "", *note]
