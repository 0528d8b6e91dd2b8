"""The frozen records kernelopt passes around: timings, baselines, the floor, the roofline, a
diagnosis, a verdict, and the errors that name the party at fault.

This module imports nothing else from kernelopt: every other module may import it, so the
import arrows point one way (cli -> graph -> nodes -> prompts / offline / harness / hardware ->
records), and a run's state can be read back without torch or the harness.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Clock = Literal["cuda_events", "interpreter", "cpu"]


@dataclass(frozen=True)
class Timing:
    """Median and spread of one kernel's time over `trials` runs."""

    median_ms: float
    p25_ms: float
    p75_ms: float
    min_ms: float
    max_ms: float
    trials: int
    clock: Clock
    overhead_ms: float = 0.0  # the empty CUDA-event pair's own time, subtracted from every trial

    @property
    def iqr_ms(self) -> float:
        return self.p75_ms - self.p25_ms

    @property
    def is_gpu_time(self) -> bool:
        return self.clock == "cuda_events"

    def label(self) -> str:
        """A short human-readable form: '1.234 ms (IQR 0.010, n=100)' plus the clock caveat."""
        text = f"{self.median_ms:.4f} ms (IQR {self.iqr_ms:.4f}, n={self.trials})"
        if self.is_gpu_time:
            return text
        return text + (" [interpreter time, not GPU performance]" if self.clock == "interpreter" else " [CPU time]")


@dataclass(frozen=True)
class Measured:
    """One configuration's outcome in a sweep: its time, or the rule and reason it was dropped for."""

    variant: int
    timing: Timing | None = None
    stage: int = 0  # the last halving stage it was timed in
    rule: str | None = None
    reason: str | None = None


Bound = Literal["memory", "compute", "underutilized", "unknown"]


@dataclass(frozen=True)
class FloorEstimate:
    """The least work a problem needs: every input read once, every output written once."""

    min_bytes: int
    flops: float
    dtype: str  # "fp32", "fp16", "bf16", ... the dtype whose peak applies


def least_time_ms(floor: FloorEstimate, bandwidth_gbs: float, peak_tflops: float | None) -> float:
    """The least time the problem can take: max(min bytes / bandwidth, FLOPs / peak), in ms.

    Without a peak for the dtype only the memory time counts.
    """
    memory_s = floor.min_bytes / (bandwidth_gbs * 1e9)
    compute_s = floor.flops / (peak_tflops * 1e12) if peak_tflops else 0.0
    return max(memory_s, compute_s) * 1e3


@dataclass(frozen=True, kw_only=True)
class Roofline:
    """Where a kernel sits against the roofline, from NCU's SOL% and from the floor."""

    bottleneck: Bound
    compute_sol_pct: float | None
    memory_sol_pct: float | None
    efficiency_pct: float | None  # floor time / measured time where known, else max SOL%
    headroom_pct: float | None  # 100 - efficiency_pct
    at_roofline: bool
    uses_tensor_cores: bool | None
    warnings: tuple[str, ...] = ()
    source: Literal["ncu", "floor", "ncu+floor", "none"] = "none"
    # floor view (None where unknown)
    measured_time_ms: float | None = None
    floor_time_ms: float | None = None
    min_bytes: int | None = None
    flops: float | None = None
    arithmetic_intensity: float | None = None  # FLOPs per minimal byte
    achieved_gbs: float | None = None  # min_bytes / measured time
    achieved_tflops: float | None = None  # flops / measured time
    dram_bytes: float | None = None  # what NCU saw moved, against min_bytes
    bandwidth_gbs: float | None = None  # the ceiling used (measured or datasheet)
    peak_tflops: float | None = None  # the ceiling used (measured or datasheet)


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The verifier's answer for one kernel: accepted, or the one rule it broke and how."""

    accepted: bool
    reason: str
    rule: str | None = None  # an id of rule_table.RULES
    timing: Timing | None = None
    launches: int | None = None
    log_path: str | None = None
    fingerprint: str | None = None  # its compiled code's (harness/sandbox/fingerprint.py); None: not known
    duplicate_of: str | None = None  # the kernel already timed that it compiles to: not timed again
    winners: str = ""  # what its @triton.autotune picked, as config_text writes it ("" when none)


@dataclass(frozen=True, kw_only=True)
class TimingMethod:
    """How a run's times were taken: the protocol's settings as they were used (report.md's method)."""

    timer: str  # "CUDA events", or the host clock where there is no GPU
    flush_l2_bytes: int  # written, then as many bytes read, before each trial; 0: no flush (host clock)
    warmup_ms: float  # at least this much work run before timing (0: one untimed call on the host)
    min_warmup_runs: int
    target_total_ms: float  # the trial count follows the kernel's length to reach this much timed work
    min_trials: int
    max_trials: int
    statistic: str = "median"
    spread: str = "interquartile range (p75 - p25)"


# How a report names a baseline timed with reduced precision off.
FULL = "at full precision"


@dataclass(frozen=True, kw_only=True)
class Baselines:
    """The reference's times under the candidates' protocol (eager, torch.compile in its default
    and max-autotune modes, a CUDA-graph replay of eager), what they cost, and the problem's floor.

    A baseline that was not asked for is None with no error; one that failed or ran past its
    limit is None with its error, and the run goes on without it.
    """

    eager: Timing | None
    compile: Timing | None  # torch.compile(model), the default mode
    compile_error: str | None = None
    floor: FloorEstimate | None = None
    max_autotune: Timing | None = None  # torch.compile(model, mode="max-autotune")
    max_autotune_error: str | None = None  # failed, or over its time limit
    max_autotune_cache_hit: bool | None = None  # Inductor's FX graph cache answered (no compile paid again)
    cuda_graph: Timing | None = None  # eager captured once in a CUDA graph, then replayed
    cuda_graph_error: str | None = None
    compile_s: float | None = None  # seconds the default-mode compile took (its first call)
    max_autotune_compile_s: float | None = None
    wall_s: float | None = None  # wall time of every baseline together, the floor and compiles included
    max_autotune_limit_s: float | None = None  # the max-autotune compile's time limit, when it was asked for
    method: TimingMethod | None = None
    # The baselines whose outputs the verifier's yardstick refuses ("PyTorch eager", "torch.compile" -> why):
    # PyTorch's defaults ran part of the problem at reduced precision (TF32 convolutions). Then eager
    # and torch.compile are timed again with reduced precision off, and judged again (reference_baselines.py).
    refused: dict[str, str] = field(default_factory=dict)
    eager_full: Timing | None = None
    compile_full: Timing | None = None
    full_error: str | None = None  # a baseline that could not be timed at full precision, and why
    refused_full: dict[str, str] = field(default_factory=dict)  # refused at full precision too: not a precision fault
    judge_error: str | None = None  # why the baselines' outputs could not be judged (then none is refused)

    def full_precision(self) -> dict[str, Timing]:
        """The baselines timed with reduced precision off, by the name a report gives them."""
        named = {f"PyTorch eager {FULL}": self.eager_full, f"torch.compile (default) {FULL}": self.compile_full}
        return {name: timing for name, timing in named.items() if timing is not None}

    def compile_at_precision(self) -> tuple[str, Timing] | None:
        """torch.compile (default) at the verifier's precision: the default's time where the yardstick
        accepted it, else its time at full precision where that was accepted; None without either."""
        if "torch.compile" not in self.refused:
            return ("torch.compile (default)", self.compile) if self.compile and self.refused else None
        if self.compile_full and "torch.compile" not in self.refused_full:
            return f"torch.compile (default) {FULL}", self.compile_full
        return None

    def compiled(self) -> dict[str, Timing]:
        """The torch.compile baselines that were timed, by mode ("default", "max-autotune")."""
        modes = {"default": self.compile, "max-autotune": self.max_autotune}
        return {mode: timing for mode, timing in modes.items() if timing is not None}

    def strongest_compile(self) -> tuple[str, Timing] | None:
        """The fastest torch.compile mode timed, and its time (None: none was)."""
        compiled = self.compiled()
        return min(compiled.items(), key=lambda item: item[1].median_ms) if compiled else None

    def every(self, full: bool = True) -> dict[str, Timing]:
        """Every baseline timed, by the name a report gives it (`full`: those at full precision too)."""
        named = {"PyTorch eager": self.eager, "CUDA graph of eager": self.cuda_graph}
        named.update({f"torch.compile ({mode})": timing for mode, timing in self.compiled().items()})
        named.update(self.full_precision() if full else {})
        return {name: timing for name, timing in named.items() if timing is not None}

    def best(self) -> tuple[str, Timing] | None:
        """The fastest baseline of all as users run them (the one a kernel has to beat), and its time."""
        every = self.every(full=False)
        return min(every.items(), key=lambda item: item[1].median_ms) if every else None


@dataclass(frozen=True)
class BottleneckResult:
    """One diagnosed bottleneck, as the judger's LLM described it."""

    category: str  # one of CATEGORIES
    summary: str
    reasoning: str
    root_causes: tuple[str, ...]
    recommended_fixes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class SweepRow:
    """One configuration a sweep measured: its knob values, and its time or why it has none."""

    config: dict[str, int]  # knob name -> value (BLOCK_SIZE, num_warps, ...)
    round: int
    time_ms: float | None = None  # median of its last halving stage
    trials: int = 0
    stage: int = 0  # the last halving stage it was timed in (1 = all; 0 = never timed)
    error: str | None = None  # why it failed the quick check or could not run
    rule: str | None = None
    label: str = ""  # an autotune config's number, when the kernel's own configs were swept
    verified: str | None = None  # the full verification's outcome, for the one or two verified


# faster: a new best; within_noise: a faster median, but not by more than the noise and the margin
# outpaced: faster than the best on the GPU that timed it, but another candidate of the step gained more
# duplicate: correct, and compiled to the kernels of one already timed (duplicate_of): its time is that one's
Outcome = Literal["faster", "within_noise", "outpaced", "slower", "duplicate", "incorrect", "failed", "rejected"]
REFUSED: frozenset[str] = frozenset({"incorrect", "failed", "rejected"})  # the verifier's refusals: no time


@dataclass(frozen=True)
class KernelRecord:
    """A verified kernel: where its source is, and how fast it ran."""

    path: str
    source_hash: str
    timing: Timing
    round: int

    @property
    def time_ms(self) -> float:
        return self.timing.median_ms


@dataclass(frozen=True)
class Diagnosis:
    """The judger's verdict for one round: the bottlenecks seen and the one cause and fix chosen."""

    bottlenecks: tuple[BottleneckResult, ...]
    category: str
    root_cause: str
    recommended_fix: str
    source: Literal["llm", "rules"]


@dataclass(frozen=True)
class JudgedParent:
    """One parent of a beam as the judger saw it at a round's start: the kernel, where it sits on the
    roofline (from its own time; NCU's metrics only for the best, which the profile node measured),
    and its own diagnosis."""

    record: KernelRecord
    roofline: Roofline | None
    diagnosis: Diagnosis


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One candidate tried: what changed, what the verifier said, how it compared with the best."""

    round: int
    repair: int  # 0 for the round's first candidate, then 1, 2, ... for repairs
    kernel_path: str
    source_hash: str
    outcome: Outcome
    change: str
    time_ms: float | None = None
    speedup_vs_best: float | None = None  # best time / this time, before this attempt
    error: str | None = None
    rule: str | None = None
    new_best: bool = False
    where: str = ""  # the GPU that judged it ("gpu 1") when not the run's own: its times compare only there
    fingerprint: str = ""  # its compiled code's, when known: a later candidate with the same is a duplicate
    duplicate_of: str = ""  # the kernel path of the attempt whose compiled code (and so time) it shares
    model: str = ""  # the chat model that wrote it ("" for the starting kernel, a seed, the offline policy)
    parent: str = ""  # the kernel it was written from (its path; a repair's: the failed kernel); "" for a seed
    winner: str = ""  # its autotune's pick, as Verdict.winners
    pinned: str = ""  # pinned tuning (nodes/pinned.py): the configuration both it and its parent were run at
    pinned_ms: float | None = None  # its time at that configuration alone
    parent_ms: float | None = None  # its parent's time, against which the pinned time was judged


@dataclass(frozen=True)
class Candidate:
    """What one optimizer branch hands the verifier: a kernel file, or why it has none.

    Parallel branches write only to the `candidates` list (and token counts); a branch that
    must end the run (its LLM is down, a budget is spent, nothing is left to try) says so in
    `stop`, and the verifier, the one node that joins them, asks `should_stop` with it.
    """

    path: str | None
    change: str
    branch: int = 0
    error: str | None = None  # the reply held no usable kernel: this is why
    stop: str | None = None
    model: str = ""  # the chat model that wrote it ("" when none did)
    parent: str = ""  # the kernel its branch rewrote (its path); "" for a seed or a first kernel
    # the file's source hash (harness.problem.source_hash), taken where it was written, so that no
    # later node reads and hashes it again; "" in checkpoints from before it was carried
    source_hash: str = ""


@dataclass(frozen=True)
class PendingBest:
    """A verified step with a new best, handed from the verifier to the accept node, which takes
    the best (under Context.approve: once the person says yes) and records the step."""

    attempts: tuple[Attempt, ...]
    records: tuple[KernelRecord | None, ...]  # per attempt: the new best it made, else None
    branches: tuple[int, ...]  # per attempt: its optimizer branch
    stops: tuple[str, ...] = ()
    entrants: tuple[KernelRecord, ...] = ()  # every kernel of the step timed on the run's GPU (for a beam)


class InputError(ValueError):
    """Bad user input: the message is one line saying what is wrong and what to do."""


class HarnessError(RuntimeError):
    """kernelopt's own code failed while it judged a kernel: a bug to report, not the kernel's fault."""


def one_line(text: str, limit: int) -> str:
    """`text` on one line (runs of whitespace made one space), cut to `limit` characters with "..."."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def config_text(config: dict[str, int] | None) -> str:
    """A launch configuration in words: "BLOCK_SIZE=1024, num_warps=4" ("" for none)."""
    return ", ".join(f"{k}={v}" for k, v in (config or {}).items())


def config_of(text: str) -> dict[str, int]:
    """config_text's words back as a configuration (what does not read as NAME=int is left out)."""
    found: dict[str, int] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        if name.strip().isidentifier() and value.strip().lstrip("-").isdigit():
            found[name.strip()] = int(value)
    return found
