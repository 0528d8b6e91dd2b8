"""BatchNorm in training mode as a structural move: the family read from the reference, the split
template verified under the interpreter (pieces with tails, the drawn weight and bias), and the
running statistics moved as the reference moves them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelopt.harness.problem import import_file
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import batchnorm, structural_moves
from kernelopt.offline.moves.family import trace_family
from kernelopt.offline.tuner import with_config

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "tests" / "data" / "moves" / "batch_norm.py"
# planes of 35: pieces of 16 leave a tail of 3, and the last piece's second block of 8 is empty
SMALL = {"CHUNK": 16, "BLOCK": 8}


def _source(problem: Path, average: bool = False) -> str:
    """The template for `problem`; `average`: with momentum None, a cumulative average (a module whose
    forward reads num_batches_tracked as a number, which the meta device cannot trace)."""
    family = trace_family(import_file(problem, "kernelopt_bn_family"))
    assert family.name == "batch_norm"
    init = batchnorm.reference_init(problem.read_text())
    if average:
        init = init.replace("nn.BatchNorm2d(num_features)", "nn.BatchNorm2d(num_features, momentum=None)")
    source = batchnorm.split(init, family.input_names, family.eps or 0.0, None if average else family.momentum,
                             batchnorm.BatchNormState(*family.state))
    return with_config(source, SMALL)


def _load(source: str, tmp_path: Path, name: str):  # noqa: ANN202 - the kernel module
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return import_file(path, name)


def test_the_kernelbench_batch_norm_is_split_by_planes_and_short_planes_say_why(tmp_path: Path) -> None:
    moves = structural_moves(ROOT / "benchmarks" / "kernelbench" / "problems" / "33_BatchNorm.py")
    assert moves.family is not None and moves.family.name == "batch_norm"
    assert moves.family.state == ("bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                                  "bn.num_batches_tracked")
    assert moves.family.momentum == 0.1 and moves.family.eps == 1e-5
    assert [m.name for m in moves.instances] == ["batch_norm.split"]
    # the seed reduces a channel per program: whatever the judger names, the split answers it
    assert all(category in moves.instances[0].cures for category in ("occupancy", "memory", "latency"))
    short = structural_moves(PROBLEM)  # planes of 35
    assert "planes of 35 values" in {s.name: s.why for s in short.skipped}["batch_norm.split"]
    odd = _problem(tmp_path, "odd", "height, width = 2, 3, 5, 7", "height, width = 2, 3, 30, 40")  # planes of 1,200
    assert {c["CHUNK"] for c in structural_moves(odd).instances[0].grid} <= {1024, 2048}  # no empty pieces
    average = _problem(tmp_path, "average", "nn.BatchNorm2d(num_features)",
                       "nn.BatchNorm2d(num_features, momentum=None)")
    assert "could not be traced" in structural_moves(average).skipped[0].why  # it reads the count as a number


@pytest.mark.parametrize(("name", "old", "new", "family"), [
    ("eval", "return self.bn(x)", "return self.bn.eval()(x)", "other"),  # normalised with the running statistics
    ("stray_add", "return self.bn(x)", "return self.bn(x.add_(1.0))", "other"),  # an add_ the template would drop
    ("relu", "return self.bn(x)", "return torch.relu(self.bn(x))", "other"),
    ("twice", "return self.bn(x)", "return self.bn(self.bn(x))", "other"),
    ("1d", "self.bn = nn.BatchNorm2d(num_features)", "self.bn = nn.BatchNorm1d(num_features)", "batch_norm"),
    ("functional", "return self.bn(x)", "return torch.nn.functional.batch_norm(x, self.bn.running_mean, "
     "self.bn.running_var, self.bn.weight, self.bn.bias, True, 0.5, 1e-3)", "batch_norm"),
])
def test_the_family_is_batch_norm_only_where_the_template_does_all_the_work(
    name: str, old: str, new: str, family: str, tmp_path: Path
) -> None:
    problem = _problem(tmp_path, name, old, new)
    if name == "1d":  # (N, C, L) planes of 35
        problem.write_text(problem.read_text().replace("torch.randn(batch, features, height, width)",
                                                       "torch.randn(batch, features, height * width)"))
    found = trace_family(import_file(problem, f"kernelopt_bn_{name}"))
    assert found.name == family
    if name == "functional":  # the call's own momentum and eps, not the module's
        assert (found.momentum, found.eps) == (0.5, 1e-3)


def _problem(tmp_path: Path, name: str, old: str, new: str) -> Path:
    assert old in PROBLEM.read_text()
    path = tmp_path / f"bn_{name}.py"
    path.write_text(PROBLEM.read_text().replace(old, new))
    return path


def test_the_split_batch_norm_passes_the_verifier_and_its_weights_matter(tmp_path: Path) -> None:
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    source = _source(PROBLEM)
    (tmp_path / "kernel.py").write_text(source)
    verdict = Verifier(PROBLEM, tmp_path / "harness", settings).verify(tmp_path / "kernel.py", time=False)
    assert verdict.accepted, verdict.reason
    plain = source.replace("w, b = self.bn.weight, self.bn.bias", "w, b = None, None")
    assert plain != source
    (tmp_path / "plain.py").write_text(plain)
    wrong = Verifier(PROBLEM, tmp_path / "harness-plain", settings).verify(tmp_path / "plain.py", time=False)
    assert not wrong.accepted and "incorrect" in wrong.reason.lower()


@pytest.mark.parametrize("variant", ["momentum=0.3", "momentum=None", "affine=False", "track_running_stats=False"])
def test_the_running_statistics_move_as_the_reference_s(variant: str, tmp_path: Path) -> None:
    reference_file = _problem(tmp_path, "reference", "nn.BatchNorm2d(num_features)",
                              f"nn.BatchNorm2d(num_features, {variant})")
    reference_module = import_file(reference_file, "kernelopt_bn_reference")
    source = _source(PROBLEM, average=True) if variant == "momentum=None" else _source(reference_file)
    kernel = _load(source, tmp_path, "bn_kernel_" + variant.replace("=", "_").replace(".", "_"))
    torch.manual_seed(0)
    reference = reference_module.Model(3)
    with torch.no_grad():  # weights other than 1 and 0 where there are any
        for p in reference.parameters():
            p.copy_(torch.rand_like(p) + 0.5)
    ours = kernel.ModelNew(3)
    ours.load_state_dict(reference.state_dict())
    for step in range(3):  # a cumulative average needs the count the earlier batches left
        x = torch.randn(2, 3, 5, 7) * (step + 1) + step
        torch.testing.assert_close(ours(x), reference(x), atol=1e-5, rtol=1e-5)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(ours.state_dict()[name], value, atol=1e-6, rtol=1e-5, msg=name)
    ours.eval()
    reference.eval()  # with running statistics, eval mode normalises with them and moves nothing
    x = torch.randn(2, 3, 5, 7) + 2
    torch.testing.assert_close(ours(x), reference(x), atol=1e-5, rtol=1e-5)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(ours.state_dict()[name], value, atol=1e-6, rtol=1e-5, msg=name)
