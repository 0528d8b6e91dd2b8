"""A step's candidates over several GPUs (nodes/spread.py, through the verifier node): a time is
compared only with a time taken on the same GPU, and a new best is always timed on the run's own.

The two "GPUs" here are fakes with fixed times per kernel: gpu 1 runs every kernel faster than
the run's GPU (another clock, another bin), which is exactly the case where comparing times
across GPUs would take a slower kernel for a faster one.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelopt.context import Context
from kernelopt.nodes import verifier as verifier_node
from kernelopt.records import Candidate, HarnessError, KernelRecord, Timing, Verdict

_ROOTS = itertools.count()


def timing(ms: float) -> Timing:
    return Timing(ms, ms * 0.999, ms * 1.001, ms * 0.998, ms * 1.002, 100, "cuda_events")


class FakeGPU:
    """A verifier on one GPU: fixed times per kernel file name, None for a kernel that is wrong."""

    def __init__(self, where: str, times: dict[str, float | None], started: threading.Event,
                 wait_for: threading.Event | None = None) -> None:
        self.settings = SimpleNamespace(where=where, gpu=where or None)
        # a root of its own: spread.BEST_THERE caches the best's time by root for the process, and an id() is
        # reused once an earlier test's fake is gone (a cached time kept this one's "boom" from ever running)
        self.root = Path(f"/harness-{next(_ROOTS)}")
        self.times, self.calls = times, []  # type: ignore[var-annotated]
        self.started, self.wait_for = started, wait_for

    def verify(self, path: str, floor_ms: float | None = None, on_progress: Any = None,
               timed: Any = None) -> Verdict:
        if self.settings.where:
            self.started.set()  # gpu 1 has taken a candidate (it times the best first)
        elif self.wait_for is not None and not self.calls:
            assert self.wait_for.wait(10), "gpu 1 never took a candidate"
        name = Path(path).name
        self.calls.append(name)
        if self.times[name] == "boom":
            raise HarnessError("kernelopt failed while verifying (its own error)")
        ms = self.times[name]
        if ms is None:
            return Verdict(accepted=False, reason="incorrect: 3 of 4096 elements differ", rule="incorrect")
        return Verdict(accepted=True, reason="correct", timing=timing(ms))


def run_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: dict[str, Any], other: dict[str, Any],
             names: list[str], best_ms: float | None = 1.0, spread_from: int | None = 2
             ) -> tuple[Any, FakeGPU, FakeGPU]:
    started = threading.Event()
    # with two candidates, the run's GPU waits until gpu 1 holds one: each GPU verifies one
    spread = spread_from is not None and len(names) >= spread_from
    gpus = FakeGPU("", home, started, wait_for=started if spread else None), FakeGPU("gpu 1", other, started)
    monkeypatch.setattr(verifier_node, "verifiers_for", lambda state, ctx: list(gpus))
    if spread_from is not None:  # two candidates, one per GPU: each lane's share is known
        monkeypatch.setattr(verifier_node, "SPREAD_FROM", spread_from)
    candidates = []
    for branch, name in enumerate(names):
        path = tmp_path / name
        path.write_text(f"NAME = {name!r}\n")  # distinct after normalising (comments go)
        candidates.append(Candidate(str(path), f"change {branch}", branch))
    best = KernelRecord(str(tmp_path / "best.py"), "h-best", timing(best_ms), 0) if best_ms else None
    state = {"round": 1, "repairs": 0, "rounds_without_gain": 0, "best": best, "attempts": [], "settled": [],
             "candidates": candidates, "stop_reason": None, "last_error": None, "uses_llm": True,
             "run_dir": str(tmp_path), "problem_file": str(tmp_path / "problem.py"), "gpu_key": "H200"}
    command = verifier_node.verify(state, SimpleNamespace(context=Context()))  # type: ignore[arg-type]
    return command, *gpus


def attempts_of(command: Any) -> list[Any]:
    update = command.update
    return list(update["pending"].attempts if "pending" in update else update["attempts"])


def test_a_kernel_faster_than_the_best_only_across_gpus_is_not_taken(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # gpu 1 runs the best in 0.90 ms and each candidate in 0.98 ms: under the run's 1.00 ms, but slower there
    home = {"best.py": 1.0, "a.py": 1.04, "b.py": 1.04}
    other = {"best.py": 0.90, "a.py": 0.98, "b.py": 0.98}
    command, home_gpu, other_gpu = run_step(tmp_path, monkeypatch, home, other, ["a.py", "b.py"])
    attempts = attempts_of(command)
    assert command.goto != "accept" and not any(a.new_best for a in attempts)
    there = [a for a in attempts if a.where == "gpu 1"]
    assert len(there) == 1 and there[0].outcome == "slower" and there[0].time_ms == 0.98
    assert there[0].speedup_vs_best == pytest.approx(0.90 / 0.98)
    assert other_gpu.calls[0] == "best.py"  # the best timed on gpu 1 before anything is compared there
    assert home_gpu.calls == [Path(a.kernel_path).name for a in attempts if not a.where]  # never again at home


def test_a_kernel_faster_on_another_gpu_is_timed_again_on_the_run_s_own(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    home = {"best.py": 1.0, "a.py": 0.85, "b.py": 0.85}
    other = {"best.py": 0.90, "a.py": 0.76, "b.py": 0.76}
    command, home_gpu, other_gpu = run_step(tmp_path, monkeypatch, home, other, ["a.py", "b.py"])
    assert command.goto == "accept"
    pending = command.update["pending"]
    new_best = [r for r in pending.records if r is not None]
    assert len(new_best) == 1 and new_best[0].time_ms == 0.85  # the run's GPU's time, not gpu 1's 0.76
    assert sorted(home_gpu.calls) == ["a.py", "b.py"]  # gpu 1's candidate verified again on the run's GPU
    assert [a.where for a in pending.attempts] == ["", ""] and pending.attempts[1].outcome != "faster"


def test_a_kernel_wrong_on_another_gpu_is_rejected_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = {"best.py": 1.0, "a.py": None, "b.py": None}
    other = {"best.py": 0.90, "a.py": None, "b.py": None}
    command, home_gpu, _ = run_step(tmp_path, monkeypatch, home, other, ["a.py", "b.py"])
    attempts = attempts_of(command)
    assert [a.outcome for a in attempts] == ["incorrect", "incorrect"]
    assert sorted(a.where for a in attempts) == ["", "gpu 1"] and len(home_gpu.calls) == 1


def test_the_first_step_without_a_best_compares_on_the_run_s_gpu(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    home = {"a.py": 2.0, "b.py": 1.5}
    other = {"a.py": 1.0, "b.py": 1.4}  # gpu 1 would make a.py the faster
    command, home_gpu, other_gpu = run_step(tmp_path, monkeypatch, home, other, ["a.py", "b.py"], best_ms=None)
    pending = command.update["pending"]
    assert "best.py" not in other_gpu.calls and sorted(home_gpu.calls) == ["a.py", "b.py"]
    assert [a.new_best for a in pending.attempts] == [True, True]  # a.py first, then b.py beats it
    assert [r.time_ms for r in pending.records] == [2.0, 1.5]


def test_a_harness_error_on_another_gpu_stops_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = {"best.py": 1.0, "a.py": 1.0, "b.py": 1.0}
    other = {"best.py": "boom", "a.py": 1.0, "b.py": 1.0}
    with pytest.raises(HarnessError):
        run_step(tmp_path, monkeypatch, home, other, ["a.py", "b.py"])


def test_the_best_is_timed_once_per_gpu(tmp_path: Path) -> None:
    from kernelopt.nodes.spread import verify_spread

    home = FakeGPU("", {"a.py": 1.0, "b.py": 1.0, "c.py": 1.0}, threading.Event())
    other = FakeGPU("gpu 1", {"best.py": 0.9, "a.py": 1.0, "b.py": 1.0, "c.py": 1.0}, threading.Event())
    best = KernelRecord("best.py", "h-once", timing(1.0), 0)
    for names in (["a.py", "b.py"], ["c.py", "a.py"]):  # two steps with the same best
        step = threading.Event()  # the run's GPU waits until gpu 1 holds a candidate of this step
        other.started, home.wait_for, home.calls = step, step, []
        verify_spread(names, [home, other], best, None, lambda path: lambda phase, s: None)
    assert other.calls.count("best.py") == 1 and len(other.calls) >= 3  # candidates of each step, the best once


def test_one_candidate_stays_on_the_run_s_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = {"best.py": 1.0, "a.py": 0.8}
    other = {"best.py": 0.9, "a.py": 0.7}
    command, home_gpu, other_gpu = run_step(tmp_path, monkeypatch, home, other, ["a.py"])
    assert home_gpu.calls == ["a.py"] and other_gpu.calls == []
    assert command.update["pending"].records[0].time_ms == 0.8


def judged(lane: int, ms: float | None, best_there: float | None) -> Any:
    from kernelopt.nodes.spread import Judged

    verdict = Verdict(accepted=ms is not None, reason="", timing=timing(ms) if ms else None)
    return Judged(verdict, lane, f"gpu {lane}" if lane else "", timing(best_there) if best_there else None)


def test_only_the_candidate_that_gained_most_on_its_gpu_goes_to_the_run_s_own() -> None:
    from kernelopt.nodes.spread import going_home

    best = KernelRecord("best.py", "h", timing(1.0), 0)

    def faster(t: Timing, b: Timing) -> bool:
        return t.median_ms < 0.99 * b.median_ms

    steps = [judged(0, 0.95, None), judged(1, 0.6, 0.9), judged(1, 0.75, 0.9), judged(1, None, 0.9)]
    assert going_home(steps, best, faster) == {1}  # 1.5x on gpu 1 beats 1.2x there and 1.05x at home
    steps = [judged(0, 0.5, None), judged(1, 0.6, 0.9)]
    assert going_home(steps, best, faster) == set()  # the run's own GPU has the larger gain: 2x
    steps = [judged(1, 0.95, 0.9), judged(1, 0.9, 0.9)]
    assert going_home(steps, best, faster) == set()  # not faster than the best on gpu 1
    steps = [judged(1, 0.6, None), judged(1, 0.7, 0.9)]
    assert going_home(steps, best, faster) == {0, 1}  # the best could not be timed there: no ranking
    assert going_home([judged(1, 0.6, None), judged(0, 0.8, None)], None, faster) == {0}  # no best yet


def test_two_candidates_stay_on_the_run_s_gpu_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # spread, two would cost more than they save: the best timed on gpu 1, a winner timed again at home
    home = {"best.py": 1.0, "a.py": 0.8, "b.py": 0.9}
    other = {"best.py": 0.9, "a.py": 0.7, "b.py": 0.8}
    command, home_gpu, other_gpu = run_step(tmp_path, monkeypatch, home, other, ["a.py", "b.py"], spread_from=None)
    assert home_gpu.calls == ["a.py", "b.py"] and other_gpu.calls == []
