"""The `kernelopt export` subcommand: its arguments, checked before torch loads, and the export itself."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kernelopt.export.names import check_target
from kernelopt.records import InputError


def add_export_parser(commands: Any) -> None:
    """Add `export` to the `kernelopt` command's subparsers."""
    exp = commands.add_parser("export", help="write a run's best kernel as a PyTorch custom op module (a suite's "
                                             "as a package)")
    exp.add_argument("target", metavar="RUN_DIR", help="a run directory, a suite's out folder, or a problem file")
    exp.add_argument("kernel", nargs="?", metavar="KERNEL", help="the kernel file, when RUN_DIR is a problem file")
    exp.add_argument("--name", help="the op as NAMESPACE::OP (default kernelopt::<problem>); for a suite, "
                                    "the namespace (the package's name)")
    exp.add_argument("--out", default=".", help="folder to write the module into (default: the current folder)")


def export_command(args: argparse.Namespace) -> int:
    """Write the module (or a suite's package) and print where it is; exit status 0."""
    kind = check_target(args.target, args.kernel, args.name)
    if Path(args.out).expanduser().is_file():
        raise InputError(f"--out {args.out} is a file, not a folder; pass the folder to write the module into")
    from kernelopt.export import writer

    if kind == "suite":
        path = writer.export_suite(args.target, args.name, args.out)
    elif kind == "run":
        path = writer.export_run(args.target, args.name, args.out)
    else:
        path = writer.export_files(args.target, args.kernel, args.name, args.out)
    print(path)
    return 0
