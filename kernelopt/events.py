"""The progress events of a run: one typed record per kind, all in this module.

Nodes emit them (`nodes/common.py:emit`). On the wire, LangGraph's custom stream and a line of
RUN_DIR/events.jsonl, each is a JSON object `{"event": KIND, **its fields}` (`payload`), so a
watcher reads plain JSON and an older run's file reads the same way. kernelopt's own readers take
the record back with `read`: a field an older run did not write takes its default, and a field
this version does not know is dropped. Every field is JSON-native.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, kw_only=True)
class Event:
    KIND: ClassVar[str] = ""

    def payload(self) -> dict[str, Any]:
        return {"event": self.KIND, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}}


@dataclass(frozen=True, kw_only=True)
class SetupDone(Event):
    KIND = "setup"
    run_dir: str
    gpu: str


@dataclass(frozen=True, kw_only=True)
class BaselinesTimed(Event):
    KIND = "baselines"
    eager_ms: float | None = None
    compile_ms: float | None = None
    compile_error: str | None = None
    max_autotune_ms: float | None = None
    max_autotune_error: str | None = None
    cuda_graph_ms: float | None = None
    wall_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class CompilerSeedMade(Event):
    KIND = "compiler_seed"
    path: str | None = None
    cached: bool | None = None
    compile_s: float | None = None
    kernels: int | None = None
    error: str | None = None  # why there is no seed
    stages_s: dict[str, float] | None = None  # where making it took its time (obtain.CompilerSeed.stages_s)


@dataclass(frozen=True, kw_only=True)
class ModelDropped(Event):
    KIND = "model_dropped"
    model: str
    reason: str
    round: int = 0


@dataclass(frozen=True, kw_only=True)
class RoundStarted(Event):
    KIND = "round_started"
    round: int


@dataclass(frozen=True, kw_only=True)
class DiagnosisMade(Event):
    KIND = "diagnosis"
    round: int
    category: str
    root_cause: str
    fix: str
    source: str  # "llm" or "rules"
    note: str | None = None
    tokens: dict[str, Any] | None = None  # the run's token totals so far, when a model was asked
    parent: str | None = None  # a beam's parent kernel (its path), and its rank in the beam
    parent_rank: int | None = None


@dataclass(frozen=True, kw_only=True)
class SweepStarted(Event):
    KIND = "sweep_started"
    round: int
    configs: int
    basis: str | None = None


@dataclass(frozen=True, kw_only=True)
class SweepDone(Event):
    KIND = "sweep"
    round: int
    configs: int
    timed: int
    best_ms: float | None = None


@dataclass(frozen=True, kw_only=True)
class CandidateWritten(Event):
    KIND = "candidate"
    round: int
    repair: int
    branch: int
    change: str
    path: str | None = None
    error: str | None = None  # the reply held no usable kernel: why
    tokens: dict[str, Any] | None = None
    model: str | None = None  # which model wrote it, when the run has several


@dataclass(frozen=True, kw_only=True)
class Reviewed(Event):
    KIND = "review"
    round: int
    repair: int
    branch: int
    action: str  # approve, reject, edit
    change: str
    path: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class VerdictGiven(Event):
    KIND = "verdict"
    round: int
    repair: int
    branch: int
    outcome: str
    change: str
    time_ms: float | None = None
    error: str | None = None
    where: str = ""
    duplicate_of: str = ""
    model: str | None = None


@dataclass(frozen=True, kw_only=True)
class NewBest(Event):
    KIND = "new_best"
    round: int
    time_ms: float
    path: str


@dataclass(frozen=True, kw_only=True)
class BestRejected(Event):
    KIND = "best_rejected"
    round: int
    time_ms: float | None
    error: str


@dataclass(frozen=True, kw_only=True)
class RooflineFound(Event):
    KIND = "roofline"
    bottleneck: str
    efficiency_pct: float | None
    at_roofline: bool
    warnings: list[str]


@dataclass(frozen=True, kw_only=True)
class GainRecorded(Event):
    KIND = "gain_recorded"
    id: int
    round: int
    family: str
    bottleneck: str
    speedup: float


@dataclass(frozen=True, kw_only=True)
class LlmRetry(Event):
    KIND = "llm_retry"
    node: str
    retry: int
    retries: int
    wait_s: float
    error: str


@dataclass(frozen=True, kw_only=True)
class CandidateRunning(Event):
    KIND = "candidate_running"
    path: str
    phase: str
    elapsed_s: float


@dataclass(frozen=True, kw_only=True)
class ReportWritten(Event):
    KIND = "report"
    path: str
    files: list[str]


@dataclass(frozen=True, kw_only=True)
class Stopped(Event):
    KIND = "stopped"  # events.jsonl only: the report node's first act
    stop_reason: str | None
    round: int = 0


@dataclass(frozen=True, kw_only=True)
class Resumed(Event):
    KIND = "resumed"  # events.jsonl only: `kernelopt resume` went on with the run
    where: str
    model: str | None = None
    models: list[str] | None = None
    base_url: str | None = None


KINDS: dict[str, type[Event]] = {cls.KIND: cls for cls in Event.__subclasses__()}


def read(payload: dict[str, Any]) -> Event | None:
    """The record of one event object, or None for a kind this version does not know."""
    cls = KINDS.get(str(payload.get("event")))
    if cls is None:
        return None
    known = {f.name: f for f in dataclasses.fields(cls)}
    given = {name: value for name, value in payload.items() if name in known}
    for name, f in known.items():  # a field an older run did not write, with no default: None
        if name not in given and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            given[name] = None
    return cls(**given)
