"""A run that fails hands its reference process back: each holds a problem's yardsticks on the GPU, and a suite (or
a studio) runs the next problem in the same process (on an 80 GB H100, 34's 21.6 GB left 35's reference too little)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import fast_context, run_graph
from langgraph.errors import GraphInterrupt

from kernelopt.harness.sandbox import reference_client
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.records import HarnessError

CHEATS = Path(__file__).parent / "cheats"
INPUTS = {"problem_source": (CHEATS / "problem_add.py").read_text(),
          "kernel_source": (CHEATS / "honest_add.py").read_text()}


def _kept_under(folder: Path) -> list[reference_client.ReferenceProcess]:
    return [p for key, p in reference_client._KEPT.items() if Path(key[1]).resolve().is_relative_to(folder.resolve())]


def _failing(monkeypatch: pytest.MonkeyPatch, target: object, name: str, folder: Path, started: list) -> None:
    """`target.name` raising kernelopt's own error, once the run's reference process under `folder` runs (kept in
    `started`)."""
    def fail(*args: object, **kwargs: object) -> None:
        started.extend(_kept_under(folder))
        raise HarnessError("kernelopt's reference process failed on 'verdict' (its own error): out of memory")

    monkeypatch.setattr(target, name, fail)


@pytest.mark.parametrize("where", ["verifier", "setup"])
def test_a_run_that_fails_in_a_node_stops_its_reference_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 where: str) -> None:
    from kernelopt.nodes import setup

    started: list[reference_client.ReferenceProcess] = []
    if where == "verifier":  # the candidate's verdict fails: the node that raises has the run's folder in its state
        _failing(monkeypatch, Verifier, "verify", tmp_path, started)
    else:  # the baselines were timed, then setup failed: its run folder is still only in its own update
        _failing(monkeypatch, setup, "prepare_profiles", tmp_path, started)
    with pytest.raises(HarnessError, match="out of memory"):
        run_graph(INPUTS, fast_context(tmp_path, max_rounds=1))
    assert started and all(p.alive is False for p in started), "the reference process ran and was stopped"
    assert not _kept_under(tmp_path)


def test_an_interrupt_keeps_the_runs_reference_process(tmp_path: Path) -> None:
    """An interrupt (an --approve question) is no failure: the run goes on with its processes; nor does a failing
    node of parallel branches (the optimizer's) stop them under its siblings."""
    from kernelopt.nodes import watch

    verifier = Verifier(CHEATS / "problem_add.py", tmp_path / "run" / "harness",
                        HarnessSettings.detect(seeds=1, time_compile=False))
    process = verifier.reference()

    def asking(state: object, runtime: object) -> dict:
        raise GraphInterrupt(())

    def failing(state: object, runtime: object) -> dict:
        raise RuntimeError("a bug")

    state = {"run_dir": str(tmp_path / "run")}
    with pytest.raises(GraphInterrupt):
        watch.watched(asking, lambda s, u: {})(state, None)
    assert process.alive and _kept_under(tmp_path) == [process]
    with pytest.raises(RuntimeError, match="a bug"):  # a node of parallel branches leaves them to its siblings
        watch.watched(failing, lambda s, u: {}, release=False)(state, None)
    assert process.alive and _kept_under(tmp_path) == [process]
    with pytest.raises(RuntimeError, match="a bug"):
        watch.watched(failing, lambda s, u: {})(state, None)
    assert not process.alive and not _kept_under(tmp_path)


def test_a_suite_problem_that_fails_stops_its_reference_process_before_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelopt import suite

    started: list[reference_client.ReferenceProcess] = []

    def optimized(spec: suite.ProblemSpec, kernel: str | None) -> suite.ProblemResult:
        verifier = Verifier(spec.problem_path, Path(spec.run_dir) / "harness",
                            HarnessSettings.detect(seeds=1, time_compile=False))
        started.append(verifier.reference())
        raise HarnessError("kernelopt's reference process failed on 'verdict' (its own error): out of memory")

    monkeypatch.setattr(suite, "_optimized", optimized)
    settings = suite.SuiteSettings(optimize=True, max_rounds=1, time_compile=False)
    other = Verifier(CHEATS / "problem_add.py", tmp_path / "other" / "harness",
                     HarnessSettings.detect(seeds=1, time_compile=False))
    kept = other.reference()  # another run's, in the same process: not this problem's to stop
    spec = suite.ProblemSpec("add", str(CHEATS / "problem_add.py"), str(CHEATS / "honest_add.py"),
                             str(tmp_path / "run"), settings)
    result = suite.run_problem(spec)
    assert result.status == "error" and "out of memory" in result.reason
    assert started and not started[0].alive and not _kept_under(tmp_path / "run")
    assert kept.alive and _kept_under(tmp_path / "other") == [kept]
    other.close()



def test_a_reference_killed_at_close_is_gone_before_close_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    # A reference that does not exit when its connection closes (a process freeing tens of GB) is killed, and close
    # returns only once it has ended: the next problem's reference never starts beside a dying one's memory
    import socket
    import threading

    class Dying:  # the child's side: it ends 0.3 s after its kill, never on its own
        def __init__(self) -> None:
            self.ended, self.killed = threading.Event(), False

        def wait(self, timeout_s: float | None) -> int | None:
            self.ended.wait(timeout_s)
            return -9 if self.ended.is_set() else None

        def kill(self) -> None:
            self.killed = True
            threading.Timer(0.3, self.ended.set).start()

    monkeypatch.setattr(reference_client, "EXIT_S", 0.05)
    process = reference_client.ReferenceProcess.__new__(reference_client.ReferenceProcess)
    process._sock, process._child = socket.socket(), Dying()
    process.close()
    assert process._child.killed and not process.alive
