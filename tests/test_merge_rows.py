"""benchmarks/h200/merge_rows.py: a partial call's finished rows laid over a suite pass's committed state, the rest
kept, and the pass's results written again from every row."""

from __future__ import annotations

import dataclasses
import json
import tarfile
from pathlib import Path

import pytest

from kernelopt.harness.problem import import_file
from kernelopt.suite import ProblemResult, Suite, SuiteSettings

ROOT = Path(__file__).resolve().parents[1]
merge = import_file(ROOT / "benchmarks" / "h200" / "merge_rows.py", "kernelopt_merge_rows_script")


def _row(name: str, best_ms: float) -> dict:
    return dataclasses.asdict(ProblemResult(name=name, status="correct", reason="", is_gpu_time=True, eager_ms=2.0,
                                            compile_ms=2.0, best_ms=best_ms, speedup_vs_eager=2.0 / best_ms,
                                            speedup_vs_compile=2.0 / best_ms, floor_ms=0.5,
                                            pct_of_floor=50.0 / best_ms, rounds=1, wall_s=60.0))


def _state(folder: Path, rows: dict[str, float], results: bool) -> Path:
    """A pass named p whose problems/ hold `rows` (name: best ms), each run folder with a best_kernel.py naming it."""
    base = folder / "p"
    (base / "problems").mkdir(parents=True)
    for name, ms in rows.items():
        (base / "problems" / f"{name}.json").write_text(json.dumps(_row(name, ms)))
        (base / "runs" / name).mkdir(parents=True)
        (base / "runs" / name / "best_kernel.py").write_text(f"# {name} at {ms} ms\n")
    if results:
        problems = [_row(n, ms) for n, ms in rows.items()]
        summary = {"problems": len(rows)}
        suite = Suite("/tmp/p", None, "/tmp/suites/p", SuiteSettings(optimize=True), "NVIDIA H200")
        (base / "results.json").write_text(json.dumps({"suite": dataclasses.asdict(suite), "summary": summary,
                                                       "problems": problems}))
    tgz = folder / "p.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(base, arcname="p")
    return tgz


def test_a_partial_calls_rows_replace_the_committed_ones_and_the_results_are_written_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    committed = _state(tmp_path / "committed", {"a": 1.0, "b": 2.0, "c": 4.0}, results=True)
    partial = _state(tmp_path / "partial", {"a": 1.0, "b": 1.0}, results=False)  # b redone; c not reached
    state = tmp_path / "benchmarks" / "h200" / "state"
    state.mkdir(parents=True)
    (state / "p.tgz").write_bytes(committed.read_bytes())
    monkeypatch.setattr(merge, "ROOT", tmp_path)
    assert merge.main("p", partial) == 0
    out = tmp_path / "out"
    with tarfile.open(state / "p.tgz") as tar:
        tar.extractall(out, filter="data")
    data = json.loads((out / "p" / "results.json").read_text())
    assert [(r["name"], r["best_ms"]) for r in data["problems"]] == [("a", 1.0), ("b", 1.0), ("c", 4.0)]
    assert data["summary"]["finished"] == 3 and data["summary"]["problems"] == 3
    assert (out / "p" / "runs" / "b" / "best_kernel.py").read_text() == "# b at 1.0 ms\n"
    assert (out / "p" / "runs" / "c" / "best_kernel.py").read_text() == "# c at 4.0 ms\n"
    table = [line.split(" | ")[:8] for line in (out / "p" / "results.md").read_text().splitlines()
             if line.startswith(("| a ", "| b ", "| c "))]
    assert [(row[0], row[7]) for row in table] == [("| a", "1"), ("| b", "1"), ("| c", "4")], table
