"""The typed state the graph passes between nodes (its records are in records.py).

Values are JSON-native (str, numbers, lists, dicts) or frozen dataclasses of those. Kernel
sources, logs and profiles live as files in the run directory; the state points at them.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired

from typing_extensions import TypedDict

from kernelopt.budget import add_tokens
from kernelopt.records import (  # the records live at the bottom; named here too, where the state uses them
    Attempt,
    Baselines,
    BottleneckResult,
    Candidate,
    Diagnosis,
    JudgedParent,
    KernelRecord,
    PendingBest,
    Roofline,
)


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
    pending: NotRequired[PendingBest | None]  # a verified step with a new best, for the accept node
    # (branch, attempt) decided before verification this step: a candidate the person turned down
    settled: NotRequired[list[tuple[int, Attempt]]]
    # Context.beam > 1 (an LLM run): the parents alive, the best first, distinct by source hash;
    # and this round's parents as the judger diagnosed them, in the same order
    beam: NotRequired[list[KernelRecord]]
    judged: NotRequired[list[JudgedParent]]
    json_schema_ok: bool  # False once the server refused (or ignored) a json_schema response_format
    # Several chat models (Context.models): their names, the judging one first (setup and each
    # round's judger write it); those dropped from the run, with why; LLM tokens per model.
    models: NotRequired[list[str]]
    dropped_models: NotRequired[dict[str, str]]
    model_tokens: Annotated[dict[str, dict[str, int]], add_tokens]


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
    failed: NotRequired[list[str]]  # source hashes of the kernels the full verification refused
    tokens: dict[str, dict[str, int]]  # the run's tokens so far, for the budget
    started_at: float | None
    model: NotRequired[str | None]  # the chat model that writes this branch's candidate (None: the first)
    live_models: NotRequired[list[str]]  # the run's models not dropped: with more than one, a failed call is no stop
