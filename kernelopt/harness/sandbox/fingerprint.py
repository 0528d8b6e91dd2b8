"""A candidate's compiled-code fingerprint: every Triton launch of its checked calls, each as the
kernel's canonical TTIR with its launch configuration, hashed together.

Two candidates with one fingerprint launched the same compiled kernels, in the same order, with
the same grids, scalar arguments, argument dtypes and alignments, constexprs and launch options
(num_warps, num_stages, ...), on every case of the run: they differ only in names, comments,
formatting or code that compiles away, so one's time is the other's. Back-to-back repeats of one
launch count once (an autotuner benchmarks a configuration as many times as its timing says).
The IR comes from the kernel Triton launched (its `asm["ttir"]` on a GPU) or, under the
interpreter, from compiling the kernel's source for a fixed CUDA target (fingerprints are
compared only within one run).

Recording runs from the candidate's import to the end of its cases, never while it is timed.
Any surprise (a Triton without these APIs, an argument of an unknown kind, a kernel that does
not compile here) leaves the candidate without a fingerprint: it is verified and timed as any other.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import re
import sys
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kernelopt.harness.sandbox import launches
from kernelopt.records import one_line

DIGEST_CHARS = 16
_VALUE_NAME = re.compile(r"%[\w$.\-]+")
_SYMBOL_NAME = re.compile(r"@[\w$.\-]+")
_RUN_KEYWORDS = ("grid", "warmup")


@dataclass
class Recorder:
    """The launches seen while recording, in order; the first failure ends recording for good."""

    launches: list[tuple[Any, ...]] = field(default_factory=list)
    failure: str | None = None
    _ir_of_kernel: dict[int, str] = field(default_factory=dict)  # id of a launched kernel -> its IR's hash
    _to_compile: dict[str, tuple[Any, dict[str, str], dict[str, Any]]] = field(default_factory=dict)
    _ttir: dict[str, str] = field(default_factory=dict)  # a launch's code key -> its TTIR text

    def record(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], launched: Any) -> None:
        """Note one launch (launches.py calls this after each real launch while recording)."""
        if self.failure is not None:
            return
        try:
            launch = self._launch(fn, args, kwargs, launched)
        except Exception as err:  # never the candidate's verdict: only no fingerprint
            self.failure = one_line(f"launch {len(self.launches) + 1}: {type(err).__name__}: {err}", 300)
            return
        if not self.launches or self.launches[-1] != launch:  # an autotuner's benchmark repeats one launch
            self.launches.append(launch)

    def _launch(self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], launched: Any) -> tuple[Any, ...]:
        pyfn = fn.fn
        signature = inspect.signature(pyfn)
        parameters = signature.parameters
        given = {k: v for k, v in kwargs.items() if k not in _RUN_KEYWORDS}
        options = {k: v for k, v in given.items() if k not in parameters}
        bound = signature.bind(*args, **{k: v for k, v in given.items() if k in parameters})
        bound.apply_defaults()
        grid = kwargs["grid"]
        if callable(grid):
            grid = grid({**bound.arguments, **options})
        constexprs = {name for name, p in parameters.items() if "constexpr" in str(p.annotation)}
        values = [_value(bound.arguments[name], name in constexprs) for name in parameters]
        code = self._code(pyfn, bound.arguments, constexprs, launched)
        return code, sorted((k, repr(v)) for k, v in options.items()), [int(g) for g in grid], values

    def _code(self, pyfn: Any, arguments: dict[str, Any], constexprs: set[str], launched: Any) -> str:
        """The key of the launched kernel's IR: the hash of the TTIR Triton compiled (on a GPU), else
        a key to compile it by when the fingerprint is asked for (under the interpreter)."""
        ttir = getattr(launched, "asm", {}).get("ttir") if launched is not None else None
        if isinstance(ttir, str):
            if id(launched) not in self._ir_of_kernel:
                self._ir_of_kernel[id(launched)] = ir_hash(ttir)
                self._ttir[self._ir_of_kernel[id(launched)]] = ttir
            return self._ir_of_kernel[id(launched)]
        signature = {name: "constexpr" if name in constexprs or value is None else _triton_type(value)
                     for name, value in arguments.items()}
        fixed = {name: value for name, value in arguments.items() if signature[name] == "constexpr"}
        key = f"compile:{id(pyfn)}:{sorted(signature.items())}:{sorted((k, repr(v)) for k, v in fixed.items())}"
        self._to_compile.setdefault(key, (pyfn, signature, fixed))
        return key

    def digest(self) -> str | None:
        """The fingerprint of every launch recorded, or None (with `failure` saying why)."""
        if self.failure is None and not self.launches:
            self.failure = "no Triton launch was recorded"
        if self.failure is not None:
            return None
        texts = self.ttirs()
        if texts is None:
            return None
        compiled = {key: ir_hash(texts[key]) for key in self._to_compile}
        payload = [[compiled.get(code, code), *rest] for code, *rest in self.launches]
        return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:DIGEST_CHARS]

    def ttirs(self) -> dict[str, str] | None:
        """The TTIR of every kernel launched, by its launch's code key (compiled here, once, for the
        kernels the interpreter ran), or None when one does not compile (`failure` says why)."""
        todo = {key: how for key, how in self._to_compile.items() if key not in self._ttir}
        notify = launches.COMPILES.notify if todo else None  # compiles have their own time limit
        try:
            if notify:
                notify("compile")
            self._ttir.update({key: compile_ttir(*how) for key, how in todo.items()})
        except Exception as err:
            self.failure = one_line(f"compiling to TTIR: {type(err).__name__}: {err}", 300)
            return None
        finally:
            if notify:
                notify("compiled")
        return dict(self._ttir)


def _value(value: Any, constexpr: bool) -> str:
    """One argument as the fingerprint keeps it: a tensor's dtype and 16-byte alignment (what
    Triton specialises on), any other value itself."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return f"*{value.dtype}{'/16' if value.data_ptr() % 16 == 0 else ''}"
    if constexpr or value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    raise TypeError(f"an argument of type {type(value).__name__} is not fingerprinted")


_TRITON_DTYPES = {
    "torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float64": "fp64",
    "torch.int8": "i8", "torch.int16": "i16", "torch.int32": "i32", "torch.int64": "i64", "torch.uint8": "u8",
    "torch.bool": "i1", "torch.float8_e4m3fn": "fp8e4nv", "torch.float8_e5m2": "fp8e5",
}


def _triton_type(value: Any) -> str:
    """The Triton signature type of a runtime argument (a tensor is a pointer to its dtype)."""
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        return "*" + _TRITON_DTYPES[str(value.dtype)]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"no Triton type for an argument of type {type(value).__name__}")


def compile_ttir(pyfn: Any, signature: dict[str, str], constexprs: dict[str, Any]) -> str:
    """The TTIR of `pyfn` for this signature and these constexprs, compiled on the host (no GPU)
    for a fixed CUDA target: the same kernel compiles to the same text within a run."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    target = GPUTarget("cuda", 90, 32)
    backend = CUDABackend(target)
    with warnings.catch_warnings():  # a Triton knob's notice about its future default
        warnings.simplefilter("ignore")
        options = backend.parse_options({})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    source = ASTSource(JITFunction(_compilable(pyfn)), signature, constexprs)
    with _language_compilable():
        module = source.make_ir(target, options, backend.get_codegen_implementation(options),
                                backend.get_module_map(), context)
    stages: dict[str, Any] = {}
    backend.add_stages(stages, options, source.language)
    return str(stages["ttir"](module, {}))


def _compilable(pyfn: Any) -> Any:
    """`pyfn` over a copy of its globals in which the interpreter's @triton.jit functions (the
    helpers it calls) are JIT functions again, which Triton's code generator can inline."""
    from triton.runtime.jit import JITFunction

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        return pyfn
    scope = dict(pyfn.__globals__)
    for name, value in pyfn.__globals__.items():
        if isinstance(value, InterpretedFunction):
            scope[name] = JITFunction(_in_scope(value.fn, scope), **value.kwargs)
    return _in_scope(pyfn, scope)


@contextlib.contextmanager
def _language_compilable() -> Iterator[None]:
    """While a TTIR is generated: triton.language's own @triton.jit helpers (tl.zeros, tl.max, tl.sum,
    tl.cdiv, tl.sigmoid: interpreted functions under the interpreter, which the code generator cannot
    inline, so that nearly every kernel's TTIR failed on the host) are JIT functions again; restored after."""
    from triton.runtime.jit import JITFunction

    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:
        yield
        return
    modules = [m for name, m in list(sys.modules.items()) if name.startswith("triton.language") and m is not None]
    saved = [(m, name, value) for m in modules for name, value in list(vars(m).items())
             if isinstance(value, InterpretedFunction)]
    # after an interpreted launch some of tl.core's builtins stay the interpreter's (seen with Triton 3.9): its
    # wrappers keep the builtin they wrap as a keyword default (`member`), put back for the code generator
    leaked = _leaked_builtins()
    try:
        for module, name, value in saved:
            setattr(module, name, JITFunction(value.fn, **value.kwargs))
        for owner, name, _, builtin in leaked:
            setattr(owner, name, builtin)
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        for owner, name, wrapper, _ in leaked:
            setattr(owner, name, wrapper)


def _leaked_builtins() -> list[tuple[Any, str, Any, Any]]:
    """triton.language's builtins left wrapped by the interpreter: (owner, name, wrapper, the builtin)."""
    import triton.language as tl

    found = []
    for owner in (tl, tl.core, tl.core.tensor, tl.math):
        for name, value in list(vars(owner).items()):
            inner = (getattr(value, "__kwdefaults__", None) or {}).get("member")
            if getattr(value, "__name__", "") == "<lambda>" and inner is not None and tl.core.is_builtin(inner):
                found.append((owner, name, value, inner))
    return found


def _in_scope(fn: Any, scope: dict[str, Any]) -> Any:
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


def ir_hash(ttir: str) -> str:
    """The hash of TTIR text made canonical (see `canonical_ttir`)."""
    return hashlib.sha256(canonical_ttir(ttir).encode()).hexdigest()[:DIGEST_CHARS]


def canonical_ttir(ttir: str) -> str:
    """TTIR without what the source's wording leaves in it: locations (file, line, variable
    names), value names (`%offs_3`) and symbol names (`@add_kernel`), the last two numbered by
    first appearance."""
    kept = "\n".join(line for line in ttir.splitlines() if not line.lstrip().startswith("#loc"))
    text = _without_locations(kept)
    values: dict[str, str] = {}
    text = _VALUE_NAME.sub(lambda m: values.setdefault(m.group(), f"%v{len(values)}"), text)
    symbols: dict[str, str] = {}
    return _SYMBOL_NAME.sub(lambda m: symbols.setdefault(m.group(), f"@f{len(symbols)}"), text)


def _without_locations(text: str) -> str:
    """`text` less every ` loc(...)` (nested parentheses and quoted file names included)."""
    out, start = [], 0
    while (at := text.find(" loc(", start)) >= 0:
        out.append(text[start:at])
        depth, k = 0, at + 4
        while k < len(text):
            char = text[k]
            if char == '"':
                k = text.find('"', k + 1)
                if k < 0:
                    return "".join(out)
            depth += {"(": 1, ")": -1}.get(char, 0)
            k += 1
            if depth == 0:
                break
        start = k
    out.append(text[start:])
    return "".join(out)


def start() -> Recorder:
    """Record every real launch from now on (see launches.LaunchLog)."""
    recorder = Recorder()
    launches.LOG.record = recorder.record
    return recorder


def verdict(recorder: Recorder, timed: list[str] | None) -> dict[str, Any]:
    """Stop recording; the result's fingerprint entries: {"fingerprint": ...} and, when it is one
    of `timed` (fingerprints of candidates already timed this run), "duplicate": True. {} when no
    fingerprint is asked for (`timed` None) and, with one line in the log, when it failed."""
    replaced = launches.LOG.record != recorder.record
    launches.LOG.record = None
    if timed is None:
        return {}
    fingerprint = None if replaced else recorder.digest()
    if fingerprint is None:
        why = "the launch recorder was replaced" if replaced else recorder.failure
        print(f"no compiled-code fingerprint ({why}); the candidate is timed", flush=True)
        return {}
    return {"fingerprint": fingerprint, **({"duplicate": True} if fingerprint in timed else {})}
