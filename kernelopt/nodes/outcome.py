"""What a verified candidate's verdict is called: the one table of outcomes (records.Outcome).

| the candidate | against | outcome |
|---|---|---|
| refused for wrong outputs | - | incorrect |
| refused under any other rule (a crash, a cheat, a limit) | - | rejected |
| timed on the run's own GPU, nothing to beat or beats it | the best | faster (a new best) |
| timed on another GPU, beats the best's time there | the best there | outpaced |
| a faster median, inside the noise and the margin | the one it is measured against | within_noise |
| anything else | | slower |
| compiles to the kernels of one already timed | that one | duplicate (verifier.py) |
| a step's earlier best, beaten by the one proposed | the proposed | within_noise or slower |

"Beats" is the timing protocol's own test (harness `beats`: a gain past both the run's margin
and the two measurements' spread). The table is `tests/test_outcome.py`.
"""

from __future__ import annotations

from kernelopt.harness import beats
from kernelopt.records import Outcome, Timing


def refused(rule: str | None) -> Outcome:
    """A verdict that refused the kernel: wrong outputs, or any other rule."""
    return "incorrect" if rule == "incorrect" else "rejected"


def timed(timing: Timing, against: Timing | None, min_gain_pct: float, elsewhere: bool = False) -> Outcome:
    """An accepted kernel's outcome against the time it must beat: the best's (on the run's own
    GPU), or the best's time on the GPU it was verified on when `elsewhere`. Only a kernel timed
    on the run's own GPU can be "faster" (a new best); elsewhere the most it can be is "outpaced"."""
    gains = against is None or beats(timing, against, min_gain_pct)
    if gains and not elsewhere:
        return "faster"
    if gains and against is not None:
        return "outpaced"
    return behind(timing.median_ms, against.median_ms if against else None)


def behind(time_ms: float, against_ms: float | None) -> Outcome:
    """A kernel that does not beat `against_ms`: a faster median is only noise, else slower."""
    return "within_noise" if against_ms is not None and time_ms < against_ms else "slower"


def change_pays(pinned_ms: float, parent_ms: float, min_gain_pct: float) -> bool:
    """Whether a rewrite at its parent's own launch (nodes/pinned.py) is no slower than the parent
    beyond the run's margin: only then is it worth tuning."""
    return pinned_ms <= parent_ms * (1 + min_gain_pct / 100)
