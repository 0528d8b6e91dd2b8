"""Helpers the tests share (imported as `from helpers import ...`; conftest.py holds only fixtures)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parent.parent / "examples"


def fast_context(tmp_path: Path, **overrides: Any) -> Any:
    """A Context that keeps CI fast: no torch.compile baseline, two seeds, runs under tmp_path."""
    from kernelopt.context import Context

    settings: dict[str, Any] = {
        "time_compile": False,
        "seeds": 2,
        "runs_dir": str(tmp_path / "runs"),
    }
    settings.update(overrides)
    return Context(**settings)


def run_graph(
    inputs: dict[str, Any], context: Any, chat_model: Any = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the graph to the end; returns the final state and the custom progress events."""
    from kernelopt.graph import build_graph

    graph = build_graph(chat_model).compile()
    final: dict[str, Any] = {}
    events: list[dict[str, Any]] = []
    for mode, chunk in graph.stream(inputs, context=context, stream_mode=["custom", "values"]):
        if mode == "values":
            final = chunk
        else:
            events.append(chunk)
    return final, events


def product_problem(tmp_path: Path, forward: str, inputs: str, name: str = "problem.py") -> Path:
    """tests/data/moves/matmul3d.py with its forward's `torch.matmul(A, B)` and its inputs replaced: a product
    problem written for a test (a family's reading of it checked, or a move verified on it)."""
    text = (Path(__file__).parent / "data" / "moves" / "matmul3d.py").read_text()
    path = tmp_path / name
    path.write_text(text.replace("torch.matmul(A, B)", forward)
                    .replace("[torch.randn(N, M, K), torch.randn(K, L)]", inputs))
    return path


def assert_computes_the_reference(problem: Path, kernel: Path, name: str, tol: float = 1e-4) -> None:
    """The kernel file's ModelNew against the problem's Model on its first input, both built from the same seed (the
    same parameters), at the problem's own size: a tile checked without the verifier's derived cases."""
    import torch

    from kernelopt.harness.problem import import_file

    reference, module = import_file(problem, f"{name}_reference"), import_file(kernel, f"{name}_kernel")
    torch.manual_seed(0)
    want = reference.Model(*reference.get_init_inputs())
    torch.manual_seed(0)
    got = module.ModelNew(*reference.get_init_inputs())
    x = reference.get_inputs()[0]
    torch.testing.assert_close(got(x), want(x), rtol=tol, atol=tol)
