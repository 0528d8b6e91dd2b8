"""The three ways to export: a run's best kernel, a problem and kernel file, a whole suite."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from kernelopt.export.facts import problem_facts
from kernelopt.export.freeze import autotune_words, frozen_source
from kernelopt.export.names import DEFAULT_NAMESPACE, check_name, default_op_name, op_names
from kernelopt.export.render import Origin, render_init, render_module
from kernelopt.harness.problem import check_kernel_source, read_source
from kernelopt.records import InputError
from kernelopt.report.summary import RunSummary, load_summary

MARK = "Written by `kernelopt export`"  # in every module's docstring: such a file may be written over


def _free(path: Path) -> Path:
    """`path`, or an InputError where a file there was not written by kernelopt export (it is the user's)."""
    if path.exists() and MARK not in path.read_text(errors="replace"):
        raise InputError(f"{path} exists and was not written by kernelopt export; pass another --out, or --name")
    return path


def _write(out_dir: str | Path, module: str, text: str) -> Path:
    folder = Path(out_dir).expanduser()
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--out {out_dir} is a file, not a folder; pass the folder to write the module into")
    folder.mkdir(parents=True, exist_ok=True)
    path = _free(folder / f"{module}.py")
    path.write_text(text)
    return path.resolve()


def render_export(problem_path: str | Path, kernel_path: str | Path, qualname: str | None,
                  origin: Origin | None = None) -> tuple[str, str]:
    """(the op's qualified name, the module's text) for a problem and its kernel."""
    qualname = qualname or f"{DEFAULT_NAMESPACE}::{default_op_name(origin.problem if origin else problem_path)}"
    check_name(qualname)
    problem_source = read_source(problem_path, "problem")
    kernel_source = read_source(kernel_path, "kernel")
    check_kernel_source(kernel_source, Path(kernel_path).name)
    origin = origin or Origin(problem=str(Path(problem_path).resolve()), kernel=str(Path(kernel_path).resolve()))
    kernel_source, frozen = frozen_source(problem_path, kernel_path, kernel_source)
    origin = replace(origin, autotune=frozen or autotune_words(kernel_source))
    facts = problem_facts(problem_path)
    return qualname, render_module(qualname, problem_source, kernel_source, facts, origin)


def export_files(problem: str | Path, kernel: str | Path, qualname: str | None = None,
                 out_dir: str | Path = ".") -> Path:
    """Export a kernel file for a problem file (no run: the docstring has no times); returns the module's path."""
    name, text = render_export(problem, kernel, qualname)
    return _write(out_dir, op_names(name)[1], text)


def _run_origin(run_dir: Path, report: RunSummary) -> Origin:
    return Origin(
        problem=report.problem or str(run_dir / "problem.py"), kernel=str(run_dir / "best_kernel.py"),
        run=f"{run_dir} (best of round {report.best_round}, stopped: {report.stop_reason})",
        gpu=report.gpu if report.is_gpu_time or not report.gpu else
        f"none: a Triton-interpreter run on the CPU (its prompts aimed at {report.gpu})",
        best_ms=report.best_time_ms, eager_ms=report.eager_ms,
        compile_ms=report.compile_ms, is_gpu_time=report.is_gpu_time,
    )


def export_run(run_dir: str | Path, qualname: str | None = None, out_dir: str | Path = ".") -> Path:
    """Export a run's best kernel; returns the module's path."""
    folder = Path(run_dir).expanduser().resolve()
    if not folder.is_dir():
        raise InputError(f"{run_dir} is not a folder; pass the run directory a run printed")
    for needed in ("problem.py", "best_kernel.py"):
        if not (folder / needed).is_file():
            raise InputError(f"{folder} has no {needed}; export a run that found a correct kernel "
                             "(or pass PROBLEM KERNEL)")
    report = load_summary(folder) or RunSummary()
    name, text = render_export(folder / "problem.py", folder / "best_kernel.py", qualname, _run_origin(folder, report))
    return _write(out_dir, op_names(name)[1], text)


def export_suite(suite_out: str | Path, namespace: str | None = None, out_dir: str | Path = ".") -> Path:
    """Export every correct problem of a suite as one package (a module per op); returns the package's folder."""
    folder = Path(suite_out).expanduser().resolve()
    results_path = folder / "results.json"
    if not results_path.is_file():
        raise InputError(f"{folder} holds no results.json; pass the folder a `kernelopt suite` printed")
    data = json.loads(results_path.read_text())
    namespace = namespace or DEFAULT_NAMESPACE
    if not namespace.isidentifier():
        raise InputError(f"--name {namespace!r}: for a suite, name the namespace only (an identifier, e.g. myops)")
    package = Path(out_dir).expanduser() / namespace
    _free(package / "__init__.py")  # before any module is written
    modules: list[tuple[str, str, str]] = []
    skipped: list[str] = []
    for result in data.get("problems", []):
        if result.get("status") != "correct" or not result.get("best_kernel_path"):
            skipped.append(f"{result['name']} ({result.get('status')})")
            continue
        problem, origin = _suite_problem(folder, data, result)
        qualname = f"{namespace}::{default_op_name(result['name'] + '.py')}"
        try:
            name, text = render_export(problem, result["best_kernel_path"], qualname, origin)
        except InputError as err:
            skipped.append(f"{result['name']} ({err})")
            continue
        _, module, cls = op_names(name)
        _write(package, module, text)
        modules.append((result["name"], module, cls))
    if not modules:
        raise InputError(f"no problem of {folder} has a correct kernel to export ({'; '.join(skipped) or 'none'})")
    _write(package, "__init__", render_init(namespace, modules, skipped))
    return package.resolve()


def _suite_problem(folder: Path, data: dict[str, Any], result: dict[str, Any]) -> tuple[Path, Origin]:
    """A suite problem's file (its run's copy where it was optimized) and where its kernel came from."""
    run_dir = Path(result.get("run_dir") or folder / "runs" / result["name"])
    problem = run_dir / "problem.py"
    if not problem.is_file():
        problem = Path(data["suite"]["problems_dir"]) / f"{result['name']}.py"
    return problem, Origin(
        problem=str(Path(data["suite"]["problems_dir"]) / f"{result['name']}.py"),
        kernel=result["best_kernel_path"],
        run=f"{run_dir} (suite {folder}: {result.get('reason')})", gpu=result.get("where"),
        best_ms=result.get("best_ms"), eager_ms=result.get("eager_ms"), compile_ms=result.get("compile_ms"),
        is_gpu_time=bool(result.get("is_gpu_time")),
    )

