"""The `kernelopt knowledge` subcommand: read the curated patterns and the gains runs recorded.

`list` shows both (filtered by family, bottleneck, architecture), `show` one pattern or gain in
full, `export` every gain as JSON Lines or Markdown. The store is the one runs write by default
(knowledge.sqlite in the runs folder), or the one `--db` names.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any, TextIO

from kernelopt.checkpoint import check_db_url
from kernelopt.knowledge.patterns import GENERATIONS, KERNEL_CLASSES, Pattern, find_pattern, load_patterns
from kernelopt.knowledge.store import STORE_FILE, Gain, GainStore, is_postgres
from kernelopt.prompts.parsing import CATEGORIES
from kernelopt.records import InputError, one_line

DB_HELP = ("the store: a postgresql:// URL (as given to `optimize --db`) or a SQLite file "
           f"(default: {STORE_FILE} in $KERNELOPT_RUNS_DIR, else ~/.cache/kernelopt/runs)")


def add_knowledge_parser(commands: Any) -> None:
    """Add `knowledge list|show|export` to the `kernelopt` command's subparsers."""
    kno = commands.add_parser("knowledge", help="read the knowledge base: curated patterns and the gains runs made")
    actions = kno.add_subparsers(dest="action", required=True)
    lst = actions.add_parser("list", help="the patterns and recorded gains, one line each")
    lst.add_argument("--family", help="only this problem family (softmax, matmul, ...) or class (rows, ...)")
    lst.add_argument("--bottleneck", choices=CATEGORIES, help="only patterns and gains for this bottleneck")
    lst.add_argument("--arch", choices=GENERATIONS, help="only patterns that hold on this GPU generation")
    show = actions.add_parser("show", help="one pattern (by id) or one recorded gain (by number) in full")
    show.add_argument("id", help="a pattern's id (online-softmax) or a gain's number (3)")
    exp = actions.add_parser("export", help="every recorded gain as JSON Lines (or Markdown)")
    exp.add_argument("--out", help="file to write (default: standard output); a .md name writes Markdown")
    exp.add_argument("--format", choices=("jsonl", "md"), help="default: md for a .md --out, else jsonl")
    for parser in (lst, show, exp):
        parser.add_argument("--db", help=DB_HELP)


def _store(db: str | None) -> GainStore:
    """The store `--db` names (a URL is checked, a file must exist), else the runs folder's."""
    if db is None:
        from kernelopt.runs import default_runs_dir

        return GainStore(default_runs_dir() / STORE_FILE)
    if is_postgres(db):
        return GainStore(check_db_url(db) or db)
    if not Path(db).expanduser().is_file():
        raise InputError(f"--db {db}: no such file; pass a knowledge store (a SQLite file runs wrote) "
                         "or a postgresql:// URL")
    return GainStore(Path(db).expanduser())


def _fits_family(gain: Gain, family: str | None) -> bool:
    return family is None or family in (gain.family, KERNEL_CLASSES.get(gain.family, "other"))


def _pattern_line(p: Pattern) -> str:
    return (f"  {p.id:<26} {p.title}\n  {'':<26} {', '.join(p.bottlenecks)} | {', '.join(p.families)} | "
            f"{', '.join(p.architectures)}")


def _gain_line(g: Gain) -> str:
    clock = "" if g.gpu_time else " [interpreter]"
    return (f"  #{g.id:<4} {g.recorded_at[:10]}  {g.problem} ({g.family}), {g.bottleneck}: {g.speedup:.2f}x on "
            f"{g.gpu}{clock}: {one_line(g.change, 100)}")


def _list(args: argparse.Namespace) -> int:
    patterns = [p for p in load_patterns() if (args.family is None or p.fits_family(args.family))
                and (args.bottleneck is None or args.bottleneck in p.bottlenecks)
                and (args.arch is None or p.fits_architecture(args.arch))]
    store = _store(args.db)
    gains = [g for g in store.gains(bottleneck=args.bottleneck) if _fits_family(g, args.family)]
    print(f"patterns ({len(patterns)}):")
    print("\n".join(_pattern_line(p) for p in patterns) or "  none")
    print(f"gains ({len(gains)}) in {store.shown}:")
    print("\n".join(_gain_line(g) for g in gains) or "  none recorded yet")
    return 0


def _show(args: argparse.Namespace) -> int:
    if args.id.lstrip("#").isdigit():
        gain = _store(args.db).get(int(args.id.lstrip("#")))
        if gain is None:
            raise InputError(f"no gain #{args.id.lstrip('#')} in the store; `kernelopt knowledge list` shows them")
        print("\n".join(f"{name}: {value}" for name, value in dataclasses.asdict(gain).items()))
        return 0
    pattern = find_pattern(args.id)
    if pattern is None:
        known = ", ".join(p.id for p in load_patterns())
        raise InputError(f"no pattern {args.id!r}; the patterns are: {known}")
    print(Path(pattern.path).read_text().rstrip("\n"))
    return 0


def _markdown(gains: list[Gain], out: TextIO) -> None:
    out.write("| # | recorded | problem | family | bottleneck | speedup | before ms | after ms | GPU | change |\n")
    out.write("|---|---|---|---|---|---|---|---|---|---|\n")
    for g in gains:
        gpu = g.gpu if g.gpu_time else f"{g.gpu} (interpreter)"
        change = one_line(g.change, 300).replace("|", "\\|")
        out.write(f"| {g.id} | {g.recorded_at} | {g.problem} | {g.family} | {g.bottleneck} | {g.speedup:.3f}x | "
                  f"{g.before_ms:.4g} | {g.after_ms:.4g} | {gpu} | {change} |\n")


def _export(args: argparse.Namespace) -> int:
    fmt = args.format or ("md" if args.out and args.out.endswith(".md") else "jsonl")
    if args.out and Path(args.out).is_dir():
        raise InputError(f"--out {args.out} is a folder; pass the file to write")
    gains = list(reversed(_store(args.db).gains()))  # oldest first, as they were recorded
    with open(args.out, "w") if args.out else nullcontext(sys.stdout) as out:
        if fmt == "md":
            _markdown(gains, out)
        else:
            out.writelines(json.dumps(dataclasses.asdict(g)) + "\n" for g in gains)
    if args.out:
        print(f"{len(gains)} gains written to {args.out}", file=sys.stderr)
    return 0


def _store_errors() -> tuple[type[Exception], ...]:
    """The errors of a store that cannot be opened or read: SQLite's, and psycopg's where installed."""
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


def knowledge_command(args: argparse.Namespace) -> int:
    """Run `knowledge list|show|export`; exit status 0."""
    try:
        return {"list": _list, "show": _show, "export": _export}[args.action](args)
    except _store_errors() as err:
        raise InputError(f"the knowledge store cannot be read ({type(err).__name__}: {one_line(str(err), 200)}); "
                         "pass another with --db") from err
