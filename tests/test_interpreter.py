"""Triton's interpreter as the sandbox's workers and these tests run it (harness/sandbox/interpreter.py): its integer
overflow check off, and an int32 overflow wraps as it did with the check on (which only cost time) and as it does on a
GPU; a helper's call inside a launch runs without patching `triton.language` again, with the same results."""

from __future__ import annotations

import os

import pytest
import torch
import triton
import triton.language as tl

from kernelopt.harness import quick_interpreter, unchecked_integers


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


@triton.jit
def _scaled(x, k):
    return x * k + 1.0


@triton.jit
def _rows_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)
    for _ in range(3):  # a helper of this file, and triton.language's own (tl.sum and tl.max see its core), in a loop
        x = _scaled(x, 0.5)
    total = tl.sum(tl.where(mask, x, 0.0), axis=0) + tl.max(tl.where(mask, x, -1.0), axis=0)
    tl.store(out_ptr + row, total)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the interpreter's own behaviour")
def test_a_helper_called_inside_a_launch_is_not_patched_again_and_computes_the_same(monkeypatch) -> None:
    from triton.runtime import interpreter

    quick_interpreter()
    quick_interpreter()  # twice: nothing more
    patched = []
    patch_lang = interpreter._patch_lang
    monkeypatch.setattr(interpreter, "_patch_lang", lambda fn: patched.append(fn.__name__) or patch_lang(fn))
    x = torch.randn(6, 5)
    out = torch.empty(6)
    _rows_kernel[(6,)](out, x, 5, BLOCK=8)
    want = x
    for _ in range(3):
        want = want * 0.5 + 1.0
    assert torch.allclose(out, want.sum(1) + want.amax(1), rtol=1e-6, atol=1e-6)
    # the launch patches once; triton.language's helpers (seeing its core) once more; no call of this file's helper,
    # where Triton's interpreter patched at every call in every program (6 x 3 of them, then the reductions' 6 x 2)
    assert patched.count("_rows_kernel") == 1 and "_scaled" not in patched, patched
    assert len(patched) <= 3, patched
    assert tl.core.is_builtin(tl.arange) and tl.core.is_builtin(tl.tensor.__add__)  # restored after the launch
    again = torch.empty(6)
    _rows_kernel[(6,)](again, x, 5, BLOCK=8)
    assert torch.equal(again, out)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the interpreter's own behaviour")
def test_the_kept_dtype_table_gives_the_interpreters_own_numpy_types() -> None:
    import numpy as np
    from triton.runtime import interpreter

    quick_interpreter()
    lookup = interpreter._get_np_dtype
    assert getattr(lookup, "_kernelopt_quick", False)
    cases = [(tl.float32, np.float32), (tl.float16, np.float16), (tl.bfloat16, np.uint16), (tl.int1, np.bool_),
             (tl.int64, np.int64), (tl.uint8, np.uint8), (tl.float8e4nv, np.uint8),
             (tl.pointer_type(tl.float32), np.uint64),
             (tl.block_type(tl.float16, [4, 8]), np.float16), (tl.block_type(tl.pointer_type(tl.int8), [2]), np.uint64),
             (tl.block_type(tl.int32, [16]), np.int32)]
    for _ in range(2):  # the first lookup fills the table, the second reads it
        for tt, want in cases:
            assert lookup(tt) == np.dtype(want), (tt, lookup(tt))


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the interpreter's own behaviour")
def test_a_block_type_is_made_once_and_its_tensors_get_its_shape() -> None:
    from triton.language import core

    quick_interpreter()
    a, b = core.block_type(core.float32, [core.constexpr(4), 8]), core.block_type(core.float32, [4, 8])
    assert a is b and [int(size) for size in a.shape] == [4, 8] and a.numel == 32 and a.element_ty is core.float32
    assert core.block_type(core.float16, [4, 8]) is not a and core.block_type(core.float32, [8, 4]) is not a
    assert a.with_element_ty(core.float16) is core.block_type(core.float16, [4, 8])  # from a type's own shape
    assert a.with_element_ty(core.float16).with_element_ty(core.float32) is a
    pointers = core.block_type(core.pointer_type(core.float32), [4])
    assert pointers is not core.block_type(core.pointer_type(core.float32), [4])  # pointer types: made anew
    first, second = core.tensor("h1", a), core.tensor("h2", b)
    for value, handle in ((first, "h1"), (second, "h2")):
        assert value.handle == handle and value.type is a and value.dtype is core.float32
        assert [int(size) for size in value.shape] == [4, 8] and int(value.numel) == 32
    x = torch.arange(64, dtype=torch.float32).reshape(8, 8)
    out = torch.empty(8)
    _rows_kernel[(8,)](out, x, 8, BLOCK=8)  # 2-D and 1-D blocks of shared types, as any kernel makes them
    want = x * 0.125 + 1.75
    assert torch.allclose(out, want.sum(1) + want.amax(1), rtol=1e-6, atol=1e-6)


@triton.jit
def _operands_kernel(out_ptr, x_ptr, h_ptr, i_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)  # a scalar times a constant, then splat to a block
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    h = tl.load(h_ptr + offsets, mask=mask, other=0.0)  # fp16
    i = tl.load(i_ptr + offsets, mask=mask, other=0)  # int32
    rows = tl.arange(0, 4)[:, None] + tl.arange(0, BLOCK)[None, :]  # [4, 1] + [1, BLOCK]: Triton's own broadcast
    grid = tl.sum(rows * 2 - 1, axis=0)
    y = 2.5 * x + 1 - i  # a float on the left, an int on the right, an int block promoted to fp32
    y = y + h * 0.5  # fp16 times a float scalar stays fp16, then fp32 plus fp16
    y = y + (i // 3) + (i % 5) + (i * 7 >> 1) + (i / 2)  # integer division and modulo, a shift, a true division
    y = tl.where((i & 1) == 0, y, -y) + grid + (offsets > 3)  # bitwise, comparison, and a bool block added
    tl.store(out_ptr + offsets, y, mask=mask)


@pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="the interpreter's own behaviour")
def test_operands_typed_and_splat_by_the_quick_paths_give_the_interpreters_own_results_bit_for_bit(
        monkeypatch) -> None:
    from triton.language.semantic import TritonSemantic

    quick_interpreter()
    names = ("broadcast_impl_value", "_cast_to_computation_type", "computation_type_impl")
    quick = {name: getattr(TritonSemantic, name) for name in names}
    assert all(getattr(fn, "_kernelopt_quick", False) for fn in quick.values())
    torch.manual_seed(0)
    n, block = 37, 16
    x, h = torch.randn(n), torch.randn(n).half()
    i = torch.randint(-50, 50, (n,), dtype=torch.int32)
    runs = {}
    for mode in ("quick", "own"):
        if mode == "own":  # Triton's own three methods
            for name in names:
                monkeypatch.setattr(TritonSemantic, name, quick[name]._kernelopt_own)
        out = torch.empty(n)
        _operands_kernel[(3,)](out, x, h, i, n, BLOCK=block)
        runs[mode] = out
    assert torch.equal(runs["quick"], runs["own"])  # bit for bit
    offsets = torch.arange(n)
    columns = offsets % block
    y = 2.5 * x + 1 - i + (h * 0.5).float()
    y = y + torch.div(i, 3, rounding_mode="trunc") + torch.fmod(i, 5) + ((i * 7) >> 1) + i / 2  # C's division
    want = torch.where(i % 2 == 0, y, -y) + 8 * columns + 8 + (offsets > 3)
    assert torch.allclose(runs["quick"], want, rtol=1e-5, atol=1e-4), (runs["quick"], want)
