"""The beam (Context.beam): the K best distinct kernels kept as parents, against a chain.

The scripted LLM writes real kernels of tests/data/add and answers by the kernel it is shown:
from the start (32 elements per program) its first idea gives 256 (the best child) and its
second 128 (the second best); from 256 the ideas lead nowhere (a wrong kernel, or 512, at most
a little faster); from 128 the first idea gives 4096, the fastest of all. Interpreter times
follow the program count above a fixed cost per launch (128, 32, 16, 8, 1 programs): each
step the tests rely on is 2x or more, and a new best must be 25% faster than the best (on a
busy machine the interpreter's times wander by tens of percent).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from helpers import fast_context, run_graph
from scripted import DATA, RoutedChatModel, kernel_reply, two_bottlenecks_reply

from kernelopt.checkpoint import SQLITE_FILE, open_checkpointer
from kernelopt.cli import _parser
from kernelopt.context import Context
from kernelopt.graph import build_graph
from kernelopt.nodes.beam import spread, widened
from kernelopt.records import InputError, KernelRecord, Timing

ADD = DATA / "add"
NEXT = {  # (the kernel's BLOCK_SIZE, the idea) -> the kernel the LLM writes
    (32, "IDEA-A"): "kernel_block256.py",
    (32, "IDEA-B"): "kernel_block128.py",
    (256, "IDEA-A"): "kernel_wrong.py",  # x + y: wrong
    (256, "IDEA-B"): "kernel_block512.py",
    (128, "IDEA-A"): "kernel_block4096.py",
    (128, "IDEA-B"): "kernel_block512.py",
}


def _block(text: str) -> int:
    return int(re.search(r"BLOCK_SIZE = (\d+)", text).group(1))  # type: ignore[union-attr]


def route(prompt: str) -> str:
    """The scripted LLM: two ideas for any kernel it judges; a rewrite chosen by the kernel shown and the idea."""
    if "PERFORMANCE TARGET" not in prompt:
        return two_bottlenecks_reply()
    if "PREVIOUS ERROR" in prompt:  # a repair of the wrong kernel: broken again
        return kernel_reply("kernel_syntax.py")
    shown = prompt.split("CURRENT KERNEL", 1)[1].split("ROOFLINE ANALYSIS", 1)[0]
    bottleneck = prompt.split("BOTTLENECK ANALYSIS", 1)[1].split("PERFORMANCE TARGET")[0]
    idea = "IDEA-A" if "IDEA-A" in bottleneck else "IDEA-B"
    return kernel_reply(NEXT[(_block(shown), idea)])


def _context(tmp_path: Path, **overrides: Any) -> Any:
    settings = {"model": "routed", "max_rounds": 2, "patience": 2, "candidates_per_round": 2, "max_repairs": 0,
                "min_gain_pct": 25.0, "timing_target_ms": 50.0, "timing_min_trials": 5, "seeds": 1}
    return fast_context(tmp_path, **{**settings, **overrides})


def _inputs() -> dict[str, str]:
    start = (ADD / "kernel_block32.py").read_text()
    return {"problem_source": (ADD / "problem.py").read_text(), "kernel_source": start}


def _verified(final: dict[str, Any]) -> list[Any]:
    return [a for a in final["attempts"] if a.rule not in ("bad-reply", "duplicate")]


def _blocks(records: list[Any]) -> list[int]:
    return [_block(Path(r.path).read_text()) for r in records]


def test_the_beam_finds_the_kernel_a_chain_misses_with_as_many_verifications(tmp_path, add_problem):
    chain, _ = run_graph(_inputs(), _context(tmp_path / "chain"), RoutedChatModel(route=route))
    model = RoutedChatModel(route=route)
    beam, events = run_graph(_inputs(), _context(tmp_path / "beam", beam=2), model)
    assert len(_verified(chain)) == len(_verified(beam)) == 5  # the start, then two per round
    # the chain took the best child (256) and rewrote only it: a wrong kernel, and 512
    first = next(a for a in chain["attempts"] if a.round == 1 and a.new_best)
    assert _block(Path(first.kernel_path).read_text()) == 256
    assert [a.parent for a in chain["attempts"] if a.round == 2] == [first.kernel_path] * 2
    assert "incorrect" in [a.outcome for a in chain["attempts"] if a.round == 2]
    assert _block(Path(chain["best"].path).read_text()) in (256, 512) and "beam" not in chain
    # the beam kept 128 beside 256, and 128's child is the fastest
    assert _block(Path(beam["best"].path).read_text()) == 4096 and beam["stop_reason"] == "max_rounds"
    assert _blocks(beam["beam"])[0] == 4096 and len(beam["beam"]) == 2  # the runner-up: as the interpreter times it
    found = next(a for a in beam["attempts"] if a.new_best and a.round == 2)
    assert _block(Path(found.parent).read_text()) == 128
    # round 2 judged each parent on its own: a diagnosis per parent, from a prompt with its own source
    judged = [e["parent"] for e in events if e["event"] == "diagnosis" and e["round"] == 2]
    assert sorted(_block(Path(path).read_text()) for path in judged) == [128, 256]
    judger_prompts = [p for p, _, _ in model.calls if "PERFORMANCE TARGET" not in p]
    assert sorted(_block(p.split("KERNEL", 1)[1]) for p in judger_prompts) == [32, 128, 256]


def test_a_branch_that_fails_its_repairs_ends_alone_and_an_interrupted_beam_resumes(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ctx = _context(tmp_path, beam=2, max_repairs=1)
    config = {"configurable": {"thread_id": "beam"}}
    inputs: Any = {**_inputs(), "run_dir": str(run_dir)}
    model = RoutedChatModel(route=route)
    with open_checkpointer(run_dir, None) as saver:  # stopped before each verification until round 2's repair
        graph = build_graph(model).compile(checkpointer=saver, interrupt_before=["verifier"])
        while not (graph.get_state(config).values.get("round") == 2 and graph.get_state(config).values["repairs"]):
            list(graph.stream(inputs, config, context=ctx))
            inputs = None
        stopped = graph.get_state(config).values
    # mid-round: 4096 already entered the beam; the wrong kernel's repair waits for its verification.
    # (The runner-up is 256 or 128: two interpreter times a load on the machine can reorder.)
    beam_before = _blocks(stopped["beam"])
    tried = [(a.round, _block(Path(a.kernel_path).read_text()) if a.kernel_path else None, a.outcome, a.time_ms)
             for a in stopped["attempts"]]
    assert beam_before[0] == 4096 and beam_before[1] in (128, 256), tried
    assert [(a.round, a.outcome) for a in stopped["attempts"] if a.round == 2] in (
        [(2, "incorrect"), (2, "faster")], [(2, "faster"), (2, "incorrect")])
    with open_checkpointer(run_dir, None) as saver:  # a fresh process's graph, from the checkpoints on disk
        events = list(build_graph(model).compile(checkpointer=saver).stream(None, config, context=ctx,
                                                                               stream_mode="custom"))
        final = build_graph(model).compile(checkpointer=saver).get_state(config).values
    assert (run_dir / SQLITE_FILE).is_file()
    repaired = [a for a in final["attempts"] if a.repair == 1]
    assert [a.outcome for a in repaired] == ["failed"] and "x + y" in Path(repaired[0].parent).read_text()
    assert [e["repair"] for e in events if e["event"] == "verdict"] == [1]  # nothing verified twice
    # the branch died alone: the beam and the best it found stand, and the run ran to its last round
    assert final["stop_reason"] == "max_rounds" and _blocks(final["beam"]) == beam_before
    assert _block(Path(final["best"].path).read_text()) == 4096
    report = (run_dir / "report.md").read_text()
    tree = report.split("## Search tree", 1)[1].split("\n## ", 1)[0]
    assert "- `r000_a0.py` start" in tree
    assert re.search(r"\n  - `r001_a0_b1\.py` from `r000_a0\.py`: .*ms", tree)  # 128, a child of the start
    # round 2's branches are named by their parents' order in the beam, which the interpreter's times decide
    found = next(a for a in final["attempts"] if a.round == 2 and a.new_best)
    wrong = next(a for a in final["attempts"] if a.round == 2 and a.outcome == "incorrect")
    assert _block(Path(found.parent).read_text()) == 128 and _block(Path(wrong.parent).read_text()) == 256
    names = {a.kernel_path: re.escape(Path(a.kernel_path).name) for a in final["attempts"] if a.kernel_path}
    assert {Path(found.kernel_path).name, Path(wrong.kernel_path).name} == {"r002_a0.py", "r002_a0_b1.py"}
    best_line = rf"\n    - `{names[found.kernel_path]}` from `{names[found.parent]}`: .*\(new best\) \*in the beam\*"
    assert re.search(best_line, tree)  # 4096
    # the wrong kernel's repair wrote no kernel that parses: the branch ends there
    dead = (rf"\n      - no kernel \(round 2, repair 1\), repair of `{names[wrong.kernel_path]}`: "
            r"failed \(kernel does not parse")
    assert re.search(dead, tree)


def _record(name: str, time_ms: float) -> Any:
    return KernelRecord(f"/k/{name}.py", name, Timing(time_ms, time_ms, time_ms, time_ms, time_ms, 5, "cpu"), 1)


def test_the_beam_keeps_the_k_best_distinct_kernels_the_best_first():
    best, b, c, d = _record("best", 2.0), _record("b", 3.0), _record("c", 1.9), _record("d", 5.0)
    # a kernel faster by less than the noise never became the best: it follows it
    assert [r.source_hash for r in widened([best, d], [b, c, _record("b", 3.0)], best, 3)] == ["best", "c", "b"]
    assert widened([best], [], best, 2) == [best]  # a parent leaves only when K better kernels exist
    # 3 candidates over 2 parents: the best gets two (its first two ideas), at least one each
    assert spread(3, 2) == [(0, 0), (1, 0), (0, 1)] and spread(1, 3) == [(0, 0), (1, 0), (2, 0)]


def test_a_beam_of_less_than_one_is_refused_in_one_line():
    with pytest.raises(InputError, match="beam is 0: give at least 1"):
        Context(beam=0)
    with pytest.raises(SystemExit):
        _parser().parse_args(["optimize", "problem.py", "--beam", "0"])
    assert _parser().parse_args(["optimize", "problem.py", "--beam", "3"]).beam == 3
