"""The report's "Models" part: per chat model, the candidates it wrote, how many were correct and
how many became the new best, the tokens it used, and whether it was dropped from the run (why).

report.json holds a row per model in `models` (one row in a single-model run; none offline);
report.md shows the section only when more than one model ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelopt.records import Attempt
from kernelopt.report.summary import RunSummary


def model_rows(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A row per chat model of the run, in the order given (models named only by earlier attempts,
    before a resume changed them, last)."""
    attempts: list[Attempt] = state.get("attempts", [])
    names = list(state.get("models") or [])
    names += [a.model for a in attempts if a.model and a.model not in names]
    names = list(dict.fromkeys(names))
    tokens, dropped, best = state.get("model_tokens") or {}, state.get("dropped_models") or {}, state.get("best")
    rows = []
    for name in names:
        mine = [a for a in attempts if a.model == name]
        used = tokens.get(name, {})
        rows.append({
            "model": name,
            "written": len(mine),
            "correct": sum(a.time_ms is not None for a in mine),
            # round 0's first correct kernel is the baseline, faster than nothing
            "faster": sum(a.new_best and a.round > 0 for a in mine),
            "wrote_best": best is not None and any(a.kernel_path == best.path for a in mine),
            "input_tokens": used.get("input", 0),
            "output_tokens": used.get("output", 0),
            "calls": used.get("calls", 0),
            "tokens_estimated": bool(used.get("estimated")),
            "dropped": dropped.get(name),
        })
    return rows


def models_markdown(summary: RunSummary) -> list[str]:
    """report.md's Models section; [] unless more than one model ran."""
    rows = summary.models
    if len(rows) < 2:
        return []
    lines = [
        f"## Models ({len(rows)})", "",
        "Each round's candidates were shared among the models in turn; a repair stayed with the model that "
        "wrote the kernel. Tokens include the judger's calls, made by the first model not dropped.", "",
        "| model | candidates | correct | faster (new best) | input tokens | output tokens | calls | status |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        estimated = " (estimated)" if row.get("tokens_estimated") else ""
        status = [f"dropped: {row['dropped']}"] if row.get("dropped") else ["in the run to the end"]
        status += ["wrote the best kernel"] if row.get("wrote_best") else []
        lines.append(
            f"| {row['model']} | {row['written']} | {row['correct']} | {row['faster']} "
            f"| {row['input_tokens']:,}{estimated} | {row['output_tokens']:,}{estimated} | {row['calls']} "
            f"| {'; '.join(status).replace('|', '/')} |"
        )
    return [*lines, ""]


def models_text(summary: RunSummary) -> list[str]:
    """The terminal's closing lines on the models: one per model; [] unless more than one ran."""
    rows = summary.models
    if len(rows) < 2:
        return []
    lines = []
    for row in rows:
        line = (f"model {row['model']}: {row['written']} candidates, {row['correct']} correct, "
                f"{row['faster']} faster, {row['input_tokens'] + row['output_tokens']:,} tokens")
        lines.append(line + (f"; dropped: {row['dropped']}" if row.get("dropped") else ""))
    return lines
