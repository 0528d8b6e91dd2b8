"""The README's code blocks stay true: every Python block names only what it defines or imports and
runs, every `kernelopt ...` command line parses with the command's own parser, and every extra a
`pip install` names exists."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, re.DOTALL)
PYTHON = [body for lang, body in BLOCKS if lang == "python"]
SHELL = [body for lang, body in BLOCKS if lang in ("", "bash", "sh")]


def _commands(prefix: str) -> list[str]:
    """The concrete command lines (no [optional] synopsis) that run `prefix`, comments cut."""
    found = []
    for body in SHELL:
        for line in body.replace("\\\n", " ").splitlines():
            for part in line.split("&&"):
                part = part.split("  #")[0].strip()
                if part.startswith(prefix) and "[" not in part.replace('".[', ""):
                    found.append(part)
    return found


def test_the_readme_has_the_blocks_this_test_reads() -> None:
    assert len(PYTHON) >= 2 and len(_commands("kernelopt ")) >= 10 and len(_commands("pip install")) >= 2


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_every_python_block_defines_or_imports_every_name_it_uses(index: int, tmp_path: Path) -> None:
    block = tmp_path / "block.py"
    block.write_text(PYTHON[index])
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "F821,F822", str(block)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, f"README python block {index}:\n{PYTHON[index]}\n{done.stdout}"


@pytest.mark.parametrize("line", _commands("kernelopt "))
def test_every_kernelopt_command_line_parses(line: str) -> None:
    from kernelopt.cli import _parser

    args = shlex.split(line)[1:]
    if args in (["--version"], ["--help"]):
        return
    _parser().parse_args(args)  # a flag the README names and the command lacks exits 2 here


def test_every_extra_a_pip_install_names_exists() -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    named = {e for line in _commands("pip install") for group in re.findall(r"\.\[([\w,]+)\]", line)
             for e in group.split(",")}
    assert named and named <= extras, named - extras


@pytest.mark.slow
def test_the_embedding_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedding snippet, run as written from the repository (one round and a small sweep, to
    keep CI short: the graph's path is the same)."""
    block = next(b for b in PYTHON if "build_graph()" in b)
    quick = block.replace("Context(max_rounds=3)", "Context(max_rounds=1, sweep_configs=2, time_compile=False, "
                          f"runs_dir={str(tmp_path)!r})")
    assert quick != block
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    exec(compile(quick, "README.md", "exec"), namespace)  # the README's own code
    final = namespace["final"]
    assert isinstance(final, dict) and final["best"] is not None


def _layout() -> str:
    return next(body for _, body in BLOCKS if body.startswith("kernelopt/\n"))


def test_the_layout_names_every_module_and_room_of_the_package() -> None:
    package = ROOT / "kernelopt"
    names = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    names |= {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    layout = _layout()
    missing = sorted(n for n in names if not re.search(rf"(?<![\w/.]){re.escape(n)}", layout))
    assert missing == []
