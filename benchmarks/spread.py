"""A round's candidates verified one per GPU: the same LLM run on one GPU and on several, side by side.

    python3 benchmarks/spread.py --gpus 0 --gpus 0,1 [--candidates 4] [--rounds 2] [--example swish]

The chat model is a stand-in that writes real kernels: each optimizer call gets the example's
starting kernel with the next launch configuration of a fixed list (so both runs see the same
candidates in the same order, some faster than the best, some slower). Each run prints its wall
time, the time spent in the verifier node, and every verdict with the GPU that judged it; a
final table puts the runs side by side. Profiling and torch.compile are off: the rounds are
verification and little else.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONFIGS = [(1024, 4), (256, 4), (4096, 8), (2048, 8), (512, 2), (8192, 8), (1024, 8), (16384, 16),
           (2048, 4), (4096, 4), (64, 1), (32768, 16)]


def diagnosis(count: int) -> str:
    ideas = [{"category": "memory", "summary": f"IDEA-{i}: launch shape {i}",
              "reasoning": "tiny programs; the launch dominates",
              "root_causes": [f"IDEA-{i}: each program moves 1 KiB"],
              "recommended_fixes": ["larger blocks, more warps"]} for i in range(count)]
    return "The kernel is far from the memory roof.\n\n```json\n" + json.dumps(ideas) + "\n```\n"


class KernelWriter(BaseChatModel):
    """Judger calls get `count` ideas; optimizer calls get the starting kernel with the next configuration."""

    source: str
    count: int
    _next: Any = None
    _lock: Any = None

    def model_post_init(self, context: Any) -> None:
        self._next, self._lock = itertools.cycle(CONFIGS), threading.Lock()

    @property
    def _llm_type(self) -> str:
        return "kernel-writer"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        if "PERFORMANCE TARGET" not in prompt:  # the judger
            reply = diagnosis(self.count)
        else:
            with self._lock:
                block, warps = next(self._next)
            kernel = re.sub(r"BLOCK_SIZE = \d+", f"BLOCK_SIZE = {block}", self.source)
            kernel = re.sub(r"num_warps=\d+", f"num_warps={warps}", kernel)
            reply = f"BLOCK_SIZE {block}, {warps} warps.\n\n```python\n{kernel}```\n"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def run(example: str, gpus: list[int], candidates: int, rounds: int, out: Path) -> dict[str, Any]:
    from kernelopt.context import Context
    from kernelopt.graph import build_graph

    folder = ROOT / "examples" / example
    writer = KernelWriter(source=(folder / "kernel.py").read_text(), count=candidates)
    graph = build_graph(writer).compile()
    ctx = Context(max_rounds=rounds, patience=rounds, candidates_per_round=candidates, gpus=gpus,
                  time_compile=False, profile=False, runs_dir=str(out))
    inputs = {"problem_source": (folder / "problem.py").read_text(), "kernel_source": (folder / "kernel.py").read_text()}
    began = last = time.monotonic()
    in_verifier = 0.0
    final: dict[str, Any] = {}
    for update in graph.stream(inputs, context=ctx, stream_mode="updates"):
        now = time.monotonic()
        if "verifier" in update:
            in_verifier += now - last
        last = now
        for value in update.values():
            if isinstance(value, dict):
                final.update(value)
    wall = time.monotonic() - began
    attempts = [a for a in final.get("attempts", []) if a.round > 0] if final.get("attempts") else []
    run_dir = Path(final["run_dir"]) if final.get("run_dir") else None
    return {"gpus": ",".join(map(str, gpus)), "wall_s": wall, "verifier_s": in_verifier, "run_dir": str(run_dir),
            "best_ms": final["best"].time_ms if final.get("best") else None,
            "verdicts": [(Path(a.kernel_path).name, a.outcome, a.time_ms, a.where or "run's GPU") for a in attempts]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", action="append", required=True, help="a GPU list such as 0,1; give it once per run")
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--example", default="swish")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kernelopt-spread-") as tmp:
        for gpus in args.gpus:
            result = run(args.example, [int(g) for g in gpus.split(",")], args.candidates, args.rounds, Path(tmp))
            print(json.dumps(result), flush=True)
            rows.append(result)
    print("\n| GPUs | wall s | in the verifier s | best ms | verdicts (outcome, ms, where) |\n|---|---:|---:|---:|---|")
    for r in rows:
        verdicts = "; ".join(f"{o} {t:.4f}" + (f" on {w}" if w != "run's GPU" else "") if t else o
                             for _, o, t, w in r["verdicts"])
        print(f"| {r['gpus']} | {r['wall_s']:.1f} | {r['verifier_s']:.1f} | {r['best_ms'] or 0:.4f} | {verdicts} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
