"""`pooling.sliding`: a pool whose window moves one column a step, an average as a running sum and a
maximum as segment prefix and suffix maxima; offered where it applies (with why where not), verified on tiny
problems, and exact where an infinity or a NaN passes through a block."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import structural_moves
from kernelopt.offline.tuner import knob_values, with_config

MOVES = Path(__file__).parent / "data" / "moves"


def _problem(tmp_path: Path, name: str, window: str, pad: str | None = None) -> Path:
    # two planes (one sample of two channels), not six: the interpreter runs each program in turn
    text = (MOVES / name).read_text().replace("batch, channels, length = 2, 3,", "batch, channels, length = 1, 2,")
    text = text.replace("batch, channels, height, width = 2, 3,", "batch, channels, height, width = 1, 2,")
    for old in ("return [4, 2, 1]", "return [3, 2, 1]", "return [3, 2, 1, 2]", "return [4, 1, 2, 3]"):
        text = text.replace(old, f"return {window}")
    if pad:
        text = text.replace("count_include_pad=False", pad)
    path = tmp_path / name
    path.write_text(text)
    return path


def _sliding(path: Path) -> str:
    (move,) = [m for m in structural_moves(path).instances if m.name == "pooling.sliding"]
    assert set(knob_values(move.source)) == {"BLOCK_W", "num_warps"}
    assert {"BLOCK_W": 1024, "num_warps": 4} == move.grid[0]  # the probe's best on the H200 first
    return move.source


@pytest.mark.parametrize(("name", "window", "pad", "block"), [
    ("avg_pool1d.py", "[8, 1, 4]", None, 8),  # 44_Average_Pooling_1D's window: 8 wide, stride 1, padding 4
    ("avg_pool1d.py", "[3, 1, 0]", None, 4),  # no padding: the window before the first block is empty
    ("avg_pool2d.py", "[3, 1, 1]", None, 8),  # 3 rows summed, the padding left out of each count (3 blocks a row)
    ("avg_pool2d.py", "[3, 1, 1]", "count_include_pad=True", 16),  # a block wider than the row
])
def test_the_running_sum_passes_the_verifier(
    name: str, window: str, pad: str | None, block: int, tmp_path: Path, settings: HarnessSettings
) -> None:
    path = _problem(tmp_path, name, window, pad)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(_sliding(path), {"BLOCK_W": block}))  # several blocks a row, the last masked
    verdict = Verifier(path, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason


def test_the_running_sum_is_skipped_with_why(tmp_path: Path) -> None:
    strided = structural_moves(MOVES / "avg_pool1d.py")  # stride 2
    assert "pooling.sliding" not in [m.name for m in strided.instances]
    assert "2 columns a step" in {s.name: s.why for s in strided.skipped}["pooling.sliding"]
    maximum = structural_moves(MOVES / "max_pool2d.py")  # a maximum at stride 2
    assert "pooling.sliding" not in [m.name for m in maximum.instances]
    assert "2 columns a step" in {s.name: s.why for s in maximum.skipped}["pooling.sliding"]


def _interpreted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: str, block: int) -> types.ModuleType:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    path = _problem(tmp_path, "avg_pool1d.py", window)
    module = types.ModuleType("kernelopt_test_sliding")
    exec(compile(with_config(_sliding(path), {"BLOCK_W": block}), "sliding.py", "exec"), module.__dict__)  # noqa: S102
    return module


def test_an_infinity_or_a_nan_stays_in_its_own_windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A running sum that took an inf in would give inf - inf = NaN for every later output of its block; the
    # block that reads one is summed window by window instead, so the output matches torch's exactly.
    import torch

    module = _interpreted(tmp_path, monkeypatch, "[4, 1, 2]", 16)
    x = torch.randn(2, 3, 40)
    x[0, 0, 5], x[0, 1, 30], x[1, 2, 17] = float("inf"), float("nan"), float("-inf")
    got = module.ModelNew()(x)
    want = torch.nn.AvgPool1d(4, 1, 2)(x)
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.isinf(), want.isinf())
    finite = want.isfinite()
    assert torch.allclose(got[finite], want[finite], atol=1e-6, rtol=1e-5)
    assert finite[0, 0].sum() < finite.shape[-1] and finite[1, 0].all()  # the infinities stayed in their windows


def test_a_spike_or_an_overflow_leaves_no_error_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 1e8 among ones: a running sum rounds it in and out and keeps an error near 4 on every later window of its
    # block (those windows of ones came out 0). Two values of 3e38 overflow a window to inf: the running sum
    # stayed inf to the block's end. The last output's direct check sends both blocks window by window.
    import torch

    module = _interpreted(tmp_path, monkeypatch, "[4, 1, 0]", 32)
    spike = torch.ones(1, 2, 64)
    spike[0, 0, 2] = 1e8
    got, want = module.ModelNew()(spike), torch.nn.AvgPool1d(4, 1, 0)(spike)
    assert torch.allclose(got, want, rtol=1e-6, atol=1e-6)
    assert torch.equal(got[0, 0, 3:32], torch.ones(29)) and torch.equal(got[0, 1], torch.ones(61))
    big = torch.ones(1, 1, 64)
    big[0, 0, 2] = big[0, 0, 3] = 3e38
    got, want = module.ModelNew()(big), torch.nn.AvgPool1d(4, 1, 0)(big)
    assert torch.equal(got.isinf(), want.isinf()) and torch.allclose(got[want.isfinite()], want[want.isfinite()])


def _maxima(path: Path) -> str:
    (move,) = [m for m in structural_moves(path).instances if m.name == "pooling.sliding"]
    assert set(knob_values(move.source)) == {"SEGMENTS", "num_warps"}
    assert knob_values(move.source) == move.grid[0]  # as written, the file is its grid's first configuration
    assert "suffix" in move.why and "loads an output" in move.why
    return move.source


@pytest.mark.parametrize(("name", "window", "segments", "lanes"), [
    ("max_pool1d.py", "[8, 1, 4, 3]", 1, 32),  # 41_Max_Pooling_1D's window: 8 taps 3 apart, padding 4
    ("max_pool1d.py", "[4, 1, 2, 3]", 2, 16),  # a dilation of 3: its phases padded to 4 lanes
    ("max_pool1d.py", "[3, 1, 0, 1]", 4, 4),  # no padding, no dilation, a window of 3 padded to 4
    ("max_pool2d.py", "[4, 1, 1, 1]", 2, 4),  # 42_Max_Pooling_2D's window: 4 x 4, stride 1, padding 1
    ("max_pool2d.py", "[3, 1, 1, 2]", 2, 8),  # rows and columns dilated by 2: 3 x 2 lanes padded to 4 x 2
    ("max_pool2d.py", "[3, (2, 1), 1, 1]", 2, 4),  # two rows down a step, one column across
])
def test_the_segment_maxima_pass_the_verifier(
    name: str, window: str, segments: int, lanes: int, tmp_path: Path, settings: HarnessSettings
) -> None:
    path = _problem(tmp_path, name, window)
    source = _maxima(path)
    # SEGMENTS x KW x dilation, padded to powers of two: 512-4096 lanes a program, 2-16 a thread
    (grid,) = [m.grid for m in structural_moves(path).instances if m.name == "pooling.sliding"]
    assert {c["SEGMENTS"] * lanes for c in grid} <= {512, 1024, 2048, 4096}
    assert all(2 <= c["SEGMENTS"] * lanes // (32 * c["num_warps"]) <= 16 for c in grid)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(source, {"SEGMENTS": segments}))  # several blocks a row, the last masked
    verdict = Verifier(path, tmp_path / "harness", settings).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason


@pytest.mark.parametrize(("window", "dtype"), [("[8, 1, 4, 3]", "float32"), ("[5, 1, 2, 2]", "float32"),
                                               ("[4, 1, 0, 1]", "float32"), ("[8, 1, 4, 3]", "float16")])
def test_the_segment_maxima_are_exact_with_nans_and_infinities(
    window: str, dtype: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every window is a segment's suffix and the next one's prefix: each output, a NaN's and an infinity's
    # windows included, is torch's exactly (a max rounds nothing), at every block size that splits the row.
    import torch

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    path = _problem(tmp_path, "max_pool1d.py", window)
    k, _, pad, dilation = (int(v) for v in window.strip("[]").split(","))
    x = torch.randn(2, 3, 61)
    x[0, 1, 7], x[1, 2, 20], x[1, 0, 3], x[0, 0, 40] = float("nan"), float("inf"), float("-inf"), 50.0
    x = x.to(getattr(torch, dtype))
    want = torch.nn.functional.max_pool1d(x, k, 1, pad, dilation)
    for segments in (1, 2, 8):
        module = types.ModuleType("kernelopt_test_maxima")
        exec(compile(with_config(_maxima(path), {"SEGMENTS": segments}), "maxima.py", "exec"), module.__dict__)  # noqa: S102
        got = module.ModelNew()(x)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got[~want.isnan()], want[~want.isnan()])
    assert want.isnan().any() and want.isinf().any()  # the specials reached some windows, and stayed in theirs


def test_the_segment_maxima_are_skipped_with_why(tmp_path: Path) -> None:
    def why(name: str, window: str) -> str:
        return {s.name: s.why for s in structural_moves(_problem(tmp_path, name, window)).skipped}["pooling.sliding"]

    assert "2 columns a step" in why("max_pool1d.py", "[4, 2, 2, 3]")
    assert "2 wide" in why("max_pool1d.py", "[2, 1, 1, 3]")  # two loads an output is what the window makes already
    # 65 taps 64 apart (over a row long enough for it): a segment of 128 x 64 lanes, past a program's 4096 (the knob
    # grid would be empty)
    long = tmp_path / "long"
    long.mkdir()
    path = _problem(long, "max_pool1d.py", "[65, 1, 32, 64]")
    path.write_text(path.read_text().replace("length = 1, 2, 41", "length = 1, 2, 5000"))
    assert "8192 lanes" in {s.name: s.why for s in structural_moves(path).skipped}["pooling.sliding"]


def test_a_2d_pool_of_one_unbatched_plane_is_not_read_as_rows(tmp_path: Path) -> None:
    # A (C, H, W) input with a window one row tall but two rows a step: the templates read a 3-D input as rows of a
    # 1-D pool and would return every row; torch returns every other one. No template is offered, with why.
    text = (MOVES / "max_pool2d.py").read_text().replace("return [torch.randn(batch, channels, height, width)]",
                                                         "return [torch.randn(channels, height, width)]")
    path = tmp_path / "unbatched.py"
    path.write_text(text.replace("return [3, 2, 1, 2]", "return [(1, 3), (2, 1), (0, 1), 1]"))
    moves = structural_moves(path)
    assert not moves.instances
    assert "without a batch dim" in {s.name: s.why for s in moves.skipped}["pooling.sliding"]
