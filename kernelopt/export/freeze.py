"""The kernel's autotune winner frozen into its source, so that the exported op never tunes when called
(tuning times candidates, syncs the device, and cannot run inside a CUDA-graph capture)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from kernelopt.offline.tuner import autotune_configs, autotune_variants
from kernelopt.records import config_text
from kernelopt.syntax import parse

_imports = itertools.count()


def autotune_words(kernel_source: str) -> str:
    """The docstring's line on autotuning, for a kernel as it will be exported."""
    configs = len(autotune_configs(parse(kernel_source)))
    if configs == 0:
        return "none: the kernel's launch parameters are literals"
    if configs == 1:
        return "frozen: a single triton.Config, so no tuning runs when the op is called"
    return (f"NOT frozen: the kernel lists {configs} triton.Configs and tunes on its first call at each size "
            "(export on a CUDA host to freeze the winner); call it once before capturing a CUDA graph")


def _winner(autotuner: Any) -> dict[str, int]:
    best = autotuner.best_config
    return {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages}


def frozen_source(problem_path: str | Path, kernel_path: str | Path, kernel_source: str) -> tuple[str, str | None]:
    """(the kernel's source with its autotune winner alone, the winner in words), or the source unchanged and
    None where there is nothing to freeze or no CUDA device to find the winner on.

    The winner is the one autotune picks on the problem's own inputs: the kernel runs once on the GPU here.
    """
    variants = autotune_variants(kernel_source)
    if not variants:
        return kernel_source, None
    import torch

    if not torch.cuda.is_available():
        return kernel_source, None
    from triton.runtime.autotuner import Autotuner

    from kernelopt.harness.problem import import_file

    problem = import_file(problem_path, f"kernelopt_freeze_problem_{next(_imports)}")
    kernel = import_file(kernel_path, f"kernelopt_freeze_kernel_{next(_imports)}")
    tuners = [v for v in vars(kernel).values() if isinstance(v, Autotuner)]
    if len(tuners) != 1:  # the tuner's rewrite handles one autotuned kernel per file
        return kernel_source, None
    device = torch.device("cuda")
    torch.manual_seed(0)
    with device:
        inputs = list(problem.get_inputs())
        model = kernel.ModelNew(*problem.get_init_inputs()).to(device)
    with torch.no_grad():
        model(*inputs)
    torch.cuda.synchronize()
    winner = _winner(tuners[0])
    for values, source in variants:
        if all(winner.get(k) == v for k, v in values.items()):
            shapes = ", ".join(str(tuple(t.shape)) for t in inputs if isinstance(t, torch.Tensor))
            gpu = torch.cuda.get_device_name()
            return source, f"frozen: {config_text(values)}, autotune's pick on {gpu} at {shapes}"
    return kernel_source, None
