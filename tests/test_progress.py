"""What a person watching a run sees: the CLI's progress lines, and each node's update in the studio's stream."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import fast_context
from scripted import DATA, ScriptedChatModel, diagnosis_reply, kernel_reply
from test_cli import _show, kernelopt

from kernelopt.report.progress import render_event


def test_a_long_verification_shows_that_it_waits_and_for_how_long():
    event = {"event": "candidate_running", "path": "/runs/x/kernels/r001_a1.py", "phase": "case 3", "elapsed_s": 14.2}
    assert render_event(event) == "  still verifying r001_a1.py: 14 s (case 3)"
    assert render_event({**event, "phase": ""}) == "  still verifying r001_a1.py: 14 s"


def test_each_verdict_is_said_once_and_the_first_kernel_is_the_baseline():
    verdict = {"event": "verdict", "round": 1, "repair": 0, "change": "BLOCK_SIZE 64 -> 128", "outcome": "incorrect",
               "time_ms": None, "error": "incorrect: 12 of 4096 values outside atol=0.0001"}
    line = render_event(verdict)
    assert line == "  candidate (BLOCK_SIZE 64 -> 128): incorrect: 12 of 4096 values outside atol=0.0001"
    start = {**verdict, "round": 0, "change": "the starting kernel", "outcome": "faster", "time_ms": 27.37,
             "error": None}
    assert render_event(start) == "  candidate (the starting kernel): the baseline: 27.3700 ms"
    assert render_event({**start, "round": 2}) == "  candidate (the starting kernel): faster: 27.3700 ms"


def test_every_node_update_in_the_stream_says_what_it_did_and_the_run_ends_with_its_report(tmp_path, add_problem):
    from kernelopt.graph import build_graph

    model = ScriptedChatModel(replies=[diagnosis_reply(), kernel_reply("kernel_fast.py")])
    graph = build_graph(model).compile()
    inputs = {"problem_source": add_problem.read_text(), "kernel_source": (DATA / "add" / "kernel_base.py").read_text()}
    updates = [chunk for chunk in graph.stream(inputs, context=fast_context(tmp_path, model="scripted", max_rounds=1),
                                               stream_mode="updates")]
    nodes = [next(iter(u)) for u in updates]
    assert nodes == ["setup", "verifier", "accept", "profile", "judger", "optimizer", "review", "verifier", "accept",
                     "profile", "report"], nodes
    assert all(update is not None and update.get("progress") for u in updates for update in u.values()), updates
    by_node = {name: update["progress"] for u in updates for name, update in u.items()}
    optimizer = by_node["optimizer"]
    assert optimizer["kernel"] == "r001_a0.py" and Path(optimizer["path"]).is_file() and optimizer["change"]
    verdict = by_node["verifier"]["verdicts"][0]  # the last verifier step: round 1's candidate
    assert verdict["outcome"] == "faster" and verdict["time_ms"] > 0 and verdict["kernel"] == optimizer["path"]
    assert by_node["accept"]["new_best"]["path"] == optimizer["path"]  # the verifier measures, accept takes
    run_dir = Path(by_node["setup"]["run_dir"])
    files = ("report.json", "report.md", "roofline.png", "best_vs_start.diff")  # round 1 beat the start: a diff
    assert by_node["report"]["files"] == [str(run_dir / n) for n in files]
    assert json.loads((run_dir / "report.json").read_text())["stop_reason"] == "max_rounds"

    proc = kernelopt("report", run_dir, cwd=tmp_path)  # an embedded run's folder is a report's folder too
    assert proc.returncode == 0, _show(proc)


def test_the_graph_module_loads_no_plotting_chat_client_torch_or_triton():
    """matplotlib loads when a report is drawn, langchain-openai when a model is named, torch and
    Triton when a kernel is verified (in the harness's processes): not at import, so the studio
    and an embedding agent load the graph fast."""
    code = ("import sys, kernelopt.graph; print(sorted(m for m in "
            "('matplotlib', 'langchain_openai', 'openai', 'torch', 'triton') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "[]", proc.stderr
