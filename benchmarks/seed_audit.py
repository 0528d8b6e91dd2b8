"""The compiler seed's translator on problems nobody wrote it for, on a machine without a GPU.

Each problem is shrunk (kernelbench/shrink.py: its module-level sizes made small), its Triton recorded through
Inductor's backend for CPU tensors (tests/fixtures/inductor/cpu_made/record_cpu.py: the torch installed here, code
only), translated into a seed file each way its lifted numbers may read (`writer.binding_choices`), and run under
Triton's interpreter against the reference, as the seed's own check does on a GPU (within 1e-3). A GPU's output
differs (its GEMM templates, its autotuner's picks), so a problem that passes here may still fail there; one that
fails here shows a translator fault without spending device time.

    TRITON_INTERPRET=1 python benchmarks/seed_audit.py PROBLEM_OR_DIR [...] [--timeout 300] [--jobs 2] [--tiny] [--even]

--tiny also cuts the sizes the shrink keeps (64 and under) where their names say they are a batch or a spatial
extent (`batch_size`, `depth, height, width`, `D, H, W`, `length`): a level-2 convolution's epilogue kernels over
(3, 16, 14, 30, 30) ran past 240 s under the interpreter, at (2, 16, 2, 6, 6) in seconds. A size so small that a
problem's own pooling or kernel leaves nothing fails at `record` (its fake-tensor run says so).

--even makes every large size 48, not the shrink's odd 37, 45, ...: a module that checks a divisibility in its
constructor (a GroupNorm's groups, an attention's heads, a ShuffleNet's channels by 4) raised on the odd ones.

One line a problem, `ok` or the stage that failed (record, translate, run, compare) with its first line of error.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _outputs(value: Any) -> list[Any]:
    return list(value) if isinstance(value, tuple | list) else [value]


def interpretable_libdevice() -> None:
    """libdevice's elementwise functions the compiler writes (tanh, log1p, pow, ...) made to run under Triton's
    interpreter, which knows none of them, as numpy's: for this audit only (a seed on a GPU keeps libdevice)."""
    import numpy as np
    from triton.language import core
    from triton.language.extra import libdevice
    from triton.runtime.interpreter import TensorHandle

    def made(fn: Any) -> Any:
        def call(*args: Any, _semantic: Any = None, **_: Any) -> Any:
            tensors = [a for a in args if isinstance(a, core.tensor)]
            values = [a.handle.data if isinstance(a, core.tensor) else a for a in args]
            out = np.asarray(fn(*values)).astype(tensors[0].handle.data.dtype)
            return core.tensor(TensorHandle(out, tensors[0].handle.dtype), tensors[0].type)
        return call

    unary = {"tanh": np.tanh, "log1p": np.log1p, "expm1": np.expm1, "sinh": np.sinh, "cosh": np.cosh,
             "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
             "acosh": np.arccosh, "atanh": np.arctanh, "trunc": np.trunc, "nearbyint": np.rint, "round": np.round,
             "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "erf": None,
             "isinf": np.isinf, "isnan": np.isnan, "signbit": np.signbit, "abs": np.abs, "log10": np.log10}
    binary = {"pow": np.power, "fmod": np.fmod, "atan2": np.arctan2, "copysign": np.copysign,
              "nextafter": np.nextafter, "hypot": np.hypot}
    for name, fn in {**unary, **binary}.items():
        if fn is not None and hasattr(libdevice, name):
            setattr(libdevice, name, made(fn))
    if hasattr(libdevice, "erf"):
        import math
        libdevice.erf = made(np.vectorize(math.erf))


# a name whose sizes --tiny cuts: a batch or a spatial extent (the channels and kernel sizes stay as they are); `dim1`,
# `dim2`, ...: a 3-D pool's extents, a reduction's row and column (under the interpreter at 37^3 x 32 channels: 400 s);
# `height_in`, ...: a convolution's input extents
TINY_NAMES = re.compile(r"^(batch_size|batch|depth|height|width|length|seq_len|D|H|W|L|dim\d+)(_in)?$")
TINY_SIZES = {"batch_size": 2, "batch": 2}  # every other name: 8 (a 3-wide kernel, two 2-wide pools: 1 left)


def tiny_source(text: str) -> str:
    """A problem's module-level batch and spatial sizes cut to a few (`D, H, W = 16, 32, 32` -> `8, 8, 8`), each
    only where it is larger; everything else as written."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    for node in reversed(tree.body):  # from the bottom up, and right to left on a line (`d = 16; h = w = 64`)
        if not (isinstance(node, ast.Assign) and node.end_lineno == node.lineno):
            continue
        value = node.value
        if len(node.targets) > 1:  # `height = width = 64`: one value for every name
            names: list[ast.expr] = list(node.targets)
            values = [value] * len(names)
        else:
            target = node.targets[0]
            names = [target] if isinstance(target, ast.Name) else list(getattr(target, "elts", []))
            values = [value] if isinstance(target, ast.Name) else list(getattr(value, "elts", []))
        if len(names) != len(values) or not names or not all(isinstance(n, ast.Name) for n in names):
            continue
        if not all(TINY_NAMES.match(n.id) for n in names):  # type: ignore[attr-defined]
            continue
        if not all(isinstance(v, ast.Constant) and type(v.value) is int for v in values):
            continue
        cut = [min(v.value, TINY_SIZES.get(n.id, 8)) for n, v in zip(names, values, strict=True)]  # type: ignore
        if len(node.targets) > 1:
            written = " = ".join(n.id for n in names) + f" = {min(cut)}"  # type: ignore[attr-defined]
        else:
            written = f"{ast.get_source_segment(text, node.targets[0])} = {', '.join(map(str, cut))}"
        line = lines[node.lineno - 1]
        lines[node.lineno - 1] = line[:node.col_offset] + written + line[node.end_col_offset:]
    return "".join(lines)


# --even: every large size becomes this one value, divisible by the counts a module checks (a GroupNorm's groups, an
# attention's heads, a ShuffleNet's 4): the odd sizes the shrink gives broke their constructors' asserts
EVEN_SIZE = 48


def audit_one(problem: Path, folder: Path, tiny: bool = False, even: bool = False,
              fuse: bool = False) -> dict[str, Any]:
    """One problem's verdict: {"stage": "ok"} or the stage that failed and why; with `fuse`, also the seed with
    its convolution's epilogue fused (fuse.conv_epilogue or fuse.conv_rows) run and compared the same way ("fused")."""
    import torch

    sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "inductor" / "cpu_made"))
    import record_cpu

    from kernelopt.harness.problem import import_file
    from kernelopt.seed.bindings import trace_bindings
    from kernelopt.seed.configs import untuned
    from kernelopt.seed.output_code import parse_output
    from kernelopt.seed.writer import SeedSource, binding_choices, write_seed

    interpretable_libdevice()
    small = shrunk_copy(problem, folder, tiny, even)
    record = record_cpu.record(small)
    if record["error"] or not record["codes"]:
        return {"stage": "record", "error": record["error"] or "no output module"}
    code = record["codes"][0]
    reference = import_file(small, "audited_problem")
    torch.manual_seed(0)
    model = reference.Model(*reference.get_init_inputs())
    torch.manual_seed(1)
    inputs = reference.get_inputs()
    try:
        bindings = trace_bindings(model, inputs, duck_shape=False)
        choices = binding_choices(bindings, len(parse_output(code).arg_names)) or [bindings]
    except Exception as err:  # noqa: BLE001  (any failure is the verdict)
        return {"stage": "translate", "error": f"{type(err).__name__}: {str(err).strip()[:240]}"}
    with torch.no_grad():
        out = model(*inputs)
    want, returns_tuple = _outputs(out), isinstance(out, tuple | list)
    failure: dict[str, Any] = {}
    for number, choice in enumerate(choices):
        stage = "translate"
        try:
            text = write_seed(SeedSource(problem.name, small.read_text(), code, untuned(parse_output(code)),
                                         choice, len(want), returns_tuple))
            seed_file = folder / f"seed_{number}.py"
            seed_file.write_text(text)
            stage = "run"
            seed = import_file(seed_file, f"audited_seed_{number}")
            torch.manual_seed(0)
            candidate = seed.ModelNew(*reference.get_init_inputs())
            with torch.no_grad():
                got = _outputs(candidate(*inputs))
            stage = "compare"
            if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want, strict=False)):
                raise ValueError(f"outputs of shapes {[tuple(g.shape) for g in got]}, the reference's "
                                 f"{[tuple(w.shape) for w in want]}")
            worst = max((float((g.double() - w.double()).abs().max()) for g, w in zip(got, want, strict=True)
                         if w.numel()), default=0.0)
            if not all(torch.allclose(g.double(), w.double(), rtol=1e-3, atol=1e-3, equal_nan=True)
                       for g, w in zip(got, want, strict=True)):
                raise ValueError(f"outputs differ (largest difference {worst:.3g})")
            verdict = {"stage": "ok", "reading": number, "kernels": len(parse_output(code).kernels)}
            if fuse:
                verdict["fused"] = _fused(text, folder / f"fused_{number}.py", reference, inputs, want)
            return verdict
        except Exception as err:  # noqa: BLE001
            failure = failure or {"stage": stage, "error": f"{type(err).__name__}: {str(err).strip()[:240]}"}
    return failure


def _fused(text: str, path: Path, reference: Any, inputs: list[Any], want: list[Any]) -> str:
    """The seed with its convolution's epilogue fused (a pointwise kernel, else a reduction over its channels), run
    on the inputs: "ok (MOVE)", "no: why neither fuses", or its fault."""
    import torch

    from kernelopt.harness.problem import import_file
    from kernelopt.offline.moves import conv_epilogue, conv_reduce

    reasons = []
    for module in (conv_epilogue, conv_reduce):
        try:
            path.write_text(module.rewrite(text))
            break
        except conv_epilogue.NotFused as why:
            reasons.append(f"{module.NAME}: {why}")
    else:
        return "no: " + "; ".join(reasons)
    from kernelopt.harness.guards import check_kernel_source

    refused = check_kernel_source(path.read_text())  # the verifier's guards first (session 54's H100 found them
    if refused:  # refusing a fused kernel this audit had called ok)
        return f"refused ({module.NAME}): {refused[0].rule}: {refused[0].message[:200]}"
    try:
        torch.manual_seed(0)
        candidate = import_file(path, f"audited_{path.stem}").ModelNew(*reference.get_init_inputs())
        with torch.no_grad():
            got = _outputs(candidate(*inputs))
    except Exception as err:  # noqa: BLE001
        return f"crash ({module.NAME}): {type(err).__name__}: {str(err).strip()[:200]}"
    if all(torch.allclose(g.double(), w.double(), rtol=1e-3, atol=1e-3, equal_nan=True)
           for g, w in zip(got, want, strict=True)):
        return f"ok ({module.NAME})"
    return f"wrong ({module.NAME}): outputs differ"


def child(script: str, problem: str, timeout: float, flags: list[str]) -> dict[str, Any]:
    """`script --one PROBLEM FOLDER FLAGS` in a process of its own: its last JSON line, or why it gave none."""
    with tempfile.TemporaryDirectory() as folder:
        try:
            proc = subprocess.run([sys.executable, script, "--one", problem, folder, *flags],
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"stage": "timeout", "error": f"over {timeout:g} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"stage": "crash", "error": tail[:240]}
    return json.loads(lines[-1])


def audit_parser(doc: str) -> argparse.ArgumentParser:
    """The options every audit here takes (problems or folders, a time limit each, jobs, the shrink's kind)."""
    args = argparse.ArgumentParser(description=doc.splitlines()[0])
    args.add_argument("problems", nargs="+")
    args.add_argument("--timeout", type=float, default=300)
    args.add_argument("--jobs", type=int, default=2)
    args.add_argument("--tiny", action="store_true", help="batch and spatial sizes cut to a few (see above)")
    args.add_argument("--even", action="store_true", help=f"every large size {EVEN_SIZE}, not the shrink's odd ones")
    args.add_argument("--fuse", action="store_true", help="seed_audit: the epilogue fused too")
    args.add_argument("--only", default="", help="moves_audit: only the moves whose name holds this text")
    args.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    return args


def shrunk_copy(problem: Path, folder: Path, tiny: bool, even: bool) -> Path:
    """The problem shrunk (kernelbench/shrink.py, then --tiny or --even) as a file in `folder`."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "kernelbench"))
    import shrink

    small = folder / problem.name
    text = tiny_source(problem.read_text()) if tiny else problem.read_text()
    small.write_text(shrink.shrink_source(text, (EVEN_SIZE,)) if even else shrink.shrink_source(text))
    return small


def drive(parsed: argparse.Namespace, script: str, line: Any) -> int:
    """Each problem (folders in their numbers' order) in a child of `script`, `jobs` at once; one printed line
    each (`line(verdict)`: what follows the problem's name), then the count of each stage."""
    files: list[Path] = []
    for name in map(Path, parsed.problems):
        number = lambda p: (len(p.name.split("_")[0]), p.name)  # noqa: E731  (1_, 2_, ... 10_ in order)
        files += sorted(name.glob("*.py"), key=number) if name.is_dir() else [name]
    counts: dict[str, int] = {}
    with ThreadPoolExecutor(parsed.jobs) as pool:
        flags = [*(["--tiny"] if parsed.tiny else []), *(["--even"] if parsed.even else []),
                 *(["--fuse"] if getattr(parsed, "fuse", False) else []),
                 *(["--only", parsed.only] if parsed.only else [])]
        verdicts = pool.map(lambda p: child(script, str(p), parsed.timeout, flags), files)
        for path, verdict in zip(files, verdicts, strict=True):
            counts[verdict["stage"]] = counts.get(verdict["stage"], 0) + 1
            print(f"{path.stem[:48]:50s} {line(verdict)}", flush=True)
    print(json.dumps(counts))
    return 0


def main(argv: list[str] | None = None) -> int:
    parsed = audit_parser(__doc__ or "").parse_args(argv)
    if parsed.one:  # the child: one problem, its verdict as the last line
        verdict = audit_one(Path(parsed.problems[0]), Path(parsed.problems[1]), parsed.tiny, parsed.even, parsed.fuse)
        print(json.dumps(verdict), flush=True)
        return 0
    return drive(parsed, __file__, lambda verdict: f"{verdict['stage']:9s} {verdict.get('error', '')}"
                 + (f" fused: {verdict['fused']}" if "fused" in verdict else ""))


if __name__ == "__main__":
    sys.exit(main())
