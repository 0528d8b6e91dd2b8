"""The knowledge base in the loop: what a branch's prompt recalls of it, and each gain the run records.

Shared by the optimizer (the prompt's KNOWLEDGE BASE section) and the accept node (a new best
that beat the previous best is a gain, LLM or offline policy alike).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kernelopt.context import Context
from kernelopt.events import GainRecorded
from kernelopt.hardware.specs import get_gpu_spec
from kernelopt.harness.problem import source_hash
from kernelopt.knowledge.recall import problem_family, recall, record
from kernelopt.knowledge.store import Gain
from kernelopt.nodes.common import emit, verifier_for
from kernelopt.nodes.ideas import idea_for_branch
from kernelopt.records import Attempt, KernelRecord
from kernelopt.state import Branch, KernelOptState


def knowledge_text(task: Branch, ctx: Context) -> str:
    """The KNOWLEDGE BASE section for this branch's idea; '' for a first kernel or with Context.knowledge off."""
    if task["idea"] is None or not ctx.knowledge:
        return ""
    chosen, cause, fix = task["idea"]
    gpu = get_gpu_spec(task["gpu_key"])
    words = " ".join((chosen.summary, chosen.reasoning, *chosen.root_causes, *chosen.recommended_fixes, cause, fix))
    return recall(ctx, task["problem_file"], gpu.architecture, gpu.key, chosen.category, words, task["run_dir"],
                  verifier_for(task, ctx))  # type: ignore[arg-type]


def _idea_words(state: KernelOptState, attempt: Attempt) -> str:
    """What a gain changed: the attempt's own words, or for a repair the round's idea it repaired."""
    if attempt.repair == 0:
        return attempt.change
    first = next((a for a in state.get("attempts", []) if a.round == attempt.round and a.repair == 0), None)
    return f"{first.change} (once repaired)" if first else attempt.change


def remember_gain(
    state: KernelOptState, ctx: Context, attempt: Attempt, branch: int, new: KernelRecord, old: KernelRecord | None
) -> None:
    """Record in the knowledge store a new best that beat `old` (round 0 only picks a starting kernel)."""
    if not ctx.knowledge or old is None or attempt.round == 0:
        return
    diagnosis = state.get("diagnosis")
    # a repair keeps the round's idea: branch 0's (nodes/branches.py)
    category = idea_for_branch(diagnosis, branch if attempt.repair == 0 else 0)[0].category if diagnosis else "other"
    problem_file = state["problem_file"]
    gain = Gain(
        problem=Path(state.get("problem_path") or problem_file).stem,
        problem_hash=source_hash(Path(problem_file).read_text()),
        family=problem_family(problem_file, verifier_for(state, ctx))[0],
        bottleneck=category,
        change=_idea_words(state, attempt),
        speedup=old.time_ms / new.time_ms,
        before_ms=old.time_ms,
        after_ms=new.time_ms,
        gpu=state["gpu_key"],
        gpu_time=new.timing.is_gpu_time,
        run_dir=state["run_dir"],
        round=attempt.round,
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    number = record(ctx, gain)
    if number is not None:
        emit(state, GainRecorded(id=number, round=attempt.round, family=gain.family, bottleneck=category,
                                 speedup=round(gain.speedup, 4)))
