"""The impossible-speed rule: the floor time on a GPU's datasheet ceilings, and a GPU time under it
that cannot be real (the work was done elsewhere, or not all of it, or not all of it timed).

No torch here: the graph process computes the floor it hands the verifier."""

from __future__ import annotations

from kernelopt.hardware.roofline import datasheet_floor_ms
from kernelopt.hardware.specs import detect_gpu_spec, get_gpu_spec
from kernelopt.records import FloorEstimate, Timing

# A GPU time this far under the floor cannot be real: the work was done elsewhere or not at all.
IMPOSSIBLE_SPEED_FRACTION = 0.9


def floor_ms_for(floor: FloorEstimate | None, gpu_key: str | None) -> float | None:
    """The floor time on a GPU's datasheet ceilings (the GPU present when no key is given).

    Datasheet peaks are above what a GPU sustains, so this floor is the lenient one: a time
    under it is impossible, not merely unlikely.
    """
    spec = get_gpu_spec(gpu_key) if gpu_key else detect_gpu_spec()
    return datasheet_floor_ms(floor, spec) if floor is not None and spec is not None else None


def impossible_speed(timing: Timing | None, floor_ms: float | None) -> str | None:
    """Why a GPU time cannot be real (under the floor by more than the margin), or None.

    Interpreter and CPU times say nothing about the GPU, so only GPU times are judged.
    """
    if timing is None or not timing.is_gpu_time or not floor_ms:
        return None
    if timing.median_ms >= floor_ms * IMPOSSIBLE_SPEED_FRACTION:
        return None
    return (
        f"impossible speed: {timing.median_ms:.4f} ms is under the roofline floor of {floor_ms:.4f} ms; "
        "the work is not all being done or not all being timed"
    )
