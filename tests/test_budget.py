"""Budgets (tokens, wall time), token counting, the lessons the prompts carry, their progress lines."""

from __future__ import annotations

import json
from pathlib import Path

from fake_openai import FakeOpenAI, completion
from helpers import fast_context, run_graph
from langchain_core.messages import AIMessage
from scripted import DATA, ScriptedChatModel, diagnosis_reply, kernel_reply

from kernelopt.budget import add_tokens, check_budget, token_totals, usage_of
from kernelopt.context import Context
from kernelopt.llm import RetryPolicy
from kernelopt.nodes.history import lessons, with_lessons
from kernelopt.records import Attempt
from kernelopt.report.progress import render_event


def _inputs(problem: Path, kernel: str = "kernel_base.py") -> dict[str, str]:
    return {"problem_source": problem.read_text(), "kernel_source": (DATA / "add" / kernel).read_text()}


def test_token_reducer_adds_node_by_node():
    left = {"judger": {"input": 10, "output": 2, "calls": 1}}
    right = {"judger": {"input": 5, "output": 1, "calls": 1}, "optimizer": {"input": 7, "output": 3, "calls": 1}}
    assert add_tokens(left, right) == {"judger": {"input": 15, "output": 3, "calls": 2},
                                       "optimizer": {"input": 7, "output": 3, "calls": 1}}
    assert left == {"judger": {"input": 10, "output": 2, "calls": 1}}  # the reducer copies, never mutates
    assert add_tokens(None, right) == right
    assert token_totals(add_tokens(left, right)) == {"input": 22, "output": 6, "calls": 3}


def test_usage_comes_from_the_reply_else_is_estimated_from_the_text():
    reply = AIMessage(content="x", usage_metadata={"input_tokens": 321, "output_tokens": 45, "total_tokens": 366})
    assert usage_of(reply, "p" * 4000, "x") == {"input": 321, "output": 45, "calls": 1}
    assert usage_of(AIMessage(content="y" * 41), "p" * 400, "y" * 41) == {"input": 100, "output": 11, "calls": 1,
                                                                          "estimated": 1}


def test_budgets_stop_with_their_own_reasons():
    spent = {"judger": {"input": 900, "output": 100, "calls": 1}}
    reason, update = check_budget({"tokens": spent, "started_at": 0.0}, Context(max_tokens=1000), now=5.0)
    assert reason == "token_budget: 1,000 tokens used of 1,000" and update == {}
    assert check_budget({"tokens": spent}, Context(max_tokens=1001), now=5.0) == (None, {"started_at": 5.0})
    reason, _ = check_budget({"started_at": 100.0}, Context(max_wall_s=60), now=161.0)
    assert reason == "time_budget: 61 s elapsed of 60 s"
    assert check_budget({"started_at": 100.0}, Context(max_wall_s=60), now=159.0)[0] is None
    assert check_budget({"tokens": spent, "started_at": 0.0}, Context(), now=1e9)[0] is None  # no caps: no stop


def test_backoff_doubles_from_the_base_up_to_the_cap():
    policy = RetryPolicy(max_retries=6, backoff_s=0.5, max_backoff_s=3.0)
    assert [policy.delay_s(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.delay_s(0, retry_after_s=2.5) == 2.5 and policy.delay_s(0, retry_after_s=120) == 3.0
    assert RetryPolicy.from_context(Context(llm_max_retries=1, llm_backoff_s=0.1, llm_max_backoff_s=9)) == \
        RetryPolicy(1, 0.1, 9)


def test_token_budget_stops_before_the_next_llm_call(tmp_path, add_problem):
    diagnosis = json.dumps({"bottlenecks": [json.loads(diagnosis_reply().split("```json\n")[1].split("```")[0])[0]]})
    with FakeOpenAI([completion(diagnosis, 100, 50)]) as server:
        ctx = fast_context(tmp_path, model="fake-model", base_url=server.url, api_key="test", max_tokens=150)
        final, events = run_graph(_inputs(add_problem), ctx)
    assert len(server.requests) == 1  # the optimizer did not call: the judger spent the budget
    assert final["stop_reason"] == "token_budget: 150 tokens used of 150"
    assert final["tokens"] == {"judger": {"input": 100, "output": 50, "calls": 1}}
    assert not [e for e in events if e["event"] == "candidate"]
    assert final["best"].round == 0 and Path(final["run_dir"], "best_kernel.py").exists()


def test_time_budget_stops_the_run(tmp_path, add_problem):
    model = ScriptedChatModel(replies=[diagnosis_reply(), kernel_reply("kernel_fast.py")])
    ctx = fast_context(tmp_path, model="scripted", max_wall_s=1e-6, max_rounds=3)
    final, events = run_graph(_inputs(add_problem), ctx, model)
    assert final["stop_reason"].startswith("time_budget: ")
    assert not [e for e in events if e["event"] == "candidate"]  # no kernel was asked for
    assert final["best"] is not None


def test_a_chat_model_without_usage_is_counted_by_estimate(tmp_path, add_problem):
    model = ScriptedChatModel(replies=[diagnosis_reply(), kernel_reply("kernel_fast.py")])
    final, events = run_graph(_inputs(add_problem), fast_context(tmp_path, model="scripted", max_rounds=1), model)
    tokens = final["tokens"]
    assert tokens["judger"]["calls"] == 1 and tokens["judger"]["estimated"] == 1
    assert tokens["optimizer"]["input"] == -(-len(model.prompts[1]) // 4)  # ceil(chars / 4)
    lines = [render_event(e) for e in events if e["event"] in ("diagnosis", "candidate")]
    assert all(line and "[tokens: " in line and "(some estimated)" in line for line in lines)


def _attempt(round_: int, repair: int, outcome: str, change: str, **fields) -> Attempt:
    return Attempt(round=round_, repair=repair, kernel_path=f"k{round_}{repair}.py", source_hash=f"h{round_}{repair}",
                   outcome=outcome, change=change, **fields)  # type: ignore[arg-type]


def test_lessons_name_ideas_to_avoid_with_their_errors_and_ideas_that_were_faster():
    history = [
        _attempt(0, 0, "faster", "the starting kernel", time_ms=2.0, new_best=True),
        _attempt(1, 0, "incorrect", "vectorise loads with tl.load of 2-wide blocks", error="diff 3.2 > atol"),
        _attempt(1, 1, "rejected", "repair: incorrect", error="SyntaxError at line 4"),
        _attempt(2, 0, "incorrect", "raise BLOCK_SIZE to 1024", error="wrong sum"),
        _attempt(2, 1, "faster", "repair: wrong sum", time_ms=1.0, speedup_vs_best=2.0, new_best=True),
        _attempt(3, 0, "slower", "split the add into two kernels", time_ms=1.4),
        _attempt(4, 0, "incorrect", "use num_warps=1", error="race"),
    ]
    text = lessons(history)
    avoid, prioritise = text.split("Prioritise")
    assert "vectorise loads with tl.load of 2-wide blocks: rejected: SyntaxError at line 4" in avoid
    assert "split the add into two kernels: slower: 1.4 ms, no faster than the best" in avoid
    assert "raise BLOCK_SIZE to 1024: 2.00x faster once repaired (1 repairs)" in prioritise
    assert "starting kernel" not in text and "repair:" not in text
    # the optimizer's repair prompt leaves out the round it is repairing
    assert "num_warps" not in lessons(history, before_round=4)
    assert lessons(history[:1]) == ""


def test_lessons_sit_before_the_output_rules():
    history = [_attempt(1, 0, "incorrect", "fuse", error="boom")]
    prompt = with_lessons("KERNEL\nx\n\nOUTPUT RULES\n- one block\n", history)
    assert prompt.index("LESSONS FROM THIS RUN") < prompt.index("OUTPUT RULES")


def test_prompts_carry_the_lessons_of_earlier_rounds(tmp_path, add_problem):
    model = ScriptedChatModel(replies=[
        diagnosis_reply(), kernel_reply("kernel_fast.py"),
        diagnosis_reply("compute"), "I would fuse the loads.",  # round 2 ends on a reply without code
    ])
    ctx = fast_context(tmp_path, model="scripted", max_rounds=2, patience=5, max_repairs=0)
    final, _ = run_graph(_inputs(add_problem), ctx, model)
    assert final["stop_reason"] == "max_rounds" and model.replies == []
    assert "LESSONS FROM THIS RUN" not in model.prompts[0] + model.prompts[1]  # nothing learnt yet
    for prompt in model.prompts[2:]:  # round 2's judger and optimizer
        lesson = prompt[prompt.index("LESSONS FROM THIS RUN"):]
        assert "Prioritise ideas like these" in lesson
        assert "raise BLOCK_SIZE to 1024" in lesson and "x faster" in lesson


def test_progress_lines_show_tokens_and_retries():
    tokens = {"input": 12345, "output": 678, "calls": 2}
    line = render_event({"event": "diagnosis", "source": "llm", "category": "memory", "root_cause": "c", "fix": "f",
                         "tokens": tokens})
    assert line is not None and line.endswith("[tokens: 12,345 in, 678 out]")
    line = render_event({"event": "candidate", "path": "/r/kernels/r001_a0.py", "tokens": tokens})
    assert line == "  optimizer: wrote kernels/r001_a0.py [tokens: 12,345 in, 678 out]"
    assert render_event({"event": "candidate", "path": "/r/kernels/r001_a0.py"}) is None  # offline: the verdict says it
    line = render_event({"event": "llm_retry", "node": "judger", "retry": 1, "retries": 4, "wait_s": 2.0,
                         "error": "InternalServerError: 500"})
    assert line == "  judger: LLM call failed (InternalServerError: 500); retry 1 of 4 in 2.0 s"



def test_a_round_with_no_time_left_for_a_sweep_stops_on_the_budget_not_as_exhausted(tmp_path, add_problem,
                                                                                      monkeypatch):
    # The run's budget is not spent when the round begins, but its sweep deadline (the budget less the
    # reserve to verify) is: no sweep starts, and the stop says time, not that the search was exhausted.
    import kernelopt.nodes.tune as tune

    monkeypatch.setattr(tune, "sweep_deadline", lambda task, ctx: 0.0)
    final, _ = run_graph(_inputs(add_problem), fast_context(tmp_path, max_wall_s=1000, max_rounds=2))
    assert final["stop_reason"].startswith("time_budget: ") and "too little left for a sweep" in final["stop_reason"]
    assert not list(Path(final["run_dir"]).glob("sweeps/round-*.json"))
    assert final["best"] is not None and final["best"].round == 0


def test_a_move_whose_check_the_budget_kept_from_starting_is_not_measured() -> None:
    from kernelopt.offline.structures import measured_moves

    rows = [{"move": "softmax.one_read", "rule": "time-budget", "time_ms": None},
            {"move": "softmax.looped_online", "rule": "incorrect", "time_ms": None},
            {"move": "softmax.split_row", "rule": None, "time_ms": 1.0}]
    assert measured_moves([{"rows": rows}]) == {"softmax.looped_online", "softmax.split_row"}
