"""Lay the rows a later, partial call of a suite pass finished over the pass's committed state, and write its
results again (results.json and results.md; the plot is left as it was):

    python benchmarks/h200/merge_rows.py NAME PARTIAL.tgz      # e.g. c3 .gpu/c3.tgz

For a pass whose rows redo_rows.sh took out and a call then ran only some of: the committed state
(benchmarks/h200/state/NAME.tgz) keeps every row, each finished row of PARTIAL (its problems/*.json and its run's
folder) replaces the committed one, and the result is written over the committed state. A row PARTIAL lacks
stays as committed; take it out again with redo_rows.sh. Run here, not on the device.
"""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(name: str, partial: Path) -> int:
    from kernelopt.report.suite import render_markdown
    from kernelopt.suite import ProblemResult, summarize

    state = ROOT / "benchmarks" / "h200" / "state" / f"{name}.tgz"
    with tempfile.TemporaryDirectory() as folder:
        old, new = Path(folder) / "old", Path(folder) / "new"
        for tgz, into in ((state, old), (partial, new)):
            with tarfile.open(tgz) as tar:
                tar.extractall(into, filter="data")
        merged = old / name
        taken = sorted(p.stem for p in (new / name / "problems").glob("*.json"))
        for row in taken:
            shutil.copy(new / name / "problems" / f"{row}.json", merged / "problems" / f"{row}.json")
            if (new / name / "runs" / row).is_dir():
                shutil.rmtree(merged / "runs" / row, ignore_errors=True)
                shutil.copytree(new / name / "runs" / row, merged / "runs" / row)
        data = json.loads((merged / "results.json").read_text())
        rows = {p.stem: json.loads(p.read_text()) for p in (merged / "problems").glob("*.json")}
        order = [r["name"] for r in data["problems"]] + sorted(set(rows) - {r["name"] for r in data["problems"]})
        data["problems"] = [rows[n] for n in order if n in rows]
        data["summary"] = summarize([ProblemResult(**r) for r in data["problems"]], data["summary"]["problems"])
        (merged / "results.json").write_text(json.dumps(data, indent=2))
        (merged / "results.md").write_text(render_markdown(data, (merged / "results.png").is_file()))
        with tarfile.open(state, "w:gz") as tar:
            tar.add(merged, arcname=name)
    print(f"{name}: {len(taken)} row(s) of {partial} over {state}; summary {json.dumps(data['summary'])[:300]}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: merge_rows.py NAME PARTIAL.tgz")
    sys.exit(main(sys.argv[1], Path(sys.argv[2])))
