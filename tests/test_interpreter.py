"""Triton's interpreter without its integer overflow check (harness/sandbox/interpreter.py), installed in the
sandbox's workers and here: the check is off, and an int32 overflow wraps as it did with the check on (which only
cost time) and as it does on a GPU."""

from __future__ import annotations

import os

import pytest
import torch
import triton
import triton.language as tl

from kernelopt.harness import unchecked_integers


@triton.jit
def _wrap_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * 65536 * 65536 + x, mask=mask)  # past int32 for any x but 0: wraps to x


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the interpreter's own behaviour")
def test_int32_arithmetic_wraps_under_the_interpreter_as_on_the_gpu() -> None:
    unchecked_integers()
    unchecked_integers()  # twice: nothing more
    x = torch.tensor([1, -3, 70000, 0], dtype=torch.int32)
    out = torch.empty_like(x)
    _wrap_kernel[(1,)](out, x, x.numel(), BLOCK=4)
    assert out.tolist() == x.tolist()
    from triton.runtime.interpreter import interpreter_builder

    assert interpreter_builder.options.sanitize_overflow is False
