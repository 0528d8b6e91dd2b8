"""`fuse.conv_epilogue`: a compiler seed's elementwise epilogue computed where its convolution stores.

A seed (seed/conv.py) runs each convolution on `conv_triton` into a buffer, and Inductor's own pointwise kernel then
reads that buffer whole, adds the bias, applies the activations and writes the output: the convolution's output
crosses memory three times (written, read, written again) where once is enough. Level 2's convolutions with few
input channels (8 to 64 at 128 x 128, a 3 x 3 kernel: 72 multiply-adds an output value) spend most of their time
there, and torch.compile does the same (cuDNN's output, then a Triton kernel), so this is where a seed can pass it.

The rewrite takes the first `conv_triton(..., BUF, ...)` of ModelNew.forward whose buffer is read next, and only, by
one launch of a `triton_poi_*` kernel (Inductor's pointwise kernels: no reduction) that loads it once. That kernel's
body becomes a `@triton.jit` function, `conv_epilogue`, called by `conv_igemm_kernel` in place of its store: the
tile's values stand for that load, `xindex` is each value's index in BUF laid out contiguously (the pointwise kernel
walks its output, BUF's shape, in that order), `xmask` the tile's mask. The kernel's other pointers and run-time
integers come in as a tuple (`epi`), its specialized sizes as a constexpr tuple (`EPIC`), so the body compiles as
Inductor wrote it. With an epilogue the helper always takes the implicit GEMM (not the direct or depthwise kernels,
whose stores are laid out otherwise) and computes its offsets as if BUF were contiguous; BUF itself is never
written. Forward keeps the unfused pair for a launch whose element count is not BUF's (the fusion's premise), and
the verifier judges the rest: a pointwise kernel that read BUF at other positions than its own would compute other
outputs and be refused.

The edits leave the anchors of the convolution's split rewrites (conv_split.py) in place, so either may come first.
"""

from __future__ import annotations

import ast
import re

from kernelopt.syntax import parse

NAME = "fuse.conv_epilogue"
_FUNCTION = "conv_epilogue"
_KERNEL_END = "    PHASED: tl.constexpr,\n):\n"
_STORE = "    tl.store(out_ptr + o_off, acc.to(out_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])\n"
_HOST_DEF = "def conv_triton(x, weight, bias, out, stride, padding, dilation, transposed, output_padding, groups):\n"
_DEPTHWISE = "    if not transposed and cg == 1 and ocg < 16:\n"
_DIRECT = "    direct = cg <= 4 and "
_LAUNCH = "    conv_igemm_kernel[grid](\n"
_LAUNCH_KNOBS = "PHASED=phases > 1,"
# the pointwise kernel's own lines the fused function drops: its programs' indices and mask are the tile's
_DROPPED = re.compile(r"^\s*(xoffset|xindex|xmask)\s*=")


class NotFused(Exception):
    """Why a kernel file's epilogue cannot be fused into its convolution, for the report."""


def rewrite(source: str) -> str:
    """The kernel file with its first fusable convolution's epilogue computed in `conv_igemm_kernel`'s store;
    raises NotFused with why not."""
    try:
        tree = parse(source)
    except SyntaxError as err:
        raise NotFused(f"the best kernel does not parse ({err.msg})") from err
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if not {"conv_igemm_kernel", "conv_triton"} <= functions.keys():
        raise NotFused("the best kernel has no convolution helper of the seed's (conv_triton, conv_igemm_kernel)")
    if _FUNCTION in functions:
        raise NotFused("the best kernel's convolution already computes an epilogue")
    forward = _forward(tree)
    conv, launch, kernel_name, buffer = _pair(forward, functions)
    kernel = functions[kernel_name]
    lines = source.splitlines(keepends=True)
    epilogue, runtime, specialized, numel = _epilogue(kernel, lines, launch, buffer)
    launch_text = _segment(lines, launch)
    call = ast.get_source_segment(source, conv.value)
    assert call is not None and call.endswith(")")
    fused_call = (call[:-1] + f", epi=({''.join(a + ', ' for a in runtime)}), "
                  f"epic=({''.join(a + ', ' for a in specialized)}))")
    pad = " " * launch.col_offset
    replacement = (f"{pad}if {buffer}.numel() == {numel}:  # the pointwise kernel computed where the convolution "
                   f"stores ({NAME})\n{pad}    {fused_call}\n{pad}else:\n{pad}    {call}\n"
                   + "".join(f"    {line}" if line.strip() else line for line in launch_text.splitlines(keepends=True)))
    # the launch's place first (it comes later in the file), then the convolution's own line goes
    lines[launch.lineno - 1:launch.end_lineno] = [replacement]
    lines[conv.lineno - 1:conv.end_lineno] = []
    text = "".join(lines)
    text = _edit_helper(text)
    model = text.index("\nclass ModelNew")
    return text[:model] + "\n\n" + epilogue + text[model:]


def _forward(tree: ast.Module) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return item
    raise NotFused("the best kernel has no ModelNew.forward")


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _pair(forward: ast.FunctionDef, functions: dict[str, ast.FunctionDef]) -> tuple[ast.Expr, ast.Expr, str, str]:
    """The first convolution whose buffer only a pointwise kernel reads next, that launch, its kernel and the
    buffer's name."""
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
        buffer = args[3].id
        for j in range(i + 1, len(body)):
            later = body[j]
            if isinstance(later, ast.Delete):
                continue
            if buffer not in _names(later):
                if isinstance(later, ast.Expr):  # a launch between: it might write what the convolution reads
                    reasons.append(f"a launch comes between the convolution into {buffer} and its reader")
                    break
                continue
            kernel = _pointwise_launch(later, buffer, functions)
            if kernel is None:
                reasons.append(f"{buffer} is read next by other than one launch of an Inductor pointwise kernel")
                break
            rest = [s for s in body[j + 1:] if buffer in _names(s)]
            if any(not isinstance(s, ast.Delete) for s in rest):
                reasons.append(f"{buffer} is read again after its pointwise kernel")
                break
            return stmt, later, kernel, buffer
    if not reasons:
        raise NotFused("ModelNew.forward calls no convolution of the seed's (conv_triton) into a buffer")
    raise NotFused(reasons[0])


def _pointwise_launch(stmt: ast.stmt, buffer: str, functions: dict[str, ast.FunctionDef]) -> str | None:
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Subscript) and isinstance(stmt.value.func.value, ast.Name)):
        return None
    name = stmt.value.func.value.id
    uses = [a for a in stmt.value.args if isinstance(a, ast.Name) and a.id == buffer]
    if not name.startswith("triton_poi_") or name not in functions or len(uses) != 1:
        return None
    if any(buffer in _names(k.value) for k in stmt.value.keywords):
        return None
    return name


def _segment(lines: list[str], node: ast.stmt) -> str:
    return "".join(lines[node.lineno - 1:node.end_lineno])


def _epilogue(kernel: ast.FunctionDef, lines: list[str], launch: ast.Expr,
              buffer: str) -> tuple[str, list[str], list[str], str]:
    """The pointwise kernel's body as `conv_epilogue`, the launch's arguments it takes at run time and specialized
    (as text), and the launch's element count (text)."""
    call = launch.value
    assert isinstance(call, ast.Call)
    params = kernel.args.args
    by_keyword = {k.arg for k in call.keywords}
    positional = [p for p in params if p.arg not in by_keyword]
    if len(positional) != len(call.args) or kernel.args.vararg or kernel.args.kwonlyargs:
        raise NotFused(f"{kernel.name}'s launch does not pass its parameters one by one")
    if any(p.arg not in ("XBLOCK", "xnumel") and p.arg.startswith(("r0_", "y", "R0_")) for p in params):
        raise NotFused(f"{kernel.name} is not a one-dimensional pointwise kernel")
    constexpr = {p.arg for p in params if p.annotation is not None and "constexpr" in ast.unparse(p.annotation)}
    if "xnumel" not in {p.arg for p in positional}:
        raise NotFused(f"{kernel.name} takes no element count (xnumel)")
    source_of = {p.arg: ast.unparse(a) for p, a in zip(positional, call.args, strict=True)}
    loaded = next(p.arg for p, a in zip(positional, call.args, strict=True)
                  if isinstance(a, ast.Name) and a.id == buffer)
    body = "".join(lines[kernel.body[0].lineno - 1:kernel.end_lineno])
    load = re.compile(rf"^(\s*)(\w+) = tl\.load\({loaded} \+ .*$", re.M)
    found = load.findall(body)
    if len(found) != 1 or len(re.findall(rf"\b{loaded}\b", body)) != 1:
        raise NotFused(f"{kernel.name} reads the convolution's output other than by one load")
    kept = []
    for line in body.splitlines(keepends=True):
        if _DROPPED.match(line):
            continue
        kept.append(load.sub(rf"\1\2 = {_VALUE}", line) if load.match(line) else line)
    text = "".join(kept)
    if re.search(r"\b(xoffset|XBLOCK|tl\.program_id|tl\.num_programs)\b", text):
        raise NotFused(f"{kernel.name}'s body uses its own programs' layout (XBLOCK, program ids)")
    if re.search(r"\btl\.(sum|max|min|reduce|associative_scan|cumsum|atomic_\w+)\(", text):
        raise NotFused(f"{kernel.name} reduces or scans: only an elementwise epilogue is fused")
    runtime = [p.arg for p in positional if p.arg not in constexpr and p.arg != "XBLOCK"]
    specialized = [p.arg for p in positional if p.arg in constexpr and p.arg != "XBLOCK"]
    unpack = "".join(f"    {name} = epi[{k}]\n" for k, name in enumerate(runtime))
    unpack += "".join(f"    {name}: tl.constexpr = EPIC[{k}]\n" for k, name in enumerate(specialized))
    head = (f"@triton.jit\ndef {_FUNCTION}(xindex, {_VALUE}, xmask, epi, EPIC: tl.constexpr):\n"
            f"    # {kernel.name}'s body ({NAME}): the tile's values stand for its load of the\n"
            "    # convolution's output, xindex for their offsets in that output laid out contiguously\n")
    return (head + unpack + text.rstrip("\n") + "\n\n",
            [source_of[n] for n in runtime], [source_of[n] for n in specialized], source_of["xnumel"])


_VALUE = "conv_value"


def _edit_helper(text: str) -> str:
    """conv_igemm_kernel with the epilogue in place of its store, and conv_triton passing it (the implicit GEMM
    always, at contiguous offsets)."""
    edits = [
        (_KERNEL_END, "    PHASED: tl.constexpr,\n    epi, EPI: tl.constexpr, EPIC: tl.constexpr,\n):\n"),
        (_STORE, "    if EPI:  # the fused epilogue stores what it computes from the tile\n"
                 f"        {_FUNCTION}(o_off, acc.to(out_ptr.dtype.element_ty), m_ok[:, None] & n_ok[None, :], epi, "
                 "EPIC)\n    else:\n    " + _STORE),
        (_HOST_DEF, _HOST_DEF.replace("groups):", "groups, epi=None, epic=()):")),
        (_LAUNCH, "    if epi is not None:  # the epilogue takes each value's offset in out laid out contiguously\n"
                  "        out = out.as_strided(out.shape, torch.empty(out.shape, device='meta').stride())\n"
                  + _LAUNCH),
        (_LAUNCH_KNOBS, _LAUNCH_KNOBS + " epi=() if epi is None else epi, EPI=epi is not None, EPIC=epic,"),
    ]
    for old, new in edits:
        if text.count(old) != 1:
            raise NotFused(f"the convolution helper is not the seed's as written ({old.strip()[:50]!r})")
        text = text.replace(old, new)
    # the direct and depthwise kernels store otherwise: with an epilogue the implicit GEMM takes every convolution
    text = text.replace(_DEPTHWISE, _DEPTHWISE.replace("if not", "if epi is None and not"), 1)
    return text.replace(_DIRECT, "    direct = epi is None and cg <= 4 and ", 1)
