"""The offline optimizer: a measured sweep of the best kernel's knobs, following the diagnosis.

A round plans configurations around the best kernel (space.py: the diagnosis's direction
first, nothing measured before, nothing further along a move measured slower), measures them
all in one sandboxed sweep with successive halving, and hands the fastest one or two to the
verifier node, which verifies them in full and keeps one only when it beats the best by more
than the noise. Each round's table lives in sweeps/round-NNN.json: the next round learns from
every table before it, a repair verifies the next configuration of the table instead of
measuring again, and the report shows them all.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

from kernelopt.budget import closing_s
from kernelopt.context import Context
from kernelopt.events import CandidateWritten, SweepDone, SweepStarted
from kernelopt.harness.problem import source_hash
from kernelopt.harness.verify import SWEEP_TIMING_GRACE_S
from kernelopt.nodes.common import emit, run_moves, verifier_for, written
from kernelopt.offline.moves import TEMPLATE_START, Moves, by_diagnosis
from kernelopt.offline.space import Config, limits_for, plan
from kernelopt.offline.structures import (
    Planned,
    alive_plans,
    dead_moves,
    for_kernel,
    measured_moves,
    move_plans,
    moves_budget,
    on_structure,
    own_rows,
    row_of,
    structure_of,
)
from kernelopt.offline.tuner import FIX_SWEEP, autotune_variants, direction_of, knob_values, with_config
from kernelopt.records import Attempt, Candidate, Measured, SweepRow, Timing, config_text
from kernelopt.report.sweep import table_files
from kernelopt.runs import kernel_path
from kernelopt.seed import COMPILER_SEED
from kernelopt.state import Branch, KernelOptState

VERIFIED_PER_ROUND = 2
# On a GPU, a configuration swept at over this many times the best kernel's time (or, with no best
# yet, the fastest row's) is not verified: the verifier would only call it slower. The sweep's and
# the verifier's medians agree within a few percent on the H200 (1.274 against 1.280 ms).
VERIFY_WITHIN = 1.15
GPU_SWEEP_CONFIGS, INTERPRETER_SWEEP_CONFIGS = 48, 6
# After a run's first sweep on a GPU, a sweep plans as many configurations as the last one's pace
# fits in this many seconds, at least the minimum: a problem of many GB (every check and trial
# slow) spends its rounds on fewer configurations, a quick one keeps them all.
SWEEP_TARGET_S, GPU_SWEEP_MIN_CONFIGS = 30.0, 12
# When a move that answers the diagnosis's category has not been measured yet, the best kernel's
# own knobs get this many rows: the round is for the cure, and the next one sweeps the knobs of
# whichever kernel won. On the H200, 43 knob rows of an IEEE GEMM seed, all 2.8x or more slower than
# the 3xTF32 rewrite, took most of a level-2 round's 89 s; 36 knob rows of a three-pass softmax seed,
# all 1.3x or more slower than the one-read and looped moves, most of level 1's 70 s. Only a
# diagnosis whose fix is the knob sweep itself (an untuned launch) keeps the knobs' full share.
OWN_BESIDE_A_CURE = 8
# A sweep stops starting checks this long before the run's time budget (max_wall_s) ends, leaving
# the round time to verify what it measured: on the H200, 33_BatchNorm (4.3 GB) with a 150 s
# budget was still in its first sweep after 160 s, and in a suite pass ran past 289 s.
SWEEP_RESERVE_S, SWEEP_RESERVE_SHARE = 30.0, 0.2
# A reserve measured from the run's own rounds takes at most this share of the budget: the rest is the sweeps'.
# On the H100 a 120 s budget ran to 162 s on a 4 GB weight (56's level-2 GEMM): its round started at 82.5 s, the
# fixed 24 s reserve let checks start until 96 s, and the timing, two verifications and a profile took 56 s more.
RESERVE_MAX_SHARE = 0.5


def sweep_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / "sweeps"


def table_path(run_dir: str | Path, round_: int, repair: int = 0) -> Path:
    """sweeps/round-001.json; a repair that found the round's tables spent sweeps again: round-001-a1.json."""
    return sweep_dir(run_dir) / (f"round-{round_:03d}" + (f"-a{repair}" if repair else "") + ".json")


def load_tables(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every round's sweep table so far, oldest first: {"round", "knobs", "direction", "rows": [...]}."""
    folder = sweep_dir(run_dir)
    if not folder.is_dir():
        return []
    return [json.loads(p.read_text()) for p in table_files(folder)]


def rows_of(table: dict[str, Any]) -> list[SweepRow]:
    return [row_of(row) for row in table["rows"]]


def _plan(source: str, task: Branch, ctx: Context, budget: int) -> tuple[list[Planned], dict[str, Any]]:
    """This round's configurations and what the plan rested on: structural moves never measured
    first, a few around each live structure, then the best kernel's own knobs."""
    tables = load_tables(task["run_dir"])
    best = task["best"]
    best_move = structure_of(best.source_hash, tables) if best else ""
    # a rewrite of the best kernel: measured on each structure
    moves = on_structure(_moves(task, ctx, source), best_move)
    seed = 100 * task["round"] + task["repair"]
    category = task["idea"][0].category if task["idea"] else None
    ordered = by_diagnosis(moves.instances, category)  # the judger's diagnosis chooses which moves go first
    measured = measured_moves(tables)
    if best is None:  # a rejected start: kernels built from the problem alone, nothing of the start's
        planned = move_plans(ordered, measured, budget)
        return planned, {"moves": _moves_note(moves, ""), "basis": "the structural moves, in place of a rejected start"}
    planned = move_plans(ordered, measured, moves_budget(budget, _untried(moves, tables)))
    dead = dead_moves(task.get("failed", []), tables, best_move)
    limits = limits_for(moves.family.dtype if moves.family else None)
    planned += alive_plans(tables, best_move, seed, dead, limits)[: max(0, budget - len(planned) - 1)]
    basis: dict[str, Any] = {"moves": {**_moves_note(moves, best_move), "diagnosis": category,
                                       "first": [m.name for m in ordered if category in m.cures]}}
    frozen = autotune_variants(source)
    if frozen:  # the kernel's own autotune configs, each frozen: measured here, not at run time
        planned += [Planned(config, f"autotune config {i}", text) for i, (config, text) in enumerate(frozen)]
        return planned, {**basis, "basis": "the kernel's own triton.autotune configs"}
    centre = knob_values(source)
    fix = task["idea"][2] if task["idea"] else ""
    direction = direction_of(fix)
    own = max(1, budget - len(planned))
    if fix != FIX_SWEEP and any(category in m.cures and m.name not in measured for m in ordered):
        own = min(own, OWN_BESIDE_A_CURE)
    configs = plan(centre, direction, own_rows(tables, best_move), own, seed=seed, limits=for_kernel(limits, source))
    planned += [Planned(c, best_move, with_config(source, c), best_move) for c in configs]
    return planned, {**basis, "basis": fix, "centre": centre, "direction": asdict(direction)}


def _moves(task: Branch, ctx: Context, source: str) -> Moves:
    """The structural moves for the run's problem on the run's GPU, and the rewrites of the best
    kernel's `source` (none without a best: a rejected start is not rewritten)."""
    return run_moves(task, ctx, source if task["best"] else None)


def moves_can_replace_start(state: KernelOptState, ctx: Context, attempts: list[Attempt]) -> bool:
    """Whether the offline optimizer may rebuild a run whose compiler seed was rejected at round 0
    (nothing correct yet) from the structural moves: there must be moves for the problem. Inductor's
    own kernels can fail the check (one accumulator over a K of 700k loses 1e-4), where a move
    (split-K) passes."""
    if state["round"] or state.get("best") is not None or state.get("uses_llm"):
        return False
    if not any(a.change.startswith((COMPILER_SEED, TEMPLATE_START)) and a.time_ms is None for a in attempts):
        return False
    return bool(run_moves(state, ctx).instances)


def _untried(moves: Moves, tables: list[dict[str, Any]]) -> int:
    done = measured_moves(tables)
    return sum(1 for m in moves.instances if m.name not in done)


def _moves_note(moves: Moves, best_move: str) -> dict[str, Any]:
    """What the report says of the moves: the family, each move that applies, each that does not and why."""
    return {
        "family": moves.family.name if moves.family else None,
        "best_structure": best_move or "the starting kernel's",
        "applied": [{"name": m.name, "why": m.why, "configs": len(m.grid)} for m in moves.instances],
        "skipped": [{"name": m.name, "why": m.why} for m in moves.skipped],
    }


def _budget(ctx: Context, on_gpu: bool, tables: list[dict[str, Any]] | None = None) -> int:
    """How many configurations this round's sweep plans: the setting, else the default, on a GPU cut
    to what the run's last sweep measured at its pace in SWEEP_TARGET_S."""
    if ctx.sweep_configs:
        return ctx.sweep_configs
    if not on_gpu:
        return INTERPRETER_SWEEP_CONFIGS
    paced = [t for t in tables or [] if t.get("wall_s") and t.get("rows")]
    if not paced:
        return GPU_SWEEP_CONFIGS
    run = [r for r in paced[-1]["rows"] if r.get("rule") != "time-budget"]  # rows the budget skipped took no time
    each_s = paced[-1]["wall_s"] / max(len(run), 1)
    return max(GPU_SWEEP_MIN_CONFIGS, min(GPU_SWEEP_CONFIGS, int(SWEEP_TARGET_S / max(each_s, 1e-3))))


def _row(planned: Planned, round_: int, measured: Measured, path: Path) -> dict[str, Any]:
    timing: Timing | None = measured.timing
    row = SweepRow(
        config=planned.config, round=round_, time_ms=timing.median_ms if timing else None,
        trials=timing.trials if timing else 0, stage=measured.stage,
        error=measured.reason if timing is None else None, rule=measured.rule if timing is None else None,
        label=planned.label,
    )
    return {**asdict(row), "path": str(path), "move": planned.move}


def _sweep(task: Branch, ctx: Context, source: str) -> dict[str, Any]:
    """Measure this round's configurations; the table, also written to sweeps/round-NNN.json."""
    verifier = verifier_for(cast(KernelOptState, task), ctx)
    planned, basis = _plan(source, task, ctx, _budget(ctx, verifier.settings.use_cuda, load_tables(task["run_dir"])))
    target = _free_table_path(task)
    folder = sweep_dir(task["run_dir"]) / target.stem
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, item in enumerate(planned):
        paths.append(folder / f"config{number:02d}.py")
        paths[-1].write_text(item.source)
    emit(task, SweepStarted(round=task["round"], configs=len(planned), basis=basis.get("basis")))
    began = time.monotonic()
    measured = verifier.sweep(paths, folder / "work", deadline=sweep_deadline(task, ctx)) if paths else []
    rows = [_row(item, task["round"], m, p) for item, m, p in zip(planned, measured, paths, strict=True)]
    table = {"round": task["round"], **basis, "knobs": sorted({k for item in planned for k in item.config}),
             "rows": rows, "wall_s": round(time.monotonic() - began, 2), "gpu_times": verifier.settings.use_cuda}
    target.write_text(json.dumps(table, indent=1))
    timed = [r for r in rows if r["time_ms"] is not None]
    emit(task, SweepDone(round=task["round"], configs=len(rows), timed=len(timed),
                         best_ms=min((r["time_ms"] for r in timed), default=None)))
    return table


def sweep_deadline(task: Branch, ctx: Context) -> float | None:
    """The time.time() past which this round's sweep starts no check: the run's time budget less a reserve; None
    without a budget. The reserve is SWEEP_RESERVE_S (SWEEP_RESERVE_SHARE of a short budget), or where this run's
    rounds have taken longer to close (budget.closing_s: verification, profile, diagnosis), that plus the sweep's
    SWEEP_TIMING_GRACE_S, up to RESERVE_MAX_SHARE of the budget."""
    started = task.get("started_at")
    if ctx.max_wall_s is None or started is None:
        return None
    fixed = min(SWEEP_RESERVE_S, SWEEP_RESERVE_SHARE * ctx.max_wall_s)
    closing = closing_s(task.get("run_dir"))
    measured = min(SWEEP_TIMING_GRACE_S + closing, RESERVE_MAX_SHARE * ctx.max_wall_s) if closing else 0.0
    return float(started) + ctx.max_wall_s - max(fixed, measured)


def _free_table_path(task: Branch) -> Path:
    """The round's table file; a further sweep of the same step (moves still unmeasured) gets -b1, -b2, ..."""
    first = table_path(task["run_dir"], task["round"], task["repair"])
    extra = 0
    path = first
    while path.exists():
        extra += 1
        path = first.with_name(f"{first.stem}-b{extra}.json")
    return path


def ranked(table: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's timed rows, best first: the furthest halving stage, then the time."""
    timed = [r for r in table["rows"] if r["time_ms"] is not None]
    return sorted(timed, key=lambda r: (-r["stage"], r["time_ms"]))


def _change(row: dict[str, Any], centre: Config, best_move: str) -> str:
    """The change in words: the move and its knobs for another structure, else the knobs moved."""
    if row.get("move") and row["move"] != best_move:
        knobs = config_text(row["config"])
        return f"move {row['move']}: {knobs} (swept: {row['time_ms']:.4g} ms)"
    moved = [f"{k} {centre[k]} -> {v}" for k, v in row["config"].items() if k in centre and centre[k] != v]
    what = row["label"] if row["label"] and not row.get("move") else ", ".join(moved) or "the same configuration"
    return f"{what} (swept: {row['time_ms']:.4g} ms)"


def _distinct_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The best row of each structure first (best few structures stay alive), then the rest, in order."""
    seen: set[str] = set()
    first, rest = [], []
    for row in rows:
        (rest if row.get("move", "") in seen else first).append(row)
        seen.add(row.get("move", ""))
    return first + rest


def _verifiable(
    rows: list[dict[str, Any]], task: Branch, dead: set[str], tried: set[str], gpu_times: bool,
    digests: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The rows worth a full verification: not tried, not of a dead structure, and, timed on a GPU,
    swept within VERIFY_WITHIN of the best kernel's time (with no best: of the fastest such row's).
    The interpreter's times are too loose for the bar: there every row stays. `digests` holds the
    rows' source hashes by path where the caller has them."""
    digests = digests or {r["path"]: source_hash(Path(r["path"]).read_text()) for r in rows}
    rows = [r for r in rows if r.get("move", "") not in dead and digests[r["path"]] not in tried]
    if not gpu_times:
        return rows
    best = task["best"]
    bar = best.time_ms if best else min((r["time_ms"] for r in rows), default=0.0)
    return [r for r in rows if r["time_ms"] <= VERIFY_WITHIN * bar]


def _pick(tables: list[dict[str, Any]], tried: set[str], task: Branch, centre: Config) -> list[Candidate]:
    """The best configurations of these tables not yet verified, one per structure first, written as
    candidates; none of a dead structure, none far slower than the best."""
    every = load_tables(task["run_dir"])
    best = task["best"]
    best_move = structure_of(best.source_hash, every) if best else ""
    rows = sorted((r for t in tables for r in ranked(t)), key=lambda r: (-r["stage"], r["time_ms"]))
    texts = {r["path"]: Path(r["path"]).read_text() for r in rows}
    digests = {path: source_hash(text) for path, text in texts.items()}
    gpu_times = best.timing.is_gpu_time if best else all(t.get("gpu_times") for t in tables)
    dead = dead_moves(task.get("failed", []), every, best_move)
    rows = _distinct_first(_verifiable(rows, task, dead, tried, gpu_times, digests))
    candidates: list[Candidate] = []
    for row in rows:
        text, digest = texts[row["path"]], digests[row["path"]]
        if digest in tried:  # two rows of one source: verified once
            continue
        tried.add(digest)
        out = kernel_path(task["run_dir"], task["round"], task["repair"], len(candidates))
        change = _change(row, centre, best_move)
        candidates.append(written(out, text, change, len(candidates), digest=digest))
        emit(task, CandidateWritten(round=task["round"], repair=task["repair"], branch=len(candidates) - 1,
                                    change=change, path=str(out)))
        if len(candidates) == VERIFIED_PER_ROUND:
            break
    return candidates


def offline_candidates(task: Branch, ctx: Context) -> dict[str, Any]:
    """The state update of the offline optimizer's branch: the round's best configurations as
    candidates (branch 0; further branches add none), or why there is none.

    A repair (both candidates failed their full verification) takes the next of the round's
    tables; when they are spent, it sweeps configurations not measured yet.
    """
    best = task["best"]
    if task["branch"]:
        return {"candidates": []}
    # Without a best, the rejected start (moves_can_replace_start): only the moves are swept.
    source = Path(best.path if best else task["kernel_path"] or "").read_text()
    tried = set(task["tried"]) | ({best.source_hash} if best else set())
    centre = knob_values(source)
    tables = [t for t in load_tables(task["run_dir"]) if t["round"] == task["round"]]
    candidates = _pick(tables, tried, task, centre)
    swept = table_path(task["run_dir"], task["round"], task["repair"]).exists()
    untried = _untried(_moves(task, ctx, source), load_tables(task["run_dir"]))
    # A sweep measures at least one configuration of every move never measured: each pass ends one.
    deadline, cut = sweep_deadline(task, ctx), False
    for _ in range(1 + untried):
        if candidates or (swept and not untried):
            break
        if deadline is not None and time.time() > deadline:
            cut = True
            break
        table = _sweep(task, ctx, source)
        cut = any(r.get("rule") == "time-budget" for r in table["rows"])
        candidates = _pick([table], tried, task, centre)
        swept = True
        untried = _untried(_moves(task, ctx, source), load_tables(task["run_dir"]))
    if not candidates:
        why = ("search_exhausted: every configuration the sweep measured was tried, "
               "and every structural move that applies was measured")
        if cut:  # not exhausted: the budget kept configurations from their checks
            why = (f"time_budget: {time.time() - float(task['started_at'] or 0):,.0f} s elapsed of "
                   f"{ctx.max_wall_s:,.0f} s, too little left for a sweep and its verification")
        return {"candidates": [Candidate(None, "", 0, stop=why)]}
    return {"candidates": candidates}
