"""The runtime compute guard inside a Triton launch: scratch may be allocated, nothing computed."""

from __future__ import annotations

import pytest
import torch

from kernelopt.harness.sandbox import launches, poison
from kernelopt.harness.sandbox.compute_guard import ComputeGuard, ComputeOutsideTriton

X = torch.ones(4)
SQUARE = torch.ones(2, 2)


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


class _Sneaky(torch.Tensor):
    """A subclass whose every torch call computes with torch on the side (a candidate's trick to run code
    inside the harness's own fill of a fresh allocation)."""

    ran: list[str] = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        name = getattr(func, "__name__", str(func))
        cls.ran.append(name)
        if name == "fill_":  # compute, inside the harness's fill
            torch.mm(SQUARE, SQUARE)
        return super().__torch_function__(func, types, args, kwargs or {})


def test_the_harnesss_fill_runs_no_candidate_code_and_lets_no_other_operator_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch.Tensor, "new_empty", poison._poisoned(torch.Tensor.new_empty))
    sneaky = torch.zeros(2).as_subclass(_Sneaky)
    _Sneaky.ran.clear()
    made: list[torch.Tensor] = []
    assert _inside_a_launch(lambda: made.append(sneaky.new_empty(4))) is None
    assert "fill_" not in _Sneaky.ran  # the fill ran without the subclass's hook
    assert torch.isnan(made[0].as_subclass(torch.Tensor)).all()  # and still poisoned the memory
    # whatever else runs while the harness fills is refused: only fill_ itself is the harness's
    poison._STATE.busy += 1
    try:
        violation = _inside_a_launch(lambda: torch.mm(SQUARE, SQUARE))
    finally:
        poison._STATE.busy -= 1
    assert violation is not None and "torch's mm" in violation


def test_a_copy_stays_a_copy_when_an_allocation_writes_into_it_with_out() -> None:
    x = torch.randn(3, 4)
    guard = ComputeGuard()
    with guard:
        y = x.t().contiguous()  # a transpose by torch: the output must not be this
        torch.zeros(1, out=y.view(-1)[:1])  # an allocation operator, but into y's memory: no fresh allocation
    assert guard.violation is None
    assert guard.copied_output([y]) is not None
    fresh = ComputeGuard()
    with fresh:
        z = x.t().contiguous()
        del z
        w = torch.empty(3, 4)  # may reuse z's freed memory: a fresh allocation is not the copy
    assert fresh.copied_output([w]) is None
