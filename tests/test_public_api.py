"""The names the project promises, importable from `kernelopt` itself."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest


def test_public_names_import_from_the_package() -> None:
    from kernelopt import (  # noqa: F401
        GPU_SPECS_DATABASE,
        BottleneckResult,
        GPUSpec,
        OptimizationPromptArgs,
        PromptManager,
        Roofline,
        RooflineAnalyzer,
        build_bottleneck_prompt,
        build_graph,
        parse_bottleneck_response,
    )

    assert isinstance(GPU_SPECS_DATABASE["H200"], GPUSpec)
    assert dataclasses.is_dataclass(Roofline) and dataclasses.is_dataclass(OptimizationPromptArgs)
    assert set(build_graph().nodes) >= {"setup", "verifier", "profile", "judger", "optimizer"}


def test_unknown_name_is_an_attribute_error() -> None:
    import kernelopt

    with pytest.raises(AttributeError):
        kernelopt.no_such_name  # noqa: B018


def test_importing_the_package_does_not_load_langgraph() -> None:
    """Worker processes import kernelopt.harness; the graph's libraries must stay out of them."""
    code = "import sys, kernelopt.harness.sandbox.worker; print('langgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_compiled_graph_for_the_studio_has_no_checkpointer() -> None:
    from kernelopt.graph import graph

    assert graph.checkpointer is None
