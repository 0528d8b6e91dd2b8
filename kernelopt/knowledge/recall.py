"""What the optimizer's prompt recalls of the knowledge base: the patterns that fit the round's
diagnosis and the gains earlier runs recorded; and the recording of this run's gains.

The store serves the run, never stops it: a store that cannot be read or written costs one
warning line on stderr, and the run goes on without it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kernelopt.context import Context
from kernelopt.harness.problem import source_hash
from kernelopt.knowledge.patterns import Pattern, select_patterns
from kernelopt.knowledge.store import STORE_FILE, Gain, GainStore
from kernelopt.offline.moves.remote import family_in_child
from kernelopt.records import one_line
from kernelopt.runs import default_runs_dir

if TYPE_CHECKING:
    from kernelopt.harness.verify import Verifier

PATTERNS_SIZE = 3  # patterns a prompt shows
GAINS_SIZE = 4  # earlier gains a prompt shows
GAINS_READ = 200  # the newest gains of the family that are ranked for a prompt
CHANGE_CHARS = 700
EXAMPLE_LINES = 20  # of the example's code after the change (its "before" stays in the file)
_WARNED: set[str] = set()  # stores already warned about by this process: one line each


def store_location(ctx: Context) -> str:
    """Where the run's knowledge store is: Context.knowledge_db, else knowledge.sqlite in the runs folder."""
    if ctx.knowledge_db:
        return ctx.knowledge_db
    return str(Path(ctx.runs_dir or default_runs_dir()) / STORE_FILE)


def warn_once(store: GainStore, doing: str, err: Exception) -> None:
    """One warning line on stderr per store and process: the store failed, the run goes on."""
    if store.location in _WARNED:
        return
    _WARNED.add(store.location)
    print(f"kernelopt: warning: the knowledge store {store.shown} could not {doing} ({type(err).__name__}: "
          f"{one_line(str(err), 200)}); the run goes on without it. Name another with knowledge_db (or --db)",
          file=sys.stderr, flush=True)


# a dtype as diagnoses and patterns write it
_DTYPE_WORDS = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def problem_family(problem_file: str | Path, verifier: Verifier) -> tuple[str, str]:
    """The family of the problem in `problem_file` (offline/moves/family.py; "other" when none is
    recognised) and its first input's dtype ("float32", ...; "" when unknown), read in a child of the
    run's fork server (`verifier`'s: offline/moves/remote.py)."""
    return family_in_child(verifier, problem_file)


def _ranked(gains: list[Gain], family: str, category: str, problem_hash: str, gpu: str) -> list[Gain]:
    """Gains of the same family, each change once: the same bottleneck first, then the same problem,
    the same GPU, GPU times, the larger speedup."""
    ranked = sorted(
        (g for g in gains if g.family == family),
        key=lambda g: (g.bottleneck != category, g.problem_hash != problem_hash, g.gpu != gpu, not g.gpu_time,
                       -g.speedup),
    )
    first: dict[str, Gain] = {}
    for gain in ranked:
        first.setdefault(gain.change, gain)
    return list(first.values())


def _lines(source: str, limit: int) -> str:
    lines = source.splitlines()
    return "\n".join(lines[:limit] + (["    ..."] if len(lines) > limit else []))


def _pattern_text(pattern: Pattern) -> str:
    return (
        f"### {pattern.title} [{pattern.id}]\n"
        f"When: {pattern.when}\n"
        f"Change: {one_line(pattern.change, CHANGE_CHARS)}\n"
        f"Example, after the change:\n```python\n{_lines(pattern.after, EXAMPLE_LINES)}\n```\n"
    )


def _gain_text(gain: Gain) -> str:
    clock = "GPU time" if gain.gpu_time else "interpreter time"
    return (f"- {gain.speedup:.2f}x on {gain.gpu} ({clock}), {gain.bottleneck} bottleneck, "
            f"{gain.problem} ({gain.family}): {one_line(gain.change, 300)}")


def render_knowledge(patterns: list[Pattern], gains: list[Gain], family: str) -> str:
    """The prompt's KNOWLEDGE BASE section; '' when there is nothing to say."""
    if not patterns and not gains:
        return ""
    lines = ["KNOWLEDGE BASE (known patterns for this bottleneck; apply one only where it fits this kernel)"]
    lines += [_pattern_text(p) for p in patterns]
    if gains:
        lines.append(f"Gains earlier runs made on {family} problems (what worked, how much faster):")
        lines += [_gain_text(g) for g in gains]
    return "\n".join(lines) + "\n"


def recall(
    ctx: Context, problem_file: str, architecture: str, gpu: str, category: str, text: str, run_dir: str,
    verifier: Verifier,
) -> str:
    """The KNOWLEDGE BASE section for a round working on `category` (its words in `text`): the
    patterns that fit, and the best-matching gains of earlier runs (not this run's own)."""
    if not ctx.knowledge:
        return ""
    family, dtype = problem_family(problem_file, verifier)
    words = f"{text} {dtype} {_DTYPE_WORDS.get(dtype, '')}"
    patterns = select_patterns(category, words, family, architecture, PATTERNS_SIZE)
    store = GainStore(store_location(ctx))
    try:
        stored = store.gains(family=family, limit=GAINS_READ)
    except Exception as err:  # sqlite3, psycopg and OS errors alike: the run goes on without the store
        warn_once(store, "be read", err)
        stored = []
    problem_hash = source_hash(Path(problem_file).read_text())
    gains = _ranked([g for g in stored if g.run_dir != run_dir], family, category, problem_hash, gpu)[:GAINS_SIZE]
    return render_knowledge(patterns, gains, family)


def record(ctx: Context, gain: Gain) -> int | None:
    """Store `gain` in the run's knowledge store; its number, or None when the store failed (one warning)."""
    store = GainStore(store_location(ctx))
    try:
        return store.add(gain)
    except Exception as err:  # never a reason to stop the run that made the gain
        warn_once(store, "record a gain", err)
        return None

