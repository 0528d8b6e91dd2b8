"""Host costs of the harness: peak resident memory of a process and its descendants, disk used.

`memory` is `python3 benchmarks/measure.py memory`: (f) in RESULTS.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
NAMES = ("softmax", "swish", "matmul")


class PeakMemory:
    """The largest resident set of this process and its descendants, sampled every 0.1 s."""

    def __init__(self, include_self: bool = True) -> None:
        self.peak_bytes, self._done, self._include_self = 0, threading.Event(), include_self
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        from kernelopt.harness.sandbox.audit import rss_bytes

        while not self._done.wait(0.1):
            family, changed = {os.getpid()}, True
            parents = {}
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                    except (OSError, IndexError, ValueError):
                        pass
            while changed:
                grown = {pid for pid, parent in parents.items() if parent in family} | family
                changed, family = grown != family, grown
            if not self._include_self:  # the benchmark's own imports are not the harness's
                family.discard(os.getpid())
            self.peak_bytes = max([self.peak_bytes] + [rss_bytes(pid) for pid in family])

    def stop(self) -> float:
        self._done.set()
        return self.peak_bytes / 2**30


def dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


# Each example at a small size: lines appended to a copy of its problem file (the sizes are module globals).
SMALL = {"swish": "n_elements = 1 << 12", "softmax": "batch_size, dim = 64, 512", "matmul": "N = 128"}


def _largest_tensor_mb(problem: Path) -> float:
    """The problem's largest input or output, in MiB, sized on the meta device (nothing allocated)."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("sized_problem", problem)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):
        inputs = module.get_inputs()
        outputs = module.Model(*module.get_init_inputs())(*inputs)
    tensors = [t for t in [*inputs, *(outputs if isinstance(outputs, tuple | list) else [outputs])]
               if isinstance(t, torch.Tensor)]
    return max(t.numel() * t.element_size() for t in tensors) / 2**20


def memory(work: Path) -> str:
    """(f) Host memory of `kernelopt verify` (every process it starts, the largest one's peak) at the
    example's GPU size and at a small size: what grows with the problem is the harness's own."""
    rows = []
    for name in NAMES:
        folder = work / name
        folder.mkdir(parents=True, exist_ok=True)
        small = folder / "problem_small.py"
        small.write_text((EXAMPLES / name / "problem.py").read_text() + f"\n{SMALL[name]}\n")
        peaks = []
        for problem in (EXAMPLES / name / "problem.py", small):
            sampler = PeakMemory(include_self=False)
            subprocess.run([sys.executable, "-m", "kernelopt.cli", "verify", str(problem),
                            str(EXAMPLES / name / "kernel.py"), "--json"], cwd=folder, capture_output=True,
                           timeout=600, check=False)
            peaks.append(sampler.stop() * 1024)
        largest = _largest_tensor_mb(EXAMPLES / name / "problem.py")
        growth = peaks[0] - peaks[1]
        under = "yes" if growth < 2 * largest else "no"
        rows.append([name, largest, peaks[0], peaks[1], growth, growth / largest, under])
    return table(["example", "largest tensor MiB", "peak RSS MiB (GPU size)", "peak RSS MiB (small)",
                   "growth MiB", "growth / largest tensor", "under 2x"], rows)




def table(header: list[str], rows: list[list[object]]) -> str:
    def cell(value: object) -> str:
        return f"{value:.4g}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows])
