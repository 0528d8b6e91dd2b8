"""Tests that need a CUDA GPU: run with `python3 -m pytest -m gpu` on a CUDA host."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelopt.harness.measure.timing import TimingConfig, measure
from kernelopt.harness.verify import HarnessSettings, Verifier

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]
ROOT = Path(__file__).resolve().parents[1]
CHEATS = ROOT / "tests" / "cheats"
EXAMPLES = ROOT / "examples"


def test_timing_uses_cuda_events_and_adapts_trials_to_kernel_length() -> None:
    device = torch.device("cuda")
    small = torch.randn(1 << 10, device=device)
    large = torch.randn(1 << 28, device=device)
    config = TimingConfig(target_total_ms=200.0)
    short = measure(lambda: small.mul_(1.0), device, config)
    long = measure(lambda: large.mul_(1.0), device, config)
    assert short.clock == long.clock == "cuda_events"
    assert long.median_ms > 20 * short.median_ms
    assert short.trials > long.trials  # a short kernel needs more trials for the same evidence
    assert long.min_ms <= long.p25_ms <= long.median_ms <= long.p75_ms <= long.max_ms
    # a sweep's hopeless row: past the give-up time after its warm runs, it is not timed further
    hopeless = measure(lambda: large.mul_(1.0), device, TimingConfig(target_total_ms=200.0, give_up_ms=short.median_ms))
    assert hopeless.trials == 1 and 0.7 * long.median_ms < hopeless.median_ms < 1.5 * long.median_ms


@pytest.mark.parametrize("cheat", ["cheat_stale_empty", "cheat_race", "cheat_partial_write", "cheat_zero_reliance"])
def test_runtime_cheats_are_rejected_on_the_gpu(cheat: str, tmp_path: Path) -> None:
    problem = "problem_rowsum.py" if cheat == "cheat_race" else "problem_add.py"
    verifier = Verifier(CHEATS / problem, tmp_path, HarnessSettings.detect(seeds=3, time_compile=False))
    verdict = verifier.verify(CHEATS / f"{cheat}.py", time=False)
    assert not verdict.accepted, verdict.reason


@pytest.mark.parametrize(
    ("kernel", "problem", "rule"),
    [
        ("honest_autotune_add", "problem_add.py", None),  # the autotuner's own torch ops are Triton's
        ("honest_atomic_rowsum", "problem_rowsum.py", None),  # reordered float atomics stay in tolerance
        ("cheat_dict_dispatch", "problem_add.py", "torch-compute-at-runtime"),
        ("cheat_less_work_when_timed", "problem_add.py", "incorrect-when-timed"),
        ("cheat_tf32_matmul", "problem_matmul.py", "one-tf32-product"),  # read from the launched kernel's TTIR
        ("cheat_fp16_matmul_long_k", "problem_matmul_long_k.py", "one-tf32-product"),  # a lone fp16 product
        ("honest_matmul", "problem_matmul.py", None),  # input_precision="ieee"
        ("cheat_layernorm_skips_affine", "problem_layernorm_default.py", "incorrect"),  # the parameters case
        ("honest_layernorm_own_names", "problem_layernorm_default.py", None),  # not run on it, said so
    ],
)
def test_runtime_guards_on_real_launches(kernel: str, problem: str, rule: str | None, tmp_path: Path) -> None:
    """The compute guard, the timed-output check and real CUDA launches together."""
    verifier = Verifier(CHEATS / problem, tmp_path, HarnessSettings.detect(seeds=2, time_compile=False))
    verdict = verifier.verify(CHEATS / f"{kernel}.py", time=True)
    assert verdict.accepted == (rule is None), verdict.reason
    assert verdict.rule == rule, verdict.reason


def test_a_problem_with_drawn_parameters_is_judged_on_the_same_weights(tmp_path: Path) -> None:
    """nn.Linear's weights drawn from the seed: the candidate's worker (its allocator primed with
    NaN blocks) and the reference process must draw the same ones (they once did not)."""
    export = ROOT / "tests" / "data" / "export"
    verifier = Verifier(export / "linear_problem.py", tmp_path, HarnessSettings.detect(seeds=2, time_compile=False))
    verdict = verifier.verify(export / "linear_kernel.py", time=False)
    assert verdict.accepted, verdict.reason


def test_honest_kernel_faster_than_the_floor_allows_is_rejected(tmp_path: Path) -> None:
    verifier = Verifier(
        EXAMPLES / "swish" / "problem.py", tmp_path, HarnessSettings.detect(seeds=1, time_compile=False)
    )
    honest = verifier.verify(EXAMPLES / "swish" / "kernel.py")
    assert honest.accepted and honest.timing is not None and honest.timing.is_gpu_time
    # Claim a floor 10x above the kernel's own time: its time is now "impossible".
    impossible = verifier.verify(EXAMPLES / "swish" / "kernel.py", floor_ms=10 * honest.timing.median_ms)
    assert not impossible.accepted and impossible.rule == "impossible-speed"


def test_ncu_profiles_every_kernel_of_one_forward(tmp_path: Path) -> None:
    from kernelopt.hardware import ncu, ncu_runner

    reason = ncu_runner.ncu_unavailable_reason()
    if reason:
        pytest.skip(reason)
    verifier = Verifier(
        EXAMPLES / "softmax" / "problem.py", tmp_path, HarnessSettings.detect(seeds=1, time_compile=False)
    )
    profile = verifier.profile(EXAMPLES / "softmax" / "kernel.py", tmp_path / "profile")
    assert profile.ok, profile.error
    assert len(profile.kernels) == 1  # warm-up launches are outside the profiled range
    assert profile.metrics[ncu.GPU_TIME] > 0
    assert profile.metrics[ncu.DRAM_BYTES_READ] > 0.9 * 8192 * 4096 * 4
    assert not (tmp_path / "profile" / "request.json").exists()  # gone before the kernel was imported

    # started ahead: the same profile from a process that waited, imports done, for its request
    import time

    try:
        assert verifier.prepare_profile()
        time.sleep(5.0)  # the round's verification, while it loads
        began = time.monotonic()
        ahead = verifier.profile(EXAMPLES / "softmax" / "kernel.py", tmp_path / "ahead")
        took_s = time.monotonic() - began
    finally:
        verifier.close()
    assert ahead.ok, ahead.error
    assert [k.name for k in ahead.kernels] == [k.name for k in profile.kernels]
    assert ahead.metrics[ncu.DRAM_BYTES_READ] > 0.9 * 8192 * 4096 * 4
    print(f"a profile started ahead took {took_s:.2f} s")


def test_a_hung_kernel_is_killed_in_seconds_and_the_gpu_serves_the_next_candidate(tmp_path: Path) -> None:
    import time

    verifier = Verifier(CHEATS / "problem_add.py", tmp_path, HarnessSettings.detect(seeds=2, time_compile=False))
    began = time.monotonic()
    hung = verifier.verify(CHEATS / "cheat_endless_triton_loop.py")
    assert hung.rule == "timeout" and "timed out in case 1/" in hung.reason, hung.reason
    assert time.monotonic() - began < 30
    honest = verifier.verify(CHEATS / "honest_add.py")
    assert honest.accepted and honest.timing is not None and honest.timing.is_gpu_time, honest.reason


def test_outputs_reach_the_reference_on_the_device_and_nothing_is_written(tmp_path: Path) -> None:
    """A candidate's outputs travel as CUDA IPC handles: a wrong one is caught, and the work
    folder holds no tensors."""
    verifier = Verifier(CHEATS / "problem_add.py", tmp_path, HarnessSettings.detect(seeds=2, time_compile=False))
    wrong = verifier.verify(CHEATS / "cheat_partial_write.py", time=False)
    assert not wrong.accepted and wrong.rule == "incorrect", wrong.reason
    right = verifier.verify(CHEATS / "honest_add.py")
    assert right.accepted, right.reason
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".pt", ".npy", ".bin")]


def test_the_autotuners_pick_comes_back_with_the_verdict_and_its_pin_verifies(tmp_path: Path) -> None:
    """Pinned tuning on the GPU: the verdict names the config autotune picked at the timed size,
    and the rewrite frozen at its parent's config is a kernel the verifier accepts."""
    from kernelopt.nodes.pinned import pin_of
    from kernelopt.records import Attempt, Candidate, config_of

    add = ROOT / "tests" / "data" / "add"
    verifier = Verifier(add / "problem.py", tmp_path, HarnessSettings.detect(seeds=2, time_compile=False))
    start = verifier.verify(add / "kernel_base.py")
    assert start.accepted and start.timing is not None, start.reason
    rewrite = tmp_path / "r001_a0.py"
    rewrite.write_text((add / "kernel_autotune_same.py").read_text())
    tuned = verifier.verify(rewrite)
    assert tuned.accepted, tuned.reason
    assert config_of(tuned.winners)["BLOCK_SIZE"] in (64, 1024) and "num_stages" in tuned.winners
    parent = Attempt(round=0, repair=0, kernel_path=str(add / "kernel_base.py"), source_hash="h", outcome="correct",
                     change="start", time_ms=start.timing.median_ms)
    pin = pin_of(Candidate(str(rewrite), "autotune"), parent.kernel_path, [parent])
    assert pin is not None and pin.config == "BLOCK_SIZE=64, num_warps=4"
    pinned = verifier.verify(pin.path)
    assert pinned.accepted and config_of(pinned.winners)["BLOCK_SIZE"] == 64, pinned.reason


def test_offline_run_on_the_gpu_profiles_and_places_the_kernel_on_the_roofline(tmp_path: Path) -> None:
    from kernelopt.context import Context
    from kernelopt.graph import graph

    inputs = {
        "problem_source": (EXAMPLES / "swish" / "problem.py").read_text(),
        "kernel_source": (EXAMPLES / "swish" / "kernel.py").read_text(),
    }
    final = graph.invoke(inputs, context=Context(max_rounds=1, runs_dir=str(tmp_path), time_compile=False))
    roofline = final["roofline"]
    assert final["best"].timing.is_gpu_time
    assert roofline.efficiency_pct is not None and 0 < roofline.efficiency_pct <= 110
    assert roofline.bottleneck == "memory"


def test_a_gpu_run_reports_gpu_times_with_a_roofline_picture_and_resumes_as_finished(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    base = [sys.executable, "-m", "kernelopt.cli"]
    optimize = [
        *base,
        "optimize",
        str(EXAMPLES / "swish" / "problem.py"),
        "--kernel",
        str(EXAMPLES / "swish" / "kernel.py"),
        "--max-rounds",
        "1",
        "--no-compile",
        "--json",
        "--out",
        str(run_dir),
    ]
    done = subprocess.run(optimize, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["is_gpu_time"] and summary["speedup_vs_eager"] > 0
    assert (run_dir / "roofline.png").stat().st_size > 10_000
    assert "not GPU performance" not in (run_dir / "report.md").read_text()
    again = subprocess.run([*base, "resume", str(run_dir), "--json"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and json.loads(again.stdout).get("already_finished") is True


@pytest.mark.parametrize("folder", ["derived", "yardstick"])
def test_problems_that_break_their_own_derived_cases_or_numerics_verify_on_the_gpu(folder: str, tmp_path: Path) -> None:
    """A derived case that hits a device-side assert in the reference is dropped without touching
    the reference process; a kernel more accurate than PyTorch's fp32 result is accepted."""
    data = ROOT / "tests" / "data" / folder
    verifier = Verifier(data / "problem.py", tmp_path, HarnessSettings.detect(seeds=2, time_compile=False))
    verdict = verifier.verify(data / "kernel.py")
    assert verdict.accepted, verdict.reason
    if folder == "derived":
        assert "dropped: other sizes" in verdict.reason


@pytest.mark.parametrize(
    ("kernel", "problem", "accepted", "said"),
    [
        ("cheat_tuple_size_hardcoded", "problem_tuple_rows.py", False, "incorrect"),
        ("cheat_linked_sizes_hardcoded", "problem_hinge.py", False, "incorrect"),
        # no case dropped; the shifted one (targets shifted too: every loss clamps to 0) is not counted
        ("honest_hinge_linked", "problem_hinge.py", True, "correct on 6 of 7 cases (not counted"),
        ("cheat_zeros_below_tolerance", "problem_tiny_scale.py", False, "own scale"),
        ("honest_tiny_scale", "problem_tiny_scale.py", True, "own scale"),
    ],
)
def test_cases_that_could_not_fail_now_can_on_the_gpu(
    kernel: str, problem: str, accepted: bool, said: str, tmp_path: Path
) -> None:
    """Sizes inside tuples, linked sizes and outputs within the tolerance of zero, at GPU sizes."""
    verifier = Verifier(CHEATS / problem, tmp_path, HarnessSettings.detect(seeds=3, time_compile=False))
    verdict = verifier.verify(CHEATS / f"{kernel}.py", time=accepted)
    assert verdict.accepted == accepted and said in verdict.reason, verdict.reason


def test_the_float64_room_is_the_same_for_every_case_order_on_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference process's room for the float64 truth is read once, with the cache returned:
    the cases get the same yardsticks forwards and backwards."""
    from kernelopt.harness.measure.cases import case_label, plan_cases
    from kernelopt.harness.sandbox import reference

    def backwards(problem: object, seeds: list[int]) -> list[dict]:
        cases = plan_cases(problem, seeds)
        return cases[-2::-1] + cases[-1:]  # the timed inputs stay last

    kinds = []
    for planner in (plan_cases, backwards):
        monkeypatch.setattr(reference, "plan_cases", planner)
        ref = reference.Reference(
            {"device": "cuda", "problem_path": str(CHEATS / "problem_layernorm.py"), "init_seed": 1, "seeds": [3, 4]}
        )
        kinds.append(sorted((case_label(c), ref.expected(i).slack[0] is None) for i, c in enumerate(ref.cases)))
        del ref
        torch.cuda.empty_cache()
    assert kinds[0] == kinds[1]


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_a_round_s_candidates_are_verified_one_per_gpu_and_the_best_timed_on_the_run_s_own(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("spread_bench", ROOT / "benchmarks" / "spread.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.run("swish", [0, 1], candidates=4, rounds=1, out=tmp_path)
    harness = Path(result["run_dir"]) / "harness"
    assert (harness / "reference-gpu1").is_dir()  # gpu 1 had a reference process of its own
    assert list((harness / "candidates").glob("*-gpu1"))  # and verified candidates
    assert result["best_ms"] is not None and len(result["verdicts"]) == 4
    for name, _round, outcome, _, where in result["verdicts"]:
        assert outcome != "faster" or where == "run's GPU", (name, where)  # a new best is timed on the run's GPU


def test_a_sweep_checks_and_times_its_configurations_on_the_gpu(tmp_path: Path, monkeypatch) -> None:
    # the sweep's jobs on a CUDA device: the checks fanned out, the timing's kept models bounded by the device's free
    # memory and freed when left behind, and the run's deadline reaching the timing (a grace past it)
    import time

    from kernelopt.harness.sandbox import sweep_client

    add = ROOT / "tests" / "data" / "add"
    names = ["kernel_base.py", "kernel_wrong.py", "kernel_fast.py", "kernel_slow.py", "kernel_block128.py"]
    verifier = Verifier(add / "problem.py", tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False))
    try:
        measured = verifier.sweep([add / n for n in names], tmp_path / "sweep")
        assert measured[1].rule == "incorrect" and measured[1].timing is None
        timed = [m for m in measured if m.timing is not None]
        assert len(timed) == 4 and all(m.timing.clock == "cuda_events" for m in timed)
        monkeypatch.setattr(sweep_client, "TIMING_GRACE_S", -10_000.0)
        late = verifier.sweep([add / n for n in names], tmp_path / "late", deadline=time.time() + 600)
        assert sum(m.timing is not None for m in late) == 1
        assert sorted(m.rule for m in late if m.timing is None) == ["incorrect", "time-budget", "time-budget",
                                                                    "time-budget"]
    finally:
        verifier.close()
