"""The kernel's knobs: tunable integers read from its source, and the source rewritten with new values.

Knobs are read from the source, never guessed: upper-case integer constants assigned in the
module or in ModelNew's methods (`BLOCK_SIZE = 128`), integer keyword arguments of a Triton
launch (`BLOCK_K=32`, `num_warps=4`, `num_stages=2`), and the values of a `@triton.autotune`
that holds a single `triton.Config` (a frozen winner). A knob may sit in several places; a
configuration sets every place of each name at once. A kernel with several autotune configs
is swept over them, each frozen into a source of its own.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from kernelopt.syntax import parse

SIZE_MIN, SIZE_MAX = 16, 16384
WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)
# The compiler seed's knobs (the names torch.compile's kernels use) and the range each block size
# sweeps: a reduction's rows per program (XBLOCK) start at 1. A persistent reduction's row block
# is no knob: the seed derives it from the row length, so the sweep never shrinks it below a row.
COMPILER_BLOCKS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {name: (1, 4096) for name in ("XBLOCK", "YBLOCK", "ZBLOCK")}
    | {name: (2, 4096) for name in ("RBLOCK", "R0_BLOCK", "R1_BLOCK")}
    | {name: (16, 256) for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    | {name: (16, 256) for name in ("CONV_BLOCK_M", "CONV_BLOCK_N", "CONV_BLOCK_K")}  # seed/conv.py's tile
    | {"CONV_DIRECT_RUN": (1, 8)}  # the direct convolution's outputs a thread along W (seed/direct.py)
)
GROUP_KNOBS: Mapping[str, tuple[int, int]] = MappingProxyType({"GROUP_M": (1, 32), "GROUP_SIZE_M": (1, 32)})
# A structural move's piece of a row or plane: beside a BLOCK it is the span a program walks in BLOCK
# steps (split_row, batch_norm.split), never a tile side; alone it is the values a program holds
# (one_read, whose looped fallback steps by CHUNK too). Below its range a CHUNK is a block size.
SPAN_KNOBS: Mapping[str, tuple[int, int]] = MappingProxyType({"CHUNK": (1024, 1 << 20)})
# A persistent kernel's program count (matmul.persistent, matmul.tma, looped_resident): a multiple of the SM
# count, never a side of a program's tile, so no per-program estimate counts it.
PROGRAM_KNOBS = frozenset({"PROGRAMS"})
# A structural choice a move's grid makes, 0 or 1 (rows_in_registers's VECTORS: 16-byte accesses or 4-byte ones;
# standardize.one_read's LAST_MERGES: who merges a row's statistics), or a bound choosing a kernel (the seed
# convolution's CONV_DIRECT_OUTPUTS): no size, so the launch sweep leaves it.
SWITCH_KNOBS = frozenset({"VECTORS", "LAST_MERGES", "CONV_CHANNELS_LAST", "CONV_DIRECT_OUTPUTS"})

# The offline judger's fixes, in words that `direction_of` reads back (an LLM's fix is read the same way).
FIX_GROW = "enlarge the block sizes: more elements per program and per thread, num_warps to match"
FIX_SHRINK = "shrink the block sizes: more, smaller programs"
FIX_MORE_STAGES = "raise num_stages to prefetch the next tiles while this one computes"
FIX_FEWER_STAGES = "lower num_stages to free shared memory for more resident programs"
FIX_SWEEP = "sweep block sizes, num_warps and num_stages around the current launch"


@dataclass(frozen=True)
class LaunchParam:
    """One tunable integer in the source, and where its literal sits."""

    name: str
    value: int
    line: int  # 1-based
    col: int  # 0-based start of the literal
    end_col: int
    # the launch (or frozen triton.Config) that sets it, as its call's (line, col); a constant is a site of its own
    site: tuple[int, int] = field(default=(0, 0), compare=False)


def kind_of(name: str) -> str:
    """"warps", "stages", "group" (programs grouped along M for L2 reuse), "programs" (a persistent kernel's
    program count), "switch" (a structural choice, never swept) or "size": how a knob's values step."""
    if name in SWITCH_KNOBS:
        return "switch"
    if name in GROUP_KNOBS:
        return "group"
    if name in PROGRAM_KNOBS:
        return "programs"
    if name.endswith("_WARPS"):  # a launch's warps set by a constant of its own (one kernel of several in a file)
        return "warps"
    return {"num_warps": "warps", "num_stages": "stages"}.get(name, "size")


def size_range(name: str) -> tuple[int, int]:
    """The smallest and largest value a block-size knob (or a group count) is swept over."""
    return COMPILER_BLOCKS.get(name) or GROUP_KNOBS.get(name) or SPAN_KNOBS.get(name) or (SIZE_MIN, SIZE_MAX)


def _is_launch(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Subscript)  # kernel[grid](...)


def _int_literal(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _param(name: str, node: ast.expr, site: ast.AST | None = None) -> LaunchParam | None:
    value = _int_literal(node)
    if value is None or node.end_col_offset is None:
        return None
    at = site or node
    return LaunchParam(name, value, node.lineno, node.col_offset, node.end_col_offset,
                       (getattr(at, "lineno", 0), getattr(at, "col_offset", 0)))


def autotune_configs(tree: ast.AST) -> list[ast.Call]:
    """The `triton.Config(...)` calls listed in the file's @triton.autotune decorators."""
    found: list[ast.Call] = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        for deco in (d for d in fn.decorator_list if isinstance(d, ast.Call)):
            if not (isinstance(deco.func, ast.Attribute) and deco.func.attr == "autotune"):
                continue
            configs = next((k.value for k in deco.keywords if k.arg == "configs"), deco.args[0] if deco.args else None)
            if isinstance(configs, ast.List):
                found += [c for c in configs.elts if isinstance(c, ast.Call)]
    return found


def _config_params(config: ast.Call) -> list[LaunchParam]:
    params: list[LaunchParam] = []
    if config.args and isinstance(config.args[0], ast.Dict):
        for key, value in zip(config.args[0].keys, config.args[0].values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and (p := _param(key.value, value, config)):
                params.append(p)
    params += [p for k in config.keywords
               if k.arg in ("num_warps", "num_stages") and (p := _param(k.arg, k.value, config))]
    return params


def _literal_locals(fn: ast.FunctionDef) -> dict[str, ast.Constant]:
    """The function's local names bound once, to an int literal (`block = 1024`, `block_m, block_n = 64, 64`),
    and never rebound nor a parameter: a launch's `BLOCK=block` is then that literal, and the grid that
    divides by `block` follows it when the sweep sets it."""
    stores: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            stores[node.id] = stores.get(node.id, 0) + 1
    params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    literals: dict[str, ast.Constant] = {}
    for node in (n for n in ast.walk(fn) if isinstance(n, ast.Assign) and len(n.targets) == 1):
        target, value = node.targets[0], node.value
        pairs = [(target, value)]
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts, strict=True))
        for name, literal in pairs:
            if isinstance(name, ast.Name) and isinstance(literal, ast.Constant) and _int_literal(literal) is not None:
                if stores.get(name.id) == 1 and name.id not in params:
                    literals[name.id] = literal
    return literals


def _one_name_per_literal(params: list[LaunchParam]) -> list[LaunchParam]:
    """One knob per literal: a local passed under two names (BLOCK_M=block, BLOCK_N=block) is the first."""
    seen: dict[tuple[int, int], str] = {}
    kept = []
    for p in params:  # in the order found: a launch's keywords in source order
        if seen.setdefault((p.line, p.col), p.name) == p.name:
            kept.append(p)
    return kept


def find_launch_params(source: str) -> list[LaunchParam]:
    """Every tunable integer literal in `source`, in source order."""
    return list(_knobs(source)[0])


# A sweep sets each of its configurations in one source, and the moves read a template's knobs again and again: the
# knobs of a source are read once, from one parse (the frozen params and the read-only lead values are shared).
@functools.lru_cache(maxsize=256)
def _knobs(source: str) -> tuple[tuple[LaunchParam, ...], MappingProxyType[str, int]]:
    """The source's knobs (find_launch_params's) and each one's value at its lead place (`_centres`)."""
    tree = parse(source)
    params = _launch_params(tree)
    return params, MappingProxyType(_centres(params, _named_knobs(tree, params)))


def _launch_params(tree: ast.Module) -> tuple[LaunchParam, ...]:
    params: list[LaunchParam] = []
    scopes: list[ast.AST] = [tree]
    scopes += [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "ModelNew"]
    for scope in scopes:
        body = (
            scope.body
            if isinstance(scope, ast.Module)
            else [s for f in scope.body if isinstance(f, ast.FunctionDef) for s in ast.walk(f)]
        )
        for node in body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if name.isupper() and (p := _param(name, node.value)):
                    params.append(p)
    literals: dict[ast.Call, dict[str, ast.Constant]] = {}  # each launch's function's (the innermost: walked last)
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        bound = _literal_locals(fn)
        literals.update((n, bound) for n in ast.walk(fn) if isinstance(n, ast.Call))
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_launch(n)):
        for keyword in call.keywords:
            if keyword.arg and (keyword.arg.isupper() or keyword.arg in ("num_warps", "num_stages")):
                value = keyword.value
                if isinstance(value, ast.Name) and value.id in literals.get(call, {}):  # BLOCK=block, `block = 1024`
                    value = literals[call][value.id]
                if p := _param(keyword.arg, value, call):
                    params.append(p)
    params = _one_name_per_literal(params)
    configs = autotune_configs(tree)
    if len(configs) == 1:  # a frozen winner: its values are the knobs
        params += _config_params(configs[0])
    return tuple(sorted(set(params), key=lambda p: (p.line, p.col)))


def knob_values(source: str) -> dict[str, int]:
    """Each knob's name and value at its lead place (`_centres`), in the order of first places."""
    try:
        return dict(_knobs(source)[1])
    except SyntaxError:
        return {}


def _named_knobs(tree: ast.Module, params: Sequence[LaunchParam]) -> dict[tuple[int, int], int]:
    """Per launch, how many module-level knob constants it passes by name (`BLOCK_M=CONV_BLOCK_M`): knobs it is
    launched with though it sets no literal of them."""
    constants = {p.name for p in params if p.site == (p.line, p.col)}
    counts: dict[tuple[int, int], int] = {}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _is_launch(n)):
        named = sum(isinstance(k.value, ast.Name) and k.value.id in constants for k in call.keywords)
        if named:
            counts[(call.lineno, call.col_offset)] = named
    return counts


def _centres(params: Sequence[LaunchParam], named: Mapping[tuple[int, int], int] | None = None) -> dict[str, int]:
    """Each knob's value at its lead place: at the launch that sets the most knobs where several set it (a
    compiler seed's GEMM template beside its pointwise kernels at num_stages=1; a launch over several lines is
    one; `named`: the knob constants each launch passes by name count as its own, so a template launched with
    `BLOCK_M=CONV_BLOCK_M` leads the pointwise kernel's XBLOCK=1024), so a configuration is read and written as
    the heavy launch's own; else its first place."""
    per_site: dict[tuple[int, int], int] = dict(named or {})
    for param in params:
        per_site[param.site] = per_site.get(param.site, 0) + 1
    lead: dict[str, LaunchParam] = {}
    for param in params:
        held = lead.get(param.name)
        if held is None or per_site[param.site] > per_site[held.site]:
            lead[param.name] = param
    return {name: param.value for name, param in lead.items()}


def replace_spans(source: str, edits: list[tuple[int, int, int, str]]) -> str:
    """`source` with (line, col, end_col, text) spans replaced, last first so offsets hold. The columns are
    `ast`'s: UTF-8 bytes, so a line with a non-ASCII character before a span is cut where `ast` meant."""
    lines = source.splitlines(keepends=True)
    for line, col, end_col, text in sorted(edits, reverse=True):
        raw = lines[line - 1].encode()
        lines[line - 1] = (raw[:col] + text.encode() + raw[end_col:]).decode()
    return "".join(lines)


def with_config(source: str, config: Mapping[str, int]) -> str:
    """`source` with each named knob set to the configuration's value. A knob is one name: where
    launches set it to values of their own (a compiler seed's reduction at XBLOCK=64 beside its
    pointwise kernel at 1024), its lead place (`_centres`) takes the value and the others move by the
    same factor, so each launch keeps its own pick relative to the lead and no sweep detunes the rest."""
    params, centre = _knobs(source)
    edits = [(p.line, p.col, p.end_col, str(_moved_with(p, config[p.name], centre[p.name])))
             for p in params if p.name in config]
    return replace_spans(source, edits)


def _moved_with(param: LaunchParam, value: int, first: int) -> int:
    """The value of one place of a knob when its lead place goes from `first` to `value`."""
    if param.value == first or first <= 0:
        return value
    moved = param.value * value / first
    if param.name == "num_stages":
        return int(min(8, max(1, round(moved))))
    warps = kind_of(param.name) == "warps"
    if warps or _power_of_two(param.value):
        exponent = round(math.log2(max(moved, 1)))
        return 1 << int(min(5 if warps else 16, max(0, exponent)))
    return max(1, round(moved))


def _power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def autotune_variants(source: str) -> list[tuple[dict[str, int], str]]:
    """For a kernel with several autotune configs: each config's values, and the source with
    that config alone (autotune runs a single config without benchmarking: the winner is frozen)."""
    tree = parse(source)
    configs = autotune_configs(tree)
    if len(configs) < 2:
        return []
    first, last = configs[0], configs[-1]
    assert last.end_lineno is not None and last.end_col_offset is not None
    out = []
    for config in configs:
        text = ast.get_source_segment(source, config)
        if text is None:
            continue
        lines = source.splitlines(keepends=True)
        head = "".join(lines[: first.lineno - 1]) + lines[first.lineno - 1][: first.col_offset]
        tail = lines[last.end_lineno - 1][last.end_col_offset :] + "".join(lines[last.end_lineno :])
        frozen = head + text + tail
        out.append(({p.name: p.value for p in _config_params(config)}, frozen))
    return out


@dataclass(frozen=True)
class Direction:
    """Which way a fix moves each kind of knob: +1 up, -1 down, 0 either way."""

    size: int = 0
    warps: int = 0
    stages: int = 0

    def of(self, name: str) -> int:
        return int(getattr(self, kind_of(name), 0))  # a group count has no direction of its own


def direction_of(fix: str) -> Direction:
    """The direction a fix in words asks for (the rules' own phrases, or an LLM's)."""
    text = fix.lower()

    def says(*words: str) -> bool:
        return any(w in text for w in words)

    size = 1 if says("enlarge", "larger block", "larger tile", "increase the block", "increase block", "bigger") else 0
    size = -1 if says("shrink", "smaller block", "smaller tile", "decrease the block", "decrease block") else size
    warps = 1 if says("raise num_warps", "more warps", "increase num_warps", "num_warps to match") else 0
    warps = -1 if says("fewer warps", "lower num_warps", "decrease num_warps") else warps
    stages = 1 if says("raise num_stages", "more stages", "increase num_stages", "more pipeline stages") else 0
    stages = -1 if says("lower num_stages", "fewer stages", "decrease num_stages") else stages
    return Direction(size, warps, stages)
