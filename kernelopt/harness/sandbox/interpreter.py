"""Triton's interpreter without two costs that decide nothing: its integer overflow check, and its re-patching of
`triton.language` at every call of a `@triton.jit` helper.

Under the interpreter every int32 add, subtract and multiply is checked for overflow: both operands copied to int64,
the operation done again, the result compared with int32's bounds and handed to a device assert. On a convolution's
or a pool's index arithmetic that was half of the interpreter's time (cProfile: 5.2 of 11.2 s in
`binary_op_sanitize_overflow_impl` on the separable stencil). The assert decides nothing there: Triton 3.9's
interpreter wraps an overflowing int32 with the check on, as without it, and as a GPU build does (which checks only in
its debug mode; tests/test_interpreter.py). Installed where kernels run under the interpreter: the sandbox's workers,
the seed's check of its kernels, and the tests' own process (`kernelopt.harness.unchecked_integers`, a door).

A launch patches `triton.language` (its builtins wrapped for the interpreter: `inspect.getmembers` over four modules)
before its grid runs and restores it after. A helper the kernel calls patched it again at every call, in every
program, though the launch's patches were in place: on a split-row GroupNorm that was 1.7 of 3.4 s (cProfile,
`_patch_builtin`). `quick_device_calls` runs such a call straight when the running launch patched every language
module the helper sees (a helper that sees another is patched as before, once a launch), and walks each module's
members for its builtins once, not at every launch. Together 1.8x on that GroupNorm's forward, its outputs bit for bit
the same (tests/test_interpreter.py). `quick_interpreter` installs both.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import threading
from collections.abc import Callable
from typing import Any

_LAUNCH = threading.local()  # `langs`: the ids of the language modules the running launch patched, else None


def quick_interpreter() -> None:
    """Under TRITON_INTERPRET=1, the interpreter without its overflow check and its re-patching (module docstring), as
    the sandbox's workers run kernels; else nothing."""
    unchecked_integers()
    quick_device_calls()


def unchecked_integers() -> None:
    """Under TRITON_INTERPRET=1, the interpreter's integer arithmetic unchecked, as a GPU build runs it; else
    nothing."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if options is None or not getattr(options, "sanitize_overflow", False):
        return
    builder.options = dataclasses.replace(options, sanitize_overflow=False)


def _langs(fn: Callable[..., Any]) -> frozenset[int]:
    """The ids of the language modules (`triton.language`, its `core`) a function's globals hold, as Triton's
    `_patch_lang` finds them."""
    from triton import language as tl

    return frozenset(id(value) for value in fn.__globals__.values() if value is tl or value is tl.core)


def quick_device_calls() -> None:
    """Under TRITON_INTERPRET=1, a `@triton.jit` helper called inside a launch runs without patching
    `triton.language` again where the launch patched every language module it sees; else nothing."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    executor, function = getattr(interpreter, "GridExecutor", None), getattr(interpreter, "InterpretedFunction", None)
    error = getattr(interpreter, "InterpreterError", None)
    if executor is None or function is None or error is None or getattr(function, "_kernelopt_quick", False):
        return
    launch_call, device_call = executor.__call__, function.__call__

    def launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        outer = getattr(_LAUNCH, "langs", None)
        _LAUNCH.langs = _langs(self.fn)  # patched by the launch before its grid runs, restored after it
        try:
            return launch_call(self, *args, **kwargs)
        finally:
            _LAUNCH.langs = outer

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        langs = getattr(_LAUNCH, "langs", None)
        if langs is None:
            return device_call(self, *args, **kwargs)
        own = _langs(self.fn)
        if not own <= langs:  # (triton.language's own helpers see its core): Triton's call patches them, unrestored
            _LAUNCH.langs = langs | own
            return device_call(self, *args, **kwargs)
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # as Triton's own device call says it
            raise error(repr(e)) from e

    executor.__call__, function.__call__ = launch, call
    function._kernelopt_quick = True
    patch_builtin, patch_attr = getattr(interpreter, "_patch_builtin", None), getattr(interpreter, "_patch_attr", None)
    if patch_builtin is None or patch_attr is None:
        return
    from triton.language.core import is_builtin

    builtins: dict[int, list[tuple[str, Any]]] = {}  # a module's builtins as first found, by the module's id

    def patch_builtins(pkg: Any, builder: Any, scope: Any) -> None:
        found = builtins.get(id(pkg))
        if found is None:  # Triton's own walk, once a module: every launch walked it again
            found = builtins[id(pkg)] = [(name, member) for name, member in inspect.getmembers(pkg)
                                         if is_builtin(member)]
        for name, member in found:
            patch_attr(pkg, name, member, builder, scope)

    interpreter._patch_builtin = patch_builtins
