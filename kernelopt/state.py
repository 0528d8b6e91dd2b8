"""The typed state the graph passes between nodes, and the frozen records it carries.

Values are JSON-native (str, numbers, lists, dicts) or frozen dataclasses of those. Kernel
sources, logs and profiles live as files in the run directory; the state points at them.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired

from typing_extensions import TypedDict

from kernelopt.budget import add_tokens
from kernelopt.records import Baselines, BottleneckResult, Roofline, Timing

# faster: a new best; within_noise: a faster median, but not by more than the noise and the margin
Outcome = Literal["faster", "within_noise", "slower", "incorrect", "failed", "rejected"]


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


@dataclass(frozen=True)
class PendingBest:
    """A verified step whose new best waits for the person's yes (Context.approve).

    The verifier stores its verdicts here instead of in `attempts`; the accept node asks, then
    records them, with `attempts[index]` (the proposed kernel) accepted or rejected.
    """

    attempts: tuple[Attempt, ...]
    index: int
    best: KernelRecord
    stops: tuple[str, ...] = ()
    branch: int = 0  # the proposed kernel's optimizer branch


class InputState(TypedDict):
    """What a caller provides: the problem's source, and optionally a starting kernel's."""

    problem_source: str
    kernel_source: NotRequired[str | None]
    problem_path: NotRequired[str | None]  # a convenience: read when problem_source is empty
    kernel_path: NotRequired[str | None]
    run_dir: NotRequired[str | None]  # where artifacts go; a fresh folder by default


def latest(_old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The last write wins; parallel optimizer branches may each write one in the same step."""
    return new


class OutputState(TypedDict):
    """What a run returns: the best kernel, the baselines, the last roofline and why it stopped."""

    run_dir: str
    stop_reason: str | None
    best: KernelRecord | None
    baselines: Baselines | None
    roofline: Roofline | None
    diagnosis: Diagnosis | None
    round: int
    gpu_key: str
    # LLM tokens per node: {"judger": {"input": n, "output": n, "calls": n, "estimated": n}, ...}
    tokens: Annotated[dict[str, dict[str, int]], add_tokens]
    # What the last node did, for people watching (the studio shows each node's update):
    # the candidate's change and path, the verdicts, the new best, the report's files.
    progress: Annotated[dict[str, Any], latest]


class KernelOptState(InputState, OutputState):
    """Everything the nodes share while a run is under way."""

    problem_file: str  # the problem as a file in the run directory
    uses_llm: bool  # an LLM writes and repairs kernels (else the offline policy)
    # Kernels waiting for the verifier: optimizer branches add, the verifier empties (Overwrite).
    candidates: Annotated[list[Candidate], operator.add]
    repairs: int  # repair steps spent on the current round
    last_error: str | None  # the verifier's one line for the last failed candidate
    rounds_without_gain: int
    ncu_metrics: dict[str, float]  # the best kernel's aggregated NCU metrics ({} without NCU)
    attempts: Annotated[list[Attempt], operator.add]
    started_at: float  # the run's start (time.time()), for the time budget
    pending: NotRequired[PendingBest | None]  # a new best awaiting approval (Context.approve), else None
    json_schema_ok: bool  # False once the server refused (or ignored) a json_schema response_format


class Branch(TypedDict):
    """What one optimizer branch is given through Send: its task, and what its prompt needs.

    Not part of the state: the judger (a round's branches), the verifier (one repair per failed
    candidate) and setup (the first kernel) build one per branch from the state as they leave it.
    """

    round: int
    repair: int  # 0 for the round's first candidates, then 1, 2, ... for repairs
    branch: int
    idea: tuple[BottleneckResult, str, str] | None  # bottleneck, cause, fix; None: write the first kernel
    kernel_path: str | None  # the kernel to rewrite: the best, or the failed candidate to repair
    error: str | None  # why the kernel to repair failed
    # the step's brief, the same for each of its branches
    run_dir: str
    problem_file: str
    gpu_key: str
    best: KernelRecord | None
    baselines: Baselines | None
    roofline: Roofline | None
    ncu_metrics: dict[str, float]
    history: list[Attempt]  # the last attempts, as the prompt recalls them
    lessons: str  # the lessons of the finished rounds ('' when none)
    tried: list[str]  # source hashes of every kernel tried
    tokens: dict[str, dict[str, int]]  # the run's tokens so far, for the budget
    started_at: float | None
