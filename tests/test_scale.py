"""The pool over a host's GPUs, for real on the CPU: worker processes, problems to whichever is
free, a killed worker's problem tried again elsewhere then reported; and the device lock keyed
by the physical GPU."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import scale_work
from test_cli import _show, kernelopt
from test_suite import EXPECTED, KERNELS, NAMES, PROBLEMS, _start, _wait_for

from kernelopt.hardware import gpus
from kernelopt.hardware.gpus import device_key
from kernelopt.harness.sandbox.locks import lock_path
from kernelopt.records import InputError
from kernelopt.scale import choose
from kernelopt.scale.pool import PoolExecutor, Slot, gpu_slots
from kernelopt.suite import ProblemSpec, SuiteSettings

SLOTS = [Slot(f"slot {i}", (("SCALE_TEST_SLOT", str(i)),)) for i in range(2)]


def _specs(tmp_path: Path, *names: str) -> list[ProblemSpec]:
    return [ProblemSpec(name, str(tmp_path / f"{name}.py"), None, str(tmp_path / "runs" / name), SuiteSettings())
            for name in names]


def _run(pool: PoolExecutor, specs: list[ProblemSpec]) -> dict[str, dict]:
    return {r.name: {"status": r.status, "where": r.where, "tries": r.tries, "reason": r.reason}
            for r in pool.run(scale_work.report, specs)}


def test_the_lock_is_the_physical_gpus():
    assert device_key("cuda", "3,5", []) == "cuda-3" and device_key("cuda:1", "3,5", []) == "cuda-5"
    assert device_key("cuda", "", []) == "cuda-0" and device_key("cuda:1", "", []) == "cuda-1"
    assert device_key("cuda", "GPU-8f2c", []) == "cuda-GPU-8f2c"
    assert device_key("cpu", "3", []) == "cpu"
    # where the driver names its GPUs, an index and a UUID for the same GPU take one lock
    uuids = ["GPU-aaaa", "GPU-bbbb"]
    assert device_key("cuda", "1", uuids) == device_key("cuda", "GPU-bbbb", uuids) == "cuda-GPU-bbbb"
    assert device_key("cuda:1", "", uuids) == "cuda-GPU-bbbb" and device_key("cuda", "", uuids) == "cuda-GPU-aaaa"


def test_each_worker_sees_only_its_gpu(monkeypatch):
    slots = gpu_slots([0, 1], "4,6")  # under CUDA_VISIBLE_DEVICES=4,6, GPUs 0 and 1 are physical 4 and 6
    assert [(s.label, dict(s.env)) for s in slots] == [("gpu 4", {"CUDA_VISIBLE_DEVICES": "4"}),
                                                       ("gpu 6", {"CUDA_VISIBLE_DEVICES": "6"})]
    assert [dict(s.env) for s in gpu_slots([1], None)] == [{"CUDA_VISIBLE_DEVICES": "1"}]
    locks = set()
    for slot in slots:  # each worker's cuda:0 takes its own GPU's lock
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", dict(slot.env)["CUDA_VISIBLE_DEVICES"])
        locks.add(lock_path("cuda"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "6,4")  # another suite that calls GPU 6 cuda:0
    assert lock_path("cuda") in locks and len(locks) == 2


def test_a_harness_on_another_gpu_has_that_gpu_alone_and_its_lock(monkeypatch):
    from kernelopt.harness.sandbox.runner import worker_env

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    assert worker_env(True, "6")["CUDA_VISIBLE_DEVICES"] == "6"  # its fork server and every job it forks
    assert worker_env(False, "6")["CUDA_VISIBLE_DEVICES"] == ""  # the interpreter never touches a GPU
    assert lock_path("cuda", "6") == lock_path("cuda", "6,4") != lock_path("cuda")  # GPU 6's, not GPU 4's


def test_gpus_are_counted_without_torch_where_nvidia_smi_answers(monkeypatch):
    monkeypatch.setattr(gpus, "gpu_uuids", lambda: ["GPU-aaaa", "GPU-bbbb"])
    counts = {}
    for visible in (None, "1", "GPU-bbbb,0", ""):
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        counts[visible] = gpus.visible_gpu_count()
    assert counts == {None: 2, "1": 1, "GPU-bbbb,0": 2, "": 0}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")  # no such GPU: torch counts, as CUDA would (none here)
    assert gpus.visible_gpu_count() == 0


def test_problems_go_to_whichever_worker_is_free(tmp_path):
    lines: list[str] = []
    results = _run(PoolExecutor(SLOTS, tmp_path / "logs", lines.append),
                   _specs(tmp_path, "meet_a", "meet_b", "c", "d", "e"))
    assert sorted(results) == ["c", "d", "e", "meet_a", "meet_b"]
    assert all(r["status"] == "correct" and r["tries"] == 1 for r in results.values())
    # meet_a and meet_b wait for each other: they finished only because both workers ran at once
    assert {results["meet_a"]["where"], results["meet_b"]["where"]} == {"slot 0", "slot 1"}
    for r in results.values():  # each ran where the pool says: the slot's environment was the worker's
        assert r["reason"].endswith(f"slot {r['where'].split()[1]}")
    assert len({r["reason"].split()[1] for r in results.values()}) == 2  # one process per slot, kept
    assert lines == [] and sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["slot-0.log", "slot-1.log"]


def test_a_killed_workers_problem_runs_again_elsewhere(tmp_path):
    lines: list[str] = []
    results = _run(PoolExecutor(SLOTS, None, lines.append), _specs(tmp_path, "once", "b", "c"))
    died_on = (tmp_path / "runs" / "once.died").read_text()
    assert results["once"]["status"] == "correct" and results["once"]["tries"] == 2
    assert results["once"]["where"] != f"slot {died_on}"  # the other slot, not the one that lost it
    assert lines == [f"once: the worker on slot {died_on} died (killed by signal 9); running it again"]
    assert all(results[n]["status"] == "correct" and results[n]["tries"] == 1 for n in ("b", "c"))


def test_a_problem_lost_twice_is_reported_not_dropped(tmp_path):
    lines: list[str] = []
    results = _run(PoolExecutor(SLOTS, None, lines.append), _specs(tmp_path, "die", "b", "c", "d"))
    assert sorted(results) == ["b", "c", "d", "die"]
    die = results["die"]
    assert die["status"] == "error" and die["tries"] == 2
    assert die["reason"].startswith("its worker died (killed by signal 9) on every try (lost on slot ")
    assert {part.strip(" ,") for part in die["reason"].split("lost on ")[1].split(")")[0].split("slot ")} \
        == {"", "0", "1"}  # tried on both slots
    assert len(lines) == 1 and all(results[n]["status"] == "correct" for n in "bcd")


def test_a_slot_whose_worker_cannot_start_is_given_up(tmp_path):
    broken = Slot("broken", (("PYTHONIOENCODING", "no-such-codec"),))  # python itself cannot start there
    lines: list[str] = []
    results = _run(PoolExecutor([broken, SLOTS[0]], None, lines.append), _specs(tmp_path, "a", "b", "c"))
    assert {n: (r["status"], r["where"]) for n, r in results.items()} == {n: ("correct", "slot 0") for n in "abc"}
    assert lines == ["broken: its worker died 2 times in a row before taking a problem; no more problems go there"]

    only_broken = _run(PoolExecutor([broken], None, lines.append), _specs(tmp_path, "x"))
    assert only_broken["x"]["status"] == "error" and "no worker was left to run it (never run)" in \
        only_broken["x"]["reason"]


def test_a_suite_on_two_cpu_workers(tmp_path):
    """The real problems under the interpreter, through the CLI: the same verdicts as one process."""
    out = tmp_path / "out"
    proc = kernelopt("suite", PROBLEMS, "--kernels", KERNELS, "--no-compile", "--workers", "2", "--out", out,
                     cwd=tmp_path)
    assert proc.returncode == 1, _show(proc)
    lines = proc.stdout.splitlines()
    assert lines[1] == f"on cpu worker 0, cpu worker 1, each problem to whichever is free; worker logs in {out}/workers"
    assert sorted(line.split(":")[0].split("] ")[1] for line in lines if line.startswith("[")) == NAMES
    assert all(" on cpu worker " in line for line in lines if line.startswith("["))
    problems = json.loads((out / "results.json").read_text())["problems"]
    assert {p["name"]: (p["status"], p["rule"]) for p in problems} == EXPECTED
    assert {p["where"] for p in problems} <= {"cpu worker 0", "cpu worker 1"}
    assert "| where |" in (out / "results.md").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "0,1"], "--gpus 0,1: this host shows no CUDA GPU; name GPUs it has"),
        (["--gpus", "0,0"], "argument --gpus: '0,0' names a GPU twice"),
        (["--gpus", "a"], "argument --gpus: 'a' is not a list of GPU indices such as 0,1"),
        (["--gpus", "0", "--ray", "auto"], "--gpus and --ray do not go together"),
    ],
)
def test_placement_errors_are_one_line(tmp_path, args: list[str], message: str):
    proc = kernelopt("suite", PROBLEMS, "--kernels", KERNELS, "--out", tmp_path / "out", *args, cwd=tmp_path)
    assert proc.returncode == 2, _show(proc)
    assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr


def test_ray_flag_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(choose.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match=r"--ray needs Ray, which is not installed: pip install 'kernelopt\[ray\]'"):
        choose.check_placement(None, None, "auto")


def _workers_of(pid: int) -> list[int]:
    """The pool workers the process `pid` started."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if ppid == pid and b"kernelopt.scale.worker" in command:
            found.append(int(stat.parent.name))
    return found


def test_a_killed_pool_leaves_no_worker_and_resumes(tmp_path):
    out = tmp_path / "out"
    proc = _start("suite", PROBLEMS, "--kernels", KERNELS, "--no-compile", "--workers", "2", "--out", out,
                  cwd=tmp_path)
    _wait_for(out / "problems" / "1_Add.json", proc)
    workers = _workers_of(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert len(workers) == 2
    deadline = time.monotonic() + 10  # told by the kernel (PDEATHSIG), not left to finish their problems
    while any(Path(f"/proc/{pid}").exists() and b"kernelopt" in Path(f"/proc/{pid}/cmdline").read_bytes()
              for pid in workers):  # they die with the pool: no GPU is held by an orphan
        assert time.monotonic() < deadline, "a pool worker outlived its killed pool"
        time.sleep(0.05)
    kept = {p.stem: p.read_text() for p in (out / "problems").glob("*.json")}
    resumed = kernelopt("suite", "--resume", out, "--workers", "2", "--json", cwd=tmp_path)
    problems = json.loads(resumed.stdout)["problems"]
    assert {p["name"]: (p["status"], p["rule"]) for p in problems} == EXPECTED
    assert all((out / "problems" / f"{name}.json").read_text() == text for name, text in kept.items())


def test_a_run_s_gpus_start_with_its_own(monkeypatch):
    from kernelopt.records import InputError

    monkeypatch.setattr(gpus, "visible_gpu_count", lambda: 3)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    assert gpus.run_gpus(None) == [None, "5", "6"]  # None: this process's own cuda:0 (physical 4)
    assert gpus.run_gpus([0, 2]) == [None, "6"] and gpus.run_gpus([2, 0]) == ["6", None]
    with pytest.raises(InputError, match="gpus 3: this host shows GPUs 0 to 2"):
        gpus.run_gpus([3])


def test_a_suite_is_timed_on_the_gpu_its_placement_names(tmp_path, monkeypatch):
    # --gpus in CUDA's numbering, mapped through CUDA_VISIBLE_DEVICES to nvidia-smi's; Ray's workers are not this host
    from kernelopt.scale.choose import timing_device

    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\n[ "$3" = "-i" ] && echo "GPU kind of $4"\n')  # nvidia-smi --query-gpu=... -i N
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert timing_device(None, None) == "GPU kind of 0" and timing_device([2, 0], None) == "GPU kind of 2"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert timing_device(None, None) == "GPU kind of 3" and timing_device([1], None) == "GPU kind of 5"
    assert timing_device([1], "auto") is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert timing_device(None, None) == "cpu"
