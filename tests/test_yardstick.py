"""The yardstick: a kernel more accurate than the problem's own fp32 PyTorch result passes."""

from __future__ import annotations

from pathlib import Path

import torch

from kernelopt.harness.measure.correctness import compare_case
from kernelopt.harness.measure.yardstick import expected_from, float64_copy
from kernelopt.harness.verify import HarnessSettings, Verifier

DATA = Path(__file__).parent / "data" / "yardstick"


def _problem() -> tuple[torch.nn.Module, torch.Tensor]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("yardstick_problem", DATA / "problem.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    torch.manual_seed(0)
    return module.Model(), module.get_inputs()[0]


def test_the_allowance_is_the_tolerance_plus_the_references_own_error() -> None:
    model, x = _problem()
    ref32 = model(x)
    expected = expected_from([ref32], float64_copy(model), [x])
    truth = x[:, -1]
    assert (ref32 - truth).abs().max() > 1e-3  # the fp32 reference is off by far more than 1e-4
    assert torch.allclose(expected.outputs[0], truth) and expected.slack[0] is not None
    assert compare_case(expected.outputs, [truth.clone()], 1.0, expected.slack) is None  # exact: passes
    assert compare_case(expected.outputs, [ref32.clone()], 1.0, expected.slack) is None  # as good as PyTorch
    # twice PyTorch's error and more, on the other side of the truth: fails
    worse = truth - 2 * (ref32 - truth) - 1e-3 * torch.sign(ref32 - truth)
    assert "plus the reference's own fp32 error" in (compare_case(expected.outputs, [worse], 1.0, expected.slack) or "")


def test_a_kernel_more_accurate_than_pytorch_is_accepted(tmp_path: Path) -> None:
    verifier = Verifier(DATA / "problem.py", tmp_path, HarnessSettings.detect(seeds=2, time_compile=False))
    verdict = verifier.verify(DATA / "kernel.py", time=False)
    assert verdict.accepted, verdict.reason


def test_a_derived_case_the_problem_cannot_run_is_dropped_and_named(tmp_path: Path) -> None:
    """Other sizes grow num_classes for get_inputs but not the model's fixed input shape: the
    reference raises there (on CUDA a device-side assert, probed in a process of its own)."""
    derived = Path(__file__).parent / "data" / "derived"
    verifier = Verifier(derived / "problem.py", tmp_path, HarnessSettings.detect(seeds=2, time_compile=False))
    verdict = verifier.verify(derived / "kernel.py")
    assert verdict.accepted, verdict.reason
    assert "cases the reference itself cannot run, dropped: other sizes" in verdict.reason
