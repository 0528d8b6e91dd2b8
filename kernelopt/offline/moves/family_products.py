"""A product read from where its operands' values lie in memory, not from the views that led to them.

torch.einsum, torch.tensordot and torch.matmul of batched shapes reach one mm or bmm through chains of
unsqueezes, permutes of sizes of 1 and reshapes (`einsum("bijl,lk->bijk")`: eleven views, then a bmm of one
batch). What matters to a template is only this: each operand reads an input's memory as a plain matrix (row
by row, or its transpose), and the result returned is the product's memory as it lies. Both are read here from
each tensor's base, sizes, strides and offset; a copy anywhere (a `.contiguous()` of a permuted input, a cast)
gives a tensor that is no input's view, and the product is left to the launch sweep as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Product:
    """What a matmul template needs to compute the reference's one product."""

    family: str  # "matmul" (a 2-D product, or a bmm of one batch) or "bmm"
    operands: tuple[int, int]  # which inputs are A and B
    transposed: tuple[bool, bool]  # whether each is its input's matrix transposed
    rows_flattened: bool  # matmul: A is an input of more dims, its leading dims its rows; bmm: the inputs' leading
    # dims are the batch
    triangle: tuple[str, int] | tuple[()] = ()  # ("triu" or "tril", diagonal): the product's triangle returned


def layout_product(work: list[tuple[str, tuple[Any, ...], dict[str, Any], Any]], inputs: list[torch.Tensor],
                   outputs: tuple[Any, ...], same: set[int]) -> Product | None:
    """The product of a reference whose only work (`work`: each operator that is not a view, its arguments,
    keyword arguments and result) is one mm or bmm of two inputs, returned through a view of the same values, or
    its torch.triu or torch.tril returned so (of each matrix of a bmm); else None. `same`: the ids of the product
    and of the views the recorder saw keep its values (torch.matmul's `_unsafe_view` has no base)."""
    if not 1 <= len(work) <= 2 or work[0][0] not in ("mm", "bmm") or len(inputs) != 2 or len(outputs) != 1:
        return None
    name, args, _, product = work[0]
    if len(args) < 2 or not all(isinstance(t, torch.Tensor) for t in (*args[:2], product, outputs[0])):
        return None
    # torch.bmm's batches: each input's leading dims (the same for both: no broadcast), one or more of them
    batched = name == "bmm" and all(t.dim() >= 3 for t in inputs) and inputs[0].shape[:-2] == inputs[1].shape[:-2]
    if name == "bmm" and not batched and product.shape[0] != 1:
        return None  # a batch of several matrices over inputs that are not each a batch of them
    found = [_matrix(t, inputs, batched, may_flatten=(i == 0)) for i, t in enumerate(args[:2])]
    if None in found or found[0][0] == found[1][0]:  # type: ignore[index]
        return None
    (a, flip_a, flat), (b, flip_b, _) = found  # type: ignore[misc]
    m, n = product.shape[-2], product.shape[-1]
    if batched:
        shape: tuple[int, ...] = (*inputs[a].shape[:-2], m, n)
        flat = inputs[a].dim() > 3  # the batch is the inputs' leading dims, viewed as one
    elif flat:
        shape = (*inputs[a].shape[:-1], n)
    else:
        shape = (m, n)
    family = "bmm" if batched else "matmul"
    if len(work) == 1:
        found_out = _returned(outputs[0], product, shape, same)
        return Product(family, (a, b), (flip_a, flip_b), flat) if found_out else None
    kind, of, keywords, kept = work[1]
    if kind not in ("triu", "tril") or (flat and not batched) or not of or not isinstance(of[0], torch.Tensor) \
            or not _returned(of[0], product, shape, same) or not _returned(outputs[0], kept, shape, {id(kept)}):
        return None  # a triangle of the rows-flattened product would be each of A's leading dims' own
    diagonal = keywords.get("diagonal", of[1] if len(of) > 1 else 0)
    return Product(family, (a, b), (flip_a, flip_b), flat, (kind, int(diagonal)))


def _matrix(t: torch.Tensor, inputs: list[torch.Tensor], batched: bool,
            may_flatten: bool) -> tuple[int, bool, bool] | None:
    """(input, transposed, rows_flattened) where `t` reads that input's memory as a plain matrix (each batch's,
    `batched`: the input's leading dims as one batch dim); None where it reads anything else (another order, an
    offset, a part, a copy)."""
    root = t if t._base is None else t._base
    index = next((i for i, x in enumerate(inputs) if x is root), None)
    if index is None or not root.is_contiguous() or t.storage_offset() != root.storage_offset() \
            or t.numel() != root.numel():
        return None
    shape, stride = list(t.shape), list(t.stride())
    if batched:
        batches = math.prod(root.shape[:-2])
        if t.dim() != 3 or shape[0] != batches or (batches > 1 and stride[0] != math.prod(root.shape[-2:])):
            return None
        matrices = tuple(root.shape[-2:])
    else:
        if t.dim() == 3 and shape[0] == 1:  # a bmm of one batch: its matrix
            shape, stride = shape[1:], stride[1:]
        if len(shape) != 2:
            return None
        matrices = tuple(root.shape)
    (rows, cols), (row_step, col_step) = shape[-2:], stride[-2:]
    if _steps(rows, row_step, cols) and _steps(cols, col_step, 1):  # row by row: the input's memory as it is
        if matrices == (rows, cols):
            return index, False, False
        if may_flatten and not batched and root.dim() >= 3 and root.shape[-1] == cols:
            return index, False, True  # torch.matmul's A of more dims: its leading dims are the rows
    # column by column (a dim of 1 reads both ways: the input's own shape says which)
    if _steps(rows, row_step, 1) and _steps(cols, col_step, rows) and matrices == (cols, rows):
        return index, True, False  # column by column: the input's matrix transposed
    return None


def _steps(size: int, step: int, expected: int) -> bool:
    """Whether a dim of `size` strides `expected` (a dim of one element strides anything)."""
    return size == 1 or step == expected


def _returned(out: torch.Tensor, product: torch.Tensor, shape: tuple[int, ...], same: set[int]) -> bool:
    """Whether `out` is the product's memory as it lies, with `shape` (what the templates return)."""
    if not (out is product or out._base is product or id(out) in same) or out.dtype != product.dtype:
        return False
    return product.is_contiguous() and out.is_contiguous() and out.storage_offset() == product.storage_offset() \
        and out.numel() == product.numel() == math.prod(shape) and tuple(out.shape) == shape


def rows_product(flattened: dict[int, int], args: tuple[Any, ...], base: dict[str, Any],
                 outputs: tuple[Any, ...]) -> bool:
    """torch.matmul of an A with more dims and a 2-D B: mm of A's leading dims viewed as rows (`flattened`: the
    recorder's such views of the inputs, by id), the one output (rows, N) given back A's leading dims. An mm of
    such a view returned 2-D (written out with torch.mm) is not: the templates give back A's dims."""
    index = flattened.get(id(args[0]))
    if index is None or len(outputs) != 1 or not isinstance(outputs[0], torch.Tensor):
        return False
    a = base["shapes"][index]
    return tuple(outputs[0].shape) == (*a[:-1], args[1].shape[-1])
