"""PromptManager: renders the judger's and optimizer's prompts from templates/*.j2."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import jinja2

from kernelopt.hardware.gpu_spec import GPUSpec
from kernelopt.prompts.parsing import CATEGORIES
from kernelopt.records import BottleneckResult, Roofline, one_line

TEMPLATES_DIR = Path(__file__).parent / "templates"
TARGET_FRACTION = 0.9  # the optimizer aims 10% below the time it has to beat

# Unit shown after a value, by the field name's suffix (STYLE: the unit is in the name).
_UNIT_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_tflops", "TFLOP/s"),
    ("_gbs", "GB/s"),
    ("_gb", "GB"),
    ("_mb", "MB"),
    ("_kb", "KB"),
    ("_watts", "W"),
    ("_pct", "%"),
    ("_ms", "ms"),
    ("_us", "us"),
    ("_bytes", "bytes"),
)
_HISTORY_ERROR_CHARS = 300  # one line of a past error is enough to steer away from it
_ERROR_CHARS = 4000  # tracebacks matter at their end; keep the tail of longer ones

Outcome = Literal["faster", "within_noise", "outpaced", "slower", "duplicate", "incorrect", "failed"]


@dataclass(frozen=True)
class AttemptNote:
    """One past optimization attempt, as the prompt recalls it."""

    round: int
    outcome: Outcome
    time_ms: float | None
    change: str  # what the attempt tried, in a sentence
    error: str | None  # why it failed or was incorrect, when it did


@dataclass(frozen=True)
class OptimizationPromptArgs:
    """Everything the optimizer's prompt is rendered from."""

    problem_source: str
    kernel_source: str
    gpu: GPUSpec
    roofline: Roofline | None
    bottleneck: BottleneckResult
    root_cause: str  # the one cause picked for this round
    recommended_fix: str  # the one fix picked for this round
    current_best_ms: float | None
    eager_ms: float | None
    compile_ms: float | None
    ncu_metrics: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    history: tuple[AttemptNote, ...] = ()
    error: str | None = None  # feedback on the previous failed attempt, when repairing
    is_gpu_time: bool = True  # False: times come from the Triton interpreter on the CPU

    @property
    def target_ms(self) -> float | None:
        """Gives the time to beat by 10%: the current best's, else eager's; None without either."""
        reference = self.current_best_ms if self.current_best_ms is not None else self.eager_ms
        return None if reference is None else TARGET_FRACTION * reference


class PromptManager:
    """Renders prompt templates with strict undefined variables, so a missing value fails loudly."""

    def __init__(self, templates_dir: Path | None = None) -> None:
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(templates_dir or TEMPLATES_DIR),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            autoescape=False,
        )
        self.env.filters["measured"] = format_measured
        self.env.filters["clip"] = _clip_tail
        self.env.filters["oneline"] = lambda text, limit=_HISTORY_ERROR_CHARS: one_line(text, limit)

    def render(self, name: str, **values: Any) -> str:
        """Gives the rendered template `name` ("kernel_optimization" or "...j2")."""
        template = name if name.endswith(".j2") else f"{name}.j2"
        return self.env.get_template(template).render(**values).strip() + "\n"

    def render_kernel_optimization_prompt(self, args: OptimizationPromptArgs) -> str:
        """Gives the optimizer's prompt: diagnosis, target, GPU, kernel, history, rules."""
        return self.render(
            "kernel_optimization",
            args=args,
            roofline=args.roofline,
            gpu_fields=gpu_spec_fields(args.gpu),
            ncu_metrics=sorted(args.ncu_metrics.items()),
            history=args.history,
        )

    def render_bottleneck_prompt(
        self,
        kernel_code: str,
        ncu_metrics: Mapping[str, float] | None,
        roofline: Roofline | None,
        gpu: GPUSpec,
        *,
        problem_source: str | None = None,
        num_bottlenecks: int = 2,
        num_causes: int = 2,
        num_fixes: int = 2,
        history: tuple[AttemptNote, ...] = (),
    ) -> str:
        """Gives the judger's prompt asking for a JSON array of bottlenecks."""
        example = {
            "category": " | ".join(CATEGORIES),
            "summary": "one sentence: what limits the kernel",
            "reasoning": "the metrics and code that show it",
            "root_causes": [f"cause {i + 1}, citing its evidence" for i in range(num_causes)],
            "recommended_fixes": [f"fix {i + 1}: a concrete code change" for i in range(num_fixes)],
        }
        return self.render(
            "bottleneck_analysis",
            kernel_code=kernel_code,
            problem_source=problem_source,
            ncu_metrics=sorted((ncu_metrics or {}).items()),
            roofline=roofline,
            gpu_fields=gpu_spec_fields(gpu),
            categories=CATEGORIES,
            num_bottlenecks=num_bottlenecks,
            num_causes=num_causes,
            num_fixes=num_fixes,
            history=history,
            json_shape=json.dumps([example], indent=2),
        )

    def render_kernel_generation_prompt(
        self, problem_source: str, gpu: GPUSpec, error: str | None = None
    ) -> str:
        """Gives the prompt for writing a first Triton kernel from the PyTorch reference."""
        return self.render(
            "kernel_generation",
            problem_source=problem_source,
            gpu_fields=gpu_spec_fields(gpu),
            error=error,
        )


@lru_cache(maxsize=1)
def _default_manager() -> PromptManager:
    return PromptManager()


def build_bottleneck_prompt(
    kernel_code: str,
    ncu_metrics: Mapping[str, float] | None,
    roofline: Roofline | None,
    gpu: GPUSpec,
    *,
    problem_source: str | None = None,
    num_bottlenecks: int = 2,
    num_causes: int = 2,
    num_fixes: int = 2,
    history: tuple[AttemptNote, ...] = (),
    manager: PromptManager | None = None,
) -> str:
    """Gives the judger's prompt; see PromptManager.render_bottleneck_prompt."""
    return (manager or _default_manager()).render_bottleneck_prompt(
        kernel_code,
        ncu_metrics,
        roofline,
        gpu,
        problem_source=problem_source,
        num_bottlenecks=num_bottlenecks,
        num_causes=num_causes,
        num_fixes=num_fixes,
        history=history,
    )


def bottleneck_json_schema(
    num_bottlenecks: int | None = None,
    num_causes: int | None = None,
    num_fixes: int | None = None,
    *,
    wrapped: bool = False,
) -> dict[str, Any]:
    """Gives the JSON schema of the judger's reply: an array of bottleneck objects.

    wrapped=True gives {"bottlenecks": [...]} instead, for structured-output APIs (OpenAI's)
    that need an object at the root; parse_bottleneck_response reads both shapes.
    """

    def strings(count: int | None) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
        if count is not None:
            schema |= {"minItems": count, "maxItems": count}
        return schema

    item = {
        "type": "object",
        "properties": {
            "category": {"type": "string", "enum": list(CATEGORIES)},
            "summary": {"type": "string"},
            "reasoning": {"type": "string"},
            "root_causes": strings(num_causes),
            "recommended_fixes": strings(num_fixes),
        },
        "required": ["category", "summary", "reasoning", "root_causes", "recommended_fixes"],
        "additionalProperties": False,
    }
    array: dict[str, Any] = {"type": "array", "items": item}
    if num_bottlenecks is not None:
        array |= {"minItems": num_bottlenecks, "maxItems": num_bottlenecks}
    if not wrapped:
        return array
    return {
        "type": "object",
        "properties": {"bottlenecks": array},
        "required": ["bottlenecks"],
        "additionalProperties": False,
    }


def gpu_spec_fields(gpu: GPUSpec) -> list[tuple[str, str]]:
    """Gives (field name, value with unit) for every dataclass field of the spec, subclasses too."""
    rows = []
    for spec_field in dataclasses.fields(gpu):
        value = getattr(gpu, spec_field.name)
        unit = next((u for suffix, u in _UNIT_SUFFIXES if spec_field.name.endswith(suffix)), "")
        rows.append((spec_field.name, format_measured(value, unit, missing="none")))
    return rows


def format_measured(value: Any, unit: str = "", missing: str = "not measured") -> str:
    """Gives a value readable with its unit ("4,800 GB/s", "79.9%"), or `missing` for None."""
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value) or "none"
    if isinstance(value, int | float):
        text = _number(value)
    else:
        text = str(value)
    if not unit:
        return text
    return f"{text}{unit}" if unit == "%" else f"{text} {unit}"


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def _clip_tail(text: str, limit: int = _ERROR_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"[... {len(text) - limit} characters cut ...]\n{text[-limit:]}"
