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
from helpers import DATA
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
    default_runs_dir: Path  # where a run with no runs_dir goes: the user's cache folder

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
    """`langgraph dev` as a new user starts it (reload on, the repo's langgraph.json), on a free port,
    logging to a tmp file; always stopped.

    It serves from a folder holding a copy of langgraph.json (the package is installed), so that the
    folder it watches is one this test owns: edits elsewhere in the working tree do not restart it,
    and a run writing into the served folder would (as runs did under ./kernelopt_runs). The user's
    cache folder is a tmp one: runs with no runs_dir land there.
    """
    home = tmp_path_factory.mktemp("langgraph_dev")
    served = home / "project"
    served.mkdir()
    (served / "langgraph.json").write_text((REPO / "langgraph.json").read_text())
    log_path = home / "server.log"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_", "KERNELOPT_"))}
    env.update(LANGGRAPH_CLI_NO_ANALYTICS="1", LANGSMITH_TRACING="false", PYTHONUNBUFFERED="1", NO_COLOR="1",
               XDG_CACHE_HOME=str(home / "cache"))
    command = [sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--host", "127.0.0.1", "--port", str(port)]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, cwd=served, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _is_ok(url):
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{_tail(log_path)}")
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev not ready in {STARTUP_TIMEOUT_S:.0f}s:\n{_tail(log_path)}")
            time.sleep(0.5)
        yield Server(url, log_path, home / "cache" / "kernelopt" / "runs")
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
        assert {"setup", "review", "verifier", "accept", "profile", "judger", "optimizer", "report", "__start__",
                "__end__"} <= nodes
        edges = {(e["source"], e["target"]) for e in found["edges"]}
        for target in ("optimizer", "judger", "report"):
            assert ("verifier", target) in edges, f"no edge verifier -> {target}"
            assert ("review", target) in edges, f"no edge review -> {target}"  # every candidate turned down
        for target in ("optimizer", "judger", "profile", "report"):
            assert ("accept", target) in edges, f"no edge accept -> {target}"
        assert ("verifier", "accept") in edges  # a new best is taken there (with approve on, once the person says yes)
        assert ("verifier", "profile") not in edges  # the verifier takes no best itself
        assert {("__start__", "setup"), ("setup", "verifier"), ("setup", "optimizer"), ("judger", "optimizer"),
                ("optimizer", "review"), ("review", "verifier"), ("profile", "judger"), ("profile", "report")} <= edges
        # every way to the end passes the report node
        assert {s for s, t in edges if t == "__end__"} == {"report"}, edges


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
        # the start or one of round 1's two candidates (r001_a0.py, r001_a0_b1.py): which is faster
        # under the interpreter is the host's to decide
        assert Path(final["best"]["path"]).name in ("r000_a0.py", "r001_a0.py", "r001_a0_b1.py")


def test_a_run_with_the_default_settings_runs_to_its_end_with_no_reload_and_leaves_its_report(server, tmp_path):
    inputs = {
        "problem_source": (DATA / "add" / "problem.py").read_text(),
        "kernel_source": (DATA / "add" / "kernel_base.py").read_text(),
    }
    context = {"max_rounds": 1, "time_compile": False, "seeds": 2}  # no runs_dir: a new user's default

    async def run() -> tuple[list[Any], dict[str, Any]]:
        client = get_client(url=server.url)
        thread = await client.threads.create()
        updates = []
        async for part in client.runs.stream(thread["thread_id"], await _assistant_id(client), input=inputs,
                                             context=context, stream_mode="updates"):
            if part.event == "updates":
                updates.append(part.data)
        return updates, (await client.threads.get_state(thread["thread_id"]))["values"]

    with server.showing_log():
        updates, final = asyncio.run(asyncio.wait_for(run(), RUN_TIMEOUT_S))
        assert final["stop_reason"] == "max_rounds", final
        run_dir = Path(final["run_dir"])
        assert run_dir.parent == server.default_runs_dir  # the user's cache folder, not the served one
        log = server.log.read_text(errors="replace")
        assert "Reloading" not in log and "WatchFiles detected changes" not in log, "the server restarted mid-run"
        assert "Background run failed" not in log
        # each node's update says what it did: the optimizer's (it writes only internal keys) too
        names = [name for update in updates for name in update]
        assert names[-1] == "report" and "optimizer" in names
        assert all(update[name] and update[name].get("progress") for update in updates for name in update), updates
        optimizer = next(u["optimizer"]["progress"] for u in updates if "optimizer" in u)
        assert optimizer["kernel"] == "r001_a0.py" and optimizer["change"]
        for name in ("report.json", "report.md", "roofline.png"):
            assert (run_dir / name).is_file(), name  # written by the graph, not by a CLI
    proc = subprocess.run([sys.executable, "-m", "kernelopt.cli", "report", str(run_dir)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_checkpoints_read_back_know_kernelopts_records(server):
    """Runs first in this module resumed from checkpoints (the approval questions): no warning each time."""
    log = server.log.read_text(errors="replace")
    assert "Deserializing unregistered type" not in log and "Blocked deserialization" not in log
