"""Op names and what `kernelopt export` is pointed at, checked without loading torch."""

from __future__ import annotations

import ast
import keyword
import re
from pathlib import Path
from typing import Literal

from kernelopt.records import InputError
from kernelopt.syntax import parse

DEFAULT_NAMESPACE = "kernelopt"
Target = Literal["run", "files", "suite"]


def _module_names() -> frozenset[str]:
    """Names every exported module defines or imports (runtime.py's, and the ones render.py writes)."""
    tree = parse(Path(__file__).with_name("runtime.py").read_text())
    names = {"types", "ModelNew", "SPEC", "REFERENCE_SOURCE", "_reference", "triton", "tl"}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


RESERVED = _module_names()


def op_names(qualname: str) -> tuple[str, str, str]:
    """(namespace, op name, drop-in class name) of "namespace::op"."""
    namespace, _, op = qualname.partition("::")
    return namespace, op, "".join(part.capitalize() for part in op.split("_") if part) or "Op"


def default_op_name(problem_path: str | Path) -> str:
    """An op name from the problem's file ("19_ReLU.py" -> "op_19_relu"; "softmax/problem.py" -> "softmax")."""
    path = Path(problem_path)
    stem = path.parent.name if path.stem == "problem" and path.parent.name else path.stem
    name = re.sub(r"[^0-9a-zA-Z]+", "_", stem).strip("_").lower() or "kernel"
    name = f"op_{name}" if name[0].isdigit() else name
    return f"{name}_op" if keyword.iskeyword(name) or name in RESERVED else name


def check_name(qualname: str) -> None:
    """InputError unless `qualname` is NAMESPACE::OP, both Python identifiers."""
    namespace, sep, op = qualname.partition("::")
    if not sep or not all(part.isidentifier() and not keyword.iskeyword(part) for part in (namespace, op)):
        raise InputError(f"--name {qualname!r} is not NAMESPACE::OP (two identifiers, e.g. mylib::softmax)")
    if op in RESERVED or op_names(qualname)[2] in RESERVED:
        raise InputError(f"--name {qualname!r}: {op} is a name the exported module uses itself; pick another")


def check_target(target: str, kernel: str | None, name: str | None) -> Target:
    """What TARGET (and KERNEL) name: a run directory, a suite's out folder, or a problem file and its kernel;
    an InputError saying what is wrong otherwise."""
    path = Path(target).expanduser()
    if path.is_dir():
        if kernel:
            raise InputError(f"{target} is a folder; pass KERNEL only after a problem file (export PROBLEM KERNEL)")
        if (path / "results.json").is_file():
            if name is not None and not name.isidentifier():
                raise InputError(f"--name {name!r}: a suite exports one package, so name its namespace only "
                                 "(an identifier, e.g. myops)")
            return "suite"
        for needed in ("problem.py", "best_kernel.py"):
            if not (path / needed).is_file():
                raise InputError(f"{target} holds no {needed}; pass a run directory whose run found a correct "
                                 "kernel, a suite's out folder, or PROBLEM KERNEL")
        kind: Target = "run"
    elif path.is_file():
        if not kernel:
            raise InputError(f"{target} is a file: pass its kernel too (export PROBLEM KERNEL), or a run directory")
        if not Path(kernel).expanduser().is_file():
            raise InputError(f"kernel file {kernel!r} does not exist; pass the path to a .py file")
        kind = "files"
    else:
        raise InputError(f"{target} does not exist; pass a run directory, a suite's out folder, or PROBLEM KERNEL")
    if name is not None:
        check_name(name)
    return kind
