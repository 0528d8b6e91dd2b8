"""The table of outcomes (kernelopt/nodes/outcome.py): one row per case, the words a verdict gets."""

from __future__ import annotations

import pytest

from kernelopt.nodes.outcome import behind, change_pays, refused, timed
from kernelopt.records import Timing


def _t(median_ms: float, iqr_ms: float = 0.0) -> Timing:
    return Timing(median_ms, median_ms - iqr_ms / 2, median_ms + iqr_ms / 2, median_ms, median_ms, 10, "cuda_events")


@pytest.mark.parametrize(("rule", "outcome"), [
    ("incorrect", "incorrect"),
    ("timeout", "rejected"),
    ("impossible-speed", "rejected"),
    (None, "rejected"),  # refused with no rule named (a crash before any rule)
])
def test_a_refused_kernel(rule, outcome):
    assert refused(rule) == outcome


# (time, its spread) against (the time to beat, its spread), the run's margin in %, elsewhere -> outcome
TIMED = [
    ((1.0, 0.0), None, 5.0, False, "faster"),  # nothing to beat yet: the first correct kernel
    ((0.5, 0.0), (1.0, 0.0), 5.0, False, "faster"),
    ((0.97, 0.0), (1.0, 0.0), 5.0, False, "within_noise"),  # 3% faster, under the 5% margin
    ((0.90, 0.2), (1.0, 0.2), 5.0, False, "within_noise"),  # 10% faster, inside the spread
    ((1.0, 0.0), (1.0, 0.0), 5.0, False, "slower"),  # a tie is no gain
    ((1.2, 0.0), (1.0, 0.0), 0.0, False, "slower"),
    ((0.5, 0.0), (1.0, 0.0), 5.0, True, "outpaced"),  # beats the best's time on its own GPU
    ((0.97, 0.0), (1.0, 0.0), 5.0, True, "within_noise"),
    ((1.2, 0.0), (1.0, 0.0), 5.0, True, "slower"),
    ((0.5, 0.0), None, 5.0, True, "slower"),  # elsewhere with no time there to beat: never a best
]


@pytest.mark.parametrize(("time", "against", "margin", "elsewhere", "outcome"), TIMED)
def test_a_timed_kernel(time, against, margin, elsewhere, outcome):
    assert timed(_t(*time), _t(*against) if against else None, margin, elsewhere) == outcome


def test_a_step_s_earlier_best_beaten_by_the_proposed_one():
    assert behind(0.9, 1.0) == "within_noise" and behind(1.1, 1.0) == "slower" and behind(1.0, 1.0) == "slower"
    assert behind(0.5, None) == "slower"


@pytest.mark.parametrize(("pinned_ms", "parent_ms", "margin", "pays"), [
    (1.0, 1.0, 5.0, True),
    (1.04, 1.0, 5.0, True),  # slower, but within the margin: the tuning may still pay
    (1.06, 1.0, 5.0, False),
    (0.5, 1.0, 0.0, True),
])
def test_a_pinned_change_pays_within_the_margin(pinned_ms, parent_ms, margin, pays):
    assert change_pays(pinned_ms, parent_ms, margin) is pays
