"""The verifier's test cases: which inputs a candidate is judged on, and how to make them.

Every private seed on get_inputs; each of the problem's extra input sets; other sizes, smaller
and larger (module-level ints that get_inputs reads, or, where it uses literal sizes, those
literals); the first seed's inputs scaled up (wide values) and shifted; where the forward takes Python floats
(`A * s`), those drawn anew. A case is a small JSON dict, so
that the reference and the candidate processes build exactly the same inputs from it.
"""

from __future__ import annotations

import ast
import inspect
import math
import random
import textwrap
from collections.abc import Callable
from typing import Any

import torch

from kernelopt.harness.measure.parameters import reference_norm_parameters
from kernelopt.syntax import compile_tree, parse


def _to_device(values: list[Any], device: torch.device) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def case_inputs(problem: Any, case: dict[str, Any], device: torch.device) -> list[Any]:
    """The inputs of one test case: a seed, and an extra input set, size overrides or a scale.

    They are made on the device where the problem allows it (its get_inputs runs with the device
    as the default), so a problem's multi-GB inputs never pass through host memory.
    """
    torch.manual_seed(case["seed"])
    with device:
        return _to_device(_case_values(problem, case), device)


def _case_values(problem: Any, case: dict[str, Any]) -> list[Any]:
    if "extra" in case:
        return list(problem.get_extra_inputs()[case["extra"]])
    if "literal" in case:
        get_inputs = literal_sized_get_inputs(problem, case["literal"] == "larger", case["size_seed"])
        torch.manual_seed(case["seed"])
        return list(get_inputs())  # type: ignore[misc]
    if "scale" in case or "shift" in case:
        return _scaled(list(problem.get_inputs()), case.get("scale", 1.0), case.get("shift", 0.0))
    if "numbers" in case:
        return _other_numbers(list(problem.get_inputs()), case["numbers"])
    saved = {name: getattr(problem, name) for name in case.get("overrides", {})}
    try:
        for name, value in case.get("overrides", {}).items():
            setattr(problem, name, tuple(value) if isinstance(saved[name], tuple) else value)
        return list(problem.get_inputs())
    finally:
        for name, value in saved.items():
            setattr(problem, name, value)


# The wide-values case: float inputs times this. A kernel that only works in randn's range
# (no max subtraction before exp, values above a threshold dropped) fails it.
WIDE_SCALE = 100.0
# The shifted case: float inputs plus this. A kernel that assumes a sign (a running max that
# starts at 0, say) fails it. At -120 a randn row's exp() is below fp32's smallest denormal
# (about e^-103), so such a kernel gets 0/0 on every device; at -100 it got denormals on the
# CPU, of a few bits, and could pass by luck. -120 lies in the same binade as -100 ([64, 128)),
# so an honest kernel meets the same fp32 and fp16 rounding as before.
SHIFT = -120.0


def _scaled(values: list[Any], scale: float, shift: float) -> list[Any]:
    """The float inputs times `scale` plus `shift`, each a new tensor (a problem may keep its own),
    made without a temporary and put in place of the given one as it is made: a problem's 16 GiB
    input is held twice at most, not three times."""
    for i, value in enumerate(values):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            values[i] = (value * scale).add_(shift)
    return values


# The other-numbers case: each Python float the forward takes, times a private factor in this range (its sign
# kept, so a scale stays a scale and an eps stays positive). A kernel that bakes the given value in (3.14 for
# `A * s`) fails it; a reference that refuses the new value (a probability past 1) drops the case, as it does a
# size it does not allow. Ints are left alone: they may be a dim or a kernel size, which a kernel may specialize.
NUMBER_FACTORS = (0.5, 2.0)


def _other_numbers(values: list[Any], seed: int) -> list[Any]:
    rng = random.Random(seed)
    return [v * rng.uniform(*NUMBER_FACTORS) if type(v) is float else v for v in values]


def takes_floats(problem: Any, seed: int) -> bool:
    """Whether get_inputs gives the forward a nonzero Python float (found on the meta device: no memory)."""
    try:
        torch.manual_seed(seed)
        with torch.device("meta"):
            return any(type(v) is float and v != 0.0 for v in problem.get_inputs())
    except Exception:
        return False


def _size_values(value: Any) -> list[int]:
    """The resizable sizes in a module-level value: an int above 2, or such ints inside a tuple."""
    if type(value) is int:
        return [value] if value > 2 else []
    if isinstance(value, tuple) and value and all(type(v) is int for v in value):
        return [v for v in value if v > 2]
    return []


def _sizes(problem: Any) -> dict[str, int | tuple[int, ...]]:
    """Module-level sizes get_inputs reads and get_init_inputs does not: ints, and tuples of ints
    (`input_shape = (4096,)`), each with at least one entry above 2."""
    names = set(problem.get_inputs.__code__.co_names) - set(problem.get_init_inputs.__code__.co_names)
    values = {name: getattr(problem, name, None) for name in sorted(names)}
    return {name: value for name, value in values.items() if _size_values(value)}  # type: ignore[misc]


def _apply(value: int | tuple[int, ...], new: Callable[[int], int]) -> int | list[int]:
    if isinstance(value, tuple):
        return [new(v) if v > 2 else v for v in value]  # a list in a case's JSON; a tuple again in _case_values
    return new(value)


def size_overrides(problem: Any, seed: int = 0, larger: bool = False, tied: bool = False) -> dict[str, Any]:
    """Other sizes for the inputs: every module-level size get_inputs reads (ints, and the ints
    inside tuples such as `input_shape = (N,)`) and get_init_inputs does not.

    Halving each (plus a private 1 to 16, so that it is no multiple of a block size) gives a shape
    the kernel has not seen: a kernel special-cased for the given shape, or missing its masks, fails.
    `larger` grows them by a private, seeded factor (2 to 3 times the elements in all): a kernel
    whose grid covers only sizes up to twice the given one fails that. Each size gets its own new
    value; with `tied`, equal sizes get one new value between them (sizes the problem links, such
    as a batch size that must equal a row length, stay equal).
    """
    sizes = _sizes(problem)
    rng = random.Random(seed)
    count = len({v for value in sizes.values() for v in _size_values(value)}) if tied else sum(
        len(_size_values(value)) for value in sizes.values()
    )
    shared: dict[int, int] = {}

    def new(old: int) -> int:
        if tied:
            return shared.setdefault(old, _resize(old, larger, rng, count))
        return _resize(old, larger, rng, count)

    return {name: _apply(value, new) for name, value in sizes.items()}


def _halved(problem: Any) -> dict[str, Any]:
    """Every size halved exactly (rounded down): sizes in proportion (one twice another) stay so."""
    return {name: _apply(value, lambda v: max(1, v // 2)) for name, value in _sizes(problem).items()}


def _resize_choices(problem: Any, seed: int, larger: bool) -> list[dict[str, Any]]:
    """The resizes of a derived case, in the order they are tried: each size on its own, then equal
    sizes tied, then (smaller only) all halved in proportion. A later one is used only where the
    reference refuses the earlier ones (linked sizes), so the strongest test it accepts is run."""
    choices = [size_overrides(problem, seed, larger), size_overrides(problem, seed, larger, tied=True)]
    if not larger:
        choices.append(_halved(problem))
    unique: list[dict[str, Any]] = []
    for choice in choices:
        if choice and choice not in unique:
            unique.append(choice)
    return unique


def case_choices(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The concrete cases a planned case may become: itself, or one per resize to try in turn."""
    if "alternatives" not in case:
        return [case]
    plain = {k: v for k, v in case.items() if k != "alternatives"}
    return [plain] + [{**plain, "overrides": other} for other in case["alternatives"]]


def plan_cases(problem: Any, seeds: list[int]) -> list[dict[str, Any]]:
    """Every seed on get_inputs, each extra input set, other sizes (smaller and larger), wide and
    shifted values, the forward's float inputs drawn anew, and (for a model with norm layers) their
    weights and biases drawn."""
    cases: list[dict[str, Any]] = [{"seed": seed} for seed in seeds]
    if hasattr(problem, "get_extra_inputs"):
        torch.manual_seed(seeds[0])
        cases += [{"seed": seeds[0] + 1 + i, "extra": i} for i in range(len(problem.get_extra_inputs()))]
    smaller = _resize_choices(problem, seeds[0], larger=False)
    grown: dict[str, Any] | None = None
    if smaller:
        cases.append(_with_alternatives({"seed": seeds[0] + 1000}, smaller))
        grown = _with_alternatives({"seed": seeds[0] + 1001}, _resize_choices(problem, seeds[0], larger=True))
    elif literal_sized_get_inputs(problem, larger=False, seed=0) is not None:
        cases.append({"seed": seeds[0] + 1000, "literal": "smaller", "size_seed": seeds[0]})
        grown = {"seed": seeds[0] + 1001, "literal": "larger", "size_seed": seeds[0]}
    if grown is not None:
        given = input_bytes(problem, {"seed": seeds[0]})
        if given is not None and given > LARGER_CASE_MAX_BYTES:
            grown["skip"] = (
                f"the given inputs already take {given / 2**30:.1f} GiB; the smaller, odd size still checks other sizes"
            )
        cases.append(grown)
    cases.append({"seed": seeds[0] + 2000, "scale": WIDE_SCALE})
    cases.append({"seed": seeds[0] + 2001, "shift": SHIFT})
    if takes_floats(problem, seeds[0]):
        cases.append({"seed": seeds[0] + 2003, "numbers": seeds[0] + 5000})
    if reference_norm_parameters(problem):  # weight 1 and bias 0 would hide a kernel that skips them
        cases.append({"seed": seeds[0] + 2002, "params": seeds[0] + 4000})
    # Inputs for timing only: no checked call sees them, so no answer can be remembered.
    cases.append({"seed": seeds[0] + 3000, "timing": True})
    return cases


def _with_alternatives(case: dict[str, Any], choices: list[dict[str, Any]]) -> dict[str, Any]:
    case["overrides"] = choices[0]
    if len(choices) > 1:
        case["alternatives"] = choices[1:]
    return case


# A problem whose given inputs are larger than this gets no grown-size case: a grown case of a
# problem that already fills GBs (a 6.4 GB softmax input grown 2-3x) costs the reference and the
# candidate tens of GB of device memory and proves nothing the given size and the smaller,
# odd size do not.
LARGER_CASE_MAX_BYTES = 1 << 30


def input_bytes(problem: Any, case: dict[str, Any]) -> int | None:
    """The bytes of one case's tensor inputs, found on the meta device (no memory, no compute);
    None when the problem's get_inputs does not run there."""
    try:
        torch.manual_seed(case["seed"])
        with torch.device("meta"):
            values = _case_values(problem, case)
    except Exception:
        return None
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def _resize(value: int, larger: bool, rng: random.Random, count: int = 1) -> int:
    """About half (plus a private 1 to 16); or grown so that `count` such sizes grow 2 to 3 times,
    to a multiple of 256 where that is small beside the size (a tail mask that is empty when a
    block divides the size fails there; the smaller size's private residue catches missing masks)."""
    if not larger:  # about half, with a private residue (no size class is safe to skip)
        return max(1, min(value - 1, value // 2 + 1 + rng.randrange(16)))
    grown = max(value + 1, math.ceil(value * rng.uniform(2.1, 3.0) ** (1.0 / max(count, 1))))
    return -(-grown // 256) * 256 if grown >= 1024 else grown


def literal_sized_get_inputs(problem: Any, larger: bool, seed: int) -> Callable[[], Any] | None:
    """get_inputs with every int literal above 2 resized, or None when it has none to resize."""
    try:
        tree = parse(textwrap.dedent(inspect.getsource(problem.get_inputs)))
    except (OSError, TypeError, SyntaxError):
        return None
    rng = random.Random(seed)
    resized: dict[int, int] = {}  # one new value per old one, so that tied sizes stay tied

    class Resize(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            if type(node.value) is int and node.value > 2:
                new = resized.setdefault(node.value, _resize(node.value, larger, rng, 2))
                return ast.copy_location(ast.Constant(new), node)
            return node

    tree = Resize().visit(tree)
    if not resized:
        return None
    namespace = dict(vars(problem))
    exec(compile_tree(tree, getattr(problem, "__file__", "<problem>")), namespace)  # the problem's own code
    return namespace["get_inputs"]


def case_label(case: dict[str, Any]) -> str:
    """How a test case differs from a plain seeded one, in words ("" for a plain one)."""
    if "timing" in case:
        return "the timed inputs"
    if "scale" in case:
        return f"inputs scaled by {case['scale']:g}"
    if "shift" in case:
        return f"inputs shifted by {case['shift']:g}"
    if "overrides" in case:
        return "other sizes: " + ", ".join(
            f"{k}={tuple(v) if isinstance(v, list) else v}" for k, v in case["overrides"].items()
        )
    if "literal" in case:
        return f"other sizes: get_inputs' literal sizes {'grown' if case['literal'] == 'larger' else 'halved'}"
    if "extra" in case:
        return f"extra input set {case['extra']}"
    if "numbers" in case:
        return "the forward's float inputs drawn anew"
    if "params" in case:
        return "norm layers' weights and biases drawn from the case's seed"
    return ""
