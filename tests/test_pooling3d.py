"""3-D max and average pooling (offline/moves/pooling3d.py): the family reads nn.MaxPool3d and nn.AvgPool3d, and
both templates give torch's outputs for any window the reference can hold."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest
import torch

from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import pooling3d, structural_moves
from kernelopt.offline.tuner import knob_values, with_config

MOVES = Path(__file__).parent / "data" / "moves"
SMALL = {"flat": {"BLOCK": 64}, "tiled": {"BLOCK_H": 4, "BLOCK_W": 8}}  # masked blocks and tiles on every edge


def _module(tmp_path: Path, source: str, name: str):  # noqa: ANN202 - the kernel module
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"kernelopt_test_pool3d_{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("problem", ["max_pool3d.py", "avg_pool3d.py"])
@pytest.mark.parametrize("kind", ["flat", "tiled"])
def test_each_3d_pooling_template_passes_the_verifier(problem: str, kind: str, tmp_path: Path,
                                                      settings: HarnessSettings) -> None:
    moves = structural_moves(MOVES / problem)
    assert moves.family is not None and moves.family.name == "pooling"
    assert [m.name for m in moves.instances] == ["pooling.flat", "pooling.tiled", "pooling.interior"]
    assert {s.name for s in moves.skipped} == {"pooling.rolling", "pooling.sliding"}
    move = next(m for m in moves.instances if m.name == f"pooling.{kind}")
    assert set(knob_values(move.source)) == set(SMALL[kind]) | {"num_warps"}
    # tiles of one output a thread among them (lanes one value apart along the row)
    one = pooling3d.ONE_A_THREAD if kind == "tiled" else ({"BLOCK": 128, "num_warps": 4},)
    assert all(c in move.grid for c in one)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(move.source, SMALL[kind]))
    verdict = Verifier(MOVES / problem, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason


# (kernel, stride, padding, dilation) per axis, the count of the padding (average)
_WINDOWS = [((3, 3, 3), (2, 2, 2), (1, 1, 1), (3, 3, 3)),  # KernelBench's 43: dilated
            ((3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1)),  # and 46
            ((2, 3, 1), (1, 2, 3), (1, 0, 0), (1, 2, 1)),  # asymmetric
            ((1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1)),
            ((4, 2, 5), (3, 1, 2), (2, 1, 2), (1, 1, 2))]


@pytest.mark.parametrize(("window", "op"), [(w, op) for w, op in itertools.product(_WINDOWS, ["max", "avg", "avg_pad"])
                                             if op == "max" or w[3] == (1, 1, 1)])  # an average pool: no dilation
def test_the_3d_templates_give_torchs_pools_for_any_window(window: tuple, op: str, tmp_path: Path) -> None:
    kernel, stride, padding, dilation = window
    if op == "max":
        call = ("max_pool3d_with_indices", (None, list(kernel), list(stride), list(padding), list(dilation)))
        want = lambda x: torch.nn.functional.max_pool3d(x, kernel, stride, padding, dilation)  # noqa: E731
    else:
        pad = op == "avg_pad"
        call = ("avg_pool3d", (None, list(kernel), list(stride), list(padding), False, pad))
        want = lambda x: torch.nn.functional.avg_pool3d(x, kernel, stride, padding, count_include_pad=pad)  # noqa: E731
    torch.manual_seed(0)
    x = torch.randn(2, 2, 9, 10, 11)
    x[0, 1, 4, 5, 6], x[1, 1, 0, 0, 0], x[1, 0, 8, 9, 10] = float("nan"), float("inf"), float("-inf")
    for kind in ("flat", "tiled"):
        source = pooling3d.written(kind, call[0], call[1], "x")
        assert source is not None
        model = _module(tmp_path, with_config(source, SMALL[kind]), f"{kind}_{op}").ModelNew()
        for inputs in (x, x[0]):  # batched, and one unbatched (C, D, H, W) volume
            got, expected = model(inputs), want(inputs)
            assert got.shape == expected.shape, (kind, got.shape, expected.shape)
            torch.testing.assert_close(got, expected, equal_nan=True, msg=f"{kind} {op} {window}")


def test_what_the_3d_templates_do_not_write_is_skipped_with_why(tmp_path: Path) -> None:
    problem = tmp_path / "pool.py"
    problem.write_text((MOVES / "avg_pool3d.py").read_text().replace("count_include_pad=False",
                                                                     "count_include_pad=False, ceil_mode=True"))
    moves = structural_moves(problem)
    assert moves.family is not None and moves.family.name == "pooling" and not moves.instances
    assert all("ceil_mode" in s.why for s in moves.skipped)
    # the indices returned too: the templates give the values only
    problem.write_text((MOVES / "max_pool3d.py").read_text().replace("dilation=dilation)",
                                                                     "dilation=dilation, return_indices=True)"))
    assert structural_moves(problem).family.name == "other"


# (kernel, stride, padding, dilation) per axis, the op, the input's (D, H, W): each with whole tiles and edge tiles
_INTERIOR = [(((3, 3, 3), (2, 2, 2), (1, 1, 1), (3, 3, 3)), "max", (13, 14, 31)),  # KernelBench's 43
             (((3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1)), "avg", (9, 10, 23)),  # and 46
             (((3, 3, 3), (1, 1, 1), (1, 1, 1), (1, 1, 1)), "avg_pad", (4, 5, 13))]


@pytest.mark.parametrize(("window", "op", "volume"), _INTERIOR)
def test_the_interior_template_gives_torchs_pools_from_its_whole_tiles_and_its_edges(window: tuple, op: str,
                                                                                    volume: tuple,
                                                                                    tmp_path: Path) -> None:
    from test_pooling_interior import _whole_and_edge

    kernel, stride, padding, dilation = window
    if op == "max":
        call = ("max_pool3d_with_indices", (None, list(kernel), list(stride), list(padding), list(dilation)))
        want = lambda x: torch.nn.functional.max_pool3d(x, kernel, stride, padding, dilation)  # noqa: E731
    else:
        call = ("avg_pool3d", (None, list(kernel), list(stride), list(padding), False, op == "avg_pad"))
        want = lambda x: torch.nn.functional.avg_pool3d(  # noqa: E731
            x, kernel, stride, padding, count_include_pad=op == "avg_pad")
    torch.manual_seed(0)
    x = torch.randn(1, 2, *volume)  # two volumes: the interpreter runs each program in turn
    flat = x.view(-1)
    flat[flat.numel() // 3], flat[0], flat[-40] = float("nan"), float("inf"), float("-inf")
    expected = want(x)
    tile = {"BLOCK_H": 2, "BLOCK_W": 4, "num_warps": 1}
    axes = [_whole_and_edge(volume[a], expected.shape[2 + a], (1, 2, 4)[a], kernel[a], stride[a], padding[a],
                            dilation[a]) for a in range(3)]
    assert all(whole for whole, _ in axes) and any(edge for _, edge in axes), axes  # both paths run
    source = pooling3d.written("interior", call[0], call[1], "x")
    assert source is not None
    got = _module(tmp_path, with_config(source, tile), f"interior_{op}").ModelNew()(x)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, equal_nan=True)
