"""Several loads of a convolution's output that read one element: checked at run time before they are fused.

With dynamic shapes the compiler may load the buffer twice in one pointwise kernel at two spellings of one offset:
the H200's graph of the public level-2 57 (`Conv2d_ReLU_HardSwish`) and torch 2.13's CPU graphs of 7 and 47 write
`x1 * max(1, ks7 - 2)` in one load and `x1 * max(1, ks0)` in the other, where the launch passes `ks0 = s92 - 2` and
`ks7 = s92`. Which sizes are equal is the launch's to say, not the kernel's, so no reading of the kernel alone proves
the two offsets one. `fuse.conv_epilogue` takes every such load as the tile's value where forward finds, at run
time, that the loads' offsets agree at the first, second, middle and last elements (`offsets_agree`): the kernel's
index arithmetic, run in Python on the launch's own arguments. Where they disagree (a neighbour's value, not the
element's own) forward keeps the unfused pair; the verifier judges the rest.
"""

from __future__ import annotations

import ast

_FUNCTION = "conv_epilogue_offsets"
_SIZE = "helper_size_value"  # the seed's size specializer: the size itself in Python
_OWN = {"xindex", "xoffset", "xmask"}  # the kernel's programs' layout: xindex is the function's argument


class Unchecked(Exception):
    """The loads' offsets use what Python cannot compute (a Triton call, a load)."""


def checker(kernel: ast.FunctionDef, indices: list[ast.expr], params: list[str]) -> tuple[str, list[str]]:
    """A Python function `conv_epilogue_offsets(xindex, USED...)` returning the set of the loads' offsets at one
    element: the kernel's assignments the offsets use (transitively), with its size specializer taken away; and
    USED, the parameters it reads (sizes only: a pointer passed to it would read to the guards as a tensor, and its
    arithmetic as torch's)."""
    needed = set().union(*({n.id for n in ast.walk(i) if isinstance(n, ast.Name)} for i in indices))
    kept: list[ast.stmt] = []
    for stmt in reversed(kernel.body):
        targets = _targets(stmt)
        if not targets & needed or targets & _OWN:
            continue
        value = stmt.value
        assert value is not None
        for node in ast.walk(value):
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id == _SIZE):
                raise Unchecked(f"an offset uses {ast.unparse(node.func)}")
        value = _Sizes().visit(value)
        kept.append(ast.Assign([ast.Name(t, ast.Store()) for t in sorted(targets)], value, lineno=0))
        needed |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    known = set(params) | {"xindex"} | set().union(*(_targets(s) for s in kept))
    if needed - known:
        raise Unchecked(f"an offset uses {', '.join(sorted(needed - known))}, which Python cannot compute here")
    body = "".join(f"    {ast.unparse(s)}\n" for s in reversed(kept) if not _renames_itself(s))
    offsets = ", ".join(ast.unparse(i) for i in indices)
    used = [p for p in params if p in needed]
    return (f"def {_FUNCTION}(xindex, {', '.join(used)}):\n"
            "    # the loads' offsets of the convolution's output at one element, as the pointwise kernel has them\n"
            f"{body}    return {{{offsets}}}\n\n\n"), used


def check(kernel: ast.FunctionDef, indices: list[ast.expr], params: list[str],
          source_of: dict[str, str]) -> tuple[str, str]:
    """For a kernel loading the buffer at `indices` (one: nothing to check), the checker's text and what forward's
    condition adds: its offsets agree at the first, second, middle and last elements, on the launch's arguments
    (`source_of`, each parameter's as text). Raises Unchecked where Python cannot compute them."""
    if len(indices) == 1:
        return "", ""
    text, used = checker(kernel, indices, [p for p in params if p != "XBLOCK"])
    args, count = "".join(f", {source_of[p]}" for p in used), source_of["xnumel"]
    # the element's name is no forward's input's (`x` would read to the guards as the input tensor)
    return text, (f" and all(len({_FUNCTION}(at_element{args})) == 1 for at_element in "
                  f"{{0, min(1, {count} - 1), ({count}) // 2, {count} - 1}})")


def _renames_itself(stmt: ast.Assign) -> bool:
    """`ks0 = ks0`: what is left of the seed's `ks0 = helper_size_value(ks0)`."""
    return isinstance(stmt.value, ast.Name) and [ast.unparse(t) for t in stmt.targets] == [stmt.value.id]


def _targets(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        return {t.id for t in stmt.targets}  # type: ignore[attr-defined]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return {stmt.target.id}
    return set()


class _Sizes(ast.NodeTransformer):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        return node.args[0] if isinstance(node.func, ast.Name) and node.func.id == _SIZE else node
