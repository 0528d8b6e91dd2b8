"""The beam (Context.beam = K): the K best distinct kernels kept alive as parents, and how a
round's branches are spread over them.

With K = 1, the default, the run is a chain: the best kernel is the one parent, and nothing here
changes what the nodes do. The beam is for LLM runs; the offline search keeps its own few best
structures alive (offline/structures.py) and stays a chain here.

The best kernel stays `best` and heads the beam; the other parents follow by time. A kernel
enters when it is among the K best distinct ones (by source hash) timed on the run's GPU, and
leaves when K better distinct kernels exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kernelopt.context import Context
from kernelopt.records import Attempt, Candidate, KernelRecord


def width(state: Mapping[str, Any], ctx: Context) -> int:
    """How many parents the run keeps: Context.beam for an LLM run, else 1 (a chain)."""
    return ctx.beam if state.get("uses_llm") else 1


def parents(state: Mapping[str, Any]) -> list[KernelRecord]:
    """The parents alive, the best first: the beam kept in the state, else the best alone."""
    best = state.get("best")
    kept: list[KernelRecord] = list(state.get("beam") or [])
    if best is not None and all(r.source_hash != best.source_hash for r in kept):
        kept.insert(0, best)
    return kept


def widened(
    beam: list[KernelRecord], entrants: Iterable[KernelRecord], best: KernelRecord | None, k: int
) -> list[KernelRecord]:
    """The K best distinct kernels of the beam and the entrants, the best first, then by time.

    The best heads the beam even where another kernel's median is lower by less than the noise
    (it never became the best); a kernel seen twice keeps its first record.
    """
    pool: dict[str, KernelRecord] = {}
    for record in [*([best] if best else []), *beam, *entrants]:
        pool.setdefault(record.source_hash, record)
    others = sorted(
        (r for r in pool.values() if best is None or r.source_hash != best.source_hash), key=lambda r: r.time_ms
    )
    return ([best] if best else []) + others[: k - (1 if best else 0)]


def entered(beam: list[KernelRecord], attempts: Iterable[Attempt]) -> bool:
    """Whether one of `attempts` is a kernel of the beam: the round gained (for the no-gain rule)."""
    alive = {r.source_hash for r in beam}
    return any(a.source_hash in alive and a.time_ms is not None for a in attempts)


def spread(count: int, parents_alive: int) -> list[tuple[int, int]]:
    """(parent, idea) for each branch of a round: `count` branches (at least one per parent) dealt
    round-robin over the parents, the best first; a parent's n-th branch takes its n-th idea."""
    if parents_alive == 0:
        return [(0, i) for i in range(count)]
    return [(i % parents_alive, i // parents_alive) for i in range(max(count, parents_alive))]


def parent_of(candidate: Candidate, state: Mapping[str, Any]) -> str:
    """The kernel a candidate was written from: its branch's parent, else the best it rewrote ("" for a seed)."""
    best = state.get("best")
    return candidate.parent or (best.path if best and state.get("round", 0) > 0 else "")
