"""A sweep's quick check spread over several processes judges every configuration as one process does."""

from __future__ import annotations

from pathlib import Path

from kernelopt.harness.sandbox.sweep_client import _shards, check_processes
from kernelopt.harness.verify import HarnessSettings, Verifier

ADD = Path(__file__).parent / "data" / "add"
KERNELS = ["kernel_base.py", "kernel_wrong.py", "kernel_fast.py", "kernel_slow.py", "kernel_wrong.py"]


def _outcomes(tmp_path: Path, processes: int) -> list[tuple[bool, str | None]]:
    settings = HarnessSettings.detect(seeds=1, time_compile=False, sweep_check_processes=processes)
    verifier = Verifier(ADD / "problem.py", tmp_path / f"harness-{processes}", settings)
    work = tmp_path / f"sweep-{processes}"
    measured = verifier.sweep([ADD / name for name in KERNELS], work)
    if processes > 1:
        assert sorted(p.name for p in work.glob("check-*")) == [f"check-{n}" for n in range(processes)]
    return [(m.timing is not None, m.rule) for m in measured]


def test_checks_in_two_processes_judge_every_configuration_as_one_does(tmp_path: Path) -> None:
    one, two = _outcomes(tmp_path, 1), _outcomes(tmp_path, 2)
    assert one == two, (one, two)
    assert [timed for timed, _ in two] == [True, False, True, True, False]
    assert two[1][1] == two[4][1] == "incorrect"


def test_how_many_processes_check_at_once() -> None:
    cpu = HarnessSettings(use_cuda=False)
    gpu = HarnessSettings(use_cuda=True)
    assert check_processes(cpu, 1 << 20) == 1  # the interpreter has no compile to overlap
    assert check_processes(HarnessSettings(sweep_check_processes=3), 1 << 20) == 3
    assert check_processes(gpu, 6 << 30) == 1  # a case of several GB: one at a time
    assert 1 <= check_processes(gpu, 1 << 20) <= 4
    assert _shards([0, 1, 2, 3, 4], 2) == [[0, 2, 4], [1, 3]]
    assert _shards([7], 4) == [[7]]
