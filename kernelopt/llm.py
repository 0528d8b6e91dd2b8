"""The chat model: a factory for any OpenAI-compatible endpoint, and calls that survive outages.

The openai client's own retries are off (max_retries=0): its waits are fixed (0.5 s doubling
to 8 s) and honour a Retry-After of up to two minutes, neither set per run. `invoke_with_retries`
retries instead, with the run's Context: the same errors (connection, timeout, 408, 409, 429,
5xx, a body that is not JSON), backoff from `llm_backoff_s`, and every wait, a server's
Retry-After included, capped at `llm_max_backoff_s`.
"""

from __future__ import annotations

import email.utils
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from kernelopt.budget import usage_of
from kernelopt.context import Context
from kernelopt.model_specs import ModelSpec, model_specs
from kernelopt.records import InputError

RETRYABLE_STATUS = frozenset({408, 409, 429})  # and every 5xx
_ERROR_CHARS = 300


ChatModels = Mapping[str, BaseChatModel]  # the run's chat models by name, the judging one first


def make_chat_model(ctx: Context) -> BaseChatModel | None:
    """A ChatOpenAI for `ctx.model`, or None when no model is named (the offline policy runs)."""
    specs = model_specs(ctx)
    return _chat_model(specs[0], ctx) if specs else None


def make_chat_models(ctx: Context) -> dict[str, BaseChatModel]:
    """A ChatOpenAI for every model the context names (model, then models), by name; {} offline."""
    return {spec.name: _chat_model(spec, ctx) for spec in model_specs(ctx)}


def chat_models(given: BaseChatModel | ChatModels | None, ctx: Context) -> dict[str, BaseChatModel]:
    """The run's chat models by name: those given to build_graph (one model is named after
    Context.model, else "model"), else those the context names; {} for the offline policy."""
    if given is None:
        return make_chat_models(ctx)
    if isinstance(given, Mapping):
        return dict(given)
    specs = model_specs(ctx)
    return {specs[0].name if specs else "model": given}


def _chat_model(spec: ModelSpec, ctx: Context) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    base_url = spec.base_url or ctx.base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = ctx.api_key or os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if base_url is None:
            raise InputError(
                f"model {spec.name!r} needs OPENAI_API_KEY, or --base-url (or NAME@URL) for a local server "
                "(vLLM, Ollama); leave --model out to run the offline policy"
            )
        api_key = "not-needed"  # local servers accept any key, but the client wants one
    return ChatOpenAI(
        model=spec.name,
        base_url=base_url,
        api_key=api_key,  # type: ignore[arg-type]
        temperature=ctx.temperature,
        timeout=ctx.llm_timeout_s,
        max_retries=0,  # invoke_with_retries retries, with the run's policy
    )


OPENAI_URL = "https://api.openai.com/v1"


def endpoint_url(ctx: Context, spec: ModelSpec | None = None) -> str:
    """The URL a model is reached at (the context's first without `spec`): its own, else --base-url,
    else $OPENAI_BASE_URL, else OpenAI's."""
    own = spec.base_url if spec else None
    return own or ctx.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL


def check_endpoints(ctx: Context, timeout_s: float = 5.0) -> dict[str, str]:
    """Why each model the context names cannot be reached, by name ({}: every endpoint answers)."""
    unreachable: dict[str, str] = {}
    for spec in model_specs(ctx):
        try:
            check_endpoint(ctx, timeout_s, spec)
        except InputError as err:
            unreachable[spec.name] = str(err)
    return unreachable


def check_endpoint(ctx: Context, timeout_s: float = 5.0, spec: ModelSpec | None = None) -> None:
    """InputError, naming the URL, when nothing answers at the endpoint of `spec` (else of every
    model the context names).

    Only a connection is opened (no request, no tokens): a refused or unroutable endpoint (a typo
    in --base-url, a server not started) is known in milliseconds, before any baseline is timed,
    rather than after a minute of retries."""
    import socket
    from urllib.parse import urlsplit

    if spec is None:
        for each in model_specs(ctx):
            check_endpoint(ctx, timeout_s, each)
        return
    url = endpoint_url(ctx, spec)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"--base-url {url!r} is not an http(s) URL; give one like http://localhost:8000/v1")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout_s).close()
    except OSError as err:
        why = err.strerror or type(err).__name__
        raise InputError(
            f"cannot reach the model endpoint {url} ({why}) of {spec.name}; check --base-url (or NAME@URL) "
            "and that the server runs, or leave --model out to run the offline policy"
        ) from None


def supports_json_schema(model: BaseChatModel) -> bool:
    """Whether the model takes OpenAI's `response_format` (an OpenAI-compatible client)."""
    from langchain_openai.chat_models.base import BaseChatOpenAI

    return isinstance(model, BaseChatOpenAI)


def reply_text(message: object) -> str:
    """The text of a chat reply, whether its content is a string or a list of parts."""
    content = getattr(message, "content", message)
    if isinstance(content, list):
        return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content)
    return str(content)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before asking a failing endpoint again."""

    max_retries: int = 4
    backoff_s: float = 2.0  # the first wait; each further wait doubles
    max_backoff_s: float = 60.0  # no wait is longer, a server's Retry-After included

    @classmethod
    def from_context(cls, ctx: Context) -> RetryPolicy:
        """The policy the run's Context sets."""
        return cls(ctx.llm_max_retries, ctx.llm_backoff_s, ctx.llm_max_backoff_s)

    def delay_s(self, retry: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (0-based): Retry-After if given, else backoff."""
        # One client per run: no crowd of clients to spread out, so no jitter.
        wanted = retry_after_s if retry_after_s is not None else self.backoff_s * 2**retry
        return max(0.0, min(wanted, self.max_backoff_s))


class LLMUnavailable(RuntimeError):
    """The endpoint kept failing (unreachable, timing out, 429 or 5xx) through every retry."""

    def __init__(self, calls: int, last: BaseException) -> None:
        super().__init__(f"{calls} calls failed; last: {describe_error(last)}")
        self.calls = calls
        self.last = last


def describe_error(err: BaseException) -> str:
    """One line for an LLM call's failure: the error's type and the start of its message."""
    text = " ".join(str(err).split())
    if len(text) > _ERROR_CHARS:
        text = text[:_ERROR_CHARS] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def is_transient(err: BaseException) -> bool:
    """Whether asking again may succeed: no connection, a timeout, 408/409/429/5xx, a non-JSON body."""
    import openai

    if isinstance(err, openai.APIConnectionError):  # APITimeoutError included
        return True
    if isinstance(err, openai.APIStatusError):
        return err.status_code in RETRYABLE_STATUS or err.status_code >= 500
    return isinstance(err, json.JSONDecodeError)  # a proxy's page or a cut body, not the model's reply


def retry_after_s(err: BaseException) -> float | None:
    """The wait a server asked for in Retry-After(-ms), in seconds; None when it asked none."""
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) * scale
        except ValueError:
            pass
    when = email.utils.parsedate_tz(headers.get("retry-after") or "")
    return None if when is None else email.utils.mktime_tz(when) - time.time()


OnRetry = Callable[[int, float, BaseException], None]  # (retry number from 1, wait in s, the error)


def invoke_with_retries(
    model: Runnable[LanguageModelInput, BaseMessage],
    prompt: LanguageModelInput,
    policy: RetryPolicy,
    *,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], Any] = time.sleep,
) -> BaseMessage:
    """The model's reply, asking again after transient failures; raises LLMUnavailable when they last.

    Other errors (a 400, 401, 404) are raised at once: asking again would fail the same way.
    """
    for retry in range(policy.max_retries + 1):
        try:
            return model.invoke(prompt)
        except Exception as err:
            if not is_transient(err):
                raise
            if retry == policy.max_retries:
                raise LLMUnavailable(retry + 1, err) from err
            wait_s = policy.delay_s(retry, retry_after_s(err))
            if on_retry is not None:
                on_retry(retry + 1, wait_s, err)
            sleep(wait_s)
    raise AssertionError("unreachable: the loop returns or raises")


def stop_reason_for(err: BaseException) -> str:
    """The run's stop reason when an LLM call failed for good."""
    if isinstance(err, LLMUnavailable):
        return f"llm_unavailable: {err}"
    return f"llm_error: {describe_error(err)}"


def reply_counted(
    model: Runnable[LanguageModelInput, BaseMessage],
    prompt: str,
    policy: RetryPolicy,
    counts: dict[str, int],
    *,
    on_retry: OnRetry | None = None,
) -> tuple[BaseMessage, str]:
    """The reply and its text, its tokens added to `counts` (see budget.usage_of)."""
    message = invoke_with_retries(model, prompt, policy, on_retry=on_retry)
    text = reply_text(message)
    for key, value in usage_of(message, prompt, text).items():
        counts[key] = counts.get(key, 0) + value
    return message, text
