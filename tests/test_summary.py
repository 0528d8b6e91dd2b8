"""A run's summary as one typed record: report.json is its JSON, and any report.json, older ones
included, reads back into it."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
from pathlib import Path

from test_cli import _show, kernelopt
from test_report import _state

from kernelopt.records import KernelRecord
from kernelopt.report import run
from kernelopt.report.figures import FIGURE_KEYS
from kernelopt.report.run import render_markdown, summarize_run, write_reports
from kernelopt.report.summary import RunSummary, load_summary

FIELDS = [f.name for f in dataclasses.fields(RunSummary)]


def _beam_state(run_dir: Path) -> dict:
    state = _state(run_dir)
    best = state["best"]
    return {**state, "beam": [best, KernelRecord(state["attempts"][-1].kernel_path, "h3", best.timing, 2)]}


def test_report_json_reads_back_into_the_same_record_and_the_same_json(tmp_path):
    for state in (_state(tmp_path), _state(tmp_path, clock="interpreter"), _beam_state(tmp_path)):
        summary = summarize_run(state)
        assert RunSummary.read(summary.to_json()) == summary
        write_reports(summary, tmp_path)
        on_disk = json.loads((tmp_path / "report.json").read_text())
        assert RunSummary.read(on_disk).to_json() == on_disk  # disk -> record -> disk changes nothing
        assert load_summary(tmp_path) == RunSummary.read(on_disk)


def test_the_json_has_every_field_in_order_and_a_beam_runs_own_only_in_a_beam_run(tmp_path):
    plain = summarize_run(_state(tmp_path)).to_json()
    assert list(plain) == [name for name in FIELDS if name not in RunSummary.ONLY_WHEN_SET]
    beam = summarize_run(_beam_state(tmp_path))
    assert list(beam.to_json()) == FIELDS
    assert beam.beam is not None and len(beam.beam) == 2 and beam.tree


def test_summarize_run_sets_every_field_of_the_record():
    """Its own keywords and the figures' keys are the record's fields, each once: a field added to
    the record and not made here (or made here and not in the record) fails."""
    tree = ast.parse(inspect.getsource(run.summarize_run))
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "RunSummary")
    named = [k.arg for k in call.keywords if k.arg is not None]
    assert sorted(named + list(FIGURE_KEYS)) == sorted(FIELDS)


def test_an_older_report_json_revives_with_defaults_and_re_renders(tmp_path):
    """A report.json from before the baselines' figures, the duplicates, sweeps, models and pinned
    rows existed, with a key this version no longer writes: it reads, renders and is written anew."""
    current = summarize_run(_state(tmp_path, clock="interpreter")).to_json()
    kept = ("stop_reason", "run_dir", "problem", "rounds", "gpu", "best_kernel_path", "best_round", "best_time_ms",
            "best_timing", "clock", "is_gpu_time", "eager_ms", "compile_ms", "floor", "roofline", "attempts")
    (tmp_path / "report.json").write_text(json.dumps({name: current[name] for name in kept} | {"a_key_of_long_ago": 1}))
    old = json.loads((tmp_path / "report.json").read_text())

    summary = load_summary(tmp_path)
    assert summary is not None and summary.best_time_ms == old["best_time_ms"]
    assert summary.duplicates == summary.sweeps == summary.models == summary.pinned == [] and summary.diagnoses == {}
    assert summary.method is None and summary.gap_closed_note is None and summary.beam is None
    text = render_markdown(summary)
    assert "- Stop reason: max_rounds" in text and f"## Attempts ({len(old['attempts'])})" in text
    assert "predates the record of its timing settings" in text

    proc = kernelopt("report", tmp_path, cwd=tmp_path)
    assert proc.returncode == 0, _show(proc)
    assert "- Stop reason: max_rounds" in (tmp_path / "report.md").read_text()
    rewritten = json.loads((tmp_path / "report.json").read_text())
    assert list(rewritten) == [name for name in FIELDS if name not in RunSummary.ONLY_WHEN_SET]
    assert {name: rewritten[name] for name in kept} == {name: old[name] for name in kept}


def test_the_wall_time_per_phase_comes_from_the_events_with_a_stopped_runs_pause_left_out(tmp_path):
    from kernelopt.report.figures import median_phases
    from kernelopt.report.story import phase_times, phases_words

    events = [("setup", 100.0, {}), ("baselines", 114.0, {}), ("compiler_seed", 151.0, {}), ("verdict", 157.0, {}),
              ("round_started", 166.0, {"round": 1}), ("sweep_started", 171.0, {"round": 1}),
              ("resumed", 5000.0, {}),  # the run lay stopped from 171 s to 5000 s: not its time
              ("verdict", 5030.0, {"round": 1}), ("round_started", 5040.0, {"round": 2}), ("stopped", 5052.0, {})]
    lines = [json.dumps({"time": t, "event": kind, **extra}) for kind, t, extra in events]
    lines.insert(3, '{"time": 15')  # a line cut by a kill
    (tmp_path / "events.jsonl").write_text("\n".join(lines) + "\n")
    phases = phase_times(str(tmp_path))
    assert phases == {"baselines": 14.0, "compiler seed": 37.0, "round 0": 15.0, "round 1": 45.0, "round 2": 12.0}
    assert list(phases) == ["baselines", "compiler seed", "round 0", "round 1", "round 2"]
    assert phases_words(phases).startswith("baselines 14 s, compiler seed 37 s, round 0 15 s")
    assert phase_times(str(tmp_path / "nowhere")) == {}
    other = {"baselines": 10.0, "round 0": 5.0, "round 1": 30.0, "round 10": 1.0}
    assert median_phases([phases, other, {}]) == {"baselines": 12.0, "compiler seed": 37.0, "round 0": 10.0,
                                                  "round 1": 37.5, "round 2": 12.0, "round 10": 1.0}
