"""What an exported op does at run time; `kernelopt export` copies this file into every module it writes.

The op passes the module's parameters and buffers in as tensors and calls the kernel's
ModelNew (or, for shapes and gradients, the problem's own Model) with them through
`torch.func.functional_call`: the instances it keeps hold no weights of their own, only the
constructor's settings. Checks read tensor metadata, never device values, so the op can be
captured in a CUDA graph; the one exception, a size never checked before, is compared with the
reference on its first call and refused while a graph is being captured.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn
from torch.utils._python_dispatch import _disable_current_modes

# KernelBench's tolerances (atol, rtol); the reference's own float32 error is allowed on top.
TOLERANCES = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2), torch.bfloat16: (1e-2, 1e-2)}

NO_BACKWARD = ("{name} has no backward: the problem's reference Model gives no gradient for its inputs, so neither "
               "does the op; call it under torch.no_grad(), or on inputs and weights that do not require grad")


@dataclass
class OpSpec:
    """One exported op: its kernel, its reference, and what the run verified it on."""

    name: str
    kernel_model: type[nn.Module]
    reference_model: type[nn.Module]
    arg_names: tuple[str, ...]
    arg_dtypes: tuple[str | None, ...]  # per forward argument: its verified dtype, None for a non-tensor
    state_names: tuple[str, ...]  # the Model's parameters and buffers, in the order the op takes them
    state_dtypes: tuple[str, ...]
    verified: frozenset[str]  # size keys (see size_key) the run verified the kernel on
    has_backward: bool | None = None  # False: the reference's outputs carry no gradient; None: not known
    checked: dict[str, str | None] = field(default_factory=dict)  # size key: None when right, else why not
    instances: dict[tuple[str, str], nn.Module] = field(default_factory=dict)
    settings: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = field(default_factory=dict)
    shaped: set[str] = field(default_factory=set)  # size keys whose outputs matched the fake's shapes and dtypes


def init_key(spec: OpSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The op's name for a constructor call: the text of its arguments, kept to rebuild the kernel's ModelNew."""
    key = repr((tuple(args), dict(kwargs)))
    spec.settings[key] = (tuple(args), dict(kwargs))
    return key


def _instance(spec: OpSpec, which: str, init: str) -> nn.Module:
    """A weightless ModelNew ("kernel") or Model ("reference") built with the constructor arguments `init`."""
    if (which, init) not in spec.instances:
        args, kwargs = spec.settings.get(init) or ast.literal_eval(init)
        cls = spec.kernel_model if which == "kernel" else spec.reference_model
        # Its own weights are never used (functional_call passes the op's), and it is built outside any mode
        # the call runs under: fake tensors, tracing, opcheck's schema check.
        with _disable_current_modes(), torch.device("meta"):
            module = cls(*args, **kwargs)
        names = {name for name, _ in [*module.named_parameters(), *module.named_buffers()]}
        if names != set(spec.state_names):
            raise TypeError(f"{spec.name}: the kernel's ModelNew holds {sorted(names)}, the problem's Model "
                            f"{sorted(spec.state_names)}; the op passes the Model's state to it by these names, so "
                            "they must be the same")
        spec.instances[which, init] = module
    return spec.instances[which, init]


def _call(spec: OpSpec, which: str, init: str, args: list[Any], state: list[torch.Tensor]) -> Any:
    module = _instance(spec, which, init)
    if which == "reference":  # its forward may update buffers in place (running statistics): not the caller's
        state = [s if s.requires_grad else s.clone() for s in state]
    if not state:  # nothing to swap in: the call costs no more than the kernel's own forward
        return module(*args)
    return torch.func.functional_call(module, dict(zip(spec.state_names, state, strict=True)), tuple(args))


def _outputs(result: Any) -> tuple[torch.Tensor, ...]:
    return tuple(result) if isinstance(result, tuple | list) else (result,)


def size_key(init: str, args: list[Any], state: list[torch.Tensor]) -> str:
    """The constructor arguments and the shape of every tensor (and each other argument's value)."""
    shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in [*args, *state]]
    return f"{init}|{shapes}"


def _check_inputs(spec: OpSpec, args: list[Any], state: list[torch.Tensor]) -> torch.device:
    """The device all tensors are on, or a ValueError naming the input that is not as verified."""
    named = [*zip(spec.arg_names, args, spec.arg_dtypes, strict=True),
             *zip(spec.state_names, state, spec.state_dtypes, strict=True)]
    tensors = [(name, value) for name, value, dtype in named if dtype is not None]
    device = tensors[0][1].device if tensors else torch.device("cpu")
    for name, value, dtype in named:
        if dtype is None:
            continue
        if str(value.dtype).removeprefix("torch.") != dtype:
            raise ValueError(f"{spec.name}: {name} is {value.dtype}, but the kernel was verified on {dtype} only; "
                             f"cast it, or export a run made on {str(value.dtype).removeprefix('torch.')}")
        if value.device != device:
            raise ValueError(f"{spec.name}: {name} is on {value.device}, {tensors[0][0]} on {device}; "
                             "pass every tensor on one device")
    if device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError(f"{spec.name}: the inputs are on {device}; the Triton kernel runs on a CUDA device "
                         "(or on the CPU under TRITON_INTERPRET=1)")
    return device


def run_kernel(spec: OpSpec, args: list[Any], state: list[torch.Tensor], init: str) -> Any:
    """The kernel's outputs, contiguous and in memory of their own; a size the run did not verify is
    compared with the reference on its first call (a wrong answer there raises, then and after)."""
    device = _check_inputs(spec, args, state)
    if device.type == "cuda" and device.index != torch.cuda.current_device():
        with torch.cuda.device(device):  # Triton launches on the current device: make it the inputs'
            return _run_on(device, spec, args, state, init)
    return _run_on(device, spec, args, state, init)


def _run_on(device: torch.device, spec: OpSpec, args: list[Any], state: list[torch.Tensor], init: str) -> Any:
    args = [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args]  # verified on dense inputs
    state = [s.contiguous() for s in state]
    key = size_key(init, args, state)
    if key not in spec.verified and spec.checked.get(key, "") is not None:
        _first_call(spec, key, device, args, state, init)
    outs = [o.contiguous() for o in _outputs(_call(spec, "kernel", init, args, state))]
    if key not in spec.shaped:
        _check_like_fake(spec, outs, args, state, init)
        spec.shaped.add(key)
    inputs = {t.untyped_storage().data_ptr() for t in [*args, *state] if isinstance(t, torch.Tensor)}
    outs = [o.clone() if o.untyped_storage().data_ptr() in inputs else o for o in outs]  # an op's outputs own memory
    return outs[0] if len(outs) == 1 else tuple(outs)


def _check_like_fake(spec: OpSpec, outs: list[torch.Tensor], args: list[Any], state: list[torch.Tensor],
                     init: str) -> None:
    """Raise unless the kernel's outputs have the shapes and dtypes the fake gives (the reference on the meta
    device: no device work, so this first-call check is safe under CUDA-graph capture)."""
    meta = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
    try:
        want = _outputs(_call(spec, "reference", init, meta, [s.to("meta") for s in state]))
    except (NotImplementedError, RuntimeError):  # an op of the reference without a meta kernel: nothing to hold to
        return
    got = [(o.dtype, tuple(o.shape)) for o in outs]
    if got != [(w.dtype, tuple(w.shape)) for w in want]:
        raise TypeError(f"{spec.name}: the kernel returns {got} where the reference returns "
                        f"{[(w.dtype, tuple(w.shape)) for w in want]}; the op's fake would promise the latter, "
                        "so it refuses (fix the kernel's output dtype or shape)")


def _first_call(spec: OpSpec, key: str, device: torch.device, args: list[Any], state: list[torch.Tensor],
                init: str) -> None:
    """Compare the kernel with the reference at a size the run did not verify; raise if they differ."""
    if key not in spec.checked:
        if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"{spec.name}: sizes {key} were not verified; call the op once at these sizes "
                               "before capturing a CUDA graph (the first call compares it with the reference)")
        spec.checked[key] = _disagreement(spec, args, state, init)
    if spec.checked[key] is not None:
        raise ValueError(f"{spec.name}: the kernel is wrong at sizes {key}: {spec.checked[key]}; "
                         "use the reference Model at these sizes, or optimize a run that covers them")


def _disagreement(spec: OpSpec, args: list[Any], state: list[torch.Tensor], init: str) -> str | None:
    """Why the kernel's outputs differ from the reference's on these inputs, or None when they agree."""
    with torch.no_grad():
        got = _outputs(_call(spec, "kernel", init, args, state))
        want = _outputs(_call(spec, "reference", init, args, state))
        wide = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        exact = _outputs(_call(spec, "reference", init, wide, [s.double() if s.is_floating_point() else s
                                                                for s in state]))
    if len(got) != len(want):
        return f"{len(got)} outputs, the reference gives {len(want)}"
    for index, (g, w, e) in enumerate(zip(got, want, exact, strict=True)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {index} is {g.dtype} {tuple(g.shape)}, the reference's {w.dtype} {tuple(w.shape)}"
        atol, rtol = TOLERANCES.get(w.dtype, (0.0, 0.0))
        e = e.to(g.device)
        allowed = atol + rtol * e.abs() + 2 * (w.double() - e).abs() if w.is_floating_point() else 0.0
        close = ((g.double() - e).abs() <= allowed) | (g.isnan() & w.isnan()) | (g == w)
        if not bool(close.all()):
            return f"output {index} has {int((~close).sum())} of {g.numel()} elements outside atol={atol:g}, " \
                   f"rtol={rtol:g}"
    return None


def fake_outputs(spec: OpSpec, args: list[Any], state: list[torch.Tensor], init: str) -> Any:
    """Empty outputs of the right shapes and dtypes: the reference Model run on the fake inputs."""
    outs = [torch.empty(o.shape, dtype=o.dtype, device=o.device)
            for o in _outputs(_call(spec, "reference", init, args, state))]
    return outs[0] if len(outs) == 1 else tuple(outs)


def reference_grads(spec: OpSpec, grads: list[torch.Tensor], args: list[Any], state: list[torch.Tensor],
                    init: str, needs: list[bool]) -> list[torch.Tensor]:
    """The gradients of the reference Model for the inputs marked in `needs` (tensor arguments, then
    the parameters and buffers): it is run again and differentiated with torch.func.vjp."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)] + list(state)
    wanted = [t for t, need in zip(tensors, needs, strict=True) if need]

    def reference(*chosen: torch.Tensor) -> tuple[torch.Tensor, ...]:
        given = iter(chosen)
        full = [next(given) if need else t for t, need in zip(tensors, needs, strict=True)]
        rebuilt, rest = [], iter(full)
        for a in args:
            rebuilt.append(next(rest) if isinstance(a, torch.Tensor) else a)
        return _outputs(_call(spec, "reference", init, rebuilt, list(rest)))

    _instance(spec, "reference", init)  # built outside the transform, which forbids its in-place initialisation
    outs, vjp = torch.func.vjp(reference, *wanted)
    pairs = [(o, g) for o, g in zip(outs, grads, strict=True) if o.is_floating_point() or o.is_complex()]
    if not pairs:
        raise RuntimeError(NO_BACKWARD.format(name=spec.name))
    cotangents = tuple(g if o.is_floating_point() or o.is_complex() else torch.zeros_like(o)
                       for o, g in zip(outs, grads, strict=True))
    found = vjp(cotangents)
    return [g.contiguous() for g in found]


def fake_grads(args: list[Any], state: list[torch.Tensor], needs: list[bool]) -> list[torch.Tensor]:
    """Empty gradients shaped as the inputs marked in `needs`."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)] + list(state)
    return [torch.empty(t.shape, dtype=t.dtype, device=t.device) for t, need in zip(tensors, needs, strict=True)
            if need]


def setup_backward(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
    """Keep what the backward needs: the tensor inputs and state, and which of them want a gradient."""
    *args, state, init = inputs
    tensors = [a for a in args if isinstance(a, torch.Tensor)] + list(state)
    ctx.needs = [t.requires_grad for t in tensors]
    ctx.plain = [None if isinstance(a, torch.Tensor) else a for a in args]
    ctx.init = init
    ctx.save_for_backward(*tensors)


def backward_through(spec: OpSpec, backward_op: Any) -> Any:
    """The op's autograd formula: `backward_op` (the reference's gradients) for the inputs that want one."""

    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:
        if spec.has_backward is False:
            raise RuntimeError(NO_BACKWARD.format(name=spec.name))
        saved = iter(ctx.saved_tensors)
        args = [next(saved) if plain is None else plain for plain in ctx.plain]
        state = list(saved)
        found = iter(backward_op(list(grads), *args, state, ctx.init, ctx.needs) if any(ctx.needs) else [])
        per_tensor = [next(found) if need else None for need in ctx.needs]
        arg_grads = [per_tensor.pop(0) if plain is None else None for plain in ctx.plain]
        return (*arg_grads, per_tensor, None)

    return backward
