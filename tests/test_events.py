"""The progress events (kernelopt/events.py): typed where they are made, plain JSON on the wire,
typed again where kernelopt reads them, old and new files alike."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kernelopt import events
from kernelopt.events import CandidateWritten, DiagnosisMade, VerdictGiven, read
from kernelopt.report.progress import render_event


def _example(cls: type[events.Event]) -> events.Event:
    """An instance with every field set to a JSON value of its kind."""
    values = {"int": 1, "str": "x", "float": 0.5, "bool": True, "list[str]": ["a"], "dict[str, Any]": {"input": 3}}
    fields = {}
    for f in dataclasses.fields(cls):
        kind = str(f.type).split(" | ")[0]
        fields[f.name] = values.get(kind, "x")
    return cls(**fields)


@pytest.mark.parametrize("cls", list(events.KINDS.values()), ids=list(events.KINDS))
def test_every_kind_goes_to_json_and_back(cls):
    event = _example(cls)
    payload = json.loads(json.dumps(event.payload()))
    assert payload["event"] == cls.KIND and read(payload) == event


def test_the_kinds_are_the_ones_the_nodes_emit():
    assert set(events.KINDS) == {
        "setup", "baselines", "compiler_seed", "model_dropped", "round_started", "diagnosis", "sweep_started",
        "sweep", "candidate", "review", "verdict", "new_best", "best_rejected", "roofline", "gain_recorded",
        "llm_retry", "candidate_running", "report", "stopped", "resumed"}


def test_an_older_line_reads_with_defaults_and_a_newer_field_is_dropped():
    old = {"event": "verdict", "round": 2, "repair": 0, "branch": 1, "outcome": "slower", "change": "tile",
           "time_ms": 1.5, "a_field_of_a_later_version": 7}  # no error, where, duplicate_of or model
    verdict = read(old)
    assert verdict == VerdictGiven(round=2, repair=0, branch=1, outcome="slower", change="tile", time_ms=1.5)
    assert read({"event": "diagnosis", "round": 1}) == DiagnosisMade(
        round=1, category=None, root_cause=None, fix=None, source=None)  # type: ignore[arg-type]
    assert read({"event": "something_new"}) is None and render_event({"event": "something_new"}) is None


def test_the_terminal_lines_come_from_the_records():
    wrote = CandidateWritten(round=1, repair=0, branch=0, change="c", path="/r/kernels/r001_a0.py",
                             tokens={"input": 1200, "output": 30}, model="m")
    assert render_event(wrote.payload()) == "  optimizer [m]: wrote kernels/r001_a0.py [tokens: 1,200 in, 30 out]"
    offline = CandidateWritten(round=1, repair=0, branch=0, change="c", path="/r/kernels/r001_a0.py")
    assert render_event(offline.payload()) is None  # offline: the verdict says it
    verdict = VerdictGiven(round=1, repair=1, branch=0, outcome="incorrect", change="mask",
                           error="incorrect: 3 values outside atol")
    assert render_event(verdict.payload()) == "  repair 1 (mask): incorrect: 3 values outside atol"
