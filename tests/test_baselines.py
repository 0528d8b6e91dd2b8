"""Baselines a sceptic accepts: torch.compile at its strongest (max-autotune, cached per problem,
bounded by a limit), the CUDA-graph replay, the gap closed, and the method stated from the settings used."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from helpers import DATA

from kernelopt.harness.measure.timing import TimingConfig, timing_config_for
from kernelopt.harness.sandbox.baseline_client import compile_cache_for
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.records import Baselines, FloorEstimate, KernelRecord, Timing, TimingMethod
from kernelopt.report.figures import baseline_text, figures, gap_closed, launch_note, suite_figures
from kernelopt.report.run import render_markdown, summarize_run, write_reports
from kernelopt.report.suite import render_markdown as suite_markdown
from kernelopt.report.summary import RunSummary
from kernelopt.suite import ProblemResult, finished_results, read_suite

ADD = DATA / "add" / "problem.py"
FLOOR = FloorEstimate(min_bytes=4_800_000, flops=1_200_000.0, dtype="fp32")  # 0.001 ms on an H200's 4.8 TB/s
GPU_METHOD = TimingMethod(timer="CUDA events", flush_l2_bytes=128 * 2**20, warmup_ms=25.0, min_warmup_runs=2,
                          target_total_ms=500.0, min_trials=10, max_trials=1000)


def _timing(ms: float, clock: str = "cuda_events", trials: int = 200) -> Timing:
    return Timing(median_ms=ms, p25_ms=ms * 0.95, p75_ms=ms * 1.05, min_ms=ms * 0.9, max_ms=ms * 1.3, trials=trials,
                  clock=clock)  # type: ignore[arg-type]


def test_gap_closed_is_the_share_of_the_distance_to_the_floor():
    assert gap_closed(0.10, 0.06, 0.02) == (pytest.approx(0.5), "")
    assert gap_closed(0.10, 0.02, 0.02)[0] == pytest.approx(1.0)  # at the floor
    share, why = gap_closed(0.10, 0.14, 0.02)  # slower than the baseline: negative, said as such
    assert share == pytest.approx(-0.5) and why == ""
    assert gap_closed(0.10, 0.05, None) == (None, "no floor time (GPU times and a known GPU are needed)")
    share, why = gap_closed(0.02, 0.01, 0.02)
    assert share is None and "already at or below the floor" in why


def test_the_strongest_compile_and_the_best_baseline_are_the_fastest():
    baselines = Baselines(eager=_timing(0.050), compile=_timing(0.040), max_autotune=_timing(0.030),
                          cuda_graph=_timing(0.020))
    assert baselines.strongest_compile() == ("max-autotune", baselines.max_autotune)
    assert baselines.best() == ("CUDA graph of eager", baselines.cuda_graph)
    slower_autotune = dataclasses.replace(baselines, max_autotune=_timing(0.045), cuda_graph=None)
    assert slower_autotune.strongest_compile() == ("default", slower_autotune.compile)
    assert slower_autotune.best() == ("torch.compile (default)", slower_autotune.compile)
    assert Baselines(eager=None, compile=None).best() is None


def _state(tmp_path: Path, baselines: Baselines, best_ms: float) -> dict:
    return {"run_dir": str(tmp_path), "problem_path": "/p/add.py", "round": 1, "gpu_key": "H200",
            "stop_reason": "max_rounds", "attempts": [],
            "best": KernelRecord(str(tmp_path / "k.py"), "h", _timing(best_ms), 1), "baselines": baselines}


def test_report_names_the_mode_of_every_speedup_and_states_its_method(tmp_path):
    baselines = Baselines(
        eager=_timing(0.050), compile=_timing(0.040), floor=FLOOR, max_autotune=_timing(0.032),
        max_autotune_cache_hit=True, max_autotune_compile_s=1.5, compile_s=4.0, cuda_graph=_timing(0.020),
        wall_s=12.5, method=GPU_METHOD, max_autotune_limit_s=600.0,
    )
    summary = summarize_run(_state(tmp_path, baselines, 0.016))
    assert (tmp_path / "roofline.png") in write_reports(summary, tmp_path)  # every baseline drawn on the roof
    assert summary.strongest_compile == "max-autotune"
    assert summary.speedup_vs_strongest_compile == pytest.approx(2.0)
    assert summary.best_baseline == "CUDA graph of eager"
    assert summary.speedup_vs_best_baseline == pytest.approx(1.25)
    floor_ms = summary.floor_ms
    assert floor_ms == pytest.approx(4_800_000 / 4.8e12 * 1e3, rel=0.01)  # the H200's datasheet bandwidth
    assert summary.gap_closed == pytest.approx((0.020 - 0.016) / (0.020 - floor_ms))
    text = render_markdown(summary)
    assert "| torch.compile (default) | 0.0400 | 0.0040 | 200 | 2.5x |" in text
    assert "| torch.compile (max-autotune) | 0.0320 | 0.0032 | 200 | 2x |" in text
    assert "| CUDA graph of eager | 0.0200 | 0.0020 | 200 | 1.25x |" in text
    assert ("- Against the strongest torch.compile (the faster of the modes timed): 2x torch.compile (max-autotune)"
            in text)
    assert "- Against the best baseline of all: 1.25x CUDA graph of eager" in text
    assert f"- Gap closed: {summary.gap_closed:.0%} of the distance from the best baseline (0.02 ms)" in text
    assert "- Launch overhead: launch overhead, not the kernel, dominates eager" in text  # 0.020 <= half of 0.050
    assert "max-autotune in 1.5 s (taken from Inductor's cache)" in text and "took 12.5 s of wall time" in text
    method = text.split("## Method", 1)[1]
    assert "CUDA events" in method and "128 MiB written" in method  # the flush the run used, not a fixed paragraph
    assert "at least 25 ms of calls and at least 2 calls" in method and "at least 10 and at most 1000" in method
    assert "median of the trials" in method and "interquartile range" in method and "after 600 s" in method


def test_a_slower_kernel_has_a_negative_gap_and_a_failed_autotune_is_marked(tmp_path):
    baselines = Baselines(eager=_timing(0.5), compile=_timing(0.4), floor=FLOOR, method=GPU_METHOD,
                          max_autotune_error="the max-autotune compile ran past its limit of 600 s and was stopped")
    summary = summarize_run(_state(tmp_path, baselines, 0.45))
    assert summary.strongest_compile == "default" and summary.gap_closed < 0
    text = render_markdown(summary)
    assert "| torch.compile (max-autotune) | failed: the max-autotune compile ran past its limit of 600 s" in text
    assert "(the only mode timed): 0.889x torch.compile (default)" in text
    assert "(slower than the best baseline)" in text and "Gap closed: -" in text


def test_method_on_the_host_clock_says_no_flush_and_its_trials():
    settings = HarnessSettings(use_cuda=False, timing=TimingConfig(interpreter_trials=5))
    from kernelopt.harness.sandbox.baseline_client import method_of

    method = method_of(settings)
    assert method.timer.startswith("host clock") and method.flush_l2_bytes == 0 and method.min_trials == 5
    on_gpu = method_of(HarnessSettings(use_cuda=True, timing=timing_config_for(50.0)))
    assert on_gpu.timer == "CUDA events" and on_gpu.flush_l2_bytes == 100 * 2**20  # twice a 50 MB L2


def test_old_reports_and_results_still_load_and_render(tmp_path):
    """A report.json or a problems/NAME.json written before these baselines existed."""
    old_summary = {"problem": "/p.py", "stop_reason": "max_rounds", "rounds": 1, "gpu": "H200",
                   "best_kernel_path": None, "is_gpu_time": True, "clock": "cuda_events", "eager_ms": 0.1,
                   "compile_ms": 0.08, "attempts": []}
    text = render_markdown(RunSummary.read(old_summary))
    assert "| PyTorch eager | 0.1000 |  |  |" in text and "predates the record of its timing settings" in text
    old_baselines = Baselines(eager=_timing(0.1), compile=None, compile_error=None, floor=FLOOR)
    assert old_baselines.max_autotune is None and old_baselines.best() == ("PyTorch eager", old_baselines.eager)
    out = tmp_path / "suite"
    (out / "problems").mkdir(parents=True)
    settings = {"optimize": False, "max_rounds": 5, "model": None, "base_url": None, "time_compile": True,
                "timeout_s": None, "mem_limit_gb": None}
    (out / "suite.json").write_text(json.dumps({"problems_dir": str(DATA / "suite" / "problems"), "kernels_dir": None,
                                                "out_dir": str(out), "settings": settings}))
    new = dataclasses.asdict(ProblemResult("1_Add", "correct", "correct on 3 cases", best_ms=0.01))
    old = {k: v for k, v in new.items() if k != "figures"}
    (out / "problems" / "1_Add.json").write_text(json.dumps(old))
    suite = read_suite(out)
    assert suite.settings.max_autotune is True  # a suite.json without the setting
    assert finished_results(suite)["1_Add"].figures is None
    from kernelopt.suite import summarize

    assert summarize(list(finished_results(suite).values()), 1)["gap_closed"]["undefined"] == {"1_Add": ""}


def _problem(name: str, status: str, best_ms: float | None, best_base_ms: float, gap: float | None,
             note: str = "") -> ProblemResult:
    figures = {"best_baseline": "PyTorch eager", "best_baseline_ms": best_base_ms,
               "speedup_vs_best_baseline": best_base_ms / best_ms if best_ms else None,
               "strongest_compile": "max-autotune" if best_ms else None,
               "speedup_vs_strongest_compile": 1.5 if best_ms else None, "gap_closed": gap, "gap_closed_note": note,
               "baselines_wall_s": 10.0, "method": dataclasses.asdict(GPU_METHOD) if best_ms else None}
    return ProblemResult(name, status, "why", is_gpu_time=True, eager_ms=0.1, best_ms=best_ms,
                         speedup_vs_eager=0.1 / best_ms if best_ms else None, figures=figures)


def test_suite_aggregates_the_gap_as_mean_and_median_and_names_what_it_leaves_out():
    results = [_problem("a", "correct", 0.05, 0.1, 0.8), _problem("b", "correct", 0.2, 0.1, -1.0),
               _problem("c", "correct", 0.08, 0.1, 0.2), _problem("d", "rejected", None, 0.1, None, "no kernel time"),
               _problem("e", "correct", 0.05, 0.1, None, "the best baseline is already at or below the floor")]
    figures = suite_figures(results, total=5)
    assert figures["gap_closed"]["mean"] == pytest.approx(0.0) and figures["gap_closed"]["median"] == pytest.approx(0.2)
    assert figures["gap_closed"]["negative"] == ["b"] and list(figures["gap_closed"]["undefined"]) == ["e"]
    assert figures["excluded"] == {"d": "rejected"}
    assert figures["geomean_speedup_vs_strongest_compile"] == pytest.approx(1.5)
    assert figures["fast_p_vs_best_baseline"]["1"] == pytest.approx(3 / 5)  # a, c, e beat their best baseline
    assert figures["baselines_wall_s"] == 50.0
    from kernelopt.suite import summarize

    data = {"suite": {"problems_dir": "/p", "kernels_dir": "/k", "out_dir": "/o",
                      "settings": {"optimize": False, "model": None, "max_rounds": 1}},
            "summary": summarize(results, 5), "problems": [dataclasses.asdict(r) for r in results]}
    text = suite_markdown(data, has_plot=False)
    assert "| 0% / 20% |" in text  # the gap closed: mean / median
    assert "would refuse" not in text  # no problem's defaults were refused
    results[2].figures.update(refused_baselines={"torch.compile": "output 0"}, speedup_vs_compile_full=1.3)
    text = suite_markdown({**data, "summary": summarize(results, 5)}, has_plot=False)
    assert ("- The verifier would refuse PyTorch's default baselines as kernels on c (reduced precision); "
            "the kernel against torch.compile at the verifier's precision: c 1.3x.") in text
    assert "- Geomeans over the 4 correct problems; excluded: d (rejected)" in text
    assert "negative (slower than the best baseline) on b" in text and "undefined on e (the best baseline" in text
    assert "| 1.5x (max-autotune) |" in text
    assert "- Strongest torch.compile per problem: max-autotune on a, b, c, e" in text
    method = text.split("## Method", 1)[1]
    assert "128 MiB written" in method and "fast_p: the share of all 5 problems" in method
    assert "not a geometric mean, which a negative share makes undefined" in method


def test_launch_overhead_is_said_only_when_it_weighs():
    assert launch_note(0.050, 0.040, 0.030) == "launch overhead is 20% of eager's time (CUDA-graph replay 0.0400 ms)"
    assert "dominates" in (launch_note(0.050, 0.010, 0.030) or "")
    assert "no CUDA-graph baseline was timed" in (launch_note(0.5, None, 0.02) or "")
    assert launch_note(0.5, None, 0.2) is None


def test_the_compile_cache_is_one_folder_per_problem(tmp_path):
    first = compile_cache_for(ADD, str(tmp_path))
    assert first.parent == tmp_path.resolve() and first == compile_cache_for(ADD, str(tmp_path))
    assert compile_cache_for(DATA / "derived" / "problem.py", str(tmp_path)) != first


@pytest.mark.slow
def test_max_autotune_is_timed_and_a_second_process_takes_it_from_the_cache(tmp_path, monkeypatch):
    """Two harnesses, as two runs of one problem would be: the second finds the compiled graph."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # a device lock of its own: no wait on others
    settings = HarnessSettings.detect(seeds=1, time_compile=False, max_autotune=True,
                                      compile_cache_dir=str(tmp_path / "cache"))
    found = []
    for run in ("first", "second"):
        verifier = Verifier(ADD, tmp_path / run, settings)
        try:
            found.append(verifier.baselines())
        finally:
            verifier.close()
    first, second = found
    assert first.max_autotune is not None and second.max_autotune is not None, (first, second)
    assert first.max_autotune.clock == "cpu" and first.max_autotune.trials >= 1
    assert first.max_autotune_cache_hit is False and second.max_autotune_cache_hit is True
    assert first.wall_s and first.wall_s >= (first.max_autotune_compile_s or 0)
    assert first.compile is None and first.cuda_graph is None  # not asked; no GPU for a graph
    assert any((tmp_path / "cache").rglob("*")), "nothing was cached"


@pytest.mark.slow
def test_a_max_autotune_compile_past_its_limit_is_marked_and_the_baselines_go_on(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    settings = HarnessSettings.detect(seeds=1, time_compile=False, max_autotune=True, max_autotune_limit_s=2.0,
                                      compile_cache_dir=str(tmp_path / "cache"))
    verifier = Verifier(ADD, tmp_path / "run", settings)
    try:
        baselines = verifier.baselines()
    finally:
        verifier.close()
    assert baselines.max_autotune is None and baselines.eager is not None
    assert baselines.max_autotune_error and "limit of 2 s" in baselines.max_autotune_error, baselines
    assert baselines.strongest_compile() is None and baselines.best() == ("PyTorch eager", baselines.eager)


def test_a_checkpoint_from_before_the_stronger_baselines_resumes():
    """A Baselines checkpointed with the four fields it had: read back, the new ones take their defaults."""
    from kernelopt.checkpoint import serializer

    @dataclasses.dataclass(frozen=True)
    class Baselines:  # the record as it was, under its own module and name
        eager: Timing | None
        compile: Timing | None
        compile_error: str | None = None
        floor: FloorEstimate | None = None

    Baselines.__module__ = "kernelopt.records"
    old = Baselines(eager=_timing(0.1, "cpu"), compile=None, compile_error="failed", floor=FLOOR)
    back = serializer().loads_typed(serializer().dumps_typed({"baselines": old}))["baselines"]
    assert type(back).__qualname__ == "Baselines" and type(back).__module__ == "kernelopt.records"
    assert back.eager == old.eager and back.compile_error == "failed" and back.floor == FLOOR
    assert back.max_autotune is None and back.method is None and back.best() == ("PyTorch eager", old.eager)


PRECISION = DATA / "precision" / "problem.py"


@pytest.mark.slow
def test_a_baseline_the_yardstick_refuses_is_named_and_timed_again_at_full_precision(tmp_path, monkeypatch):
    """PyTorch's defaults run the product at TF32 (as a cuDNN convolution does): the verifier would refuse
    that output of a kernel, so the baseline is named as refused, with why, and timed with TF32 off.
    An exact problem's baselines are not, nor is one that changes its inputs in place (each is judged on
    fresh inputs)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    found = {}
    for name, problem in (("tf32", PRECISION), ("exact", ADD), ("inplace", DATA / "precision" / "inplace.py")):
        verifier = Verifier(problem, tmp_path / name, settings)
        try:
            found[name] = verifier.baselines()
        finally:
            verifier.close()
    tf32, exact = found["tf32"], found["exact"]
    assert set(tf32.refused) == {"PyTorch eager"}, tf32.refused
    assert "output 0" in tf32.refused["PyTorch eager"]
    assert tf32.eager is not None and tf32.eager_full is not None and tf32.eager_full.trials >= 1
    assert tf32.compile_full is None and tf32.full_error is None  # torch.compile was not asked for
    assert "PyTorch eager at full precision" in tf32.every()
    assert exact.refused == {} and exact.eager_full is None and exact.full_precision() == {}
    assert found["inplace"].refused == {} and found["inplace"].judge_error is None  # judged on fresh inputs
    assert tf32.refused_full == {} and tf32.judge_error is None  # at full precision the product is accepted
    assert torch.backends.cudnn.allow_tf32  # the user's defaults are left as they were


def test_only_baselines_at_the_verifiers_precision_raise_the_roof():
    """H200, level 2's 1_Conv2D_ReLU_BiasAdd: torch.compile at 1.639 ms (cuDNN at TF32) raised the fp32
    ceiling from 136.8 to 182.9 TFLOP/s, past what any fp32-accurate kernel can reach."""
    from kernelopt.hardware.roofline import RooflineAnalyzer, baseline_times_ms, ceiling_times_ms
    from kernelopt.hardware.specs import get_gpu_spec

    conv = FloorEstimate(min_bytes=1_577_616_384, flops=299_649_466_368.0, dtype="fp32")
    refused = {"PyTorch eager": "output 0: 1200 of 8.4M elements", "torch.compile": "output 0: 1180 of 8.4M"}
    baselines = Baselines(eager=_timing(3.924), compile=_timing(1.639), cuda_graph=_timing(3.9), refused=refused,
                          eager_full=_timing(7.95), compile_full=_timing(7.87))
    assert ceiling_times_ms(baselines) == {"PyTorch eager at full precision": 7.95,
                                           "torch.compile (default) at full precision": 7.87}
    every = baseline_times_ms(baselines)
    assert every["torch.compile"] == 1.639 and every["CUDA graph of eager"] == 3.9  # the stop still counts them
    analyzer = RooflineAnalyzer(get_gpu_spec("H200"), peak_tflops={"fp32": 136.8})
    honest = analyzer.analyze(None, conv, measured_time_ms=6.04, baselines_ms=every,
                              ceiling_ms=ceiling_times_ms(baselines))
    assert honest.peak_tflops == pytest.approx(136.8) and not any("raised" in w for w in honest.warnings)
    assert not honest.at_roofline  # the TF32 baseline is faster: no stop while it is
    old = analyzer.analyze(None, conv, measured_time_ms=6.04, baselines_ms=every)
    assert old.peak_tflops == pytest.approx(conv.flops / 1.639e-3 / 1e12)  # what the refused one would raise it to
    only_eager = Baselines(eager=_timing(3.924), compile=_timing(1.9), refused={"PyTorch eager": "output 0"},
                           eager_full=_timing(7.95), max_autotune=_timing(1.5))
    assert ceiling_times_ms(only_eager) == {"torch.compile": 1.9, "PyTorch eager at full precision": 7.95}
    still = dataclasses.replace(baselines, refused_full={"torch.compile": "output 0: 30 of 8.4M"})
    assert ceiling_times_ms(still) == {"PyTorch eager at full precision": 7.95}  # its fault is not precision
    plain = Baselines(eager=_timing(3.924), compile=_timing(1.639))
    assert ceiling_times_ms(plain) == baseline_times_ms(plain)


def test_the_reports_say_which_baselines_the_verifier_would_refuse(tmp_path):
    both = {"PyTorch eager": "output 0: 9 of 64", "torch.compile": "output 0: 8 of 64"}
    baselines = Baselines(eager=_timing(3.924), compile=_timing(1.639), refused=both, eager_full=_timing(7.95),
                          compile_full=_timing(7.87), floor=FLOOR, method=GPU_METHOD)
    text = render_markdown(summarize_run(_state(tmp_path, baselines, 6.04)))
    assert "| torch.compile (default) at full precision | 7.8700 | 0.7870 | 200 | 1.3x |" in text
    assert ("- Precision: the verifier would refuse PyTorch eager and torch.compile as a kernel (output 0: 9 of 64): "
            "PyTorch's defaults run part of this problem at reduced precision") in text
    assert "- Against torch.compile at the verifier's precision: 1.3x torch.compile (default) at full precision" in text
    # the headline keeps the default, and a full-precision time is never the best baseline
    assert "- Against the best baseline of all: 0.271x torch.compile (default)" in text
    found = figures(baselines, 6.04, 1.817, True)
    assert found["speedup_vs_compile_full"] == pytest.approx(7.87 / 6.04)
    text = baseline_text({**found, "eager_ms": 3.924, "compile_ms": 1.639, "time_ms": 6.04, "is_gpu_time": True})
    assert "vs torch.compile (default) at full precision: 7.8700 ms (1.3x faster)" in text
    assert "the verifier would refuse PyTorch eager and torch.compile as a kernel (output 0: 9 of 64)" in text
    # only eager refused: the default compile, which the verifier accepts, is the one to compare with
    only_eager = dataclasses.replace(baselines, refused={"PyTorch eager": "output 0: 9 of 64"})
    found = figures(only_eager, 6.04, 1.817, True)
    assert found["compile_at_precision"] == "torch.compile (default)"
    assert found["speedup_vs_compile_full"] == pytest.approx(1.639 / 6.04)
    # still refused at full precision: the fault is not precision, and the report says so
    still = dataclasses.replace(baselines, refused_full={"torch.compile": "output 0: 8 of 64"})
    found = figures(still, 6.04, 1.817, True)
    assert found["compile_at_precision"] is None and found["speedup_vs_compile_full"] is None
    assert "at full precision it still refuses torch.compile (output 0: 8 of 64): not a matter of precision" in (
        baseline_text({**found, "time_ms": 6.04, "is_gpu_time": True}))
    assert figures(Baselines(eager=_timing(1.0), compile=_timing(1.0)), 1.0, 0.5, True)["refused_baselines"] is None
