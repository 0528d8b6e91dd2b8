"""Loading KernelBench-format problem and kernel files, with one clear line for bad input."""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from kernelopt.records import InputError
from kernelopt.syntax import parse

PROBLEM_NAMES = ("Model", "get_inputs", "get_init_inputs")
KERNEL_FORMAT = (
    "kernel files define class ModelNew(nn.Module) with Model's constructor arguments, "
    "whose forward launches @triton.jit kernels"
)
PROBLEM_FORMAT = "KernelBench problems define Model, get_inputs, get_init_inputs"


def _parse(source: str, filename: str) -> ast.Module:
    try:
        return parse(source, filename=filename)
    except SyntaxError as err:
        raise InputError(f"{filename}:{err.lineno}: syntax error: {err.msg}; fix the file and run again") from None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def check_problem_source(source: str, filename: str = "problem.py") -> None:
    """Raise InputError unless `source` is a KernelBench problem (Model, get_inputs, ...)."""
    names = _top_level_names(_parse(source, filename))
    for required in PROBLEM_NAMES:
        if required not in names:
            what = "class Model" if required == "Model" else f"{required}()"
            raise InputError(f"{filename} has no {what}; {PROBLEM_FORMAT}")


def check_kernel_source(source: str, filename: str = "kernel.py") -> None:
    """Raise InputError unless `source` parses and defines class ModelNew."""
    tree = _parse(source, filename)
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    if "ModelNew" not in classes:
        found = f"defines {', '.join('class ' + c for c in classes)}" if classes else "has no class"
        raise InputError(f"{filename} {found}, not ModelNew; {KERNEL_FORMAT}")


def read_source(path: str | Path, what: str) -> str:
    """The text of a user-given file, or InputError saying it is missing or unreadable."""
    file = Path(path)
    if file.is_dir():
        raise InputError(f"{what} file {str(path)!r} is a folder; pass the path to a .py file")
    if not file.is_file():
        raise InputError(f"{what} file {str(path)!r} does not exist; pass the path to a .py file")
    try:
        return file.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read {what} file {str(path)!r}: {err}") from None


def source_hash(source: str) -> str:
    """A short hash of a source with comments, blank lines and trailing spaces removed."""
    lines = []
    for line in source.splitlines():
        stripped = re.sub(r"\s+$", "", re.sub(r"(^|\s)#.*$", "", line))
        if stripped:
            lines.append(stripped)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def import_file(path: str | Path, module_name: str) -> ModuleType:
    """Import a Python file as a fresh module registered under `module_name`, compiled from the text the file holds
    now: never from a cached `__pycache__` file, and writing none. Python trusts a cached file whose source has the
    same size and modification second, so a kernel rewritten within a second at its old length would otherwise run
    as it was, not as the checks read it; and a user's kernel folder gets no `__pycache__` from a verification."""
    spec = importlib.util.spec_from_file_location(module_name, str(path))
    if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
        raise InputError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    code = spec.loader.source_to_code(spec.loader.get_data(str(path)), str(path))
    exec(code, module.__dict__)  # noqa: S102 - the module's own code, as SourceFileLoader.exec_module runs it
    return module


def load_problem(path: str | Path) -> ModuleType:
    """Import a problem file after checking it has Model, get_inputs, get_init_inputs."""
    check_problem_source(read_source(path, "problem"), Path(path).name)
    module = import_file(path, "kernelopt_problem")
    for required in PROBLEM_NAMES:
        if not callable(getattr(module, required, None)):
            raise InputError(f"{Path(path).name}: {required} is not callable; {PROBLEM_FORMAT}")
    return module


def checked_sources(
    problem: str, kernel: str | None, problem_name: str = "problem.py", kernel_name: str = "kernel.py"
) -> tuple[str, str | None]:
    """A problem's source and a starting kernel's (or None), each checked, named by its file in
    any error (the CLI and the setup node take their input through here)."""
    check_problem_source(problem, problem_name)
    if kernel:
        check_kernel_source(kernel, kernel_name)
    return problem, kernel or None
