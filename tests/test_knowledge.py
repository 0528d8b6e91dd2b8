"""The knowledge base: curated patterns retrieved into the optimizer's prompt, and the store of
gains that runs record and later runs (and people, through `kernelopt knowledge`) read back."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import DATA, fast_context, run_graph
from scripted import ScriptedChatModel, diagnosis_reply, kernel_reply

from kernelopt.cli import main
from kernelopt.knowledge.patterns import GENERATIONS, KERNEL_CLASSES, load_patterns
from kernelopt.knowledge.store import STORE_FILE, Gain, GainStore
from kernelopt.nodes.optimizer import _prompt
from kernelopt.prompts.parsing import CATEGORIES
from kernelopt.records import BottleneckResult, KernelRecord, Timing

MOVES = DATA / "moves"
ADD = DATA / "add"


def test_the_patterns_cover_the_issue_and_each_example_is_a_triton_kernel():
    patterns = load_patterns()
    ids = [p.id for p in patterns]
    assert len(ids) == len(set(ids)) >= 14
    assert {"tiling-swizzle", "tma-descriptors", "persistent-matmul", "split-k", "split-reduction", "online-softmax",
            "welford", "vectorised-access", "register-pressure"} <= set(ids)
    families = {"any", "other", *KERNEL_CLASSES, *KERNEL_CLASSES.values()}
    for p in patterns:
        assert set(p.bottlenecks) <= set(CATEGORIES) and set(p.families) <= families, p.id
        assert set(p.architectures) <= set(GENERATIONS) and p.when and p.change, p.id
        for source in (p.before, p.after):
            assert "@triton.jit" in source, p.id
            ast.parse(source)  # a snippet that does not parse teaches the LLM nothing
    # TMA and tcgen05 exist from Hopper and Blackwell on: never offered to an Ampere GPU
    assert not {"Ampere"} & {a for p in patterns if p.id in ("tma-descriptors", "blackwell-warp-specialize")
                             for a in p.architectures}


def _task(tmp_path: Path, problem: Path, gpu_key: str, bottleneck: BottleneckResult) -> dict:
    kernel = tmp_path / "kernel.py"
    kernel.write_text("import triton\n")
    best = KernelRecord(str(kernel), "h", Timing(1.0, 0.9, 1.1, 0.8, 1.2, 10, "cuda_events"), 0)
    return {
        "round": 1, "repair": 0, "branch": 0, "idea": (bottleneck, bottleneck.root_causes[0],
                                                       bottleneck.recommended_fixes[0]),
        "kernel_path": str(kernel), "error": None, "run_dir": str(tmp_path), "problem_file": str(problem),
        "gpu_key": gpu_key, "best": best, "baselines": None, "roofline": None, "ncu_metrics": {}, "history": [],
        "lessons": "", "tried": [], "tokens": {}, "started_at": None,
    }


MEMORY_ROWS = BottleneckResult(
    "memory", "DRAM traffic is 2.0x the minimum the problem needs",
    "the kernel makes a pass for the maximum, one for the sum and one for the output",
    ("each row is read from DRAM three times",), ("read each row once or twice",))
COMPUTE_GEMM = BottleneckResult(
    "compute", "tensor pipes at 35% of peak", "small tiles and a row-major launch order",
    ("tiles of 32x32 reload A and B",), ("use larger tiles",))


def _patterns_in(prompt: str) -> list[str]:
    section = prompt.split("KNOWLEDGE BASE", 1)[1].split("OUTPUT RULES", 1)[0]
    return [line.split("[", 1)[1].rstrip("]") for line in section.splitlines() if line.startswith("### ")]


def test_retrieval_puts_the_pattern_for_the_diagnosis_in_the_optimizer_prompt(tmp_path):
    ctx = fast_context(tmp_path)
    prompt, _ = _prompt(_task(tmp_path, MOVES / "softmax_long.py", "H200", MEMORY_ROWS), ctx)  # type: ignore[arg-type]
    assert prompt.index("KNOWLEDGE BASE") < prompt.index("OUTPUT RULES")  # before the closing rules
    found = _patterns_in(prompt)
    assert found[0] == "online-softmax" and len(found) == 3
    assert "m_new = tl.maximum(m, x)" in prompt  # its example came along, and no matmul pattern did
    assert not {"tiling-swizzle", "split-k", "tma-descriptors"} & set(found)

    hopper, _ = _prompt(_task(tmp_path, MOVES / "matmul.py", "H200", COMPUTE_GEMM), ctx)  # type: ignore[arg-type]
    ampere, _ = _prompt(_task(tmp_path, MOVES / "matmul.py", "A100-SXM4-80GB", COMPUTE_GEMM), ctx)  # type: ignore[arg-type]
    assert {"tiling-swizzle", "tma-descriptors"} <= set(_patterns_in(hopper))
    assert "tiling-swizzle" in _patterns_in(ampere) and "tma-descriptors" not in _patterns_in(ampere)
    assert "online-softmax" not in _patterns_in(hopper)
    no_knowledge = fast_context(tmp_path, knowledge=False)
    off, _ = _prompt(_task(tmp_path, MOVES / "matmul.py", "H200", COMPUTE_GEMM), no_knowledge)  # type: ignore[arg-type]
    assert "KNOWLEDGE BASE" not in off


def _inputs() -> dict[str, str]:
    return {"problem_source": (ADD / "problem.py").read_text(), "kernel_source": (ADD / "kernel_base.py").read_text()}


def _kernelopt(*args: str, runs: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERNELOPT_RUNS_DIR": str(runs)}
    return subprocess.run([sys.executable, "-m", "kernelopt.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_gain_is_recorded_survives_the_process_and_reaches_the_next_runs_prompt(tmp_path, capsys, monkeypatch):
    runs = tmp_path / "runs"
    first = ScriptedChatModel(replies=[diagnosis_reply(), kernel_reply("kernel_fast.py")])
    final, events = run_graph(_inputs(), fast_context(tmp_path, model="scripted", max_rounds=1), first)
    assert final["stop_reason"] == "max_rounds" and "BLOCK_SIZE = 1024" in Path(final["best"].path).read_text()
    assert [e["bottleneck"] for e in events if e["event"] == "gain_recorded"] == ["memory"]
    # a new process (as the next run, or a person, would be) reads what this one wrote
    listed = _kernelopt("knowledge", "list", "--family", "other", runs=runs)
    assert listed.returncode == 0, listed.stderr
    assert "gains (1)" in listed.stdout and "problem (other), memory: " in listed.stdout
    assert "raise BLOCK_SIZE to 1024" in listed.stdout and "H200 [interpreter]" in listed.stdout

    gain = GainStore(runs / STORE_FILE).gains()[0]
    assert (gain.family, gain.bottleneck, gain.round, gain.gpu_time) == ("other", "memory", 1, False)
    assert gain.speedup == pytest.approx(gain.before_ms / gain.after_ms) and gain.speedup > 1
    assert gain.run_dir == final["run_dir"]

    # the next run (a new graph, the same runs folder): the gain is in its optimizer's prompt
    second = ScriptedChatModel(replies=[diagnosis_reply(), "I would raise the block size."])
    run_graph(_inputs(), fast_context(tmp_path, model="scripted", max_rounds=1, max_repairs=0), second)
    recalled = second.prompts[1].split("KNOWLEDGE BASE", 1)[1]
    assert "Gains earlier runs made on other problems" in recalled
    assert f"- {gain.speedup:.2f}x on H200 (interpreter time), memory bottleneck, problem (other): raise BLOCK_SIZE" \
        in recalled

    monkeypatch.setenv("KERNELOPT_RUNS_DIR", str(runs))  # the CLI's default store: the runs folder's
    assert main(["knowledge", "show", str(gain.id)]) == 0
    shown = capsys.readouterr().out
    assert f"speedup: {gain.speedup}" in shown and "bottleneck: memory" in shown
    assert main(["knowledge", "show", "online-softmax"]) == 0
    assert "## After" in capsys.readouterr().out
    assert main(["knowledge", "export", "--out", str(tmp_path / "gains.jsonl")]) == 0
    assert main(["knowledge", "export", "--out", str(tmp_path / "gains.md")]) == 0
    assert main(["knowledge", "show", "99"]) == 2
    assert "no gain #99" in capsys.readouterr().err
    exported = [json.loads(line) for line in (tmp_path / "gains.jsonl").read_text().splitlines()]
    assert exported == [dataclasses.asdict(gain)]
    assert f"| {gain.id} | {gain.recorded_at} | problem | other | memory |" in (tmp_path / "gains.md").read_text()


def test_a_corrupt_store_costs_one_warning_and_the_run_ends_normally(tmp_path, capfd):
    store = tmp_path / "runs" / STORE_FILE
    store.parent.mkdir()
    store.write_bytes(b"this is not a database" * 100)
    model = ScriptedChatModel(replies=[diagnosis_reply(), kernel_reply("kernel_fast.py")])
    final, events = run_graph(_inputs(), fast_context(tmp_path, model="scripted", max_rounds=1), model)
    assert final["stop_reason"] == "max_rounds" and "BLOCK_SIZE = 1024" in Path(final["best"].path).read_text()
    warnings = [line for line in capfd.readouterr().err.splitlines() if "knowledge store" in line]
    assert len(warnings) == 1 and str(store) in warnings[0] and "the run goes on" in warnings[0]
    assert not [e for e in events if e["event"] == "gain_recorded"]
    assert "KNOWLEDGE BASE" in model.prompts[1]  # the patterns still came, without the store's gains
    assert "Gains earlier runs made" not in model.prompts[1]


def test_an_unwritable_store_warns_once_and_records_nothing(tmp_path, capfd):
    from kernelopt.knowledge.recall import record

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    ctx = fast_context(tmp_path, knowledge_db=str(blocker / STORE_FILE))  # a folder that is a file
    gain = Gain("p", "h", "softmax", "memory", "one pass", 2.0, 2.0, 1.0, "H200", True, str(tmp_path), 1, "2026")
    assert record(ctx, gain) is None and record(ctx, gain) is None
    assert len([line for line in capfd.readouterr().err.splitlines() if "knowledge store" in line]) == 1


def test_run_json_keeps_no_password_of_a_postgres_store(tmp_path):
    from kernelopt.checkpoint import new_run_record

    ctx = fast_context(tmp_path, knowledge_db="postgresql://me:pg-secret@db.example:5433/runs")
    record = new_run_record(tmp_path, {"problem_source": "x"}, ctx, None)
    assert record.context["knowledge_db"] == "postgresql://me@db.example:5433/runs"
    assert "pg-secret" not in (tmp_path / "run.json").read_text()


@pytest.mark.skipif(not os.environ.get("KERNELOPT_TEST_PG"), reason="KERNELOPT_TEST_PG (a PostgreSQL URL) is unset")
def test_the_store_lives_in_postgres_and_is_read_back_by_the_cli(tmp_path, capsys):
    db = os.environ["KERNELOPT_TEST_PG"]
    gain = Gain("pg_problem", "h", "matmul", "compute", "grouped tiles", 1.5, 3.0, 2.0, "H200", True,
                str(tmp_path), 2, "2026-12-01T00:00:00+00:00")
    number = GainStore(db).add(gain)
    again = GainStore(db).get(number)  # a new connection, as a later run makes
    assert again == dataclasses.replace(gain, id=number)
    assert main(["knowledge", "list", "--db", db, "--family", "matmul"]) == 0
    assert f"#{number}" in capsys.readouterr().out


def test_a_gain_names_its_branchs_bottleneck_and_a_repair_names_the_idea_it_repaired(tmp_path):
    from kernelopt.nodes.memory import remember_gain
    from kernelopt.records import Attempt, Diagnosis

    occupancy = BottleneckResult("occupancy", "0.2 waves", "few programs", ("16 programs",), ("split the rows",))
    diagnosis = Diagnosis((MEMORY_ROWS, occupancy), "memory", MEMORY_ROWS.root_causes[0], "read each row once", "llm")
    timing = Timing(1.0, 0.9, 1.1, 0.8, 1.2, 10, "interpreter")
    old = KernelRecord("old.py", "a", timing, 0)
    new = KernelRecord("new.py", "b", dataclasses.replace(timing, median_ms=0.5), 1)
    first = Attempt(round=1, repair=0, kernel_path="r001_a0.py", source_hash="b", outcome="incorrect",
                    change="one pass with an online max and sum", error="wrong")
    state = {"diagnosis": diagnosis, "attempts": [first], "problem_file": str(MOVES / "softmax_long.py"),
             "problem_path": "/problems/23_Softmax.py", "run_dir": str(tmp_path), "gpu_key": "H200"}
    ctx = fast_context(tmp_path)
    branch_one = Attempt(round=1, repair=0, kernel_path="r001_a0_b1.py", source_hash="c", outcome="faster",
                         change="split each row in four", time_ms=0.5, speedup_vs_best=2.0, new_best=True)
    remember_gain(state, ctx, branch_one, 1, new, old)  # type: ignore[arg-type]
    repaired = Attempt(round=1, repair=1, kernel_path="r001_a1.py", source_hash="d", outcome="faster",
                       change="repair: wrong", time_ms=0.5, speedup_vs_best=2.0, new_best=True)
    remember_gain(state, ctx, repaired, 1, new, old)  # type: ignore[arg-type]  # a repair's branch: its own number
    remember_gain(state, ctx, branch_one, 1, new, None)  # type: ignore[arg-type]  # the first best is no gain
    gains = GainStore(tmp_path / "runs" / STORE_FILE).gains()
    assert [(g.problem, g.family, g.bottleneck, g.change, g.speedup) for g in reversed(gains)] == [
        ("23_Softmax", "softmax", "occupancy", "split each row in four", 2.0),
        ("23_Softmax", "softmax", "memory", "one pass with an online max and sum (once repaired)", 2.0),
    ]


def test_earlier_gains_come_same_bottleneck_problem_and_gpu_first_each_change_once(tmp_path):
    from kernelopt.harness.problem import source_hash
    from kernelopt.harness.verify import HarnessSettings, Verifier
    from kernelopt.knowledge.recall import recall

    problem = MOVES / "softmax_long.py"
    here = source_hash(problem.read_text())
    store = GainStore(tmp_path / "runs" / STORE_FILE)

    def add(change: str, bottleneck: str, problem_hash: str, gpu: str, speedup: float, run: str = "/old") -> None:
        store.add(Gain("p", problem_hash, "softmax", bottleneck, change, speedup, 1.0, 1 / speedup, gpu, True, run,
                       1, "2026-12-01"))

    add("other problem, same bottleneck", "memory", "elsewhere", "H200", 3.0)
    add("same problem, other GPU", "memory", here, "A100-SXM4-80GB", 2.0)
    add("same problem and GPU", "memory", here, "H200", 1.1)
    add("same problem and GPU", "memory", here, "H200", 1.05)  # the same change again: shown once
    add("other bottleneck", "occupancy", here, "H200", 5.0)
    add("this run's own", "memory", here, "H200", 9.0, run=str(tmp_path))
    store.add(Gain("m", "h", "matmul", "memory", "a matmul gain", 4.0, 1, 0.25, "H200", True, "/old", 1, "2026"))
    verifier = Verifier(problem, tmp_path / "harness", HarnessSettings())
    text = recall(fast_context(tmp_path), str(problem), "Hopper", "H200", "memory", "two passes", str(tmp_path),
                  verifier)
    gains = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("- ")]
    assert gains == ["same problem and GPU", "same problem, other GPU", "other problem, same bottleneck",
                     "other bottleneck"]
    assert "- 1.10x on H200 (GPU time), memory bottleneck, p (softmax)" in text
