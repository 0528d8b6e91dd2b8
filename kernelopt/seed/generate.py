"""Make the compiler seed on a CUDA host: compile the reference with torch.compile, translate the
Triton it writes, and check the translation against the reference once.

This runs in a trusted child process of its own (`python -m kernelopt.seed`), never in the graph
process and never beside a candidate: the reference's own code runs here, under the compiler.
The compiler runs with dynamic shapes and no duck shaping (equal sizes keep symbols of their own,
so the seed reads each size from its own input), max-autotune with Triton as the only GEMM
backend (so no cuBLAS call remains) and cuDNN as the convolution backend (its calls become the
seed's own Triton convolution), and without autograd (one inference graph).
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kernelopt.harness.problem import load_problem, read_source
from kernelopt.seed.bindings import recording_backend, warnings_after_the_graph
from kernelopt.seed.errors import GO, WHAT_TO_DO, SeedError
from kernelopt.seed.forward_body import LaunchConfig
from kernelopt.seed.kernel_text import REWRITES
from kernelopt.seed.output_code import parse_output
from kernelopt.seed.writer import LIFTED, Binding, SeedSource, binding_choices, write_seed

COMPILER_SETTINGS = {
    "max_autotune": True,
    "coordinate_descent_tuning": True,
    "max_autotune_gemm_backends": "TRITON",
    # Convolutions go to cuDNN, and the seed launches its own Triton convolution there (conv.py).
    # With Triton as the only conv backend, torch 2.11 on the H200 failed to compile a transposed
    # 3-D convolution at all (NoValidChoicesError) and wrote a 2-D one as a Triton conv template
    # the translator does not know; a library call it turns into conv_triton for every kind.
    "max_autotune_conv_backends": "ATEN",
    "force_disable_caches": True,  # a cached graph may skip writing its code out; the seed has its own cache
}
# Where the compiler fails at those settings, it is asked again with less: first without its coalescing analysis for
# tiling (torch 2.11 on the H100 and H200 asserted in it, tiling_utils.get_pw_red_splits, on a convolution then a
# minimum over its channels with dynamic shapes: level 2's Conv2d_Min_Tanh_Tanh), then its autotuner's coordinate
# descent off too, then max-autotune off (a GEMM then goes to a library call, which the translator refuses).
_NO_COALESCING = {"triton.coalesce_tiling_analysis": False}
FALLBACK_SETTINGS = (_NO_COALESCING,
                     {**_NO_COALESCING, "coordinate_descent_tuning": False},
                     {**_NO_COALESCING, "coordinate_descent_tuning": False, "max_autotune": False})
CHECK_TOLERANCE = {"float32": 1e-3, "float16": 2e-2, "bfloat16": 5e-2}


@dataclass(frozen=True)
class Generated:
    """A seed file's text and what it was made with."""

    text: str
    torch_version: str
    triton_version: str
    gpu: str
    kernels: int
    compile_s: float
    rewrites: tuple[str, ...] = REWRITES  # the rewrites of the compiler's kernels its check passed with
    stages_s: dict[str, float] = field(default_factory=dict)  # where the seed's time went (Stages)


class Stages:
    """Seconds per stage of making a seed, in order: each `lap(name)` closes the stage since the last."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.began_at = time.time()  # wall clock: the parent takes the child's start from it
        self._last = time.perf_counter()

    def lap(self, name: str) -> float:
        now = time.perf_counter()
        self.seconds[name] = round(now - self._last, 2)
        self._last = now
        return self.seconds[name]


def picked_configs(names: set[str]) -> dict[str, LaunchConfig]:
    """The launch configuration the autotuner settled on for each named kernel (its first launcher)."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    found: dict[str, LaunchConfig] = {}
    for obj in gc.get_objects():
        try:
            if not isinstance(obj, CachingAutotuner):
                continue
        except ReferenceError:  # a dead weak proxy on the heap
            continue
        name = (getattr(obj, "inductor_meta", None) or {}).get("kernel_name") or getattr(obj.fn, "__name__", "")
        configs = [launcher.config for launcher in getattr(obj, "launchers", None) or []]
        if name in names and configs:
            config = configs[0]
            kwargs = {k: int(v) for k, v in config.kwargs.items() if type(v) is int}
            found[name] = LaunchConfig(kwargs, int(config.num_warps), int(config.num_stages))
    return found


@contextlib.contextmanager
def online_softmax_at_its_size() -> Any:
    """Softmax's max and sum in one pass over a row wherever the row's size at hand asks for it.

    The compiler chooses its online softmax (one loop for the max and the sum, then one for the
    output: two reads of the input) only where the row is known to be longer than a few elements.
    With dynamic shapes the row's size is a symbol, never known, so it writes two reductions (three
    reads). On the H200, 23_Softmax's dynamic code took 7.09 ms, its static (online) code 4.79. The
    choice is made here from the size at hand, as the static compile makes it; the online code is
    right at every size, so the seed stays a kernel for any input."""
    from torch._inductor import config, inductor_prims, lowering
    from torch._inductor.virtualized import V

    prim = getattr(inductor_prims, "prepare_softmax_online", None)
    overload = getattr(prim, "default", prim)
    original = lowering.lowerings.get(overload) if overload is not None else None
    if original is None:  # a torch without the online softmax: its code as it writes it
        yield
        return
    keys = [k for k, v in lowering.lowerings.items() if v is original]

    def by_size(x: Any, dim: int, *args: Any, **kwargs: Any) -> Any:
        size = x.get_size()
        sizes = V.graph.sizevars  # torch 2.11 names it size_hint, later ones optimization_hint
        hint = getattr(sizes, "optimization_hint", None) or sizes.size_hint
        row = hint(size[dim % len(size)], fallback=0) if size else 0
        if row < config.unroll_reductions_threshold:
            return original(x, dim, *args, **kwargs)
        with config.patch(unroll_reductions_threshold=1):  # every symbolic size is at least 2: online
            return original(x, dim, *args, **kwargs)

    lowering.lowerings.update(dict.fromkeys(keys, by_size))
    try:
        yield
    finally:
        lowering.lowerings.update(dict.fromkeys(keys, original))


@contextlib.contextmanager
def math_attention() -> Any:
    """scaled_dot_product_attention traced as its math: two batched products around a softmax.

    Left to choose, the dispatcher traces attention as one fused library kernel (flash or memory-efficient
    attention), which Inductor calls as it is: no Triton, so the seed could not be written, and a problem with
    attention (KernelBench's 97, any transformer block) had no start without a kernel of its own. Its math is
    the same attention in ops the compiler writes in Triton (its GEMM templates, a softmax kernel), which the
    offline moves then take (the products' fp16 split, the softmax's structures)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # a torch without the backend choice: attention as the dispatcher picks it
        yield
        return
    with sdpa_kernel([SDPBackend.MATH]):
        yield


def _compile(model: Any, inputs: list[Any]) -> tuple[list[str], list[Binding]]:
    import torch
    import torch.fx.experimental._config as shape_config
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import run_and_get_code

    failure: Exception | None = None
    for fallback in ({}, *FALLBACK_SETTINGS):
        recorded: list[list[Binding]] = []
        torch._dynamo.reset()
        with (torch.no_grad(), shape_config.patch(use_duck_shape=False),
              inductor_config.patch({**COMPILER_SETTINGS, **fallback}), online_softmax_at_its_size(), math_attention(),
              warnings_after_the_graph()):
            compiled = torch.compile(model, backend=recording_backend(model, inputs, compile_fx, recorded),
                                     dynamic=True)
            try:
                _, codes = run_and_get_code(compiled, *inputs)
                break
            except Exception as err:  # noqa: BLE001  (asked again with less; the first failure is the one told)
                failure = failure or err
    else:
        assert failure is not None
        raise SeedError(f"torch.compile could not compile the reference: {_said(failure)}; {WHAT_TO_DO}") from failure
    if len(recorded) != 1 or not codes:
        raise SeedError(f"the reference compiles to {len(recorded)} graphs (a graph break); {WHAT_TO_DO}")
    # One graph, but the autotuner may compile modules of its own (benchmarked alternatives) on
    # the way: the graph's own module is written last, so the latest comes first.
    return list(reversed(codes)), recorded[0]


def _said(failure: BaseException) -> str:
    """A failure's first line; for one that says nothing (a bare `assert` in the compiler, which Inductor wraps as
    "AssertionError: " and nothing after), where the innermost was raised."""
    inner = failure
    while (cause := getattr(inner, "inner_exception", None) or inner.__cause__) is not None and cause is not inner:
        inner = cause
    said = str(inner).strip()
    if said:
        text = str(failure).strip()
        return (text.splitlines()[0] if text else said.splitlines()[0])[:300]
    frames = traceback.extract_tb(inner.__traceback__)
    if not frames:
        return type(inner).__name__
    last = frames[-1]
    where = last.filename.split("site-packages/")[-1]
    return f"{type(inner).__name__} at {where}:{last.lineno} ({(last.line or '').strip()[:200]})"


def _check(text: str, problem: Any, reference_out: Any, inputs: list[Any]) -> None:
    """Raise SeedError unless the seed computes the reference's output on the reference's inputs.

    The reference was computed with reduced precision off (`exact_math`, the verifier's yardstick's flags): PyTorch's
    default cuDNN convolutions at TF32 put about 1e-3 of error in it, which a following normalisation (a convolution
    then InstanceNorm or GroupNorm: the mean taken away, the rest scaled up) lifted past the check's tolerance, and
    the seed's own fp32 convolution was refused for the reference's rounding. The seed runs with PyTorch's defaults,
    as the verifier runs a candidate: a library call it keeps at TF32 is refused here, not after the baselines."""
    import tempfile

    import torch

    from kernelopt.harness import quick_interpreter

    quick_interpreter()  # under the interpreter, its kernels run as the sandbox's workers run them
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "compiler_seed.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location("compiler_seed_check", path)
        assert spec and spec.loader
        seed = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(seed)
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = seed.ModelNew(*problem.get_init_inputs()).cuda()
        with torch.no_grad():
            got = model(*inputs)
    expected = reference_out if isinstance(reference_out, tuple | list) else (reference_out,)
    got = got if isinstance(got, tuple | list) else (got,)
    if len(got) != len(expected) or not all(matches(have, want) for want, have in zip(expected, got, strict=True)):
        raise SeedError("the translated compiler seed does not compute the reference's output; " + WHAT_TO_DO)


# Elements compared at once in float64: a whole 8 GiB output taken to float64 twice (the reference's
# and the seed's) asked for 32 GiB more, and the H200 ran out of memory on 38_L1Norm and 39_L2Norm.
CHECK_CHUNK = 1 << 26


def matches(have: Any, want: Any, chunk: int = CHECK_CHUNK) -> bool:
    """Whether one output of the seed is the reference's within CHECK_TOLERANCE, compared a slice at a time."""
    import torch

    if have.shape != want.shape:
        return False
    tolerance = CHECK_TOLERANCE.get(str(want.dtype).removeprefix("torch."), 1e-3)
    flat_have, flat_want = have.reshape(-1), want.reshape(-1)
    return all(
        torch.allclose(flat_have[i : i + chunk].double(), flat_want[i : i + chunk].double(), rtol=tolerance,
                       atol=tolerance)
        for i in range(0, flat_want.numel(), chunk)
    )


def generate(problem_path: Path, stages: Stages | None = None, gate: Callable[[], None] | None = None) -> Generated:
    """The compiler seed for the problem at `problem_path` (on this process's cuda:0); `stages` gets each
    stage's seconds as it ends (torch, inputs, reference, compile, check), a failure's too.

    With a `gate`, the compiler's modules are loaded too (stage "imports"), then the gate is called
    and returns when the GPU may be used ("waiting"): the process is started while the run's baselines
    are timed, and touches the GPU only after them."""
    stages = stages or Stages()
    import torch

    stages.lap("torch")
    if gate is not None:
        import torch._dynamo
        import torch._inductor.compile_fx  # noqa: F401  (seconds of imports, done before the gate)

        stages.lap("imports")
        gate()
        stages.lap("waiting")
    if not torch.cuda.is_available():
        raise SeedError(
            f"no CUDA GPU here: the compiler seed needs one (torch.compile writes Triton for GPUs); {WHAT_TO_DO}"
        )
    read_source(problem_path, "problem")  # a missing or unreadable file: one line
    problem = load_problem(problem_path)
    torch.manual_seed(0)
    with torch.device("cuda"):  # inputs made on the GPU: a problem's GBs of randn take seconds on the host
        model = problem.Model(*problem.get_init_inputs()).cuda()
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    torch.cuda.synchronize()
    stages.lap("inputs")
    from kernelopt.harness import exact_math

    with torch.no_grad(), exact_math():  # the seed is checked against fp32 math, not cuDNN's TF32 default (_check)
        reference_out = model(*inputs)
    torch.cuda.synchronize()
    stages.lap("reference")
    codes, bindings = _compile(model, inputs)
    compile_s = stages.lap("compile")
    torch.cuda.empty_cache()  # the compiled run's output and the autotuner's buffers are gone: the check needs room
    failure: SeedError | None = None
    for code in codes:
        try:
            made = _seed_of(problem_path, problem, inputs, reference_out, code, bindings, compile_s)
        except SeedError as err:
            failure = failure or err
            continue
        stages.lap("check")
        return replace(made, stages_s=dict(stages.seconds))
    stages.lap("check")
    assert failure is not None
    raise failure


def _seed_of(problem_path: Path, problem: Any, inputs: list[Any], reference_out: Any, code: str,
             bindings: list[Binding], compile_s: float) -> Generated:
    """The seed written from one module of the compiler's output, checked against the reference."""
    import torch
    import triton

    source = read_source(problem_path, "problem")
    names = set(parse_output(code).kernels)
    configs = picked_configs(names)
    outputs = len(reference_out) if isinstance(reference_out, tuple | list) else 1
    seed = SeedSource(
        problem_name=Path(problem_path).name,
        problem_source=source,
        code=code,
        configs=configs,
        bindings=bindings,
        outputs=outputs,
        returns_tuple=isinstance(reference_out, tuple | list),
        torch_version=torch.__version__,
        triton_version=triton.__version__,
        gpu=torch.cuda.get_device_name(0),
    )
    # both rewrites, then without the unwrap (a pattern rewrite), then as the compiler wrote it; each with every
    # reading of the lifted Python numbers the compiled graph may have kept (writer.binding_choices)
    choices = binding_choices(bindings, len(parse_output(code).arg_names)) or [bindings]
    attempts = [(REWRITES[i:], choice) for i in range(len(REWRITES) + 1) for choice in choices]
    first: Exception | None = None  # the likeliest file's failure: the one said if every file fails
    for number, (rewrites, choice) in enumerate(attempts):
        try:
            text = write_seed(replace(seed, bindings=choice), rewrites)
            _check(text, problem, reference_out, inputs)
            break
        except Exception as err:  # a wrong file may fail in any way; the next is tried
            first = first or err
            if number == len(attempts) - 1:
                raise first from None
            gc.collect()  # the failed check's outputs went with its traceback
            if torch.cuda.is_initialized():
                torch.cuda.empty_cache()
            kept = ", ".join(b.name for b in choice if b.kind in LIFTED) or "no lifted number"
            print(f"the seed with rewrites {', '.join(rewrites) or 'none'} ({kept} kept) failed its check "
                  f"({type(err).__name__}: {str(err).strip()[:200]}); the next of {len(attempts)} tried",
                  file=sys.stderr, flush=True)
    return Generated(text, seed.torch_version, seed.triton_version, seed.gpu, len(names), round(compile_s, 2),
                     rewrites)


def _wait_for_go() -> None:
    """Block until the parent writes GO; leave quietly if it closes stdin without (the run stopped)."""
    if sys.stdin.readline().strip() != GO:
        raise SystemExit(3)


def main(argv: list[str]) -> int:
    """`python -m kernelopt.seed PROBLEM OUT [--wait]`: write the seed to OUT; print one JSON line either way.

    --wait: load torch and the compiler, then wait for a line "go" on stdin before using the GPU."""
    import json
    from dataclasses import asdict

    wait = "--wait" in argv
    argv = [a for a in argv if a != "--wait"]
    if len(argv) != 2:
        print("usage: python -m kernelopt.seed PROBLEM.py OUT.py [--wait]", file=sys.stderr)
        return 2
    problem, out = Path(argv[0]), Path(argv[1])
    stages = Stages()
    try:
        made = generate(problem, stages, _wait_for_go if wait else None)
    except SeedError as err:
        stages.lap("failing")  # the stage the error ended
        facts: dict[str, object] = {"error": str(err), "stages_s": stages.seconds}
    else:
        out.write_text(made.text)
        facts = {k: v for k, v in asdict(made).items() if k != "text"}
    # the parent counts the child's start and exit from these (its wall less the stages)
    print(json.dumps({**facts, "began_at": stages.began_at, "reported_at": time.time()}), flush=True)
    return 2 if "error" in facts else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
