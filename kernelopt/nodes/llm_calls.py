"""One node's LLM calls: retries reported, tokens counted, failures told apart from bugs.

Shared by the judger and the optimizer. A failure of the call itself (the endpoint down, a
refusal, a timeout) is raised as `LLMCallError`, the one exception those nodes catch: a bug
in building a prompt or reading a file is not the LLM's failure and is never turned into a
stop reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kernelopt.budget import add_tokens, token_totals
from kernelopt.events import LlmRetry
from kernelopt.llm import RetryPolicy, describe_error, reply_counted, stop_reason_for
from kernelopt.nodes.common import emit


class LLMCallError(Exception):
    """The LLM call failed; `error` is what the client raised, `stop_reason` the run's stop reason."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(describe_error(error))
        self.error = error
        self.stop_reason = stop_reason_for(error)


@dataclass
class LLMCalls:
    """One node's LLM calls: the retry policy, the tokens they spent, and a way to report retries."""

    state: Mapping[str, Any]
    node: str
    policy: RetryPolicy
    counts: dict[str, int] = field(default_factory=dict)
    model: str | None = None  # the model asked, whose tokens are also counted under its name

    def call(self, model: Any, prompt: str) -> tuple[Any, str]:
        """The reply and its text; retries are reported as llm_retry events; a failure raises LLMCallError."""
        try:
            return reply_counted(model, prompt, self.policy, self.counts, on_retry=self._report)
        except Exception as err:  # whatever the client raised: the call failed
            raise LLMCallError(err) from err

    def _report(self, retry: int, wait_s: float, err: BaseException) -> None:
        emit(self.state, LlmRetry(node=self.node, retry=retry, retries=self.policy.max_retries,
                                  wait_s=round(wait_s, 3), error=describe_error(err)))

    def update(self) -> dict[str, Any]:
        """The state update for the tokens spent, per node and per model (none when no call was made)."""
        if not self.counts:
            return {}
        per_model = {"model_tokens": {self.model: dict(self.counts)}} if self.model else {}
        return {"tokens": {self.node: dict(self.counts)}, **per_model}

    def run_totals(self) -> dict[str, int]:
        """The run's token totals including these calls, for progress events."""
        return token_totals(add_tokens(self.state.get("tokens"), {self.node: self.counts}))
