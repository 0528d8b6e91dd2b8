"""Nsight Compute: parsing both CSV layouts, aggregating kernels, and the runner's error paths."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from kernelopt.hardware import gpus, ncu_runner
from kernelopt.hardware.ncu import (
    DEFAULT_METRICS,
    NCU_METRICS,
    KernelMetrics,
    aggregate_kernels,
    default_metrics,
    parse_ncu_csv,
)
from kernelopt.hardware.ncu_runner import NcuCache, ncu_cache_key, ncu_unavailable_reason, run_ncu

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
LONG = (FIXTURES / "h200_softmax_8192x4096_fp32_metrics.csv").read_text()
WIDE = (FIXTURES / "h200_softmax_8192x4096_fp32_full_raw.csv").read_text()
TWO_KERNELS = (FIXTURES / "h200_softmax_and_wgmma_matmul_run_ncu_stdout.csv").read_text()

TIME = "gpu__time_duration.sum"
READ = "dram__bytes_read.sum"
WRITE = "dram__bytes_write.sum"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",' \
    '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",' \
    '"Metric Value"'


def _long_row(kernel_id: int, kernel: str, metric: str, unit: str, value: str) -> str:
    return (f'"{kernel_id}","1","python3","host","{kernel}","1","7","(128, 1, 1)",'
            f'"(64, 1, 1)","0","9.0","Command line profiler metrics","{metric}","{unit}",'
            f'"{value}"')


def test_long_format_softmax() -> None:
    [kernel] = parse_ncu_csv(LONG)
    assert kernel.name == "softmax_kernel"
    assert kernel.time_ns == 63_104
    assert kernel.metrics[READ] == 134_234_368
    assert kernel.metrics[WRITE] == 108_261_632
    assert kernel.metrics[SM_PCT] == pytest.approx(24.98)
    assert kernel.grid_size == "(8192, 1, 1)" and kernel.block_size == "(128, 1, 1)"
    assert kernel.units[TIME] == "ns" and kernel.units[READ] == "byte"


def test_wide_format_softmax_scales_units() -> None:
    [kernel] = parse_ncu_csv(WIDE)
    assert kernel.name == "softmax_kernel"
    # printed as 63.2 "us" and 134.2464 "Mbyte" (NCU's Mbyte is 10^6 bytes)
    assert kernel.time_ns == pytest.approx(63_200)
    assert kernel.metrics[READ] == pytest.approx(134_246_400)
    assert kernel.units[READ] == "byte" and kernel.units[TIME] == "ns"
    assert kernel.metrics["launch__shared_mem_per_block"] == pytest.approx(1040)
    assert kernel.units["launch__shared_mem_per_block"] == "byte/block"
    assert kernel.metrics["launch__grid_size"] == 8192  # "8,192"
    # empty values and words ("PolicySpread") are skipped, not zeros
    assert "SM_B.TriageCompute.l1tex__t_sector_hit_rate.pct" not in kernel.metrics
    assert "launch__cluster_scheduling_policy" not in kernel.metrics
    assert "ID" not in kernel.metrics and "CC" not in kernel.metrics


def test_long_and_wide_agree_on_shared_metrics() -> None:
    # Two runs of the same kernel: equal within run-to-run noise.
    [long], [wide] = parse_ncu_csv(LONG), parse_ncu_csv(WIDE)
    shared = set(long.metrics) & set(wide.metrics)
    assert {TIME, READ, WRITE, SM_PCT, "launch__registers_per_thread"} <= shared
    for name in shared:
        assert wide.metrics[name] == pytest.approx(long.metrics[name], rel=0.03), name


def test_prof_and_program_lines_around_the_csv_are_ignored() -> None:
    noisy = (
        "==PROF== Connected to process 571 (/usr/bin/python3.12)\n"
        "==WARNING== Backing up device memory in system memory.\n"
        "correctness ok, max error 1e-7\n"
        + WIDE
        + "\n==PROF== Disconnected from process 571\n"
    )
    [kernel] = parse_ncu_csv(noisy)
    assert kernel.metrics == parse_ncu_csv(WIDE)[0].metrics


def test_long_format_units_separators_and_missing_values() -> None:
    text = "\n".join([
        HEADER,
        _long_row(0, "k1", TIME, "usecond", "1.5"),
        _long_row(0, "k1", READ, "Kbyte", "2,048"),
        _long_row(0, "k1", SM_PCT, "%", "n/a"),
        _long_row(1, "k2", TIME, "msecond", "0.002"),
        _long_row(1, "k2", READ, "Gbyte", "1.5"),
        _long_row(1, "k2", SM_PCT, "%", ""),
        _long_row(1, "k2", "launch__registers_per_thread", "register/thread", "1,024"),
    ])
    k1, k2 = parse_ncu_csv(text)
    assert (k1.name, k1.time_ns, k1.metrics[READ]) == ("k1", 1500.0, 2_048_000.0)
    assert (k2.name, k2.time_ns, k2.metrics[READ]) == ("k2", 2000.0, 1.5e9)
    assert SM_PCT not in k1.metrics and SM_PCT not in k2.metrics
    assert k2.metrics["launch__registers_per_thread"] == 1024


def test_text_without_csv_gives_no_kernels() -> None:
    assert parse_ncu_csv("==PROF== No kernels were profiled.\n") == []
    assert parse_ncu_csv("") == []


def test_aggregate_sums_counters_and_weights_rates_by_time() -> None:
    short = KernelMetrics("a", 100.0, {TIME: 100.0, READ: 1000.0, SM_PCT: 10.0,
                                       "launch__registers_per_thread": 32.0})
    long = KernelMetrics("b", 300.0, {TIME: 300.0, READ: 3000.0, SM_PCT: 50.0,
                                      "launch__registers_per_thread": 64.0})
    merged = aggregate_kernels([short, long])
    assert merged[TIME] == 400.0
    assert merged[READ] == 4000.0
    assert merged[SM_PCT] == pytest.approx((10 * 100 + 50 * 300) / 400)
    assert merged["launch__registers_per_thread"] == pytest.approx((32 * 100 + 64 * 300) / 400)


def test_aggregate_of_one_kernel_is_that_kernel() -> None:
    [kernel] = parse_ncu_csv(LONG)
    assert aggregate_kernels([kernel]) == pytest.approx(kernel.metrics)


def test_aggregate_without_times_takes_plain_means() -> None:
    merged = aggregate_kernels([KernelMetrics("a", 0.0, {SM_PCT: 10.0}),
                                KernelMetrics("b", 0.0, {SM_PCT: 30.0})])
    assert merged[SM_PCT] == 20.0


def test_metric_table_covers_what_we_collect() -> None:
    wanted = {
        TIME, READ, WRITE, SM_PCT,
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "launch__registers_per_thread", "sm__warps_active.avg.pct_of_peak_sustained_active",
        "lts__t_sector_hit_rate.pct", "l1tex__t_sector_hit_rate.pct",
    }
    assert wanted <= set(DEFAULT_METRICS)
    assert set(DEFAULT_METRICS) <= set(NCU_METRICS)
    assert all(NCU_METRICS[m] for m in NCU_METRICS)
    with pytest.raises(TypeError):
        NCU_METRICS["x"] = "y"  # type: ignore[index]
    # Hopper-only metrics are asked for on Hopper only: an unknown metric fails the whole run.
    assert set(default_metrics("8.0")) == set(DEFAULT_METRICS)
    assert set(default_metrics("9.0")) > set(DEFAULT_METRICS)
    # Every metric the fixtures' H200 run could report exists there.
    [wide] = parse_ncu_csv(WIDE)
    hopper_extra = set(default_metrics("9.0")) - set(DEFAULT_METRICS)
    assert hopper_extra <= set(wide.metrics)


# ---------------------------------------------------------------- run_ncu with fake ncu


def _fake_ncu(tmp_path: Path, body: str) -> tuple[str, dict[str, str]]:
    """A shell script named ncu on PATH; it records its arguments in args.txt."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "ncu"
    script.write_text(f'#!/bin/sh\necho "$@" > "{tmp_path}/args.txt"\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return str(script), env


def test_run_ncu_parses_a_successful_run(tmp_path: Path) -> None:
    _, env = _fake_ncu(tmp_path, f'echo "==PROF== Connected"\ncat "{FIXTURES}/'
                       'h200_softmax_8192x4096_fp32_full_raw.csv"')
    profile = run_ncu(["python", "prog.py"], env=env, timeout_s=30, workdir=str(tmp_path),
                      kernel_regex="softmax")
    assert profile.ok and profile.error is None
    assert [k.name for k in profile.kernels] == ["softmax_kernel"]
    assert profile.total_time_ns == pytest.approx(63_200)
    assert profile.metrics[READ] == pytest.approx(134_246_400)
    assert profile.report_path and Path(profile.report_path).read_text().count("softmax") >= 1
    args = (tmp_path / "args.txt").read_text()
    for flag in ("--csv", "--page raw", "--profile-from-start off", "--clock-control none",
                 "--target-processes all", "regex:softmax", "python prog.py"):
        assert flag in args
    assert ",".join(DEFAULT_METRICS) in args
    # --page raw adds device attributes; only what was asked for is kept
    assert set(profile.metrics) <= set(DEFAULT_METRICS)
    assert not any(m.startswith("device__attribute") for m in profile.kernels[0].metrics)


def test_real_run_ncu_stdout_with_two_kernels() -> None:
    # What run_ncu read on an H200: ncu's and the program's lines, then a softmax and a matmul.
    softmax, matmul = parse_ncu_csv(TWO_KERNELS)
    assert (softmax.name, matmul.name) == ("softmax_kernel", "matmul_kernel")
    assert softmax.time_ns == pytest.approx(62_976) and matmul.time_ns == pytest.approx(203_744)
    hmma = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
    assert matmul.metrics[hmma] > 80 and softmax.metrics[hmma] == 0  # wgmma counts as HMMA
    assert set(default_metrics("9.0")) <= set(softmax.metrics) & set(matmul.metrics)
    merged = aggregate_kernels([softmax, matmul])
    assert merged[TIME] == pytest.approx(62_976 + 203_744)
    assert merged[READ] == pytest.approx(softmax.metrics[READ] + matmul.metrics[READ])
    weighted = sum(k.metrics[SM_PCT] * k.time_ns for k in (softmax, matmul))
    assert merged[SM_PCT] == pytest.approx(weighted / (softmax.time_ns + matmul.time_ns))


def test_run_ncu_timeout(tmp_path: Path) -> None:
    _, env = _fake_ncu(tmp_path, "sleep 30")
    started = time.monotonic()
    profile = run_ncu(["prog"], env=env, timeout_s=0.5, workdir=str(tmp_path))
    assert time.monotonic() - started < 10
    assert not profile.ok and "timed out after 0.5 s" in (profile.error or "")


def test_run_ncu_permission_error(tmp_path: Path) -> None:
    _, env = _fake_ncu(tmp_path, 'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have '
                       'permission to access NVIDIA GPU Performance Counters"\nexit 1')
    profile = run_ncu(["prog"], env=env, timeout_s=30, workdir=str(tmp_path))
    assert not profile.ok
    assert "permission" in (profile.error or "") and "ERR_NVGPUCTRPERM" in (profile.error or "")


def test_run_ncu_program_failure_reports_code_and_stderr(tmp_path: Path) -> None:
    _, env = _fake_ncu(tmp_path, 'echo "Traceback (most recent call last):" >&2\n'
                       'echo "RuntimeError: CUDA error: illegal memory access" >&2\nexit 3')
    profile = run_ncu(["prog"], env=env, timeout_s=30, workdir=str(tmp_path))
    assert not profile.ok
    assert "code 3" in (profile.error or "") and "illegal memory access" in (profile.error or "")
    assert "\n" not in (profile.error or "")


def test_run_ncu_no_kernels(tmp_path: Path) -> None:
    _, env = _fake_ncu(tmp_path, 'echo "==PROF== Disconnected from process 1"')
    profile = run_ncu(["prog"], env=env, timeout_s=30, workdir=str(tmp_path))
    assert not profile.ok and "no kernels" in (profile.error or "")


def test_run_ncu_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ncu_runner, "_fallback_ncu_paths", lambda: [])
    profile = run_ncu(["prog"], env={"PATH": str(tmp_path)}, timeout_s=5, workdir=str(tmp_path))
    assert not profile.ok and "ncu" in (profile.error or "") and "PATH" in (profile.error or "")
    absent = run_ncu(["prog"], timeout_s=5, workdir=str(tmp_path),
                     ncu_path=str(tmp_path / "absent"))
    assert not absent.ok and "not found" in (absent.error or "")


def test_unavailable_reason_without_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ncu_runner, "_fallback_ncu_paths", lambda: [])
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(gpus, "cuda_available", lambda: True)
    assert "ncu (Nsight Compute) is not on PATH" in (ncu_unavailable_reason() or "")


def test_unavailable_reason_without_a_gpu_names_the_gpu_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpus, "cuda_available", lambda: False)
    assert "no CUDA device" in (ncu_unavailable_reason() or "")


def test_run_ncu_cache_profiles_each_kernel_once(tmp_path: Path) -> None:
    counter = tmp_path / "calls"
    _, env = _fake_ncu(tmp_path, f'echo x >> "{counter}"\ncat "{FIXTURES}/'
                       'h200_softmax_8192x4096_fp32_metrics.csv"')
    cache = NcuCache(tmp_path / "cache")
    key = ncu_cache_key("@triton.jit\ndef k(): ...", gpu_name="NVIDIA H200",
                        metrics=DEFAULT_METRICS)
    first = run_ncu(["prog"], env=env, timeout_s=30, workdir=str(tmp_path), cache=cache,
                    cache_key=key)
    second = run_ncu(["prog"], env=env, timeout_s=30, workdir=str(tmp_path), cache=cache,
                     cache_key=key)
    assert first.ok and second == first
    assert counter.read_text().count("x") == 1
    other = ncu_cache_key("@triton.jit\ndef k2(): ...", gpu_name="NVIDIA H200",
                          metrics=DEFAULT_METRICS)
    assert other != key and cache.get(other) is None


def test_failures_are_not_cached(tmp_path: Path) -> None:
    _, env = _fake_ncu(tmp_path, "exit 1")
    cache = NcuCache(tmp_path / "cache")
    run_ncu(["prog"], env=env, timeout_s=30, workdir=str(tmp_path), cache=cache, cache_key="k")
    assert cache.get("k") is None


def test_corrupt_cache_entry_reads_as_absent(tmp_path: Path) -> None:
    (tmp_path / "k.json").write_text("{not json")
    assert NcuCache(tmp_path).get("k") is None


def test_a_stopped_run_profiles_its_last_best_only_when_asked(tmp_path: Path, monkeypatch) -> None:
    # After max_rounds the last best's NCU profile serves the report alone: profile_final=False
    # (what suites set) skips it and says so; a run that goes on is profiled whatever the setting.
    from types import SimpleNamespace

    from kernelopt.context import Context
    from kernelopt.nodes import profile as node
    from kernelopt.records import KernelRecord, Timing

    profiled: list[str] = []

    def ncu_metrics(state, ctx, best):
        profiled.append(best.path)
        return None, "ncu stands in"

    monkeypatch.setattr(node, "_ncu_metrics", ncu_metrics)
    timing = Timing(1.0, 1.0, 1.0, 1.0, 1.0, 50, "cuda_events")
    state = {"run_dir": str(tmp_path), "problem_path": str(tmp_path / "p.py"), "round": 3, "gpu_key": "H200",
             "best": KernelRecord(str(tmp_path / "k.py"), "h", timing, 3), "baselines": None,
             "stop_reason": "max_rounds"}
    skipped = node.profile(state, SimpleNamespace(context=Context(profile_final=False)))
    assert profiled == [] and skipped.goto == "report"
    assert any("profile_final is off" in w for w in skipped.update["roofline"].warnings)
    assert node.profile(state, SimpleNamespace(context=Context())).goto == "report" and len(profiled) == 1
    going_on = node.profile({**state, "stop_reason": None}, SimpleNamespace(context=Context(profile_final=False)))
    assert going_on.goto == "judger" and len(profiled) == 2
