"""Each named KernelBench problem's compiler seed, made uncached and verified on the GPU, against
torch.compile's time: the seed's rewrites, how many masks it decides at launch, its time.

    python3 benchmarks/h200/seed_vs_compile.py 35_GroupNorm_ 23_Softmax ...

Session 18 (RESULTS (ab)) measured five reduction seeds with it: GroupNorm's went from 0.966x to
0.987x torch.compile with the masks decided at launch; softmax, log-softmax and RMSNorm stayed 24%
behind. Run from the repository root with the wheels on PYTHONPATH (see gpu_tests.sh).
"""

import sys
import time
from pathlib import Path

from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.seed.obtain import compiler_seed


def main(names: list[str]) -> None:
    for name in names:
        problem = Path("benchmarks/kernelbench/problems") / f"{name}.py"
        work = Path("/tmp/seeds") / name
        began = time.monotonic()
        seed = compiler_seed(problem, work / "cache")
        made = time.monotonic() - began
        verifier = Verifier(problem, work / "verify", HarnessSettings.detect(seeds=2, time_compile=True))
        try:
            baselines = verifier.baselines()
            verdict = verifier.verify(seed.path)
        finally:
            verifier.close()
        text = Path(seed.path).read_text()
        seed_ms = verdict.timing.median_ms if verdict.timing else None
        compile_ms = baselines.compile.median_ms if baselines.compile else None
        print(f"{name}: rewrites {list(seed.rewrites)}, masks decided at launch {text.count('_at_launch >')}, "
              f"accepted {verdict.accepted}, seed {seed_ms} ms, torch.compile {compile_ms} ms, made in {made:.0f} s"
              + ("" if verdict.accepted else f": {verdict.reason[:300]}"), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
