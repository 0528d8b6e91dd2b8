"""A round's candidates verified one per GPU: the same LLM run on one GPU and on several, side by side.

    python3 benchmarks/spread.py --gpus 0 --gpus 0,1 [--candidates 4] [--rounds 2] [--example swish]

The chat model is a stand-in that writes real kernels: each optimizer call gets the example's
starting kernel with the next launch configuration of a fixed list (so both runs see the same
candidates in the same order, some faster than the best, some slower). Each run prints its wall
time, the time spent in the verifier node (the starting kernel's, then each round's), and
every verdict with the GPU that judged it; a final table puts the runs side by side. Each run
is a fresh process. Profiling and torch.compile are off and no run stops at the roofline: the
rounds are verification and little else.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
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
    """One LLM run through the graph, in this process; seconds in the verifier node per round."""
    from kernelopt.context import Context
    from kernelopt.graph import build_graph

    folder = ROOT / "examples" / example
    writer = KernelWriter(source=(folder / "kernel.py").read_text(), count=candidates)
    graph = build_graph(writer).compile()
    # never "at the roofline": every round runs, the later ones with candidates slower than the best
    ctx = Context(max_rounds=rounds, patience=rounds, candidates_per_round=candidates, gpus=gpus,
                  time_compile=False, profile=False, runs_dir=str(out), at_roofline_efficiency_pct=1000.0)
    inputs = {"problem_source": (folder / "problem.py").read_text(),
              "kernel_source": (folder / "kernel.py").read_text()}
    began = last = time.monotonic()
    in_verifier: list[float] = []
    final: dict[str, Any] = {}
    attempts: list[Any] = []
    for update in graph.stream(inputs, context=ctx, stream_mode="updates"):
        now = time.monotonic()
        if "verifier" in update:
            in_verifier.append(now - last)
        last = now
        for value in update.values():
            if isinstance(value, dict):
                attempts += value.get("attempts") or []  # each update holds the step's new attempts
                final.update(value)
    wall = time.monotonic() - began
    attempts = [a for a in attempts if a.round > 0]
    return {"gpus": ",".join(map(str, gpus)), "wall_s": wall, "first_verify_s": in_verifier[0],
            "rounds_verify_s": in_verifier[1:], "run_dir": final.get("run_dir"),
            "best_ms": final["best"].time_ms if final.get("best") else None,
            "verdicts": [(Path(a.kernel_path).name, a.round, a.outcome, a.time_ms, a.where or "run's GPU")
                         for a in attempts]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", action="append", required=True, help="a GPU list such as 0,1; give it once per run")
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--example", default="swish")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a single run, in this process
    args = parser.parse_args()
    if args.one:
        with tempfile.TemporaryDirectory(prefix="kernelopt-spread-") as tmp:
            gpus = [int(g) for g in args.gpus[0].split(",")]
            print(json.dumps(run(args.example, gpus, args.candidates, args.rounds, Path(tmp))), flush=True)
        return 0
    rows = []
    for gpus in args.gpus:  # each run in a fresh process: neither inherits the other's warm harness
        done = subprocess.run([sys.executable, __file__, "--one", "--gpus", gpus, "--candidates", str(args.candidates),
                               "--rounds", str(args.rounds), "--example", args.example],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0 or not done.stdout.strip():
            print(f"--gpus {gpus} failed:\n{done.stderr[-2000:]}", flush=True)
            continue
        print(done.stdout.strip().splitlines()[-1], flush=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print("\n| GPUs | wall s | first verify s | verifier s per round | best ms | verdicts (round: outcome ms where) |")
    print("|---|---:|---:|---|---:|---|")
    for r in rows:
        verdicts = "; ".join(f"{n}: {o}" + (f" {t:.4f}" if t else "") + (f" on {w}" if w != "run's GPU" else "")
                             for _, n, o, t, w in r["verdicts"])  # n: the round
        per_round = ", ".join(f"{s:.1f}" for s in r["rounds_verify_s"])
        print(f"| {r['gpus']} | {r['wall_s']:.1f} | {r['first_verify_s']:.1f} | {per_round} | {r['best_ms'] or 0:.4f} "
              f"| {verdicts} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
