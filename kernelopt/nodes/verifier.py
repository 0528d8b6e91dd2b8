"""verifier: prove each candidate correct in a fresh process and time it.

It takes every candidate the review node let through this step: one at a time on the run's
GPU, or, on a host with several GPUs, side by side, one per GPU (spread.py: a time is compared
only with one taken on the same GPU, and a new best is always timed on the run's own). A step
without a new best ends here; a step with one goes to the
accept node, which takes the new best (asking the person first under Context.approve: the
verifier knows nothing of approval).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from kernelopt.context import Context
from kernelopt.events import CandidateRunning
from kernelopt.harness import beats, floor_ms_for
from kernelopt.nodes.beam import parent_of
from kernelopt.nodes.common import context_of, digest_of, emit, verifiers_for
from kernelopt.nodes.conclude import conclude, report_verdict
from kernelopt.nodes.outcome import refused, timed
from kernelopt.nodes.pinned import judge_pinned, with_pin
from kernelopt.nodes.spread import SPREAD_FROM, going_home, verify_spread
from kernelopt.nodes.stop import Step, should_stop
from kernelopt.records import Attempt, Candidate, KernelRecord, PendingBest, Timing, Verdict
from kernelopt.state import KernelOptState


def run_floor_ms(state: KernelOptState) -> float | None:
    """The problem's floor on the run's GPU, for the impossible-speed rule."""
    baselines = state.get("baselines")
    return floor_ms_for(baselines.floor if baselines else None, state.get("gpu_key") or None)


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
            emit(state, CandidateRunning(path=path, phase=phase, elapsed_s=round(elapsed_s, 1)))

    return report


def _screened(candidate: Candidate, state: KernelOptState, seen: set[str]) -> Attempt | str:
    """The attempt of a candidate that is not run (no kernel in the reply, or one already tried),
    else its source's digest (now seen)."""
    round_, repair = state["round"], state["repairs"]
    if candidate.path is None:  # the optimizer's reply held nothing runnable: its error is the verdict
        return Attempt(round=round_, repair=repair, kernel_path="", source_hash="", outcome="failed",
                       change=candidate.change, error=candidate.error, rule="bad-reply",
                       parent=parent_of(candidate, state))
    digest = digest_of(candidate)
    if digest in seen:
        error = "the same kernel as another candidate of this step (after normalising); make a different change"
        return Attempt(
            round=round_, repair=repair, kernel_path=candidate.path, source_hash=digest, outcome="failed",
            change=candidate.change, error=error, rule="duplicate", parent=parent_of(candidate, state),
        )
    seen.add(digest)
    return digest


def _judge(
    candidate: Candidate,
    digest: str,
    verdict: Verdict,
    state: KernelOptState,
    ctx: Context,
    best: KernelRecord | None,
    where: str = "",
    best_there: Timing | None = None,
) -> tuple[Attempt, KernelRecord | None]:
    """The attempt for one verified candidate, and its record when it passed on the run's own GPU
    (a new best when the attempt says so). A verdict taken on another GPU (`where`) is compared
    with the best's time there (`best_there`) and never makes a new best, nor a record: only a
    verdict of the run's own GPU does (see spread.py)."""
    assert candidate.path is not None
    round_, repair = state["round"], state["repairs"]
    if not verdict.accepted or verdict.timing is None:
        return Attempt(
            round=round_, repair=repair, kernel_path=candidate.path, source_hash=digest, outcome=refused(verdict.rule),
            change=candidate.change, error=verdict.reason, rule=verdict.rule, where=where,
            parent=parent_of(candidate, state),
        ), None
    timing = verdict.timing
    against = best_there if where else (best.timing if best else None)
    # "outpaced" elsewhere: faster than the best there, but not sent to the run's GPU (spread.going_home)
    outcome = timed(timing, against, ctx.min_gain_pct, elsewhere=bool(where))
    faster = outcome == "faster"
    attempt = Attempt(
        round=round_,
        repair=repair,
        kernel_path=candidate.path,
        source_hash=digest,
        outcome=outcome,
        change=candidate.change,
        time_ms=timing.median_ms,
        speedup_vs_best=against.median_ms / timing.median_ms if against else None,
        new_best=faster,
        where=where,
        fingerprint=verdict.fingerprint or "",
        parent=parent_of(candidate, state),
        winner=verdict.winners,
    )
    return attempt, None if where else KernelRecord(candidate.path, digest, timing, round_)


def timed_originals(attempts: list[Attempt]) -> dict[str, Attempt]:
    """The attempts timed with a compiled-code fingerprint, by fingerprint (the first of each):
    a later candidate that compiles to the same kernels takes its time instead of being timed."""
    originals: dict[str, Attempt] = {}
    for a in attempts:
        if a.fingerprint and a.time_ms is not None and not a.duplicate_of:
            originals.setdefault(a.fingerprint, a)
    return originals


def _duplicate(candidate: Candidate, digest: str, state: KernelOptState, original: Attempt) -> Attempt:
    """The attempt of a correct candidate whose compiled kernels are `original`'s: that one's time
    (taken where that one's was), neither a gain nor a failure."""
    assert candidate.path is not None
    return Attempt(round=state["round"], repair=state["repairs"], kernel_path=candidate.path, source_hash=digest,
                   outcome="duplicate", change=candidate.change,
                   time_ms=original.time_ms, where=original.where, fingerprint=original.fingerprint,
                   duplicate_of=original.kernel_path, parent=parent_of(candidate, state))


def _names(originals: Mapping[str, Attempt]) -> dict[str, str]:
    """Each fingerprint with its original's kernel path: what the harness is told (Verifier.verify's `timed`)."""
    return {fingerprint: a.kernel_path for fingerprint, a in originals.items()}


def _verdicts(
    fresh: list[tuple[Candidate, str]], state: KernelOptState, ctx: Context, best: KernelRecord | None
) -> list[tuple[Attempt, KernelRecord | None]]:
    """The attempts of the step's candidates to run, in order: spread over the run's GPUs when
    it has several and the step at least SPREAD_FROM candidates, else one after another on its own.
    A candidate that compiles to the kernels of one already timed (this step's included, when
    one after another) is not timed again: a duplicate."""
    verifiers = verifiers_for(state, ctx)
    home, floor = verifiers[0], run_floor_ms(state)
    originals = timed_originals(state.get("attempts", []))

    def on_home(path: str) -> Verdict:
        return home.verify(path, floor_ms=floor, on_progress=_report_long_runs(state, path),
                           timed=_names(originals))

    paths = [str(candidate.path) for candidate, _ in fresh]
    spread = verify_spread(paths, verifiers, best, floor, lambda path: _report_long_runs(state, path),
                           _names(originals)) if len(verifiers) > 1 and len(fresh) >= SPREAD_FROM else None
    home_again = going_home(spread, best, lambda t, b: beats(t, b, ctx.min_gain_pct)) if spread else set()
    judged = []
    for k, (candidate, digest) in enumerate(fresh):
        there = spread[k] if spread else None
        where, best_there = "", None
        if there is not None and there.lane == 0:  # taken on the run's own GPU
            verdict = there.verdict
        elif there is None or k in home_again:
            verdict = on_home(paths[k])
        else:  # rejected on another GPU, not faster than the best there, or another candidate gained more
            verdict, where, best_there = there.verdict, there.where, there.best_there
        original = originals.get(verdict.fingerprint or "") if verdict.duplicate_of else None
        if original is not None:
            attempt, record = _duplicate(candidate, digest, state, original), None
        else:
            attempt, record = _judge(candidate, digest, verdict, state, ctx, best, where, best_there)
        if attempt.fingerprint and attempt.time_ms is not None:
            originals.setdefault(attempt.fingerprint, attempt)
        judged.append((attempt, record))
        best = record if attempt.new_best else best
    return judged


def _at_home(state: KernelOptState, ctx: Context) -> Callable[[str], Verdict]:
    """Verify one kernel file on the run's own GPU (a pinned variant, nodes/pinned.py); the
    verifier is made only when a step has a pin to verify."""

    def at_home(path: str) -> Verdict:
        return verifiers_for(state, ctx)[0].verify(
            path, floor_ms=run_floor_ms(state), on_progress=_report_long_runs(state, path),
            timed=_names(timed_originals(state.get("attempts", []))))

    return at_home


def _timed_ms(verdict: Verdict, state: KernelOptState) -> float | None:
    """A passed verdict's time: its own, or the time of the kernel it compiles to (a duplicate)."""
    if verdict.timing is not None:
        return verdict.timing.median_ms
    original = timed_originals(state.get("attempts", [])).get(verdict.fingerprint or "")
    return original.time_ms if original is not None and verdict.duplicate_of else None


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
    screened = [(candidate, _screened(candidate, state, seen)) for candidate in real]
    screened, pins = judge_pinned(screened, state, ctx, lambda c: parent_of(c, state), _at_home(state, ctx),
                                  lambda v: _timed_ms(v, state))
    fresh = [(candidate, digest) for candidate, digest in screened if isinstance(digest, str)]
    verified = iter(_verdicts(fresh, state, ctx, best))
    steps: list[tuple[int, Attempt, KernelRecord | None]] = [(branch, a, None) for branch, a in settled]
    for candidate, screen in screened:
        attempt, record = (screen, None) if isinstance(screen, Attempt) else next(verified)
        attempt = with_pin(attempt, pins.get(str(candidate.path)))
        steps.append((candidate.branch, replace(attempt, model=candidate.model), record))
        best = record if record and attempt.new_best else best
    for branch, attempt, _ in steps:
        report_verdict(state, attempt, branch)
    attempts = [attempt for _, attempt, _ in steps]
    entrants = tuple(record for _, _, record in steps if record)
    records = tuple(record if attempt.new_best else None for _, attempt, record in steps)
    if any(records):
        step = PendingBest(tuple(attempts), records, tuple(branch for branch, _, _ in steps), tuple(stops), entrants)
        return Command(goto="accept", update={**update, "pending": step})
    return conclude(state, ctx, attempts, best, stops, update, entrants)  # type: ignore[return-value]  # no new best
