"""Which graph input of the compiled reference is which: a forward input, a parameter or buffer, or a size.

Inductor's `call(args)` takes the graph's inputs in the order the tracer met them, parameters
and sizes mixed with the forward's inputs. The tracer's own example values say which is which:
the forward's input tensors and the module's parameters are handed over as they are.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from kernelopt.seed.errors import SeedError
from kernelopt.seed.writer import Binding


def bind(model: Any, inputs: Sequence[Any], graph_module: Any) -> list[Binding]:
    """One Binding per graph input, matched by identity (or storage) to inputs and the module's state.

    A Python number of the module that the tracer lifted into a tensor (`self.eps`) is a
    "scalar": some compiler versions keep it as an argument of `call`, others specialize it away.
    One lifted from a global of the reference's module (`math.pi`) is a "constant": its value.
    """
    import torch

    state = {
        id(t): name
        for name, t in [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]
    }
    found: list[Binding] = []
    numbers = _forward_numbers(model, inputs)
    for node in graph_module.graph.nodes:
        if node.op != "placeholder":
            continue
        graph_arg = node.meta.get("grapharg")
        example = getattr(graph_arg, "example", None)
        if (index := numbers.get(_local_name(graph_arg) or "")) is not None:
            # a number the forward takes (`A * s`): a float arrives as a 0-d float64 tensor, which call reads with
            # .item(); an int as itself
            found.append(Binding("number", index=index, name=str(example.dtype).removeprefix("torch.")
                                 if isinstance(example, torch.Tensor) else ""))
            continue
        if isinstance(example, int | torch.SymInt):
            found.append(Binding("size"))
            continue
        if not isinstance(example, torch.Tensor):
            continue
        index = next((i for i, x in enumerate(inputs) if x is example), None)
        if index is None:
            index = next(
                (i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and _same_storage(x, example)), None
            )
        if index is not None:
            found.append(Binding("input", index=index))
        elif id(example) in state:
            found.append(Binding("state", name=state[id(example)]))
        elif (path := _attribute_path(graph_arg)) is not None:
            found.append(Binding("scalar", name=path))
        elif (value := _global_number(graph_arg, example)) is not None:
            found.append(Binding("constant", name=value))
    return found


def _source_name(graph_arg: Any) -> str | None:
    """Where the tracer took a graph input from, as Dynamo names it (`L['x']`, `L['self'].eps`, `G['math'].pi`)."""
    name = getattr(getattr(graph_arg, "source", None), "name", None)
    text = name() if callable(name) else name
    return text if isinstance(text, str) else None


def _forward_numbers(model: Any, inputs: Sequence[Any]) -> dict[str, int]:
    """The forward's inputs that are Python numbers, by parameter name: their positions."""
    try:
        names = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        return {}
    return {names[i]: i for i, x in enumerate(inputs)
            if i < len(names) and isinstance(x, int | float) and not isinstance(x, bool)}


def _local_name(graph_arg: Any) -> str | None:
    """`s` for an input the tracer took from the forward's argument `L['s']`; None for anything else."""
    text = _source_name(graph_arg)
    found = re.fullmatch(r"L\['(\w+)'\]", text) if text is not None else None
    return found.group(1) if found and found.group(1) != "self" else None


def _global_number(graph_arg: Any, example: Any) -> str | None:
    """The value, as an exact literal, of a Python number the tracer lifted from a global of the
    reference's module (`math.pi` in `math.sqrt(2.0 / math.pi)`); None for anything else."""
    text = _source_name(graph_arg)
    if text is None or not text.startswith("G[") or example.numel() != 1:
        return None
    value = example.item()
    return repr(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _attribute_path(graph_arg: Any) -> str | None:
    """`ln.eps` for a number the tracer lifted from `L['self']._modules['ln'].eps`; None for anything else."""
    text = _source_name(graph_arg)
    if text is None or not text.startswith("L['self']"):
        return None
    path = re.sub(r"\._(?:modules|parameters|buffers)\['([^']+)'\]", r".\1", text[len("L['self']") :])
    return path.lstrip(".") if re.fullmatch(r"(\.\w+)+", path) else None


def _same_storage(a: Any, b: Any) -> bool:
    return bool(a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.dtype == b.dtype)


def recording_backend(model: Any, inputs: Sequence[Any], inner: Callable[..., Any] | None, out: list[list[Binding]]):
    """A torch.compile backend that records the bindings of each graph `inner` compiles.

    A graph whose compile raises is not recorded: when the compiler cannot keep a Python float of
    the module (`ln.eps`) as an input, it restarts the trace with the float a constant, and only
    the second graph is compiled (Inductor with max-autotune on a GPU does this for LayerNorm).
    """

    def backend(gm: Any, example_inputs: Sequence[Any]) -> Any:
        bindings = bind(model, inputs, gm)  # before compiling: the compiler may rewrite the graph
        compiled = inner(gm, example_inputs) if inner else gm.forward
        out.append(bindings)
        return compiled

    return backend


@contextlib.contextmanager
def warnings_after_the_graph() -> Iterator[None]:
    """A `warnings.warn` in the reference's forward (InstanceNorm2d given a tensor whose channels are not its
    num_features warns on every call) moved after the traced graph instead of breaking it in two: the seed needs
    one graph. A torch whose Dynamo cannot reorder it traces as before."""
    import torch._dynamo.config as dynamo_config

    if not hasattr(dynamo_config, "reorderable_logging_functions"):
        yield
        return
    with dynamo_config.patch(reorderable_logging_functions={*dynamo_config.reorderable_logging_functions,
                                                            warnings.warn}):
        yield


def trace_bindings(model: Any, inputs: Sequence[Any], duck_shape: bool = False) -> list[Binding]:
    """The bindings of the single graph torch.compile (dynamic shapes) makes of `model` (no compiling).

    `duck_shape` must be the compiler's own setting: with it, equal sizes share one symbol.
    """
    import torch
    import torch.fx.experimental._config as shape_config

    recorded: list[list[Binding]] = []
    torch._dynamo.reset()
    with torch.no_grad(), shape_config.patch(use_duck_shape=duck_shape), warnings_after_the_graph():
        torch.compile(model, backend=recording_backend(model, inputs, None, recorded), dynamic=True)(*inputs)
    torch._dynamo.reset()
    if len(recorded) != 1:
        raise SeedError(f"the reference compiles to {len(recorded)} graphs; the seed needs one (a graph break?)")
    return recorded[0]
