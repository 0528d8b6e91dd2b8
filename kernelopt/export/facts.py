"""What an export needs to know of a problem: its forward's arguments, its state, its outputs, its sizes.

The problem (the user's own reference, trusted as the harness trusts it) is imported here; its
inputs and Model are built on the meta device, so a problem sized for a GPU costs no memory.
The kernel is only read as text: it runs first in the exported module, under its checks.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelopt.export.runtime import size_key
from kernelopt.harness.problem import import_file, load_problem
from kernelopt.records import InputError

_imports = itertools.count()


@dataclass(frozen=True)
class ProblemFacts:
    """The problem's op signature and the sizes and dtypes the run verified the kernel on."""

    arg_names: tuple[str, ...]
    arg_kinds: tuple[str, ...]  # "Tensor", "int", "float" or "bool": the schema's type of each argument
    arg_dtypes: tuple[str | None, ...]
    state_names: tuple[str, ...]
    state_dtypes: tuple[str, ...]
    outputs: int  # how many tensors forward returns
    init_args: tuple[Any, ...]
    verified_keys: tuple[str, ...]
    verified_words: tuple[str, ...]  # each verified input set in words: "x float32 (64, 512)"
    has_backward: bool | None  # None: the reference could not be tried on the meta device
    train_only: bool  # the Model behaves otherwise in eval() (batch norm, dropout): verified in training mode only


def _dtype(value: torch.Tensor) -> str:
    return str(value.dtype).removeprefix("torch.")


def _kind(value: Any, problem: str) -> str:
    for kind, types in (("Tensor", torch.Tensor), ("bool", bool), ("int", int), ("float", float)):
        if isinstance(value, types):
            return kind
    raise InputError(f"{problem}: get_inputs() gives a {type(value).__name__}; an exported op takes tensors, "
                     "ints, floats and bools")


def _on_meta(make: Any) -> Any:
    """make() with tensors created on the meta device (no memory), else on the CPU where it needs data."""
    torch.manual_seed(0)
    try:
        with torch.device("meta"):
            return make()
    except (RuntimeError, NotImplementedError, TypeError):
        return make()


def _arg_names(model: type, count: int) -> tuple[str, ...]:
    params = list(inspect.signature(model.forward).parameters.values())[1:]
    named = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(named) < count or any(p.kind == p.VAR_POSITIONAL for p in params[: len(named)]):
        named = [f"arg{i}" for i in range(count)]
    names = tuple(named[:count])
    return tuple(f"{n}_" if n in ("state", "init", "grads", "needs") else n for n in names)


def _words(names: tuple[str, ...], values: list[Any]) -> str:
    return ", ".join(f"{n} {_dtype(v)} {tuple(v.shape)}" if isinstance(v, torch.Tensor) else f"{n}={v!r}"
                     for n, v in zip(names, values, strict=True))


def _reference_outputs(module: Any, init: tuple[Any, ...], inputs: list[Any]) -> tuple[int, bool | None]:
    """How many outputs the reference gives, and whether they carry a gradient (tried on meta tensors)."""
    def run() -> tuple[int, bool]:
        model = module.Model(*init)
        given = [v.detach().clone().requires_grad_(v.is_floating_point()) if isinstance(v, torch.Tensor) else v
                 for v in inputs]
        out = model(*given)
        outs = tuple(out) if isinstance(out, tuple | list) else (out,)
        if not all(isinstance(o, torch.Tensor) for o in outs):
            raise InputError("the problem's Model returns something other than tensors; an exported op returns "
                             "a tensor or a tuple of tensors")
        return len(outs), any(o.requires_grad for o in outs)

    with torch.device(inputs[0].device if inputs and isinstance(inputs[0], torch.Tensor) else "cpu"):
        count, grads = run()
    return count, grads


def problem_facts(problem_path: str | Path) -> ProblemFacts:
    """The facts of the problem file at `problem_path` (an InputError where it cannot be exported)."""
    name = Path(problem_path).name
    load_problem(problem_path)  # its checks, with their messages
    module = import_file(problem_path, f"kernelopt_export_problem_{next(_imports)}")
    init = tuple(module.get_init_inputs())
    sets = [list(_on_meta(module.get_inputs))]
    if callable(getattr(module, "get_extra_inputs", None)):
        sets += [list(extra) for extra in _on_meta(module.get_extra_inputs)]
    first = sets[0]
    kinds = tuple(_kind(v, name) for v in first)
    names = _arg_names(module.Model, len(first))
    model = _on_meta(lambda: module.Model(*init))
    state = [*model.named_parameters(), *model.named_buffers()]
    init_text = repr((init, {}))
    keys = tuple(size_key(init_text, values, [t for _, t in state]) for values in sets)
    try:
        outputs, has_backward = _reference_outputs(module, init, first)
    except InputError as err:
        raise InputError(f"{name}: {err}") from None
    except Exception:  # an op without a meta kernel: the count comes from a CPU run of the first input set
        outputs, has_backward = len(_plain_outputs(module, init)), None
    return ProblemFacts(
        arg_names=names, arg_kinds=kinds,
        arg_dtypes=tuple(_dtype(v) if isinstance(v, torch.Tensor) else None for v in first),
        state_names=tuple(n for n, _ in state), state_dtypes=tuple(_dtype(t) for _, t in state),
        outputs=outputs, init_args=init, verified_keys=keys,
        verified_words=tuple(_words(names, values) for values in sets), has_backward=has_backward,
        train_only=_mode_dependent(model, Path(problem_path).read_text()),
    )


def _plain_outputs(module: Any, init: tuple[Any, ...]) -> tuple[Any, ...]:
    torch.manual_seed(0)
    with torch.no_grad():
        out = module.Model(*init)(*module.get_inputs())
    return tuple(out) if isinstance(out, tuple | list) else (out,)


# Modules whose forward differs between train() and eval(): the harness judged the kernel in training mode.
_MODE_DEPENDENT = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.instancenorm._InstanceNorm,
                   torch.nn.modules.dropout._DropoutNd, torch.nn.RNNBase, torch.nn.MultiheadAttention)


def _mode_dependent(model: torch.nn.Module, source: str) -> bool:
    """Whether the Model may answer differently in eval(): such a module, or a forward that reads self.training
    or calls dropout."""
    return any(isinstance(m, _MODE_DEPENDENT) for m in model.modules()) or "training" in source or "dropout" in source
