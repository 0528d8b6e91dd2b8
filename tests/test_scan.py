"""The scan family (moves/scan.py): a cumulative sum or product along the last dim, from the row's start or, where
the reference flips the row around it, from its end. Read from the operators and checked against the reference's
values, refused where the template would compute something else, and verified on tiny problems."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import structural_moves
from kernelopt.offline.tuner import with_config

ROOT = Path(__file__).resolve().parents[1]
MOVES = ROOT / "tests" / "data" / "moves"
PROBLEMS = ROOT / "benchmarks" / "kernelbench" / "problems"

_VARIANT = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y=None):
        return {body}


def get_inputs():
    return [torch.rand(4, 9) for _ in range({inputs})]


def get_init_inputs():
    return []
'''


def _family(tmp_path: Path, body: str) -> tuple[str, str]:
    path = tmp_path / "problem.py"
    path.write_text(_VARIANT.format(body=body, inputs=2 if re.search(r"\by\b", body) else 1))
    moves = structural_moves(path)
    return moves.family.name, "; ".join(s.why for s in moves.skipped)


def test_cumulative_sums_and_products_along_the_last_dim_are_the_scan_family() -> None:
    forward = structural_moves(PROBLEMS / "89_cumsum.py")
    assert forward.family.name == "scan" and forward.family.ops == ("cumsum",)
    assert forward.family.scalars == ("forward",)
    [move] = forward.instances
    assert move.name == "scan.rows" and "REVERSED=False, EXCLUSIVE=False" in move.source
    assert "one read and one write" in move.why
    reverse = structural_moves(MOVES / "cumsum_reverse.py")
    assert reverse.family.scalars == ("reversed",) and "each step scanned from its end" in reverse.instances[0].why
    assert "REVERSED=True, EXCLUSIVE=False" in reverse.instances[0].source
    exclusive = structural_moves(MOVES / "cumsum_exclusive.py")  # narrow, cumsum, a zero put first: one scan form
    assert exclusive.family.scalars == ("exclusive",) and exclusive.family.dim == 2
    assert "REVERSED=False, EXCLUSIVE=True" in exclusive.instances[0].source
    masked = structural_moves(MOVES / "cumsum_masked.py")  # cumsum(x * mask): the mask loaded beside x
    assert masked.family.operands == (1,) and masked.family.in_dtypes == ("float32", "bool")
    source = masked.instances[0].source
    assert "def forward(self, x, mask, *args)" in source and "MASKED=True" in source
    product = structural_moves(MOVES / "cumprod.py")
    assert product.family.ops == ("cumprod",) and product.family.dim == 2
    assert "return a * b" in product.instances[0].source
    assert all(4 <= c["ROWS"] * c["BLOCK"] // (32 * c["num_warps"]) <= 64 for c in move.grid)


@pytest.mark.parametrize(("body", "family", "why"), [
    ("torch.cumsum(x, dim=0)", "scan", "strided by 9"),  # the template scans contiguous rows only
    ("torch.cumsum(x.flip(0), dim=1).flip(0)", "scan", ""),  # the rows' order flipped and back: the forward scan
    ("torch.cumsum(x.flip(1), dim=1)", "other", "none of the template's cumsum forms"),  # one flip before
    ("torch.cumsum(x, dim=1).flip(1)", "other", "none of the template's cumsum forms"),  # one flip
    ("torch.cat((torch.zeros_like(x[:, :1]), torch.cumsum(x, dim=1)[:, 1:]), dim=1)", "other", "none of"),
    ("torch.cumsum(x, dim=1, dtype=torch.float64)", "other", "returned as float64"),
    ("torch.cumsum(x, dim=1) * 2", "other", ""),
    ("torch.cumsum(x * y, dim=1)", "scan", ""),  # two inputs of one shape multiplied: the masked scan
    ("torch.cumsum(x + y, dim=1)", "other", ""),
    ("torch.cumsum(x * y.flip(1), dim=1)", "other", "none of the template's cumsum forms"),
])
def test_what_the_template_would_not_compute_is_not_the_scan_family(tmp_path: Path, body: str, family: str,
                                                                     why: str) -> None:
    got, skipped = _family(tmp_path, body)
    assert got == family, (body, skipped)
    assert why in skipped


@pytest.mark.parametrize(("problem", "config"), [
    ("cumsum_reverse.py", {"ROWS": 2, "BLOCK": 64, "num_warps": 1}),  # 7 rows: the last program's second row idle
    ("cumsum_reverse.py", {"ROWS": 1, "BLOCK": 512, "num_warps": 4}),  # one step past the row's end
    ("cumprod.py", {"ROWS": 4, "BLOCK": 32, "num_warps": 1}),
    ("cumsum_exclusive.py", {"ROWS": 2, "BLOCK": 32, "num_warps": 1}),  # 35 rows, 3 steps of 90
    ("cumsum_masked.py", {"ROWS": 4, "BLOCK": 64, "num_warps": 1}),
])
def test_the_scan_template_passes_the_verifier(problem: str, config: dict[str, int], tmp_path: Path) -> None:
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(structural_moves(MOVES / problem).instances[0].source, config))
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verdict = Verifier(MOVES / problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason
