"""A step's candidates verified side by side, one at a time on each GPU of the host.

Each GPU has a harness of its own (fork server, reference process, device lock), and each takes
the next candidate as soon as it is free. A time is compared only with a time taken on the same
GPU: a GPU other than the run's own first times the current best there (in a sandboxed process
of its own, like any candidate), and a candidate that beats the best there is verified once
more on the run's GPU, where the baselines and the best's time were taken, before it can become
the best (of several such, only the one that gained most on its GPU: `going_home`). So the
best's time and every speedup the report shows come from one GPU, and a candidate that only
looked faster on another GPU is judged by the run's.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kernelopt.harness import Progress
from kernelopt.harness.verify import Verifier
from kernelopt.records import KernelRecord, Timing, Verdict

ProgressFor = Callable[[str], Progress]

# A step is spread only from this many candidates: another GPU first times the best there (once
# per best: BEST_THERE), and a winner found there is verified again on the run's GPU, so two
# candidates take longer spread than one after another.
SPREAD_FROM = 3
BEST_THERE: dict[tuple[str, str | None, str], Timing] = {}  # (harness folder, GPU, best's digest): its time there
_BEST_THERE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Judged:
    """One candidate's verdict, the GPU it was taken on, and the best's time on that GPU."""

    verdict: Verdict
    lane: int  # index of the verifier (0: the run's own GPU)
    where: str  # "gpu 1"; "" on the run's own GPU
    best_there: Timing | None  # the best's time on that GPU; None on the run's own (the state holds it)


def verify_spread(
    paths: Sequence[str],
    verifiers: Sequence[Verifier],
    best: KernelRecord | None,
    floor_ms: float | None,
    progress_for: ProgressFor,
    timed: Mapping[str, str] | None = None,
) -> list[Judged]:
    """Verify `paths` over `verifiers` (the run's own first), each GPU taking the next path when
    free; the verdicts in the order of `paths` (a candidate compiling to a kernel of `timed` is
    not timed: see Verifier.verify). A harness error on any GPU is raised here."""
    jobs: queue.Queue[tuple[int, str]] = queue.Queue()
    for job in enumerate(paths):
        jobs.put(job)
    judged: list[Judged | None] = [None] * len(paths)

    def lane(index: int) -> None:
        verifier = verifiers[index]
        best_there: Timing | None = None
        timed_best = index == 0 or best is None  # the run's own GPU has the best's time already
        while True:
            try:
                at, path = jobs.get_nowait()
            except queue.Empty:
                return
            if not timed_best:  # only once this GPU has a candidate of its own to compare
                timed_best = True
                best_there = _best_there(verifier, best, floor_ms)  # type: ignore[arg-type]
            verdict = verifier.verify(path, floor_ms=floor_ms, on_progress=progress_for(path), timed=timed)
            judged[at] = Judged(verdict, index, verifier.settings.where, best_there)

    with ThreadPoolExecutor(len(verifiers), thread_name_prefix="kernelopt-gpu") as pool:
        for lane_done in [pool.submit(lane, i) for i in range(min(len(verifiers), len(paths)))]:
            lane_done.result()  # a HarnessError, or the run being stopped, comes out here
    return [j for j in judged if j is not None]


def _best_there(verifier: Verifier, best: KernelRecord, floor_ms: float | None) -> Timing | None:
    """The best's time on `verifier`'s GPU: measured there once per best (as the run's own GPU
    keeps the time it measured when the best was taken), None when it failed there."""
    key = (str(verifier.root), verifier.settings.gpu, best.source_hash)
    with _BEST_THERE_LOCK:
        if key in BEST_THERE:
            return BEST_THERE[key]
    again = verifier.verify(best.path, floor_ms=floor_ms)
    if not again.accepted or again.timing is None:
        return None
    with _BEST_THERE_LOCK:
        BEST_THERE[key] = again.timing
    return again.timing


def gain(judged: Judged, best: KernelRecord | None) -> float | None:
    """How many times faster than the best a correct candidate ran, both timed on its GPU; None
    when there is nothing to compare it with there."""
    timing = judged.verdict.timing
    against = best.timing if judged.lane == 0 and best is not None else judged.best_there
    if not judged.verdict.accepted or timing is None or against is None:
        return None
    return against.median_ms / timing.median_ms


Beats = Callable[[Timing, Timing], bool]


def going_home(judged: Sequence[Judged], best: KernelRecord | None, beats: Beats) -> set[int]:
    """The candidates timed on another GPU that are verified again on the run's own: of those that
    beat the best on their GPU, the one that gained most there, and only when no candidate of the
    run's own GPU gained more (gains are ratios, each of two times from one GPU: a ranking, never
    a verdict). Without a best to compare with there, every correct one goes."""
    contenders = [k for k, j in enumerate(judged) if j.lane != 0 and j.verdict.accepted and j.verdict.timing
                  and (best is None or j.best_there is None or beats(j.verdict.timing, j.best_there))]
    gains = {k: gain(judged[k], best) for k in contenders}
    if None in gains.values():
        return set(contenders)
    home_gain = max((g for j in judged if j.lane == 0 and (g := gain(j, best)) is not None), default=0.0)
    top = max(gains, key=lambda k: gains[k] or 0.0, default=None)
    return {top} if top is not None and (gains[top] or 0.0) > home_gain else set()
