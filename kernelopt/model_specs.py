"""Which chat models a run uses: `--model NAME` or `--model NAME@URL`, given once or more.

A spec is a model's name, optionally followed by `@` and the OpenAI-compatible endpoint it is
served at (`qwen2.5-coder:32b@http://localhost:11434/v1`); a spec without one is reached at
--base-url (Context.base_url), else $OPENAI_BASE_URL, else OpenAI's. The first spec is
Context.model (it also judges), the others Context.models; the round's candidates are shared
among them all (nodes/models.py).

Light to import (no langchain): the CLI checks every spec before anything heavy loads.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from kernelopt.records import InputError

if TYPE_CHECKING:
    from kernelopt.context import Context

_URL_AT = re.compile(r"@(?=[A-Za-z][A-Za-z0-9+.-]*://)")  # the `@` that starts NAME@scheme://...
MODEL_HELP = (
    "chat model name, or NAME@URL for one served at its own OpenAI-compatible endpoint; give it again "
    "for several models that share each round's candidates (the first also judges); without it the "
    "offline policy runs"
)


@dataclass(frozen=True)
class ModelSpec:
    """One chat model of the run: its name, and its own endpoint (None: the run's base URL)."""

    name: str
    base_url: str | None = None


def parse_model_spec(text: str) -> ModelSpec:
    """The spec `NAME` or `NAME@URL` read; InputError, in one line, when it is malformed."""
    found = _URL_AT.search(text)
    name, url = (text[: found.start()], text[found.end():]) if found else (text, None)
    name = name.strip()
    if not name:
        raise InputError(f"--model {text!r} names no model; give NAME or NAME@http://host:port/v1")
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"--model {text!r}: {url!r} is not an http(s) URL; give NAME@http://host:port/v1")
    return ModelSpec(name, url)


def model_arg(text: str) -> str:
    """An argparse type: the spec as given, once it is known to be well formed."""
    try:
        parse_model_spec(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--model ")) from None
    return text


def model_settings(given: list[str] | None) -> dict[str, Any]:
    """Context's model and models for the specs given (the first and the rest); {} for none."""
    if not given:
        return {}
    _checked([parse_model_spec(text) for text in given])
    return {"model": given[0], "models": given[1:] or None}


def model_specs(ctx: Context) -> list[ModelSpec]:
    """Every model the context names (model, then models), the judging one first; [] for the offline policy."""
    return _checked([parse_model_spec(text) for text in [ctx.model, *(ctx.models or [])] if text])


def _checked(specs: list[ModelSpec]) -> list[ModelSpec]:
    """`specs`, or InputError when one name is given twice: its counts in the report could not be told apart."""
    names = [spec.name for spec in specs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise InputError(f"--model {twice[0]} is given more than once; name each model once")
    return specs
