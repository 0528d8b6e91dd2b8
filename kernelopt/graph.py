"""The kernelopt graph: setup -> verifier -> profile -> judger -> optimizer -> review -> verifier -> ... -> report

setup ─▶ verifier ─┬─ new best ─▶ accept ─▶ profile ─┬─ at roofline ─▶ report ─▶ END
  │        ▲       │                                 └─▶ judger ─▶ optimizer ─▶ review ─┐
  │        │       ├─ failed, repairs left ─▶ optimizer (a repair per failed candidate)  │
  │        │       ├─ otherwise ─▶ judger (next idea)                                    │
  │        │       └─ stop (max rounds, no gain, no correct kernel) ─▶ report ─▶ END     │
  │        └─────────────────────────────────────────────────────────────────────────────┘
  └─ no kernel ─▶ optimizer (writes the first one)

The nodes that decide (setup, review, verifier, accept, profile, judger) return
Command[Literal[...]], the route and the update together; every stop rule is in
nodes/stop.py's should_stop, and a step's end (attempts, counters, where next) in nodes/conclude.py.

Every way to the end passes the report node, so every run, however started (CLI, studio,
SDK, embedded, resumed), leaves report.json, report.md and roofline.png in its run directory.

The verifier knows nothing of approval. With Context.approve the review node asks the person
before each candidate is tried, and the accept node asks before a new best over an existing one
is taken: both through LangGraph's interrupt(), so compile with a checkpointer. Without it,
review passes the candidates on and accept takes the new best.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, StateGraph
from langgraph.graph.state import CompiledStateGraph

from kernelopt.checkpoint import knowing_records
from kernelopt.context import Context
from kernelopt.nodes import watch
from kernelopt.nodes.accept import accept
from kernelopt.nodes.judger import make_judger
from kernelopt.nodes.optimizer import make_optimizer
from kernelopt.nodes.profile import profile
from kernelopt.nodes.report import report
from kernelopt.nodes.review import review_step
from kernelopt.nodes.setup import make_setup
from kernelopt.nodes.verifier import verify
from kernelopt.state import InputState, KernelOptState, OutputState

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


def build_graph(chat_model: BaseChatModel | Mapping[str, BaseChatModel] | None = None) -> StateGraph:
    """The uncompiled graph, for embedding: compile it with the checkpointer you choose.

    `chat_model` serves the judger and optimizer: one model, or several by name ({"a": ..., "b": ...}),
    which share each round's candidates (the first judges; see nodes/models.py). Without it they
    use the models the run's Context names, and with no model named the offline policy.
    """
    builder = StateGraph(KernelOptState, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("setup", watch.watched(make_setup(chat_model), watch.setup))
    # only with Context.approve does review ask anything: else it passes the candidates on
    builder.add_node("review", watch.watched(review_step, watch.review))
    builder.add_node("verifier", watch.watched(verify, watch.verification("verifier")))
    builder.add_node("profile", watch.watched(profile, watch.profile))
    builder.add_node("judger", watch.watched(make_judger(chat_model), watch.judger))
    # The optimizer is reached only through Send, each branch with a Branch of its own (not the
    # state); naming the state as its input schema keeps Branch's keys out of the graph's channels.
    # Its branches run side by side: one that fails leaves the run's reference processes to the others.
    builder.add_node(
        "optimizer", watch.watched(make_optimizer(chat_model), watch.optimizer, release=False),
        input_schema=KernelOptState,
    )
    # a step with a new best: taken here (with Context.approve, once the person says yes)
    builder.add_node("accept", watch.watched(accept, watch.verification("accept")))
    builder.add_node("report", report)

    builder.set_entry_point("setup")
    # The nodes that decide return Command[Literal[...]]: where the run goes and the update
    # together. LangGraph draws their edges from that annotation; every stop goes to the report.
    builder.add_edge("optimizer", "review")  # review joins the optimizer's branches
    builder.add_edge("report", END)
    return builder


class StudioGraph(CompiledStateGraph):
    """The compiled graph `langgraph dev` serves.

    The server attaches its own saver through `copy(update={"checkpointer": ...})`; this
    graph gives that saver a serializer that knows kernelopt's records, so that reading a
    checkpoint back (a resumed question, a retried run) revives them without the
    "Deserializing unregistered type" warning for each.
    """

    def copy(self, update: dict[str, Any] | None = None) -> StudioGraph:
        saver = (update or {}).get("checkpointer")
        if isinstance(saver, BaseCheckpointSaver):
            update = {**(update or {}), "checkpointer": knowing_records(saver)}
        return super().copy(update)


def _studio(compiled: CompiledStateGraph) -> StudioGraph:
    return StudioGraph(**{k: v for k, v in vars(compiled).items() if k != "__orig_class__"})


graph = _studio(build_graph().compile())
