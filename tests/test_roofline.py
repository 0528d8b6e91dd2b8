"""Roofline: NCU speed-of-light view, floor view, verdicts, and warnings instead of errors."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from kernelopt.hardware import (
    RooflineAnalyzer,
    RooflineConfig,
    aggregate_kernels,
    dtype_name,
    floor_from_counts,
    get_gpu_spec,
    parse_ncu_csv,
)
from kernelopt.records import FloorEstimate

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
SOFTMAX = aggregate_kernels(
    parse_ncu_csv((FIXTURES / "h200_softmax_8192x4096_fp32_metrics.csv").read_text())
)
SOFTMAX_WIDE = aggregate_kernels(
    parse_ncu_csv((FIXTURES / "h200_softmax_8192x4096_fp32_full_raw.csv").read_text())
)
H200 = get_gpu_spec("H200")
# softmax of 8192 x 4096 fp32: every element read once and written once.
SOFTMAX_BYTES = 2 * 8192 * 4096 * 4
SOFTMAX_FLOOR = FloorEstimate(min_bytes=SOFTMAX_BYTES, flops=5.0 * 8192 * 4096, dtype="fp32")
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
HMMA_PCT = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"


def test_softmax_ncu_view_is_memory_bound() -> None:
    roofline = RooflineAnalyzer(H200).analyze(SOFTMAX)
    assert roofline.bottleneck == "memory"
    assert roofline.source == "ncu"
    assert roofline.memory_sol_pct == pytest.approx(79.9)
    assert roofline.compute_sol_pct == pytest.approx(24.98)
    assert roofline.uses_tensor_cores is False
    assert roofline.dram_bytes == 134_234_368 + 108_261_632
    assert roofline.efficiency_pct == pytest.approx(79.9)  # no floor: the busiest unit
    assert roofline.at_roofline is False  # 79.9 < the 80% SOL bar
    assert roofline.warnings == ()


def test_wide_fixture_gives_the_same_verdict() -> None:
    roofline = RooflineAnalyzer(H200).analyze(SOFTMAX_WIDE)
    assert roofline.bottleneck == "memory" and roofline.uses_tensor_cores is False
    assert roofline.memory_sol_pct == pytest.approx(79.78, abs=0.01)


def test_softmax_floor_efficiency_on_h200() -> None:
    roofline = RooflineAnalyzer(H200).analyze(SOFTMAX, SOFTMAX_FLOOR, measured_time_ms=0.0631)
    floor_s = SOFTMAX_BYTES / 4.8e12  # memory-bound: the FLOPs take ~1 us at any fp32 roof
    assert roofline.floor_time_ms == pytest.approx(floor_s * 1e3)
    assert roofline.efficiency_pct == pytest.approx(floor_s / 63.1e-6 * 100)
    assert 87 < (roofline.efficiency_pct or 0) < 90
    assert roofline.headroom_pct == pytest.approx(100 - (roofline.efficiency_pct or 0))
    assert roofline.at_roofline is True  # floor efficiency >= 85%
    assert roofline.source == "ncu+floor"
    assert roofline.achieved_gbs == pytest.approx(SOFTMAX_BYTES / 63.1e-6 / 1e9)
    assert roofline.arithmetic_intensity == pytest.approx(5 / 8)
    assert roofline.bandwidth_gbs == 4800 and roofline.peak_tflops == pytest.approx(989.5 / 3)  # three fp16 products


def test_measured_ceilings_override_the_datasheet() -> None:
    # The fixtures' H200 copied 4.24 TB/s: against that, softmax sits at the roofline.
    analyzer = RooflineAnalyzer(H200, bandwidth_gbs=4240.0, peak_tflops={"fp32": 51.0})
    roofline = analyzer.analyze(SOFTMAX, SOFTMAX_FLOOR, measured_time_ms=0.0631)
    assert roofline.bandwidth_gbs == 4240 and roofline.peak_tflops == 51
    assert roofline.efficiency_pct == pytest.approx(SOFTMAX_BYTES / 4.24e12 / 63.1e-6 * 100)
    assert (roofline.efficiency_pct or 0) > 99


def test_ncu_duration_stands_in_for_a_missing_measured_time() -> None:
    roofline = RooflineAnalyzer(H200).analyze(SOFTMAX, SOFTMAX_FLOOR)
    assert roofline.measured_time_ms == pytest.approx(0.063104)
    assert roofline.efficiency_pct == pytest.approx(SOFTMAX_BYTES / 4.8e12 / 63.104e-6 * 100)


def test_floor_only_matmul_is_compute_bound() -> None:
    n = 8192
    floor = floor_from_counts(3 * n * n * 2, 2.0 * n**3, torch.bfloat16)
    # The fixtures' H200 ran this matmul at 680 TFLOP/s.
    measured_ms = 2.0 * n**3 / 680e12 * 1e3
    roofline = RooflineAnalyzer(H200).analyze(None, floor, measured_time_ms=measured_ms)
    assert roofline.bottleneck == "compute"
    assert roofline.source == "floor"
    assert roofline.efficiency_pct == pytest.approx(680 / 989.5 * 100, rel=1e-3)
    assert roofline.achieved_tflops == pytest.approx(680)
    assert roofline.at_roofline is False
    assert roofline.compute_sol_pct is None and roofline.uses_tensor_cores is None


def test_floor_only_low_intensity_is_memory_bound() -> None:
    roofline = RooflineAnalyzer(H200).analyze(None, SOFTMAX_FLOOR, measured_time_ms=0.2)
    assert roofline.bottleneck == "memory"
    assert roofline.at_roofline is False and (roofline.headroom_pct or 0) > 50


@pytest.mark.parametrize(
    ("compute_pct", "memory_pct", "expected"),
    [(92.0, 30.0, "compute"), (20.0, 85.0, "memory"), (25.0, 30.0, "underutilized")],
)
def test_ncu_bottleneck(compute_pct: float, memory_pct: float, expected: str) -> None:
    roofline = RooflineAnalyzer(H200).analyze({SM_PCT: compute_pct, MEM_PCT: memory_pct})
    assert roofline.bottleneck == expected
    assert roofline.at_roofline is (max(compute_pct, memory_pct) >= 80)


def test_low_sol_on_both_units_is_placed_under_the_floors_roof() -> None:
    """Both units under 40% (a naive elementwise kernel): the floor still says which roof."""
    roofline = RooflineAnalyzer(H200).analyze({SM_PCT: 25.0, MEM_PCT: 30.0}, SOFTMAX_FLOOR, measured_time_ms=0.2)
    assert roofline.bottleneck == "memory"


def test_memory_sol_falls_back_to_dram_throughput() -> None:
    roofline = RooflineAnalyzer(H200).analyze({SM_PCT: 10.0, DRAM_PCT: 70.0})
    assert roofline.memory_sol_pct == 70.0 and roofline.bottleneck == "memory"


# An fp32 GEMM of 76_Gemm_Add_ReLU's size (1024 x 8192 x 8192), at the SOL pair NCU gave its kernel
# on the H200 (memory 56.3% over compute 51.2%); the lead is on chip when DRAM runs far below it.
GEMM_FLOOR = floor_from_counts(4 * (1024 * 8192 * 2 + 8192 * 8192), 2.0 * 1024 * 8192 * 8192, torch.float32)


@pytest.mark.parametrize(
    ("dram_pct", "floor", "expected"),
    [
        (6.0, GEMM_FLOOR, "compute"),  # the lead is on chip, and the floor is above the ridge
        (55.0, GEMM_FLOOR, "memory"),  # DRAM itself is that busy: fewer bytes would help
        (None, GEMM_FLOOR, "memory"),  # no DRAM figure: NCU's lead stands
        (6.0, SOFTMAX_FLOOR, "memory"),  # below the ridge an on-chip lead is still memory
    ],
)
def test_an_on_chip_memory_lead_over_a_compute_bound_floor_is_compute(dram_pct, floor, expected) -> None:
    metrics = {SM_PCT: 51.2, MEM_PCT: 56.3} | ({DRAM_PCT: dram_pct} if dram_pct is not None else {})
    roofline = RooflineAnalyzer(H200).analyze(metrics, floor, measured_time_ms=5.8)
    assert roofline.bottleneck == expected
    assert roofline.memory_sol_pct == 56.3  # the SOL shown stays NCU's own


def test_tensor_core_use_follows_the_config_threshold() -> None:
    metrics = {SM_PCT: 60.0, MEM_PCT: 30.0, HMMA_PCT: 5.0}
    assert RooflineAnalyzer(H200).analyze(metrics).uses_tensor_cores is True
    strict = RooflineAnalyzer(H200, config=RooflineConfig(tensor_core_active_pct=10.0))
    assert strict.analyze(metrics).uses_tensor_cores is False
    # Without the HMMA metric, the all-tensor-pipe one (asked for on Hopper) decides.
    wgmma = {SM_PCT: 60.0, MEM_PCT: 30.0,
             "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 70.0}
    assert RooflineAnalyzer(H200).analyze(wgmma).uses_tensor_cores is True


def test_missing_metrics_give_warnings_not_errors() -> None:
    roofline = RooflineAnalyzer(H200).analyze({"launch__registers_per_thread": 32.0})
    assert roofline.bottleneck == "unknown" and roofline.source == "none"
    assert roofline.efficiency_pct is None and roofline.at_roofline is False
    text = " ".join(roofline.warnings)
    for name in (SM_PCT, MEM_PCT, HMMA_PCT, "dram__bytes_read.sum"):
        assert name in text


def test_nothing_known_is_unknown() -> None:
    roofline = RooflineAnalyzer().analyze(None)
    verdict = (roofline.bottleneck, roofline.source, roofline.at_roofline)
    assert verdict == ("unknown", "none", False)


def test_no_spec_warns_and_keeps_the_ncu_view() -> None:
    roofline = RooflineAnalyzer().analyze(SOFTMAX, SOFTMAX_FLOOR, measured_time_ms=0.0631)
    assert roofline.floor_time_ms is None and roofline.source == "ncu"
    assert roofline.bottleneck == "memory"
    assert any("spec" in w for w in roofline.warnings)


def test_the_fp32_roof_is_three_split_products_where_tensor_cores_beat_the_fma_peak() -> None:
    # Three products of split operands give fp32's accuracy on tensor cores, in TF32 or in fp16 on rows scaled
    # into its range: a third of the faster one's peak is an fp32 matmul's roof where it is above the FMA peak
    # (H200: 989.5 / 3 > 494.7 / 3 > 67; A100: 312 / 3 > 19.5).
    from kernelopt.hardware.gpu_spec import roof_tflops

    assert H200.roof_tflops("fp32") == pytest.approx(989.5 / 3)
    a100 = get_gpu_spec("A100-SXM4-80GB")
    assert a100.roof_tflops("fp32") == pytest.approx(a100.peak_tflops("fp16") / 3)
    assert H200.roof_tflops("fp16") == H200.peak_tflops("fp16")  # other dtypes keep their own peak
    assert roof_tflops({"fp32": 51.0, "tf32": 356.0}, "fp32") == pytest.approx(356.0 / 3)
    assert roof_tflops({"fp32": 51.0, "tf32": 356.0, "fp16": 700.0}, "fp32") == pytest.approx(700.0 / 3)
    assert roof_tflops({"fp32": 51.0, "fp16": 700.0}, "fp32") == pytest.approx(700.0 / 3)
    assert roof_tflops({"fp32": 51.0, "tf32": 120.0, "fp16": 150.0}, "fp32") == 51.0  # split under FMA: FMA's
    assert roof_tflops({"fp32": 51.0}, "fp32") == 51.0  # no tensor-core peak measured: FMA's
    assert roof_tflops({"fp16": 700.0}, "bf16") is None
    # Measured ceilings go through the same rule.
    analyzer = RooflineAnalyzer(H200, bandwidth_gbs=4240.0, peak_tflops={"fp32": 51.0, "tf32": 356.0})
    matmul = FloorEstimate(min_bytes=3 * 4096 * 4096 * 4, flops=2.0 * 4096**3, dtype="fp32")
    roofline = analyzer.analyze(None, matmul, measured_time_ms=2.679)  # cuBLAS's SGEMM on the H200
    assert roofline.peak_tflops == pytest.approx(356.0 / 3)
    assert roofline.floor_time_ms == pytest.approx(2.0 * 4096**3 / (356e12 / 3) * 1e3)
    assert roofline.at_roofline is False  # SGEMM at 51 TFLOP/s is 44% of a 3xTF32 roof


def test_a_split_fp32_matmul_time_is_not_impossible() -> None:
    # An fp32 4096^3 matmul on tensor cores as three fp16 products in 0.76 ms (181 TFLOP/s, the H200's split
    # product): under the FMA-peak floor (2.05 ms) and the 3xTF32 floor (0.83 ms), so either roof would reject
    # an honest kernel; over the split-fp16 floor (0.42 ms).
    from kernelopt.harness.measure.impossible import floor_ms_for, impossible_speed
    from kernelopt.records import Timing

    matmul = FloorEstimate(min_bytes=3 * 4096 * 4096 * 4, flops=2.0 * 4096**3, dtype="fp32")
    floor_ms = floor_ms_for(matmul, "H200")
    assert floor_ms == pytest.approx(2.0 * 4096**3 / (989.5e12 / 3) * 1e3)
    assert impossible_speed(Timing(0.76, 0.75, 0.77, 0.74, 0.78, 100, "cuda_events"), floor_ms) is None
    assert impossible_speed(Timing(0.25, 0.24, 0.26, 0.23, 0.27, 100, "cuda_events"), floor_ms)


def test_dtype_without_a_peak_counts_memory_only() -> None:
    floor = FloorEstimate(min_bytes=SOFTMAX_BYTES, flops=1e6, dtype="fp64")
    roofline = RooflineAnalyzer(H200).analyze(None, floor, measured_time_ms=0.0631)
    assert roofline.floor_time_ms == pytest.approx(SOFTMAX_BYTES / 4.8e12 * 1e3)
    assert any("fp64" in w for w in roofline.warnings)


def test_faster_than_the_floor_is_flagged() -> None:
    roofline = RooflineAnalyzer(H200).analyze(None, SOFTMAX_FLOOR, measured_time_ms=0.03)
    assert any("beats the floor" in w for w in roofline.warnings)
    assert roofline.headroom_pct == 0.0


def test_roofline_is_json_native() -> None:
    roofline = RooflineAnalyzer(H200).analyze(SOFTMAX, SOFTMAX_FLOOR, measured_time_ms=0.0631)
    assert json.loads(json.dumps(asdict(roofline)))["bottleneck"] == "memory"


@pytest.mark.parametrize(
    ("dtype", "name"),
    [(torch.float32, "fp32"), (torch.float16, "fp16"), (torch.bfloat16, "bf16"),
     (torch.float8_e4m3fn, "fp8"), (torch.float8_e5m2, "fp8"), (torch.float64, "fp64"),
     ("bf16", "bf16")],
)
def test_dtype_name(dtype: object, name: str) -> None:
    assert dtype_name(dtype) == name


# The measured case: fp16 matmul 4096^3 on the H200, a ceiling of 675 TFLOP/s measured on 8192^3,
# cuBLAS at 0.1929 ms on this very problem, the best kernel at 0.2253 ms.
MATMUL_4096 = floor_from_counts(3 * 4096 * 4096 * 2, 2.0 * 4096**3, torch.float16)


def test_a_baseline_faster_than_the_ceiling_allows_raises_the_ceiling() -> None:
    analyzer = RooflineAnalyzer(H200, bandwidth_gbs=4000.0, peak_tflops={"fp16": 675.0})
    plain = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.2253)
    assert plain.floor_time_ms == pytest.approx(2.0 * 4096**3 / 675e12 * 1e3)
    honest = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.2253, baselines_ms={"PyTorch eager": 0.1929})
    assert honest.floor_time_ms == pytest.approx(0.1929)
    assert honest.peak_tflops == pytest.approx(2.0 * 4096**3 / 0.1929e-3 / 1e12)  # about 712
    assert honest.bandwidth_gbs == 4000.0  # the memory roof was not beaten: left where it was
    assert any("ceilings were raised" in w and "PyTorch eager" in w for w in honest.warnings)


def test_a_slower_baseline_leaves_the_ceilings_alone() -> None:
    analyzer = RooflineAnalyzer(H200, bandwidth_gbs=4000.0, peak_tflops={"fp16": 675.0})
    roofline = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.21, baselines_ms={"torch.compile": 0.25})
    assert roofline.peak_tflops == 675.0
    assert not any("raised" in w for w in roofline.warnings)


def test_a_kernel_a_baseline_beats_is_never_at_the_roofline() -> None:
    analyzer = RooflineAnalyzer(H200, bandwidth_gbs=4000.0, peak_tflops={"fp16": 675.0})
    alone = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.2253)
    assert alone.at_roofline  # 90.4% of the floor on the measured ceiling: the false stop of the measured run
    beaten = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.2253, baselines_ms={"PyTorch eager": 0.1929})
    assert not beaten.at_roofline
    assert any("faster than the kernel's 0.2253 ms" in w for w in beaten.warnings)
    level = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.195, baselines_ms={"PyTorch eager": 0.1929})
    assert not level.at_roofline  # still a hair slower than cuBLAS
    ahead = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.190, baselines_ms={"PyTorch eager": 0.1929})
    assert ahead.at_roofline and ahead.efficiency_pct == pytest.approx(0.1929 / 0.190 * 100)


def test_a_baseline_faster_only_within_noise_is_a_tie_and_says_so() -> None:
    # 27_SELU_ on the H200: torch.compile 3.021 ms, the seed 3.022 ms at 99.6% of its floor; counted as
    # beaten, the run swept two rounds (80 s) for nothing
    analyzer = RooflineAnalyzer(H200, bandwidth_gbs=4000.0, peak_tflops={"fp16": 675.0})
    tied = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.1935, baselines_ms={"torch.compile": 0.1929})
    assert tied.at_roofline  # 0.3% apart
    assert any("a tie within 0.5%" in w and "torch.compile" in w for w in tied.warnings)
    assert not any("faster than the kernel's" in w for w in tied.warnings)
    apart = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.1942, baselines_ms={"torch.compile": 0.1929})
    assert not apart.at_roofline  # 0.7% apart: faster


def test_only_gpu_times_of_the_baselines_count() -> None:
    from kernelopt.hardware.roofline import baseline_times_ms
    from kernelopt.records import Baselines, Timing

    gpu = Timing(0.1929, 0.19, 0.2, 0.19, 0.2, 50, "cuda_events")
    cpu = Timing(0.01, 0.01, 0.01, 0.01, 0.01, 5, "cpu")
    assert baseline_times_ms(Baselines(eager=gpu, compile=cpu)) == {"PyTorch eager": 0.1929}
    assert baseline_times_ms(None) == {}


def test_a_cuda_graph_replay_faster_than_the_kernel_denies_the_roofline() -> None:
    # H200, the matmul example: the TMA kernel at 0.1933 ms, 93.5% efficient, stopped at_roofline while the
    # CUDA-graph replay of eager, a baseline its own report showed, ran 0.1904 ms
    from kernelopt.hardware.roofline import baseline_faster, baseline_times_ms
    from kernelopt.records import Baselines, Timing

    def gpu(ms: float) -> Timing:
        return Timing(ms, ms, ms, ms, ms, 1000, "cuda_events")

    baselines = Baselines(eager=gpu(0.1938), compile=gpu(0.1945), cuda_graph=gpu(0.1904), max_autotune=gpu(0.1950))
    assert baseline_times_ms(baselines) == {"PyTorch eager": 0.1938, "torch.compile": 0.1945,
                                            "torch.compile (max-autotune)": 0.1950, "CUDA graph of eager": 0.1904}
    why = baseline_faster(baseline_times_ms(baselines), 0.1933) or ""
    assert "CUDA graph of eager runs the problem in 0.1904 ms" in why
    analyzer = RooflineAnalyzer(H200, bandwidth_gbs=4000.0, peak_tflops={"fp16": 675.0})
    roofline = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.1933, baselines_ms=baseline_times_ms(baselines))
    assert not roofline.at_roofline
    without = analyzer.analyze(None, MATMUL_4096, measured_time_ms=0.1933, baselines_ms={"PyTorch eager": 0.1938})
    assert without.at_roofline  # what the run saw when only eager and the default compile counted
    autotuned = Baselines(eager=gpu(0.1938), compile=gpu(0.1945), max_autotune=gpu(0.1850))
    assert baseline_faster(baseline_times_ms(autotuned), 0.1933)  # max-autotune's pick counts as well
