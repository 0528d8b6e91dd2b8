"""Unit tests of the comparison, timing summary, acceptance rule and floor."""

from __future__ import annotations

import torch

from kernelopt.harness.measure.correctness import compare_case, tolerance
from kernelopt.harness.measure.floor import estimate_floor
from kernelopt.harness.measure.timing import TimingConfig, beats, host_trials, measure, summarize
from kernelopt.records import Timing


def _case(*tensors: torch.Tensor) -> list[list[torch.Tensor]]:
    return [list(tensors)]


def compare_outputs(want: list[list[torch.Tensor]], got: list[list[torch.Tensor]]) -> str | None:
    """One case judged as the reference process judges it."""
    return compare_case(want[0], got[0])


def test_fp32_within_tolerance_passes_and_beyond_fails_with_the_worst_element() -> None:
    want = torch.linspace(-1, 1, 1000)
    assert compare_outputs(_case(want), _case(want + 5e-5)) is None
    wrong = want.clone()
    wrong[123] += 1e-2
    message = compare_outputs(_case(want), _case(wrong))
    assert message is not None and "1 of 1000 elements" in message and "(123,)" in message


def test_half_precision_gets_the_looser_tolerance() -> None:
    assert tolerance(torch.float16) == (1e-2, 1e-2) and tolerance(torch.float32) == (1e-4, 1e-4)
    want = torch.ones(10, dtype=torch.float16)
    assert compare_outputs(_case(want), _case(want + 0.005)) is None


def test_nan_and_inf_never_pass() -> None:
    want = torch.zeros(8)
    for bad in (float("nan"), float("inf")):
        got = want.clone()
        got[3] = bad
        message = compare_outputs(_case(want), _case(got))
        assert message is not None and "NaN/Inf" in message


def test_shape_dtype_count_and_integers_are_exact() -> None:
    want = torch.zeros(4, 4)
    assert "shape" in (compare_outputs(_case(want), _case(torch.zeros(16))) or "")
    assert "dtype" in (compare_outputs(_case(want), _case(want.double())) or "")
    assert "2 outputs" in (compare_outputs(_case(want), _case(want, want)) or "")
    ints = torch.arange(5)
    assert compare_outputs(_case(ints), _case(ints + torch.tensor([0, 0, 1, 0, 0]))) is not None


def test_summary_quartiles_and_the_noise_rule() -> None:
    timing = summarize([5.0, 1.0, 3.0, 2.0, 4.0], "cuda_events")
    assert (timing.median_ms, timing.p25_ms, timing.p75_ms, timing.min_ms, timing.max_ms) == (3.0, 2.0, 4.0, 1.0, 5.0)
    best = Timing(10.0, 9.9, 10.1, 9.8, 10.3, 100, "cuda_events")
    assert beats(Timing(9.0, 8.95, 9.05, 8.9, 9.2, 100, "cuda_events"), best, min_gain_pct=1.0)
    # 0.5% faster: under the 1% margin
    assert not beats(Timing(9.95, 9.9, 10.0, 9.9, 10.0, 100, "cuda_events"), best, min_gain_pct=1.0)
    # 5% faster by median, but the spread is wider than the gain
    noisy = Timing(9.5, 8.0, 11.0, 7.0, 12.0, 100, "cuda_events")
    assert not beats(noisy, best, min_gain_pct=1.0)


def test_host_timing_is_labelled_as_not_gpu_time() -> None:
    timing = measure(lambda: torch.ones(10).sum(), torch.device("cpu"), host_clock="cpu")
    assert timing.clock == "cpu" and not timing.is_gpu_time and "[CPU time]" in timing.label()


def test_a_run_past_the_give_up_time_ends_the_measurement_unless_trials_are_sampled() -> None:
    import time

    def slow() -> torch.Tensor:
        time.sleep(0.02)
        return torch.zeros(1)

    cpu = torch.device("cpu")
    assert measure(slow, cpu, TimingConfig(interpreter_trials=4)).trials == 4
    assert measure(slow, cpu, TimingConfig(interpreter_trials=4, give_up_ms=1000.0)).trials == 4
    hopeless = measure(slow, cpu, TimingConfig(interpreter_trials=4, give_up_ms=5.0))
    assert hopeless.trials == 1 and hopeless.median_ms >= 20.0
    samples: list[object] = []  # the verifier's sampled trials need every pick: no giving up
    assert measure(slow, cpu, TimingConfig(interpreter_trials=4, give_up_ms=5.0), samples=samples).trials == 4


def test_a_quick_host_run_is_timed_more_often_within_its_budget_and_a_slow_one_is_not() -> None:
    import time

    cpu = torch.device("cpu")
    config = TimingConfig(interpreter_trials=3, interpreter_max_trials=9, interpreter_budget_ms=60.0)
    assert measure(lambda: torch.zeros(1), cpu, config).trials == 9  # microseconds a run: the cap
    assert host_trials(config, 10.0) == 6 and host_trials(config, 30.0) == 3 and host_trials(config, 900.0) == 3

    def slow() -> torch.Tensor:
        time.sleep(0.03)
        return torch.zeros(1)

    assert measure(slow, cpu, config).trials == 3
    # why: one trial slowed by a loaded machine among three widens the IQR past a 4x gain; among five it does not
    quick = summarize([2.8, 2.8, 2.9], "interpreter")
    assert not beats(quick, summarize([11.0, 12.0, 50.0], "interpreter"), min_gain_pct=1.0)
    assert beats(summarize([2.8] * 5, "interpreter"), summarize([11.0, 11.0, 11.5, 12.0, 50.0], "interpreter"), 1.0)


def test_floor_counts_inputs_parameters_and_outputs_once_and_matmul_flops() -> None:
    model = torch.nn.Linear(64, 32, bias=False)
    x = torch.randn(16, 64)
    floor = estimate_floor(model, [x])
    assert floor.min_bytes == (16 * 64 + 64 * 32 + 16 * 32) * 4
    assert floor.flops == 2 * 16 * 64 * 32 and floor.dtype == "fp32"


def test_a_gpu_time_under_the_floor_is_impossible_and_interpreter_times_are_not_judged() -> None:
    from kernelopt.harness.measure.impossible import floor_ms_for, impossible_speed
    from kernelopt.records import FloorEstimate

    floor = FloorEstimate(min_bytes=4_800_000_000, flops=1.0, dtype="fp32")
    floor_ms = floor_ms_for(floor, "H200")
    assert floor_ms is not None and abs(floor_ms - 1.0) < 1e-9  # 4.8 GB at the H200's 4.8 TB/s
    fast = Timing(0.5, 0.49, 0.51, 0.48, 0.52, 100, "cuda_events")
    assert "impossible speed" in (impossible_speed(fast, floor_ms) or "")
    assert impossible_speed(Timing(0.95, 0.94, 0.96, 0.9, 1.0, 100, "cuda_events"), floor_ms) is None
    assert impossible_speed(Timing(0.5, 0.49, 0.51, 0.48, 0.52, 3, "interpreter"), floor_ms) is None


def test_the_l2_flush_follows_the_gpus_l2_and_the_trials_follow_the_run() -> None:
    from kernelopt.harness.measure.timing import TimingConfig, timing_config_for

    h200 = timing_config_for(40.0, target_total_ms=200.0, min_trials=5, max_trials=50)
    assert h200.flush_l2_bytes == 80 * 2**20
    assert (h200.target_total_ms, h200.min_trials, h200.max_trials) == (200.0, 5, 50)
    assert timing_config_for(None).flush_l2_bytes == TimingConfig().flush_l2_bytes  # unknown L2: the safe default
    assert timing_config_for(4.0).flush_l2_bytes == 64 * 2**20  # never less than 64 MiB
