"""benchmarks/seed_audit.py's --tiny: a problem's batch and spatial sizes cut to a few, its channels and kernel sizes
as written, so a level-2 convolution's seed runs under the interpreter in seconds."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import seed_audit  # noqa: E402

PROBLEM = '''import torch

batch_size = 128
in_channels = 3
out_channels = 16
depth, height, width = 16, 32, 6
D, H, W = 16, 4, 64
kernel_size = 3
length = 4096
features = 4096
batch = 16; seq_len = L = 64
dim1, dim2 = 256, 4
height_in, width_in = 256, 512
dim = 4096
shape = (batch_size, in_channels)


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]
'''


def test_tiny_cuts_batch_and_spatial_sizes_only_where_larger() -> None:
    tiny = seed_audit.tiny_source(PROBLEM)
    assert "batch_size = 2\n" in tiny and "depth, height, width = 8, 8, 6\n" in tiny and "D, H, W = 8, 4, 8\n" in tiny
    assert "length = 8\n" in tiny and "dim1, dim2 = 8, 4\n" in tiny and "height_in, width_in = 8, 8\n" in tiny
    # two statements on a line (public level-2 8's `depth = 16; height = width = 64`): each cut, neither lost
    assert "batch = 2; seq_len = L = 8\n" in tiny
    # channels, kernel sizes, other names and expressions as written
    for kept in ("dim = 4096\n", "in_channels = 3\n", "out_channels = 16\n", "kernel_size = 3\n", "features = 4096\n",
                 "shape = (batch_size, in_channels)\n", "    return [torch.rand(batch_size,"):
        assert kept in tiny, kept
    compile(tiny, "tiny", "exec")


def test_even_makes_every_large_size_one_value_a_constructor_can_divide() -> None:
    # the shrink's odd sizes (37, 45, ...) broke `assert n_embd % n_head == 0` and GroupNorm's groups; --even's 48
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "kernelbench"))
    import shrink  # benchmarks/kernelbench/shrink.py

    source = "n_embd = 768\nn_head = 8\nnum_groups = 512\nchannels = 1024\nbatch_size = 128\n"
    odd = shrink.shrink_source(source)
    assert "n_embd = 37\n" in odd and "num_groups = 45\n" in odd
    even = shrink.shrink_source(source, (seed_audit.EVEN_SIZE,))
    assert "n_embd = 48\n" in even and "n_head = 8\n" in even and "num_groups = 48\n" in even
    assert "channels = 48\n" in even and "batch_size = 3\n" in even
