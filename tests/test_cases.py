"""The verifier's cases can fail: sizes inside tuples change, linked sizes change together, outputs
within the tolerance of zero are judged on their own scale, the float64 room is the same for every
case, and a shell's hard memory limit is honoured rather than fought."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from kernelopt.harness.measure.cases import case_choices, case_inputs, case_label, plan_cases
from kernelopt.harness.measure.correctness import compare_case, judging_for
from kernelopt.harness.problem import load_problem

ROOT = Path(__file__).parent.parent
CHEATS = ROOT / "tests" / "cheats"


def _problem(tmp_path: Path, body: str, name: str = "problem") -> Any:
    path = tmp_path / f"{name}.py"
    path.write_text("import torch\nimport torch.nn as nn\n\n" + body)
    return load_problem(path)


HINGE = """
batch_size = 24
input_shape = (24,)

class Model(nn.Module):
    def forward(self, p, t):
        return torch.mean(torch.clamp(1 - p * t, min=0))

def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]

def get_init_inputs():
    return []
"""


def _resized(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in cases if "overrides" in c]


def test_sizes_inside_a_tuple_are_resized(tmp_path: Path) -> None:
    problem = _problem(tmp_path, HINGE)
    smaller, larger = _resized(plan_cases(problem, [7, 8]))
    for case in (smaller, larger):
        assert set(case["overrides"]) == {"batch_size", "input_shape"}
        assert case["overrides"]["input_shape"][0] != 24
    x, _ = case_inputs(problem, case_choices(smaller)[0], torch.device("cpu"))
    assert x.shape == (smaller["overrides"]["batch_size"], smaller["overrides"]["input_shape"][0])
    assert problem.input_shape == (24,)  # the module is left as it was
    assert "input_shape=(" in case_label(smaller)


def test_linked_sizes_get_a_resize_that_keeps_them_equal(tmp_path: Path) -> None:
    """Each size on its own first (the strongest test); then equal sizes tied; then all halved."""
    problem = _problem(tmp_path, HINGE)
    smaller = _resized(plan_cases(problem, [7, 8]))[0]
    first, tied, halved = (c["overrides"] for c in case_choices(smaller))
    assert first["batch_size"] != first["input_shape"][0]
    assert tied["batch_size"] == tied["input_shape"][0] != 24
    assert halved == {"batch_size": 12, "input_shape": [12]}
    model = problem.Model()
    with pytest.raises(RuntimeError):
        model(*case_inputs(problem, case_choices(smaller)[0], torch.device("cpu")))
    assert model(*case_inputs(problem, case_choices(smaller)[1], torch.device("cpu"))).isfinite()


def test_unlinked_sizes_have_no_tied_alternative(tmp_path: Path) -> None:
    problem = _problem(tmp_path, HINGE.replace("input_shape = (24,)", "input_shape = (31,)"))
    smaller = _resized(plan_cases(problem, [7, 8]))[0]
    assert len(case_choices(smaller)) == 2  # each on its own (= tied, no equal sizes), then halved


def test_outputs_within_the_tolerance_of_zero_are_judged_on_their_own_scale() -> None:
    torch.manual_seed(0)
    want = torch.randn(5, 37) * 1e-6
    judging = judging_for([want])
    assert judging.relative and judging.informative
    assert compare_case([want], [torch.zeros_like(want)]) is None  # what a plain tolerance allows
    assert "own scale" in (compare_case([want], [torch.zeros_like(want)], judging=judging) or "")
    assert compare_case([want], [want.clone()], judging=judging) is None
    honest = (want.double() * (1 + 1e-6)).float()  # an fp32 rounding's worth of error
    assert compare_case([want], [honest], judging=judging) is None


def test_a_subnormal_flushed_to_zero_is_no_error_on_the_own_scale() -> None:
    # swish at inputs shifted by -120: every output tiny; where x * sigmoid(x) is still representable
    # (-5.1e-43, subnormal) a kernel whose exp(-x) overflows writes -0. The own scale is never finer than
    # the smallest normal number, and an output of subnormals alone tells nothing.
    x = torch.randn(3, 1000) * 4 - 120
    x[0, 277] = -96.0
    want = torch.nn.functional.silu(x.double()).float()  # the float64 truth, as the verifier's yardstick has it
    assert 0 < -want[0, 277] < torch.finfo(torch.float32).tiny
    flushed = torch.where(want.abs() < torch.finfo(torch.float32).tiny, torch.zeros_like(want), want)
    judging = judging_for([want])
    assert compare_case([want], [flushed], judging=judging) is None
    assert not judging.informative  # zeros pass it too: the case is counted as one that could not fail
    tiny_but_normal = torch.randn(5, 37) * 1e-30  # still judged, and zeros still fail
    assert "own scale" in (compare_case([tiny_but_normal], [torch.zeros_like(tiny_but_normal)],
                                        judging=judging_for([tiny_but_normal])) or "")


def test_ordinary_outputs_keep_the_ordinary_tolerance() -> None:
    want = torch.randn(5, 37)
    assert judging_for([want]).atols == (None,)
    assert judging_for([want.to(torch.int64)]).atols == (None,)


def test_a_case_whose_outputs_are_all_zero_or_all_nan_is_not_informative() -> None:
    assert not judging_for([torch.zeros(4, 4)]).informative
    assert judging_for([torch.zeros(4, 4), torch.ones(2, dtype=torch.int64)]).informative  # an exact output
    assert not judging_for([torch.full((2,), float("nan"))]).informative  # a NaN everywhere passes anything NaN
    assert judging_for([torch.tensor([float("nan"), 1.0])]).informative


def _reference(**fields: list[str]) -> SimpleNamespace:
    return SimpleNamespace(**{"dropped": [], "skipped": [], "own_scale": [], "uninformative": [], **fields})


def test_the_verdict_counts_only_cases_that_could_fail() -> None:
    from kernelopt.harness.verify import _correct_reason

    assert _correct_reason(7, _reference()) == "correct on 7 cases"
    reason = _correct_reason(6, _reference(dropped=["other sizes: n=3: the reference raised"]))
    assert reason is not None and reason.startswith("correct on 6 of 7 cases (")
    reason = _correct_reason(7, _reference(uninformative=["case 5 (inputs shifted by -120)"]))
    assert reason is not None and reason.startswith("correct on 6 of 7 cases (not counted")
    assert _correct_reason(2, _reference(uninformative=["case 0", "case 1"])) is None


def test_the_float64_room_is_decided_once_whatever_the_case_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The room is read once, before any case, with the allocator's cache returned: a case late in
    the order sees the same room as the first (it once saw the room the earlier cases' cache left)."""
    from kernelopt.harness.sandbox import reference

    reads: list[int] = []

    def room(device: torch.device, kept_bytes: int) -> int:
        reads.append(kept_bytes)
        return 1 << 40 if not reads[:-1] else 0  # a second read would find no room at all

    monkeypatch.setattr(reference, "float64_room", room)
    def backwards(problem: Any, seeds: list[int]) -> list[dict[str, Any]]:
        cases = plan_cases(problem, seeds)
        return cases[-2::-1] + cases[-1:]  # the timed inputs stay last

    yardsticks = []
    for planner in (plan_cases, backwards):
        monkeypatch.setattr(reference, "plan_cases", planner)
        reads.clear()
        ref = reference.Reference(
            {"device": "cpu", "problem_path": str(CHEATS / "problem_layernorm.py"), "init_seed": 1, "seeds": [3, 4]}
        )
        assert len(reads) == 1
        yardsticks.append(sorted((case_label(c), ref.expected(i).slack[0] is None) for i, c in enumerate(ref.cases)))
    assert yardsticks[0] == yardsticks[1]
    assert not any(fp32 for _, fp32 in yardsticks[0])  # every case had the float64 truth


@pytest.mark.slow
def test_a_hard_memory_limit_below_the_cap_is_honoured(tmp_path: Path) -> None:
    """Under a shell's `ulimit -v` of 12 GiB (below the 16 GiB default cap) a verification runs,
    capped at the shell's limit, and says so once; raising the limit used to fail every case."""
    hard = 12 << 30

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))

    done = subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", "verify", str(CHEATS / "problem_add.py"),
         str(CHEATS / "honest_add.py"), "--timeout-s", "120"],
        capture_output=True, text=True, preexec_fn=limit, timeout=300, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "correct on" in done.stdout
    assert done.stderr.count("this shell's hard limit (ulimit -v) is lower") == 1, done.stderr


def test_the_wide_and_shifted_cases_scale_each_input_anew_and_leave_the_problems_own() -> None:
    x, idx = torch.randn(64), torch.arange(5)
    given = [x, x, idx, 3.0]
    problem = SimpleNamespace(get_inputs=lambda: [v.clone() if isinstance(v, torch.Tensor) else v for v in given])
    own = case_inputs(problem, {"seed": 1, "scale": 100.0}, torch.device("cpu"))
    assert torch.equal(own[0], x * 100.0) and torch.equal(own[2], idx) and own[3] == 3.0
    twice = SimpleNamespace(get_inputs=lambda: [x.clone()] * 2)  # one tensor given twice: each scaled once
    first, second = case_inputs(twice, {"seed": 1, "shift": -120.0}, torch.device("cpu"))
    assert torch.equal(first, x - 120.0) and torch.equal(second, x - 120.0)
    kept = torch.randn(8)
    before = kept.clone()
    made = case_inputs(SimpleNamespace(get_inputs=lambda: [kept]), {"seed": 1, "scale": 2.0}, torch.device("cpu"))
    assert torch.equal(made[0], before * 2.0) and torch.equal(kept, before)  # the problem's own tensor untouched


SCALE_BY = """
class Model(nn.Module):
    def forward(self, x, s, k):
        return x * s + k

def get_inputs():
    return [torch.randn(6, 5), 3.14, 2]

def get_init_inputs():
    return []
"""


def test_the_forwards_floats_are_drawn_anew_in_a_case_of_their_own(tmp_path: Path) -> None:
    # each float times a private factor, its sign kept; ints (a dim, a kernel size), bools and tensors as given
    problem = _problem(tmp_path, SCALE_BY)
    [numbers] = [c for c in plan_cases(problem, [11, 12]) if "numbers" in c]
    assert case_label(numbers) == "the forward's float inputs drawn anew"
    x, s, k = case_inputs(problem, numbers, torch.device("cpu"))
    assert s != 3.14 and 3.14 * 0.5 <= s <= 3.14 * 2 and k == 2 and x.shape == (6, 5)
    assert case_inputs(problem, numbers, torch.device("cpu"))[1] == s  # the same in the reference and the kernel
    negative = SimpleNamespace(get_inputs=lambda: [-2.5, True, 0.0])
    got = case_inputs(negative, {"seed": 1, "numbers": 7}, torch.device("cpu"))
    assert -5.0 <= got[0] <= -1.25 and got[1] is True and got[2] == 0.0
    for body in (HINGE, SCALE_BY.replace("3.14", "0.0")):  # no float, or only a zero: nothing to draw
        assert not any("numbers" in c for c in plan_cases(_problem(tmp_path, body, "other"), [11]))


def test_a_reference_that_refuses_the_drawn_numbers_drops_their_case(tmp_path: Path) -> None:
    # a number the problem fixes (it raises on any other): the case is dropped, and the honest kernel still passes
    from kernelopt.harness.verify import HarnessSettings, Verifier

    problem = tmp_path / "problem.py"
    fixed = "        if s != 3.14:\n            raise ValueError('s is 3.14')\n        return x * s\n"
    problem.write_text((CHEATS / "problem_scale_by.py").read_text().replace("        return x * s\n", fixed))
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verdict = Verifier(problem, tmp_path / "harness", settings).verify(CHEATS / "honest_scale_by.py", time=False)
    assert verdict.accepted, verdict.reason
    assert "dropped: the forward's float inputs drawn anew: the reference raised ValueError" in verdict.reason


def test_an_80_gb_card_judges_kernelbench_s_batch_norm_against_the_float64_truth() -> None:
    # (64, 64, 512, 512) fp32: 4.3 GB in, 4.3 GB out. On the H100 (about 79 GB free at the start, a quarter of 80 kept
    # for yardsticks) half the rest did not hold the float64 run, and an honest kernel was judged against PyTorch's
    # fp32 result with no slack. The run and the rest of its case (its fp32 tensors here and a candidate's) are now
    # counted together against all of it: BatchNorm fits, and an input-heavy reduction does not.
    from kernelopt.harness.measure.yardstick import _float64_fits
    from kernelopt.harness.sandbox.reference_memory import float64_room_of

    gb = 1 << 30
    h100, h200 = float64_room_of(79 * gb, 20 * gb), float64_room_of(140 * gb, 35 * gb)
    batch_norm = [torch.empty((64, 64, 512, 512), device="meta")]  # the estimate reads their bytes only
    assert _float64_fits(batch_norm, batch_norm, h100) and _float64_fits(batch_norm, batch_norm, h200)
    # a sum over 19 GB of input to a small output: the run alone would fit two thirds of the room, but beside the
    # case's fp32 input and a candidate's it does not
    reduction, total = [torch.empty((19 * gb // 4,), device="meta")], [torch.empty((1024,), device="meta")]
    assert not _float64_fits(reduction, total, h100) and _float64_fits(reduction, total, h200)
    # a card of 40 GB leaves BatchNorm's yardstick in fp32 rather than the candidate without room
    assert not _float64_fits(batch_norm, batch_norm, float64_room_of(39 * gb, 10 * gb))


def test_the_float64_run_of_a_16_bit_case_is_counted_at_8_bytes_an_element() -> None:
    # The float64 copies take 8 bytes an element whatever the case's dtype: four times a 16-bit tensor's bytes, not
    # twice. fp32: 4 x inputs + 9 x outputs, as before; fp16 and bf16: 6 x inputs + 14 x outputs; integer inputs
    # (indices) stay as they are.
    from kernelopt.harness.measure.yardstick import _float64_fits

    for dtype, need in ((torch.float32, 4 * 4000 + 9 * 2000), (torch.float16, 6 * 2000 + 14 * 1000),
                        (torch.bfloat16, 6 * 2000 + 14 * 1000)):
        inputs, outputs = [torch.empty((1000,), device="meta", dtype=dtype)], [torch.empty((500,), device="meta",
                                                                                           dtype=dtype)]
        assert _float64_fits(inputs, outputs, need) and not _float64_fits(inputs, outputs, need - 1), dtype
    indices = [torch.empty((1000,), device="meta"), torch.empty((1000,), device="meta", dtype=torch.int64)]
    out = [torch.empty((500,), device="meta")]
    need = 8 * 1000 + 8000 + 16 * 500 + 2000 + 4 * 500 + 2 * (4000 + 8000) + 3 * 2000
    assert _float64_fits(indices, out, need) and not _float64_fits(indices, out, need - 1)
