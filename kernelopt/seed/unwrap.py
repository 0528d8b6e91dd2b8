"""The wrap of a split reduction's padded index, taken out where the access's mask already excludes it.

With dynamic shapes the compiler splits a long reduction into a fixed number of pieces of
ceil(numel / pieces) values, and reads piece x's value r at `(r + x * ceil(numel / pieces)) % numel`
under a mask that holds `r + x * ceil(numel / pieces) < numel`: the remainder keeps the padded
tail's address in bounds, though no lane past the end loads. A 32-bit remainder by a size known
only at run time costs about twenty integer instructions per element, likely more than a
memory-bound kernel has to spare (on the H200 37_FrobeniusNorm_'s seed, which reads so, took
5.75 ms against torch.compile's static-shape 5.12; the rewrite itself is not yet timed).
Where a load's or store's mask holds such a guard `E < M`, every lane that touches memory has
E < M, and an index is never negative, so `E % M` in its address is E, and so is `(E // D) % K`
with M = D * K (a reduction over several dims: its outermost coordinate).

A remainder whose guard the mask does not hold stays (a broadcast input read at `index % size`).
The seed is checked against the reference as written, and again without this rewrite if that fails
(generate.py).
"""

from __future__ import annotations

import ast
import re

from kernelopt.syntax import parse


def _text(node: ast.expr, defs: dict[str, str]) -> str:
    """An expression's text, a name taken as the expression it was assigned."""
    return defs[node.id] if isinstance(node, ast.Name) and node.id in defs else ast.unparse(node)


def _conjuncts(mask: ast.expr) -> list[ast.expr]:
    if isinstance(mask, ast.BinOp) and isinstance(mask.op, ast.BitAnd):
        return _conjuncts(mask.left) + _conjuncts(mask.right)
    return [mask]


def _mask(call: ast.Call) -> ast.expr | None:
    """The mask of `tl.load(pointer, mask, ...)` or `tl.store(pointer, value, mask, ...)`."""
    position = 2 if ast.unparse(call.func) == "tl.store" else 1
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == "mask"), None)


class _Remainders(ast.NodeTransformer):
    """`E % M` taken as E inside one address, for the (E, M) pairs the access's mask guards."""

    def __init__(self, held: set[tuple[str, str]], defs: dict[str, str]) -> None:
        self.held, self.defs, self.changed = held, defs, False

    def visit_Call(self, node: ast.Call) -> ast.AST:
        return node  # a load inside the address has a mask of its own

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Mod):
            return node
        if (_text(node.left, self.defs), _text(node.right, self.defs)) in self.held:
            self.changed = True
            return node.left
        inner = node.left  # (E // D) % K under E < D * K: a multi-dimensional index's outermost coordinate
        if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.FloorDiv):
            span = ast.unparse(ast.BinOp(inner.right, ast.Mult(), node.right))
            if (_text(inner.left, self.defs), span) in self.held:
                self.changed = True
                return inner
        return node


def _statement(line: str) -> ast.stmt | None:
    """The one simple statement a line holds (the compiler writes one per line), else None."""
    stripped = line.strip()
    try:
        body = parse(stripped).body
    except SyntaxError:  # `for ...:`, a statement's first line
        return None
    return body[0] if len(body) == 1 and not isinstance(body[0], ast.For | ast.If | ast.While | ast.With) else None


def _assigned(stmt: ast.stmt) -> set[str]:
    """Every name a statement stores to (tuple targets, `+=`, annotated and walrus assignments)."""
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def unwrap_guarded(lines: list[str]) -> list[str]:
    """A kernel body's lines with each guarded remainder in a load's or store's address taken out.

    What is known (each name's expression, each guard) holds from a statement to the next at the
    same depth; a line that is no simple statement (a loop's or branch's header, a statement over
    several lines) or a dedent forgets it all.
    """
    defs: dict[str, str] = {}  # a name's expression, as last assigned
    guards: dict[str, tuple[str, str]] = {}  # `name = E < M`: name -> (E, M)
    out: list[str] = []
    depth = -1
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            out.append(line)
            continue
        indent = len(line) - len(line.lstrip())
        stmt = _statement(line)
        if stmt is None or indent < depth:
            defs, guards = {}, {}
        depth = indent
        if stmt is None:
            out.append(line)
            continue
        changed = False
        for call in [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and n.args]:
            mask = _mask(call) if ast.unparse(call.func) in ("tl.load", "tl.store") else None
            if mask is None:
                continue
            held = {guards[leaf.id] for leaf in _conjuncts(mask) if isinstance(leaf, ast.Name) and leaf.id in guards}
            rewrite = _Remainders(held, defs)
            call.args[0] = rewrite.visit(call.args[0])
            changed |= rewrite.changed
        out.append(line[:indent] + ast.unparse(stmt) if changed else line)
        for name in _assigned(stmt):  # what read the old value no longer holds
            stale = re.compile(rf"\b{re.escape(name)}\b")
            guards = {g: pair for g, pair in guards.items() if g != name and not any(stale.search(t) for t in pair)}
            defs = {d: text for d, text in defs.items() if d != name and not stale.search(text)}
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
            if re.search(rf"\b{re.escape(name)}\b", ast.unparse(value)):  # `x = x + 1` defines nothing
                continue
            if isinstance(value, ast.Compare) and len(value.ops) == 1 and isinstance(value.ops[0], ast.Lt):
                guards[name] = (_text(value.left, defs), _text(value.comparators[0], defs))
            defs[name] = ast.unparse(value)
    return out
