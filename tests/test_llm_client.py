"""The real client path: ChatOpenAI against a local OpenAI-compatible server, the graph end to end.

No chat model is injected: the nodes build ChatOpenAI from the Context, so retries, timeouts,
structured output and token counting are exercised as a user's run exercises them.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, completion, error, malformed_body, rejects_json_schema
from helpers import fast_context, run_graph
from scripted import DATA, diagnosis_reply, kernel_reply

from kernelopt.context import Context
from kernelopt.llm import LLMUnavailable, RetryPolicy, invoke_with_retries, make_chat_model


def _inputs(problem: Path, kernel: str = "kernel_base.py") -> dict[str, str]:
    return {"problem_source": problem.read_text(), "kernel_source": (DATA / "add" / kernel).read_text()}


def _context(tmp_path: Path, server: FakeOpenAI, **overrides: Any) -> Context:
    settings: dict[str, Any] = {"model": "fake-model", "base_url": server.url, "api_key": "test", "max_rounds": 1,
                                "llm_timeout_s": 2.0, "llm_backoff_s": 0.01, "llm_max_retries": 3}
    return fast_context(tmp_path, **(settings | overrides))


def structured_diagnosis(fix: str = "raise BLOCK_SIZE to 1024") -> str:
    """A judger reply as a strict json_schema response: {"bottlenecks": [...]}, nothing else."""
    return json.dumps({"bottlenecks": [{
        "category": "latency",
        "summary": "64-element programs leave the launch dominated by scheduling.",
        "reasoning": "An elementwise add with one load per input per element.",
        "root_causes": ["BLOCK_SIZE of 64 is too small"],
        "recommended_fixes": [fix],
    }]})


def _outcomes(events: list[dict]) -> list[str]:
    return [e["outcome"] for e in events if e["event"] == "verdict"]


def _schema_of(request: dict[str, Any]) -> dict[str, Any] | None:
    return request.get("response_format")


def test_structured_diagnosis_and_faster_kernel_with_token_counts(tmp_path, add_problem):
    script = [completion(structured_diagnosis(), 1200, 80), completion(kernel_reply("kernel_fast.py"), 2000, 400)]
    with FakeOpenAI(script) as server:
        final, events = run_graph(_inputs(add_problem), _context(tmp_path, server))
    assert _outcomes(events) == ["faster", "faster"]
    assert final["stop_reason"] == "max_rounds"
    assert "BLOCK_SIZE = 1024" in Path(final["best"].path).read_text()
    judge, optimize = server.requests
    schema = _schema_of(judge)
    assert schema and schema["type"] == "json_schema" and schema["json_schema"]["strict"] is True
    assert schema["json_schema"]["schema"]["required"] == ["bottlenecks"]
    assert _schema_of(optimize) is None  # the optimizer wants a kernel, not JSON
    assert judge["model"] == "fake-model"
    assert "BLOCK_SIZE of 64 is too small" in server.prompts()[1]  # the structured diagnosis reached the optimizer
    diagnosis = next(e for e in events if e["event"] == "diagnosis")
    assert diagnosis["source"] == "llm" and diagnosis["fix"] == "raise BLOCK_SIZE to 1024"
    assert final["tokens"] == {"judger": {"input": 1200, "output": 80, "calls": 1},
                               "optimizer": {"input": 2000, "output": 400, "calls": 1}}
    assert diagnosis["tokens"] == {"input": 1200, "output": 80, "calls": 1}
    candidate = next(e for e in events if e["event"] == "candidate" and e["round"] == 1)
    assert candidate["tokens"] == {"input": 3200, "output": 480, "calls": 2}
    assert server.unscripted == 0


def test_server_errors_are_retried_until_a_reply(tmp_path, add_problem):
    script = [error(500), error(502), completion(structured_diagnosis()), completion(kernel_reply("kernel_fast.py"))]
    with FakeOpenAI(script) as server:
        final, events = run_graph(_inputs(add_problem), _context(tmp_path, server))
    assert len(server.requests) == 4  # the judger's call took three requests
    retries = [e for e in events if e["event"] == "llm_retry"]
    assert [(e["node"], e["retry"]) for e in retries] == [("judger", 1), ("judger", 2)]
    assert "502" in retries[1]["error"]
    assert _outcomes(events) == ["faster", "faster"] and final["stop_reason"] == "max_rounds"
    assert final["tokens"]["judger"]["calls"] == 1  # failed requests spend no tokens


def test_a_timed_out_call_is_retried(tmp_path, add_problem):
    script = [completion(structured_diagnosis(), delay_s=4.0), completion(structured_diagnosis()),
              completion(kernel_reply("kernel_fast.py"))]
    with FakeOpenAI(script) as server:
        started = time.monotonic()
        final, events = run_graph(_inputs(add_problem), _context(tmp_path, server, llm_timeout_s=1.0))
        elapsed_s = time.monotonic() - started
    retry = next(e for e in events if e["event"] == "llm_retry")
    assert "Timeout" in retry["error"]
    assert server.request_times[1] - server.request_times[0] < 3.0  # the client gave up after ~1 s, not 4
    assert _outcomes(events) == ["faster", "faster"] and final["stop_reason"] == "max_rounds"
    assert elapsed_s < 60


def test_endpoint_down_stops_the_run_and_keeps_the_best(tmp_path, add_problem):
    with FakeOpenAI(default=error(503, "upstream model server is down")) as server:
        final, events = run_graph(_inputs(add_problem), _context(tmp_path, server, llm_max_retries=2))
    assert final["stop_reason"].startswith("llm_unavailable: 3 calls failed")
    assert "upstream model server is down" in final["stop_reason"]
    assert len(server.requests) == 3
    assert _outcomes(events) == ["faster"]  # only the starting kernel was verified
    assert final["best"] is not None and final["best"].round == 0
    best_on_disk = Path(final["run_dir"], "best_kernel.py").read_text()
    assert best_on_disk == (DATA / "add" / "kernel_base.py").read_text()


def test_rejected_json_schema_falls_back_to_text_for_the_rest_of_the_run(tmp_path, add_problem):
    script = [
        rejects_json_schema(completion(diagnosis_reply())), completion(kernel_reply("kernel_fast.py")),
        completion(diagnosis_reply("compute")), completion(kernel_reply("kernel_slow.py")),
    ]
    with FakeOpenAI(script) as server:
        final, events = run_graph(_inputs(add_problem), _context(tmp_path, server, max_rounds=2, patience=5))
    asked_schema = [_schema_of(r) is not None for r in server.requests]
    # round 1: refused (400), asked again as text; round 2: text at once, remembered
    assert asked_schema == [True, False, False, False, False]
    diagnoses = [e for e in events if e["event"] == "diagnosis"]
    assert [d["source"] for d in diagnoses] == ["llm", "llm"]
    assert "json_schema unsupported" in diagnoses[0]["note"] and diagnoses[1]["note"] is None
    assert diagnoses[1]["category"] == "compute"
    assert _outcomes(events) == ["faster", "faster", "slower"] and final["stop_reason"] == "max_rounds"
    assert server.unscripted == 0


def test_malformed_structured_reply_falls_back_to_text(tmp_path, add_problem):
    cut = structured_diagnosis()[:60]  # the server's "JSON" stops mid-object
    script = [completion(cut), completion(diagnosis_reply()), completion(kernel_reply("kernel_fast.py"))]
    with FakeOpenAI(script) as server:
        final, events = run_graph(_inputs(add_problem), _context(tmp_path, server))
    assert [_schema_of(r) is not None for r in server.requests] == [True, False, False]
    diagnosis = next(e for e in events if e["event"] == "diagnosis")
    assert diagnosis["source"] == "llm" and "not JSON" in diagnosis["note"]
    assert _outcomes(events) == ["faster", "faster"]
    assert final["tokens"]["judger"]["calls"] == 2


def test_unusable_replies_become_repair_feedback(tmp_path, add_problem):
    fast = (DATA / "add" / "kernel_fast.py").read_text()
    truncated = "Here it is.\n\n```python\n" + fast[: fast.index("add_kernel[(") + 15]  # cut mid-launch
    script = [
        completion(structured_diagnosis()),
        completion("I would raise the block size to 1024 so fewer programs launch."),  # prose only
        completion(""),  # no code at all
        completion(kernel_reply("kernel_fast.py") + "\nOr this one:\n" + kernel_reply("kernel_slow.py")),
        completion(truncated, finish_reason="length"),
        completion(kernel_reply("kernel_fast.py").replace("class ModelNew", "class FastAdd")),
        completion(kernel_reply("kernel_fast.py")),
    ]
    with FakeOpenAI(script) as server:
        final, events = run_graph(_inputs(add_problem), _context(tmp_path, server, max_repairs=5))
    assert _outcomes(events) == ["faster", "failed", "failed", "failed", "failed", "failed", "faster"]
    prompts = server.prompts()
    # each repair prompt carries what was wrong with the reply before it
    assert "reply contains no code" in prompts[2]
    assert "reply contains no code" in prompts[3]
    assert "reply holds 2 candidate kernels" in prompts[4]
    assert "kernel is truncated" in prompts[5] and "output-token limit" in prompts[5]
    assert "defines class FastAdd, not ModelNew" in prompts[6]
    errors = [e["error"] for e in events if e["event"] == "candidate" and e.get("error")]
    assert len(errors) == 5
    assert final["stop_reason"] == "max_rounds" and "BLOCK_SIZE = 1024" in Path(final["best"].path).read_text()


# --- the retry loop on its own, through the real client ----------------------------------------


def _model(server_url: str, **overrides: Any) -> Any:
    return make_chat_model(Context(**({"model": "fake-model", "base_url": server_url, "api_key": "test",
                                       "llm_timeout_s": 2.0} | overrides)))


def test_retry_after_is_honoured_within_the_cap():
    waits: list[float] = []
    script = [error(429, retry_after_s=0.4), error(429, retry_after_s=30), completion("done")]
    with FakeOpenAI(script) as server:
        reply = invoke_with_retries(_model(server.url), "hi", RetryPolicy(3, backoff_s=0.01, max_backoff_s=0.8),
                                    on_retry=lambda n, wait_s, err: waits.append(wait_s))
    assert reply.content == "done"
    assert waits == [0.4, 0.8]  # the server's wait, then the cap instead of 30 s
    gaps = [b - a for a, b in zip(server.request_times, server.request_times[1:], strict=False)]
    assert 0.35 <= gaps[0] < 2.0 and 0.75 <= gaps[1] < 2.0


def test_a_body_that_is_not_json_is_retried():
    with FakeOpenAI([malformed_body(), completion("ok")]) as server:
        reply = invoke_with_retries(_model(server.url), "hi", RetryPolicy(2, backoff_s=0.01))
    assert reply.content == "ok" and len(server.requests) == 2


def test_unreachable_endpoint_raises_after_the_retries():
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits: list[float] = []
    with pytest.raises(LLMUnavailable, match="3 calls failed; last: .*Connection"):
        invoke_with_retries(_model(f"http://127.0.0.1:{port}/v1"), "hi", RetryPolicy(2, backoff_s=0.01),
                            on_retry=lambda n, wait_s, err: waits.append(wait_s))
    assert waits == [0.01, 0.02]  # exponential backoff from the Context's base


def test_client_errors_are_not_retried():
    import openai

    with FakeOpenAI([error(401, "bad key"), completion("never sent")]) as server:
        with pytest.raises(openai.AuthenticationError):
            invoke_with_retries(_model(server.url), "hi", RetryPolicy(3, backoff_s=0.01))
    assert len(server.requests) == 1


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again at once: nothing listens there


def test_an_unreachable_endpoint_is_one_line_naming_it_before_any_work(tmp_path, add_problem):
    import subprocess
    import sys

    url = f"http://127.0.0.1:{_closed_port()}/v1"
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", "optimize", str(add_problem), "--kernel",
         str(DATA / "add" / "kernel_base.py"), "--model", "gpt-4o", "--base-url", url, "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot reach the model endpoint {url}" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert time.monotonic() - began < 30  # argument checks only: no torch, no baselines


def test_an_unreachable_endpoint_stops_a_graph_run_in_setup(tmp_path, add_problem):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    context = fast_context(tmp_path, model="fake-model", base_url=url, api_key="test")
    final, events = run_graph(_inputs(add_problem), context)
    assert final["stop_reason"].startswith(f"llm_unavailable: cannot reach the model endpoint {url}")
    assert final["baselines"] is None and not _outcomes(events)  # nothing timed, nothing verified


def test_a_run_stopped_as_llm_unavailable_resumes_with_a_corrected_endpoint(tmp_path, add_problem):
    """The endpoint fails mid-run (exit 1, not 0); `resume --base-url` goes on from before the
    failed call, keeping the verified start, and finishes the round with the new endpoint."""
    from kernelopt.checkpoint import new_run_record
    from kernelopt.cli import main
    from kernelopt.cli_run import run_graph_to_end

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with FakeOpenAI(default=error(503, "upstream model server is down")) as down:
        context = _context(tmp_path, down, llm_max_retries=1)
        inputs = {**_inputs(add_problem), "run_dir": str(run_dir)}
        record = new_run_record(run_dir, inputs, context, None)
        assert run_graph_to_end(run_dir, None, record, context, as_json=True) == 1
    script = [completion(structured_diagnosis(), 1200, 80), completion(kernel_reply("kernel_fast.py"), 2000, 400)]
    with FakeOpenAI(script) as up:
        assert main(["resume", str(run_dir), "--base-url", up.url, "--json"]) == 0
        assert len(up.requests) == 2 and up.unscripted == 0
    report = json.loads((run_dir / "report.json").read_text())
    assert report["stop_reason"] == "max_rounds", report["stop_reason"]
    assert "BLOCK_SIZE = 1024" in Path(report["best_kernel_path"]).read_text()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["outcome"] for e in events if e.get("outcome")] == ["faster", "faster"]  # the start verified once
    stops = [(e["event"], e.get("stop_reason", "")) for e in events if e["event"] in ("stopped", "resumed")]
    assert [kind for kind, _ in stops] == ["stopped", "resumed", "stopped"]
    assert stops[0][1].startswith("llm_unavailable") and stops[2][1] == "max_rounds"
