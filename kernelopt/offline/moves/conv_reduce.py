"""`fuse.conv_rows`: a compiler seed's reduction over its convolution's output channels computed where it stores.

Level 2's convolutions are often followed by a reduction over the channels of each output position: a minimum, a
softmax, a log-sum-exp (Conv2d_Min_Tanh_Tanh: 64 channels at 254 x 254 for 128 samples, a 2.1 GB output read back
whole to keep one value in 64). Inductor writes it as one persistent reduction kernel (`triton_per_*`): each program
takes XBLOCK output positions (x: the sample and position, numbered as they lie in a contiguous output) by all
R0_BLOCK channels (r0_index), reduces along the channels and stores the result. That is the shape of the
convolution's own tile, rows of output positions by columns of output channels, once one tile holds every channel.

The rewrite makes that kernel's body a `@triton.jit conv_rows_epilogue(xindex, r0_index, conv_value, xmask, r0_mask,
...)` that `conv_igemm_kernel` calls in place of its store, with its tile's channels R0_BLOCK wide (one tile in N):
the tile's values stand for the body's one load of the convolution's output, xindex is each row's position numbered
as the contiguous output numbers it, r0_index each column's channel, and the masks the tile's edges. Loads and
stores the compiler left unmasked (a block that divides its size) are masked by the rows, the columns or both, as
their offsets use xindex, r0_index or both. An in-place kernel (a softmax that writes its exponentials back for a
later kernel) stores into the buffer at its own offsets; a buffer read after a kernel that is not in place is
refused. Forward keeps the unfused pair where the launch's sizes are not the buffer's (channels by positions), and
the verifier judges the rest: a kernel whose load remaps the buffer (a flip between the convolution and the reduction,
folded into the load's offset) numbers its values otherwise, computes other outputs and is refused there.

The pairing, the helper's edits and the other kernel's arguments are `fuse.conv_epilogue`'s (conv_epilogue.py).
"""

from __future__ import annotations

import ast
import re

from kernelopt.offline.moves.conv_epilogue import VALUE, Body, Fused, NotFused, Reader, arguments, bind, body_text, fuse

NAME = "fuse.conv_rows"
_FUNCTION = "conv_rows_epilogue"
# the kernel's own programs' layout: its rows' and channels' indices and masks, which become the tile's, whatever
# makes them (a mask `xindex < xnumel` is not the tile's rows: a strided transposed convolution pads them with
# positions of other rows); an older compiler's `rindex` and `rmask` are the tile's too
_TILE = {"xindex": "x", "xmask": "x", "r0_index": "r", "r0_mask": "r", "rindex": "r", "rmask": "r"}  # their axes
_OWN = re.compile(rf"^\s*(xoffset|{'|'.join(_TILE)})\s*(:[^=]*)?=(.*)$")
_BLOCK = re.compile(r"^\s*(?:R0_BLOCK|RBLOCK)\s*:\s*tl\.constexpr\s*=\s*(\d+)\s*$", re.M)
_LEAST_COLUMNS = 16  # tl.dot's least N: a reduction over fewer channels is not fused
# the widest tile: the weight's K step by 256 fp32 columns is 32 KB a pipeline stage, its accumulator at 64 rows 128
# registers a thread at 4 warps (the compiler keeps channel reductions persistent up to 1024 along contiguous memory)
_MOST_COLUMNS = 256


# a reduction over the channels takes them all in one tile's columns (CONV_BLOCK_N is not read): its rows, at 4 and 8
# warps, those of 8192 accumulators at most (64 registers a thread at 4 warps, sm_90: no spill at 64 x 64)
ROWS_TILES = ({}, {"CONV_BLOCK_M": 32, "num_warps": 4}, {"CONV_BLOCK_M": 64, "num_warps": 8},
              {"CONV_BLOCK_M": 128, "num_warps": 8})


def tiles(fused: str) -> tuple[dict, ...]:
    """The sweep's tiles for a fused file: its own, then ROWS_TILES' that fit its width."""
    width = int(re.search(r"epi_rows=(\d+)", fused).group(1))
    return ROWS_TILES[:1] + tuple(t for t in ROWS_TILES[1:] if t["CONV_BLOCK_M"] * width <= 8192)


def rewrite(source: str) -> str:
    """The kernel file with its first convolution whose channels a persistent reduction reduces next computing that
    reduction in `conv_igemm_kernel`'s store; raises NotFused with why not."""
    return fuse(source, ROWS)


def _dropped(line: str) -> str | None:
    own = _OWN.match(line)
    if own is None or own.group(3).strip() in ("r0_index", "r0_mask"):
        return None
    if own.group(1) in ("rindex", "rmask"):  # an older compiler's names for the channels' index and mask
        made = "r0_index" if own.group(1) == "rindex" else "r0_mask"
        return f"{line[:len(line) - len(line.lstrip())]}{own.group(1)} = {made}\n"
    return ""


def _axes(kernel: ast.FunctionDef) -> dict[str, set[str]]:
    """Each name the kernel's body assigns: which of the tile's axes its value varies along ("x": the rows, "r":
    the channels), from the names it is made of."""
    axes = {name: {axis} for name, axis in _TILE.items()}
    for stmt in ast.walk(kernel):
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            if _TILE.keys() & set(names):
                continue
            found = set().union(*(axes.get(n.id, set()) for n in ast.walk(stmt.value) if isinstance(n, ast.Name)))
            for name in names:
                axes[name] = axes.get(name, set()) | found
    return axes


def _rows(kernel: ast.FunctionDef, lines: list[str], launch: ast.Expr, alias: str, read_later: bool,
          inputs: set[str], conv: ast.Expr) -> Fused:
    """The persistent reduction's body as `conv_rows_epilogue`: the tile's rows its positions, its columns the
    channels it reduces."""
    params = {p.arg for p in kernel.args.args}
    text = "".join(lines[kernel.lineno - 1:kernel.end_lineno])
    if ("r0_numel" not in params and "rnumel" not in params or params & {"ynumel", "r1_numel"}
            or re.search(r"\bR1_BLOCK\b", text)):
        raise NotFused(f"{kernel.name} is not a reduction along one axis")
    if re.search(r"^\s*XBLOCK\b[^=]*=", text, re.M) or not re.search(
            r"^\s*(r0_index|rindex)\s*=\s*.*tl\.arange\(.*\)\[None, :\]\s*$", text, re.M):
        raise NotFused(f"{kernel.name} does not take its rows by XBLOCK and its channels along its second axis")
    call = conv.value
    assert isinstance(call, ast.Call)
    if ast.unparse(call.args[9]) != "1":
        raise NotFused("the convolution is grouped: a group's channels are not the output's")
    if re.search(r"^\s*for\b|\btl\.(associative_scan|cumsum|atomic_\w+)\(", text, re.M):
        raise NotFused(f"{kernel.name} loops or scans: only a reduction held whole in one tile is fused")
    block = _BLOCK.search(text)
    if block is None:
        raise NotFused(f"{kernel.name} takes its channels' block at launch: no tile width to give the convolution")
    width = int(block.group(1))
    if width < _LEAST_COLUMNS:
        raise NotFused(f"{kernel.name} reduces {width} channels or fewer: the convolution's tile is {_LEAST_COLUMNS} "
                       "wide at least")
    if width > _MOST_COLUMNS:
        raise NotFused(f"{kernel.name} reduces a block of {width} channels: the convolution's tile is "
                       f"{_MOST_COLUMNS} wide at most")
    bound = bind(kernel, launch, alias, read_later, inputs, "reduction")
    axes = _axes(kernel)

    def mask_for(offset: ast.expr) -> str | None:
        along = set().union(*(axes.get(n.id, set()) for n in ast.walk(offset) if isinstance(n, ast.Name)))
        return {frozenset(): None, frozenset("x"): "xmask", frozenset("r"): "r0_mask"}.get(frozenset(along),
                                                                                         "xmask & r0_mask")

    body = Body(bound.loaded, mask_for)
    fused = body_text(kernel, lines, body, _dropped)
    if re.search(r"\b(xoffset|tl\.program_id|tl\.num_programs)\b", fused):
        raise NotFused(f"{kernel.name}'s body uses its own programs' layout (program ids)")
    runtime, specialized, unpack = arguments(bound, ("XBLOCK", "R0_BLOCK", "RBLOCK"))
    numel = bound.source_of["r0_numel" if "r0_numel" in bound.source_of else "rnumel"]
    head = (f"@triton.jit\ndef {_FUNCTION}(xindex, r0_index, {VALUE}, xmask, r0_mask, epi, EPIC: tl.constexpr, "
            "XBLOCK: tl.constexpr):\n"
            f"    # {kernel.name}'s body ({NAME}): the tile's values stand for its load of the\n"
            "    # convolution's output, xindex for their rows' positions, r0_index for their columns' channels\n")
    position = "((nb * OD + od) * OH + oh) * OW + ow"
    store = (f"        {_FUNCTION}(({position})[:, None], rn[None, :], acc.to(out_ptr.dtype.element_ty), "
             "m_ok[:, None], n_ok[None, :], epi, EPIC, BLOCK_M)\n")
    condition = (f"{alias}.dim() > 1 and {alias}.shape[1] == {numel} and "
                 f"{alias}.numel() == {bound.source_of['xnumel']} * {numel}")
    return Fused(head + unpack + fused.rstrip("\n") + "\n\n", [bound.source_of[n] for n in runtime],
                 [bound.source_of[n] for n in specialized], condition, f"epi_dense=False, epi_rows={width}", store)


ROWS = Reader(NAME, "triton_per_", "reduction", _rows)
