"""Triton's interpreter without its integer overflow check, which costs it half its time and decides nothing.

Under the interpreter every int32 add, subtract and multiply is checked for overflow: both operands copied to int64,
the operation done again, the result compared with int32's bounds and handed to a device assert. On a convolution's
or a pool's index arithmetic that was half of the interpreter's time (cProfile: 5.2 of 11.2 s in
`binary_op_sanitize_overflow_impl` on the separable stencil). The assert decides nothing there: Triton 3.9's
interpreter wraps an overflowing int32 with the check on, as without it, and as a GPU build does (which checks only in
its debug mode; tests/test_interpreter.py). Installed where kernels run under the interpreter: the sandbox's workers,
the seed's check of its kernels, and the tests' own process (`kernelopt.harness.unchecked_integers`, a door).
"""

from __future__ import annotations

import dataclasses
import os


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
