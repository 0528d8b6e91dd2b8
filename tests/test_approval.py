"""Approval (Context.approve / --approve): the graph asks through interrupt() and resumes with Command."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import fast_context
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from scripted import DATA, RoutedChatModel, ScriptedChatModel, diagnosis_reply, kernel_reply, two_bottlenecks_reply
from test_cli import _show

from kernelopt.checkpoint import serializer
from kernelopt.graph import build_graph
from kernelopt.nodes.approval import normalize_reply

ADD = DATA / "add"
Answer = Callable[[dict[str, Any]], Any]


def _inputs(problem: Path, kernel: str = "kernel_base.py") -> dict[str, str]:
    return {"problem_source": problem.read_text(), "kernel_source": (ADD / kernel).read_text()}


def drive(inputs: dict[str, Any], context: Any, answer: Answer, chat_model: Any = None) -> tuple[
    dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]
]:
    """Run the graph with a checkpointer, answering each interrupt with `answer(payload)`;
    returns the final state, the progress events and the questions asked, in order."""
    graph = build_graph(chat_model).compile(checkpointer=InMemorySaver(serde=serializer()))
    config = {"configurable": {"thread_id": "approval"}}
    events: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    stream_input: Any = inputs
    while True:
        events += list(graph.stream(stream_input, config, context=context, stream_mode="custom"))
        snapshot = graph.get_state(config)
        if not snapshot.interrupts:
            return snapshot.values, events, questions
        replies = {}
        for question in snapshot.interrupts:
            questions.append(question.value)
            replies[question.id] = answer(question.value)
        stream_input = Command(resume=replies)


def _verdicts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "verdict"]


def _kinds(questions: list[dict[str, Any]]) -> list[str]:
    return [q["question"] for q in questions]


def test_approving_everything_ends_like_a_normal_run(tmp_path, add_problem):
    model = ScriptedChatModel(replies=[diagnosis_reply(), kernel_reply("kernel_fast.py")])
    ctx = fast_context(tmp_path, model="scripted", max_rounds=1, approve=True)
    final, events, questions = drive(_inputs(add_problem), ctx, lambda q: {"action": "approve"}, model)
    # the starting kernel is the person's own: only the rewrite and its new best are asked about
    assert _kinds(questions) == ["try", "accept"]
    tried, accepted = questions
    assert tried["round"] == 1 and tried["kernel_path"].endswith("kernels/r001_a0.py")
    assert "BLOCK_SIZE = 1024" in tried["source"] and "+        BLOCK_SIZE = 1024" in tried["diff"]
    assert tried["best_path"].endswith("r000_a0.py") and tried["best_ms"] > 0
    assert accepted["new_ms"] < accepted["old_ms"] and accepted["kernel_path"] == tried["kernel_path"]
    assert [v["outcome"] for v in _verdicts(events)] == ["faster", "faster"]
    assert final["stop_reason"] == "max_rounds" and final.get("pending") is None
    assert Path(final["run_dir"], "best_kernel.py").read_text() == (ADD / "kernel_fast.py").read_text()
    assert sum(e["event"] == "new_best" for e in events) == 2


def test_a_rejected_rewrite_is_not_verified_and_its_reason_reaches_the_optimizer(tmp_path, add_problem):
    replies_of_model = [diagnosis_reply(), kernel_reply("kernel_fast.py"), kernel_reply("kernel_slow.py")]
    model = ScriptedChatModel(replies=replies_of_model)
    ctx = fast_context(tmp_path, model="scripted", max_rounds=1, approve=True)
    replies = iter([{"action": "reject", "reason": "keep BLOCK_SIZE a power of two under 512"}, "approve"])
    final, events, questions = drive(_inputs(add_problem), ctx, lambda q: next(replies), model)
    assert _kinds(questions) == ["try", "try"]  # the slow repair is no new best: nothing to accept
    verdicts = _verdicts(events)
    assert [v["outcome"] for v in verdicts] == ["faster", "failed", "slower"]
    assert "keep BLOCK_SIZE a power of two under 512" in verdicts[1]["error"]
    rejected = final["attempts"][1]
    assert rejected.rule == "rejected-by-person" and rejected.time_ms is None
    repair_prompt = model.prompts[2]
    assert "keep BLOCK_SIZE a power of two under 512" in repair_prompt  # the repair's feedback
    assert "BLOCK_SIZE = 1024" in repair_prompt  # shown the rejected kernel, to change it
    assert final["stop_reason"] == "max_rounds"
    assert "BLOCK_SIZE = 64" in Path(final["best"].path).read_text()


def test_an_edited_rewrite_is_verified_as_edited_and_can_become_best(tmp_path, add_problem):
    model = ScriptedChatModel(replies=[diagnosis_reply(), kernel_reply("kernel_slow.py")])
    ctx = fast_context(tmp_path, model="scripted", max_rounds=1, approve=True)
    fast = (ADD / "kernel_fast.py").read_text()

    def answer(question: dict[str, Any]) -> dict[str, Any]:
        return {"action": "edit", "source": fast} if question["question"] == "try" else {"action": "approve"}

    final, events, questions = drive(_inputs(add_problem), ctx, answer, model)
    assert _kinds(questions) == ["try", "accept"]
    edited = Path(final["run_dir"], "kernels", "r001_a0_edited.py")
    assert edited.read_text() == fast
    assert Path(final["run_dir"], "kernels", "r001_a0.py").read_text() == (ADD / "kernel_slow.py").read_text()
    assert questions[1]["kernel_path"] == str(edited)
    assert [v["outcome"] for v in _verdicts(events)] == ["faster", "faster"]
    assert final["best"].path == str(edited) and "edited by the person" in final["attempts"][1].change
    assert [e["action"] for e in events if e["event"] == "review"] == ["edit"]


def test_rejecting_a_new_best_keeps_the_old_one(tmp_path, add_problem):
    model = ScriptedChatModel(replies=[diagnosis_reply(), kernel_reply("kernel_fast.py")])
    ctx = fast_context(tmp_path, model="scripted", max_rounds=1, approve=True)

    def answer(question: dict[str, Any]) -> Any:
        return "a" if question["question"] == "try" else {"action": "reject", "reason": "too risky"}

    final, events, questions = drive(_inputs(add_problem), ctx, answer, model)
    assert _kinds(questions) == ["try", "accept"]
    assert final["best"].path.endswith("r000_a0.py")
    assert Path(final["run_dir"], "best_kernel.py").read_text() == (ADD / "kernel_base.py").read_text()
    last = final["attempts"][-1]
    assert last.outcome == "rejected" and last.rule == "rejected-by-person" and "too risky" in last.error
    assert last.time_ms is not None and not last.new_best  # measured, recorded, not taken
    assert [e["event"] for e in events if e["event"] in ("new_best", "best_rejected")] == ["new_best", "best_rejected"]
    assert final["stop_reason"] == "max_rounds" and final["rounds_without_gain"] == 1


def test_replies_are_matched_by_order_and_resuming_never_reverifies(tmp_path, add_problem):
    # Two branches: the review node asks two questions in one node (as the node reruns on each
    # resume, LangGraph hands the stored replies back to its interrupt() calls by order), then
    # the accept node asks; an unclear reply is asked again.
    def route(prompt: str) -> str:
        if "PERFORMANCE TARGET" not in prompt:
            return two_bottlenecks_reply()
        idea_a = "IDEA-A: BLOCK" in prompt.split("PERFORMANCE TARGET")[0]
        return kernel_reply("kernel_slow.py" if idea_a else "kernel_fast.py")

    accepts = iter(["bogus", "approve"])

    def answer(question: dict[str, Any]) -> Any:
        if question["question"] == "accept":
            return next(accepts)
        return {"action": "reject", "reason": "not this one"} if question["branch"] == 0 else "a"

    ctx = fast_context(tmp_path, model="routed", max_rounds=1, candidates_per_round=2, approve=True)
    final, events, questions = drive(_inputs(add_problem), ctx, answer, RoutedChatModel(route=route))
    assert _kinds(questions) == ["try", "try", "accept", "accept"]
    assert sorted(q["branch"] for q in questions[:2]) == [0, 1]
    assert "unknown action 'bogus'" in questions[3]["error"]
    round_one = [v for v in _verdicts(events) if v["round"] == 1]
    assert len(round_one) == 2  # one verdict per candidate, though the verifier ran three times
    outcomes = {v["branch"]: v["outcome"] for v in round_one}
    assert outcomes == {0: "failed", 1: "faster"}  # each reply reached its own candidate
    rejected = next(a for a in final["attempts"] if a.rule == "rejected-by-person")
    assert rejected.error.endswith("not this one")
    assert "BLOCK_SIZE = 16" in Path(rejected.kernel_path).read_text()
    assert "BLOCK_SIZE = 1024" in Path(final["best"].path).read_text()
    assert sum(e["event"] == "verdict" for e in events) == 3  # round 0's starting kernel, round 1's two
    assert final["stop_reason"] == "max_rounds"


def test_normalize_reply():
    assert normalize_reply("a", ("approve", "reject")) == ({"action": "approve"}, None)
    assert normalize_reply({"action": "Reject", "reason": "x"}, ("approve", "reject"))[0] == {
        "action": "reject", "reason": "x"
    }
    assert normalize_reply({"action": "edit"}, ("approve", "reject", "edit"))[0] is None
    assert normalize_reply({"action": "edit"}, ("approve", "reject"))[1].startswith("unknown action")
    assert normalize_reply(3, ("approve",))[0] is None


def _cli(*args: str | Path, stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", *map(str, args)],
        cwd=cwd, input=stdin, capture_output=True, text=True, timeout=240,
    )


def test_cli_reads_answers_from_stdin_stops_at_end_of_input_and_resumes(tmp_path):
    run_dir = tmp_path / "run"
    first = _cli("optimize", ADD / "problem.py", "--kernel", ADD / "kernel_base.py", "--approve",
                 "--max-rounds", "1", "--no-compile", "--out", run_dir, "--sweep-configs", "2",  # one candidate
                 stdin="", cwd=tmp_path)
    assert first.returncode == 3, _show(first)
    assert "try this candidate? (round 1" in first.stdout and "kernels/r001_a0.py" in first.stdout
    assert f"kernelopt resume {run_dir}" in first.stderr and "Traceback" not in first.stderr
    assert json.loads((run_dir / "run.json").read_text())["context"]["approve"] is True
    assert not (run_dir / "report.json").exists()

    # resume honours the stored context: it asks again, here answered through a pipe
    resumed = _cli("resume", run_dir, stdin="a\na\n", cwd=tmp_path)
    assert resumed.returncode == 0, _show(resumed)
    assert "waiting for your answer at review" in resumed.stdout
    assert "[a]pprove / [r]eject / [e]dit?" in resumed.stdout and "you approved r001_a0.py" in resumed.stdout
    assert "stopped: max_rounds" in resumed.stdout
    summary = json.loads((run_dir / "report.json").read_text())
    assert [(a["round"], a["repair"]) for a in summary["attempts"]] == [(0, 0), (1, 0)]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["round"] for e in events if e["event"] == "verdict"] == [0, 1]
