"""A candidate's `@triton.autotune` in the sandbox: the configurations it picked, and a benchmark
for its tuning where Triton has none (under the interpreter, on a host without a GPU).

The picks go back with the verdict (`winners`), so that a rewrite of this kernel can be judged
at the configuration this kernel ran at (pinned tuning, nodes/pinned.py).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

CPU_BENCH_RUNS = 3


def _cpu_bench(kernel_call: Callable[[], Any], quantiles: Sequence[float] | None = None) -> Any:
    """Triton's benchmarker contract (`fn`, `quantiles`) on the host clock: a few calls' times in
    ms, the median first (the interpreter runs kernels on the CPU, so the host clock is the time)."""
    kernel_call()  # the first call compiles
    times = []
    for _ in range(CPU_BENCH_RUNS):
        began = time.perf_counter()
        kernel_call()
        times.append((time.perf_counter() - began) * 1e3)
    times.sort()
    median = times[len(times) // 2]
    return [median, times[0], times[-1]][: len(quantiles)] if quantiles else median


def install() -> None:
    """Under Triton's interpreter, let an autotuner with several configs time them on the host:
    Triton's own benchmarker asks for a GPU driver there is none of, and the kernel would fail."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return
    if getattr(Autotuner, "_kernelopt_cpu_bench", False):
        return

    def do_bench(self: Any) -> Callable[..., Any]:
        return self._do_bench or _cpu_bench

    Autotuner.do_bench = property(do_bench)  # type: ignore[assignment,method-assign]
    Autotuner._kernelopt_cpu_bench = True  # type: ignore[attr-defined]


def winners(module: Any) -> dict[str, int]:
    """The launch configuration each autotuned kernel of `module` last picked (its knobs, num_warps,
    num_stages), merged; {} when it has none or they cannot be read."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return {}
    picked: dict[str, int] = {}
    for value in list(vars(module).values()):
        best = getattr(value, "best_config", None) if isinstance(value, Autotuner) else None
        if best is None:
            continue
        try:
            picked.update({k: int(v) for k, v in best.kwargs.items() if type(v) is int})
            picked.update(num_warps=int(best.num_warps), num_stages=int(best.num_stages))
        except (AttributeError, TypeError, ValueError):
            continue
    return picked
