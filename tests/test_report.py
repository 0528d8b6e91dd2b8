"""The end-of-run report: report.json, report.md and roofline.png, and `kernelopt report` re-rendering them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from test_cli import _show, kernelopt

from kernelopt.records import Attempt, Baselines, FloorEstimate, KernelRecord, Roofline, Timing
from kernelopt.report.plot import roofline_geometry
from kernelopt.report.run import NOT_GPU_NOTE, render_markdown, summarize_run, write_reports

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FLOOR = FloorEstimate(min_bytes=48_000_000, flops=12_000_000.0, dtype="fp32")  # 0.25 FLOP/byte


def _timing(ms: float, clock: str) -> Timing:
    return Timing(median_ms=ms, p25_ms=ms * 0.9, p75_ms=ms * 1.1, min_ms=ms * 0.8, max_ms=ms * 1.2, trials=100,
                  clock=clock)  # type: ignore[arg-type]


def _state(run_dir: Path, clock: str = "cuda_events", floor: FloorEstimate | None = FLOOR) -> dict:
    kernels = run_dir / "kernels"
    attempts = [
        Attempt(round=0, repair=0, kernel_path=str(kernels / "r000_a0.py"), source_hash="h0", outcome="faster",
                change="the starting kernel", time_ms=0.2, new_best=True),
        Attempt(round=1, repair=0, kernel_path=str(kernels / "r001_a0.py"), source_hash="h1", outcome="incorrect",
                change="BLOCK_SIZE 64 -> 128",
                error="incorrect: 12 of 4096 values outside atol=0.0001 | rtol=0.0001", rule="incorrect"),
        Attempt(round=1, repair=1, kernel_path=str(kernels / "r001_a1.py"), source_hash="h2", outcome="faster",
                change="repair: mask the tail", time_ms=0.05,
                speedup_vs_best=4.0, new_best=True),
        Attempt(round=2, repair=0, kernel_path=str(kernels / "r002_a0.py"), source_hash="h3", outcome="slower",
                change="num_warps 4 -> 8", time_ms=0.08,
                speedup_vs_best=0.625),
    ]
    roofline = Roofline(
        bottleneck="memory", compute_sol_pct=None, memory_sol_pct=None, efficiency_pct=20.0, headroom_pct=80.0,
        at_roofline=False, uses_tensor_cores=None, warnings=("NCU metric x is missing",), source="floor",
        measured_time_ms=0.05, floor_time_ms=0.01, min_bytes=FLOOR.min_bytes, flops=FLOOR.flops,
    )
    return {
        "run_dir": str(run_dir), "problem_path": "/problems/add.py", "round": 2, "gpu_key": "H200",
        "stop_reason": "max_rounds", "roofline": roofline, "attempts": attempts,
        "best": KernelRecord(str(kernels / "r001_a1.py"), "h2", _timing(0.05, clock), 1),
        "baselines": Baselines(eager=_timing(0.1, clock), compile=_timing(0.08, clock), floor=floor),
    }


def test_summary_and_markdown_on_gpu_times(tmp_path):
    summary = summarize_run(_state(tmp_path))
    write_reports(summary, tmp_path)
    assert json.loads((tmp_path / "report.json").read_text()) == json.loads(json.dumps(summary.to_json()))
    assert summary.speedup_vs_eager == pytest.approx(2.0) and summary.speedup_vs_compile == pytest.approx(1.6)
    text = render_markdown(summary)
    assert "- Problem: `/problems/add.py`" in text and "H200 (NVIDIA H200 SXM 141GB)" in text
    assert "- Stop reason: max_rounds" in text and "(round 1)" in text
    assert "| PyTorch eager | 0.1000 | 0.0200 | 100 | 2x |" in text
    assert "| torch.compile (default) | 0.0800 | 0.0160 | 100 | 1.6x |" in text
    assert NOT_GPU_NOTE not in text  # CUDA-event times need no caveat
    assert "ridge point 68.72 FLOP/byte" in text and "arithmetic intensity 0.25 FLOP/byte" in text
    assert ("fp32 peak 329.833 TFLOP/s (three split products: a third of fp16's 989.5 or TF32's 494.7; FMA 67)"
            in text)
    assert "- Warning: NCU metric x is missing" in text and "Efficiency: 20%" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 4  # every attempt, the failed one too
    # every verdict said once: the rule in brackets, then the reason without the same word again
    assert "| incorrect | - |" in rows[1]
    assert "[incorrect] 12 of 4096 values outside atol=0.0001 \\| rtol=0.0001" in rows[1]
    assert "incorrect: incorrect" not in text and "[incorrect] incorrect" not in text
    assert "| the starting kernel | the baseline |" in rows[0] and "faster" not in rows[0]  # nothing before it
    assert "**faster** (new best)" in rows[2] and "4x" in rows[2] and "`r001_a1.py`" in rows[2]


def test_interpreter_times_carry_the_caveat_and_no_speedup(tmp_path):
    summary = summarize_run(_state(tmp_path, clock="interpreter"))
    text = render_markdown(summary)
    assert NOT_GPU_NOTE in text
    assert "| PyTorch eager | 0.1000 | 0.0200 | 100 | not comparable |" in text and "2x" not in text
    # no GPU here and none named: H200 is only the prompts' aim, and no efficiency or floor time is claimed
    assert "Target GPU: no GPU; prompts aim at H200" in text
    assert "Bottleneck: memory-bound at the interpreter's size" in text
    assert "ridge point" not in text and "Efficiency:" not in text and "Floor time" not in text
    assert "efficiency against the floor is not computed" in text and "No measured time" not in text


def test_summary_lines_do_not_contradict_the_best_time(tmp_path):
    from kernelopt.cli_run import final_text as _final_text

    state = _state(tmp_path, clock="interpreter")
    state["roofline"] = dataclasses.replace(
        state["roofline"], efficiency_pct=None,
        warnings=("No measured time: efficiency against the floor is unknown.",
                  "times are Triton-interpreter (CPU) times, not GPU times: efficiency against the floor is "
                  "not computed"),
    )
    text = _final_text(summarize_run(state))
    assert "best time: 0.0500 ms (Triton interpreter on CPU: not GPU performance)" in text
    assert "No measured time" not in text and text.count("not computed") == 1, text
    assert "efficiency n/a" not in text and "SOL" not in text  # no GPU figures for interpreter times


def test_a_named_gpu_keeps_its_roof_beside_interpreter_times(tmp_path):
    summary = summarize_run(_state(tmp_path, clock="interpreter"), gpu_named=True)
    text = render_markdown(summary)
    assert "Target GPU: H200 (NVIDIA H200 SXM 141GB)" in text and "ridge point 68.72 FLOP/byte" in text
    assert write_reports(summary, tmp_path)[-1] == tmp_path / "roofline.png"


def test_roofline_geometry_uses_the_dtype_peak_and_floor_intensity(tmp_path):
    summary = summarize_run(_state(tmp_path))
    geo = roofline_geometry(summary)
    assert geo is not None
    assert geo.peak_flops_per_s == pytest.approx(989.5e12 / 3) and geo.bandwidth_bytes_per_s == pytest.approx(4.8e12)
    assert geo.ridge_flops_per_byte == pytest.approx(989.5 / 3 / 4.8)  # the fp32 roof: three fp16 products
    assert geo.intensity_flops_per_byte == pytest.approx(0.25)
    assert geo.attainable_flops_per_s == pytest.approx(4.8e12 * 0.25)  # below the ridge: on the slope
    assert [p.label for p in geo.attempts] == ["r0", "r1.1", "r2"] and geo.untimed_attempts == 1
    assert [p.best for p in geo.attempts] == [False, True, False]  # the last new best
    assert geo.attempts[1].flops_per_s == pytest.approx(12e6 / 0.05e-3)
    assert geo.eager_flops_per_s == pytest.approx(12e6 / 0.1e-3)

    half = summarize_run(_state(tmp_path, floor=FloorEstimate(1000, 1e6, "bf16")))
    geo = roofline_geometry(half)
    assert geo is not None and geo.peak_flops_per_s == pytest.approx(989.5e12)
    assert geo.attainable_flops_per_s == pytest.approx(989.5e12)  # 1000 FLOP/byte: past the ridge


def test_reports_are_written_and_without_a_floor_there_is_no_picture(tmp_path):
    summary = summarize_run(_state(tmp_path, clock="interpreter"))
    written = write_reports(summary, tmp_path)
    assert written == [tmp_path / "report.json", tmp_path / "report.md", tmp_path / "roofline.png"]
    assert (tmp_path / "roofline.png").read_bytes().startswith(PNG_MAGIC)
    assert "![time per attempt](roofline.png)" in (tmp_path / "report.md").read_text()  # interpreter: no roof

    bare = summarize_run(_state(tmp_path, floor=None))  # GPU times without a floor: no roofline to draw
    assert write_reports(bare, tmp_path) == [tmp_path / "report.json", tmp_path / "report.md"]
    assert not (tmp_path / "roofline.png").exists()  # no stale picture beside a report without one
    assert "roofline.png" not in (tmp_path / "report.md").read_text()


def test_report_command_re_renders_from_report_json(tmp_path):
    write_reports(summarize_run(_state(tmp_path, clock="interpreter")), tmp_path)
    summary = json.loads((tmp_path / "report.json").read_text())
    summary["stop_reason"] = "no_gain"  # the command renders what report.json says
    (tmp_path / "report.json").write_text(json.dumps(summary))
    proc = kernelopt("report", tmp_path, cwd=tmp_path)
    assert proc.returncode == 0, _show(proc)
    assert proc.stdout.split() == [str(tmp_path / name) for name in ("report.json", "report.md", "roofline.png")]
    assert "- Stop reason: no_gain" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "roofline.png").read_bytes().startswith(PNG_MAGIC)


def test_report_command_without_a_run_is_bad_input(tmp_path):
    proc = kernelopt("report", tmp_path, cwd=tmp_path)
    assert proc.returncode == 2, _show(proc)
    assert "report.json nor run.json" in proc.stderr and "Traceback" not in proc.stderr


def test_verdicts_taken_on_another_gpu_say_where(tmp_path):
    state = _state(tmp_path)
    kernels = tmp_path / "kernels"
    state["attempts"] = [
        *state["attempts"],
        Attempt(round=2, repair=0, kernel_path=str(kernels / "r002_a0_b1.py"), source_hash="h4", outcome="outpaced",
                change="BLOCK_SIZE 128 -> 1024", time_ms=0.045,
                speedup_vs_best=1.1, where="gpu 1"),
        Attempt(round=2, repair=0, kernel_path=str(kernels / "r002_a0_b2.py"), source_hash="h5", outcome="slower",
                change="BLOCK_SIZE 128 -> 64", time_ms=0.09,
                speedup_vs_best=0.5, where="gpu 1"),
    ]
    rows = [line for line in render_markdown(summarize_run(state)).splitlines()
            if line.startswith("| 2 |")]
    assert "faster than the best, not the step's fastest (on gpu 1)" in rows[1] and "1.1x" in rows[1]
    assert "| slower (on gpu 1) |" in rows[2] and "(on gpu" not in rows[0]  # the run's own GPU goes unsaid


def test_the_report_leads_with_start_to_best_and_shows_diagnoses_and_the_diff(tmp_path):
    """The headline says start -> best with the factor; each attempt has its round's diagnosis
    (from events.jsonl); the best kernel is shown against the start, also after the run folder moved."""
    run = tmp_path / "run"
    (run / "kernels").mkdir(parents=True)
    (run / "kernels" / "r000_a0.py").write_text("BLOCK_SIZE = 64\nx = 1\n")
    (run / "best_kernel.py").write_text("BLOCK_SIZE = 1024\nx = 1\n")
    (run / "events.jsonl").write_text(
        json.dumps({"event": "diagnosis", "round": 1, "category": "latency", "root_cause": "64-element programs"})
        + "\n{cut by a kill\n"
    )
    moved = tmp_path / "moved"
    run.rename(moved)  # the state's paths still name the old folder
    summary = summarize_run({**_state(run), "run_dir": str(moved)})
    write_reports(summary, moved)
    text = (moved / "report.md").read_text()
    assert "**start -> best: 0.2000 ms -> 0.0500 ms (4.00x)**" in text
    assert "| 1 | 0 | latency: 64-element programs |" in text and "| 2 | 0 | - |" in text
    assert "-BLOCK_SIZE = 64\n+BLOCK_SIZE = 1024" in text
    assert (moved / "best_vs_start.diff").read_text().startswith("--- start/r000_a0.py")


def test_report_re_renders_a_moved_run_folder_with_its_new_paths(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    write_reports(summarize_run(_state(run, clock="interpreter")), run)
    moved = tmp_path / "elsewhere"
    run.rename(moved)
    proc = kernelopt("report", moved, cwd=tmp_path)
    assert proc.returncode == 0, _show(proc)
    text = (moved / "report.md").read_text()
    assert f"`{moved / 'best_kernel.py'}`" in text and str(run) + "/" not in text


def test_suite_reasons_are_said_once_without_log_paths():
    from kernelopt.report.suite import _reason_cell

    wrong = {"rule": "incorrect", "reason": "incorrect: case 2, output 0: 3 of 64 elements outside atol",
             "stop_reason": None}
    assert _reason_cell(wrong).startswith("incorrect: case 2") and "[incorrect]" not in _reason_cell(wrong)
    crash = {"rule": "crash", "reason": "the candidate's process crashed with SIGSEGV (log: /tmp/x/worker.log)",
             "stop_reason": None}
    assert _reason_cell(crash) == "[crash] the candidate's process crashed with SIGSEGV"
    optimized = {"rule": None, "reason": "stopped: max_rounds", "stop_reason": "max_rounds"}
    assert _reason_cell(optimized) == "-"  # the stop column says it


def test_a_sweep_row_is_credited_only_with_its_own_rounds_verification(tmp_path):
    """The centre of round 2's sweep is round 1's best: it was not verified in round 2, so it is
    not "faster (new best)" there; a round that swept nothing has no table."""
    from kernelopt.report.sweep import _numbers, sweep_tables

    (tmp_path / "sweeps").mkdir()
    best = tmp_path / "r001.py"
    best.write_text("BLOCK = 128\n")
    other = tmp_path / "r002.py"
    other.write_text("BLOCK = 256\n")
    rows = [{"path": str(best), "config": {"BLOCK": 128}, "time_ms": 1.0, "trials": 9, "stage": 2},
            {"path": str(other), "config": {"BLOCK": 256}, "time_ms": 1.2, "trials": 9, "stage": 2}]
    for n, table_rows in ((1, rows[:1]), (2, rows), (3, [])):
        (tmp_path / "sweeps" / f"round-00{n}.json").write_text(json.dumps({"round": n, "rows": table_rows}))
    attempts = [{"round": 1, "kernel_path": str(best), "outcome": "faster", "new_best": True},
                {"round": 2, "kernel_path": str(other), "outcome": "slower", "new_best": False}]
    tables = sweep_tables(tmp_path, attempts)
    assert [t["round"] for t in tables] == [1, 2]
    assert tables[0]["rows"][0]["verified"] == "faster (new best)"
    assert [r["verified"] for r in tables[1]["rows"]] == [None, "slower"]
    labels = ["num_warps=16", "num_warps=2", "num_warps=8", "num_warps=4"]
    assert sorted(labels, key=_numbers) == ["num_warps=2", "num_warps=4", "num_warps=8", "num_warps=16"]


def test_a_move_that_applied_says_whether_it_was_timed_or_how_every_configuration_failed() -> None:
    from kernelopt.report.sweep import moves_markdown

    def row(move: str, time_ms: float | None, rule: str | None = None) -> dict[str, object]:
        return {"move": move, "config": {"BLOCK_M": 128}, "time_ms": time_ms, "rule": rule}

    note = {"family": "matmul", "best_structure": "matmul.grouped", "diagnosis": "memory",
            "first": ["matmul.grouped", "matmul.tma"],
            "applied": [{"name": n, "why": "-"} for n in ("matmul.grouped", "matmul.tma", "matmul.persistent")],
            "skipped": [{"name": "matmul.split_k", "why": "K is short"}]}
    tables = [{"round": 1, "moves": note, "rows": [
        row("matmul.grouped", 0.21), row("matmul.grouped", 0.1966),
        row("matmul.tma", None, "torch-compute-at-runtime"), row("matmul.tma", None, "runtime-error"),
        row("matmul.persistent", None, "time-budget"),  # the budget ran out before it: not a failure
    ]}]
    text = "\n".join(moves_markdown(tables))
    assert "**matmul.grouped** (applies; best swept 0.1966 ms)" in text
    assert "**matmul.tma** (applies; every configuration failed: runtime-error, torch-compute-at-runtime)" in text
    assert "**matmul.persistent** (applies; not timed)" in text  # only a row the budget skipped: never run
    assert "matmul.split_k does not apply: K is short" in text


def test_the_best_kernel_s_structure_is_the_move_of_the_swept_configuration_that_became_the_best() -> None:
    # 82 on the H100: round 1's sweep made the best from conv.depthwise_rows and the run stopped at the roofline, so
    # no later sweep wrote a note; the report named the starting kernel's structure, from round 1's note.
    from kernelopt.report.sweep import moves_markdown

    note = {"family": "conv", "best_structure": "the starting kernel's", "applied": [], "skipped": []}
    rows = [{"move": "conv.depthwise", "config": {}, "time_ms": 1.09, "verified": "slower"},
            {"move": "conv.depthwise_rows", "config": {}, "time_ms": 0.79, "verified": "faster (new best)"},
            {"config": {}, "time_ms": 1.0, "verified": None}]
    tables = [{"round": 1, "moves": note, "rows": rows}]
    assert "the best kernel's structure: conv.depthwise_rows." in "\n".join(moves_markdown(tables, best_round=1))
    # a best from another round (a model's rewrite, not swept): the note stands
    assert "structure: the starting kernel's." in "\n".join(moves_markdown(tables, best_round=2))
    rows[1]["move"] = None  # the starting kernel's own configuration became the best
    assert "structure: the starting kernel's." in "\n".join(moves_markdown(tables, best_round=1))
