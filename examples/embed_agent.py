"""Embedding kernelopt in another LangGraph graph, two ways.

A parent agent receives a `kernel_request` (the paths of a KernelBench problem and of a
starting Triton kernel) and wants back a short `report`. kernelopt does the work in between.

1. As a node that *invokes* kernelopt (`build_parent_graph`): the node reads the parent's
   state, calls `build_graph().compile().invoke(...)` with kernelopt's own input, and maps
   kernelopt's output back into the parent's state. The two states share no keys, so the
   parent's schema stays its own; the node is the only adapter.

2. As a *subgraph* node (`build_subgraph_parent`): the compiled kernelopt graph is added with
   `add_node` directly. LangGraph then passes the parent's state in and merges kernelopt's
   output back by key, so the parent's state declares the keys it exchanges with kernelopt
   (`problem_source`, `kernel_source` in; `stop_reason`, `best`, `run_dir`, `round` out), and a
   small input adapter node fills them from the request before the subgraph runs. Either way
   kernelopt's accumulating lists (`attempts`, `tried_hashes`) stay inside it: its output
   schema leaves them out, so they never land in the parent.

In both, the parent's run-scoped settings are kernelopt's `Context` (`context_schema`), so
whatever context the parent is invoked with reaches kernelopt's nodes too.

Run it (offline policy, one round; without a GPU the harness runs kernels under Triton's
interpreter, and the times it reports are not GPU times):

    python examples/embed_agent.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NotRequired

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from kernelopt.context import Context
from kernelopt.graph import build_graph
from kernelopt.records import KernelRecord


class KernelRequest(TypedDict):
    """What the parent agent was asked to speed up."""

    problem_path: str
    kernel_path: str | None


class ParentState(TypedDict):
    """The parent's own state: a request in, a report out. It knows nothing of kernelopt's keys."""

    kernel_request: KernelRequest
    report: NotRequired[dict[str, Any]]


def _kernelopt_input(request: KernelRequest) -> dict[str, Any]:
    """kernelopt's InputState for a request: the problem's (and kernel's) text and paths."""
    kernel_path = request.get("kernel_path")
    return {
        "problem_source": Path(request["problem_path"]).read_text(),
        "problem_path": str(Path(request["problem_path"]).resolve()),
        "kernel_source": Path(kernel_path).read_text() if kernel_path else None,
        "kernel_path": str(Path(kernel_path).resolve()) if kernel_path else None,
    }


def _report(result: dict[str, Any]) -> dict[str, Any]:
    """The few JSON-native figures the parent keeps from kernelopt's output."""
    best: KernelRecord | dict[str, Any] | None = result.get("best")
    if isinstance(best, dict):  # e.g. after a round trip through JSON (a server, a checkpoint)
        time_ms, clock, kernel = best["timing"]["median_ms"], best["timing"]["clock"], best["path"]
    elif best is not None:
        time_ms, clock, kernel = best.time_ms, best.timing.clock, best.path
    else:
        time_ms, clock, kernel = None, None, None
    run_dir = result.get("run_dir") or ""
    return {
        "stop_reason": result.get("stop_reason"),
        "best_time_ms": time_ms,
        "clock": clock,  # "cuda_events" on a GPU; otherwise not GPU performance
        "best_kernel_path": str(Path(run_dir) / "best_kernel.py") if best is not None and run_dir else None,
        "best_candidate_path": kernel,
        "run_dir": run_dir,
        "rounds": result.get("round", 0),
    }


# ── 1. kernelopt invoked from inside a node ─────────────────────────────────────────────


def build_parent_graph(chat_model: BaseChatModel | None = None) -> StateGraph:
    """request -> optimize_kernel (invokes kernelopt) -> report."""
    kernelopt = build_graph(chat_model).compile()  # compile once, invoke per request

    def optimize_kernel(state: ParentState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Map the request in, run kernelopt to the end, map its output back as the report."""
        result = kernelopt.invoke(_kernelopt_input(state["kernel_request"]), context=runtime.context)
        return {"report": _report(result)}

    builder = StateGraph(ParentState, context_schema=Context)
    builder.add_node("optimize_kernel", optimize_kernel)
    builder.add_edge(START, "optimize_kernel")
    builder.add_edge("optimize_kernel", END)
    return builder


# ── 2. the compiled kernelopt graph as a subgraph node ──────────────────────────────────


class SubgraphParentState(ParentState):
    """The parent's state plus the keys it shares with kernelopt's input and output schemas.

    Only these keys cross the boundary: kernelopt's other output keys (`baselines`,
    `roofline`, ...) are dropped because the parent has no channel for them.
    """

    problem_source: NotRequired[str]
    kernel_source: NotRequired[str | None]
    problem_path: NotRequired[str | None]
    kernel_path: NotRequired[str | None]
    stop_reason: NotRequired[str | None]
    best: NotRequired[KernelRecord | None]
    run_dir: NotRequired[str]
    round: NotRequired[int]


def build_subgraph_parent(chat_model: BaseChatModel | None = None) -> StateGraph:
    """request -> prepare (input adapter) -> kernelopt (subgraph) -> summarize."""

    def prepare(state: SubgraphParentState) -> dict[str, Any]:
        """The input adapter: fill kernelopt's input keys from the parent's request."""
        return _kernelopt_input(state["kernel_request"])

    def summarize(state: SubgraphParentState) -> dict[str, Any]:
        """The output adapter: condense what kernelopt wrote back into the parent's report."""
        return {"report": _report(dict(state))}

    builder = StateGraph(SubgraphParentState, context_schema=Context)
    builder.add_node("prepare", prepare)
    builder.add_node("kernelopt", build_graph(chat_model).compile())
    builder.add_node("summarize", summarize)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "kernelopt")
    builder.add_edge("kernelopt", "summarize")
    builder.add_edge("summarize", END)
    return builder


def main(runs_dir: str | None = None) -> int:
    """Optimize examples/swish for one round with the offline policy, both ways; print the reports."""
    swish = Path(__file__).parent / "swish"
    request: KernelRequest = {"problem_path": str(swish / "problem.py"), "kernel_path": str(swish / "kernel.py")}
    context = Context(max_rounds=1, time_compile=False, runs_dir=runs_dir)  # no model named: offline
    for name, build in (("node", build_parent_graph), ("subgraph", build_subgraph_parent)):
        final = build().compile().invoke({"kernel_request": request}, context=context)
        report = final["report"]
        print(f"[{name}] stopped: {report['stop_reason']} after {report['rounds']} round(s)")
        if report["best_time_ms"] is None:
            return 1
        note = "" if report["clock"] == "cuda_events" else " (Triton interpreter on CPU: not GPU performance)"
        print(f"[{name}] best time: {report['best_time_ms']:.4f} ms{note}")
        print(f"[{name}] best kernel: {report['best_kernel_path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
