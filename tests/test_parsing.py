"""Reading LLM replies: bottleneck JSON in its many shapes, and exactly one ModelNew kernel."""

from __future__ import annotations

import pytest

from kernelopt.prompts import KernelExtractionError, ResponseParseError, extract_kernel, parse_bottleneck_response
from kernelopt.prompts.parsing import normalize_category
from kernelopt.records import BottleneckResult

# --- bottleneck replies ---------------------------------------------------------------------

FENCED_ARRAY = """Looking at the metrics, DRAM throughput sits at 79.9% while SM throughput is low.

```json
[
  {
    "category": "memory-bound",
    "summary": "The softmax kernel reads every row twice from DRAM.",
    "reasoning": "dram__throughput is 79.9% of peak, sm__throughput only 22%; bytes read 2x input.",
    "root_causes": [
      "Two passes over x: one for max/sum, one to normalise",
      "BLOCK=1024 forces a loop over 4096 columns"
    ],
    "recommended_fixes": [
      "Keep the row in registers: BLOCK=4096, one pass",
      "Use an online softmax"
    ]
  },
  {
    "category": "Occupancy",
    "summary": "Register pressure limits warps per SM.",
    "reasoning": "launch__registers_per_thread = 128, warps active 38%.",
    "root_causes": ["A 4096-wide fp32 row lives in registers"],
    "recommended_fixes": ["num_warps=16 to spread the row"]
  }
]
```

Let me know if you need more detail."""


def test_fenced_array_with_prose_gives_every_bottleneck() -> None:
    results = parse_bottleneck_response(FENCED_ARRAY)
    assert [r.category for r in results] == ["memory", "occupancy"]
    first = results[0]
    assert first.summary == "The softmax kernel reads every row twice from DRAM."
    assert "79.9%" in first.reasoning
    assert first.root_causes == (
        "Two passes over x: one for max/sum, one to normalise",
        "BLOCK=1024 forces a loop over 4096 columns",
    )
    assert first.recommended_fixes[1] == "Use an online softmax"
    assert isinstance(first, BottleneckResult)


def test_bare_array_without_fence() -> None:
    reply = '[{"category": "compute", "summary": "FMA pipe saturated", "reasoning": "sm 91%",'
    reply += ' "root_causes": ["fp32 FMAs"], "recommended_fixes": ["use tl.dot in bf16"]}]'
    (result,) = parse_bottleneck_response(reply)
    assert result.category == "compute"
    assert result.recommended_fixes == ("use tl.dot in bf16",)


def test_single_object_with_prose_around() -> None:
    reply = (
        "The main bottleneck is launch latency.\n"
        '{"category": "Latency-bound", "summary": "Tiny grid of 4 programs",'
        ' "reasoning": "gpu time 3 us, SOL below 5%", "root_causes": ["grid=(4,)"],'
        ' "recommended_fixes": ["split N into more programs"]}\n'
        "Hope this helps!"
    )
    (result,) = parse_bottleneck_response(reply)
    assert result.category == "latency"
    assert result.summary == "Tiny grid of 4 programs"


def test_object_wrapping_a_list() -> None:
    reply = """```json
{"bottlenecks": [
  {"category": "memory", "summary": "uncoalesced loads", "reasoning": "stride-N access",
   "root_causes": ["column-major walk"], "recommended_fixes": ["transpose the tile"]},
  {"category": "other", "summary": "fp64 math", "reasoning": "dtype",
   "root_causes": ["x.double()"], "recommended_fixes": ["stay in fp32"]}
]}
```"""
    results = parse_bottleneck_response(reply)
    assert [r.summary for r in results] == ["uncoalesced loads", "fp64 math"]


def test_trailing_commas_are_tolerated() -> None:
    reply = """```json
[
  {
    "category": "memory",
    "summary": "Redundant global loads, see a[i, j],",
    "reasoning": "l1tex hit rate 12%",
    "root_causes": ["x loaded in both loops",],
    "recommended_fixes": ["cache the row in registers",],
  },
]
```"""
    (result,) = parse_bottleneck_response(reply)
    assert result.summary == "Redundant global loads, see a[i, j],"  # commas in strings kept
    assert result.root_causes == ("x loaded in both loops",)


def test_first_fenced_block_that_holds_bottlenecks_wins() -> None:
    reply = """The metrics I used:
```json
{"dram__throughput": 79.9, "sm__throughput": 22.0}
```
My diagnosis:
```json
[{"category": "memory", "summary": "first", "reasoning": "r", "root_causes": ["c"],
  "recommended_fixes": ["f"]}]
```
An alternative reading:
```json
[{"category": "compute", "summary": "second", "reasoning": "r", "root_causes": ["c"],
  "recommended_fixes": ["f"]}]
```"""
    results = parse_bottleneck_response(reply)
    assert [r.summary for r in results] == ["first"]


def test_causes_and_fixes_given_as_objects_are_flattened() -> None:
    reply = """```json
[{"category": "MEMORY_BOUND", "summary": "s", "reasoning": "r",
  "root_causes": [{"cause": "two passes over x", "evidence": "dram_bytes_read = 2x input"}],
  "recommended_fixes": [{"fix": "online softmax", "rationale": "halves DRAM traffic"},
                        "num_warps=8"]}]
```"""
    (result,) = parse_bottleneck_response(reply)
    assert result.category == "memory"
    assert result.root_causes == ("two passes over x (evidence: dram_bytes_read = 2x input)",)
    assert result.recommended_fixes == (
        "online softmax (rationale: halves DRAM traffic)",
        "num_warps=8",
    )


@pytest.mark.parametrize(
    ("label", "category"),
    [
        ("memory-bound", "memory"),
        ("Memory Bandwidth", "memory"),
        ("DRAM bound", "memory"),
        ("compute_bound", "compute"),
        ("Tensor core utilisation", "compute"),
        ("LATENCY", "latency"),
        ("low occupancy", "occupancy"),
        ("register pressure", "occupancy"),
        ("numerical precision", "other"),
    ],
)
def test_category_synonyms_are_normalised(label: str, category: str) -> None:
    assert normalize_category(label) == category


def test_garbage_raises_with_the_start_of_the_reply_quoted() -> None:
    reply = "I'm sorry, I cannot analyse this kernel without\nthe source code."
    with pytest.raises(ResponseParseError) as caught:
        parse_bottleneck_response(reply)
    message = str(caught.value)
    assert "\n" not in message
    assert "JSON array" in message
    assert "I'm sorry, I cannot analyse this kernel without the source code." in message
    assert isinstance(caught.value, ValueError)


def test_json_that_is_not_bottlenecks_raises() -> None:
    with pytest.raises(ResponseParseError, match="dram"):
        parse_bottleneck_response('```json\n{"dram": 79.9, "sm": [1, 2]}\n```')


def test_empty_reply_raises() -> None:
    with pytest.raises(ResponseParseError, match="empty reply"):
        parse_bottleneck_response("   ")


def test_long_garbage_is_quoted_only_at_its_start() -> None:
    with pytest.raises(ResponseParseError) as caught:
        parse_bottleneck_response("no json here " * 100)
    assert len(str(caught.value)) < 300


# --- kernels --------------------------------------------------------------------------------

KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
    # one program per row; BLOCK covers the whole row so x is read once
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n_cols
    x = tl.load(x_ptr + row * row_stride + offsets, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * row_stride + offsets, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        softmax_kernel[(n_rows,)](out, x, x.stride(0), n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
"""


def _line_of(code: str, needle: str) -> int:
    return code[: code.index(needle)].count("\n") + 1


def test_python_block_with_prose_is_extracted() -> None:
    reply = (
        "The kernel now keeps each row in registers, so DRAM is read once.\n\n"
        f"```python\n{KERNEL}```\n\n"
        "This should roughly halve the runtime."
    )
    assert extract_kernel(reply) == KERNEL


def test_block_defining_modelnew_is_picked_among_others() -> None:
    usage = "model = ModelNew()\nout = model(torch.randn(8, 4096, device='cuda'))\n"
    reply = (
        f"```bash\npip install triton\n```\n```python\n{KERNEL}```\nUse it:\n```python\n{usage}```"
    )
    assert extract_kernel(reply) == KERNEL


@pytest.mark.parametrize("fence", ["```py", "```", "```Python"])
def test_py_and_unlabelled_blocks_are_accepted(fence: str) -> None:
    assert extract_kernel(f"Here it is:\n{fence}\n{KERNEL}```\n") == KERNEL


def test_unfenced_reply_that_is_python() -> None:
    assert extract_kernel(KERNEL) == KERNEL
    assert extract_kernel("Here is the optimized kernel:\n\n" + KERNEL) == KERNEL


def test_same_kernel_twice_is_one_candidate() -> None:
    reply = f"```python\n{KERNEL}```\nAgain, for clarity:\n```python\n{KERNEL}```"
    assert extract_kernel(reply) == KERNEL


def test_no_code_at_all() -> None:
    reply = "To speed this up, use an online softmax and a larger BLOCK size."
    with pytest.raises(KernelExtractionError, match="no code") as caught:
        extract_kernel(reply)
    assert "```python" in str(caught.value)


def test_code_without_modelnew_names_the_classes_it_found() -> None:
    reply = f"```python\n{KERNEL.replace('class ModelNew', 'class Model')}```"
    with pytest.raises(KernelExtractionError, match="defines class Model, not ModelNew"):
        extract_kernel(reply)


def test_code_without_any_class() -> None:
    reply = "```python\n@triton.jit\ndef add_kernel(x_ptr):\n    pass\n```"
    with pytest.raises(KernelExtractionError, match="no class ModelNew"):
        extract_kernel(reply)


def test_two_different_kernels_are_refused() -> None:
    other = KERNEL.replace("BLOCK=triton.next_power_of_2(n_cols)", "BLOCK=1024")
    reply = f"Option A:\n```python\n{KERNEL}```\nOption B:\n```python\n{other}```"
    with pytest.raises(KernelExtractionError) as caught:
        extract_kernel(reply)
    message = str(caught.value)
    assert "reply holds 2 candidate kernels" in message
    assert "send exactly one" in message
    assert "\n" not in message


def test_unterminated_fence_is_truncated() -> None:
    cut = KERNEL[: KERNEL.index("        softmax_kernel[")]
    reply = f"Here is the kernel:\n```python\n{cut}        softmax_kernel[(n_rows,)](out, x,"
    with pytest.raises(KernelExtractionError, match="truncated") as caught:
        extract_kernel(reply)
    message = str(caught.value)
    assert "line 2" in message  # where the fence opened
    assert f"SyntaxError at line {_line_of(KERNEL, 'softmax_kernel[(n_rows,)]')}" in message
    assert "\n" not in message


def test_closed_block_that_does_not_parse_names_the_line() -> None:
    broken = KERNEL.replace("row = tl.program_id(0)", "row = tl.program_id(0")
    line = _line_of(KERNEL, "row = tl.program_id(0)")
    with pytest.raises(KernelExtractionError, match=f"SyntaxError at line {line}") as caught:
        extract_kernel(f"```python\n{broken}```")
    assert "\n" not in str(caught.value)


def test_unfenced_code_that_does_not_parse_names_the_line() -> None:
    broken = KERNEL.replace("forward(self, x: torch.Tensor)", "forward(self, x: torch.Tensor")
    line = _line_of(KERNEL, "def forward")
    with pytest.raises(KernelExtractionError, match=f"SyntaxError at line {line}"):
        extract_kernel(broken)


def test_extraction_errors_are_value_errors() -> None:
    assert issubclass(KernelExtractionError, ValueError)
    assert issubclass(ResponseParseError, ValueError)


def test_a_wrapper_with_its_own_summary_gives_the_inner_list() -> None:
    reply = """{"summary": "Two issues found.", "bottlenecks": [
      {"category": "latency", "summary": "serial loop over K", "reasoning": "r",
       "root_causes": ["c"], "recommended_fixes": ["f"]}]}"""
    (result,) = parse_bottleneck_response(reply)
    assert result.summary == "serial loop over K"


def test_an_object_under_a_field_name_is_unwrapped() -> None:
    reply = '{"bottleneck": {"category": "compute", "summary": "fp32 FMA bound"}}'
    (result,) = parse_bottleneck_response(reply)
    assert (result.category, result.summary) == ("compute", "fp32 FMA bound")
    assert result.root_causes == () and result.reasoning == ""


def test_unfenced_code_keeps_its_leading_comment() -> None:
    code = "# fused softmax, one row per program\n" + KERNEL
    assert extract_kernel(code) == code
