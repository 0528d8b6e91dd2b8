"""benchmarks/h200/kernel_times.py: the profiler's events read as one forward's kernels, the targets a move makes,
and one clear line where there is no GPU (the timing itself runs on the CUDA host)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelopt.harness.problem import import_file

ROOT = Path(__file__).resolve().parents[1]
times = import_file(ROOT / "benchmarks" / "h200" / "kernel_times.py", "kernelopt_kernel_times_script")


def test_the_profiler_s_events_are_one_forward_s_kernels_slowest_first() -> None:
    events = [SimpleNamespace(key="conv_dw_rows_kernel", count=20, self_device_time_total=16_000.0),
              SimpleNamespace(key="conv_igemm_kernel", count=20, self_device_time_total=40_000.0),
              SimpleNamespace(key="cudaLaunchKernel", count=60, self_device_time_total=0.0),  # the host's own
              SimpleNamespace(key="conv_weight_kernel", count=10, self_cuda_time_total=500.0)]  # torch before 2.4
    rows = times.kernel_times(events, calls=10)
    assert [(r.name, r.launches, r.us) for r in rows] == [
        ("conv_igemm_kernel", 2.0, 4000.0), ("conv_dw_rows_kernel", 2.0, 1600.0), ("conv_weight_kernel", 1.0, 50.0)]
    table = times.markdown("separable.two_pass", 5.8, rows)
    assert "forward: 5.8000 ms (median of CUDA events); kernels' sum 5.6500 ms" in table
    assert "| `conv_igemm_kernel` | 2 | 4.0000 | 70.8% |" in table
    assert "| `conv_dw_rows_kernel` | 2 | 1.6000 | 28.3% |" in table


def test_a_move_gives_one_target_per_configuration_and_one_that_does_not_apply_says_which_do() -> None:
    problem = ROOT / "examples" / "softmax" / "problem.py"
    args = argparse.Namespace(reference=True, file=[], move="softmax.rows_in_registers", kernel=None, configs=2,
                              config=[], problem=problem)
    targets = times._targets(args)
    assert [t[0] for t in targets][:1] == ["reference (Model)"] and targets[0][1] is None
    assert len(targets) == 3 and all("class ModelNew" in source for _, source in targets[1:])
    configs = [json.loads(title.split(" ", 1)[1]) for title, _ in targets[1:]]
    assert configs[0] != configs[1]
    args.move = "matmul.split_k"
    with pytest.raises(SystemExit, match="matmul.split_k does not apply to problem.py; those that do: softmax"):
        times._targets(args)


def test_with_no_gpu_it_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert times.main([str(ROOT / "examples" / "softmax" / "problem.py"), "--reference"]) == 2
    assert capsys.readouterr().out.strip() == ("kernel_times.py times kernels on a GPU, and this machine has none: "
                                               "run it on the CUDA host")
