"""A family read from its operators' names, checked against what the reference computes.

The operators' names alone do not say what they apply to: `sigmoid(x) * x` is Swish and `sigmoid(x) * 2` is not;
`x / mean(|x|, dim, keepdim=True)` is an L1 norm, and `mean(|x|, dim) / x` or `x / mean(|x|, dim)` (no keepdim: a
square input divides along another dim) are not. Where a family is read from several operators (elementwise
formulas, the row norms), the reference is built on the CPU and run on a small input, and its values compared with
the template's formula; a family whose formula differs is "other", and its note says why. A reference that cannot
run on such an input (it views its input to its own sizes) keeps the family its operators read: the verifier judges
the template's kernel as any.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import ModuleType
from typing import Any

from kernelopt.offline.moves.elementwise import formula_differs

Family = Any  # family.Family, which imports this module: named here only, not imported (no circle)

# The families whose templates handle these input dtypes (a float64 input has none: no template writes it)
DTYPES = frozenset({"float32", "float16", "bfloat16"})


def _row_formula(family: Family) -> Callable[[Any], Any]:
    import torch

    dim, eps = family.dim, family.eps
    if family.name == "row_l1_norm":
        return lambda x: x / torch.mean(torch.abs(x), dim=dim, keepdim=True)
    if family.name == "row_l2_norm":
        return lambda x: x / torch.linalg.vector_norm(x, 2, dim=dim, keepdim=True)
    return lambda x: x / torch.sqrt(torch.mean(x * x, dim=dim, keepdim=True) + eps)


def _row_norm_differs(family: Family, forward: Callable[[Any], Any]) -> str:
    import torch

    # the input's sizes made small, equal where the problem's are (a square input stays square: a statistic
    # without its kept dim then divides along the other dim, as it would at the problem's size)
    small = dict(zip(dict.fromkeys(family.shapes[0]), (3, 5, 7, 4, 6, 2), strict=False))
    sizes = tuple(small.get(s, 2) for s in family.shapes[0])
    x = torch.randn(sizes, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 3
    with torch.no_grad():
        got, want = forward(x.clone()), _row_formula(family)(x)
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or not torch.allclose(got, want, rtol=1e-6):
        return (f"its values are not the template's {family.name.replace('_', ' ')} over dim {family.dim} (x divided "
                "by the row's statistic, kept as a dim)")
    return ""


SCAN_FORMS = ("forward", "reversed", "exclusive")  # what scan.py's template computes along the row


def _scan_form(family: Family, forward: Callable[[Any], Any]) -> str:
    """Which of the template's forms gives the reference's values on a small input, or ""."""
    import torch

    sizes = tuple(min(s, 6) for s in family.shapes[0])
    draw = torch.Generator().manual_seed(0)
    x = torch.rand(sizes, generator=draw, dtype=torch.float64) + 0.5
    inputs = [x.clone()]
    if family.operands:  # masked: the first input times the second (a bool mask, or values), then scanned
        inputs.append(torch.rand(sizes, generator=draw, dtype=torch.float64) > 0.5 if family.in_dtypes[1] == "bool"
                      else torch.rand(sizes, generator=draw, dtype=torch.float64) + 0.5)
        x = x * inputs[1]
    scan, dim = getattr(torch, family.ops[0]), family.dim
    identity = torch.zeros_like if family.ops[0] == "cumsum" else torch.ones_like
    with torch.no_grad():
        got = forward(*inputs)
        forms = {"forward": scan(x, dim), "reversed": scan(x.flip(dim), dim).flip(dim),
                 "exclusive": torch.cat((identity(x.narrow(dim, 0, 1)), scan(x, dim).narrow(dim, 0, x.shape[dim] - 1)),
                                        dim)}
    if not isinstance(got, torch.Tensor):
        return ""
    return next((form for form in SCAN_FORMS if got.shape == forms[form].shape
                 and torch.allclose(got, forms[form], rtol=1e-9)), "")


def checked(problem: ModuleType, family: Family) -> Family:
    """`family` as read, where its template computes the reference's values; else "other", saying why."""
    import torch

    if family.name != "other" and family.dtype not in DTYPES:
        return dataclasses.replace(family, name="other", note=f", read as {family.name} but on {family.dtype} "
                                   "inputs: the templates are written for 32- and 16-bit floats")
    if family.name == "reduce" and family.out_dtypes[:1] not in ((family.dtype,), ("int64",)):
        note = (f", read as reduce but returned as {family.out_dtypes[0]} from {family.dtype} inputs (a dtype= "
                "argument): the templates return the input's")
        return dataclasses.replace(family, name="other", note=note)
    if family.name == "scan":
        if family.out_dtypes[:1] != (family.dtype,):
            note = (f", read as scan but returned as {family.out_dtypes[0]} from {family.dtype} inputs (a dtype= "
                    "argument): the template returns the input's")
            return dataclasses.replace(family, name="other", note=note)
        try:
            torch.manual_seed(0)
            form = _scan_form(family, problem.Model(*problem.get_init_inputs()).double())
        except Exception:  # noqa: BLE001 - a reference that takes only its own sizes: its form cannot be read
            form = ""
        if not form:
            return dataclasses.replace(family, name="other", note=f", read as scan but its values are none of the "
                                       f"template's {family.ops[0]} forms ({', '.join(SCAN_FORMS)}) over dim "
                                       f"{family.dim} on a small input")
        return dataclasses.replace(family, scalars=(form,))
    if family.name not in ("elementwise", "row_l1_norm", "row_l2_norm", "row_rms_norm"):
        return family
    try:
        torch.manual_seed(0)
        model = problem.Model(*problem.get_init_inputs())
        if family.name == "elementwise":
            why = formula_differs(family.ops, family.scalars, dict(family.options), model, family.ndim or 1)
        else:
            why = _row_norm_differs(family, model.double())
    except Exception:  # noqa: BLE001 - a reference that takes only its own sizes (a view to them): not checked here
        why = ""
    return dataclasses.replace(family, name="other", note=f", read as {family.name} but {why}") if why else family
