"""A family is read only where its templates would compute the reference's work: the one input read with
its values in place, the result returned so. A reference that transposes, slices or reflattens its input
(or its result) is left to the launch sweep, and the report says why, instead of offering templates the
verifier can only refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelopt.harness.problem import import_file
from kernelopt.offline.moves import structural_moves
from kernelopt.offline.moves.family import trace_family

_PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {body}


def get_inputs():
    return [torch.randn(4, 6, 5)]


def get_init_inputs():
    return []
'''


def _problem(tmp_path: Path, body: str) -> Path:
    path = tmp_path / f"problem_{abs(hash(body))}.py"
    path.write_text(_PROBLEM.format(body=body))
    return path


@pytest.mark.parametrize(("body", "family"), [
    # in place: the input itself, a copy of it, a view that keeps every value where it is
    ("torch.relu(x)", "elementwise"),
    ("torch.relu(x.clone())", "elementwise"),
    ("torch.relu(x.view(4, 6, 5))", "elementwise"),
    ("x * torch.sigmoid(x)", "elementwise"),
    ("x / (1 + x.abs())", "elementwise"),  # softsign written out
    # the operators' names of a formula, applied to other values: not the formula the template writes
    ("torch.sigmoid(x) * 2", "other"),
    ("torch.sigmoid(x) * torch.sigmoid(x)", "other"),
    ("x.abs() / (1 + x)", "other"),
    # a row norm is x divided by its row's statistic, kept as a dim: not the statistic divided by x, nor |x| by it
    ("x / torch.mean(torch.abs(x), dim=2, keepdim=True)", "row_l1_norm"),
    ("torch.mean(torch.abs(x), dim=2, keepdim=True) / x", "other"),
    ("(lambda a: a / torch.mean(a, dim=2, keepdim=True))(torch.abs(x))", "other"),
    ("x / torch.linalg.vector_norm(x, 2, dim=1, keepdim=True)", "row_l2_norm"),
    ("torch.linalg.vector_norm(x, 2, dim=1, keepdim=True) / x", "other"),
    # a sum returned in another dtype than the input's: the templates return the input's
    ("torch.sum(x, dim=1, dtype=torch.float64)", "other"),
    ("torch.softmax(x, dim=-1)", "softmax"),
    ("torch.sum(x, dim=1, keepdim=True)", "reduce"),
    ("torch.nn.functional.layer_norm(x, (5,))", "standardize"),
    ("torch.nn.functional.instance_norm(x)", "standardize"),  # batch norm over x viewed as (1, 24, 5)
    ("torch.nn.functional.avg_pool1d(x, 3, 1, 1)", "pooling"),  # pooled as 2-D: x viewed (4, 6, 1, 5)
    # values moved: the templates would read or write something else
    ("torch.softmax(x.transpose(1, 2), dim=1)", "other"),
    ("torch.softmax(x.view(4, -1), dim=1)", "other"),
    ("torch.softmax(x.unsqueeze(1), dim=1)", "other"),  # a softmax over a dim of 1, not over x's dim 1
    ("torch.sum(x.transpose(0, 2), dim=1)", "other"),
    ("torch.relu(x).transpose(0, 1)", "other"),
    ("torch.relu(x.reshape(-1))", "other"),
    ("torch.relu(x).view(4, 30)", "other"),
    ("x.transpose(1, 2) * torch.sigmoid(x.transpose(1, 2))", "other"),
    ("torch.nn.functional.layer_norm(x.view(4, -1), (30,))", "other"),
    # a copy of the input is the input: its views are judged the same way
    ("torch.softmax(x.clone().transpose(1, 2), dim=1)", "other"),
    ("torch.softmax(x.detach().transpose(1, 2), dim=1)", "other"),
    ("torch.sum(x.clone().transpose(0, 2), dim=1)", "other"),
    ("torch.relu(x.clone().reshape(-1))", "other"),
    ("torch.softmax(x.double(), dim=-1)", "other"),  # a cast: not the input the template reads
    # elementwise: any view in memory order, so long as the result has the input's shape
    ("torch.relu(x.view(-1)).view_as(x)", "elementwise"),
    ("torch.sigmoid(x.flatten()).view(x.shape)", "elementwise"),
    ("torch.relu(x.unsqueeze(1))", "other"),  # (4, 1, 6, 5): the template returns x's shape
    # instance norm's regrouped view is for batch norm only: a layer norm over it normalises every value at once
    ("torch.nn.functional.layer_norm(x.view(1, 24, 5), (24, 5)).view(4, 6, 5)", "other"),
])
def test_a_family_is_read_only_where_the_input_is_read_in_place(body: str, family: str, tmp_path: Path) -> None:
    path = _problem(tmp_path, body)
    assert trace_family(import_file(path, "kernelopt_test_views")).name == family


def test_the_report_says_why_a_view_left_the_family(tmp_path: Path) -> None:
    moves = structural_moves(_problem(tmp_path, "torch.softmax(x.transpose(1, 2), dim=1)"))
    assert not moves.instances
    (skipped,) = moves.skipped
    assert "read as softmax but through a view that moves" in skipped.why and "launch is swept" in skipped.why


def test_a_norm_without_its_kept_dim_on_a_square_input_is_not_the_row_norm(tmp_path: Path) -> None:
    # x / mean(|x|, dim=1) on an (N, N) input broadcasts the row statistics along the other dim: the operators and
    # sizes of an L1 norm, the values of another (the check runs at the problem's own pattern of equal sizes)
    problem = _problem(tmp_path, "x / torch.mean(torch.abs(x), dim=1)")
    problem.write_text(problem.read_text().replace("torch.randn(4, 6, 5)", "torch.randn(6, 6)"))
    family = structural_moves(problem).family
    assert family is not None and family.name == "other" and "row l1 norm over dim 1" in family.note


def test_a_float64_input_takes_no_template(tmp_path: Path) -> None:
    problem = _problem(tmp_path, "torch.softmax(x, dim=-1)")
    problem.write_text(problem.read_text().replace("torch.randn(4, 6, 5)", "torch.randn(4, 6, 5, dtype=torch.float64)"))
    family = structural_moves(problem).family
    assert family is not None and family.name == "other" and "float64" in family.note
