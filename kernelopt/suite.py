"""kernelopt suite: every problem of a folder verified (or optimized), one result each, and a summary.

The work on one problem is a pure function of JSON-native records, `run_problem(spec) -> ProblemResult`,
handed to an `Executor`: `LocalExecutor` runs the problems one after another here, `kernelopt.scale`
over a host's GPUs or a Ray cluster. Each result is written to OUT/problems/NAME.json as it comes in and
results.json is rebuilt from those files, so a killed suite resumes where it stopped.

Importing this module is cheap: torch and LangGraph load only when a problem runs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from kernelopt.context import Context
from kernelopt.harness import floor_ms_for
from kernelopt.harness.problem import check_problem_source, read_source
from kernelopt.records import FloorEstimate, InputError
from kernelopt.report.figures import FAST_P, FIGURE_KEYS, figures, geomean, suite_figures
from kernelopt.report.suite import RESULTS_JSON, RESULTS_MD, RESULTS_PNG
from kernelopt.runs import compile_cache_root, release_references
from kernelopt.seed.obtain import seed_possible

SUITE_FILE = "suite.json"  # the suite's folders and settings: what --resume needs
PROBLEMS = "problems"  # OUT/problems/NAME.json: one finished problem each
RUNS = "runs"  # OUT/runs/NAME/: one problem's harness work, or its optimize run

# correct; rejected by the verifier (wrong, crashed, hung, cheated); no kernel to judge; a
# problem that does not load or whose reference does not run; anything else that went wrong
Status = Literal["correct", "rejected", "no_kernel", "bad_problem", "error"]


@dataclass(frozen=True)
class SuiteSettings:
    """How every problem of a suite is run; kept in OUT/suite.json for --resume (no API key)."""

    optimize: bool = False
    max_rounds: int = Context.max_rounds
    model: str | None = None  # optimize: the chat model; None: the offline policy
    base_url: str | None = None
    time_compile: bool = True
    max_autotune: bool = True  # also torch.compile(mode="max-autotune"): the strongest compiler baseline
    max_autotune_limit_s: float = Context.max_autotune_limit_s
    timeout_s: float | None = None  # per candidate phase; None: limits that follow the reference
    mem_limit_gb: float | None = None  # per candidate; None: the harness default
    compiler_seed: bool = True  # optimize: start from (or race against) the Triton torch.compile writes
    max_wall_s: float | None = None  # optimize: each problem's time budget (Context.max_wall_s)


@dataclass(frozen=True)
class ProblemSpec:
    """One problem's work: everything `run_problem` needs, and nothing it shares with another."""

    name: str  # the problem file's stem
    problem_path: str
    kernel_path: str | None  # where its kernel is looked for; None: no kernels folder given
    run_dir: str  # its own folder, emptied before it runs
    settings: SuiteSettings


@dataclass(frozen=True)
class ProblemResult:
    """What one problem came to. Times in ms; speedups are baseline time / best time; % of floor
    (floor time / time) only for GPU times."""

    name: str
    status: Status
    reason: str
    rule: str | None = None  # the verifier's rule a rejected kernel broke
    is_gpu_time: bool = False
    eager_ms: float | None = None
    compile_ms: float | None = None
    start_ms: float | None = None  # the given kernel's time (verify only: the same as best_ms)
    best_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    floor_ms: float | None = None
    pct_of_floor: float | None = None
    eager_pct_of_floor: float | None = None
    compile_pct_of_floor: float | None = None
    rounds: int = 0
    stop_reason: str | None = None
    wall_s: float = 0.0
    run_dir: str | None = None
    best_kernel_path: str | None = None
    log_path: str | None = None
    where: str | None = None  # the GPU (and node) that judged it; None: this process's one device
    tries: int = 1  # 2: the first try's worker or node was lost, and the problem was run again
    # the stronger baselines, the speedups over them with the mode named, the gap closed, the
    # method (report/figures.py:figures); None in a result written before they were recorded
    figures: dict[str, Any] | None = None


@dataclass(frozen=True)
class Suite:
    """A suite on disk: where its problems, kernels and results are, and how it runs them."""

    problems_dir: str
    kernels_dir: str | None
    out_dir: str
    settings: SuiteSettings
    # the GPU its times come from (nvidia-smi's name; "cpu": the interpreter's; "": unnamed; None: under Ray, or a suite
    # written before it was kept): scale/choose.py's timing_device, checked on --resume
    device: str | None = None

    def specs(self) -> list[ProblemSpec]:
        """One spec per problem file, in the folder's natural order (2_X before 10_Y)."""
        kernels = Path(self.kernels_dir) if self.kernels_dir else None
        return [
            ProblemSpec(path.stem, str(path), str(kernels / path.name) if kernels else None,
                        str(Path(self.out_dir) / RUNS / path.stem), self.settings)
            for path in problem_files(self.problems_dir)
        ]


Work = Callable[[ProblemSpec], ProblemResult]  # run_problem, or a stand-in in tests


class Executor(Protocol):
    """Runs `work` on every spec and yields the results as they finish, in any order."""

    def run(self, work: Work, specs: Sequence[ProblemSpec]) -> Iterator[ProblemResult]:
        ...


class LocalExecutor:
    """One problem after another, in this process: one harness, one device."""

    def run(self, work: Work, specs: Sequence[ProblemSpec]) -> Iterator[ProblemResult]:
        for spec in specs:
            yield work(spec)


def _natural(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", path.stem)]


def problem_files(folder: str | Path) -> list[Path]:
    """The problem files (*.py, not _private ones) of a folder, or an InputError saying why none."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise InputError(f"{folder} is not a folder; pass the folder of problem files (KernelBench format)")
    files = sorted((p.resolve() for p in path.glob("*.py") if not p.name.startswith("_")), key=_natural)
    if not files:
        raise InputError(f"{folder} holds no problem files (*.py); each defines Model, get_inputs, get_init_inputs")
    return files


def new_suite(problems_dir: str, kernels_dir: str | None, settings: SuiteSettings, out_dir: Path | None,
              device: str | None = None) -> Suite:
    """A new suite, its folders checked and suite.json written (out_dir: a new folder under the runs dir)."""
    problem_files(problems_dir)
    if kernels_dir and not Path(kernels_dir).expanduser().is_dir():
        raise InputError(f"--kernels {kernels_dir} is not a folder; pass the folder of kernels named as the problems")
    if not kernels_dir and not (settings.optimize and (settings.model or settings.compiler_seed)):
        raise InputError("no --kernels folder: pass one, or --optimize (from the compiler seed, or --model NAME)")
    if out_dir is None:
        from kernelopt.runs import new_run_dir

        out_dir = new_run_dir(None, f"suite {Path(problems_dir).resolve()}")
    suite = Suite(str(Path(problems_dir).expanduser().resolve()),
                  str(Path(kernels_dir).expanduser().resolve()) if kernels_dir else None, str(out_dir), settings,
                  device)
    (out_dir / SUITE_FILE).write_text(json.dumps(dataclasses.asdict(suite), indent=2))
    return suite


def read_suite(out_dir: str | Path, here: str | None = None) -> Suite:
    """The suite kept in OUT/suite.json, or an InputError saying there is none, or (`here`: the device this host
    would time on, scale/choose.py's timing_device) that it would go on on another kind of GPU than it started on,
    or on the CPU after a GPU, or the reverse: one table would mix two devices' times. Unknown on either side (a
    suite from before the name was kept, Ray, a GPU nvidia-smi cannot name) passes."""
    path = Path(out_dir).expanduser().resolve() / SUITE_FILE
    if not path.is_file():
        raise InputError(f"{path.parent} holds no {SUITE_FILE}; pass the folder a `kernelopt suite` printed")
    data = json.loads(path.read_text())
    known, options = {f.name for f in dataclasses.fields(Suite)}, {f.name for f in dataclasses.fields(SuiteSettings)}
    settings = SuiteSettings(**{k: v for k, v in data["settings"].items() if k in options})  # a later version's too
    kept = {k: v for k, v in data.items() if k in known}
    suite = Suite(**{**kept, "out_dir": str(path.parent), "settings": settings})
    if suite.device and here and suite.device != here:
        words = {"cpu": "the CPU (the interpreter)"}
        raise InputError(f"{suite.out_dir} was timed on {words.get(suite.device, suite.device)} and this host times "
                         f"on {words.get(here, here)}: one table would mix two devices' times; resume it where it "
                         "started, or start a new suite here")
    return suite


# ── one problem ──────────────────────────────────────────────────────────────────────


def run_problem(spec: ProblemSpec) -> ProblemResult:
    """The problem's result; never raises (but on Ctrl-C): whatever went wrong is its reason."""
    started = time.monotonic()
    shutil.rmtree(spec.run_dir, ignore_errors=True)  # a problem cut short last time starts again
    Path(spec.run_dir).mkdir(parents=True)
    try:
        check_problem_source(read_source(spec.problem_path, "problem"), Path(spec.problem_path).name)
        kernel = spec.kernel_path if spec.kernel_path and Path(spec.kernel_path).is_file() else None
        if kernel is not None and not spec.settings.optimize:
            result = _verified(spec, kernel)
        elif spec.settings.optimize and (kernel or spec.settings.model or seed_possible(spec.settings.compiler_seed)):
            result = _optimized(spec, kernel)
        else:
            where = f"{spec.kernel_path} does not exist" if spec.kernel_path else "no kernels folder given"
            if spec.settings.optimize:
                where += "; no compiler seed (no CUDA GPU, or turned off); no --model to write one"
            result = ProblemResult(spec.name, "no_kernel", where)
    except InputError as err:
        result = ProblemResult(spec.name, "bad_problem", str(err))
    except Exception as err:  # one problem's failure never stops the suite
        result = ProblemResult(spec.name, "error", f"{type(err).__name__}: {err}")
    finally:  # its reference processes leave the GPU before the next problem's start
        release_references(spec.run_dir)
    return dataclasses.replace(result, wall_s=round(time.monotonic() - started, 2), run_dir=spec.run_dir)


def _limits(settings: SuiteSettings) -> dict[str, float]:
    return {name: value for name in ("timeout_s", "mem_limit_gb") if (value := getattr(settings, name)) is not None}


def _verified(spec: ProblemSpec, kernel: str) -> ProblemResult:
    """The given kernel checked and timed, as `kernelopt verify` does."""
    from kernelopt.harness.verify import HarnessSettings, Verifier

    settings = HarnessSettings.detect(time_compile=spec.settings.time_compile, max_autotune=spec.settings.max_autotune,
                                      max_autotune_limit_s=spec.settings.max_autotune_limit_s, **_limits(spec.settings),
                                      compile_cache_dir=compile_cache_root())
    verifier = Verifier(spec.problem_path, Path(spec.run_dir) / "harness", settings)
    try:
        baselines = verifier.baselines()
        floor_ms = floor_ms_for(baselines.floor, None)
        verdict = verifier.verify(kernel, floor_ms=floor_ms)
    finally:  # its expected outputs leave the device before the next problem's arrive
        verifier.close()
    time_ms = verdict.timing.median_ms if verdict.accepted and verdict.timing else None
    on_gpu = bool(verdict.timing and verdict.timing.is_gpu_time)
    return _with_figures(_measured(
        ProblemResult(spec.name, "correct" if verdict.accepted else "rejected", verdict.reason, verdict.rule,
                      is_gpu_time=bool(verdict.timing and verdict.timing.is_gpu_time), start_ms=time_ms,
                      best_ms=time_ms, log_path=verdict.log_path,
                      best_kernel_path=kernel if verdict.accepted else None),
        baselines.eager.median_ms if baselines.eager else None,
        baselines.compile.median_ms if baselines.compile else None,
        floor_ms,
    ), figures(baselines, time_ms, floor_ms, on_gpu))


def _with_figures(result: ProblemResult, found: dict[str, Any]) -> ProblemResult:
    """The result with the stronger baselines' figures (from `figures`, or a run's report.json)."""
    return dataclasses.replace(result, figures={name: found.get(name) for name in (*FIGURE_KEYS, "phases_s")})


def _optimized(spec: ProblemSpec, kernel: str | None) -> ProblemResult:
    """The graph run on the problem, as `kernelopt optimize` does; the figures from its report."""
    from kernelopt.graph import build_graph
    from kernelopt.report.summary import RunSummary, load_summary

    s = spec.settings
    ctx = Context(model=s.model, base_url=s.base_url, max_rounds=s.max_rounds, time_compile=s.time_compile,
                  max_autotune_baseline=s.max_autotune, max_autotune_limit_s=s.max_autotune_limit_s,
                  compiler_seed=s.compiler_seed, max_wall_s=s.max_wall_s, profile_final=False, **_limits(s))
    inputs = {"problem_source": read_source(spec.problem_path, "problem"), "problem_path": spec.problem_path,
              "kernel_source": read_source(kernel, "kernel") if kernel else None, "kernel_path": kernel,
              "run_dir": spec.run_dir}
    final = build_graph().compile().invoke(inputs, context=ctx)
    summary = load_summary(spec.run_dir) or RunSummary()
    stop = final.get("stop_reason") or "none"
    if stop.startswith("bad input: "):
        return ProblemResult(spec.name, "bad_problem", stop.removeprefix("bad input: "))
    attempts = summary.attempts
    first = attempts[0] if attempts and attempts[0]["round"] == 0 else {}
    best_ms, floor, gpu = summary.best_time_ms, summary.floor, summary.gpu
    floor_ms = floor_ms_for(FloorEstimate(**floor), gpu) if floor and gpu else None
    rejected = next((a for a in reversed(attempts) if a.get("rule")), {})
    result = ProblemResult(
        spec.name, "correct" if best_ms else "rejected",
        f"stopped: {stop}" if best_ms else stop, None if best_ms else rejected.get("rule"),
        is_gpu_time=summary.is_gpu_time, start_ms=first.get("time_ms"), best_ms=best_ms,
        rounds=summary.rounds, stop_reason=stop, best_kernel_path=summary.best_kernel_path,
    )
    measured = _measured(result, summary.eager_ms, summary.compile_ms, floor_ms)
    return _with_figures(measured, summary.to_json())


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator and denominator else None


def _pct(floor_ms: float | None, time_ms: float | None) -> float | None:
    ratio = _ratio(floor_ms, time_ms)
    return None if ratio is None else 100 * ratio


def _measured(result: ProblemResult, eager_ms: float | None, compile_ms: float | None,
              floor_ms: float | None) -> ProblemResult:
    """The result with its baselines, speedups and % of floor (the floor only against GPU times)."""
    floor_ms = floor_ms if result.is_gpu_time else None
    return dataclasses.replace(
        result, eager_ms=eager_ms, compile_ms=compile_ms, floor_ms=floor_ms,
        speedup_vs_eager=_ratio(eager_ms, result.best_ms), speedup_vs_compile=_ratio(compile_ms, result.best_ms),
        pct_of_floor=_pct(floor_ms, result.best_ms), eager_pct_of_floor=_pct(floor_ms, eager_ms),
        compile_pct_of_floor=_pct(floor_ms, compile_ms),
    )


# ── the suite ────────────────────────────────────────────────────────────────────────


def finished_results(suite: Suite) -> dict[str, ProblemResult]:
    """The problems already finished (a file that cannot be read back is run again)."""
    done: dict[str, ProblemResult] = {}
    for path in (Path(suite.out_dir) / PROBLEMS).glob("*.json"):
        try:
            done[path.stem] = ProblemResult(**json.loads(path.read_text()))
        except (ValueError, TypeError):
            continue
    return done


def _write_json(path: Path, data: Any) -> None:
    """Write whole or not at all: a kill mid-write leaves the old file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(data, indent=2))
    os.replace(partial, path)


def run_suite(
    suite: Suite,
    executor: Executor | None = None,
    on_result: Callable[[int, int, ProblemResult], None] | None = None,
) -> dict[str, Any]:
    """Run the problems not finished yet; returns results.json's content (also written, with
    results.md and results.png). `on_result(done, total, result)` is called as each finishes."""
    specs = suite.specs()
    done = {name: r for name, r in finished_results(suite).items() if name in {s.name for s in specs}}
    todo = [spec for spec in specs if spec.name not in done]
    for result in (executor or LocalExecutor()).run(run_problem, todo):
        _write_json(Path(suite.out_dir) / PROBLEMS / f"{result.name}.json", dataclasses.asdict(result))
        done[result.name] = result
        write_results(suite, specs, done, plot=False)
        if on_result:
            on_result(len(done), len(specs), result)
    return write_results(suite, specs, done, plot=True)


def write_results(suite: Suite, specs: Sequence[ProblemSpec], done: dict[str, ProblemResult],
                  plot: bool) -> dict[str, Any]:
    """results.json and results.md (and results.png when `plot`) from the finished problems."""
    results = [done[spec.name] for spec in specs if spec.name in done]
    data = {"suite": dataclasses.asdict(suite), "summary": summarize(results, len(specs)),
            "problems": [dataclasses.asdict(r) for r in results]}
    out = Path(suite.out_dir)
    _write_json(out / RESULTS_JSON, data)
    has_plot = (out / RESULTS_PNG).is_file()
    if plot:
        from kernelopt.report.suite import draw_results

        has_plot = draw_results(data, out / RESULTS_PNG)
    from kernelopt.report.suite import render_markdown

    (out / RESULTS_MD).write_text(render_markdown(data, has_plot))
    return data


def summarize(results: Sequence[ProblemResult], total: int) -> dict[str, Any]:
    """fast_p over all `total` problems; geomeans over the correct ones that have the figure."""
    correct = [r for r in results if r.status == "correct"]
    fast_p = {f"{p:g}": sum(1 for r in correct if (r.speedup_vs_eager or 0) > p) / total for p in FAST_P}
    return {
        "problems": total, "finished": len(results), "correct": len(correct),
        "status_counts": dict(Counter(r.status for r in results)),
        "fast_p": fast_p,
        "geomean_speedup_vs_eager": geomean(r.speedup_vs_eager for r in correct),
        "geomean_speedup_vs_compile": geomean(r.speedup_vs_compile for r in correct),
        "geomean_pct_of_floor": geomean(r.pct_of_floor for r in correct),
        "is_gpu_time": any(r.is_gpu_time for r in results),
        "wall_s": round(sum(r.wall_s for r in results), 2),
        **suite_figures(results, total),
    }
