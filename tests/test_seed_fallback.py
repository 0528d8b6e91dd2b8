"""The compiler seed asks the compiler again with less where it fails at the seed's settings (seed/generate.py:
FALLBACK_SETTINGS): torch 2.11 on the H100 and H200 raised a bare AssertionError in its coalescing analysis on a
convolution then a minimum over its channels. Here the compiler's failure is made (its run raises at the first
settings), its compile is Dynamo's graph as it is: no GPU, no Inductor."""

from __future__ import annotations

import pytest
import torch

from kernelopt.seed import generate
from kernelopt.seed.errors import SeedError


class _Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=1, keepdim=True)[0].tanh()


def _compiler(monkeypatch: pytest.MonkeyPatch, fails: int) -> list[dict[str, bool]]:
    """The compiler made to fail `fails` times; each try's settings, as the compiler saw them."""
    import torch._inductor.compile_fx as compile_fx
    import torch._inductor.utils as utils
    from torch._inductor import config
    from torch._inductor.exc import InductorError

    tries: list[dict[str, bool]] = []

    def run_and_get_code(fn, *args):  # noqa: ANN001, ANN202  (torch's own signature)
        tries.append({"max_autotune": config.max_autotune, "coordinate_descent": config.coordinate_descent_tuning,
                      "coalescing": config.triton.coalesce_tiling_analysis})
        if len(tries) <= fails:  # as Inductor raises a bare assert: wrapped, its text "AssertionError: "
            try:
                raise AssertionError()
            except AssertionError as inner:
                raise InductorError(inner, None) from inner
        return fn(*args), ["# the module the compiler wrote"]

    monkeypatch.setattr(utils, "run_and_get_code", run_and_get_code)
    monkeypatch.setattr(compile_fx, "compile_fx", lambda gm, example_inputs: gm.forward)
    return tries


def test_a_compile_that_fails_at_the_seeds_settings_is_tried_again_with_less(monkeypatch: pytest.MonkeyPatch) -> None:
    tries = _compiler(monkeypatch, fails=1)
    codes, bindings = generate._compile(_Model(), [torch.randn(2, 8, 3)])
    assert codes == ["# the module the compiler wrote"] and bindings
    # the first fallback leaves the autotuner as it was: only the coalescing analysis that asserted is off
    assert tries == [{"max_autotune": True, "coordinate_descent": True, "coalescing": True},
                     {"max_autotune": True, "coordinate_descent": True, "coalescing": False}]


def test_a_compile_that_fails_at_every_setting_tells_the_first_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    tries = _compiler(monkeypatch, fails=4)
    # a bare assert says nothing: the error says where it was raised (this file's `raise AssertionError()`)
    with pytest.raises(SeedError, match=r"the reference: AssertionError at .*test_seed_fallback.py:\d+ "
                                        r"\(raise AssertionError\(\)\)"):
        generate._compile(_Model(), [torch.randn(2, 8, 3)])
    assert tries[-1] == {"max_autotune": False, "coordinate_descent": False, "coalescing": False} and len(tries) == 4
