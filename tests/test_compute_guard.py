"""The runtime compute guard inside a Triton launch: scratch may be allocated, nothing computed."""

from __future__ import annotations

import pytest
import torch

from kernelopt.harness.sandbox import launches, poison
from kernelopt.harness.sandbox.compute_guard import ComputeGuard, ComputeOutsideTriton

X = torch.ones(4)


def _workspace(size: int, alignment: int, stream: int) -> torch.Tensor:
    # what a kernel hands triton.set_allocator: Triton's launcher calls it for device-side descriptors' memory
    return torch.empty(size, dtype=torch.int8)


def _inside_a_launch(work: object) -> str | None:
    guard = ComputeGuard()
    launches.IN_LAUNCH.depth += 1
    try:
        with guard:
            work()  # type: ignore[operator]
    except ComputeOutsideTriton:
        pass
    finally:
        launches.IN_LAUNCH.depth -= 1
    return guard.violation


def test_an_allocator_called_during_a_launch_may_allocate_uninitialised_scratch() -> None:
    assert _inside_a_launch(lambda: _workspace(384, 128, 0)) is None
    assert _inside_a_launch(lambda: torch.empty_strided((4, 4), (1, 4))) is None


def test_the_correctness_runs_poisoned_scratch_is_the_harnesss_fill(monkeypatch: pytest.MonkeyPatch) -> None:
    # while armed, torch.empty is the harness's wrapper that fills the memory with a sentinel (fill_)
    monkeypatch.setattr(torch, "empty", poison._poisoned(torch.empty))
    assert _inside_a_launch(lambda: _workspace(384, 128, 0)) is None
    scratch = _workspace(8, 128, 0)
    assert scratch.tolist() == [77] * 8  # filled, so the wrapper did run its fill_
    assert not poison.filling_now()
    # the candidate's own fill_ in the same window is still compute during a launch
    assert "fill_" in (_inside_a_launch(lambda: _workspace(8, 128, 0).fill_(1)) or "")


@pytest.mark.parametrize(
    "work",
    [
        lambda: torch.add(X, 1),  # the launch window is no place for compute
        lambda: torch.full((4,), 3.0),  # an allocation with values in it could carry a result
        lambda: torch.zeros(4),
    ],
    ids=["add", "full", "zeros"],
)
def test_anything_else_a_candidate_runs_during_a_launch_is_refused(work: object) -> None:
    violation = _inside_a_launch(work)
    assert violation is not None and "during a Triton launch" in violation, violation
