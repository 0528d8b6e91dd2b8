"""A run's summary: one typed record of the figures a person asks for at the end of a run.

The report node makes it (`report/run.py:summarize_run`) and writes it as RUN_DIR/report.json
(`to_json`), which older tools and `kernelopt suite` read as plain JSON. kernelopt's own readers
take the record back with `read` (`load_summary`): a field an older run did not write takes its
default, and a key this version does not know is dropped. The top level is named and typed; its
nested parts (attempts, sweeps, the floor, the roofline, ...) stay JSON as report.json has them.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

REPORT_JSON = "report.json"


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """report.json's fields, in its order: the run, its best kernel, the baselines and their
    figures (`report/figures.py:figures`, the FIGURE_KEYS), the roofline and every attempt."""

    ONLY_WHEN_SET: ClassVar[tuple[str, ...]] = ("beam", "tree")  # a beam run's: other runs' report.json lacks them

    stop_reason: str | None = None  # None: the run has not finished
    run_dir: str = ""
    problem: str | None = None  # the problem file's path
    rounds: int = 0
    gpu: str | None = None  # the target GPU's key in the specs database
    gpu_named: bool = False  # the person named it (Context.gpu); else the prompts' default aim
    best_kernel_path: str | None = None
    best_round: int | None = None
    best_time_ms: float | None = None
    best_timing: dict[str, Any] | None = None  # records.Timing as JSON
    clock: str | None = None  # records.Clock: "cuda_events", "interpreter", "cpu"
    is_gpu_time: bool = False
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    compile_error: str | None = None
    floor: dict[str, Any] | None = None  # records.FloorEstimate as JSON
    roofline: dict[str, Any] | None = None  # records.Roofline as JSON
    attempts: list[dict[str, Any]] = field(default_factory=list)  # records.Attempt as JSON, in the order tried
    duplicates: list[dict[str, Any]] = field(default_factory=list)  # candidates not timed: their IR had been
    duplicates_removed: int = 0
    sweeps: list[dict[str, Any]] = field(default_factory=list)  # report/sweep.py:sweep_tables
    start_time_ms: float | None = None
    diagnoses: dict[str, str] = field(default_factory=dict)  # round (as text) -> its diagnosis in a few words
    phases_s: dict[str, float] = field(default_factory=dict)  # report/story.py:phase_times (wall time per phase)
    models: list[dict[str, Any]] = field(default_factory=list)  # report/models.py:model_rows
    pinned: list[dict[str, Any]] = field(default_factory=list)  # report/pinned.py:pinned_rows
    beam: list[str] | None = None  # a beam run's parents at the end (their paths)
    tree: list[dict[str, Any]] | None = None  # a beam run's search tree (report/tree.py:search_tree)
    # the baselines' figures: None in a report.json written before they existed
    max_autotune_ms: float | None = None
    max_autotune_error: str | None = None
    max_autotune_compile_s: float | None = None
    max_autotune_cache_hit: bool | None = None
    compile_s: float | None = None
    cuda_graph_ms: float | None = None
    cuda_graph_error: str | None = None
    baselines_wall_s: float | None = None
    speedup_vs_max_autotune: float | None = None
    strongest_compile: str | None = None  # the faster torch.compile mode timed: "default" or "max-autotune"
    strongest_compile_ms: float | None = None
    speedup_vs_strongest_compile: float | None = None
    best_baseline: str | None = None  # the fastest baseline's name, as Baselines.every() gives it
    best_baseline_ms: float | None = None
    speedup_vs_best_baseline: float | None = None
    floor_ms: float | None = None  # on the datasheet's ceilings; GPU times only
    gap_closed: float | None = None  # the share of the best baseline's distance to the floor closed
    gap_closed_note: str | None = None  # why gap_closed is None ("" when it is not)
    launch_note: str | None = None
    method: dict[str, Any] | None = None  # records.TimingMethod as JSON
    max_autotune_limit_s: float | None = None
    baseline_timings: dict[str, dict[str, Any]] | None = None  # baseline name -> records.Timing as JSON
    refused_baselines: dict[str, str] | None = None  # baselines the yardstick refused (reduced precision) -> why
    refused_at_full_precision: dict[str, str] | None = None  # refused with reduced precision off too
    judge_error: str | None = None  # why the baselines' outputs could not be judged
    eager_full_ms: float | None = None  # eager and torch.compile at full precision, timed where one was refused
    compile_full_ms: float | None = None
    full_error: str | None = None
    compile_at_precision: str | None = None  # the torch.compile time at the verifier's precision: its name
    speedup_vs_compile_full: float | None = None  # ... and the kernel's speedup over it

    def to_json(self) -> dict[str, Any]:
        """report.json's object: every field in order, a beam run's own only where it has them."""
        return {name: value for name, value in dataclasses.asdict(self).items()
                if not (name in self.ONLY_WHEN_SET and value is None)}

    @classmethod
    def read(cls, data: dict[str, Any]) -> RunSummary:
        """The record of a report.json object: what it lacks takes the default, what it has beyond is dropped."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{name: value for name, value in data.items() if name in known})


def load_summary(run_dir: str | Path) -> RunSummary | None:
    """RUN_DIR/report.json as written at the end of the run, or None where there is none; when the
    folder was moved since, its paths name where the files are now."""
    path = Path(run_dir) / REPORT_JSON
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    old, new = data.get("run_dir"), str(Path(run_dir).resolve())
    return RunSummary.read(_moved(data, old, new) if old and old != new else data)


def _moved(value: Any, old: str, new: str) -> Any:
    """`value` with every path under `old` put under `new`."""
    if isinstance(value, str):
        return new + value[len(old):] if value == old or value.startswith(old + "/") else value
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    return value
