"""The kernelopt graph: setup -> verifier -> profile -> judger -> optimizer -> verifier -> ...

setup ─▶ verifier ─┬─ new best ─▶ profile ─┬─ at roofline ─▶ END
  │        ▲       │                        └─▶ judger ─▶ optimizer ─┐
  │        │       ├─ failed, repairs left ─▶ optimizer              │
  │        │       ├─ otherwise ─▶ judger (next idea)                │
  │        │       └─ stop (max rounds, no gain, no correct kernel) ─▶ END
  └─ no kernel ─▶ optimizer (writes the first one) ──────────────────┘

With Context.approve the verifier asks the person before it tries each candidate, and a new
best waits for the accept node (verifier ─▶ accept ─▶ the verifier's routes), which asks
before taking it: both through LangGraph's interrupt(), so compile with a checkpointer.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, StateGraph

from kernelopt.context import Context
from kernelopt.nodes.judger import make_judger, route_after_judge
from kernelopt.nodes.optimizer import make_optimizer, route_after_optimize
from kernelopt.nodes.profile import profile, route_after_profile
from kernelopt.nodes.setup import make_setup, route_after_setup
from kernelopt.nodes.verifier import accept, route_after_accept, route_after_verify, verify
from kernelopt.state import InputState, KernelOptState, OutputState


def build_graph(chat_model: BaseChatModel | None = None) -> StateGraph:
    """The uncompiled graph, for embedding: compile it with the checkpointer you choose.

    `chat_model` serves the judger and optimizer; without it they use the model the run's
    Context names, and with no model named the offline policy.
    """
    builder = StateGraph(KernelOptState, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("setup", make_setup(chat_model))
    builder.add_node("verifier", verify)
    builder.add_node("profile", profile)
    builder.add_node("judger", make_judger(chat_model))
    builder.add_node("optimizer", make_optimizer(chat_model))
    builder.add_node("accept", accept)  # only with Context.approve: a new best waits for the person's yes

    builder.set_entry_point("setup")
    builder.add_conditional_edges("setup", route_after_setup)
    # Routers that fan out with Send name their targets, so that the studio draws every edge.
    builder.add_conditional_edges("verifier", route_after_verify, ["accept", "optimizer", "judger", "profile", END])
    builder.add_conditional_edges("accept", route_after_accept, ["optimizer", "judger", "profile", END])
    builder.add_conditional_edges("profile", route_after_profile)
    builder.add_conditional_edges("judger", route_after_judge, ["optimizer", END])
    builder.add_conditional_edges("optimizer", route_after_optimize)
    return builder


graph = build_graph().compile()
