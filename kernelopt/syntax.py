"""Python source parsed to an AST, one parse at a time in this process.

CPython 3.11 keeps the AST constructor's recursion depth in state that every thread shares: two
threads parsing at once (parallel optimizer branches, candidates checked side by side) can make
`ast.parse` raise "SystemError: AST constructor recursion depth mismatch" on correct code
(python/cpython#106905; a two-branch test run hit it). Every parse and every compile of a tree in
kernelopt goes through this module, under one lock. Parsing a kernel takes milliseconds: nobody
waits long.
"""

from __future__ import annotations

import ast
import re
import threading
from types import CodeType

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse(source, filename)`, alone in this process."""
    with _LOCK:
        return ast.parse(source, filename=filename)


def parse_expression(source: str) -> ast.expr:
    """The expression `source` as a tree (`ast.parse(source, mode="eval").body`), alone in this process."""
    with _LOCK:
        return ast.parse(source, mode="eval").body


def compile_tree(tree: ast.Module, filename: str) -> CodeType:
    """`compile(tree, filename, "exec")`: turning a tree back into C structures counts depth the same way."""
    with _LOCK:
        return compile(tree, filename, "exec")


def python_lines(source: str) -> list[str]:
    """`source`'s lines as Python numbers them, each with its end: "\n", "\r\n" or "\r" ends one (str.splitlines
    also breaks at form feeds and other separators, and then an ast line number points at the wrong line)."""
    return re.split(r"(?<=\n)|(?<=\r)(?!\n)", source)


def char_offset(lines: list[str], lineno: int, col_offset: int) -> int:
    """The index in the source (`lines`: python_lines's) of an ast node's (lineno, col_offset), whose column counts
    UTF-8 bytes."""
    return sum(map(len, lines[: lineno - 1])) + len(lines[lineno - 1].encode()[:col_offset].decode())
