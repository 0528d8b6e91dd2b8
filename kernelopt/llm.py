"""The chat-model factory: any OpenAI-compatible endpoint through langchain-openai."""

from __future__ import annotations

import os

from langchain_core.language_models import BaseChatModel

from kernelopt.context import Context
from kernelopt.harness.problem import InputError


def make_chat_model(ctx: Context) -> BaseChatModel | None:
    """A ChatOpenAI for `ctx.model`, or None when no model is named (the offline policy runs)."""
    if not ctx.model:
        return None
    from langchain_openai import ChatOpenAI

    base_url = ctx.base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = ctx.api_key or os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if base_url is None:
            raise InputError(
                f"model {ctx.model!r} needs OPENAI_API_KEY, or --base-url for a local server "
                "(vLLM, Ollama); leave --model out to run the offline policy"
            )
        api_key = "not-needed"  # local servers accept any key, but the client wants one
    return ChatOpenAI(
        model=ctx.model,
        base_url=base_url,
        api_key=api_key,  # type: ignore[arg-type]
        temperature=ctx.temperature,
        timeout=ctx.llm_timeout_s,
        max_retries=2,
    )


def reply_text(message: object) -> str:
    """The text of a chat reply, whether its content is a string or a list of parts."""
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content)
    return str(content)
