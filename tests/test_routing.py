"""Every stop rule (`should_stop`) and every route a deciding node takes, on small hand-built states."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.types import Send

from kernelopt.context import Context
from kernelopt.nodes.conclude import conclude
from kernelopt.nodes.judger import make_judger
from kernelopt.nodes.stop import NO_CANDIDATE, Step, should_stop
from kernelopt.nodes.verifier import verify
from kernelopt.records import Attempt, Baselines, Candidate, KernelRecord, Roofline, Timing

TIMING = Timing(1.0, 0.9, 1.1, 0.9, 1.2, 10, "cpu")
BEST = KernelRecord("best.py", "h0", TIMING, 0)


GPU_BEST = KernelRecord("best.py", "h0", Timing(0.2253, 0.22, 0.23, 0.22, 0.23, 50, "cuda_events"), 0)


def baselines(eager_ms: float = 1.0, compile_ms: float | None = None) -> Baselines:
    def gpu(ms: float) -> Timing:
        return Timing(ms, ms, ms, ms, ms, 50, "cuda_events")

    return Baselines(eager=gpu(eager_ms), compile=gpu(compile_ms) if compile_ms else None)


def roofline(at: bool) -> Roofline:
    return Roofline(bottleneck="memory", compute_sol_pct=None, memory_sol_pct=90.0, efficiency_pct=95.0,
                    headroom_pct=5.0, at_roofline=at, uses_tensor_cores=None)


def state(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"round": 1, "repairs": 0, "rounds_without_gain": 0, "best": BEST, "attempts": [],
                            "stop_reason": None, "last_error": None, "uses_llm": True,
                            "run_dir": "run", "problem_file": "run/problem.py", "gpu_key": "H200"}
    return {**base, **fields}


def passed(new_best: bool = False, round_: int = 1) -> Attempt:
    return Attempt(round=round_, repair=0, kernel_path="k.py", source_hash="h1",
                   outcome="faster" if new_best else "slower", change="tile", time_ms=0.8, new_best=new_best)


def failed(round_: int = 1, repair: int = 0, path: str = "k.py") -> Attempt:
    return Attempt(round=round_, repair=repair, kernel_path=path, source_hash="h2", outcome="rejected", change="tile",
                   error=f"boom in {path}", rule="runtime-error")


@pytest.mark.parametrize(
    ("fields", "context", "step", "reason"),
    [
        ({}, {}, Step(), None),
        ({"stop_reason": "max_rounds"}, {}, Step(profiled=True), "max_rounds"),  # a reason set before stays
        ({}, {}, Step(input_error="problem.py has no get_inputs()"), "bad input: problem.py has no get_inputs()"),
        ({"tokens": {"judger": {"input": 90, "output": 20}}}, {"max_tokens": 100}, Step(before_llm=True),
         "token_budget: 110 tokens used of 100"),
        ({"started_at": time.time() - 100}, {"max_wall_s": 10}, Step(before_llm=True), "time_budget"),
        ({"tokens": {"judger": {"input": 90, "output": 20}}}, {"max_tokens": 100}, Step(), None),  # only before a call
        ({}, {}, Step(halts=("llm_unavailable: 3 calls failed",)), "llm_unavailable: 3 calls failed"),
        ({}, {}, Step(halts=("search_exhausted: all tried", "llm_error: 401")), "llm_error: 401"),
        ({}, {}, Step(halts=("search_exhausted: all tried",)), None),  # other branches wrote candidates
        ({}, {}, Step(halts=("search_exhausted: all tried",), wrote=False), "search_exhausted: all tried"),
        ({}, {}, Step(wrote=False), NO_CANDIDATE),
        ({"best": None, "last_error": "incorrect: off by 1"}, {}, Step(round_over=True),
         "no correct kernel: incorrect: off by 1"),
        ({"round": 5}, {"max_rounds": 5}, Step(round_over=True), "max_rounds"),
        ({"round": 5}, {"max_rounds": 5}, Step(), None),  # a repair is still under way
        ({"rounds_without_gain": 2}, {"patience": 2}, Step(round_over=True), "no_gain"),
        ({"rounds_without_gain": 1}, {"patience": 2}, Step(round_over=True), None),
        ({"roofline": roofline(True)}, {}, Step(profiled=True), "at_roofline"),
        ({"roofline": roofline(False)}, {}, Step(profiled=True), None),
        # at_roofline never ends a run while a baseline runs faster than the best kernel
        ({"roofline": roofline(True), "best": GPU_BEST, "baselines": baselines(eager_ms=0.1929)}, {},
         Step(profiled=True), None),
        ({"roofline": roofline(True), "best": GPU_BEST, "baselines": baselines(eager_ms=0.25)}, {},
         Step(profiled=True), "at_roofline"),
        ({"roofline": roofline(True), "best": GPU_BEST, "baselines": baselines(compile_ms=0.20)}, {},
         Step(profiled=True), None),
        # faster by 0.3% (a tie within the timer's agreement): the run is at the roofline
        ({"roofline": roofline(True), "best": GPU_BEST, "baselines": baselines(compile_ms=0.2246)}, {},
         Step(profiled=True), "at_roofline"),
    ],
)
def test_should_stop(fields: dict[str, Any], context: dict[str, Any], step: Step, reason: str | None) -> None:
    found = should_stop(state(**fields), Context(**context), step)
    assert found == reason or (reason is not None and found is not None and found.startswith(reason))


def _goto(command: Any) -> Any:
    goto = command.goto
    if isinstance(goto, list | tuple) and goto and isinstance(goto[0], Send):
        return [(s.node, s.arg["branch"], s.arg["repair"], s.arg["kernel_path"], s.arg["error"]) for s in goto]
    return goto


@pytest.mark.parametrize(
    ("fields", "context", "attempts", "goto", "reason"),
    [
        ({}, {}, [passed(new_best=True)], "profile", None),
        ({"round": 3}, {"max_rounds": 3}, [passed(new_best=True)], "profile", "max_rounds"),  # profile the last best
        ({}, {}, [passed()], "judger", None),
        ({"round": 3}, {"max_rounds": 3}, [passed()], "report", "max_rounds"),
        ({"rounds_without_gain": 1}, {"patience": 2}, [passed()], "report", "no_gain"),
        ({"attempts": [failed()]}, {}, [failed(), passed()], "judger", None),
        ({"attempts": [passed(), failed()]}, {"max_repairs": 2}, [failed(path="a.py"), failed(path="b.py")],
         [("optimizer", 0, 1, "a.py", "boom in a.py"), ("optimizer", 1, 1, "b.py", "boom in b.py")], None),
        ({"repairs": 2}, {"max_repairs": 2}, [failed()], "judger", None),  # no repairs left: the next idea
        ({"round": 0, "uses_llm": False, "best": None}, {}, [failed(round_=0)], "report",
         "no correct kernel: boom in k.py"),
        ({}, {}, [failed()], "report", "llm_unavailable"),  # a branch's LLM is down
    ],
)
def test_route_after_a_verified_step(
    fields: dict[str, Any], context: dict[str, Any], attempts: list[Attempt], goto: Any, reason: str | None
) -> None:
    stops = ["llm_unavailable"] if reason == "llm_unavailable" else []
    best = BEST if fields.get("best", BEST) is not None else None
    command = conclude(state(**fields), Context(**context), attempts, best, stops)  # type: ignore[arg-type]
    assert _goto(command) == goto
    assert command.update.get("stop_reason") == reason


def runtime(**context: Any) -> Any:
    return SimpleNamespace(context=Context(**context))


@pytest.mark.parametrize(
    ("candidates", "reason"),
    [
        ([], NO_CANDIDATE),
        ([Candidate(None, "", 0, stop="search_exhausted: every change tried")], "search_exhausted: every change tried"),
        ([Candidate(None, "", 0, stop="token_budget: 5 of 4")], "token_budget: 5 of 4"),
    ],
)
def test_verifier_with_nothing_to_verify_stops(candidates: list[Candidate], reason: str) -> None:
    command = verify(state(candidates=candidates), runtime())  # type: ignore[arg-type]
    assert command.goto == "report" and command.update["stop_reason"] == reason


def test_judger_stops_on_a_spent_budget_before_asking() -> None:
    spent = state(tokens={"judger": {"input": 10, "output": 0}}, started_at=time.time())
    command = make_judger()(spent, runtime(max_tokens=5))  # type: ignore[arg-type]
    assert command.goto == "report" and command.update["stop_reason"].startswith("token_budget")


@pytest.mark.parametrize("branches", [1, 3])
def test_judger_starts_one_branch_per_candidate(branches: int, tmp_path: Any) -> None:
    start = state(roofline=roofline(False), run_dir=str(tmp_path))
    command = make_judger()(start, runtime(candidates_per_round=branches))  # type: ignore[arg-type]
    assert _goto(command) == [("optimizer", i, 0, "best.py", None) for i in range(branches)]
    ideas = [send.arg["idea"] for send in command.goto]
    assert ideas[0][1:] == (command.update["diagnosis"].root_cause, command.update["diagnosis"].recommended_fix)
    assert command.update["round"] == 2 and all(send.arg["round"] == 2 for send in command.goto)


def test_setup_stops_on_bad_input() -> None:
    from kernelopt.nodes.setup import make_setup

    command = make_setup()({"problem_source": ""}, runtime())  # type: ignore[arg-type]
    assert command.goto == "report" and command.update["stop_reason"].startswith("bad input: no problem given")
