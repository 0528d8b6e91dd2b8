"""kernelopt: a LangGraph loop that makes Triton kernels fast, to the roofline.

The public names load on first use, so that `import kernelopt` (and every worker process the
verifier starts) does not pay for LangGraph and the prompt templates it does not need.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "build_graph": "kernelopt.graph",
    "GPU_SPECS_DATABASE": "kernelopt.hardware.specs",
    "GPUSpec": "kernelopt.hardware.gpu_spec",
    "get_gpu_spec": "kernelopt.hardware.specs",
    "RooflineAnalyzer": "kernelopt.hardware.roofline",
    "Roofline": "kernelopt.records",
    "PromptManager": "kernelopt.prompts.manager",
    "OptimizationPromptArgs": "kernelopt.prompts.manager",
    "build_bottleneck_prompt": "kernelopt.prompts.manager",
    "parse_bottleneck_response": "kernelopt.prompts.parsing",
    "BottleneckResult": "kernelopt.records",
    "extract_kernel": "kernelopt.prompts.parsing",
    "Context": "kernelopt.context",
    "Verifier": "kernelopt.harness.verify",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'kernelopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
