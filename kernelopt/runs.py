"""The run directory: every artifact of a run as a file, so nothing a user ran is lost."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernelopt.harness import COMPILE_CACHE
from kernelopt.harness.problem import source_hash

RUNS_DIR_ENV = "KERNELOPT_RUNS_DIR"


def default_runs_dir() -> Path:
    """Where runs go when none is named: $KERNELOPT_RUNS_DIR, else the user's cache folder
    ($XDG_CACHE_HOME or ~/.cache, then kernelopt/runs).

    Not the current folder: `langgraph dev` watches it and restarts on every file a run writes.
    """
    named = os.environ.get(RUNS_DIR_ENV)
    if named:
        return Path(named).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser().resolve() / "kernelopt" / "runs"


def compile_cache_root(runs_dir: str | Path | None = None) -> str:
    """Where runs keep Inductor's caches, one folder per problem: the runs folder's .compile-cache
    (`runs_dir`, default `default_runs_dir()`), shared by a run, `kernelopt verify` and a suite."""
    return str(Path(runs_dir or default_runs_dir()) / COMPILE_CACHE)


def new_run_dir(runs_dir: str | Path | None, problem_source: str) -> Path:
    """A fresh folder named by time and problem under `runs_dir` (default: `default_runs_dir()`),
    e.g. ~/.cache/kernelopt/runs/20261130-041500-3fa2c1."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(runs_dir or default_runs_dir()) / f"{stamp}-{source_hash(problem_source)[:6]}"
    path, n = base, 1
    while path.exists():
        path, n = base.with_name(f"{base.name}-{n}"), n + 1
    path.mkdir(parents=True)
    warn_if_watched(path)
    return path.resolve()


def watched_by_langgraph(path: Path) -> Path | None:
    """The nearest folder above `path` holding a langgraph.json (a folder `langgraph dev` serves
    and watches), or None."""
    for folder in Path(path).resolve().parents:
        if (folder / "langgraph.json").is_file():
            return folder
    return None


def warn_if_watched(run_dir: Path) -> None:
    """Say once on stderr when a run folder lies where `langgraph dev` would see every file it writes."""
    served = watched_by_langgraph(run_dir)
    if served is not None:
        print(
            f"kernelopt: warning: the run folder {run_dir} lies under {served}, which holds langgraph.json; "
            "`langgraph dev` serving it restarts (and cancels studio runs) on every file a run writes. "
            f"Leave runs_dir empty (runs go to {default_runs_dir()}) or name a folder outside it",
            file=sys.stderr,
            flush=True,
        )


def artifact_name(round_: int, repair: int, branch: int = 0) -> str:
    """The name of a round's candidate (and its LLM exchange): r003_a1, or r003_a1_b2 for branch 2."""
    return f"r{round_:03d}_a{repair}" + (f"_b{branch}" if branch else "")


def kernel_path(run_dir: str | Path, round_: int, repair: int, branch: int = 0) -> Path:
    """Where a candidate is kept: kernels/r003_a1.py (round 3, first repair), ..._b2 for branch 2."""
    path = Path(run_dir) / "kernels" / f"{artifact_name(round_, repair, branch)}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def save_best(run_dir: str | Path, kernel: str | Path) -> Path:
    """Copy the new best kernel to best_kernel.py; returns its path."""
    target = Path(run_dir) / "best_kernel.py"
    shutil.copyfile(kernel, target)
    return target


def log_event(run_dir: str | Path, event: dict[str, Any]) -> None:
    """Append one event to events.jsonl (the run's own history, beside the checkpoints)."""
    with (Path(run_dir) / "events.jsonl").open("a") as log:
        log.write(json.dumps({"time": time.time(), **event}, default=str) + "\n")


def release_references(run_dir: str | Path | None) -> None:
    """Stop the reference processes a run in this process kept (kernelopt's harness holds each problem's yardsticks
    on the GPU until the run's report closes them): for a run that ended on an error. Nothing is imported where no
    reference process was ever started (a host that only plans, a run stopped by bad input). Never raises: it runs
    as a failure leaves, whose own error is the one to see."""
    kept = sys.modules.get("kernelopt.harness.sandbox.reference_client")
    if kept is not None and run_dir:
        try:
            kept.close_references_under(run_dir)
        except Exception as err:  # noqa: BLE001 - said, not raised over the error that ended the run
            print(f"kernelopt: the run's reference processes could not be stopped: {type(err).__name__}: {err}",
                  file=sys.stderr)


@contextlib.contextmanager
def released_on_failure(run_dir: str | Path | None) -> Iterator[None]:
    """The block's failure ends the run: its reference processes are stopped first (`release_references`). An
    interrupt (LangGraph's GraphBubbleUp: an --approve question) is no failure: the run goes on with them."""
    try:
        yield
    except Exception as err:
        from langgraph.errors import GraphBubbleUp  # here: a bad argument is said before LangGraph loads

        if not isinstance(err, GraphBubbleUp):
            release_references(run_dir)
        raise
