"""Every rule that ends a run, in one place: `should_stop(state, context, step)`.

A node that decides where the run goes next describes what it just saw in a `Step` (the
input was bad, a branch could not go on, the round is over, the best was profiled, an LLM
call is next) and asks `should_stop` with the state as its update leaves it. The reason
returned is the run's `stop_reason`; None goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernelopt.budget import check_budget
from kernelopt.context import Context
from kernelopt.hardware.roofline import baseline_faster, baseline_times_ms

# "nothing left to try" ends the run only when no branch wrote anything; every other reason a
# branch gives (the LLM is down, a budget is spent) ends it even when other branches wrote.
SEARCH_EXHAUSTED = "search_exhausted"
NO_CANDIDATE = "no candidate was written"


@dataclass(frozen=True)
class Step:
    """What the deciding node just saw."""

    input_error: str | None = None  # setup: the problem, the kernel or the GPU named is unusable
    halts: tuple[str, ...] = ()  # why a branch or the judger could not go on (LLM down, budget, search exhausted)
    wrote: bool = True  # the verifier: some branch wrote a candidate to verify
    round_over: bool = False  # the verifier: the round ends here (a candidate passed, or no repairs are left)
    profiled: bool = False  # profile: the best was placed on the roofline
    before_llm: bool = False  # the judger: an LLM call (and a new round) is next


def should_stop(state: Mapping[str, Any], context: Context, step: Step = Step()) -> str | None:
    """Why the run ends after this step, or None to go on.

    `state` is the state as the node's update leaves it. A reason already set stays (a run
    stopped at max_rounds with a new best still profiles it, and stays stopped).
    """
    if state.get("stop_reason"):
        return state["stop_reason"]
    if step.input_error is not None:
        return f"bad input: {step.input_error}"
    if step.before_llm:
        spent, _ = check_budget(state, context)
        if spent:
            return spent
    if not step.wrote:
        halt = step.halts[0] if step.halts else NO_CANDIDATE
        if state.get("best") is None and halt.startswith(SEARCH_EXHAUSTED) and state.get("last_error"):
            # the structural moves that stood in for a rejected start (nodes/tune.py) found nothing correct
            return f"no correct kernel: {state['last_error']}; no structural move passed either"
        return halt
    fatal = [h for h in step.halts if not h.startswith(SEARCH_EXHAUSTED)]
    if fatal:
        return fatal[0]
    if step.round_over:
        if state.get("best") is None:
            return f"no correct kernel: {state.get('last_error')}"
        if state["round"] >= context.max_rounds:
            return "max_rounds"
        if state.get("rounds_without_gain", 0) >= context.patience:
            return "no_gain"
    if step.profiled:
        roofline = state.get("roofline")
        if roofline is not None and roofline.at_roofline and not _beaten_by_a_baseline(state):
            return "at_roofline"
    return None


def _beaten_by_a_baseline(state: Mapping[str, Any]) -> bool:
    """Whether a baseline (eager, either torch.compile mode, the CUDA-graph replay of eager) ran faster
    than the best kernel, on the same clock."""
    best = state.get("best")
    if best is None or not best.timing.is_gpu_time:
        return False
    return baseline_faster(baseline_times_ms(state.get("baselines")), best.time_ms) is not None
