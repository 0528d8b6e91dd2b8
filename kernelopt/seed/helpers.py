"""The Triton helpers compiler-written kernels call, written out so a seed file stands alone.

Inductor's kernels call `triton_helpers.NAME(...)`. A seed file must not import PyTorch's
compiler at run time, so each helper a kernel uses is written into the file as a
`@triton.jit` function `helper_NAME`, with the same meaning: NaN propagates through max/min,
ties in arg-max/arg-min go to the lowest index, and Welford statistics combine in pairs.
"""

from __future__ import annotations

from types import MappingProxyType

PREFIX = "helper_"

# name -> (source, the helpers it calls)
_HELPERS: MappingProxyType[str, tuple[str, tuple[str, ...]]] = MappingProxyType(
    {
        "promote_to_tensor": (
            """
@triton.jit
def helper_promote_to_tensor(x):
    # adding a one-element tensor turns a scalar into a tensor of its type
    return x + tl.zeros((1,), tl.int1)
""",
            (),
        ),
        "size_value": (
            """
@triton.jit
def helper_size_value(value: tl.constexpr):
    # a size the launch specialized on, as the value Triton gives a run-time integer argument
    tl.static_assert(value == value // 1, "a specialized size must be an integer")
    return tl.full([], value, tl.int32 if value < 2**31 else tl.int64)
""",
            (),
        ),
        "is_floating": (
            """
@triton.jit
def helper_is_floating(x):
    return helper_promote_to_tensor(x).dtype.is_floating()
""",
            ("promote_to_tensor",),
        ),
        "div_floor_integer": (
            """
@triton.jit
def helper_div_floor_integer(a, b):
    # Triton's // truncates toward zero; Python's and PyTorch's floor division rounds down
    quotient = a // b
    rounded_down = tl.where((a % b) != 0, quotient - 1, quotient)
    return tl.where((a < 0) != (b < 0), rounded_down, quotient)
""",
            (),
        ),
        "remainder_integer": (
            """
@triton.jit
def helper_remainder_integer(a, b):
    # the remainder takes the divisor's sign, as in Python
    rest = a % b
    return tl.where((rest != 0) & ((a < 0) != (b < 0)), rest + b, rest)
""",
            (),
        ),
        "maximum": (
            """
@triton.jit
def helper_maximum(a, b):
    pick_a = a > b
    if helper_is_floating(a):
        pick_a |= a != a  # a NaN wins
    return tl.where(pick_a, a, b)
""",
            ("is_floating",),
        ),
        "minimum": (
            """
@triton.jit
def helper_minimum(a, b):
    pick_a = a < b
    if helper_is_floating(a):
        pick_a |= a != a  # a NaN wins
    return tl.where(pick_a, a, b)
""",
            ("is_floating",),
        ),
        "max2": (
            """
@triton.jit
def helper_max2(a, dim):
    return tl.reduce(a, dim, helper_maximum)
""",
            ("maximum",),
        ),
        "min2": (
            """
@triton.jit
def helper_min2(a, dim):
    return tl.reduce(a, dim, helper_minimum)
""",
            ("minimum",),
        ),
        "maximum_with_index": (
            """
@triton.jit
def helper_maximum_with_index(a_value, a_index, b_value, b_index):
    pick_a = a_value > b_value
    same = a_value == b_value
    if helper_is_floating(a_value):
        a_nan = a_value != a_value
        b_nan = b_value != b_value
        pick_a |= a_nan & (not b_nan)
        same |= a_nan & b_nan
    pick_a |= same & (a_index < b_index)  # ties go to the first index
    return tl.where(pick_a, a_value, b_value), tl.where(pick_a, a_index, b_index)
""",
            ("is_floating",),
        ),
        "minimum_with_index": (
            """
@triton.jit
def helper_minimum_with_index(a_value, a_index, b_value, b_index):
    pick_a = a_value < b_value
    same = a_value == b_value
    if helper_is_floating(a_value):
        a_nan = a_value != a_value
        b_nan = b_value != b_value
        pick_a |= a_nan & (not b_nan)
        same |= a_nan & b_nan
    pick_a |= same & (a_index < b_index)  # ties go to the first index
    return tl.where(pick_a, a_value, b_value), tl.where(pick_a, a_index, b_index)
""",
            ("is_floating",),
        ),
        "max_with_index": (
            """
@triton.jit
def helper_max_with_index(value, index, dim):
    return tl.reduce((value, index), dim, helper_maximum_with_index)
""",
            ("maximum_with_index",),
        ),
        "min_with_index": (
            """
@triton.jit
def helper_min_with_index(value, index, dim):
    return tl.reduce((value, index), dim, helper_minimum_with_index)
""",
            ("minimum_with_index",),
        ),
        "welford_reduce": (
            """
@triton.jit
def helper_welford_reduce(value, mean, m2, weight, first_iteration):
    # one more element into running (mean, sum of squared deviations, count) per lane
    if first_iteration:
        new_weight = tl.full(weight.shape, 1, weight.dtype)
        new_mean = value
        new_m2 = tl.zeros_like(m2)
    else:
        delta = value - mean
        new_weight = weight + 1
        new_mean = mean + delta / new_weight
        new_m2 = m2 + delta * (value - new_mean)
    return new_mean, new_m2, new_weight
""",
            (),
        ),
        "welford_combine": (
            """
@triton.jit
def helper_welford_combine(mean_1, m2_1, weight_1, mean_2, m2_2, weight_2):
    # two partial statistics into one (Chan et al.'s pairwise update)
    delta = mean_2 - mean_1
    new_weight = weight_1 + weight_2
    share_2 = tl.where(new_weight == 0.0, 0.0, weight_2 / new_weight)
    return mean_1 + delta * share_2, m2_1 + m2_2 + delta * delta * weight_1 * share_2, new_weight
""",
            (),
        ),
        "welford": (
            """
@triton.jit
def helper_welford(mean, m2, weight, dim):
    return tl.reduce((mean, m2, weight), dim, helper_welford_combine)
""",
            ("welford_combine",),
        ),
        "any": (
            """
@triton.jit
def helper_any_combine(a, b):
    return a | b


@triton.jit
def helper_any(a, dim):
    return tl.reduce(a, dim, helper_any_combine)
""",
            (),
        ),
        "prod": (
            """
@triton.jit
def helper_prod_combine(a, b):
    return a * b


@triton.jit
def helper_prod(a, dim):
    return tl.reduce(a, dim, helper_prod_combine)
""",
            (),
        ),
        "select_one": (
            """
@triton.jit
def helper_select_one(x, mask, dim, keep_dims=False):
    # the one element per row where mask holds, moved as raw bits so any dtype comes through unchanged
    bits = tl.core.get_int_dtype(x.dtype.primitive_bitwidth, signed=False)
    picked = tl.sum(x.to(bits, bitcast=True) * mask, dim, keep_dims=keep_dims)
    return picked.to(x.dtype, bitcast=True)
""",
            (),
        ),
        "exp": (
            """
@triton.jit
def helper_exp(x, use_fast_math: tl.constexpr):
    # tl.math.exp either way, as the seed's kernels write the compiler's libdevice.exp: the file also
    # runs under the interpreter, where libdevice.exp gives nothing
    return tl_math.exp(x)
""",
            (),
        ),
        "sqrt_rn": (
            """
@triton.jit
def helper_sqrt_rn(x):
    # libdevice.sqrt: the round-to-nearest root in the argument's own precision (tl.math.sqrt_rn takes fp32
    # only; an fp64 root, as of a lifted Python float, is rounded to nearest by tl.sqrt)
    if x.dtype == tl.float64:
        return tl.sqrt(x)
    else:
        return tl.math.sqrt_rn(x)
""",
            (),
        ),
        "online_softmax_reduce": (
            """
@triton.jit
def helper_online_softmax_reduce(lhs_max, lhs_sum, dim, use_fast_math: tl.constexpr):
    # the row's max, and each lane's running sum rescaled to it and added up
    out_max = helper_max2(lhs_max, dim)
    out_max_kept = tl.expand_dims(out_max, dim)
    delta = tl.where(out_max_kept == float("-inf"), 0, lhs_max - out_max_kept)
    return out_max, tl.sum(lhs_sum * helper_exp(delta, use_fast_math), dim)
""",
            ("max2", "exp"),
        ),
        "online_softmax_combine": (
            """
@triton.jit
def helper_online_softmax_combine(lhs_max, lhs_sum, rhs_max, use_fast_math: tl.constexpr):
    # the running (max, sum of exp) after one more block whose own sum is 1 per lane
    out_max = helper_maximum(lhs_max, rhs_max)
    lhs_scale = tl.where(out_max == float("-inf"), 1.0, helper_exp(lhs_max - out_max, use_fast_math))
    rhs_scale = tl.where(out_max == float("-inf"), 1.0, helper_exp(rhs_max - out_max, use_fast_math))
    return out_max, lhs_sum * lhs_scale + rhs_scale
""",
            ("maximum", "exp"),
        ),
        "online_softmax_combine_with_sum": (
            """
@triton.jit
def helper_online_softmax_combine_with_sum(lhs_max, lhs_sum, rhs_max, rhs_sum, use_fast_math: tl.constexpr):
    # two running (max, sum of exp) pairs merged: a split row's pieces, each with its own sum
    out_max = helper_maximum(lhs_max, rhs_max)
    lhs_scale = tl.where(out_max == float("-inf"), 1.0, helper_exp(lhs_max - out_max, use_fast_math))
    rhs_scale = tl.where(out_max == float("-inf"), 1.0, helper_exp(rhs_max - out_max, use_fast_math))
    return out_max, lhs_sum * lhs_scale + rhs_sum * rhs_scale
""",
            ("maximum", "exp"),
        ),
    }
)

# Helpers that need no written-out body: calls that mean nothing in a standalone file.
NOT_NEEDED: frozenset[str] = frozenset({"set_driver_to_gpu", "set_driver_to_cpu"})


def known(name: str) -> bool:
    return name in _HELPERS


def sources_for(names: set[str]) -> str:
    """The source of every named helper and of the helpers they call, each once, callees first."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name in ordered:
            return
        for callee in _HELPERS[name][1]:
            visit(callee)
        ordered.append(name)

    for name in sorted(names):
        visit(name)
    return "\n".join(_HELPERS[name][0].strip("\n") + "\n\n" for name in ordered)
