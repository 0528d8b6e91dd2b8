"""The compiler seed as a run asks for it: from the cache when this problem, torch and GPU made one
before, else made in a child process with a time limit (`python -m kernelopt.seed`).

Nothing here imports torch: a host without a GPU is told so from the driver's tools alone, and
the graph process stays light. A failure is cached like a seed (the same compiler fails the same
way), a time-out is not.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path

from kernelopt.harness.problem import read_source, source_hash
from kernelopt.records import InputError
from kernelopt.seed.child import SeedChild
from kernelopt.seed.errors import WHAT_TO_DO, SeedError

SEED_TIMEOUT_S = 900.0  # max-autotune benchmarks every GEMM tile: minutes on a large problem
CACHE_FOLDER = "compiler-seeds"
NO_GPU = (
    f"no CUDA GPU on this host: the compiler seed needs one (torch.compile writes Triton only for a GPU); {WHAT_TO_DO}"
)


@dataclass(frozen=True)
class CompilerSeed:
    """A seed file made by the compiler, and what made it."""

    path: str
    torch_version: str
    gpu: str
    kernels: int
    compile_s: float
    cached: bool
    rewrites: tuple[str, ...] = ()  # the rewrites of the compiler's kernels it has (kernel_text.REWRITES)
    # where its making took its time: the child's start (Python, imports), generate.Stages' stages, its
    # exit; a cached seed's are those of the run that made it
    stages_s: dict[str, float] = field(default_factory=dict)


def no_gpu_reason() -> str | None:
    """One line saying why this host cannot make a compiler seed (no GPU), or None; torch is not imported."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return NO_GPU
    if shutil.which("nvidia-smi") is None and not Path("/dev/nvidiactl").exists():
        return NO_GPU
    return None


def seed_possible(enabled: bool) -> bool:
    """Whether a problem without a kernel can start from its compiler seed here (turned on, a GPU)."""
    return enabled and no_gpu_reason() is None


def gpu_name(gpu: str | None) -> str:
    """The name of the GPU a seed is made on ("NVIDIA H200"), from nvidia-smi; "" where it cannot say."""
    index = gpu if gpu is not None else (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip()
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", index],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip().splitlines()[0].strip() if done.returncode == 0 and done.stdout.strip() else ""


# What a seed is made with (the compiler's settings, what the translator turns into Triton): a
# seed or a failure cached by an older kernelopt is not served once this changes. 2: convolutions
# through cuDNN become the seed's own Triton convolution (they were refused); 3: its program offsets in int64;
# 4: a GEMM template's index type follows its launch's tensors (int32 overflowed past 2**31 elements), a view
# made in the return statement, a number lifted from a global (math.pi), an fp64 square root; 5: guarded
# index wraps taken out, sizes specialized at launch (kernel_text.standalone); 6: the online softmax where the row is
# long (generate.online_softmax_at_its_size); 7: the helpers' exp written as tl.math.exp, as the kernels' own;
# 8: checked against fp32 math, each reading of the lifted numbers tried, a warning moved after the graph, the
# convolution's tile cut to a group's output channels (failures cached before, such as a broken graph, are stale);
# 9: a group of few input and output channels on the direct convolution (seed/direct.py); 10: its transposed kernel's
# tap offsets a division a tap, its plain one's runs along W (CONV_DIRECT_RUN); 11: every convolution kernel's 64-bit
# offsets taken where a tensor's strides reach past 2**31, not its count of elements (a view, padded strides); 12: a
# number the forward takes (`A, s`) read as that argument (its seed failed: more graph inputs than traced); 13: the
# Model's class attributes and helper methods copied beside its __init__ (`expansion`, `_make_layer`: no seed); 14:
# the class's own name in a copied method (`Model._width(n)`, `isinstance(m, Model)`) read as ModelNew (NameError);
# 15: a float the forward takes, where a kernel loads it as a 0-d tensor, made on the inputs' device (it was the CPU's);
# 16: a compile that failed at the seed's settings asked again with less (generate.FALLBACK_SETTINGS: failures stale);
# 17: the first fallback without the compiler's coalescing analysis (its assert on a minimum over channels).
SEED_FORMAT = 17


def cache_key(problem_source: str, torch_version: str, gpu: str) -> str:
    """The seed's file stem: the problem's hash, the seed format, the torch version and the GPU, as a file name."""
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", f"{torch_version}-{gpu or 'gpu'}").strip("-")
    return f"{source_hash(problem_source)[:16]}-s{SEED_FORMAT}-{slug}"


def _torch_version() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "no-torch"


def _cached(stem: Path) -> CompilerSeed | None:
    meta = stem.with_suffix(".json")
    if not meta.exists():
        return None
    facts = json.loads(meta.read_text())
    if facts.get("error"):
        raise SeedError(facts["error"])
    if not stem.with_suffix(".py").exists():
        return None
    return CompilerSeed(str(stem.with_suffix(".py")), facts["torch_version"], facts["gpu"], facts["kernels"],
                        facts["compile_s"], True, tuple(facts.get("rewrites") or ()), dict(facts.get("stages_s") or {}))


def _run_child(problem: Path, out: Path, gpu: str | None, timeout_s: float) -> dict[str, object]:
    child = SeedChild(problem, out, gpu)
    try:
        return child.finish(timeout_s)
    finally:
        child.close()


class SeedAhead:
    """A seed's child started ahead, while the run's baselines are timed: it loads Python, torch and
    the compiler (seconds a run would otherwise wait for), then waits before it uses the GPU, so the
    baselines are timed alone. `compiler_seed(..., ahead=)` lets it go on; `cancel` stops it."""

    def __init__(self, stem: Path, problem: Path, gpu: str | None) -> None:
        self.stem, self.scratch = stem, Path(tempfile.mkdtemp(dir=stem.parent))
        self.out = self.scratch / "seed.py"
        try:
            self.child = SeedChild(problem, self.out, gpu, wait=True)
        except BaseException:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise

    def finish(self, timeout_s: float) -> dict[str, object]:
        return self.child.finish(timeout_s)

    def cancel(self) -> None:
        """Stop the process and what it started (it never used the GPU unless told to go); remove its
        folder; again, nothing."""
        self.child.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _stem(problem: Path, cache_dir: str | Path, gpu: str | None) -> Path:
    folder = Path(cache_dir) / CACHE_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    return folder / cache_key(read_source(problem, "problem"), _torch_version(), gpu_name(gpu))


def seed_ahead(problem_path: str | Path, cache_dir: str | Path, gpu: str | None = None) -> SeedAhead | None:
    """The seed's child started ahead for `compiler_seed`, or None where none will be made here (no GPU,
    the seed or its failure cached, an unreadable problem: `compiler_seed` says which)."""
    if no_gpu_reason():
        return None
    problem = Path(problem_path).resolve()
    try:
        stem = _stem(problem, cache_dir, gpu)
        if _cached(stem):
            return None
        return SeedAhead(stem, problem, gpu)
    except (SeedError, InputError, OSError):  # `compiler_seed` makes it, or says why not, in its own time
        return None


def compiler_seed(
    problem_path: str | Path, cache_dir: str | Path, gpu: str | None = None, timeout_s: float = SEED_TIMEOUT_S,
    ahead: SeedAhead | None = None,
) -> CompilerSeed:
    """The compiler seed of a problem, cached in `cache_dir`/compiler-seeds; SeedError (one line) when none can be made.

    `gpu` names the GPU as CUDA_VISIBLE_DEVICES would (None: this process's own). `ahead`: the child
    `seed_ahead` started for this problem, cache and GPU, which is used (and always ended) here."""
    try:
        reason = no_gpu_reason()
        if reason:
            raise SeedError(reason)
        stem = ahead.stem if ahead is not None else _stem(Path(problem_path).resolve(), cache_dir, gpu)
        found = _cached(stem)
        if found:
            return found
        if ahead is not None:
            return _kept(stem, ahead.out, ahead.finish(timeout_s))
    finally:
        if ahead is not None:
            ahead.cancel()
    with tempfile.TemporaryDirectory(dir=stem.parent) as scratch:
        made = Path(scratch) / "seed.py"
        return _kept(stem, made, _run_child(Path(problem_path).resolve(), made, gpu, timeout_s))


def _kept(stem: Path, made: Path, facts: dict[str, object]) -> CompilerSeed:
    """The child's seed (or its failure, raised) moved into the cache."""
    if facts.get("error"):
        stages = facts.get("stages_s")
        stem.with_suffix(".json").write_text(json.dumps({"error": facts["error"], "stages_s": stages}) + "\n")
        raise SeedError(str(facts["error"]), stages if isinstance(stages, dict) else None)
    shutil.move(made, stem.with_suffix(".py"))
    stem.with_suffix(".json").write_text(json.dumps(facts, indent=1) + "\n")
    found = _cached(stem)
    assert found is not None
    return replace(found, cached=False)
