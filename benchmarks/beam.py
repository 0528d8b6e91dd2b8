"""A chain against a beam: the same scripted LLM, the same number of verifications.

    python3 benchmarks/beam.py [--repeats 3] [--beam 2]

The problem is tests/data/add (out = x + 2y on 4096 floats), run on the CPU under Triton's
interpreter. The stand-in LLM writes real kernels of tests/data/add and answers by the kernel it
is shown and the idea it is given, as an LLM whose ideas work on some kernels and not others:

    start, 32 per program --idea A--> 256 --idea A--> a wrong kernel (x + y)
                          |               \\-idea B--> 512 (a little faster, at most)
                          \\-idea B--> 128 --idea A--> 4096 (one program: the fastest)

Both searches write two candidates per round for two rounds with no repairs, so each verifies
five kernels: the start, then two per round. The chain rewrites the best after round 1 (256)
twice; the beam (K parents) rewrites 256 and 128 once each. Interpreter times follow the
program count above a fixed cost per launch; a new best must be 25% faster than the best,
since on a busy machine the interpreter's times wander by tens of percent. The table gives
each run's verifications, its best time and kernel, and whether it found the fastest kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ADD = ROOT / "tests" / "data" / "add"
NEXT = {  # (the kernel shown: its BLOCK_SIZE, the idea) -> the kernel file the LLM writes
    (32, "IDEA-A"): "kernel_block256.py",
    (32, "IDEA-B"): "kernel_block128.py",
    (256, "IDEA-A"): "kernel_wrong.py",
    (256, "IDEA-B"): "kernel_block512.py",
    (128, "IDEA-A"): "kernel_block4096.py",
    (128, "IDEA-B"): "kernel_block512.py",
}
FASTEST = 4096


def _ideas() -> str:
    ideas = [{"category": "memory", "summary": f"IDEA-{name}: {what}", "reasoning": "tiny programs",
              "root_causes": [f"IDEA-{name}: {what}"], "recommended_fixes": [fix]}
             for name, what, fix in (("A", "launch overhead per program", "larger blocks"),
                                     ("B", "uneven work per program", "a different block size"))]
    return "The kernel is far from the memory roof.\n\n```json\n" + json.dumps(ideas) + "\n```\n"


def block_size(text: str) -> int:
    """The BLOCK_SIZE a kernel source launches with."""
    return int(re.search(r"BLOCK_SIZE = (\d+)", text).group(1))  # type: ignore[union-attr]


class LadderLLM(BaseChatModel):
    """Judger calls get two ideas; optimizer calls get the kernel NEXT names for the kernel and idea shown."""

    @property
    def _llm_type(self) -> str:
        return "ladder"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        if "PERFORMANCE TARGET" not in prompt:
            reply = _ideas()
        else:
            shown = prompt.split("CURRENT KERNEL", 1)[1].split("ROOFLINE ANALYSIS", 1)[0]
            bottleneck = prompt.split("BOTTLENECK ANALYSIS", 1)[1].split("PERFORMANCE TARGET", 1)[0]
            idea = "IDEA-A" if "IDEA-A" in bottleneck else "IDEA-B"
            source = (ADD / NEXT[(block_size(shown), idea)]).read_text()
            reply = f"Here is the rewrite.\n\n```python\n{source}```\n"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def run(beam: int, runs_dir: Path) -> dict[str, Any]:
    """One search to its end: its verifications, best time and kernel, and whether that is the fastest."""
    from kernelopt.context import Context
    from kernelopt.graph import build_graph

    ctx = Context(model="ladder", beam=beam, max_rounds=2, patience=2, candidates_per_round=2, max_repairs=0,
                  min_gain_pct=25.0, time_compile=False, seeds=2, timing_target_ms=50.0, timing_min_trials=5,
                  runs_dir=str(runs_dir))
    start = (ADD / "kernel_block32.py").read_text()
    inputs = {"problem_source": (ADD / "problem.py").read_text(), "kernel_source": start}
    # the last values are the whole state at the end (invoke returns the output schema only)
    *_, final = build_graph(LadderLLM()).compile().stream(inputs, context=ctx, stream_mode="values")
    verified = [a for a in final["attempts"] if a.rule not in ("bad-reply", "duplicate")]
    best = block_size(Path(final["best"].path).read_text())
    return {"search": f"beam {beam}" if beam > 1 else "chain", "verifications": len(verified),
            "best_ms": final["best"].time_ms, "best_block": best, "found": best == FASTEST}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each search")
    parser.add_argument("--beam", type=int, default=2, help="parents the beam keeps")
    args = parser.parse_args()
    os.environ.setdefault("TRITON_INTERPRET", "1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.repeats):
            for beam in (1, args.beam):
                rows.append({"run": n + 1, **run(beam, Path(tmp) / f"{n}-{beam}")})
                print(json.dumps(rows[-1]), file=sys.stderr)
    print("| run | search | verifications | best time (ms, interpreter) | best kernel | found the fastest |")
    print("|---:|---|---:|---:|---|---|")
    for r in rows:
        print(f"| {r['run']} | {r['search']} | {r['verifications']} | {r['best_ms']:.4g} | "
              f"BLOCK_SIZE {r['best_block']} | {'yes' if r['found'] else 'no'} |")


if __name__ == "__main__":
    main()
