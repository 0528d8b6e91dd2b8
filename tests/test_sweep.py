"""A sweep's quick check spread over several processes judges every configuration as one process
does; the other sizes are checked for the finalists only."""

from __future__ import annotations

import json
from pathlib import Path

from kernelopt.harness.measure.timing import TimingConfig
from kernelopt.harness.sandbox.sweep_client import (
    FINALISTS,
    FULL_PROTOCOL,
    _shards,
    check_processes,
    halving_stages,
    usable_cores,
)
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
    # ... unless the reference says the device has room: half its free memory, four inputs a check
    assert check_processes(gpu, 6 << 30, free_bytes=110 << 30) == min(2, max(1, usable_cores() // 2))
    assert check_processes(gpu, 1 << 30, free_bytes=110 << 30) == min(8, max(1, usable_cores() // 2))
    assert check_processes(gpu, 40 << 30, free_bytes=110 << 30) == 1
    # outputs far larger than the inputs (an outer product: 2 x 16 MiB in, 4 GiB out) size each check on them
    assert check_processes(gpu, 32 << 20, free_bytes=16 << 30, output_bytes=4 << 30) == 1
    assert check_processes(gpu, 32 << 20, free_bytes=16 << 30) == min(8, max(1, usable_cores() // 2))
    assert check_processes(gpu, 1 << 20, free_bytes=0) == 1  # a full device: one, not the fixed allowance
    assert 1 <= check_processes(gpu, 1 << 20) <= 8
    assert _shards([0, 1, 2, 3, 4], 2) == [[0, 2, 4], [1, 3]]
    assert _shards([7], 4) == [[7]]


def _checked(work: Path) -> list[int]:
    """The configurations (their indices in the call) a check in `work` ran, from its rows."""
    import json

    rows = [json.loads(line) for f in sorted(work.rglob("rows.jsonl")) for line in f.read_text().splitlines()]
    return sorted({r["variant"] for r in rows if r.get("started")})


def test_a_finalist_wrong_at_the_other_sizes_is_rejected_and_only_finalists_run_them(tmp_path: Path) -> None:
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verifier = Verifier(ADD / "problem.py", tmp_path / "harness", settings)
    names = ["kernel_drops_tail.py", "kernel_base.py", "kernel_block128.py", "kernel_block256.py",
             "kernel_block512.py", "kernel_fast.py"]
    work = tmp_path / "sweep"
    measured = verifier.sweep([ADD / name for name in names], work)
    first = _checked(work / "check-0") if (work / "check-0").exists() else None
    finals = _checked(work / "finalists")
    assert 1 <= len(finals) <= FINALISTS < len(names)  # the other sizes: compiled for the finalists only
    assert first is None or len(first) == len(names)
    dropped = measured[0]
    if dropped.timing is None:  # a finalist (or not timed): the size it breaks at says why
        assert dropped.rule == "incorrect", dropped
    else:  # not a finalist: still only ranked; the full verification judges it if it is picked
        assert dropped.stage < max(m.stage for m in measured if m.timing)
    assert all(m.timing is not None for m in measured[1:]), measured


def test_a_wrong_tail_is_caught_where_both_configurations_are_finalists(tmp_path: Path) -> None:
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verifier = Verifier(ADD / "problem.py", tmp_path / "harness", settings)
    measured = verifier.sweep([ADD / "kernel_drops_tail.py", ADD / "kernel_fast.py"], tmp_path / "sweep")
    assert (measured[0].timing, measured[0].rule) == (None, "incorrect")
    assert measured[1].timing is not None


def test_a_checked_configurations_later_cases_keep_the_case_limit() -> None:
    # After its first quick case a configuration's phase names the case just judged; the watchdog
    # must still give the next case the case limit, not the import limit.
    from kernelopt.harness.sandbox.runner import PhaseLimits
    from kernelopt.harness.sandbox.sweep import judged_phase

    limits = PhaseLimits(import_s=20.0, case_s=300.0)
    assert limits.limit_s(judged_phase(2, 48, 0)) == 300.0
    assert limits.limit_s("import") == 20.0


def test_past_the_run_s_time_budget_a_sweep_starts_no_check(tmp_path: Path) -> None:
    """33_BatchNorm (4.3 GB) with a 150 s budget was still in its first sweep after 160 s on the H200:
    the checks now stop at the budget's deadline, each configuration left marked, none timed."""
    import time

    settings = HarnessSettings.detect(seeds=1, time_compile=False, sweep_check_processes=2)
    verifier = Verifier(ADD / "problem.py", tmp_path / "harness", settings)
    names = ["kernel_base.py", "kernel_fast.py", "kernel_slow.py"]
    late = verifier.sweep([ADD / n for n in names], tmp_path / "late", deadline=time.time() - 1)
    assert [(m.timing, m.rule) for m in late] == [(None, "time-budget")] * 3
    assert "time budget" in late[0].reason
    in_time = verifier.sweep([ADD / n for n in names], tmp_path / "in-time", deadline=time.time() + 600)
    assert all(m.timing is not None for m in in_time)


def test_the_sweep_s_deadline_leaves_the_round_a_reserve_of_the_budget() -> None:
    from kernelopt.context import Context
    from kernelopt.nodes.tune import SWEEP_RESERVE_S, sweep_deadline

    task = {"started_at": 1000.0}
    assert sweep_deadline(task, Context()) is None  # type: ignore[arg-type]
    assert sweep_deadline(task, Context(max_wall_s=600)) == 1000.0 + 600 - SWEEP_RESERVE_S  # type: ignore[arg-type]
    assert sweep_deadline(task, Context(max_wall_s=50)) == 1000.0 + 40  # type: ignore[arg-type]
    assert sweep_deadline({"started_at": None}, Context(max_wall_s=50)) is None  # type: ignore[arg-type]


def _events(run_dir: Path, timeline: list[tuple[float, str]]) -> None:
    lines = [json.dumps({"time": t, "event": kind, "round": 1}) for t, kind in timeline]
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")


def test_a_run_whose_rounds_close_slowly_keeps_a_reserve_of_its_own_measure(tmp_path: Path) -> None:
    # A 4 GB problem (56's level-2 GEMM on the H100, 120 s budget): its start took 31 s from the compiler seed to
    # round 1 (verification and profile), round 1 closed in 35 s after its sweep. A fixed 24 s reserve let the
    # last sweep start checks 96 s in, and the run ended at 162 s.
    from kernelopt.budget import closing_s
    from kernelopt.context import Context
    from kernelopt.harness.sandbox.sweep_client import TIMING_GRACE_S
    from kernelopt.nodes.tune import RESERVE_MAX_SHARE, sweep_deadline

    _events(tmp_path, [(0.0, "setup"), (8.0, "baselines"), (20.0, "compiler_seed"), (30.0, "verdict"),
                       (51.0, "roofline"), (51.0, "round_started"), (80.0, "sweep"), (95.0, "verdict"),
                       (108.0, "new_best"), (115.0, "roofline"), (115.0, "round_started")])
    assert closing_s(tmp_path) == 35.0  # round 1: sweep 80 s to round 2 at 115 s (round 0: 20 to 51, 31 s)
    task = {"started_at": 1000.0, "run_dir": str(tmp_path)}
    assert sweep_deadline(task, Context(max_wall_s=120)) == 1000.0 + 120 - (TIMING_GRACE_S + 35.0)  # type: ignore
    # the fixed reserve stands where it is the larger; the measured one never takes more than its share
    assert sweep_deadline(task, Context(max_wall_s=6000)) == 1000.0 + 6000 - 55.0  # type: ignore[arg-type]
    assert sweep_deadline(task, Context(max_wall_s=100)) == 1000.0 + 100 * (1 - RESERVE_MAX_SHARE)  # type: ignore
    _events(tmp_path, [(0.0, "baselines"), (3.0, "verdict"), (4.0, "round_started")])
    assert sweep_deadline(task, Context(max_wall_s=600)) == 1000.0 + 600 - 30.0  # type: ignore[arg-type]


def test_the_closing_measure_leaves_out_a_resumed_run_s_pause_and_a_cut_line(tmp_path: Path) -> None:
    from kernelopt.budget import closing_s

    assert closing_s(None) == 0.0 and closing_s(tmp_path) == 0.0  # no run folder, no events yet
    _events(tmp_path, [(0.0, "baselines"), (5.0, "round_started"), (10.0, "sweep"), (12.0, "verdict"),
                       (900.0, "resumed"), (905.0, "round_started")])
    (tmp_path / "events.jsonl").write_text((tmp_path / "events.jsonl").read_text() + '{"time": 9')
    assert closing_s(tmp_path) == 5.0  # round 0's 5 s; round 1 lay stopped before its resume


def test_the_halving_gives_the_full_protocol_to_a_few_configurations_only() -> None:
    run_s = TimingConfig(target_total_ms=500.0, min_trials=20, max_trials=1000)

    def reaching(count: int) -> list[int]:  # how many configurations each stage times
        timed, stages = [count], halving_stages(run_s, count)
        for stage in stages[:-1]:
            timed.append(min(timed[-1], stage["keep"]))
        return timed

    assert reaching(48) == [48, 24, FULL_PROTOCOL]  # 12 took the full protocol before
    assert reaching(12) == [12, 6, 3]
    assert reaching(3) == [3, 2, 2]
    last = halving_stages(run_s, 48)[-1]
    assert last["keep"] == 2 and last["timing"]["target_total_ms"] == 500.0  # the run's own settings
    assert halving_stages(run_s, 48)[0]["timing"]["target_total_ms"] == 25.0


def test_a_sweep_cuts_a_configurations_compile_off_sooner_than_the_verifier(tmp_path: Path, monkeypatch) -> None:
    """A configuration still compiling at 120 s cost an H200 matmul sweep 120 of its 136 s: every job of a
    sweep (the checks, the timing, the finalists' sizes) gives a compile SWEEP_COMPILE_S, the verifier more."""
    from kernelopt.harness.sandbox import sweep_client
    from kernelopt.harness.verify import COMPILE_S

    seen: list[tuple[str, float]] = []
    real = sweep_client.run_job

    def spy(job, request, work, limits, *args):
        seen.append((job, limits.phases.compile_s))
        return real(job, request, work, limits, *args)

    monkeypatch.setattr(sweep_client, "run_job", spy)
    settings = HarnessSettings.detect(seeds=1, time_compile=False)
    verifier = Verifier(ADD / "problem.py", tmp_path / "harness", settings)
    measured = verifier.sweep([ADD / "kernel_drops_tail.py", ADD / "kernel_fast.py"], tmp_path / "sweep")
    assert measured[1].timing is not None
    assert {job for job, _ in seen} == {"sweep-check", "sweep-time"}
    assert all(compile_s == sweep_client.SWEEP_COMPILE_S for _, compile_s in seen), seen
    reference = verifier.reference()  # the largest case's bytes, which size the checks at once: a + b in, their sum out
    assert reference.input_bytes == 2 * reference.output_bytes > 0, (reference.input_bytes, reference.output_bytes)
    verifying = settings.limits(settings.candidate_phases(reference.cases))
    assert verifying.phases.compile_s == COMPILE_S > sweep_client.SWEEP_COMPILE_S


def test_a_models_parameters_count_against_the_checks_that_fit_at_once(monkeypatch) -> None:
    # a level-2 GEMM with a 4 GB weight and 16 MB of inputs: eight checks at once ran the H100 out of memory
    from kernelopt.harness.sandbox import sweep_client

    monkeypatch.setattr(sweep_client, "usable_cores", lambda: 16)
    gpu = HarnessSettings(use_cuda=True)
    assert check_processes(gpu, 16 << 20, free_bytes=60 << 30) == 8
    assert check_processes(gpu, 16 << 20, free_bytes=60 << 30, state_bytes=4 << 30) == 3  # 30 GB for 8 GB each
    assert check_processes(gpu, 16 << 20, free_bytes=60 << 30, state_bytes=16 << 30) == 1


def test_the_timing_keeps_models_only_within_its_room() -> None:
    import torch

    from kernelopt.harness.sandbox.sweep import _kept

    models: dict[int, object] = {}
    one, two, three = (torch.nn.Linear(32, 32) for _ in range(3))  # 4,224 bytes of parameters each
    assert _kept(models, 0, one, room=5000) is one and models == {0: one}
    assert _kept(models, 1, two, room=5000) is two and models == {0: one}  # returned to be timed, not kept
    assert _kept(models, 2, three, room=None) is three and models == {0: one, 2: three}
    function = lambda x: x  # noqa: E731  (a model that is a function holds nothing)
    assert _kept(models, 3, function, room=9000) is function and models[3] is function


def test_past_the_deadline_and_its_grace_the_timing_stops_with_one_configuration_timed(tmp_path: Path,
                                                                                       monkeypatch) -> None:
    # the checks run (the deadline is ahead), but the timing's own deadline (a grace past it) has gone: the first
    # configuration is timed, the others say why they were not, and no later stage starts
    import time

    from kernelopt.harness.sandbox import sweep_client

    monkeypatch.setattr(sweep_client, "TIMING_GRACE_S", -10_000.0)
    settings = HarnessSettings.detect(seeds=1, time_compile=False, sweep_check_processes=1)
    verifier = Verifier(ADD / "problem.py", tmp_path / "harness", settings)
    names = ["kernel_base.py", "kernel_fast.py", "kernel_slow.py"]
    measured = verifier.sweep([ADD / n for n in names], tmp_path / "sweep", deadline=time.time() + 600)
    timed = [m for m in measured if m.timing is not None]
    assert len(timed) == 1 and timed[0].stage == 1, measured
    late = [m for m in measured if m.timing is None]
    assert [m.rule for m in late] == ["time-budget"] * 2 and "timing" in late[0].reason
