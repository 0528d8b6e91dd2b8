"""What the compiler seed's settings cost and buy: Inductor's compile time against the seed's speed.

    python3 benchmarks/h200/seed_settings_probe.py [PROBLEM.py ...]

The seed compiles the reference with max-autotune and coordinate-descent tuning, and the offline
sweep then tunes the same knobs again. Each line here is a fresh `python3` (its own Triton and
Inductor caches, so nothing is served from an earlier line) that makes one problem's seed under
one setting, with the time of each phase, and then times the seed's forward (CUDA events, median
of `triton.testing.do_bench`). Prints one JSON line per problem and setting.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = [
    ROOT / "benchmarks/kernelbench/problems/36_RMSNorm_.py",
    ROOT / "benchmarks/kernelbench/problems/23_Softmax.py",
    ROOT / "benchmarks/kernelbench/level2/76_Gemm_Add_ReLU.py",
]
SETTINGS = {
    "as made (max-autotune, coordinate descent)": {},
    "no coordinate descent": {"coordinate_descent_tuning": False},
    "max-autotune for GEMMs only": {"coordinate_descent_tuning": False, "max_autotune": False,
                                     "max_autotune_gemm": True, "max_autotune_pointwise": False},
}
BODY = """
import json, time, importlib.util, sys
began = time.perf_counter()
import torch, triton
from triton.testing import do_bench
from kernelopt.seed import generate as g
from kernelopt.harness.problem import load_problem
imported = time.perf_counter()
g.COMPILER_SETTINGS.update({settings!r})
made = g.generate(__import__('pathlib').Path({problem!r}))
done = time.perf_counter()
path = {out!r}
open(path, 'w').write(made.text)
spec = importlib.util.spec_from_file_location('seed_under_probe', path)
seed = importlib.util.module_from_spec(spec); spec.loader.exec_module(seed)
problem = load_problem({problem!r})
torch.manual_seed(0)
with torch.device('cuda'):
    model = seed.ModelNew(*problem.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
with torch.no_grad():
    ms = do_bench(lambda: model(*inputs), warmup=100, rep=400, return_mode='median')
print(json.dumps({{'imports_s': round(imported - began, 1), 'generate_s': round(done - imported, 1),
                  'compile_s': made.compile_s, 'kernels': made.kernels, 'seed_ms': round(ms, 4)}}))
"""


def main(problems: list[Path]) -> None:
    for problem in problems:
        for name, settings in SETTINGS.items():
            with tempfile.TemporaryDirectory() as scratch:
                env = {"TRITON_CACHE_DIR": f"{scratch}/triton", "TORCHINDUCTOR_CACHE_DIR": f"{scratch}/inductor"}
                code = BODY.format(settings=settings, problem=str(problem), out=f"{scratch}/seed.py")
                try:
                    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                                          env={**os.environ, **env}, check=False)
                    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
                    last = (done.stderr.strip().splitlines() or ["?"])[-1]
                    facts = json.loads(lines[-1]) if lines else {"error": last}
                except subprocess.TimeoutExpired:
                    facts = {"error": "over 240 s"}
            print(json.dumps({"problem": problem.name, "settings": name, **facts}), flush=True)


if __name__ == "__main__":
    main([Path(p) for p in sys.argv[1:]] or DEFAULT)
