"""The compiler seed in a run: the offline start when there is no kernel and no model, a rival to
the user's kernel in round 0, and a stop in setup that says what to give when none can be made.

The seed itself needs a GPU; here `compiler_seed` hands over the translation of the swish
problem's recorded compiler output (tests/fixtures/inductor), which runs under the interpreter.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from helpers import fast_context, run_graph
from test_seed_translate import seed_text

from kernelopt.nodes import setup as setup_node
from kernelopt.offline.moves import TEMPLATE_START
from kernelopt.seed import COMPILER_SEED
from kernelopt.seed.obtain import NO_GPU, CompilerSeed

SWISH = Path(__file__).parent.parent / "examples" / "swish"
# where an H200 seed's 26 s went, in the shape the seed's child reports it
STAGES = {"start": 4.1, "torch": 0.9, "inputs": 1.2, "reference": 0.3, "compile": 11.9, "check": 5.0}


@pytest.fixture
def seed_on_this_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make `compiler_seed` hand over the recorded swish seed, as a GPU host would; the calls it saw."""
    made = tmp_path / "swish_seed.py"
    made.write_text(seed_text("default", "swish"))
    calls: list[str] = []

    def fake_compiler_seed(problem_file: str, cache_dir: Path, gpu: str | None, ahead: object = None) -> CompilerSeed:
        calls.append(Path(problem_file).read_text())
        return CompilerSeed(str(made), "2.11.0+cu130", "NVIDIA H200", 1, 3.4, cached=False, stages_s=STAGES)

    monkeypatch.setattr(setup_node, "no_gpu_reason", lambda: None)
    monkeypatch.setattr(setup_node, "compiler_seed", fake_compiler_seed)
    return calls


def _round_zero(final: dict) -> list:
    return [a for a in final["attempts"] if a.round == 0]


# a reference no family's template computes (a sort along rows): no template to start from
SORT = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.sort(x, dim=1).values


def get_inputs():
    return [torch.rand(4, 37)]


def get_init_inputs():
    return []
"""


def test_without_kernel_model_gpu_or_template_setup_stops_saying_what_to_give(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(setup_node, "no_gpu_reason", lambda: NO_GPU)
    final, _ = run_graph({"problem_source": SORT}, fast_context(tmp_path))
    reason = final["stop_reason"]
    assert reason.startswith("bad input: nothing to start from: no kernel, no model, no template for the problem")
    assert "no CUDA GPU" in reason and "--kernel" in reason and "--model" in reason
    assert Path(final["run_dir"], "report.md").exists()


@pytest.mark.parametrize(("forward", "said"), [
    ("x * x.sum().item()", "(the reference could not be traced on the meta device (RuntimeError: "),
    ("os.kill(os.getpid(), signal.SIGKILL) if x.is_meta else x * torch.sigmoid(x)",
     "(the moves' own process failed: the process crashed with SIGKILL"),
    ("time.sleep(3600) if x.is_meta else x * torch.sigmoid(x)",
     "(the moves' own process failed: timed out in import after 8 s"),
])
def test_a_family_reading_that_fails_is_named_in_the_stop(tmp_path, monkeypatch, forward: str, said: str) -> None:
    # A reference the family's reading cannot trace on the meta device, or one that kills or hangs the child of the
    # fork server reading it (killed at the moves' limit, here 8 s), stops the run saying what failed: the run's own
    # process never ran it.
    from kernelopt.offline.moves import remote

    monkeypatch.setattr(setup_node, "no_gpu_reason", lambda: NO_GPU)
    monkeypatch.setattr(remote, "MOVES_LIMIT_S", 8.0)
    problem = (SWISH / "problem.py").read_text().replace("return x * torch.sigmoid(x)", f"return {forward}")
    problem = problem.replace("import torch\n", "import os\nimport signal\nimport time\n\nimport torch\n", 1)
    final, _ = run_graph({"problem_source": problem}, fast_context(tmp_path))
    reason = final["stop_reason"]
    assert f"nothing to start from: no kernel, no model, no template for the problem {said}" in reason
    assert "no CUDA GPU" in reason


def test_with_the_seed_turned_off_setup_stops_the_same_way(tmp_path, seed_on_this_host) -> None:
    context = fast_context(tmp_path, compiler_seed=False)
    final, _ = run_graph({"problem_source": (SWISH / "problem.py").read_text()}, context)
    # turned off by the person: no template taken in its place either
    assert final["stop_reason"].startswith("bad input: nothing to start from: no kernel, no model, and the compiler "
                                           "seed is turned off")
    assert seed_on_this_host == []


def test_without_kernel_model_or_seed_a_family_starts_from_its_template(tmp_path, monkeypatch) -> None:
    # no GPU here, so no compiler seed: swish is the elementwise family, whose template is round 0's kernel, verified
    # like any start (under the interpreter), and the offline sweep goes on from it
    monkeypatch.setattr(setup_node, "no_gpu_reason", lambda: NO_GPU)
    context = fast_context(tmp_path, max_rounds=1, sweep_configs=3)
    final, _ = run_graph({"problem_source": (SWISH / "problem.py").read_text()}, context)
    (start,) = _round_zero(final)
    assert start.change.startswith(TEMPLATE_START + " elementwise.streaming at BLOCK=")
    assert "no CUDA GPU" in start.change and start.outcome == "faster" and start.time_ms
    source = Path(start.kernel_path).read_text()
    assert "@triton.jit" in source and "BLOCK = " in source
    assert final["best"] is not None and final["round"] >= 1, final["stop_reason"]


@pytest.mark.slow
def test_without_kernel_or_model_the_run_starts_from_the_compiler_seed(tmp_path, seed_on_this_host) -> None:
    problem = (SWISH / "problem.py").read_text()
    final, events = run_graph({"problem_source": problem}, fast_context(tmp_path, max_rounds=1, sweep_configs=3))
    assert seed_on_this_host == [problem]
    first = _round_zero(final)
    assert [a.change.startswith(COMPILER_SEED) for a in first] == [True]
    assert first[0].outcome == "faster" and first[0].time_ms
    assert [e["stages_s"] for e in events if e["event"] == "compiler_seed" and e.get("path")] == [STAGES]
    assert final["best"] is not None and final["round"] >= 1  # the offline sweep went on from it
    assert "sweep" in " ".join(a.change for a in final["attempts"] if a.round == 1) or final["stop_reason"]


@pytest.mark.slow
def test_with_a_kernel_round_zero_verifies_both_and_goes_on_from_the_faster(tmp_path, seed_on_this_host) -> None:
    inputs = {"problem_source": (SWISH / "problem.py").read_text(), "kernel_source": (SWISH / "kernel.py").read_text()}
    final, _ = run_graph(inputs, fast_context(tmp_path, max_rounds=1, sweep_configs=3))
    first = _round_zero(final)
    assert [a.change for a in first][0] == "the starting kernel"
    assert first[1].change.startswith(COMPILER_SEED)
    assert all(a.time_ms for a in first)
    own, seed = first
    assert own.new_best  # the first correct kernel is the best until one beats it
    if seed.new_best:  # the seed took over only by being faster
        assert seed.time_ms < own.time_ms
    else:
        assert seed.outcome in ("slower", "within_noise")
    assert final["best"] is not None
    report = Path(final["run_dir"], "report.md").read_text()
    assert "the starting kernel" in report and "the compiler seed" in report


def test_no_gpu_is_said_in_one_line_before_torch_loads(tmp_path) -> None:
    from test_cli import kernelopt

    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    proc = kernelopt("optimize", SWISH / "problem.py", cwd=tmp_path, env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no CUDA GPU" in lines[0] and "--kernel" in lines[0]
    assert not (tmp_path / "kernelopt_runs").exists()  # nothing was started


def test_a_seed_or_failure_an_older_seed_format_cached_is_made_again(tmp_path, monkeypatch) -> None:
    from kernelopt.seed import obtain

    problem = SWISH / "problem.py"
    made: list[str] = []

    def fake_child(problem_file: Path, out: Path, gpu: str | None, timeout_s: float) -> dict:
        made.append(str(problem_file))
        out.write_text(seed_text("default", "swish"))
        return {"torch_version": "2.11.0+cu130", "gpu": "NVIDIA H200", "kernels": 1, "compile_s": 3.4}

    monkeypatch.setattr(obtain, "no_gpu_reason", lambda: None)
    monkeypatch.setattr(obtain, "gpu_name", lambda gpu: "NVIDIA H200")
    monkeypatch.setattr(obtain, "_torch_version", lambda: "2.11.0+cu130")
    monkeypatch.setattr(obtain, "_run_child", fake_child)
    folder = tmp_path / obtain.CACHE_FOLDER
    folder.mkdir()
    key = obtain.cache_key(problem.read_text(), "2.11.0+cu130", "NVIDIA H200")
    older = key.replace(f"-s{obtain.SEED_FORMAT}-", "-s1-")
    assert older != key
    # an older kernelopt's failure for this problem (a convolution it refused) is not served ...
    (folder / f"{older}.json").write_text('{"error": "the compiled graph calls extern_kernels.convolution"}\n')
    seed = obtain.compiler_seed(problem, tmp_path)
    assert not seed.cached and made == [str(problem.resolve())]
    # ... this format's seed is, the next time
    assert obtain.compiler_seed(problem, tmp_path).cached and len(made) == 1


def test_the_seed_s_process_started_ahead_waits_then_says_where_its_time_went_even_when_it_fails(
    tmp_path, monkeypatch
) -> None:
    # The real child on this host, started ahead as setup starts it while the baselines are timed: it
    # loads torch and the compiler, waits to be told to go, then fails for want of a GPU. The parent puts
    # the child's start (Python, imports) before the stages the child reports and its exit after; the
    # failure is one line and carries its stages (setup puts them in the run's compiler_seed event).
    from kernelopt.seed import obtain

    monkeypatch.setattr(obtain, "no_gpu_reason", lambda: None)  # as if a GPU were here: the child finds none
    monkeypatch.setattr(obtain, "gpu_name", lambda gpu: "NVIDIA H200")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    ahead = obtain.seed_ahead(SWISH / "problem.py", tmp_path, gpu="")
    assert ahead is not None
    time.sleep(1.0)
    assert ahead.child.process.poll() is None  # loading, or waiting: not past the gate
    with pytest.raises(obtain.SeedError) as failed:
        obtain.compiler_seed(SWISH / "problem.py", tmp_path, gpu="", ahead=ahead)
    assert "no CUDA GPU" in str(failed.value) and "\n" not in str(failed.value)
    stages = failed.value.stages_s
    assert isinstance(stages, dict) and list(stages) == ["start", "torch", "imports", "waiting", "failing", "exit"]
    assert stages["start"] > 0 and stages["torch"] > 0 and stages["imports"] > 0
    assert all(s >= 0 for s in stages.values())
    assert stages["exit"] < 2.0  # it leaves once its report is out, without shutting the compiler down
    assert ahead.child.process.returncode is not None and not ahead.scratch.exists()
    # the failure is cached with its stages; served from the cache, it has none of its own, and no child
    # is started ahead for it
    cached = json.loads(next((tmp_path / obtain.CACHE_FOLDER).glob("*.json")).read_text())
    assert cached["stages_s"] == stages
    assert obtain.seed_ahead(SWISH / "problem.py", tmp_path, gpu="") is None
    with pytest.raises(obtain.SeedError) as again:
        obtain.compiler_seed(SWISH / "problem.py", tmp_path, gpu="")
    assert again.value.stages_s is None


def test_a_seed_started_ahead_and_not_wanted_is_stopped_before_it_uses_the_gpu(tmp_path, monkeypatch) -> None:
    from kernelopt.seed import obtain

    monkeypatch.setattr(obtain, "no_gpu_reason", lambda: None)
    monkeypatch.setattr(obtain, "gpu_name", lambda gpu: "NVIDIA H200")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    ahead = obtain.seed_ahead(SWISH / "problem.py", tmp_path, gpu="")
    assert ahead is not None and ahead.scratch.exists()
    ahead.cancel()
    assert ahead.child.process.returncode is not None and not ahead.scratch.exists()
    ahead.cancel()  # again: nothing
    assert list((tmp_path / obtain.CACHE_FOLDER).iterdir()) == []  # no seed, no failure cached


class _Ahead:
    """Stands in for a seed's child started ahead: says whether it was stopped."""

    def __init__(self) -> None:
        self.cancelled = 0

    def cancel(self) -> None:
        self.cancelled += 1


def test_setup_stops_the_seed_started_ahead_when_the_baselines_fail(tmp_path, monkeypatch) -> None:
    from kernelopt.records import InputError

    ahead = _Ahead()

    class Failing:
        def baselines(self) -> None:
            raise InputError("the reference ran out of GPU memory; make the problem smaller")

    monkeypatch.setattr(setup_node, "no_gpu_reason", lambda: None)
    monkeypatch.setattr(setup_node, "seed_ahead", lambda *args: ahead)
    monkeypatch.setattr(setup_node, "verifier_for", lambda update, ctx: Failing())
    update, error = setup_node._setup({"problem_source": (SWISH / "problem.py").read_text()}, fast_context(tmp_path),
                                      uses_llm=False)
    assert error == "the reference ran out of GPU memory; make the problem smaller"
    assert ahead.cancelled == 1


def test_a_cached_seed_s_event_carries_no_stages_of_another_run(tmp_path, monkeypatch) -> None:
    made = tmp_path / "swish_seed.py"
    made.write_text(seed_text("default", "swish"))
    cached = CompilerSeed(str(made), "2.11.0+cu130", "NVIDIA H200", 1, 3.4, cached=True, stages_s=STAGES)
    monkeypatch.setattr(setup_node, "no_gpu_reason", lambda: None)
    monkeypatch.setattr(setup_node, "compiler_seed", lambda *args, **kwargs: cached)
    update: dict = {"problem_file": str(SWISH / "problem.py"), "run_dir": str(tmp_path / "run"), "events": []}
    emitted: list = []
    monkeypatch.setattr(setup_node, "emit", lambda state, event: emitted.append(event))
    candidate, why = setup_node._compiler_seed(update, fast_context(tmp_path), 0)
    assert candidate is not None and why == ""
    assert [(e.cached, e.stages_s) for e in emitted] == [(True, None)]


_LEAVES_A_WORKER = """
import json, os, subprocess, sys, time
out = sys.argv[2]
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # holds stdout and stderr
open(out + ".worker", "w").write(str(worker.pid))
print(json.dumps({"torch_version": "2.11.0", "began_at": time.time(), "reported_at": time.time()}), flush=True)
os._exit(0)
"""


def test_a_worker_the_seed_s_process_leaves_holding_its_output_neither_keeps_the_run_waiting_nor_lives_on(
    tmp_path, monkeypatch
) -> None:
    # The seed's process ends with os._exit and leaves the compiler's workers, which inherited its
    # stdout and stderr. The run waits for the process, not for the end of its output; then the
    # process's group goes, the worker with it.
    from kernelopt.seed.child import SeedChild

    package = tmp_path / "fake_seed"
    package.mkdir()
    (package / "__main__.py").write_text(_LEAVES_A_WORKER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setattr(SeedChild, "module", "fake_seed")
    out = tmp_path / "seed.py"
    began = time.monotonic()
    child = SeedChild(SWISH / "problem.py", out, gpu="")
    facts = child.finish(timeout_s=60)
    child.close()
    assert time.monotonic() - began < 30 and facts["torch_version"] == "2.11.0"
    assert list(facts["stages_s"]) == ["start", "exit"]
    worker = Path(f"{out}.worker").read_text()
    for _ in range(100):  # killed; its new parent reaps it
        state = Path(f"/proc/{worker}/stat")
        if not state.exists() or state.read_text().split(") ", 1)[1].startswith("Z"):
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"the worker {worker} still runs")
