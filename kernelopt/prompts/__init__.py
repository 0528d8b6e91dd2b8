"""Prompts for the judger and optimizer, and parsing of their LLM replies."""

from kernelopt.prompts.manager import (
    AttemptNote,
    OptimizationPromptArgs,
    PromptManager,
    bottleneck_json_schema,
    build_bottleneck_prompt,
)
from kernelopt.prompts.parsing import (
    KernelExtractionError,
    ResponseParseError,
    extract_kernel,
    parse_bottleneck_response,
)

__all__ = [
    "AttemptNote",
    "KernelExtractionError",
    "OptimizationPromptArgs",
    "PromptManager",
    "ResponseParseError",
    "bottleneck_json_schema",
    "build_bottleneck_prompt",
    "extract_kernel",
    "parse_bottleneck_response",
]
