"""Launch configurations: the autotuner's picks as recorded, or small ones where none was recorded.

The compiler's autotuner picks each kernel's block sizes, num_warps and num_stages when the
compiled reference first runs on the GPU; the seed keeps those picks. Output made without a
GPU (tests) has no picks: `untuned` gives every constexpr a small power of two instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernelopt.seed.forward_body import LaunchConfig
from kernelopt.seed.output_code import OutputModule

UNTUNED_BLOCKS = {"XBLOCK": 16, "YBLOCK": 16, "ZBLOCK": 4, "R0_BLOCK": 32, "R1_BLOCK": 8, "RBLOCK": 32}


def from_record(record: Mapping[str, Any]) -> dict[str, LaunchConfig]:
    """Configurations from a recorded {kernel: {"kwargs", "num_warps", "num_stages"}} mapping."""
    return {
        name: LaunchConfig(
            kwargs={k: int(v) for k, v in dict(entry.get("kwargs") or {}).items()},
            num_warps=int(entry.get("num_warps") or 4),
            num_stages=int(entry.get("num_stages") or 1),
        )
        for name, entry in record.items()
    }


def untuned(module: OutputModule) -> dict[str, LaunchConfig]:
    """Small configurations for every kernel of `module` (no autotuner ran: tests, the interpreter)."""
    out = {}
    for name, kernel in module.kernels.items():
        if kernel.kind == "template":
            out[name] = LaunchConfig({}, kernel.template_warps or 4, kernel.template_stages or 1)
        else:
            kwargs = {c: UNTUNED_BLOCKS.get(c, 16) for c in kernel.constexprs}
            out[name] = LaunchConfig(kwargs, 4, 1)
    return out
