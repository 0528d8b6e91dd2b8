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


@dataclass
class CompileWatch:
    """Told "compile" when Triton starts compiling a kernel and "compiled" when it is done, so
    that the watchdog gives compiles their own allowance (a hang is judged on run time alone)."""

    notify: Callable[[str], None] | None = None


@dataclass
class LaunchLog:
    """Told of every real launch (the function, its arguments, what the launch returned) while
    `record` is set: the compiled-code fingerprint's recorder (fingerprint.py)."""

    record: Callable[[Any, tuple[Any, ...], dict[str, Any], Any], None] | None = None


COUNTER = LaunchCounter()
LOG = LaunchLog()
COMPILES = CompileWatch()
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
                launched = _original(self, *args, **kwargs)
                if LOG.record is not None and not kwargs.get("warmup", False):
                    LOG.record(self, args, kwargs, launched)
                return launched
            finally:
                IN_LAUNCH.depth -= 1

        cls.run = counted  # type: ignore[method-assign]
        _PATCHED[name] = (cls, counted)
    _watch_compiles()
    return COUNTER


def _watch_compiles() -> None:
    from triton.runtime.jit import JITFunction

    try:  # Triton's own hooks around a compile, where this Triton has them
        from triton import knobs

        knobs.runtime.jit_cache_hook = _compile_starts
        knobs.runtime.jit_post_compile_hook = _compile_ends
    except (ImportError, AttributeError):
        pass
    original = getattr(JITFunction, "_do_compile", None)
    if original is None or "compile" in _PATCHED:
        return

    @functools.wraps(original)
    def compiling(self: Any, *args: Any, **kwargs: Any) -> Any:
        if COMPILES.notify:
            COMPILES.notify("compile")
        try:
            return original(self, *args, **kwargs)
        finally:
            if COMPILES.notify:
                COMPILES.notify("compiled")

    JITFunction._do_compile = compiling  # type: ignore[method-assign]
    _PATCHED["compile"] = (JITFunction, compiling)


def _compile_starts(*args: Any, **kwargs: Any) -> bool:
    if COMPILES.notify:
        COMPILES.notify("compile")
    return False  # go on and compile


def _compile_ends(*args: Any, **kwargs: Any) -> None:
    if COMPILES.notify:
        COMPILES.notify("compiled")


def identities() -> dict[str, Any]:
    """The launch entry points as they are now, to notice a candidate replacing them."""
    return {
        name: cls._do_compile if name == "compile" else cls.run  # type: ignore[attr-defined]
        for name, (cls, _) in _PATCHED.items()
    }
