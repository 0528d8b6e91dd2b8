"""The whole graph on CPU: a scripted LLM with real kernels, and the offline policy."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import fast_context, run_graph
from scripted import DATA, ScriptedChatModel, diagnosis_reply, kernel_reply


def _inputs(problem: Path, kernel: str | None = "kernel_base.py") -> dict[str, str]:
    inputs = {"problem_source": problem.read_text()}
    if kernel:
        inputs["kernel_source"] = (DATA / "add" / kernel).read_text()
    return inputs


def _outcomes(events: list[dict]) -> list[str]:
    return [e["outcome"] for e in events if e["event"] == "verdict"]


def test_faster_kernel_becomes_best_then_max_rounds_stops(tmp_path, add_problem):
    model = ScriptedChatModel(
        replies=[
            diagnosis_reply(),
            kernel_reply("kernel_fast.py"),
            diagnosis_reply(),
            kernel_reply("kernel_slow.py", "Smaller blocks improve load balance."),
        ]
    )
    final, events = run_graph(
        _inputs(add_problem), fast_context(tmp_path, model="scripted", max_rounds=2, patience=5), model
    )
    assert _outcomes(events) == ["faster", "faster", "slower"]
    assert final["stop_reason"] == "max_rounds"
    best = final["best"]
    assert "BLOCK_SIZE = 1024" in Path(best.path).read_text()
    assert Path(final["run_dir"], "best_kernel.py").read_text() == (DATA / "add" / "kernel_fast.py").read_text()
    # the optimizer's prompt was built from the judger's diagnosis and the measured best
    optimizer_prompt = model.prompts[1]
    assert "BLOCK_SIZE of 64 is too small" in optimizer_prompt
    assert "PERFORMANCE TARGET" in optimizer_prompt and "ROOFLINE ANALYSIS" in optimizer_prompt
    assert model.replies == []


def test_broken_rewrite_is_repaired_with_the_verifiers_error(tmp_path, add_problem):
    model = ScriptedChatModel(
        replies=[
            diagnosis_reply(),
            kernel_reply("kernel_wrong.py"),
            kernel_reply("kernel_fast.py", "Fixed the factor 2."),
        ]
    )
    final, events = run_graph(_inputs(add_problem), fast_context(tmp_path, model="scripted", max_rounds=1), model)
    assert _outcomes(events) == ["faster", "incorrect", "faster"]
    repair_prompt = model.prompts[2]
    assert "outside atol=0.0001" in repair_prompt  # the verifier's line reached the optimizer
    assert "x + y" in repair_prompt  # and it was shown the failed kernel, not the best one
    assert final["stop_reason"] == "max_rounds"
    assert "BLOCK_SIZE = 1024" in Path(final["best"].path).read_text()


def test_replies_without_code_become_repair_feedback_until_repairs_run_out(tmp_path, add_problem):
    model = ScriptedChatModel(
        replies=[
            diagnosis_reply(),
            "I would increase the block size to 1024 so that fewer programs are launched.",
            "```python\nclass Model(nn.Module):\n    pass\n```",
        ]
    )
    ctx = fast_context(tmp_path, model="scripted", max_rounds=1, max_repairs=1)
    final, events = run_graph(_inputs(add_problem), ctx, model)
    assert _outcomes(events) == ["faster", "failed", "failed"]
    assert "ModelNew" in model.prompts[2]  # the extraction error was fed back
    assert final["stop_reason"] == "max_rounds"
    assert "BLOCK_SIZE = 64" in Path(final["best"].path).read_text()  # the start stays best


def test_no_gain_stops_after_patience_rounds(tmp_path, add_problem):
    model = ScriptedChatModel(replies=[diagnosis_reply(), kernel_reply("kernel_slow.py")])
    final, events = run_graph(
        _inputs(add_problem, "kernel_fast.py"), fast_context(tmp_path, model="scripted", patience=1), model
    )
    assert _outcomes(events) == ["faster", "slower"]
    assert final["stop_reason"] == "no_gain"
    assert final["round"] == 1


def test_generation_mode_writes_the_first_kernel(tmp_path, add_problem):
    model = ScriptedChatModel(replies=[kernel_reply("kernel_syntax.py"), kernel_reply("kernel_base.py")])
    final, events = run_graph(_inputs(add_problem, None), fast_context(tmp_path, model="scripted", max_rounds=0), model)
    assert _outcomes(events) == ["failed", "faster"]  # the reply's code does not parse
    assert "class Model(" in model.prompts[0]  # generation starts from the reference
    assert "syntax" in model.prompts[1].lower()  # and the repair prompt says what was wrong
    assert final["best"] is not None and final["stop_reason"] == "max_rounds"


def test_offline_policy_sweeps_halves_and_verifies_the_best(tmp_path, add_problem):
    # From 16 elements per program each doubling halves the program count: a 2x step,
    # far outside the interpreter's timing noise.
    context = fast_context(tmp_path, max_rounds=2, patience=3, sweep_configs=5)
    final, events = run_graph(_inputs(add_problem, "kernel_slow.py"), context)
    run_dir = Path(final["run_dir"])
    first = json.loads((run_dir / "sweeps" / "round-001.json").read_text())
    assert [r["config"]["BLOCK_SIZE"] for r in first["rows"]][0] == 16  # the best itself, for the ranking
    assert len(first["rows"]) == 5 and all(r["time_ms"] for r in first["rows"])
    # successive halving: all five timed once, three again, the best two with the run's own settings
    assert sorted(r["stage"] for r in first["rows"]) == [1, 1, 2, 3, 3]
    finalists = sorted((r for r in first["rows"] if r["stage"] == 3), key=lambda r: r["time_ms"])
    verdicts = [e for e in events if e["event"] == "verdict"]
    assert verdicts[0]["change"] == "the starting kernel"
    swept = [v["change"] for v in verdicts if v["round"] == 1]
    assert swept == [f"BLOCK_SIZE 16 -> {r['config']['BLOCK_SIZE']} (swept: {r['time_ms']:.4g} ms)" for r in finalists]
    assert verdicts[1]["outcome"] == "faster"  # the sweep's winner, fully verified, beats the start
    second = json.loads((run_dir / "sweeps" / "round-002.json").read_text())
    seen = [r["config"] for r in first["rows"]]
    assert second["rows"] and all(r["config"] not in seen for r in second["rows"])  # nothing measured twice
    assert int(Path(final["best"].path).read_text().split("BLOCK_SIZE = ")[1].split()[0]) >= 128
    diagnoses = [e for e in events if e["event"] == "diagnosis"]
    assert diagnoses and all(d["source"] == "rules" for d in diagnoses)
    report = (run_dir / "report.md").read_text()
    assert "## Configurations swept" in report and "BLOCK_SIZE=16" in report and "(new best)" in report
    assert (run_dir / "sweep.png").read_bytes().startswith(b"\x89PNG")


def test_a_configuration_fast_only_where_it_was_tuned_fails_full_verification(tmp_path, add_problem):
    # From 64 elements per program the kernel clamps wide values: the sweep's quick cases
    # (ordinary values, other sizes) pass it; the full verification's wide case does not.
    context = fast_context(tmp_path, max_rounds=1, sweep_configs=5)
    final, events = run_graph(_inputs(add_problem, "kernel_clamps_wide.py"), context)
    verdicts = [(v["change"].split(" (")[0], v["outcome"]) for v in events if v["event"] == "verdict"]
    # the sweep ranks the wide blocks first (their order is the interpreter's timing, which load can
    # swap): each fails full verification, and the repairs go down the table to 32
    wide = {"BLOCK_SIZE 16 -> 64", "BLOCK_SIZE 16 -> 128", "BLOCK_SIZE 16 -> 256"}
    assert {change for change, _ in verdicts[1:3]} <= wide
    assert all(outcome == "incorrect" for change, outcome in verdicts if change in wide)
    # the repair verifies the next of the table: 32, correct; twice the start's block, so faster unless
    # a loaded machine's interpreter timing calls the gain noise (then the start stays best)
    thirty_two = dict(verdicts)["BLOCK_SIZE 16 -> 32"]
    assert thirty_two in ("faster", "within_noise", "slower")
    best = "BLOCK_SIZE = 32" if thirty_two == "faster" else "BLOCK_SIZE = 16"
    assert best in Path(final["best"].path).read_text()


def test_bad_problem_stops_with_one_clear_line(tmp_path):
    final, _ = run_graph({"problem_source": "import torch\nclass Model: pass\n"}, fast_context(tmp_path))
    assert final["stop_reason"].startswith("bad input: problem.py has no get_inputs()")


def test_broken_starting_kernel_without_a_model_stops_with_the_reason(tmp_path, add_problem):
    final, _ = run_graph(_inputs(add_problem, "kernel_wrong.py"), fast_context(tmp_path))
    assert final["stop_reason"].startswith("no correct kernel: incorrect:")
    assert final["best"] is None
