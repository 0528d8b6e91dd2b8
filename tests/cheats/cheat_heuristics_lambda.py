"""Cheat: a triton.heuristics lambda adds with torch. Caught by: runtime: torch compute.

a triton.heuristics lambda adds with torch (Heuristics.run calls it, outside the launch).

Control case for the frame rule: the lambda is defined in the kernel file, so its frame is the
nearest non-torch frame when `add` dispatches, and the compute guard should refuse it even
though Triton's Heuristics.run is the caller. Statically, module-level decorator lambdas are not
forward code and are never scanned.

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics({"DONE": lambda a: torch.add(a["x_ptr"], a["y_ptr"], out=a["out_ptr"]) is None})
@triton.jit
def noop_kernel(x_ptr, y_ptr, out_ptr, n, DONE: tl.constexpr):
    pid = tl.program_id(0)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        noop_kernel[(1,)](x, y, out, x.numel())
        return out
