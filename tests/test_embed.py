"""kernelopt inside another LangGraph graph: examples/embed_agent.py on the tiny add problem."""

from __future__ import annotations

import importlib.util
import operator
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, NotRequired

import pytest
from helpers import DATA, EXAMPLES, fast_context
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict


@pytest.fixture(scope="module")
def embed() -> ModuleType:
    """examples/embed_agent.py imported by path (examples/ is no package)."""
    path = EXAMPLES / "embed_agent.py"
    spec = importlib.util.spec_from_file_location("kernelopt_example_embed_agent", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # TypedDicts with `from __future__ import annotations` resolve by module
    spec.loader.exec_module(module)
    return module


def _request() -> dict[str, Any]:
    return {"problem_path": str(DATA / "add" / "problem.py"), "kernel_path": str(DATA / "add" / "kernel_base.py")}


def _check_report(report: dict[str, Any], tmp_path: Path, rounds: int) -> None:
    assert report["stop_reason"] == "max_rounds"
    assert report["rounds"] == rounds
    assert isinstance(report["best_time_ms"], float) and report["best_time_ms"] > 0
    assert Path(report["run_dir"]).is_relative_to(tmp_path / "runs")  # the parent's context reached kernelopt
    best = Path(report["best_kernel_path"])
    assert best.is_file() and "class ModelNew" in best.read_text()


def test_kernelopt_invoked_from_a_parent_node(embed, tmp_path):
    parent = embed.build_parent_graph().compile()
    final = parent.invoke({"kernel_request": _request()}, context=fast_context(tmp_path, max_rounds=1))
    assert set(final) == {"kernel_request", "report"}  # the parent's own schema, nothing of kernelopt's
    _check_report(final["report"], tmp_path, rounds=1)


class _ParentWithItsOwnAttempts(TypedDict):
    """A parent that keeps an accumulating `attempts` list of its own, beside kernelopt's keys."""

    kernel_request: dict[str, Any]
    attempts: Annotated[list[str], operator.add]
    problem_source: NotRequired[str]
    kernel_source: NotRequired[str | None]
    stop_reason: NotRequired[str | None]
    best: NotRequired[Any]
    run_dir: NotRequired[str]
    report: NotRequired[dict[str, Any]]


def test_kernelopt_as_a_subgraph_keeps_its_attempts_to_itself(embed, tmp_path):
    from kernelopt.graph import build_graph

    kernelopt = build_graph().compile()
    output_keys = set(kernelopt.get_output_jsonschema()["properties"])
    assert {"stop_reason", "best", "run_dir"} <= output_keys
    assert not {"attempts", "tried_hashes"} & output_keys

    # the example's subgraph wiring: an input adapter fills kernelopt's input keys, the
    # subgraph writes back stop_reason, best, ... by key, and summarize condenses them
    final = embed.build_subgraph_parent().compile().invoke(
        {"kernel_request": _request()}, context=fast_context(tmp_path, max_rounds=0),
    )
    _check_report(final["report"], tmp_path, rounds=0)
    assert final["stop_reason"] == "max_rounds" and final["best"].time_ms == final["report"]["best_time_ms"]
    assert "attempts" not in final and "tried_hashes" not in final

    # a parent with an `attempts` reducer of its own: kernelopt's attempt (the starting
    # kernel, verified) must not be appended to it
    builder = StateGraph(_ParentWithItsOwnAttempts)
    builder.add_node("prepare", lambda state: embed._kernelopt_input(state["kernel_request"]))
    builder.add_node("kernelopt", kernelopt)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "kernelopt")
    builder.add_edge("kernelopt", END)
    verdicts: list[dict[str, Any]] = []
    final = {}
    for namespace, mode, chunk in builder.compile().stream(
        {"kernel_request": _request(), "attempts": ["the parent's own"]},
        context=fast_context(tmp_path, max_rounds=0), stream_mode=["custom", "values"], subgraphs=True,
    ):
        if mode == "custom" and chunk.get("event") == "verdict":
            verdicts.append(chunk)
        elif mode == "values" and not namespace:
            final = chunk
    assert [v["outcome"] for v in verdicts] == ["faster"]  # kernelopt did record an attempt inside
    assert final["stop_reason"] == "max_rounds" and final["best"] is not None
    assert final["attempts"] == ["the parent's own"]


def test_a_run_folder_under_a_served_langgraph_project_is_warned_about(tmp_path, capsys):
    """`langgraph dev` restarts on every file written under the folder it serves (the one holding
    langgraph.json): a run folder there is said to be a problem; elsewhere nothing is said."""
    from kernelopt.runs import new_run_dir

    project = tmp_path / "project"
    project.mkdir()
    (project / "langgraph.json").write_text("{}")
    elsewhere = new_run_dir(tmp_path / "runs", "problem text")
    assert elsewhere.is_dir() and capsys.readouterr().err == ""
    served = new_run_dir(project / "kernelopt_runs", "problem text")
    err = capsys.readouterr().err
    assert served.is_dir() and f"lies under {project}, which holds langgraph.json" in err
    assert len(err.strip().splitlines()) == 1


def test_the_embedding_example_writes_its_runs_to_the_cache_folder_by_default():
    import inspect

    spec = importlib.util.spec_from_file_location("embed_agent", EXAMPLES / "embed_agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert inspect.signature(module.main).parameters["runs_dir"].default is None  # Context: the cache folder
