"""Cheat: swaps time.perf_counter while timed. Caught by: forbidden-attribute.

(a timing escape) in the timed runs (poison disarmed) forward swaps time.perf_counter (reached
as torch.sys.modules['time'] via a local alias, module setattr raises no audit event) for a fake
that returns the time forward STARTED and puts the real one back on its first call. The timer's
end reading equals its begin reading; identity checks after timing see the original function
again. The kernel itself is an honest add (slowed to make the effect obvious).

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.timed_calls = 0

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        t = torch
        clock = t.sys.modules["time"]
        real = clock.perf_counter
        started = real()
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 8),)](x, y, out, n, BLOCK_SIZE=8)
        alloc = torch.empty
        if not hasattr(alloc, "__wrapped__"):
            if self.timed_calls > 0:
                def fake():
                    clock.perf_counter = real
                    return started
                clock.perf_counter = fake
            self.timed_calls += 1
        return out
