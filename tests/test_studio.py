"""`langgraph dev` serves the graph from langgraph.json; langgraph-sdk drives it as the studio does."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA
from langgraph_sdk import get_client

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 90.0
RUN_TIMEOUT_S = 150.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _is_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ok", timeout=2) as reply:
            return reply.status == 200 and json.loads(reply.read()).get("ok") is True
    except (OSError, ValueError):
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate the server and whatever it started (its own process group)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


def _tail(log: Path, chars: int = 20000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else "(no log)"


@dataclass(frozen=True)
class Server:
    url: str
    log: Path

    @contextmanager
    def showing_log(self) -> Iterator[None]:
        """On any failure inside, print the server's log (pytest shows it with the failure)."""
        try:
            yield
        except BaseException:
            print(f"--- langgraph dev log ({self.log})\n{_tail(self.log)}")
            raise


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`langgraph dev` on a free port from the repo root, logging to a tmp file; always stopped."""
    log_path = tmp_path_factory.mktemp("langgraph_dev") / "server.log"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_"))}
    env.update(LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false", PYTHONUNBUFFERED="1", NO_COLOR="1")
    command = [
        sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload",
        "--host", "127.0.0.1", "--port", str(port),
    ]
    # --no-reload: edits elsewhere in the working tree must not restart the server mid-run
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _is_ok(url):
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{_tail(log_path)}")
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev not ready in {STARTUP_TIMEOUT_S:.0f}s:\n{_tail(log_path)}")
            time.sleep(0.5)
        yield Server(url, log_path)
    finally:
        _stop(proc)


async def _assistant_id(client: Any) -> str:
    found = await client.assistants.search(graph_id="kernelopt")
    assert found, "langgraph dev serves no assistant for the graph 'kernelopt'"
    return found[0]["assistant_id"]


def test_schema_shows_the_context_fields_with_their_descriptions(server):
    async def schemas() -> dict[str, Any]:
        client = get_client(url=server.url)
        return await client.assistants.get_schemas(await _assistant_id(client))

    with server.showing_log():
        found = asyncio.run(schemas())
        context = found["context_schema"]["properties"]
        for name in ("model", "base_url", "max_rounds", "patience", "max_repairs", "gpu", "seeds", "runs_dir"):
            assert context[name].get("description"), f"context field {name!r} has no description in the studio"
        assert "rounds" in context["max_rounds"]["description"]
        assert context["max_rounds"]["default"] == 5 and context["max_rounds"]["type"] == "integer"
        inputs = found["input_schema"]["properties"]
        assert {"problem_source", "kernel_source"} <= set(inputs)
        outputs = set(found["output_schema"]["properties"])
        assert {"stop_reason", "best", "run_dir"} <= outputs and "attempts" not in outputs


def test_graph_drawing_has_every_node_and_edge(server):
    async def drawing() -> dict[str, Any]:
        client = get_client(url=server.url)
        return await client.assistants.get_graph(await _assistant_id(client))

    with server.showing_log():
        found = asyncio.run(drawing())
        nodes = {n["id"] for n in found["nodes"]}
        assert {"setup", "verifier", "accept", "profile", "judger", "optimizer", "__start__", "__end__"} <= nodes
        edges = {(e["source"], e["target"]) for e in found["edges"]}
        for target in ("optimizer", "judger", "profile", "__end__"):
            assert ("verifier", target) in edges, f"no edge verifier -> {target}"
            assert ("accept", target) in edges, f"no edge accept -> {target}"
        assert ("verifier", "accept") in edges  # with approve on, a new best waits there for the person
        assert {("__start__", "setup"), ("setup", "verifier"), ("setup", "optimizer"), ("judger", "optimizer"),
                ("optimizer", "verifier"), ("profile", "judger"), ("profile", "__end__")} <= edges


def test_a_run_through_the_server_uses_the_context(server, tmp_path):
    runs_dir = tmp_path / "runs"
    inputs = {
        "problem_source": (DATA / "add" / "problem.py").read_text(),
        "kernel_source": (DATA / "add" / "kernel_base.py").read_text(),
    }
    context = {"max_rounds": 1, "time_compile": False, "seeds": 2, "runs_dir": str(runs_dir)}

    async def run() -> dict[str, Any]:
        client = get_client(url=server.url)
        thread = await client.threads.create()
        return await asyncio.wait_for(
            client.runs.wait(thread["thread_id"], await _assistant_id(client), input=inputs, context=context),
            RUN_TIMEOUT_S,
        )

    with server.showing_log():
        final = asyncio.run(run())
        assert isinstance(final, dict), final
        assert final.get("stop_reason") == "max_rounds", final  # max_rounds=1 (the default is 5) reached the nodes
        assert final["round"] == 1
        run_dir = Path(final["run_dir"])
        assert run_dir.parent == runs_dir  # runs_dir reached setup: the run landed under tmp
        assert (run_dir / "best_kernel.py").is_file() and (run_dir / "events.jsonl").is_file()
        best = final["best"]
        assert best["timing"]["median_ms"] > 0 and best["timing"]["clock"] == "interpreter"
        assert Path(best["path"]).is_relative_to(run_dir)
        assert final["baselines"]["compile"] is None  # time_compile=False reached setup
        assert "attempts" not in final  # the output schema keeps the accumulating list inside


def test_a_run_with_approval_stops_at_each_question_and_resumes_with_command(server, tmp_path):
    inputs = {
        "problem_source": (DATA / "add" / "problem.py").read_text(),
        "kernel_source": (DATA / "add" / "kernel_slow.py").read_text(),
    }
    context = {"max_rounds": 1, "time_compile": False, "seeds": 2, "runs_dir": str(tmp_path / "runs"), "approve": True}

    async def run() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        client = get_client(url=server.url)
        assistant = await _assistant_id(client)
        thread_id = (await client.threads.create())["thread_id"]
        await asyncio.wait_for(client.runs.wait(thread_id, assistant, input=inputs, context=context), RUN_TIMEOUT_S)
        asked: list[dict[str, Any]] = []
        for _ in range(5):
            state = await client.threads.get_state(thread_id)
            questions = state.get("interrupts") or [i for t in state["tasks"] for i in t.get("interrupts", [])]
            if not questions:
                return asked, state["values"]
            asked += [q["value"] for q in questions]
            resume = {q["id"]: {"action": "approve"} for q in questions}
            await asyncio.wait_for(
                client.runs.wait(thread_id, assistant, command={"resume": resume}, context=context), RUN_TIMEOUT_S
            )
        raise AssertionError(f"still asking after 5 answers: {asked}")

    with server.showing_log():
        asked, final = asyncio.run(run())
        assert [q["question"] for q in asked][:1] == ["try"], asked  # the run stopped before round 1's rewrite
        assert asked[0]["round"] == 1 and asked[0]["kernel_path"].endswith("r001_a0.py") and asked[0]["diff"]
        assert final["stop_reason"] == "max_rounds", final
        assert Path(final["best"]["path"]).name in ("r000_a0.py", "r001_a0.py")
