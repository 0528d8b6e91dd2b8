"""`pooling.interior` (offline/moves/pooling_interior.py): tiled's tiles whose windows lie inside the input read
with no mask; offered beside tiled for every 1-D and 2-D pool, torch's outputs from both of its paths (NaN and
infinities included), through the verifier, and in the code Triton compiles for an H200: the whole tiles' loads
carry no predicate (some of them 16-byte vectors), where tiled predicates every load."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import torch
from test_moves_ptx import _ptx

from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import pooling, structural_moves
from kernelopt.offline.tuner import knob_values, with_config

ROOT = Path(__file__).resolve().parents[1]
MOVES = ROOT / "tests" / "data" / "moves"


def _whole_and_edge(size: int, out: int, block: int, k: int, s: int, p: int, d: int) -> tuple[int, int]:
    """How many blocks of one axis take the unmasked path, and how many the masked (the kernel's own test)."""
    starts = range(0, out, block)
    whole = sum(1 for c in starts
                if c * s - p >= 0 and (c + block - 1) * s - p + (k - 1) * d < size and c + block <= out)
    return whole, len(starts) - whole


def _kernel(tmp_path: Path, source: str, name: str):  # noqa: ANN202 - the kernel file's module
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"kernelopt_test_interior_{name}", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# (op, (kh, kw, sh, sw, ph, pw, dh, dw), input shape, (BLOCK_H, BLOCK_W))
CASES = [
    ("max", (1, 8, 1, 1, 0, 4, 1, 3), (2, 3, 61), (1, 8)),  # 41_Max_Pooling_1D's window
    ("max", (1, 4, 1, 2, 0, 1, 1, 1), (2, 3, 61), (1, 8)),  # strided
    ("avg_pad", (1, 8, 1, 1, 0, 4, 1, 1), (2, 3, 61), (1, 8)),  # 44_Average_Pooling_1D's window
    ("avg", (1, 3, 1, 1, 0, 1, 1, 1), (2, 3, 61), (1, 16)),  # the padding left out of the edges' counts
    ("max", (4, 4, 1, 1, 1, 1, 1, 1), (2, 2, 23, 29), (2, 4)),  # 42_Max_Pooling_2D's window
    ("max", (3, 3, 2, 2, 1, 1, 2, 2), (2, 2, 23, 29), (2, 4)),  # strided and dilated both ways
    ("avg", (3, 3, 1, 1, 1, 1, 1, 1), (2, 2, 23, 29), (4, 8)),
    ("avg_pad", (5, 5, 5, 5, 0, 0, 1, 1), (2, 2, 37, 41), (2, 4)),  # 45_Average_Pooling_2D's shape of window
]


@pytest.mark.parametrize(("op", "window", "shape", "tile"), CASES)
def test_both_paths_give_torchs_pool(op: str, window: tuple, shape: tuple, tile: tuple, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    kh, kw, sh, sw, ph, pw, dh, dw = window
    if op == "max":
        call = ("max_pool2d_with_indices", (None, [kh, kw], [sh, sw], [ph, pw], [dh, dw], False))
    else:
        call = ("avg_pool2d", (None, [kh, kw], [sh, sw], [ph, pw], False, op == "avg_pad"))
    source = pooling._written(pooling._INTERIOR_SOURCE, *call, "x")  # noqa: SLF001 - the move's own file
    assert source is not None
    torch.manual_seed(0)
    x = torch.randn(*shape)
    x.view(-1)[40], x.view(-1)[-9], x.view(-1)[100] = float("nan"), float("inf"), float("-inf")
    h, w = (1, shape[-1]) if len(shape) == 3 else shape[-2:]
    if len(shape) == 3:
        want = (torch.nn.functional.max_pool1d(x, kw, sw, pw, dw) if op == "max" else
                torch.nn.functional.avg_pool1d(x, kw, sw, pw, count_include_pad=op == "avg_pad"))
    else:
        want = (torch.nn.functional.max_pool2d(x, (kh, kw), (sh, sw), (ph, pw), (dh, dw)) if op == "max" else
                torch.nn.functional.avg_pool2d(x, (kh, kw), (sh, sw), (ph, pw), count_include_pad=op == "avg_pad"))
    oh, ow = (1, want.shape[-1]) if len(shape) == 3 else want.shape[-2:]
    rows = _whole_and_edge(h, oh, tile[0], kh, sh, ph, dh)
    columns = _whole_and_edge(w, ow, tile[1], kw, sw, pw, dw)
    assert rows[0] and columns[0] and (rows[1] or columns[1]), (rows, columns)  # both paths run
    model = _kernel(tmp_path, with_config(source, {"BLOCK_H": tile[0], "BLOCK_W": tile[1], "num_warps": 1}),
                    f"{op}_{len(shape)}").ModelNew()
    got = model(x)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, equal_nan=True)


def test_it_is_offered_beside_tiled_with_several_outputs_a_thread() -> None:
    for problem, one_row in (("max_pool1d.py", True), ("avg_pool1d.py", True), ("max_pool2d.py", False),
                             ("avg_pool2d.py", False)):
        moves = {m.name: m for m in structural_moves(MOVES / problem).instances}
        interior = moves["pooling.interior"]
        assert list(moves)[:2] == ["pooling.tiled", "pooling.interior"]
        assert set(knob_values(interior.source)) == {"BLOCK_H", "BLOCK_W", "num_warps"}
        assert {"memory", "compute"} <= set(interior.cures)
        least, most = (2, 16) if one_row else (4, 8)  # a 2-D tile's whole path: about 16 registers an output
        assert all(least <= c["BLOCK_H"] * c["BLOCK_W"] // (32 * c["num_warps"]) <= most for c in interior.grid)
        assert all(c["BLOCK_H"] == 1 for c in interior.grid) == one_row
        assert interior.grid[0] == ({"BLOCK_H": 1, "BLOCK_W": 1024, "num_warps": 4} if one_row else
                                    {"BLOCK_H": 8, "BLOCK_W": 64, "num_warps": 4})



def test_where_tiled_is_not_written_neither_is_interior(tmp_path: Path) -> None:
    # a 3 x 3 window over an unbatched (C, H, W) input: the templates read three dims as 1-D rows
    path = tmp_path / "unbatched.py"
    path.write_text((MOVES / "max_pool2d.py").read_text().replace(
        "torch.randn(batch, channels, height, width)", "torch.randn(channels, height, width)"))
    moves = structural_moves(path)
    assert not [m for m in moves.instances if m.name.startswith("pooling.")]
    skipped = {s.name: s.why for s in moves.skipped}
    assert skipped["pooling.interior"] == skipped["pooling.tiled"] and "without a batch dim" in skipped["pooling.tiled"]


def test_the_move_passes_the_verifier(tmp_path: Path) -> None:
    # 41's window (8 taps 3 apart, padding 4) on rows of 41: 28 outputs a row in blocks of 8, two of them whole
    problem = tmp_path / "max_pool1d.py"
    problem.write_text((MOVES / "max_pool1d.py").read_text().replace("return [4, 1, 2, 3]", "return [8, 1, 4, 3]"))
    move = next(m for m in structural_moves(problem).instances if m.name == "pooling.interior")
    assert _whole_and_edge(41, 28, 8, 8, 1, 4, 3) == (2, 2)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(move.source, {"BLOCK_H": 1, "BLOCK_W": 8, "num_warps": 1}))
    verdict = Verifier(problem, tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False)).verify(
        kernel, time=False)
    assert verdict.accepted, verdict.reason


def test_the_whole_tiles_load_without_predicates_for_the_h200(tmp_path: Path) -> None:
    # 41_Max_Pooling_1D at its size, each pointer 16-byte aligned as torch's are: tiled predicates each of its 64
    # loads (8 outputs a thread, 8 taps); interior's whole tiles load with none, a thread's taps merged into 16-byte
    # vectors where the row's alignment allows
    sizes = {"H": 1, "W": 65536, "OH": 1, "OW": 65523, "KH": 1, "KW": 8, "SH": 1, "SW": 1, "PH": 0, "PW": 4, "DH": 1,
             "DW": 3, "IS_MAX": True, "COUNT_PAD": True, "BLOCK_H": 1, "BLOCK_W": 1024}
    signature = {"out_ptr": "*fp32", "x_ptr": "*fp32", **{k: "constexpr" for k in sizes}}
    moves = {m.name: m for m in structural_moves(ROOT / "benchmarks" / "kernelbench" / "problems" /
                                                 "41_Max_Pooling_1D.py").instances}
    loads = {}
    for name in ("pooling.tiled", "pooling.interior"):
        kernel = tmp_path / f"{name}.py"
        kernel.write_text(with_config(moves[name].source, {"BLOCK_H": 1, "BLOCK_W": 1024}))
        ptx = _ptx(kernel, "pool_kernel", signature, sizes, 4, True)
        found = re.findall(r"^\s*(@!?%p\d+ )?ld\.global(?:\.\w+)*?(\.v4)?\.b32", ptx, re.MULTILINE)
        loads[name] = (sum(1 for guard, _ in found if guard), sum(1 for guard, _ in found if not guard),
                       sum(1 for guard, vector in found if vector and not guard))
    assert loads["pooling.tiled"] == (64, 0, 0), loads
    predicated, plain, vectors = loads["pooling.interior"]
    assert predicated == 64 and plain >= 8 and vectors >= 1, loads  # the edges' loop as tiled's, the whole tiles'
