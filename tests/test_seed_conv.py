"""The compiler seed of recorded graphs whose convolutions Inductor left to cuDNN (torch 2.13's own
output, recorded on the CPU): the seed launches its own Triton convolution there and computes the
reference under the interpreter. Apart from test_seed_translate.py so the two slowest interpreter
runs can go to another test worker (`--dist loadfile`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_seed_translate import _run_both, cpu_made_seed, problem_path, shrunk_problem

from kernelopt.harness.guards import check_kernel_source
from kernelopt.offline.tuner import with_config


@pytest.mark.slow
@pytest.mark.parametrize("name", ["conv_transpose3d", "1_Conv2D_ReLU_BiasAdd"])
def test_inference_graphs_with_cudnn_convolutions_translate_and_compute_the_reference(name: str, tmp_path: Path):
    # torch 2.13's own output: the bias passed positionally (transposed 3-D), and a 2-D convolution
    # whose inputs Inductor first copies to channels-last, its output asserted channels-last too
    text = cpu_made_seed(name)
    assert check_kernel_source(text) == [] and "extern_kernels" not in text and "conv_triton(" in text
    seed_file = tmp_path / "seed.py"
    seed_file.write_text(with_config(text, {"CONV_BLOCK_M": 128, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 32}))
    path = problem_path(name)
    expected, got = _run_both(shrunk_problem(path, tmp_path / path.name), seed_file)
    assert got.shape == expected.shape and got.stride() == expected.stride()
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
