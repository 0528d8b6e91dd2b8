"""Which family a problem belongs to, read from the reference's own operators on the meta device.

The problem's Model is built and run on meta tensors (no memory, no compute: a 6.4 GB input
costs nothing) under a dispatch mode that records each ATen operator it reaches. A reference
whose work is one softmax, one matmul, one row normalisation or one convolution (of its own
weight) belongs to that family; the template written for the family is then instantiated, with
sizes read at run time.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kernelopt.offline.moves import family_layers as layers
from kernelopt.offline.moves.elementwise import EXPRESSIONS
from kernelopt.offline.moves.family_checks import checked
from kernelopt.offline.moves.family_products import layout_product, rows_product

# Operators that move no data and do no arithmetic: views, metadata, copies into new storage.
_VIEWS = frozenset({
    "t", "transpose", "permute", "view", "_unsafe_view", "reshape", "expand", "unsqueeze", "squeeze", "detach",
    "alias", "clone", "contiguous", "_to_copy", "lift_fresh", "empty", "empty_strided",
})


@dataclass(frozen=True)
class Family:
    """What the reference computes, as far as a template needs to know."""

    name: str  # "softmax", "log_softmax", "matmul", "bmm", row norms, "standardize", "elementwise", "scan", "other"
    input_names: tuple[str, ...]  # the forward's parameters, in order
    dim: int | None = None  # the reduced dimension (softmax, norms), non-negative; standardize: the first of the row's
    eps: float | None = None  # standardize: the reference's epsilon
    ndim: int | None = None  # of the first input
    transposed: tuple[bool, ...] = ()  # matmul, bmm: whether A, B enter transposed views of the inputs
    operands: tuple[int, ...] = ()  # matmul, bmm: which inputs are A and B; scan: the input multiplied into the first
    dtype: str = "float32"
    shapes: tuple[tuple[int, ...], ...] = ()  # of the tensor inputs, at the problem's own size
    ops: tuple[str, ...] = field(default=())  # the non-view operators, in order (what "other" was)
    scalars: tuple[Any, ...] = ()  # the first operator's arguments, tensors as None (a slope, an eps); scan: its form
    out_dtypes: tuple[str, ...] = ()  # of the forward's outputs ("int64": max(x, dim)[1] is an argmax)
    in_dtypes: tuple[str, ...] = ()  # of the tensor inputs (a masked scan's mask: "bool")
    options: tuple[tuple[str, Any], ...] = ()  # the first operator's keyword arguments (gelu's approximate)
    state: tuple[str, ...] = ()  # conv, an affine Layer/GroupNorm: its weight's and bias's state_dict names ("": none)
    weight_shape: tuple[int, ...] = ()  # conv: its weight's; separable: the depthwise convolution's
    pointwise_shape: tuple[int, ...] = ()  # separable: the 1 x 1 convolution's weight's (state: both weights, biases)
    groups: int = 1  # standardize: rows per sample (GroupNorm's groups)
    momentum: float | None = None  # batch_norm: the call's momentum (None: the module's cumulative average)
    rows_flattened: bool = False  # matmul: A's leading dims are its rows; bmm: the inputs' leading dims the batch
    triangle: tuple[Any, ...] = ()  # matmul, bmm: ("triu" or "tril", diagonal) where that of the product is returned
    note: str = ""  # "other": why a family's template was not taken (", ..." after the operators in the report)


# Views that keep every value where it was (no transpose, no dtype change): a product seen through one is the product.
_SAME_VALUES = frozenset({"view", "_unsafe_view", "reshape", "alias", "detach"})


class _Recorder(TorchDispatchMode):
    """Records each operator and, for views of the inputs, which input and whether transposed."""

    def __init__(self, inputs: list[torch.Tensor]) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []  # (operator, args, kwargs)
        self.origin: dict[int, tuple[int, bool]] = {id(t): (i, False) for i, t in enumerate(inputs)}
        # views of an input with its leading dims as one (torch.matmul's rows): kept apart from `origin`, so that
        # only mm's first operand may be one (a norm or a transpose of such a view is not the input's)
        self.flattened: dict[int, int] = {}
        self.products: set[int] = set()  # an mm's or bmm's output, and plain views of it: what the forward may return
        self._held: list[torch.Tensor] = []  # each recorded view, alive: an id is not reused while it is a key
        self.results: list[Any] = []  # each call's output, in the order of `calls`

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        self.calls.append((name, args, dict(kwargs or {})))
        self.results.append(out)
        swap = name in ("t", "transpose", "permute") and args and id(args[0]) in self.origin
        if swap and _swaps_last_two(name, args):
            index, flipped = self.origin[id(args[0])]
            self.origin[id(out)] = (index, not flipped)
            self._held.append(out)
        if name in ("view", "_unsafe_view", "reshape") and args and _rows_of(args[0], out) \
                and self.origin.get(id(args[0]), (0, True))[1] is False:
            self.flattened[id(out)] = self.origin[id(args[0])][0]
            self._held.append(out)
        if name in ("mm", "bmm") or (name in _SAME_VALUES and args and id(args[0]) in self.products):
            self.products.add(id(out))
            self._held.append(out)
        return out


def _rows_of(tensor: Any, out: Any) -> bool:
    """Whether `out` is `tensor` (more than two dims) with its leading dims as one: (rows, last)."""
    return isinstance(tensor, torch.Tensor) and tensor.dim() >= 3 \
        and tuple(out.shape) == (math.prod(tensor.shape[:-1]), tensor.shape[-1])


def _swaps_last_two(name: str, args: tuple[Any, ...]) -> bool:
    """Whether a transpose or permute swaps the last two dims and nothing else (a matrix's transpose;
    another view leaves the operand unknown, so no template takes it)."""
    ndim = args[0].dim()
    if name == "t" or ndim < 2:
        return name == "t"
    last = [ndim - 2, ndim - 1]
    if name == "transpose":
        return sorted(int(d) % ndim for d in args[1:3]) == last
    return [int(p) % ndim for p in args[1]] == [*range(ndim - 2), *reversed(last)]


def _meta_call(make: Callable[[], Any]) -> Any:
    with torch.device("meta"):
        return make()


def trace_family(problem: ModuleType) -> Family:
    """The family of a loaded problem module; raises what building or running it on meta raised."""
    torch.manual_seed(0)
    model = _meta_call(lambda: problem.Model(*problem.get_init_inputs()))
    inputs = list(_meta_call(problem.get_inputs))
    names = tuple(list(inspect.signature(model.forward).parameters)[: len(inputs)])
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    recorder = _Recorder(tensors)
    with recorder, torch.no_grad():
        returned = model(*inputs)
    # an operator run under a dispatch mode or on meta (sdpa among them) leaves the CPU's intra-op thread pool slow for
    # the process and the workers it forks (CPU sdpa 100-600x: RESULTS.md (au)) until its size is set again
    torch.set_num_threads(torch.get_num_threads())
    ops = tuple(name for name, _, _ in recorder.calls if name not in _VIEWS)
    first = tensors[0] if tensors else None
    outputs = returned if isinstance(returned, tuple | list) else (returned,)
    base = {
        "input_names": names, "ops": ops, "ndim": first.dim() if first is not None else None,
        "dtype": str(first.dtype).removeprefix("torch.") if first is not None else "float32",
        "shapes": tuple(tuple(t.shape) for t in tensors),
        "out_dtypes": tuple(str(getattr(o, "dtype", "")).removeprefix("torch.") for o in outputs),
        "in_dtypes": tuple(str(t.dtype).removeprefix("torch.") for t in tensors),
    }
    family = _classify(recorder, ops, base, len(tensors), outputs)
    if family.name == "other":  # a product reached through views the recorder does not follow (einsum, tensordot)
        work = [(*c, r) for c, r in zip(recorder.calls, recorder.results, strict=True) if c[0] not in _VIEWS]
        product = layout_product(work, tensors, outputs, recorder.products)
        if product is not None:
            family = Family(**{**family.__dict__, "name": product.family, "operands": product.operands,
                               "transposed": product.transposed, "rows_flattened": product.rows_flattened,
                               "triangle": product.triangle})
    family = checked(problem, family)  # the family's formula against the reference's values (family_checks.py)
    if family.name in _READS_ITS_INPUT and not _in_place(recorder, tensors[0], outputs, _READS_ITS_INPUT[family.name]):
        note = (f", read as {family.name} but through a view that moves the input's values or the result's "
                f"(a transpose, a slice, other sizes): the {family.name} templates read and write them in place")
        family = Family(name="other", note=note, **base)
    calls = recorder.calls
    alone = family.name == "other" and len(tensors) == 1 and len(calls) == 1 \
        and recorder.origin.get(id(calls[0][1][0])) == (0, False)  # one operator, on the input itself
    if alone and calls[0][0] == "convolution":
        return layers.convolution(calls[0][1], model, family)
    if family.name == "other" and len(tensors) == 1 and [c[0] for c in calls] == ["convolution", "convolution"] \
            and recorder.origin.get(id(calls[0][1][0])) == (0, False) and calls[1][1][0] is recorder.results[0]:
        return layers.separable_pair(calls[0][1], calls[1][1], model, family)
    if alone and calls[0][0] == "native_layer_norm":
        return layers.affine_layer_norm(calls[0][1], model, family)
    if alone and calls[0][0] == "native_group_norm":
        return layers.group_norm(calls[0][1], model, family)
    last = calls[-1] if calls else ("", (None,), {})
    if family.name == "other" and len(tensors) == 1 and last[0] == "native_batch_norm" \
            and all(c[0] == "add_" or c[0] in _VIEWS for c in calls[:-1]) \
            and recorder.origin.get(id(last[1][0])) == (0, False):
        return layers.batch_norm(calls, model, family)
    return family


# The families whose templates read the one input as it is laid out and write the output the same way, and
# which views of the input (or of a result) are the same values to them: "exact" (the same sizes), "memory" (any
# sizes, the values in memory order: an elementwise template returns the input's shape, so the output must have
# it), "ones" (the same sizes but for dims of 1: nn.AvgPool1d pools its input viewed as 2-D), "regroup" (instance
# norm's (1, N x C, ...) view of an (N, C, ...) input, for batch norm only).
_READS_ITS_INPUT = {"elementwise": "memory", "pooling": "ones", "softmax": "exact", "log_softmax": "exact",
                    "reduce": "exact", "row_l1_norm": "exact", "row_l2_norm": "exact", "row_rms_norm": "exact",
                    "standardize": "regroup"}  # scan: its values are compared instead (family_checks.py)
# Operators that copy a tensor's values as they are (the family's input then lives in the copy too).
_COPIES = frozenset({"clone", "detach", "alias", "lift_fresh", "_to_copy", "contiguous"})


def _same_layout(a: tuple[int, ...], b: tuple[int, ...], mode: str) -> bool:
    if a == b or mode == "memory":
        return True
    if mode == "ones":
        return [d for d in a if d != 1] == [d for d in b if d != 1]
    if mode == "regroup":
        return any(len(p) >= 2 and q == (1, p[0] * p[1], *p[2:]) for p, q in ((a, b), (b, a)))
    return False


def _in_place(recorder: _Recorder, x: torch.Tensor, outputs: tuple[Any, ...], mode: str) -> bool:
    """Whether the recorded work reads the input with every value where it is and returns its results so:
    each operand that holds the input's values (the input, a copy of it in its dtype, or a view of either)
    is all of them in memory order with sizes the same to the family (`mode`, above); each output likewise of
    an operator's result. A transposed, sliced, reflattened or cast input (softmax over `x.transpose(1, 2)`,
    `x.clone().view(n, -1)` or `x.float()` of an fp16 x, a sum over `x.transpose(0, 2)`), or a result returned
    through such a view, is work no template of the family does."""
    def whole(view: torch.Tensor, of: torch.Tensor, how: str) -> bool:
        return view.is_contiguous() and of.is_contiguous() and view.storage_offset() == of.storage_offset() \
            and view.numel() == of.numel() and _same_layout(tuple(view.shape), tuple(of.shape), how)

    sources = {id(x)}  # the input and its copies
    results = []
    for (name, args, _), out in zip(recorder.calls, recorder.results, strict=True):
        taken = [a for a in args if isinstance(a, torch.Tensor)
                 and (id(a) in sources or (a._base is not None and id(a._base) in sources))]
        how = "exact" if mode == "regroup" and name != "native_batch_norm" else mode
        if any(id(t) not in sources and not whole(t, x, how) for t in taken):
            return False
        if name in _COPIES and taken and isinstance(out, torch.Tensor):
            if out.dtype != x.dtype or not whole(out, x, "exact"):
                return False  # a cast, or a copy that moves the values: not the input the template reads
            sources.add(id(out))
        if name not in _VIEWS:
            results.extend(o for o in (out if isinstance(out, tuple | list) else (out,)) if isinstance(o, torch.Tensor))
    for o in outputs:
        made = next((r for r in results if o is r or (o._base is not None and (o._base is r or o._base is r._base))),
                    None)
        if made is None or not (o is made or whole(o, made, mode)):
            return False
        if mode == "memory" and tuple(o.shape) != tuple(x.shape):
            return False
    return True


def _dim(value: int, ndim: int | None) -> int:
    return value % ndim if ndim else value


def _classify(recorder: _Recorder, ops: tuple[str, ...], base: dict[str, Any], n_inputs: int,
              outputs: tuple[Any, ...]) -> Family:
    kept = [call for call in recorder.calls if call[0] not in _VIEWS]
    calls = [(name, args) for name, args, _ in kept]
    ndim = base["ndim"]
    if kept:
        options = tuple(sorted((k, v) for k, v in kept[0][2].items() if isinstance(v, str | int | float)))
        base = {**base, "scalars": tuple(None if isinstance(a, torch.Tensor) else a for a in calls[0][1]),
                "options": options}
    if n_inputs == 1 and ops in EXPRESSIONS:
        return Family(name="elementwise", **base)
    if n_inputs == 1 and len(outputs) == 1 and (  # return_indices: the templates give the values only
            (ops in (("max_pool2d_with_indices",), ("avg_pool2d",)) and ndim in (3, 4))
            or (ops in (("max_pool3d_with_indices",), ("avg_pool3d",)) and ndim in (4, 5))):
        return Family(name="pooling", **base)
    if n_inputs == 1 and ops in (("_softmax",), ("_log_softmax",)):
        return Family(name=ops[0].lstrip("_"), dim=_dim(calls[0][1][1], ndim), **base)
    for name, op, rank in (("matmul", "mm", 2), ("bmm", "bmm", 3)):
        flat = op == "mm" and n_inputs == 2 and ops == (op,) \
            and rows_product(recorder.flattened, calls[0][1], base, outputs)
        returned = len(outputs) == 1 and id(outputs[0]) in recorder.products  # the product itself, not a view of it
        if n_inputs == 2 and ops == (op,) and (ndim == rank or flat) and returned:
            known = [recorder.origin.get(id(t)) for t in calls[0][1][:2]]
            if flat:
                known[0] = (recorder.flattened[id(calls[0][1][0])], False)
            pairs = [k for k in known if k is not None]
            if len(pairs) == 2:  # both operands are (transposed) inputs
                return Family(name=name, operands=tuple(p[0] for p in pairs),
                              transposed=tuple(p[1] for p in pairs), rows_flattened=flat, **base)
    if n_inputs == 1 and len(calls) == 1 and ndim:
        reduction = _reduction(calls[0], ndim, base["out_dtypes"])
        if reduction:
            return Family(name="reduce", dim=reduction[1], **{**base, "ops": (reduction[0],),
                                                             "scalars": (reduction[2],)})
    masked = n_inputs == 2 and len(set(base["shapes"])) == 1 and [n for n, _ in calls].count("mul") == 1
    if (n_inputs == 1 or masked) and ndim:  # masked: the scan of the product of two inputs of one shape
        scan = _scan([c for c in calls if not masked or c[0] != "mul"], ndim)
        if scan:
            return Family(name="scan", dim=scan[1], operands=(1,) if masked else (),
                          **{**base, "ops": (scan[0],), "scalars": ("",)})
    if n_inputs == 1 and len(calls) == 1:
        standard = _standardize(calls[0], ndim)
        if standard:
            return Family(name="standardize", dim=standard[0], eps=standard[1], **base)
    if n_inputs == 1 and ndim:
        norm = _row_norm(calls, ndim)
        if norm:
            return Family(name=norm[0], dim=norm[1], eps=norm[2], **base)
    return Family(name="other", **base)


# What a scan's reference may move its values with around its one cumsum or cumprod: which of the template's forms
# (forward, from the row's end, exclusive) that makes is read from the values (family_checks.py)
_SCAN_MOVES = frozenset({"flip", "slice", "narrow", "select", "cat", "zeros_like", "ones_like", "full_like", "zeros",
                         "ones", "fill", "constant_pad_nd"})


def _scan(calls: list[tuple[str, tuple[Any, ...]]], ndim: int) -> tuple[str, int] | None:
    """One torch.cumsum or cumprod along one dim, every other operator one that only moves values: the op, the dim."""
    scans = [(name, args) for name, args in calls if name in ("cumsum", "cumprod")]
    if len(scans) != 1 or any(name not in _SCAN_MOVES for name, _ in calls if name not in ("cumsum", "cumprod")):
        return None
    op, args = scans[0]
    if len(args) < 2 or not isinstance(args[1], int):
        return None
    return op, _dim(args[1], ndim)


def _row_norm(calls: list[tuple[str, tuple[Any, ...]]], ndim: int) -> tuple[str, int, float | None] | None:
    """x / mean(|x|), x / norm(x, 2) or x / sqrt(mean(x^2) + eps) over one dim, kept: the family, the dim, eps."""
    names = [name for name, _ in calls]
    if names == ["abs", "mean", "div"]:
        dims = calls[1][1][1]
        if len(dims) == 1:
            return "row_l1_norm", _dim(dims[0], ndim), None
    if names in (["linalg_vector_norm", "div"], ["norm", "div"]):
        args = calls[0][1]
        order = args[1] if len(args) > 1 else 2
        dims = args[2] if len(args) > 2 else None  # None: over every dim, not a row
        if order == 2 and dims is not None and len(dims) == 1:
            return "row_l2_norm", _dim(dims[0], ndim), None
    if names == ["pow", "mean", "add", "sqrt", "div"] and calls[0][1][1] == 2:
        dims, eps = calls[1][1][1], calls[2][1][1]
        if len(dims) == 1 and isinstance(eps, float):
            return "row_rms_norm", _dim(dims[0], ndim), eps
    return None


_REDUCTIONS = frozenset({"sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "logsumexp",
                         "linalg_vector_norm"})


def _reduction(
    call: tuple[str, tuple[Any, ...]], ndim: int, out_dtypes: tuple[str, ...]
) -> tuple[str, int, bool] | None:
    """A reduction along one dim with one output: the op (max(x, dim)[1] is an argmax), the dim, keepdim."""
    name, args = call
    if name not in _REDUCTIONS or len(args) < 2 or len(out_dtypes) != 1:
        return None
    if name == "linalg_vector_norm":  # (x, ord, dim, keepdim): the 1- and 2-norm along a dim
        if args[1] not in (1, 2) or len(args) < 3:
            return None
        name, args = f"norm{int(args[1])}", (args[0], *args[2:])
    dims = args[1]
    dims = list(dims) if isinstance(dims, list | tuple) else [dims]
    if len(dims) != 1 or not isinstance(dims[0], int):
        return None  # every dim, or several: no row
    keepdim = bool(args[2]) if len(args) > 2 else False
    if name in ("max", "min") and out_dtypes[0] == "int64":
        name = "arg" + name
    return name, _dim(dims[0], ndim), keepdim


def _standardize(call: tuple[str, tuple[Any, ...]], ndim: int | None) -> tuple[int, float] | None:
    """InstanceNorm or LayerNorm without weight and bias: the first dim of each row, and eps."""
    name, args = call
    if name == "native_batch_norm" and ndim and ndim >= 3 and len(args) >= 8:
        # instance norm: batch norm over the input seen as (1, batch * channels, ...), batch statistics
        if args[1] is None and args[2] is None and args[5] is True and args[0].shape[0] == 1:
            return 2, float(args[7])
    if name == "native_layer_norm" and ndim and len(args) >= 5 and args[2] is None and args[3] is None:
        return ndim - len(args[1]), float(args[4])
    return None
