"""`kernelopt export` on the CPU: the written module's op under the interpreter, in eager, opcheck and
torch.compile, its drop-in Model's state_dict, the reference's backward, and its refusals."""

from __future__ import annotations

import importlib
import itertools
import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
import torch
from helpers import DATA, EXAMPLES

from kernelopt.export.writer import export_files, export_run, export_suite
from kernelopt.harness.problem import import_file
from kernelopt.records import InputError

EXPORT = DATA / "export"
_namespaces = itertools.count()


def _export(tmp_path: Path, problem: Path, kernel: Path, op: str) -> tuple[ModuleType, str]:
    """The exported module, imported; its op is registered under a namespace of its own (ops are process-wide)."""
    namespace = f"t{next(_namespaces)}"
    path = export_files(problem, kernel, f"{namespace}::{op}", tmp_path)
    return import_file(path, f"exported_{namespace}_{op}"), namespace


@pytest.fixture(scope="module")
def linear(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    module, _ = _export(tmp_path_factory.mktemp("linear"), EXPORT / "linear_problem.py", EXPORT / "linear_kernel.py",
                        "linear")
    return module


def _pair(module: ModuleType) -> tuple[torch.nn.Module, torch.nn.Module]:
    """A reference Model and the drop-in built with the same weights."""
    torch.manual_seed(0)
    reference = module._reference.Model(32, 16)
    dropin = module.Linear(32, 16)
    dropin.load_state_dict(reference.state_dict(), strict=True)
    return reference, dropin


def test_the_drop_in_has_the_models_constructor_and_state_dict_and_its_answers(linear):
    reference, dropin = _pair(linear)
    assert list(dropin.state_dict()) == list(reference.state_dict()) == ["linear.weight", "linear.bias"]
    x = torch.randn(8, 32)
    torch.testing.assert_close(dropin(x), reference(x), atol=1e-5, rtol=1e-5)
    # a size the run did not verify is checked against the reference once, then runs
    x5 = torch.randn(5, 32)
    torch.testing.assert_close(dropin(x5), reference(x5), atol=1e-5, rtol=1e-5)
    assert [v for k, v in linear.SPEC.checked.items() if "(5, 32)" in k] == [None]


def test_opcheck_passes_with_inputs_and_weights_that_want_gradients(linear):
    _, dropin = _pair(linear)
    state = [t.detach().clone().requires_grad_() for t in dropin.state_dict().values()]
    torch.library.opcheck(linear.linear, (torch.randn(8, 32, requires_grad=True), state, dropin.kernelopt_init))
    torch.library.opcheck(linear.linear, (torch.randn(8, 32), [t.detach() for t in state], dropin.kernelopt_init))


def test_backward_is_the_references_for_the_input_and_the_weights(linear):
    reference, dropin = _pair(linear)
    x = torch.randn(8, 32)
    grads = []
    for model in (reference, dropin):
        given = x.clone().requires_grad_()
        model.zero_grad()
        (model(given) ** 2).sum().backward()
        grads.append([given.grad, model.linear.weight.grad, model.linear.bias.grad])
    for want, got in zip(*grads, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_compiled_with_fullgraph_the_op_is_one_node_and_the_weights_are_its_inputs(linear):
    reference, dropin = _pair(linear)
    graphs = []

    def record(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> object:
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(dropin, fullgraph=True, backend=record)
    x = torch.randn(8, 32)
    torch.testing.assert_close(compiled(x), reference(x), atol=1e-5, rtol=1e-5)
    op = getattr(torch.ops, linear.SPEC.name.split("::")[0]).linear.default
    assert [n.target for n in graphs[0].graph.nodes if n.op == "call_function"] == [op]
    with torch.no_grad():  # new weights reach the compiled model: they are inputs, not constants
        reference.linear.weight.mul_(-2)
    dropin.load_state_dict(reference.state_dict())
    torch.testing.assert_close(compiled(x), reference(x), atol=1e-5, rtol=1e-5)


def test_compiled_training_step_matches_the_reference(linear):
    reference, dropin = _pair(linear)
    compiled = torch.compile(dropin, fullgraph=True, backend="aot_eager")
    x = torch.randn(8, 32, requires_grad=True)
    compiled(x).sum().backward()
    want = x.detach().clone().requires_grad_()
    reference(want).sum().backward()
    torch.testing.assert_close(x.grad, want.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dropin.linear.weight.grad, reference.linear.weight.grad, atol=1e-5, rtol=1e-5)


def test_softmax_example_compiles_with_inductor_and_trains(tmp_path):
    module, _ = _export(tmp_path, EXAMPLES / "softmax" / "problem.py", EXAMPLES / "softmax" / "kernel.py", "softmax")
    compiled = torch.compile(module.Softmax(), fullgraph=True)
    x = torch.randn(64, 512, requires_grad=True)
    out = compiled(x)
    torch.testing.assert_close(out, torch.softmax(x, -1), atol=1e-6, rtol=1e-5)
    (out * torch.arange(512.0)).sum().backward()
    want = x.detach().clone().requires_grad_()
    (torch.softmax(want, -1) * torch.arange(512.0)).sum().backward()
    torch.testing.assert_close(x.grad, want.grad, atol=1e-5, rtol=1e-4)


def test_a_reference_without_backward_says_so_when_backward_is_asked(tmp_path):
    module, _ = _export(tmp_path, EXPORT / "quantize_problem.py", EXPORT / "quantize_kernel.py", "quantize")
    assert "Backward: none" in module.__doc__
    x = torch.randn(300, requires_grad=True)
    out = module.Quantize()(x)  # the forward is fine
    assert torch.equal(out, torch.round(x.detach() * 4) / 4)
    with pytest.raises(RuntimeError, match="has no backward: the problem's reference Model gives no gradient"):
        out.sum().backward()


def test_other_dtypes_devices_and_wrong_sizes_are_refused_not_answered(tmp_path, monkeypatch):
    module, _ = _export(tmp_path, EXPORT / "argmax_problem.py", EXPORT / "argmax_kernel.py", "argmax")
    model = module.Argmax()
    x = torch.randn(4, 64)
    assert torch.equal(model(x), torch.argmax(x, 1))
    with pytest.raises(ValueError, match="x is torch.float64, but the kernel was verified on float32 only"):
        model(x.double())
    # the kernel reads at most 64 columns: at 100 the first call compares with the reference and refuses
    wide = torch.randn(4, 100)
    wide[:, 80] = 100.0
    for _ in range(2):  # and keeps refusing
        with pytest.raises(ValueError, match=r"the kernel is wrong at sizes .*\(4, 100\)"):
            model(wide)
    narrow = torch.randn(6, 50)
    assert torch.equal(model(narrow), torch.argmax(narrow, 1))
    # strided input: made contiguous before the kernel, so the answer is right
    assert torch.equal(model(x.t().contiguous().t()), torch.argmax(x, 1))
    monkeypatch.delenv("TRITON_INTERPRET")
    with pytest.raises(ValueError, match="the Triton kernel runs on a CUDA device"):
        model(x)


def test_the_docstring_says_where_the_kernel_came_from(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "problem.py").write_text((EXPORT / "linear_problem.py").read_text())
    (run / "best_kernel.py").write_text((EXPORT / "linear_kernel.py").read_text())
    (run / "report.json").write_text(json.dumps({
        "problem": "/home/me/problems/linear.py", "gpu": "H200", "best_time_ms": 0.05, "eager_ms": 0.1,
        "compile_ms": 0.075, "is_gpu_time": True, "best_round": 3, "stop_reason": "no gain for 2 rounds"}))
    path = export_run(run, "t_doc::linear_op", tmp_path / "out")
    doc = import_file(path, "exported_doc").__doc__
    assert path.name == "linear_op.py"
    assert "Problem: /home/me/problems/linear.py" in doc and "GPU: H200" in doc
    assert "kernel 0.0500 ms; eager 0.1000 ms (speedup 2.00x)" in doc
    assert "torch.compile 0.0750 ms (speedup 1.50x)" in doc
    assert f"Run: {run.resolve()} (best of round 3, stopped: no gain for 2 rounds)" in doc
    assert "constructor arguments (32, 16)" in doc and "- x float32 (8, 32)" in doc
    assert "Backward: the kernel is forward-only; backward runs the problem's reference Model" in doc


def test_a_kernel_whose_state_differs_from_the_models_is_refused_by_name(tmp_path):
    kernel = tmp_path / "renamed_kernel.py"
    kernel.write_text((EXPORT / "linear_kernel.py").read_text().replace("self.linear", "self.proj"))
    module, _ = _export(tmp_path, EXPORT / "linear_problem.py", kernel, "renamed")
    with pytest.raises(TypeError, match=r"ModelNew holds \['proj.bias', 'proj.weight'\], the problem's Model"):
        module.Renamed(32, 16)(torch.randn(8, 32))


def test_a_suite_exports_one_package_with_an_op_per_correct_problem(tmp_path, monkeypatch):
    suite = DATA / "suite"
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "1_Add.py").write_text((suite / "kernels" / "1_Add.py").read_text())
    (kernels / "2_Scale.py").write_text((suite / "kernels" / "2_Scale.py").read_text().replace("2 * tl", "3 * tl"))
    problems = [{"name": name, "status": status, "reason": "ok", "run_dir": str(tmp_path / "out" / "runs" / name),
                 "best_kernel_path": str(kernels / f"{name}.py") if status == "correct" else None,
                 "best_ms": 0.01, "eager_ms": 0.02, "is_gpu_time": False}
                for name, status in (("1_Add", "correct"), ("2_Scale", "correct"), ("5_BadMatmul", "rejected"))]
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.json").write_text(json.dumps(
        {"suite": {"problems_dir": str(suite / "problems")}, "problems": problems}))
    package = export_suite(tmp_path / "out", "t_suite_ops", tmp_path / "lib")
    assert sorted(p.name for p in package.glob("*.py")) == ["__init__.py", "op_1_add.py", "op_2_scale.py"]
    assert "Not exported: 5_BadMatmul (rejected)" in (package / "__init__.py").read_text()
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    ops = importlib.import_module("t_suite_ops")
    assert ops.__all__ == ["Op1Add", "Op2Scale"]
    x, y = torch.randn(1024), torch.randn(1024)
    torch.testing.assert_close(ops.Op2Scale()(x), 3 * x)
    torch.testing.assert_close(ops.Op1Add()(x, y), x + 2 * y)
    assert "kernel 0.0100 ms; eager 0.0200 ms" in ops.op_2_scale.__doc__


def test_bad_targets_are_one_clear_line(tmp_path):
    with pytest.raises(InputError, match="holds no results.json"):
        export_suite(tmp_path)
    (tmp_path / "problem.py").write_text((EXPORT / "linear_problem.py").read_text())
    with pytest.raises(InputError, match="has no best_kernel.py; export a run that found a correct kernel"):
        export_run(tmp_path)
    with pytest.raises(InputError, match=r"not NAMESPACE::OP"):
        export_files(EXPORT / "linear_problem.py", EXPORT / "linear_kernel.py", "no_namespace", tmp_path)


def test_autotune_is_said_frozen_or_not(tmp_path):
    tuned = EXPORT / "swish_autotune.py"
    module, _ = _export(tmp_path, EXAMPLES / "swish" / "problem.py", tuned, "swish_tuned")
    # no GPU here to pick the winner on (and under the interpreter autotune cannot time its configs)
    assert "Autotune: NOT frozen: the kernel lists 2 triton.Configs" in module.__doc__
    single = tmp_path / "single.py"
    single.write_text(tuned.read_text().replace('        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),\n', ""))
    module, _ = _export(tmp_path, EXAMPLES / "swish" / "problem.py", single, "swish_single")
    assert "Autotune: frozen: a single triton.Config" in module.__doc__
    x = torch.randn(1000)
    torch.testing.assert_close(module.SwishSingle()(x), x * torch.sigmoid(x))


def test_two_outputs_are_a_tuple_in_eager_opcheck_compile_and_backward(tmp_path):
    module, _ = _export(tmp_path, EXPORT / "minmax_problem.py", EXPORT / "minmax_kernel.py", "minmax")
    model = module.Minmax()
    x = torch.randn(6, 48, requires_grad=True)
    low, high = torch.compile(model, fullgraph=True, backend="aot_eager")(x)
    assert torch.equal(low, x.amin(1)) and torch.equal(high, x.amax(1))
    (low.sum() + 2 * high.sum()).backward()
    want = x.detach().clone().requires_grad_()
    (want.amin(1).sum() + 2 * want.amax(1).sum()).backward()
    torch.testing.assert_close(x.grad, want.grad)
    torch.library.opcheck(module.minmax, (torch.randn(6, 48, requires_grad=True), [], model.kernelopt_init))


def test_the_written_module_is_lint_clean(tmp_path):
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    path = export_files(EXPORT / "linear_problem.py", EXPORT / "linear_kernel.py", "t_lint::linear", tmp_path)
    rules = ["--isolated", "--select", "E,F,W,I,B,UP", "--line-length", "120"]  # the project's own
    proc = subprocess.run([ruff, "check", *rules, str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_a_model_that_differs_in_eval_is_refused_there_and_its_buffers_stay_the_callers(tmp_path):
    module, _ = _export(tmp_path, EXPORT / "batchnorm_problem.py", EXPORT / "batchnorm_kernel.py", "batchnorm")
    assert "training mode only: eval() raises" in module.__doc__
    reference = module._reference.Model(8)
    model = module.Batchnorm(8)
    model.load_state_dict(reference.state_dict(), strict=True)
    assert "bn.running_mean" in model.state_dict() and "bn.num_batches_tracked" in model.state_dict()
    x = torch.randn(16, 8, requires_grad=True)
    out = model(x)
    out.pow(2).sum().backward()  # the backward runs the reference again: its buffers' updates are its own
    want = x.detach().clone().requires_grad_()
    expected = reference(want)
    expected.pow(2).sum().backward()
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x.grad, want.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.bn.weight.grad, reference.bn.weight.grad, atol=1e-5, rtol=1e-5)
    assert torch.equal(model.bn.running_mean, torch.zeros(8))
    # its first use under fake tensors builds the reference's BatchNorm outside them
    fresh, _ = _export(tmp_path / "fresh", EXPORT / "batchnorm_problem.py", EXPORT / "batchnorm_kernel.py", "bn")
    dropin = fresh.Bn(8)
    state = [t.detach().clone().requires_grad_(t.is_floating_point() and "running" not in name)
             for name, t in [*dropin.named_parameters(), *dropin.named_buffers()]]
    torch.library.opcheck(fresh.bn, (torch.randn(16, 8, requires_grad=True), state, dropin.kernelopt_init))
    torch.testing.assert_close(torch.compile(model, fullgraph=True, backend="aot_eager")(x), expected)
    with pytest.raises(ValueError, match="verified in training mode only"):
        model.eval()(x)


def test_a_file_of_the_users_is_never_written_over(tmp_path):
    mine = tmp_path / "linear.py"
    mine.write_text("print('my own code')\n")
    with pytest.raises(InputError, match="exists and was not written by kernelopt export"):
        export_files(EXPORT / "linear_problem.py", EXPORT / "linear_kernel.py", "t_mine::linear", tmp_path)
    assert mine.read_text() == "print('my own code')\n"
    again = tmp_path / "again"
    for _ in range(2):  # an exported module is written over: exporting again refreshes it
        export_files(EXPORT / "linear_problem.py", EXPORT / "linear_kernel.py", "t_mine::linear", again)


def test_a_kernel_that_returns_another_dtype_than_the_fake_promises_is_refused(tmp_path):
    kernel = tmp_path / "wide_kernel.py"
    kernel.write_text((EXPORT / "linear_kernel.py").read_text().replace("dtype=x.dtype", "dtype=torch.float64"))
    module, _ = _export(tmp_path, EXPORT / "linear_problem.py", kernel, "wide")
    with pytest.raises(TypeError, match=r"the kernel returns \[\(torch.float64, \(8, 16\)\)\] where the reference"):
        module.Wide(32, 16)(torch.randn(8, 32))


def test_op_names_from_problem_files_are_identifiers_the_module_does_not_use():
    from kernelopt.export.names import check_name, default_op_name

    assert default_op_name("problems/19_ReLU.py") == "op_19_relu"
    assert default_op_name("examples/softmax/problem.py") == "softmax"
    assert default_op_name("problems/lambda.py") == "lambda_op"
    assert default_op_name("problems/run-kernel.py") == "run_kernel_op"
    for bad in ("mylib::run_kernel", "mylib::class", "mylib::model_new", "my-lib::x"):
        with pytest.raises(InputError, match=bad):
            check_name(bad)


def test_a_kernel_defining_a_name_the_module_uses_is_refused_by_name(tmp_path):
    kernel = tmp_path / "clash_kernel.py"
    kernel.write_text((EXPORT / "linear_kernel.py").read_text() + "\n\ndef run_kernel():\n    pass\n")
    with pytest.raises(InputError, match="the kernel defines run_kernel, names the exported module uses itself"):
        export_files(EXPORT / "linear_problem.py", kernel, "t_clash::linear", tmp_path / "out")
