"""Prompts: every section present and filled from its arguments."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
import pytest

from kernelopt.hardware.gpu_spec import GPUSpec
from kernelopt.prompts import (
    AttemptNote,
    OptimizationPromptArgs,
    PromptManager,
    bottleneck_json_schema,
    build_bottleneck_prompt,
    parse_bottleneck_response,
)
from kernelopt.prompts.manager import gpu_spec_fields
from kernelopt.records import BottleneckResult, Roofline

PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=self.dim)


def get_inputs():
    return [torch.randn(8192, 4096)]


def get_init_inputs():
    return [1]
"""

KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_two_pass_kernel(out_ptr, x_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * row_stride + offsets, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * row_stride + offsets, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        out = torch.empty_like(x)
        softmax_two_pass_kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK=4096)
        return out
"""


def make_gpu() -> GPUSpec:
    return GPUSpec(
        key="TESTGPU",
        name="Test GPU 9000",
        architecture="Hopper",
        compute_capability="9.0",
        sm_count=132,
        peak_fp32_tflops=66.9,
        peak_tf32_tflops=494.7,
        peak_fp16_tflops=989.4,
        peak_bf16_tflops=989.4,
        peak_fp8_tflops=None,
        memory_bandwidth_gbs=4800.0,
        memory_size_gb=141.0,
        memory_type="HBM3e",
        l2_cache_mb=50.0,
        shared_memory_per_sm_kb=228,
        max_threads_per_sm=2048,
        tdp_watts=700,
        device_names=("Test GPU 9000 SXM",),
        source="test datasheet v1",
    )


ROOFLINE = Roofline(
    bottleneck="memory",
    compute_sol_pct=22.4,
    memory_sol_pct=79.9,
    efficiency_pct=61.3,
    headroom_pct=38.7,
    at_roofline=False,
    uses_tensor_cores=False,
    warnings=("DRAM moved 1.8x the minimal bytes",),
    source="ncu+floor",
    measured_time_ms=0.0631,
    floor_time_ms=0.0387,
    min_bytes=268_435_456,
    flops=100_663_296.0,
    achieved_gbs=4254.1,
    achieved_tflops=0.0016,
    bandwidth_gbs=4240.0,
    peak_tflops=51.0,
)

BOTTLENECK = BottleneckResult(
    category="memory",
    summary="Each row crosses DRAM twice",
    reasoning="dram__throughput 79.9% with bytes read 1.8x the input",
    root_causes=("second pass re-reads x from DRAM", "UNPICKED CAUSE"),
    recommended_fixes=("fuse max, sum and normalise into one pass", "UNPICKED FIX"),
)


def make_args(**changes: object) -> OptimizationPromptArgs:
    args = OptimizationPromptArgs(
        problem_source=PROBLEM,
        kernel_source=KERNEL,
        gpu=make_gpu(),
        roofline=ROOFLINE,
        bottleneck=BOTTLENECK,
        root_cause="second pass re-reads x from DRAM",
        recommended_fix="fuse max, sum and normalise into one pass",
        current_best_ms=0.0699,
        eager_ms=0.110,
        compile_ms=0.085,
        ncu_metrics={"dram__throughput.avg.pct_of_peak_sustained_elapsed": 79.9},
    )
    return dataclasses.replace(args, **changes)  # type: ignore[arg-type]


def render(**changes: object) -> str:
    return PromptManager().render_kernel_optimization_prompt(make_args(**changes))


def section(prompt: str, heading: str) -> str:
    """Gives the body of a section: from its heading to the next blank line."""
    assert f"\n{heading}\n" in prompt, f"no {heading} section in:\n{prompt}"
    return prompt.split(f"\n{heading}\n", 1)[1].split("\n\n", 1)[0]


# --- kernel optimization ---------------------------------------------------------------------


def test_sections_are_present_in_order() -> None:
    prompt = render()
    headings = ["TARGET GPU", "ROOFLINE ANALYSIS", "BOTTLENECK ANALYSIS", "PERFORMANCE TARGET"]
    positions = [prompt.index(f"\n{heading}\n") for heading in headings]
    assert positions == sorted(positions)
    assert prompt.index("OUTPUT RULES") > positions[-1]


def test_problem_and_kernel_sources_are_shown() -> None:
    prompt = render()
    assert "return torch.softmax(x, dim=self.dim)" in prompt
    assert "def softmax_two_pass_kernel(out_ptr" in prompt


def test_roofline_section_is_filled_from_the_roofline() -> None:
    body = section(render(), "ROOFLINE ANALYSIS")
    for expected in (
        "bottleneck: memory",
        "compute SOL: 22.4%",
        "memory SOL: 79.9%",
        "efficiency: 61.3%",
        "headroom: 38.7%",
        "at roofline: no",
        "tensor cores in use: no",
        "0.0387 ms",
        "4,254.1 GB/s",
        "0.0016 TFLOP/s",
        "DRAM moved 1.8x the minimal bytes",
    ):
        assert expected in body, expected


def test_roofline_at_the_roof_says_so() -> None:
    at_roof = dataclasses.replace(ROOFLINE, at_roofline=True, uses_tensor_cores=True)
    body = section(render(roofline=at_roof), "ROOFLINE ANALYSIS")
    assert "at roofline: yes" in body
    assert "tensor cores in use: yes" in body


def test_missing_roofline_figures_read_not_measured() -> None:
    sparse = Roofline(
        bottleneck="unknown",
        compute_sol_pct=None,
        memory_sol_pct=None,
        efficiency_pct=None,
        headroom_pct=None,
        at_roofline=False,
        uses_tensor_cores=None,
    )
    body = section(render(roofline=sparse), "ROOFLINE ANALYSIS")
    assert "compute SOL: not measured" in body
    assert "floor time" in body and "not measured" in body.split("floor time")[1]
    assert "not measured" in section(render(roofline=None), "ROOFLINE ANALYSIS").lower()


def test_bottleneck_section_holds_the_one_picked_cause_and_fix() -> None:
    body = section(render(), "BOTTLENECK ANALYSIS")
    assert "category: memory" in body
    assert "Each row crosses DRAM twice" in body
    assert "second pass re-reads x from DRAM" in body
    assert "fuse max, sum and normalise into one pass" in body
    prompt = render()
    assert "UNPICKED CAUSE" not in prompt and "UNPICKED FIX" not in prompt


def test_target_is_ten_percent_below_the_best() -> None:
    args = make_args()
    assert args.target_ms == pytest.approx(0.9 * 0.0699)
    body = section(render(), "PERFORMANCE TARGET")
    assert "10% better than the current best: <= 0.06291 ms" in body
    assert "0.0699 ms" in body and "0.11 ms" in body and "0.085 ms" in body


def test_target_falls_back_to_eager_without_a_best() -> None:
    args = make_args(current_best_ms=None)
    assert args.target_ms == pytest.approx(0.099)
    body = section(render(current_best_ms=None), "PERFORMANCE TARGET")
    assert "10% better than eager: <= 0.099 ms" in body
    assert "current best: not measured" in body


def test_no_target_without_any_time() -> None:
    args = make_args(current_best_ms=None, eager_ms=None, compile_ms=None)
    assert args.target_ms is None
    body = section(
        render(current_best_ms=None, eager_ms=None, compile_ms=None), "PERFORMANCE TARGET"
    )
    assert "<=" not in body
    assert "torch.compile: not measured" in body


def test_interpreter_times_are_labelled() -> None:
    assert "interpreter" not in section(render(), "PERFORMANCE TARGET")
    body = section(render(is_gpu_time=False), "PERFORMANCE TARGET")
    assert "Triton-interpreter times" in body and "not GPU times" in body


def test_every_gpu_field_is_rendered() -> None:
    gpu = make_gpu()
    body = section(render(), "TARGET GPU")
    for field in dataclasses.fields(gpu):
        assert f"- {field.name}: " in body, field.name
    assert "Test GPU 9000" in body
    assert "test datasheet v1" in body
    assert "sm_count: 132" in body
    assert "memory_bandwidth_gbs: 4,800 GB/s" in body
    assert "peak_bf16_tflops: 989.4 TFLOP/s" in body
    assert "shared_memory_per_sm_kb: 228 KB" in body
    assert "peak_fp8_tflops: none" in body
    assert "device_names: Test GPU 9000 SXM" in body


def test_a_field_added_by_a_subclass_is_rendered() -> None:
    @dataclass(frozen=True)
    class ExtendedSpec(GPUSpec):
        nvlink_bandwidth_gbs: float = 900.0

    extended = ExtendedSpec(**dataclasses.asdict(make_gpu()))
    body = section(render(gpu=extended), "TARGET GPU")
    assert "nvlink_bandwidth_gbs: 900 GB/s" in body


def test_a_replaced_value_is_rendered() -> None:
    gpu = dataclasses.replace(make_gpu(), l2_cache_mb=60.0, memory_type="HBM4")
    body = section(render(gpu=gpu), "TARGET GPU")
    assert "l2_cache_mb: 60 MB" in body and "memory_type: HBM4" in body


def test_gpu_spec_fields_follow_the_dataclass() -> None:
    rows = gpu_spec_fields(make_gpu())
    assert [name for name, _ in rows] == [f.name for f in dataclasses.fields(GPUSpec)]


def test_ncu_metrics_are_listed() -> None:
    assert "dram__throughput.avg.pct_of_peak_sustained_elapsed: 79.9" in render()


def test_history_lists_attempts_and_what_to_avoid() -> None:
    history = (
        AttemptNote(1, "faster", 0.0699, "one program per row, BLOCK=4096", None),
        AttemptNote(2, "slower", 0.081, "num_warps=32", None),
        AttemptNote(3, "incorrect", None, "exp2 without the log2(e) scale", "max abs diff 0.3"),
        AttemptNote(4, "failed", None, "tl.dot on a 1-D block", "CompilationError:\n  dims"),
    )
    body = section(render(history=history), "PREVIOUS ATTEMPTS")
    assert "round 2: slower (0.081 ms): num_warps=32" in body
    assert "round 3: incorrect (not measured)" in body
    assert "max abs diff 0.3" in body
    assert "CompilationError: dims" in body  # a past error shows as one line
    assert "Avoid repeating" in body
    assert "PREVIOUS ATTEMPTS" not in render()


def test_repair_shows_the_previous_error() -> None:
    error = "Traceback (most recent call last):\n  ...\nIndexError: tl.arange needs a power of 2"
    prompt = render(error=error)
    assert "PREVIOUS ERROR" in prompt
    assert "IndexError: tl.arange needs a power of 2" in prompt
    assert "PREVIOUS ERROR" not in render()


def test_a_long_error_keeps_its_end() -> None:
    error = "frame\n" * 2000 + "RuntimeError: the real cause"
    prompt = render(error=error)
    assert "RuntimeError: the real cause" in prompt
    assert len(prompt) < len(error)


def test_output_rules() -> None:
    rules = render().split("OUTPUT RULES", 1)[1]
    for expected in (
        "one ```python block",
        "class ModelNew",
        "same constructor arguments as Model",
        "@triton.jit",
        "torch.empty",
        "No PyTorch compute in forward",
        "streams",
        "threads",
        "try/except",
    ):
        assert expected in rules, expected


# --- bottleneck analysis ---------------------------------------------------------------------


def test_bottleneck_prompt_asks_for_the_counts_and_shows_the_shape() -> None:
    prompt = build_bottleneck_prompt(
        KERNEL,
        {"sm__throughput.avg.pct_of_peak_sustained_elapsed": 22.4},
        ROOFLINE,
        make_gpu(),
        num_bottlenecks=3,
        num_causes=4,
        num_fixes=1,
    )
    assert "exactly 3 bottlenecks" in prompt
    assert "root_causes: exactly 4" in prompt
    assert "recommended_fixes: exactly 1" in prompt
    assert "memory, compute, latency, occupancy, other" in prompt
    assert "softmax_two_pass_kernel" in prompt
    assert "sm__throughput.avg.pct_of_peak_sustained_elapsed: 22.4" in prompt
    assert "memory SOL: 79.9%" in section(prompt, "ROOFLINE ANALYSIS")
    assert "sm_count: 132" in section(prompt, "TARGET GPU")
    shape = json.loads(re.findall(r"```json\n(.*?)\n```", prompt, re.DOTALL)[-1])
    assert set(shape[0]) == set(bottleneck_json_schema()["items"]["required"])
    assert len(shape[0]["root_causes"]) == 4 and len(shape[0]["recommended_fixes"]) == 1


def test_bottleneck_prompt_without_metrics_or_roofline() -> None:
    prompt = build_bottleneck_prompt(KERNEL, None, None, make_gpu(), problem_source=PROBLEM)
    assert "not measured" in section(prompt, "ROOFLINE ANALYSIS").lower()
    assert "not measured" in section(prompt, "NCU METRICS").lower()
    assert "return torch.softmax(x, dim=self.dim)" in prompt
    assert "exactly 2 bottlenecks" in prompt
    assert "REFERENCE PROBLEM" not in build_bottleneck_prompt(KERNEL, None, None, make_gpu())


def test_bottleneck_prompt_shows_history() -> None:
    history = (AttemptNote(1, "slower", 0.09, "BLOCK=512 with a loop", None),)
    prompt = build_bottleneck_prompt(KERNEL, None, ROOFLINE, make_gpu(), history=history)
    assert "round 1: slower (0.09 ms): BLOCK=512 with a loop" in prompt


def test_bottleneck_prompt_uses_the_given_manager(tmp_path: Path) -> None:
    (tmp_path / "bottleneck_analysis.j2").write_text("custom {{ num_bottlenecks }}")
    prompt = build_bottleneck_prompt(
        KERNEL, None, None, make_gpu(), num_bottlenecks=5, manager=PromptManager(tmp_path)
    )
    assert prompt == "custom 5\n"


def test_schema_describes_what_the_parser_reads() -> None:
    schema = bottleneck_json_schema(2, 2, 2)
    assert schema["type"] == "array" and schema["minItems"] == schema["maxItems"] == 2
    item = schema["items"]
    assert item["properties"]["category"]["enum"] == [
        "memory",
        "compute",
        "latency",
        "occupancy",
        "other",
    ]
    assert item["properties"]["root_causes"]["maxItems"] == 2
    wrapped = bottleneck_json_schema(wrapped=True)
    assert wrapped["type"] == "object" and wrapped["required"] == ["bottlenecks"]
    reply = {
        "bottlenecks": [
            {
                "category": "memory",
                "summary": "s",
                "reasoning": "r",
                "root_causes": ["c"],
                "recommended_fixes": ["f"],
            }
        ]
    }
    assert parse_bottleneck_response(json.dumps(reply))[0].summary == "s"


# --- kernel generation and the manager ------------------------------------------------------


def test_generation_prompt_has_problem_gpu_and_triton_guidance() -> None:
    prompt = PromptManager().render_kernel_generation_prompt(PROBLEM, make_gpu())
    assert "return torch.softmax(x, dim=self.dim)" in prompt
    assert "memory_bandwidth_gbs: 4,800 GB/s" in section(prompt, "TARGET GPU")
    guidance = section(prompt, "TRITON GUIDANCE")
    for expected in ("mask", "stride", "tl.constexpr", "powers of two", "No PyTorch compute"):
        assert expected in guidance, expected
    assert "class ModelNew" in prompt.split("OUTPUT RULES", 1)[1]
    assert "PREVIOUS ERROR" not in prompt


def test_generation_prompt_repairs_an_error() -> None:
    prompt = PromptManager().render_kernel_generation_prompt(
        PROBLEM, make_gpu(), error="NameError: name 'tl' is not defined"
    )
    assert "NameError: name 'tl' is not defined" in section(
        prompt, "PREVIOUS ERROR (your last attempt failed; fix this)"
    )


def test_render_is_strict_about_missing_values(tmp_path: Path) -> None:
    (tmp_path / "greeting.j2").write_text("{% if True %}\n  hello {{ who }}\n{% endif %}\n")
    manager = PromptManager(tmp_path)
    assert manager.render("greeting", who="triton") == "hello triton\n"
    assert manager.render("greeting.j2", who="x") == "hello x\n"
    with pytest.raises(jinja2.UndefinedError):
        manager.render("greeting")
