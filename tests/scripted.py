"""A scripted chat model: replies in order, and remembers every prompt it was sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

DATA = Path(__file__).parent / "data"


class ScriptedChatModel(BaseChatModel):
    """Answers each call with the next scripted reply; fails the test when the script runs out."""

    replies: list[str]
    prompts: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.prompts.append("\n".join(str(m.content) for m in messages))
        if not self.replies:
            raise AssertionError(
                f"the scripted model was called {len(self.prompts)} times; the script has no more replies"
            )
        reply = self.replies.pop(0)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def diagnosis_reply(category: str = "memory") -> str:
    """A judger reply as LLMs write them: prose, then a fenced JSON array."""
    bottlenecks = [
        {
            "category": category,
            "summary": "Each program moves only 64 elements, so the launch is dominated by scheduling overhead.",
            "reasoning": "The kernel is elementwise with one load per input; throughput is far below bandwidth.",
            "root_causes": [{"cause": "BLOCK_SIZE of 64 is too small", "evidence": "64 programs for 4096 elements"}],
            "recommended_fixes": [{"fix": "raise BLOCK_SIZE to 1024", "rationale": "fewer, larger programs"}],
        }
    ]
    return (
        "Looking at the roofline, this kernel is memory-bound.\n\n```json\n"
        + json.dumps(bottlenecks, indent=2)
        + "\n```\n"
    )


def kernel_reply(name: str, note: str = "Here is the optimized kernel.") -> str:
    """An optimizer reply wrapping a real kernel file from tests/data/add in a python fence."""
    source = (DATA / "add" / name).read_text()
    return f"{note}\n\n```python\n{source}```\n\nThe larger block amortises the launch overhead."


class RoutedChatModel(BaseChatModel):
    """Answers by looking at the prompt (branches run concurrently, so order is no script);
    records each call's prompt and its start and end times."""

    route: Any  # Callable[[str], str]: the prompt -> the reply
    delay_s: float = 0.0
    calls: list[tuple[str, float, float]] = []

    @property
    def _llm_type(self) -> str:
        return "routed"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        import time

        prompt = "\n".join(str(m.content) for m in messages)
        began = time.monotonic()
        time.sleep(self.delay_s)
        reply = self.route(prompt)
        self.calls.append((prompt, began, time.monotonic()))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def two_bottlenecks_reply() -> str:
    """A judger reply with two distinct bottlenecks, so two branches get different ideas."""
    bottlenecks = [
        {
            "category": "memory",
            "summary": "Tiny blocks: launch overhead dominates.",
            "reasoning": "64 elements per program.",
            "root_causes": ["IDEA-A: BLOCK_SIZE of 64 is too small"],
            "recommended_fixes": ["raise BLOCK_SIZE to 1024"],
        },
        {
            "category": "occupancy",
            "summary": "Load balance across programs.",
            "reasoning": "Programs might be uneven.",
            "root_causes": ["IDEA-B: uneven work per program"],
            "recommended_fixes": ["use smaller blocks"],
        },
    ]
    return "```json\n" + json.dumps(bottlenecks) + "\n```"
