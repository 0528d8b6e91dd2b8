"""The compiler seed's sizes specialized at launch (kernel_text._specialized), checked where it matters:
in the code Triton compiles for an H200. Each recorded seed runs under the interpreter at small sizes with
its launches recorded; each launched kernel is then compiled for sm_90 in a child process without the
interpreter (ptxas is in Triton's wheel, no GPU needed) and its PTX searched for integer divisions."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from sm90 import compile_sm90
from test_seed_translate import FIXTURES, _run_both, problem_path, seed_text, shrunk_problem

from kernelopt.harness.sandbox import fingerprint, launches
from kernelopt.seed.kernel_text import standalone
from kernelopt.seed.output_code import parse_output

# the seeds run under the interpreter to record their launches (conftest sets it on a host without a GPU)
pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1",
                                reason="records launches under the interpreter")

INTEGER_DIVISION = re.compile(r"^\s*(?:div|rem)\.[su](?:32|64)\b", re.M)

def _constant(value: object) -> object:
    return f"tl.{value.name}" if hasattr(value, "name") and hasattr(value, "primitive_bitwidth") else value


def divisions_per_kernel(mode: str, name: str, rewrites: tuple[str, ...], tmp_path: Path) -> dict[str, int]:
    """Integer div/rem instructions in the sm_90 PTX of each kernel the seed launches at small sizes."""
    seed = tmp_path / f"seed_{'_'.join(rewrites) or 'as_compiled'}.py"
    seed.write_text(seed_text(mode, name, rewrites=rewrites))
    launches.install()
    recorder = fingerprint.start()
    try:
        _run_both(shrunk_problem(problem_path(name), tmp_path / "problem.py"), seed)
    finally:
        launches.LOG.record = None
    jobs = [(str(seed), fn.__name__, signature, {k: _constant(v) for k, v in fixed.items()})
            for fn, signature, fixed in recorder._to_compile.values()]
    assert jobs, "the seed launched nothing"
    found: dict[str, int] = {}
    for path, kernel, signature, fixed in jobs:
        ptx = compile_sm90(path, kernel, signature, fixed)["ptx"]
        found[kernel] = found.get(kernel, 0) + len(INTEGER_DIVISION.findall(ptx))
    return found


@pytest.mark.parametrize(
    ("mode", "name"),
    [("default", "36_RMSNorm_"), ("max_autotune_triton", "3_Batched_matrix_multiplication")],
)
def test_a_seed_s_kernels_compile_for_the_h200_with_no_division_by_a_run_time_size(
    mode: str, name: str, tmp_path: Path
) -> None:
    compiled = divisions_per_kernel(mode, name, (), tmp_path)
    rewritten = divisions_per_kernel(mode, name, ("specialize",), tmp_path)
    assert compiled.keys() == rewritten.keys()
    assert sum(compiled.values()) > 0  # as the compiler wrote them, the kernels divide by sizes read at run time
    for kernel, count in rewritten.items():
        if kernel.startswith("triton_tem"):  # a GEMM template's grouped order: pid // width, pid % group_size
            assert count <= 2, (kernel, count, compiled[kernel])
        else:
            assert count == 0, (kernel, count, compiled[kernel])


def test_a_specialized_size_keeps_the_type_a_run_time_integer_has(tmp_path: Path) -> None:
    """int32 up to 2**31 - 1 and int64 past it, as Triton types an integer argument: a size's product
    wraps (or not) as it did with dynamic shapes, and `.to(...)` works on it (interpreter)."""
    import torch

    from kernelopt.seed import helpers

    path = tmp_path / "sized.py"
    path.write_text(
        "import triton\nimport triton.language as tl\n\n"
        + helpers.sources_for({"size_value"})
        + "@triton.jit\ndef sized(out_ptr, ks0: tl.constexpr):\n"
        "    ks0 = helper_size_value(ks0)\n"
        "    tl.store(out_ptr, (ks0 * 3).to(tl.float64))\n"
    )
    module = _load_file(path)
    got = {}
    for value in (5, 2**31 - 1, 2**31 + 5):
        out = torch.zeros(1, dtype=torch.float64)
        module.sized[(1,)](out, value)
        got[value] = out.item()
    assert got == {5: 15.0, 2**31 - 1: float((2**31 - 1) * 3 - 2**32), 2**31 + 5: float((2**31 + 5) * 3)}


def _load_file(path: Path) -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernels(mode: str, name: str) -> dict:
    record = json.loads((FIXTURES / mode / f"{name}.json").read_text())
    return parse_output(record["codes"][0]).kernels


def test_only_the_size_parameters_are_specialized_at_the_body_s_own_indentation() -> None:
    kernels = _kernels("default", "36_RMSNorm_")
    reduction = next(k for name, k in kernels.items() if name.startswith("triton_red"))
    made = standalone(reduction, ("specialize",)).source
    signature = next(line for line in made.splitlines() if line.startswith("def triton_red"))
    assert "in_ptr0, out_ptr0" in signature and "in_ptr0: tl.constexpr" not in signature
    assert "xnumel: tl.constexpr" in signature and "r0_numel: tl.constexpr" in signature
    assert "XBLOCK: tl.constexpr" in signature and signature.count("XBLOCK") == 1  # a knob stays a knob
    body = made.splitlines()[made.splitlines().index(signature) + 1:]
    first_statement = next(line for line in body if not line.lstrip().startswith("xnumel = helper")
                           and "= helper_size_value(" not in line)
    indent = first_statement[: len(first_statement) - len(first_statement.lstrip())]
    assert f"{indent}xnumel = helper_size_value(xnumel)" in body
    assert standalone(reduction, ()).source.count("helper_size_value") == 0  # as the compiler wrote it
    assert "helper_size_value" not in standalone(reduction, ()).helpers


@pytest.mark.parametrize("params", ["in_ptr0, out_ptr0, XBLOCK: tl.constexpr",
                                    "in_ptr0, out_ptr0, xnumel: tl.constexpr, XBLOCK: tl.constexpr"])
def test_a_kernel_without_run_time_sizes_is_left_as_it_is(params: str) -> None:
    """No size parameter, or one the compiler already made constexpr: nothing to specialize, no helper."""
    from kernelopt.seed.output_code import InductorKernel

    source = (f"@triton.jit\ndef triton_poi_copy_0({params}):\n    x = tl.arange(0, XBLOCK)\n"
              "    tl.store(out_ptr0 + x, tl.load(in_ptr0 + x))\n")
    names = tuple(p.split(":")[0].strip() for p in params.split(","))
    kernel = InductorKernel("triton_poi_copy_0", source, "pointwise", "Grid1D", names,
                            tuple(n for n, p in zip(names, params.split(","), strict=True) if "constexpr" in p))
    made = standalone(kernel, ("specialize",))
    assert made.source == standalone(kernel, ()).source and "size_value" not in made.helpers
    assert made.source.count("constexpr") == params.count("constexpr")


def _ptx(seed: Path, kernel: str, pointers: int, each_sizes: list[dict[str, int]]) -> list[str]:
    """`kernel`'s sm_90 PTX at each of `each_sizes` (its constexprs), its first `pointers` parameters fp32
    pointers: one child process, without the interpreter."""
    names = getattr(_load_file(seed), kernel).arg_names
    signature = {name: "*fp32" if n < pointers else "constexpr" for n, name in enumerate(names)}
    return [compile_sm90(seed, kernel, signature, sizes)["ptx"] for sizes in each_sizes]


def test_a_bounds_mask_the_launch_size_makes_all_true_is_compiled_away(tmp_path: Path) -> None:
    """35_GroupNorm_'s statistics kernel for sm_90: at KernelBench's size (2,097,152 values a group, a multiple
    of R0_BLOCK) its loads are not predicated and its Welford `tl.where`s fold away, as in the compiler's
    own static kernel; one value fewer and the masks are back."""
    seed = tmp_path / "seed.py"
    seed.write_text(seed_text("default", "35_GroupNorm_"))
    kernel = "triton_red_fused_native_group_norm_0"
    sizes = {"ks0": 262144, "xnumel": 896, "r0_numel": 2097152, "XBLOCK": 1, "R0_BLOCK": 2048}
    even, odd = _ptx(seed, kernel, 4, [sizes, {**sizes, "r0_numel": 2097151}])

    def count(pattern: str, ptx: str) -> int:
        return len(re.findall(pattern, ptx, re.M))

    predicated, plain = r"^\s*@%p\d+ ld\.global", r"^\s*ld\.global"
    assert count(predicated, even) == 0 and count(plain, even) > 0
    assert count(predicated, odd) > 0 and count(r"^\s*selp", even) < count(r"^\s*selp", odd)


@pytest.mark.parametrize("dims", [(4, 4), (3, 3)])  # sizes that are multiples of the blocks, and sizes that are not
def test_a_seed_with_its_masks_decided_at_launch_computes_the_reference(dims: tuple[int, int], tmp_path: Path) -> None:
    import torch

    from kernelopt.offline.tuner import with_config

    seed = tmp_path / "seed.py"
    seed.write_text(with_config(seed_text("default", "35_GroupNorm_"), {"R0_BLOCK": 64}))
    problem = tmp_path / "group_norm.py"
    text = problem_path("35_GroupNorm_").read_text()
    for name, value in (("batch_size", 1), ("dim1", dims[0]), ("dim2", dims[1])):
        text = re.sub(rf"^{name} = \d+$", f"{name} = {value}", text, flags=re.M)
    problem.write_text(text)
    expected, got = _run_both(problem, seed)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
