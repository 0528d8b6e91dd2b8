"""Every parse in kernelopt goes through kernelopt.syntax, one at a time (CPython 3.11's AST
constructor keeps its recursion depth in state all threads share: python/cpython#106905; a
two-branch run hit "SystemError: AST constructor recursion depth mismatch" on a correct kernel)."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

from kernelopt import syntax

PACKAGE = Path(__file__).resolve().parents[1] / "kernelopt"


def test_no_module_but_syntax_parses_or_compiles_a_tree() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "syntax.py" and path.parent == PACKAGE:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bast\.parse\(|\bcompile\(\s*tree\b|PyCF_ONLY_AST", line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert found == []


def test_a_parse_waits_while_another_holds_the_lock() -> None:
    done = threading.Event()

    def parse_in_a_thread() -> None:
        syntax.parse("x = 1\n")
        done.set()

    with syntax._LOCK:  # another thread mid-parse
        worker = threading.Thread(target=parse_in_a_thread)
        worker.start()
        assert not done.wait(0.3)  # it waits its turn
    assert done.wait(5)
    worker.join()


def test_the_three_forms_give_what_ast_gives() -> None:
    source = "def f(a):\n    return a * 2 + 1\n"
    assert ast.dump(syntax.parse(source, "<k>")) == ast.dump(ast.parse(source, "<k>"))
    assert ast.dump(syntax.parse_expression("s0 * 2")) == ast.dump(ast.parse("s0 * 2", mode="eval").body)
    namespace: dict = {}
    exec(syntax.compile_tree(syntax.parse(source), "<k>"), namespace)
    assert namespace["f"](3) == 7
