"""Pinned tuning: a rewrite with several `@triton.autotune` configs is judged first at the
configuration its parent ran at, then tuned.

Without a pin, a rewrite that lists more configs than its parent is measured partly on tile
selection, not on the change. So the rewrite's own config that matches its parent's launch (the
parent's literal knobs, overridden by what the parent's autotuner picked) is frozen into a file
of its own (`r001_a0_pinned.py`) and verified first:

- wrong there: the rewrite is wrong (its autotuner may pick that config on any input);
- slower there than the parent beyond the noise margin: the change does not pay; it is not tuned;
- else the rewrite is verified with all its configs, and its attempt carries both times, so the
  report can split its gain into the change's (parent / pinned) and the tuning's (pinned / tuned).

A rewrite with one config, a parent whose knobs none of its configs matches, or no parent, is
verified as any candidate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernelopt.context import Context
from kernelopt.nodes.outcome import change_pays, refused
from kernelopt.offline.tuner import autotune_variants, knob_values
from kernelopt.records import Attempt, Candidate, Verdict, config_of, config_text


@dataclass(frozen=True)
class Pin:
    """A rewrite's config that matches its parent's launch, frozen into a kernel file of its own."""

    path: str
    config: str  # config_text of the pinned values
    parent_ms: float
    pinned_ms: float | None = None  # once verified


def pin_of(candidate: Candidate, parent: str, attempts: list[Attempt]) -> Pin | None:
    """The pin of `candidate` against its `parent` (a kernel path), written next to the candidate;
    None where pinning does not apply."""
    if candidate.path is None or not parent:
        return None
    timed = [a for a in attempts if a.kernel_path == parent and a.time_ms is not None]
    if not timed or not Path(parent).is_file():
        return None
    try:
        variants = autotune_variants(Path(candidate.path).read_text())
    except (SyntaxError, ValueError):
        return None
    knobs = {**knob_values(Path(parent).read_text()), **config_of(timed[-1].winner)}
    chosen: tuple[int, dict[str, int], str] | None = None
    for values, frozen in variants:
        shared = [k for k in values if k in knobs]
        if shared and all(values[k] == knobs[k] for k in shared) and (chosen is None or len(shared) > chosen[0]):
            chosen = (len(shared), values, frozen)
    if chosen is None:
        return None
    path = Path(candidate.path).with_name(f"{Path(candidate.path).stem}_pinned.py")
    path.write_text(chosen[2])
    return Pin(str(path), config_text(chosen[1]), float(timed[-1].time_ms or 0.0))


def judge_pinned(
    screened: list[tuple[Candidate, Attempt | str]],
    state: dict[str, Any],
    ctx: Context,
    parent_of: Callable[[Candidate], str],
    verify_one: Callable[[str], Verdict],
    timed_ms: Callable[[Verdict], float | None],
) -> tuple[list[tuple[Candidate, Attempt | str]], dict[str, Pin]]:
    """Verify each pinnable candidate at its pin. One wrong or slower there is settled (its attempt
    replaces its digest in `screened`); the others go on to be tuned, their pins returned by path."""
    out: list[tuple[Candidate, Attempt | str]] = []
    pins: dict[str, Pin] = {}
    for candidate, screen in screened:
        pin = pin_of(candidate, parent_of(candidate), state.get("attempts", [])) if isinstance(screen, str) else None
        if pin is None or candidate.path is None or not isinstance(screen, str):
            out.append((candidate, screen))
            continue
        verdict = verify_one(pin.path)
        pinned_ms = timed_ms(verdict) if verdict.accepted else None
        common = dict(round=state["round"], repair=state["repairs"], kernel_path=candidate.path, source_hash=screen,
                      change=candidate.change, parent=parent_of(candidate), pinned=pin.config,
                      parent_ms=pin.parent_ms, pinned_ms=pinned_ms)
        at = f"at its parent's configuration ({pin.config})"
        if pinned_ms is None:
            out.append((candidate, Attempt(outcome=refused(verdict.rule), error=f"{at}: {verdict.reason}",
                                           rule=verdict.rule, **common)))
        elif not change_pays(pinned_ms, pin.parent_ms, ctx.min_gain_pct):
            error = (f"{at} the change takes {pinned_ms:.4f} ms against the parent's {pin.parent_ms:.4f} ms: "
                     "the change does not pay, so it was not tuned")
            out.append((candidate, Attempt(outcome="slower", time_ms=pinned_ms, error=error,
                                           speedup_vs_best=pin.parent_ms / pinned_ms, **common)))
        else:
            pins[candidate.path] = replace(pin, pinned_ms=pinned_ms)
            out.append((candidate, screen))
    return out, pins


def with_pin(attempt: Attempt, pin: Pin | None) -> Attempt:
    """`attempt` with its pin's figures (the tuned attempt of a rewrite that passed its pin)."""
    if pin is None:
        return attempt
    return replace(attempt, pinned=pin.config, pinned_ms=pin.pinned_ms, parent_ms=pin.parent_ms)

