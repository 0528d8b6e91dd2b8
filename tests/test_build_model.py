"""build_model: a problem's (or a candidate's) module built from the seed the same way in every
process: parameters drawn on the CPU (KernelBench's order of draws), then moved to the device
with every tensor the module keeps, registered or not."""

from types import SimpleNamespace

import torch
from torch import nn

from kernelopt.harness.sandbox.calls import build_model, parameter_digest


class Scaled(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.register_buffer("shift", torch.randn(features))
        self.scale = torch.rand(features)  # a plain attribute: .to(device) alone would leave it behind

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale + self.shift


PROBLEM = SimpleNamespace(get_init_inputs=lambda: [8])


def test_parameters_are_kernelbenchs_cpu_draws_from_the_seed() -> None:
    torch.manual_seed(1234)
    expected = Scaled(8)  # KernelBench: seed, build on the CPU, then move
    torch.manual_seed(99)  # whatever the process drew before does not matter
    torch.rand(1000)
    built = build_model(Scaled, PROBLEM, 1234, torch.device("cpu"))
    assert torch.equal(built.linear.weight, expected.linear.weight)
    assert torch.equal(built.shift, expected.shift) and torch.equal(built.scale, expected.scale)
    assert parameter_digest(built) == parameter_digest(expected)
    other = build_model(Scaled, PROBLEM, 1235, torch.device("cpu"))
    assert parameter_digest(other) != parameter_digest(built)


def test_every_tensor_the_module_keeps_goes_to_the_device() -> None:
    built = build_model(Scaled, PROBLEM, 7, torch.device("meta"))
    assert built.linear.weight.device.type == "meta" and built.shift.device.type == "meta"
    assert built.scale.device.type == "meta"


def test_a_digest_names_what_is_not_a_module() -> None:
    assert parameter_digest(lambda x: x) == "not a module"
