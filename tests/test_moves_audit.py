"""benchmarks/moves_audit.py: each structural move the family reader offers for a shrunk copy of a problem, run
through the verifier under the interpreter; a move it offers that the verifier refuses is reported, by name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import moves_audit  # noqa: E402

from kernelopt.offline import moves  # noqa: E402

MOVES = Path(__file__).resolve().parent / "data" / "moves"


def test_the_moves_offered_for_a_problem_pass_and_a_move_for_another_problem_is_named_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "own").mkdir()
    verdict = moves_audit.audit_one(MOVES / "leaky_relu.py", tmp_path / "own")
    assert verdict["stage"] == "ok" and verdict["family"] == "elementwise", verdict
    assert verdict["moves"] and set(verdict["moves"].values()) == {"ok"}
    assert "ok" in moves_audit._line(verdict) and f"{len(verdict['moves'])}/{len(verdict['moves'])}" in \
        moves_audit._line(verdict)
    # a family reader that took LeakyReLU for tanh: its move computes tanh, which the verifier refuses
    tanh = moves.structural_moves(MOVES / "tanh.py")
    monkeypatch.setattr(moves, "structural_moves", lambda path, *a, **k: tanh)
    (tmp_path / "wrong").mkdir()
    verdict = moves_audit.audit_one(MOVES / "leaky_relu.py", tmp_path / "wrong")
    assert verdict["stage"] == "refused" and verdict["moves"], verdict
    name, why = next(iter(verdict["moves"].items()))
    assert why != "ok" and verdict["error"].startswith(f"{name}: ")
