"""Are a model's drawn parameters the same in every fresh process? (the H200 said no)

    python3 benchmarks/h200/seed_probe.py

At 37bd428 the verifier's reference process and its candidate worker built nn.Linear(32, 16)
from one seed on the H200 and got different weights (digest sums 0.377 and -0.212), while two
builds in one process agree. Each line here is a fresh `python3` that builds the model after a
different prelude and prints the parameters' digest (seeded by a bare torch.manual_seed, then by
build_model) and the first input's; lines that differ name what changes the draw.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = ROOT / "tests" / "data" / "export" / "linear_problem.py"
PRELUDES = {
    "plain (CUDA first used by the build)": "",
    "CUDA initialised first": "torch.cuda.init()",
    "a CUDA tensor first": "torch.zeros(1, device='cuda')",
    "poison armed first": "from kernelopt.harness.sandbox import poison; poison.arm(torch.device('cuda'))",
    "triton imported first": "import triton, triton.language",
    "torch.manual_seed before CUDA, again": "torch.manual_seed(1)",
    "the worker's arming first": (
        "import tempfile; from kernelopt.harness.sandbox.worker import _arm; d = tempfile.mkdtemp(); "
        "_arm({'device': 'cuda', 'kernel_path': d + '/k.py', 'work_dir': d})"
    ),
}
BODY = """
import torch
{prelude}
from kernelopt.harness.problem import load_problem
from kernelopt.harness.sandbox.calls import build_model, parameter_digest
from kernelopt.harness.measure.cases import case_inputs
problem = load_problem({problem!r})
torch.manual_seed(493600874)
with torch.device('cuda'):
    raw = problem.Model(*problem.get_init_inputs())
model = build_model(problem.Model, problem, 493600874, torch.device('cuda'))
x = case_inputs(problem, {{"seed": 7}}, torch.device('cuda'))[0]
print("as torch.manual_seed left it:", parameter_digest(raw), "| build_model:", parameter_digest(model),
      "| input sum", f"{{float(x.double().sum()):.9e}}",
      "| gen", torch.cuda.default_generators[0].initial_seed(), torch.cuda.default_generators[0].get_offset()
      if hasattr(torch.cuda.default_generators[0], "get_offset") else "")
"""


def main() -> None:
    for name, prelude in PRELUDES.items():
        code = BODY.format(prelude=prelude, problem=str(PROBLEM))
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
        said = done.stdout.strip() or done.stderr.strip().splitlines()[-1:]
        print(f"{name:>40}: {said}", flush=True)


if __name__ == "__main__":
    main()
