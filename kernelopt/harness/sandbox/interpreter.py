"""Triton's interpreter without costs that decide nothing: its integer overflow check, its re-patching of
`triton.language` at every call of a `@triton.jit` helper, and its dtype table and block types made anew at each
operation.

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
`_patch_builtin`). `_quick_device_calls` runs such a call straight when the running launch patched every language
module the helper sees (a helper that sees another is patched as before, once a launch), and walks each module's
members for its builtins once, not at every launch. Together 1.8x on that GroupNorm's forward, its outputs bit for bit
the same (tests/test_interpreter.py). The numpy dtype of a Triton type was looked up in a table of 19 built anew at
each of the interpreter's operations (`_get_np_dtype`: 6.2 of 79 s on the 3-D pools' test); `_quick_dtypes` keeps the
table. Every operation made a new block type (shape checks and a name formatted: 16 of those 79 s) and a tensor
rebuilt its shape from it; `_quick_types` makes each block type of a scalar dtype once and gives its tensors the shape
its first tensor got (a shape given as a list or as a type's own, as `with_element_ty` gives it). With all of them the
GroupNorm's forward runs 2-2.7x faster and the 3-D pools' window test 1.6x, bit for bit the same on each of the
standardising templates' test kernels. `quick_interpreter` installs them all.
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
    """Under TRITON_INTERPRET=1, the interpreter without its overflow check, its re-patching and its tables and types
    made anew (module docstring), as the sandbox's workers run kernels; else nothing. Each part is installed once."""
    unchecked_integers()
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        from triton import language as tl
        from triton.runtime import interpreter
    except ImportError:
        return
    _quick_device_calls(interpreter)
    _quick_dtypes(interpreter, tl)
    _quick_types(tl.core)
    _quick_operands(interpreter, tl.core)


def _quick_dtypes(interpreter: Any, tl: Any) -> None:
    """The interpreter's numpy dtype of a Triton type looked up by its name in a table kept from the first lookup."""
    found = getattr(interpreter, "_get_np_dtype", None)
    if found is None or getattr(found, "_kernelopt_quick", False):
        return
    table: dict[str, Any] = {}

    def np_dtype(tt_dtype: Any) -> Any:
        element = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype  # a block's is its element's
        name = getattr(element, "name", None)
        known = table.get(name) if isinstance(name, str) else None
        if known is None:
            known = found(element)
            if isinstance(name, str):
                table[name] = known
        return known

    np_dtype._kernelopt_quick = True  # type: ignore[attr-defined]
    interpreter._get_np_dtype = np_dtype


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


def _quick_device_calls(interpreter: Any) -> None:
    """A `@triton.jit` helper called inside a launch run without patching `triton.language` again where the launch
    patched every language module it sees, and each module's builtins found once."""
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
    patch_attr = getattr(interpreter, "_patch_attr", None)
    if patch_attr is None or not hasattr(interpreter, "_patch_builtin"):
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


def _quick_types(core: Any) -> None:
    """One block type of a scalar dtype and a shape of ints, made once and shared (Triton never changes a type once
    made), and a tensor of such a type given the shape and count its first tensor got. The tensor's part checks first
    that Triton's constructor sets the attributes it sets, else stays off."""
    block_type, tensor, dtype, constexpr, shapes = (getattr(core, name, None)
                                                    for name in ("block_type", "tensor", "dtype", "constexpr", "tuple"))
    if None in (block_type, tensor, dtype, constexpr, shapes) or "__new__" in vars(block_type) or \
            getattr(block_type.__init__, "_kernelopt_quick", False):
        return
    block_init, tensor_init = block_type.__init__, tensor.__init__
    kept: dict[tuple[Any, ...], Any] = {}

    def key_of(element_ty: Any, shape: Any) -> tuple[Any, ...] | None:
        if type(shape) is shapes:  # a type's own shape (Triton's tuple), as `with_element_ty` passes it
            shape = shape.values
        if type(element_ty) is not dtype or type(shape) is not list:  # else Triton's own constructor, its checks
            return None
        key = [element_ty.name]
        for size in shape:
            size = size.value if type(size) is constexpr else size
            if type(size) is not int:
                return None
            key.append(size)
        return tuple(key)

    def new(cls: type, element_ty: Any = None, shape: Any = None, *args: Any, **kwargs: Any) -> Any:
        made = kept.get(key_of(element_ty, shape)) if cls is block_type and not args and not kwargs else None
        return made if made is not None else object.__new__(cls)

    def block(self: Any, element_ty: Any, shape: Any) -> None:
        if "_kernelopt_kept" in self.__dict__:  # the shared one, made before
            return
        block_init(self, element_ty, shape)
        key = key_of(element_ty, shape) if type(self) is block_type else None
        if key is not None and key not in kept:
            self._kernelopt_kept = None  # the (shape, count) of its tensors, once one is made
            kept[key] = self

    block._kernelopt_quick = True  # type: ignore[attr-defined]
    block_type.__new__, block_type.__init__ = new, block
    sample = tensor(None, block_type(core.float32, [2]))
    if set(sample.__dict__) != {"handle", "shape", "numel", "type", "dtype"} or sample.dtype is not core.float32:
        return

    def value(self: Any, handle: Any, type: Any) -> None:  # noqa: A002 - Triton's own name
        shape = getattr(type, "__dict__", {}).get("_kernelopt_kept", False)
        if not shape:  # not a shared block type (False), or its first tensor (None)
            tensor_init(self, handle, type)
            if shape is None:
                type._kernelopt_kept = (self.shape, self.numel)
            return
        self.handle, self.type, self.dtype = handle, type, type.scalar
        self.shape, self.numel = shape

    tensor.__init__ = value


def _quick_operands(interpreter: Any, core: Any) -> None:
    """A binary operation's operands typed and broadcast without the work that changes nothing: two operands of one
    shape are not compared through Triton's own tuple (a constexpr made per comparison), a tensor already of the
    computation's dtype is not cast, the computation's dtype of two dtypes is worked out once, and a scalar splat to
    a block (`x + 1`, `offsets * stride`) takes its block type from a table, not through `with_element_ty` and
    `to_ir` made anew (under the interpreter a type is its own IR type). Anything else takes Triton's own path."""
    try:
        from triton.language.semantic import TritonSemantic
    except ImportError:
        return
    broadcast, cast_to = TritonSemantic.broadcast_impl_value, TritonSemantic._cast_to_computation_type
    computation = TritonSemantic.computation_type_impl
    block_type, tensor, dtype = core.block_type, core.tensor, core.dtype
    builder_type = type(getattr(interpreter, "interpreter_builder", None))
    if getattr(broadcast, "_kernelopt_quick", False):
        return

    def shape_of(ty: Any) -> Any:
        return getattr(ty.shape, "values", None) if type(ty) is block_type else None

    splats: dict[tuple[int, int], tuple[Any, Any, Any]] = {}  # (block type, dtype) ids: (block, dtype, splat type)

    def splat(self: Any, block: Any, value: Any) -> Any:
        """`value` (a scalar tensor) made a block of `block`'s shape, as Triton's own broadcast makes it."""
        key = (id(block), id(value.type))
        kept = splats.get(key)
        if kept is None:  # the types kept too, so that their ids are never another's
            if len(splats) >= 4096:  # block types of shapes not shared are made anew: never an endless table
                splats.clear()
            kept = splats[key] = (block, value.type, block.with_element_ty(value.type.scalar))
        made = kept[2]
        return self.make_tensor(self.builder.create_splat(made, value.handle), made)

    def quick_broadcast(self: Any, lhs: Any, rhs: Any) -> Any:
        lhs_ty, rhs_ty = lhs.type, rhs.type
        if lhs_ty is rhs_ty:  # one scalar type, or one block type (shared by _quick_types)
            return lhs, rhs
        shape = shape_of(lhs_ty)
        if shape is not None and shape == shape_of(rhs_ty):
            return lhs, rhs
        if type(self.builder) is builder_type:  # the interpreter's types are their own IR types
            if shape is not None and type(rhs_ty) is dtype:
                return lhs, splat(self, lhs_ty, rhs)
            if type(lhs_ty) is dtype and type(rhs_ty) is block_type:
                return splat(self, rhs_ty, lhs), rhs
        return broadcast(self, lhs, rhs)

    def quick_cast_to(self: Any, value: Any, wanted: Any) -> Any:
        if isinstance(value, tensor):
            ty = value.type
            if (ty.element_ty if type(ty) is block_type else ty) is wanted:  # Triton's cast returns it as it is
                return value
        return cast_to(self, value, wanted)

    known: dict[tuple[Any, ...], Any] = {}

    def quick_computation(self: Any, a_ty: Any, a_is_scalar: bool, b_ty: Any, b_is_scalar: bool,
                          div_or_mod: bool) -> Any:
        key = (type(a_ty), a_ty.name, a_is_scalar, type(b_ty), b_ty.name, b_is_scalar, div_or_mod)
        found = known.get(key)
        if found is None:
            found = known[key] = computation(self, a_ty, a_is_scalar, b_ty, b_is_scalar, div_or_mod)
        return found

    for fn, own in ((quick_broadcast, broadcast), (quick_cast_to, cast_to), (quick_computation, computation)):
        fn._kernelopt_quick = True  # type: ignore[attr-defined]
        fn._kernelopt_own = own  # type: ignore[attr-defined]  (Triton's, for the tests' comparison)
    TritonSemantic.broadcast_impl_value = quick_broadcast
    TritonSemantic._cast_to_computation_type = quick_cast_to
    TritonSemantic.computation_type_impl = quick_computation
