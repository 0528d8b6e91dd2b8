"""A beam run's search tree from its attempts: each kernel under the kernel it was written from
(report.json's "tree", report.md's "Search tree"), with its outcome and whether it is still a parent.

A round's candidate hangs under its parent; a repair under the failed kernel it repairs; the
seeds of round 0 are the roots. Only runs with a beam (Context.beam > 1) carry a tree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelopt.report.progress import outcome_words, verdict_detail
from kernelopt.report.summary import RunSummary

DETAIL_CHARS = 100  # of a failure's reason, in report.md


def search_tree(attempts: list[dict[str, Any]], beam: list[str]) -> list[dict[str, Any]]:
    """The run's kernels as nested nodes (each with its "children"), the roots first, in the order tried.

    `attempts` are report.json's; `beam` the paths of the parents alive at the end.
    """
    roots: list[dict[str, Any]] = []
    by_path: dict[str, dict[str, Any]] = {}
    for a in attempts:
        node = {
            "kernel": Path(a["kernel_path"]).name if a.get("kernel_path") else None,
            "parent": Path(a["parent"]).name if a.get("parent") else None,
            "round": a["round"], "repair": a["repair"], "outcome": a["outcome"], "time_ms": a.get("time_ms"),
            "new_best": bool(a.get("new_best")), "in_beam": bool(a.get("kernel_path")) and a["kernel_path"] in beam,
            "error": a.get("error"), "rule": a.get("rule"), "children": [],
        }
        parent = by_path.get(a.get("parent") or "")
        # a repair rewrites a failed kernel; any other kernel was written from a correct one (or is a seed)
        repairs = parent is not None and parent["time_ms"] is None
        node["written"] = "start" if not a.get("parent") else "repair of" if repairs else "from"
        (parent["children"] if parent else roots).append(node)
        if a.get("kernel_path"):
            by_path.setdefault(a["kernel_path"], node)
    return roots


def tree_section(summary: RunSummary) -> list[str]:
    """report.md's search tree: one line per kernel, indented under its parent (none without a beam)."""
    tree = summary.tree
    if not tree:
        return []
    lines = ["## Search tree", "",
             f"The beam kept {len(summary.beam or [])} parents at the end (marked *in the beam*); "
             "each kernel under the one it was written from, a repair under the kernel it repairs.", ""]
    for root in tree:
        lines += _lines(root, 0)
    return [*lines, ""]


def _lines(node: dict[str, Any], depth: int) -> list[str]:
    """One node's line and its children's, `depth` levels in."""
    lines = [f"{'  ' * depth}- {_node_line(node)}"]
    for child in node["children"]:
        lines += _lines(child, depth + 1)
    return lines


def _node_line(node: dict[str, Any]) -> str:
    """`r002_a0_b1.py` from `r001_a0_b1.py`: 0.0035 ms, faster (new best), in words."""
    name = f"`{node['kernel']}`" if node["kernel"] else f"no kernel (round {node['round']}, repair {node['repair']}),"
    where = node["written"] + (f" `{node['parent']}`" if node["parent"] else "")
    words = outcome_words(node["outcome"], node["round"])
    if node["time_ms"] is not None:
        verdict = f"{node['time_ms']:.4g} ms, {words}"
    else:
        detail = " ".join(verdict_detail(node["error"], node["rule"], node["outcome"]).split())
        cut = detail if len(detail) <= DETAIL_CHARS else detail[: DETAIL_CHARS - 1] + "…"
        verdict = f"{words}" + (f" ({cut})" if cut else "")
    marks = " (new best)" if node["new_best"] and node["round"] else ""
    marks += " *in the beam*" if node["in_beam"] else ""
    return f"{name} {where}: {verdict}{marks}"
