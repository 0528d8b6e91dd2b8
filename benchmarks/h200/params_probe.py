"""Why a kernel that computes its problem exactly is rejected as incorrect on the H200.

    python3 benchmarks/h200/params_probe.py

Found at 37bd428 (the digests this prints): the reference process and the candidate's worker drew
different weights from one seed, on the device; a fresh process whose allocator was primed with
NaN blocks first (the worker's poison) drew other values than one that was not
(`benchmarks/h200/seed_probe.py`). `build_model` now draws parameters on the CPU and moves them:
at cc40295 both verdicts below were "accepted" on the H200.

Seen at 3d2270f: the seed's Triton convolution and the `conv.implicit_gemm` move were rejected on
the H200 ("incorrect", every element of case 0 wrong, plausible values) while
`benchmarks/h200/conv_probe.py` found `conv_triton` equal to aten's convolution, and the same
candidate outside the verifier gave the reference's output to the last bit. Both were problems
with parameters drawn at construction (nn.Conv2d), which no H200 run had verified before (the
level-1 problems have none; the norms' are ones and zeros). This prints:

1. the verifier's verdict on an honest nn.Linear kernel (tests/data/export): is every problem
   with randomly initialised parameters rejected on the GPU, or only the convolution?
2. the verdict on the convolution move (tests/data/moves/conv2d.py);
3. in one process, the convolution move under each part of the candidate worker in turn (the
   launch counter, the fingerprint recorder, the compute guard, poisoned allocations, the audit
   hook): the first part after which the output or the weights differ is the culprit.
"""

import tempfile
from pathlib import Path

import torch

from kernelopt.harness.measure.cases import case_inputs
from kernelopt.harness.problem import import_file, load_problem
from kernelopt.harness.sandbox import fingerprint, launches, poison
from kernelopt.harness.sandbox.audit import install_audit_guard
from kernelopt.harness.sandbox.calls import build_model, exact_math
from kernelopt.harness.sandbox.compute_guard import ComputeGuard
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import structural_moves
from kernelopt.offline.tuner import with_config

ROOT = Path(__file__).resolve().parents[2]
SEED = 493600874


def verdict(problem: Path, kernel: Path, work: Path) -> str:
    verifier = Verifier(problem, work, HarnessSettings.detect(seeds=1))
    try:
        found = verifier.verify(kernel)
    finally:
        verifier.close()
    digests = sorted({f"{log.name}: {line.strip()}" for log in work.rglob("*.log") for line in log.read_text(
        errors="replace").splitlines() if "parameters:" in line})
    shown = "".join(f"\n   {line}" for line in digests)
    return f"{'accepted' if found.accepted else 'REJECTED'}: {found.reason[:300]}{shown}"


def main() -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    work = Path(tempfile.mkdtemp())
    export = ROOT / "tests" / "data" / "export"
    print("1. nn.Linear, honest kernel:", verdict(export / "linear_problem.py", export / "linear_kernel.py",
                                                work / "linear"), flush=True)
    problem_path = ROOT / "tests" / "data" / "moves" / "conv2d.py"
    move = structural_moves(problem_path).instances[0]
    kernel = work / "conv_kernel.py"
    kernel.write_text(with_config(move.source, move.grid[0]))
    print("2. conv.implicit_gemm:", verdict(problem_path, kernel, work / "conv"), flush=True)

    problem = load_problem(problem_path)
    reference = build_model(problem.Model, problem, SEED, device)
    inputs = case_inputs(problem, {"seed": 7}, device)
    with torch.no_grad(), exact_math():
        want = reference(*inputs).clone()
    weight = reference.conv2d.weight.detach().clone()
    candidate = import_file(kernel, "params_probe_candidate")

    def step(name: str, model: torch.nn.Module | None = None, fresh_inputs: bool = False) -> torch.nn.Module:
        model = model or build_model(candidate.ModelNew, problem, SEED, device)
        args = case_inputs(problem, {"seed": 7}, device) if fresh_inputs else inputs
        with torch.no_grad(), ComputeGuard():
            got = model(*args)
        out = (got - want).abs().max().item()
        w = (model.conv2d.weight.detach() - weight).abs().max().item()
        print(f"3. {name:>30}: output off by {out:.3e}, weight by {w:.3e}", flush=True)
        return model

    step("nothing armed")
    launches.install()
    step("launch counter")
    recorder = fingerprint.start()
    step("fingerprint recorder")
    poison.arm(device)
    model = step("poisoned allocations")
    step("poisoned inputs too", model, fresh_inputs=True)
    install_audit_guard({str(kernel.resolve())}, str(work), ())
    step("audit hook, model built before", model)
    step("audit hook, model built after")
    print("fingerprint:", recorder.digest(), recorder.failure)


if __name__ == "__main__":
    main()
