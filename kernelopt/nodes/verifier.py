"""verifier: prove each candidate correct in a fresh process and time it.

It takes every candidate the review node let through this step, one at a time (measurements on
one device never overlap). A step without a new best ends here; a step with one goes to the
accept node, which takes the new best (asking the person first under Context.approve: the
verifier knows nothing of approval).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from kernelopt.context import Context
from kernelopt.harness.measure.timing import Timing, beats
from kernelopt.harness.problem import source_hash
from kernelopt.harness.verify import Verifier, floor_ms_for
from kernelopt.nodes.common import context_of, emit, verifier_for
from kernelopt.nodes.step import conclude, report_verdict
from kernelopt.nodes.stop import Step, should_stop
from kernelopt.records import Attempt, Candidate, KernelRecord, Outcome, PendingBest
from kernelopt.state import KernelOptState


def floor_time_ms(state: KernelOptState) -> float | None:
    """The problem's floor on the run's GPU, for the impossible-speed rule."""
    baselines = state.get("baselines")
    return floor_ms_for(baselines.floor if baselines else None, state.get("gpu_key") or None)


def _outcome(faster: bool, timing: Timing, best: KernelRecord | None) -> Outcome:
    if faster:
        return "faster"
    return "within_noise" if best is not None and timing.median_ms < best.time_ms else "slower"


# A candidate running longer than this is reported as running, and again every REPORT_EVERY_S.
REPORT_AFTER_S = 10.0
REPORT_EVERY_S = 5.0


def _report_long_runs(state: KernelOptState, path: str) -> Callable[[str, float], None]:
    """A progress callback for the verifier that tells watchers a candidate is running long."""
    next_report_s = REPORT_AFTER_S

    def report(phase: str, elapsed_s: float) -> None:
        nonlocal next_report_s
        if elapsed_s >= next_report_s:
            next_report_s = elapsed_s + REPORT_EVERY_S
            emit(state, "candidate_running", path=path, phase=phase, elapsed_s=round(elapsed_s, 1))

    return report


def _judge(
    candidate: Candidate,
    state: KernelOptState,
    ctx: Context,
    verifier: Verifier,
    best: KernelRecord | None,
    seen: set[str],
) -> tuple[Attempt, KernelRecord | None]:
    """The attempt for one candidate, and the new best when it is one."""
    round_, repair = state["round"], state["repairs"]
    if candidate.path is None:  # the optimizer's reply held nothing runnable: its error is the verdict
        return Attempt(
            round_, repair, "", "", "failed", candidate.change, error=candidate.error, rule="bad-reply"
        ), None
    digest = source_hash(Path(candidate.path).read_text())
    if digest in seen:
        error = "the same kernel as another candidate of this step (after normalising); make a different change"
        return Attempt(
            round_, repair, candidate.path, digest, "failed", candidate.change, error=error, rule="duplicate"
        ), None
    seen.add(digest)
    verdict = verifier.verify(
        candidate.path, floor_time_ms=floor_time_ms(state), on_progress=_report_long_runs(state, candidate.path)
    )
    if not verdict.accepted or verdict.timing is None:
        outcome: Outcome = "incorrect" if verdict.rule == "incorrect" else "rejected"
        return Attempt(
            round_, repair, candidate.path, digest, outcome, candidate.change, error=verdict.reason, rule=verdict.rule
        ), None
    timing = verdict.timing
    faster = best is None or beats(timing, best.timing, ctx.min_gain_pct)
    attempt = Attempt(
        round_,
        repair,
        candidate.path,
        digest,
        _outcome(faster, timing, best),
        candidate.change,
        time_ms=timing.median_ms,
        speedup_vs_best=best.time_ms / timing.median_ms if best else None,
        new_best=faster,
    )
    return attempt, KernelRecord(candidate.path, digest, timing, round_) if faster else None


Route = Literal["accept", "optimizer", "judger", "report"]


def verify(state: KernelOptState, runtime: Runtime[Context]) -> Command[Route]:
    """Verify this step's candidates and record their verdicts; hand a step with a new best to
    the accept node, else go on: stop, repair the failed candidates, or ask for the next idea.

    Attempts decided before verification (`settled`: a candidate the review node turned down)
    come first in the step's attempts.
    """
    ctx = context_of(runtime)
    batch: list[Candidate] = state.get("candidates") or []
    stops = [c.stop for c in batch if c.stop]
    real = [c for c in batch if not c.stop]
    settled = [(int(branch), attempt) for branch, attempt in state.get("settled") or []]
    update: dict[str, Any] = {"candidates": Overwrite([]), "settled": []}
    if not real and not settled:
        reason = should_stop(state, ctx, Step(halts=tuple(stops), wrote=False))
        return Command(goto="report", update={**update, "stop_reason": reason})
    best: KernelRecord | None = state.get("best")
    seen = {a.source_hash for a in state.get("attempts", []) if a.source_hash}
    seen |= {a.source_hash for _, a in settled if a.source_hash}
    verifier = verifier_for(state, ctx)
    steps: list[tuple[int, Attempt, KernelRecord | None]] = [(branch, a, None) for branch, a in settled]
    for candidate in real:
        attempt, record = _judge(candidate, state, ctx, verifier, best, seen)
        steps.append((candidate.branch, attempt, record))
        best = record or best
    for branch, attempt, _ in steps:
        report_verdict(state, attempt, branch)
    attempts = [attempt for _, attempt, _ in steps]
    records = tuple(record for _, _, record in steps)
    if any(records):
        step = PendingBest(tuple(attempts), records, tuple(branch for branch, _, _ in steps), tuple(stops))
        return Command(goto="accept", update={**update, "pending": step})
    return conclude(state, ctx, attempts, best, stops, update)  # type: ignore[return-value]  # no new best: never profile
