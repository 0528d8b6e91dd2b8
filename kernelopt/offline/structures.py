"""Which structures a round's sweep measures besides the best kernel's knobs.

A structure is what a kernel does: the starting kernel's own ("" below), or a structural move's
template. The sweep tables mark each row with the move it came from ("move"), so a round can
see which moves were never measured (they come first: a run is not exhausted while one is
left), and which structures measured best so far (the best few stay alive: each gets a few
configurations around its own best, not only the structure that happened to win first).
A structure is dead for the rest of the run once a kernel of it was refused by the full
verification (wrong on a size the sweep's one-case check did not try, a crash, a rule): its
other configurations compute the same way. One swept at over ALIVE_WITHIN times the fastest
structure's time is not kept alive either: no knob closes such a gap.
A move that rewrites the best kernel (a seed's convolution split, its epilogue fused) is a new structure
on each structure it rewrites: named for both (`dot.conv_split_f16+fuse.conv_rows`), it is measured once
on each, so two rewrites compose whichever the sweep measured first.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernelopt.harness.problem import source_hash
from kernelopt.offline.moves import MoveInstance, Moves
from kernelopt.offline.moves.precision import literal_k
from kernelopt.offline.space import Config, SpaceLimits, plan
from kernelopt.offline.tuner import Direction, knob_values, with_config
from kernelopt.records import SweepRow

MOVE_SHARE = 0.6  # of a round's budget, for moves never measured (at least one configuration each)
ALIVE = 3  # structures kept alive: the best few by their best swept time
ALIVE_CONFIGS = 2  # configurations around each live structure that is not the best's
ALIVE_WITHIN = 2.0  # a structure's best swept time over this many times the fastest's: not kept alive


@dataclass(frozen=True)
class Planned:
    """One configuration to measure: its values, its label, its source and the move it instantiates."""

    config: Config
    label: str
    source: str
    move: str = ""  # "" for the best kernel's own structure


def row_of(row: dict[str, Any]) -> SweepRow:
    return SweepRow(**{k: v for k, v in row.items() if k not in ("path", "move")})


def _rows(tables: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for table in tables for row in table["rows"]]


def on_structure(moves: Moves, best_move: str) -> Moves:
    """`moves` with the rewrites of the best kernel named for the structure they rewrite (`best_move`, the move
    the best kernel came from; "" for the starting kernel's own, whose rewrites keep their names)."""
    if not best_move:
        return moves
    renamed = tuple(replace(m, name=f"{best_move}+{m.name}") if m.name in moves.rewrites else m
                    for m in moves.instances)
    return replace(moves, instances=renamed, rewrites=frozenset(f"{best_move}+{n}" for n in moves.rewrites))


def measured_moves(tables: Iterable[dict[str, Any]]) -> set[str]:
    """The moves some sweep measured (timed or failed: a move whose every configuration failed was tried;
    one whose check the run's time budget kept from starting was not)."""
    return {row["move"] for row in _rows(tables) if row.get("move") and row.get("rule") != "time-budget"}


def structure_of(best_hash: str, tables: Iterable[dict[str, Any]]) -> str:
    """The move the best kernel came from, or "" when it is the starting kernel's structure."""
    for row in _rows(tables):
        path = Path(row.get("path") or "")
        if row.get("move") and path.is_file() and source_hash(path.read_text()) == best_hash:
            return str(row["move"])
    return ""


def dead_moves(refused: Iterable[str], tables: Iterable[dict[str, Any]], best_move: str = "") -> set[str]:
    """The moves one of whose kernels (by source hash, in `refused`) the full verification refused;
    never the best kernel's own structure (it passed)."""
    refused = set(refused)
    if not refused:
        return set()
    dead = set()
    for row in _rows(tables):
        path = Path(row.get("path") or "")
        if row.get("move") and row["move"] not in dead and path.is_file() and source_hash(path.read_text()) in refused:
            dead.add(str(row["move"]))
    return dead - {best_move}


def move_plans(instances: Iterable[MoveInstance], done: set[str], budget: int) -> list[Planned]:
    """The first configurations of each move never measured, sharing `budget` (at least one each;
    what is left over after an even share goes to the moves first in order: the diagnosis's)."""
    todo = [m for m in instances if m.name not in done]
    if not todo:
        return []
    each = max(1, budget // len(todo))
    spare = max(0, budget - each * len(todo))
    out: list[Planned] = []
    for move in todo:
        extra = min(spare, max(0, len(move.grid) - each))
        spare -= extra
        out += [Planned(dict(c), move.name, with_config(move.source, c), move.name) for c in move.grid[: each + extra]]
    return out


def for_kernel(limits: SpaceLimits | None, source: str) -> SpaceLimits:
    """`limits` for sweeping the knobs of the kernel in `source`: a K it fixes keeps its K step dividing it
    (a compiler GEMM template with K fixed may load its K tiles with no mask)."""
    return replace(limits or SpaceLimits(), fixed_k=frozenset(literal_k(source)))


def alive_plans(tables: list[dict[str, Any]], best_move: str, seed: int, dead: Collection[str] = (),
                limits: SpaceLimits | None = None) -> list[Planned]:
    """A few configurations around the best row of each live structure other than the best's (not
    dead, and within ALIVE_WITHIN of the fastest structure)."""
    by_move: dict[str, list[dict[str, Any]]] = {}
    for row in _rows(tables):
        if row.get("move") and row["move"] not in dead and row["time_ms"] is not None:
            by_move.setdefault(row["move"], []).append(row)
    timed = [r["time_ms"] for r in _rows(tables) if r["time_ms"] is not None]
    cutoff = ALIVE_WITHIN * min(timed) if timed else 0.0
    near = [m for m in by_move if min(r["time_ms"] for r in by_move[m]) <= cutoff]
    fastest = sorted(near, key=lambda m: min(r["time_ms"] for r in by_move[m]))[:ALIVE]
    out: list[Planned] = []
    for move in (m for m in fastest if m != best_move):
        rows = by_move[move]
        top = min(rows, key=lambda r: (-r["stage"], r["time_ms"]))
        path = Path(top.get("path") or "")
        if not path.is_file():
            continue
        source = path.read_text()
        measured = [row_of(r) for r in _rows(tables) if r.get("move") == move]
        own = for_kernel(limits, source)
        for config in plan(knob_values(source), Direction(), measured, ALIVE_CONFIGS, seed=seed, limits=own):
            out.append(Planned(config, move, with_config(source, config), move))
    return out


def own_rows(tables: Iterable[dict[str, Any]], best_move: str) -> list[SweepRow]:
    """The rows measured on the best kernel's own structure: what its knob plan must not repeat."""
    return [row_of(r) for r in _rows(tables) if (r.get("move") or "") == best_move]


def moves_budget(budget: int, untried: int) -> int:
    return max(untried, math.ceil(budget * MOVE_SHARE)) if untried else 0
