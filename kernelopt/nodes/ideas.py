"""Which bottleneck, cause and fix a round (and each of its branches) works on.

The judger picks the round's idea; the optimizer's further branches take the next bottlenecks.
One module holds both choices so that they cannot drift apart.
"""

from __future__ import annotations

from typing import Literal

from kernelopt.records import BottleneckResult, Diagnosis

NO_FIX_NAMED = "remove the bottleneck named above"


def cause_and_fix(bottleneck: BottleneckResult) -> tuple[str, str]:
    """A bottleneck's first root cause and first fix (its summary, a generic fix where it names none)."""
    cause = bottleneck.root_causes[0] if bottleneck.root_causes else bottleneck.summary
    fix = bottleneck.recommended_fixes[0] if bottleneck.recommended_fixes else NO_FIX_NAMED
    return cause, fix


def choose(
    bottlenecks: list[BottleneckResult], rounds_without_gain: int, source: Literal["llm", "rules"]
) -> Diagnosis:
    """The round's diagnosis: after a round without gain, the next bottleneck instead of the same idea."""
    chosen = bottlenecks[rounds_without_gain % len(bottlenecks)]
    cause, fix = cause_and_fix(chosen)
    return Diagnosis(tuple(bottlenecks), chosen.category, cause, fix, source)


def idea_for_branch(diagnosis: Diagnosis, branch: int) -> tuple[BottleneckResult, str, str]:
    """The bottleneck, cause and fix a branch works on: the judger's pick for branch 0, then the
    next of the top bottlenecks for each further branch."""
    bottlenecks = list(diagnosis.bottlenecks)
    first = next((i for i, b in enumerate(bottlenecks) if diagnosis.root_cause in b.root_causes), 0)
    if branch == 0:
        return bottlenecks[first], diagnosis.root_cause, diagnosis.recommended_fix
    chosen = bottlenecks[(first + branch) % len(bottlenecks)]
    return (chosen, *cause_and_fix(chosen))
