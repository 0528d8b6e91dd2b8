"""Counting Triton launches, so that a forward that launches nothing is caught."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class LaunchCounter:
    total: int = 0


@dataclass
class LaunchDepth:
    """How many Triton launches are running now (the compute guard lets them do anything)."""

    depth: int = 0


COUNTER = LaunchCounter()
IN_LAUNCH = LaunchDepth()
_PATCHED: dict[str, tuple[type, Callable[..., Any]]] = {}


def _launch_classes() -> dict[str, type]:
    from triton.runtime.jit import JITFunction

    classes: dict[str, type] = {"triton.runtime.jit.JITFunction.run": JITFunction}
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes["triton.runtime.interpreter.InterpretedFunction.run"] = InterpretedFunction
    except ImportError:  # older Triton without the interpreter module
        pass
    return classes


def install() -> LaunchCounter:
    """Wrap every Triton launch path once; the counter counts real (non-warm-up) launches."""
    for name, cls in _launch_classes().items():
        if name in _PATCHED:
            continue
        original = cls.run

        @functools.wraps(original)
        def counted(self: Any, *args: Any, _original: Callable[..., Any] = original, **kwargs: Any) -> Any:
            if not kwargs.get("warmup", False):
                COUNTER.total += 1
            IN_LAUNCH.depth += 1
            try:
                return _original(self, *args, **kwargs)
            finally:
                IN_LAUNCH.depth -= 1

        cls.run = counted  # type: ignore[method-assign]
        _PATCHED[name] = (cls, counted)
    return COUNTER


def identities() -> dict[str, Any]:
    """The launch entry points as they are now, to notice a candidate replacing them."""
    return {name: cls.run for name, (cls, _) in _PATCHED.items()}
