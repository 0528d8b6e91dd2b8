"""A hanging kernel is judged in seconds, in the phase it hung in, and the harness carries on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers import fast_context, run_graph

from kernelopt.harness import verify
from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.nodes import verifier as verifier_node

CHEATS = Path(__file__).parent / "cheats"


def test_a_hang_is_killed_by_phase_and_the_next_candidate_runs_on_the_same_harness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verifier = Verifier(CHEATS / "problem_add.py", tmp_path, HarnessSettings.detect(seeds=2, time_compile=False))
    own = verifier.settings.candidate_phases(verifier.cases)
    assert own.case_s < 20, own  # the reference takes microseconds: the floor decides, a hang is judged within 30 s
    monkeypatch.setattr(verify, "HOST_FLOOR_S", 4.0)  # the hang below is cut at a shorter floor
    limit_s = verifier.settings.candidate_phases(verifier.cases).case_s
    seen: list[tuple[str, float]] = []
    began = time.monotonic()
    hung = verifier.verify(CHEATS / "cheat_endless_triton_loop.py", on_progress=lambda p, s: seen.append((p, s)))
    hung_s = time.monotonic() - began
    assert hung.rule == "timeout" and "timed out in case 1/" in hung.reason, hung.reason
    assert hung_s < limit_s + 10, (hung_s, limit_s)  # cut at the case's own limit, not at some later one
    assert any(phase.startswith("case 1/") for phase, _ in seen)
    honest = verifier.verify(CHEATS / "honest_add.py")
    assert honest.accepted, honest.reason


def test_a_run_reports_a_long_running_candidate_and_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first report after 3 s of running (kernelopt's own: REPORT_AFTER_S), the case cut off after 8:
    # the report and the cut-off are what is checked here.
    monkeypatch.setattr(verifier_node, "REPORT_AFTER_S", 3.0)
    monkeypatch.setattr(verify, "HOST_FLOOR_S", 8.0)
    inputs = {
        "problem_source": (CHEATS / "problem_add.py").read_text(),
        "kernel_source": (CHEATS / "cheat_infinite_loop.py").read_text(),
    }
    final, events = run_graph(inputs, fast_context(tmp_path, max_rounds=1))
    running = [e for e in events if e.get("event") == "candidate_running"]
    assert running and running[0]["elapsed_s"] >= 3 and running[0]["phase"].startswith("case")
    assert running[0]["path"].endswith(".py")
    assert "timed out in case" in (final["attempts"][0].error or "")


def test_a_candidate_cannot_claim_a_phase_without_a_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Phases are read from a file the candidate cannot open: writing "lock" (untimed) where the
    old harness kept its progress buys a hanging kernel nothing."""
    monkeypatch.setattr(verify, "HOST_FLOOR_S", 3.0)  # a short case limit: whether it holds is the question
    verifier = Verifier(CHEATS / "problem_add.py", tmp_path, HarnessSettings.detect(seeds=1, time_compile=False))
    probe = tmp_path / "probe.py"
    probe.write_text(
        "for _name in ('progress', 'lock'):\n"
        "    open(_name, 'a').write('lock\\n' * 100)\n" + (CHEATS / "cheat_infinite_loop.py").read_text()
    )
    outcome, _ = verifier.run_candidate(probe, time=False)
    assert outcome.failure is not None and "timed out in case 1/" in outcome.failure, outcome


def test_a_finished_run_hands_its_reference_process_back(tmp_path: Path) -> None:
    """The report node stops the run's reference process: a long-lived server (the studio) does
    not keep every finished run's expected outputs on the device."""
    from kernelopt.harness.sandbox import reference_client

    inputs = {
        "problem_source": (CHEATS / "problem_add.py").read_text(),
        "kernel_source": (CHEATS / "honest_add.py").read_text(),
    }
    final, _ = run_graph(inputs, fast_context(tmp_path, max_rounds=1))
    assert final["best"] is not None
    assert not [key for key in reference_client._KEPT if key[1].startswith(str(tmp_path))]


def test_a_killed_reference_process_or_fork_server_is_started_again(tmp_path: Path) -> None:
    """Neither the reference process nor the fork server dying takes a run down: the next
    candidate starts them again."""
    import os
    import signal

    from kernelopt.harness.sandbox import runner

    verifier = Verifier(CHEATS / "problem_add.py", tmp_path, HarnessSettings.detect(seeds=1, time_compile=False))
    assert verifier.verify(CHEATS / "honest_add.py", time=False).accepted
    os.kill(verifier.reference()._child.pid, signal.SIGKILL)
    again = verifier.verify(CHEATS / "honest_add.py", time=False)
    assert again.accepted, again.reason
    server = runner.fork_server_for(False)._process
    os.kill(server.pid, signal.SIGKILL)
    server.wait(10)
    once_more = verifier.verify(CHEATS / "honest_add.py", time=False)
    assert once_more.accepted, once_more.reason


def test_a_failure_of_the_reference_process_own_code_names_itself_and_keeps_the_process(tmp_path: Path) -> None:
    """A bug in kernelopt's reference process (here: a timing setting it does not know) comes back
    as kernelopt's error with the traceback in the reference's log, not as "the process is gone";
    the process goes on serving the next candidate."""
    import pytest

    from kernelopt.records import HarnessError

    verifier = Verifier(CHEATS / "problem_add.py", tmp_path, HarnessSettings.detect(seeds=1, time_compile=False))
    reference = verifier.reference()
    with pytest.raises(HarnessError, match="its own error, not the kernel's.*TypeError") as err:
        reference.request({"op": "baselines", "time_compile": False, "timing": {"no_such_setting": 1}})
    log = Path(reference.log_path).read_text()
    assert "Traceback" in log and "no_such_setting" in log, log[-2000:]
    assert str(reference.log_path) in str(err.value)
    assert verifier.verify(CHEATS / "honest_add.py", time=False).accepted
