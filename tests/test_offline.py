"""The offline policy: launch parameters read from the source, one-step variants, rules."""

from __future__ import annotations

from pathlib import Path

from kernelopt.hardware.roofline import Roofline
from kernelopt.offline.judge import diagnose
from kernelopt.offline.tuner import find_launch_params, variants

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_parameters_come_from_constants_and_launch_keywords() -> None:
    params = {(p.name, p.value) for p in find_launch_params((EXAMPLES / "matmul" / "kernel.py").read_text())}
    assert params == {("BLOCK_M", 32), ("BLOCK_N", 32), ("BLOCK_K", 32), ("num_warps", 4), ("num_stages", 2)}


def test_variants_change_one_literal_and_keep_the_rest() -> None:
    source = (EXAMPLES / "swish" / "kernel.py").read_text()
    first = next(variants(source, "memory"))
    assert first.change == "BLOCK_SIZE 128 -> 256"
    changed = [(a, b) for a, b in zip(source.splitlines(), first.source.splitlines(), strict=True) if a != b]
    assert changed == [("        BLOCK_SIZE = 128", "        BLOCK_SIZE = 256")]


def test_bottleneck_orders_the_moves() -> None:
    source = (EXAMPLES / "swish" / "kernel.py").read_text()
    assert next(variants(source, "underutilized")).change == "BLOCK_SIZE 128 -> 64"
    stages = [v.change for v in variants((EXAMPLES / "matmul" / "kernel.py").read_text(), "compute")]
    assert stages.index("num_stages 2 -> 3") < stages.index("num_stages 2 -> 1")


def test_a_kernel_without_tunables_has_no_variants() -> None:
    assert list(variants("import triton\nx = 1\n")) == []


def _roofline(**fields: object) -> Roofline:
    base = dict(
        bottleneck="memory",
        compute_sol_pct=20.0,
        memory_sol_pct=70.0,
        efficiency_pct=60.0,
        headroom_pct=40.0,
        at_roofline=False,
        uses_tensor_cores=False,
    )
    base.update(fields)
    return Roofline(**base)  # type: ignore[arg-type]


def test_rules_name_excess_traffic_first_then_the_bound() -> None:
    found = diagnose(_roofline(dram_bytes=3e9, min_bytes=1e9), {})
    assert [b.category for b in found] == ["memory", "memory"]
    assert "3.0x the minimum" in found[0].summary
    compute = diagnose(_roofline(bottleneck="compute"), {})
    assert compute[0].category == "compute" and "Tensor cores are idle" in compute[0].reasoning
    idle = diagnose(_roofline(bottleneck="underutilized"), {})
    assert idle[0].category == "occupancy"
    assert diagnose(None, None)[0].category == "other"
