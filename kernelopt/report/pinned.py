"""Pinned tuning in the report: for each autotuned rewrite judged at its parent's configuration
first (nodes/pinned.py), the gain from the change and the gain from tuning, apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelopt.report.summary import RunSummary


def gains(attempt: dict[str, Any]) -> tuple[float | None, float | None]:
    """(the change's gain, parent / pinned; the tuning's, pinned / tuned) of a report.json attempt;
    the tuning's is None for a rewrite settled at its pin (not tuned)."""
    parent, pinned, tuned = attempt.get("parent_ms"), attempt.get("pinned_ms"), attempt.get("time_ms")
    change = parent / pinned if parent and pinned else None
    tuning = pinned / tuned if pinned and tuned and not attempt.get("error") else None
    return change, tuning


def pinned_rows(attempts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """report.json's "pinned": one row per attempt judged at a pin."""
    rows = []
    for a in attempts:
        if not a.get("pinned"):
            continue
        change, tuning = gains(a)
        rows.append({"kernel": Path(a["kernel_path"]).name, "config": a["pinned"], "parent_ms": a.get("parent_ms"),
                     "pinned_ms": a.get("pinned_ms"), "tuned_ms": None if tuning is None else a.get("time_ms"),
                     "change_gain": change, "tuning_gain": tuning, "outcome": a["outcome"]})
    return rows


def pinned_section(summary: RunSummary) -> list[str]:
    """report.md's "Change and tuning" section (nothing when no rewrite was pinned)."""
    rows = summary.pinned or pinned_rows(summary.attempts)
    if not rows:
        return []

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:.4f}"

    def x(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}x"

    lines = [
        "## Change and tuning (pinned)", "",
        "Each autotuned rewrite ran first at its parent's configuration alone, so its change is measured "
        "apart from the choice of tiles; only a change that did not lose there was tuned.", "",
        "| kernel | pinned at | parent (ms) | pinned (ms) | tuned (ms) | gain from the change | gain from tuning "
        "| outcome |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(f"| `{r['kernel']}` | {r['config']} | {ms(r['parent_ms'])} | {ms(r['pinned_ms'])} "
                     f"| {ms(r['tuned_ms'])} | {x(r['change_gain'])} | {x(r['tuning_gain'])} | {r['outcome']} |")
    return [*lines, ""]
