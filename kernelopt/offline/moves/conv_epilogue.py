"""`fuse.conv_epilogue`: a compiler seed's elementwise epilogue computed where its convolution stores.

A seed (seed/conv.py) runs each convolution on `conv_triton` into a buffer, and Inductor's pointwise kernel then reads
it whole, adds the bias, applies the activations and writes the output: three passes over the convolution's output
where one is enough (torch.compile does the same: cuDNN's output, then a Triton kernel).

The rewrite takes the first `conv_triton(..., BUF, ...)` of ModelNew.forward whose buffer (or a name the compiler
gave it again, `buf3 = buf2`) is read next by one launch of a `triton_poi_*` kernel. That kernel's body becomes a
`@triton.jit` function, `conv_epilogue`, called by `conv_igemm_kernel` in place of its store: the tile's values stand
for its load of BUF (its loads, where they read one element at spellings of its offset forward checks agree:
conv_loads.py), `xmask` is the tile's mask, and `xindex` each value's offset in BUF as the kernel numbers it: where it
loads BUF at xindex itself (the compiler's in-place kernels walk their buffer as it lies) the helper's own offsets;
otherwise BUF's laid out contiguously (`epi_dense`). The kernel's other pointers and run-time integers come in as a
tuple (`epi`), its specialized sizes as a constexpr tuple (`EPIC`), so the body compiles as Inductor wrote it. An
in-place kernel's store writes BUF, which later kernels may read; otherwise BUF is never written, and nothing may
read it after. With an epilogue the helper always takes the implicit GEMM (the direct and depthwise kernels store
otherwise). Forward keeps the unfused pair for a launch whose element count is not BUF's, and the verifier judges the
rest: a kernel that numbered BUF's values otherwise would compute other outputs and be refused. The edits leave the
anchors of the split rewrites (conv_split.py) in place, so either may come first. `fuse` and its helpers serve
conv_reduce.py's reader too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from kernelopt.offline.moves import conv_loads
from kernelopt.syntax import parse, parse_expression

NAME = "fuse.conv_epilogue"
_FUNCTION = "conv_epilogue"
FUNCTIONS = {_FUNCTION, "conv_rows_epilogue"}  # the fused functions of either reader
_KERNEL_END = "    PHASED: tl.constexpr,\n):\n"
_STORE = "    tl.store(out_ptr + o_off, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])\n"
_HOST_DEF = "def conv_triton(x, weight, bias, out, stride, padding, dilation, transposed, output_padding, groups):\n"
_DEPTHWISE = "    if not transposed and cg == 1 and ocg < "
_DIRECT = "    few = cg <= "
_LAUNCH = "    conv_igemm_kernel[grid](\n"
_BLOCK_N = "    block_n = min(CONV_BLOCK_N, max(16, triton.next_power_of_2(ocg)))\n"
_LAUNCH_KNOBS = "PHASED=phases > 1,"
# the pointwise kernel's own lines the fused function drops: its programs' indices and mask are the tile's
_DROPPED = re.compile(r"^\s*(xoffset|xindex|xmask)\s*=")


class NotFused(Exception):
    """Why a kernel file's epilogue cannot be fused into its convolution, for the report."""


def rewrite(source: str) -> str:
    """The kernel file with its first fusable convolution's epilogue computed in `conv_igemm_kernel`'s store;
    raises NotFused with why not."""
    return fuse(source, POINTWISE)


@dataclass(frozen=True)
class Fused:
    """What a reader makes of the kernel that reads the convolution's output: the fused function's text, the
    launch's arguments it takes at run time and specialized (as text), the run-time condition under which the fusion
    holds (text), the keywords the fused call adds, and the helper's store in its place."""

    function: str
    runtime: list[str]
    specialized: list[str]
    condition: str
    keywords: str
    store: str


@dataclass(frozen=True)
class Reader:
    """A kind of kernel fused into the convolution's store: the move's name, its kernels' name prefix and what they
    are (for the report), and how its kernel is made the fused function (`build(kernel, lines, launch, alias,
    read_later, inputs, conv)`)."""

    name: str
    prefix: str
    what: str
    build: Callable[..., Fused]


def fuse(source: str, reader: Reader) -> str:
    """The kernel file with the first convolution whose output `reader`'s kind of kernel reads next computing that
    kernel in its store; raises NotFused with why not."""
    try:
        tree = parse(source)
    except SyntaxError as err:
        raise NotFused(f"the best kernel does not parse ({err.msg})") from err
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if not {"conv_igemm_kernel", "conv_triton"} <= functions.keys():
        raise NotFused("the best kernel has no convolution helper of the seed's (conv_triton, conv_igemm_kernel)")
    if functions.keys() & FUNCTIONS:
        raise NotFused("the best kernel's convolution already computes an epilogue")
    conv, launch, kernel_name, alias, read_later, inputs = _pair(_forward(tree), functions, reader)
    lines = source.splitlines(keepends=True)
    fused = reader.build(functions[kernel_name], lines, launch, alias, read_later, inputs, conv)
    call = ast.get_source_segment(source, conv.value)
    moved = parse_expression(call)
    assert isinstance(moved, ast.Call)
    moved.args[3] = ast.Name(alias)  # the buffer by the name the launch reads it (an alias of it, say)
    fused_call = (ast.unparse(moved)[:-1] + f", epi=({''.join(a + ', ' for a in fused.runtime)}), "
                  f"epic=({''.join(a + ', ' for a in fused.specialized)}), {fused.keywords})")
    pad = " " * launch.col_offset
    replacement = (f"{pad}if {fused.condition}:  # the {reader.what} kernel computed where the convolution "
                   f"stores ({reader.name})\n{pad}    {fused_call}\n{pad}else:\n{pad}    {ast.unparse(moved)}\n"
                   + "".join(f"    {line}" if line.strip() else line
                             for line in lines[launch.lineno - 1:launch.end_lineno]))
    # the launch's place first (it comes later in the file), then the convolution's own line goes
    lines[launch.lineno - 1:launch.end_lineno] = [replacement]
    lines[conv.lineno - 1:conv.end_lineno] = []
    text = _edit_helper("".join(lines), fused.store)
    model = text.index("\nclass ModelNew")
    return text[:model] + "\n\n" + fused.function + text[model:]


def _forward(tree: ast.Module) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return item
    raise NotFused("the best kernel has no ModelNew.forward")


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


_MODULES = {"self", "torch", "triton", "math"}
_META = {"shape", "dtype", "device"}  # what a statement may read of a tensor without reading its values
_META_CALLS = {"size", "stride", "numel", "dim"}


def _data_names(stmt: ast.stmt) -> set[str]:
    """The names a statement uses for their values (or frees), not only for their sizes, dtype or device."""
    parents = {id(child): node for node in ast.walk(stmt) for child in ast.iter_child_nodes(node)}
    found = set()
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Name):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and (parent.attr in _META or (
                parent.attr in _META_CALLS and isinstance(parents.get(id(parent)), ast.Call))):
            continue
        found.add(node.id)
    return found


def _pair(forward: ast.FunctionDef, functions: dict[str, ast.FunctionDef],
          reader: Reader) -> tuple[ast.Expr, ast.Expr, str, str, bool, set[str]]:
    """The first convolution whose buffer a launch of the reader's kind of kernel reads next, that launch, its
    kernel, the name it reads the buffer by (the compiler's `buf3 = buf2` reuses a buffer under a new name), whether
    anything reads the buffer after it, and the names the convolution reads (its inputs)."""
    body = forward.body
    reasons = []
    for i, stmt in enumerate(body):
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "conv_triton"):
            continue
        args = stmt.value.args
        if len(args) != 10 or stmt.value.keywords or not isinstance(args[3], ast.Name):
            reasons.append("a convolution's output is not a named buffer")
            continue
        aliases = {args[3].id}
        inputs = set().union(*(_names(a) for k, a in enumerate(args) if k != 3)) - _MODULES
        for j in range(i + 1, len(body)):
            later = body[j]
            if inputs & _data_names(later):  # it reads, frees or reuses what the moved convolution would read
                reasons.append(f"a statement between the convolution into {args[3].id} and its reader uses the "
                               "convolution's inputs")
                break
            if isinstance(later, ast.Delete) or not aliases & _names(later):
                if isinstance(later, ast.Expr):  # a launch between: it might write what the convolution reads
                    reasons.append(f"a launch comes between the convolution into {args[3].id} and its reader")
                    break
                continue
            if (isinstance(later, ast.Assign) and len(later.targets) == 1 and isinstance(later.targets[0], ast.Name)
                    and isinstance(later.value, ast.Name)):  # `buf3 = buf2`: the same buffer
                aliases.add(later.targets[0].id)
                continue
            found = _launch(later, aliases, functions, reader.prefix)
            if found is None:
                reasons.append(f"{args[3].id} is read next by other than one launch of an Inductor {reader.what} "
                               "kernel")
                break
            kernel, alias = found
            read_later = any(aliases & _names(s) for s in body[j + 1:] if not isinstance(s, ast.Delete))
            return stmt, later, kernel, alias, read_later, inputs
    if not reasons:
        raise NotFused("ModelNew.forward calls no convolution of the seed's (conv_triton) into a buffer")
    raise NotFused(reasons[0])


def _launch(stmt: ast.stmt, aliases: set[str], functions: dict[str, ast.FunctionDef],
            prefix: str) -> tuple[str, str] | None:
    """The kernel named `prefix...` a statement launches and the one alias of the buffer it passes (None: not such)."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Subscript) and isinstance(stmt.value.func.value, ast.Name)):
        return None
    name = stmt.value.func.value.id
    uses = [a.id for a in stmt.value.args if isinstance(a, ast.Name) and a.id in aliases]
    if not name.startswith(prefix) or name not in functions or len(uses) != 1:
        return None
    if any(aliases & _names(k.value) for k in stmt.value.keywords):
        return None
    return name, uses[0]


@dataclass(frozen=True)
class Bound:
    """A reading kernel's launch bound to its parameters: the positional ones, those it specializes, each one's
    argument (as text) and the parameter that loads the convolution's output."""

    positional: list[ast.arg]
    constexpr: set[str]
    source_of: dict[str, str]
    loaded: str


def bind(kernel: ast.FunctionDef, launch: ast.Expr, alias: str, read_later: bool, inputs: set[str],
         what: str) -> Bound:
    """The launch of `kernel` bound to its parameters; NotFused where it writes the convolution's inputs, or where
    the buffer is read after a kernel that does not write it back."""
    call = launch.value
    assert isinstance(call, ast.Call)
    params = kernel.args.args
    by_keyword = {k.arg for k in call.keywords}
    positional = [p for p in params if p.arg not in by_keyword]
    if len(positional) != len(call.args) or kernel.args.vararg or kernel.args.kwonlyargs:
        raise NotFused(f"{kernel.name}'s launch does not pass its parameters one by one")
    constexpr = {p.arg for p in params if p.annotation is not None and "constexpr" in ast.unparse(p.annotation)}
    if "xnumel" not in {p.arg for p in positional}:
        raise NotFused(f"{kernel.name} takes no element count (xnumel)")
    bound = list(zip(positional, call.args, strict=True))
    loaded = next(p.arg for p, a in bound if isinstance(a, ast.Name) and a.id == alias)
    if any(p.arg.startswith(("out_ptr", "in_out_ptr")) and p.arg != loaded and _names(a) & inputs for p, a in bound):
        raise NotFused(f"{kernel.name} writes into the convolution's inputs' memory (a buffer reused)")
    if read_later and not loaded.startswith("in_out_ptr"):  # an in-place kernel writes its result back into it
        raise NotFused(f"{alias} is read again after its {what} kernel")
    return Bound(positional, constexpr, {p.arg: ast.unparse(a) for p, a in bound}, loaded)


def body_text(kernel: ast.FunctionDef, lines: list[str], body: Body, dropped: Callable[[str], str | None],
              loads: int = 1) -> str:
    """The kernel's body with its loads of the buffer (`loads` at most) made the tile's value (`body`), and each line
    `dropped` answers for made that (None: kept as it is, "": left out)."""
    kept = []
    for line in lines[kernel.body[0].lineno - 1:kernel.end_lineno]:
        instead = dropped(line)
        if instead is not None:
            kept.append(instead)
            continue
        if not line.strip() or line.strip().startswith("#"):
            kept.append(line)
            continue
        try:
            (stmt,) = parse(line.strip()).body
        except (SyntaxError, ValueError) as err:
            raise NotFused(f"{kernel.name}'s body is not a statement a line") from err
        changed = body.visit(stmt)
        kept.append(line if not body.changed else line[:len(line) - len(line.lstrip())] + ast.unparse(changed) + "\n")
        body.changed = False
    if not 1 <= len(body.indices) <= loads or body.others:
        raise NotFused(f"{kernel.name} reads the convolution's output other than by one load")
    return "".join(kept)


def arguments(bound: Bound, blocks: tuple[str, ...]) -> tuple[list[str], list[str], str]:
    """The kernel's parameters it takes at run time and specialized (but its block sizes, the tile's), and the
    fused function's lines that unpack them from `epi` and `EPIC`."""
    runtime = [p.arg for p in bound.positional if p.arg not in bound.constexpr and p.arg not in blocks]
    specialized = [p.arg for p in bound.positional if p.arg in bound.constexpr and p.arg not in blocks]
    unpack = "".join(f"    {name} = epi[{k}]\n" for k, name in enumerate(runtime))
    unpack += "".join(f"    {name}: tl.constexpr = EPIC[{k}]\n" for k, name in enumerate(specialized))
    return runtime, specialized, unpack


def _pointwise(kernel: ast.FunctionDef, lines: list[str], launch: ast.Expr, alias: str, read_later: bool,
               inputs: set[str], conv: ast.Expr) -> Fused:
    """The pointwise kernel's body as `conv_epilogue(xindex, conv_value, xmask, epi, EPIC)`: xindex the tile's
    values' offsets in the buffer, laid out contiguously (`epi_dense`) or, for a kernel that loads the buffer at
    xindex itself (the compiler's in-place kernels walk their buffer), as the buffer lies."""
    if any(p.arg in ("ynumel", "YBLOCK") or p.arg.startswith(("r0_", "R0_")) for p in kernel.args.args):
        raise NotFused(f"{kernel.name} is not a one-dimensional pointwise kernel")
    bound = bind(kernel, launch, alias, read_later, inputs, "pointwise")
    body = Body(bound.loaded, lambda _: "xmask")
    text = body_text(kernel, lines, body, lambda line: "" if _DROPPED.match(line) else None, loads=4)
    try:  # several loads: one element at spellings of its offset the launch's sizes make one (conv_loads.py)
        check, agree = conv_loads.check(kernel, body.indices, [p.arg for p in bound.positional], bound.source_of)
    except conv_loads.Unchecked as why:
        raise NotFused(f"{kernel.name} reads the convolution's output other than by one load ({why})") from why
    index = body.indices[0]
    own = isinstance(index, ast.Name) and (
        index.id == "xindex" or re.search(rf"^\s*{index.id} = xindex\s*$", text, re.M) is not None)
    if re.search(r"\b(xoffset|XBLOCK|tl\.program_id|tl\.num_programs)\b", text):
        raise NotFused(f"{kernel.name}'s body uses its own programs' layout (XBLOCK, program ids)")
    if re.search(r"\btl\.(sum|max|min|reduce|associative_scan|cumsum|atomic_\w+)\(", text):
        raise NotFused(f"{kernel.name} reduces or scans: only an elementwise epilogue is fused")
    runtime, specialized, unpack = arguments(bound, ("XBLOCK",))
    head = (f"@triton.jit\ndef {_FUNCTION}(xindex, {VALUE}, xmask, epi, EPIC: tl.constexpr):\n"
            f"    # {kernel.name}'s body ({NAME}): the tile's values stand for its load of the\n"
            "    # convolution's output, xindex for their offsets in it (laid out contiguously, or as it lies)\n")
    store = (f"        {_FUNCTION}(o_off, acc.to(out_ptr.dtype.element_ty), m_ok[:, None] & n_ok[None, :], epi, "
             "EPIC)\n")
    return Fused(check + head + unpack + text.rstrip("\n") + "\n\n", [bound.source_of[n] for n in runtime],
                 [bound.source_of[n] for n in specialized], f"{alias}.numel() == {bound.source_of['xnumel']}{agree}",
                 f"epi_dense={not own}", store)


POINTWISE = Reader(NAME, "triton_poi_", "pointwise", _pointwise)


class Body(ast.NodeTransformer):
    """A reading kernel's statement with its load of the buffer (`tl.load(loaded + index, ...)`) made the tile's
    value (the index kept in `indices`), and every load and store masked, by `mask_for(its offset)` where the
    compiler wrote None or nothing (where its block divides the size: the tile's edges are masked here). `others`:
    the buffer's pointer used otherwise than by that load or by a store to it (an in-place kernel's)."""

    def __init__(self, loaded: str, mask_for: Callable[[ast.expr], str | None]) -> None:
        self.loaded, self.indices, self.others, self.changed = loaded, [], 0, False
        self.mask_for = mask_for

    def visit_Call(self, node: ast.Call) -> ast.AST:
        name = ast.unparse(node.func)
        first = node.args[0] if node.args else None
        ours = (isinstance(first, ast.BinOp) and isinstance(first.op, ast.Add) and isinstance(first.left, ast.Name)
                and first.left.id == self.loaded)
        if name == "tl.load" and ours:
            assert isinstance(first, ast.BinOp)
            self.indices.append(first.right)
            self.changed = True
            return ast.Name(VALUE, ast.Load())
        if name in ("tl.load", "tl.store"):
            self._masked(node, 1 if name == "tl.load" else 2)
            if ours:  # a store into the buffer itself: an in-place kernel's result
                node.args[1:] = [self.visit(a) for a in node.args[1:]]
                return node
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        self.others += node.id == self.loaded
        return node

    def _masked(self, node: ast.Call, at: int) -> None:
        """The access masked by the tile's edges along the axes its offset varies (`mask_for`): where the compiler
        wrote no mask (None, or nothing: its block divides the size) that mask, and where it wrote one without
        them, both (its own sizes' edges are not the tile's, whose rows a strided transposed convolution pads)."""
        keyword = next((k for k in node.keywords if k.arg == "mask"), None)
        mask = keyword.value if keyword else node.args[at] if len(node.args) > at else None
        name = self.mask_for(node.args[0])
        if name is None:  # an offset of neither the tile's rows nor its columns: one address, no edge to mask
            return
        if mask is None or (isinstance(mask, ast.Constant) and mask.value is None):
            made = parse_expression(name)
        else:
            missing = [m for m in name.split(" & ") if m not in _names(mask)]
            if not missing:
                return
            made = parse_expression(f"{' & '.join(missing)} & ({ast.unparse(mask)})")
        self.changed = True
        if keyword:
            keyword.value = made
        elif len(node.args) > at:
            node.args[at] = made
        else:
            node.args.append(made)


VALUE = "conv_value"


def _edit_helper(text: str, store: str) -> str:
    """conv_igemm_kernel with the epilogue (`store`, its call) in place of its store, and conv_triton passing it
    (the implicit GEMM always; at contiguous offsets where epi_dense; a tile of epi_rows channels where given)."""
    edits = [
        (_KERNEL_END, "    PHASED: tl.constexpr,\n    epi, EPI: tl.constexpr, EPIC: tl.constexpr,\n):\n"),
        (_STORE, "    if EPI:  # the fused epilogue stores what it computes from the tile\n" + store
         + "    else:\n    " + _STORE),
        (_HOST_DEF, _HOST_DEF.replace("groups):", "groups, epi=None, epic=(), epi_dense=True, epi_rows=0):")),
        (_BLOCK_N, _BLOCK_N + "    if epi_rows:  # a reduction over the output channels: one tile holds them all\n"
                              "        block_n = epi_rows\n"),
        (_LAUNCH, "    if epi is not None and epi_dense:  # the epilogue's offsets: out's laid out contiguously\n"
                  "        out = out.as_strided(out.shape, torch.empty(out.shape, device='meta').stride())\n"
                  + _LAUNCH),
        (_LAUNCH_KNOBS, _LAUNCH_KNOBS + " epi=() if epi is None else epi, EPI=epi is not None, EPIC=epic,"),
    ]
    for old, new in edits:
        if text.count(old) != 1:
            raise NotFused(f"the convolution helper is not the seed's as written ({old.strip()[:50]!r})")
        text = text.replace(old, new)
    # the direct and depthwise kernels store otherwise: with an epilogue the implicit GEMM takes every convolution
    for old, new in ((_DEPTHWISE, _DEPTHWISE.replace("if not", "if epi is None and not")),
                     (_DIRECT, _DIRECT.replace("few = ", "few = epi is None and "))):
        if text.count(old) != 1:
            raise NotFused(f"the convolution helper is not the seed's as written ({old.strip()[:50]!r})")
        text = text.replace(old, new)
    return text
