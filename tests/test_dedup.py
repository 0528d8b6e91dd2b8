"""Dedup by compiled code: a candidate whose Triton compiles to the kernels of one already timed
(the same TTIR, launched the same way) is checked for correctness, not timed again, and reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from helpers import fast_context, run_graph
from scripted import DATA, RoutedChatModel, kernel_reply

from kernelopt.cli_run import final_text
from kernelopt.context import Context
from kernelopt.harness.problem import import_file
from kernelopt.harness.sandbox import fingerprint
from kernelopt.harness.verify import Verifier
from kernelopt.nodes import verifier as verifier_node
from kernelopt.records import Attempt, Candidate, KernelRecord, Timing, Verdict
from kernelopt.report.progress import render_event
from kernelopt.report.summary import RunSummary

DEVICE = "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"


def fingerprint_of(
    name: str, monkeypatch: pytest.MonkeyPatch, sizes: tuple[int, ...] = (4096, 1000), must: bool = True
) -> str | None:
    """The fingerprint of tests/data/add/`name` over calls at `sizes`, its launches recorded as the
    worker records them (launches.py tells the recorder after each launch)."""
    module = import_file(DATA / "add" / name, f"kernelopt_fingerprint_{Path(name).stem}")
    kernel = module.add_kernel if hasattr(module, "add_kernel") else module.fused_axpy
    recorder, original = fingerprint.Recorder(), type(kernel).run

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        launched = original(self, *args, grid=grid, warmup=warmup, **kwargs)
        recorder.record(self, args, {"grid": grid, "warmup": warmup, **kwargs}, launched)
        return launched

    monkeypatch.setattr(type(kernel), "run", run)
    model = module.ModelNew()
    for size in sizes:
        model(torch.randn(size, device=DEVICE), torch.randn(size, device=DEVICE))
    digest = recorder.digest()
    assert digest is not None or not must, f"{name}: no fingerprint: {recorder.failure}"
    return digest


def test_cosmetic_changes_keep_the_fingerprint_and_real_changes_do_not() -> None:
    # In a process of its own, as a candidate's worker computes it: nothing an earlier test left
    # in this process (Triton's caches, the AST module's state) takes part.
    script = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import pytest
from test_dedup import fingerprint_of
cases = [("kernel_fast.py", (4096, 1000)), ("kernel_fast_reworded.py", (4096, 1000)),
         ("kernel_fast_helper.py", (4096, 1000)), ("kernel_fast_warps8.py", (4096, 1000)),
         ("kernel_base.py", (4096, 1000)), ("kernel_wrong.py", (4096, 1000)), ("kernel_fast.py", (4096,))]
with pytest.MonkeyPatch.context() as patch:
    print(json.dumps([fingerprint_of(name, patch, sizes) for name, sizes in cases]))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET", "0")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    fast, reworded, helper, warps8, base, wrong, fewer_cases = json.loads(proc.stdout.strip().splitlines()[-1])
    assert fast is not None and len(fast) == fingerprint.DIGEST_CHARS
    # other names, comments, docstring, formatting and dead code: the same compiled kernel
    assert reworded == fast
    assert helper == fast  # a @triton.jit helper, inlined
    assert warps8 != fast  # same TTIR, other num_warps
    assert base != fast  # BLOCK_SIZE 64
    assert wrong != fast  # x + y: another computation
    assert fewer_cases != fast  # not the same cases


SAMPLE_TTIR = """#loc = loc("/a/k.py":10:1)
module {
  tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> loc("x_ptr"(#loc))) {
    %offs = arith.constant 1024 : i32 loc(#loc16)
    %offs_0 = tt.get_program_id x : i32 loc(callsite("f(1)"(#loc2) at #loc3))
  } loc(#loc)
} loc(#loc)
#loc16 = loc("offs"(#loc2))"""
RENAMED_TTIR = SAMPLE_TTIR.replace("x_ptr", "src").replace("offs", "o").replace("add_kernel", "k").replace("/a/", "/b/")
CHANGED_TTIR = SAMPLE_TTIR.replace("1024", "512")


def test_canonical_ttir_drops_locations_and_names_only() -> None:
    canonical = fingerprint.canonical_ttir(SAMPLE_TTIR)
    assert fingerprint.canonical_ttir(RENAMED_TTIR) == canonical
    assert "loc" not in canonical and "@f0" in canonical and "%v2 = tt.get_program_id" in canonical
    assert fingerprint.canonical_ttir(CHANGED_TTIR) != canonical


def test_the_ttir_triton_compiled_is_read_where_a_launch_returns_it() -> None:
    kernel = import_file(DATA / "add" / "kernel_fast.py", "kernelopt_fingerprint_gpu_path").add_kernel

    def digest(ttir: str) -> str | None:  # as on a GPU: the launch returns the compiled kernel
        recorder, x = fingerprint.Recorder(), torch.empty(16)
        launched = SimpleNamespace(asm={"ttir": ttir})
        recorder.record(kernel, (x, x, x, 16), {"grid": (1,), "warmup": False, "BLOCK_SIZE": 16}, launched)
        return recorder.digest()

    assert digest(SAMPLE_TTIR) is not None and digest(SAMPLE_TTIR) == digest(RENAMED_TTIR) != digest(CHANGED_TTIR)


def test_no_fingerprint_and_no_crash_when_it_cannot_be_made(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fingerprint.Recorder().digest() is None  # nothing launched
    odd = fingerprint.Recorder()
    kernel = import_file(DATA / "add" / "kernel_fast.py", "kernelopt_fingerprint_odd").add_kernel
    odd.record(kernel, (object(), 1, 2, 3), {"grid": (1,), "warmup": False, "BLOCK_SIZE": 4}, None)
    assert odd.digest() is None and "object is not fingerprinted" in (odd.failure or "")

    def no_triton(*args: Any) -> str:
        raise ImportError("cannot import name 'ASTSource' from 'triton.compiler'")

    monkeypatch.setattr(fingerprint, "compile_ttir", no_triton)  # under the interpreter
    monkeypatch.setattr(fingerprint, "ir_hash", no_triton)  # on a GPU, where the launched kernel's TTIR is read
    assert fingerprint_of("kernel_fast.py", monkeypatch, must=False) is None  # an unknown Triton API: verified as today
    recorder = fingerprint.start()
    assert fingerprint.verdict(recorder, ["0" * 16]) == {}  # no launch: no fingerprint, no duplicate


IDEAS = ("IDEA-A", "IDEA-B", "IDEA-C")
REPLIES = {"IDEA-A": "kernel_fast.py", "IDEA-B": "kernel_fast_reworded.py", "IDEA-C": "kernel_fast_warps8.py"}


def _three_ideas() -> str:
    bottlenecks = [{"category": "memory", "summary": f"{idea}: launch overhead", "reasoning": "64 elements per program",
                    "root_causes": [f"{idea}: BLOCK_SIZE of 64 is too small"], "recommended_fixes": ["BLOCK_SIZE 1024"]}
                   for idea in IDEAS]
    return "```json\n" + json.dumps(bottlenecks) + "\n```"


def _route(prompt: str) -> str:
    if "PERFORMANCE TARGET" not in prompt:
        return _three_ideas()
    asked = prompt.split("PERFORMANCE TARGET")[0]
    return kernel_reply(next(REPLIES[idea] for idea in IDEAS if f"{idea}: BLOCK" in asked))


def test_a_reworded_kernel_is_verified_once_and_reported(tmp_path: Path, add_problem: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[tuple[str, bool]] = []  # (kernel, timed) for every candidate run in the sandbox
    real = Verifier.run_candidate

    def counted(self: Verifier, kernel: Path, **kwargs: Any) -> Any:
        outcome, judged = real(self, kernel, **kwargs)
        runs.append((Path(kernel).name, bool(outcome.result and outcome.result.get("timing"))))
        return outcome, judged

    monkeypatch.setattr(Verifier, "run_candidate", counted)
    inputs = {"problem_source": add_problem.read_text(), "kernel_source": (DATA / "add" / "kernel_base.py").read_text()}
    ctx = fast_context(tmp_path, model="routed", max_rounds=1, candidates_per_round=3)
    final, events = run_graph(inputs, ctx, RoutedChatModel(route=_route))

    attempts = {Path(a.kernel_path).name: a for a in final["attempts"]}
    sources = {name: Path(a.kernel_path).read_text() for name, a in attempts.items()}
    fast = next(n for n, s in sources.items() if s == (DATA / "add" / "kernel_fast.py").read_text())
    reworded = next(n for n, s in sources.items() if "fused_axpy" in s)
    warps8 = next(n for n, s in sources.items() if "num_warps=8" in s)
    original, copy = (n for n in attempts if n in (fast, reworded))  # in the order they were verified
    assert attempts[copy].outcome == "duplicate" and attempts[copy].duplicate_of == attempts[original].kernel_path
    assert attempts[copy].time_ms == attempts[original].time_ms and not attempts[copy].new_best
    assert attempts[original].new_best  # 16 times fewer programs than the start
    # another launch configuration: timed (its outcome is the interpreter's noise: num_warps means nothing there)
    assert attempts[warps8].outcome != "duplicate" and attempts[warps8].time_ms is not None
    assert attempts[warps8].fingerprint not in ("", attempts[original].fingerprint)
    # four candidates ran (the start and three rewrites), each checked; the duplicate alone was not timed
    assert sorted(runs) == sorted([(n, n != copy) for n in attempts])
    assert final["stop_reason"] == "max_rounds"  # no repair: a duplicate is no failure
    verdict = next(e for e in events if e["event"] == "verdict" and e["outcome"] == "duplicate")
    assert verdict["duplicate_of"] == attempts[original].kernel_path
    assert f"duplicate of {original}, not timed again" in (render_event(verdict) or "")
    report = json.loads(Path(final["run_dir"], "report.json").read_text())
    assert report["duplicates_removed"] == 1 and "duplicates removed: 1" in final_text(RunSummary.read(report))
    assert report["duplicates"][0]["kernel_path"].endswith(copy)
    assert report["duplicates"][0]["duplicate_of"].endswith(original)
    markdown = Path(final["run_dir"], "report.md").read_text()
    assert "Duplicates removed: 1" in markdown and f"`{copy}` = `{original}`" in markdown

class FakeHarness:
    """A verifier that judges every kernel correct, with one fingerprint for all: as the harness
    does, a kernel whose fingerprint is among `timed` is not timed."""

    def __init__(self) -> None:
        self.settings, self.timed = SimpleNamespace(where="", gpu=None), 0

    def verify(self, path: str, floor_ms: float | None = None, on_progress: Any = None,
               timed: dict[str, str] | None = None) -> Verdict:
        if "f-same" in (timed or {}):
            return Verdict(accepted=True, reason="correct", fingerprint="f-same", duplicate_of=(timed or {})["f-same"])
        self.timed += 1
        return Verdict(accepted=True, reason="correct", timing=Timing(2.0, 2.0, 2.0, 2.0, 2.0, 10, "cuda_events"),
                       fingerprint="f-same")


def test_a_kernel_timed_in_an_earlier_step_is_not_timed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    harness = FakeHarness()
    monkeypatch.setattr(verifier_node, "verifiers_for", lambda state, ctx: [harness])
    timing = Timing(1.0, 1.0, 1.0, 1.0, 1.0, 10, "cuda_events")
    earlier = Attempt(round=1, repair=0, kernel_path=str(tmp_path / "r001_a0.py"), source_hash="h1", outcome="faster",
                      change="bigger blocks", time_ms=1.0,
                      new_best=True, fingerprint="f-same")  # as a resumed run's state holds it
    path = tmp_path / "r002_a0.py"
    path.write_text("NAME = 'the same kernel, reworded'\n")
    state = {"round": 2, "repairs": 0, "rounds_without_gain": 0, "attempts": [earlier], "settled": [],
             "best": KernelRecord(earlier.kernel_path, "h1", timing, 1), "candidates": [Candidate(str(path), "x")],
             "stop_reason": None, "last_error": None, "uses_llm": True, "run_dir": str(tmp_path),
             "problem_file": str(tmp_path / "problem.py"), "gpu_key": "H200"}
    command = verifier_node.verify(state, SimpleNamespace(context=Context(max_rounds=5)))  # type: ignore[arg-type]
    (attempt,) = command.update["attempts"]
    assert harness.timed == 0 and attempt.outcome == "duplicate" and attempt.duplicate_of == earlier.kernel_path
    assert attempt.time_ms == 1.0 and not attempt.new_best
    assert command.goto == "judger" and command.update["repairs"] == 0  # no repair: the round is over, no gain
    assert command.update["rounds_without_gain"] == 1
    assert verifier_node.timed_originals([earlier, attempt]) == {"f-same": earlier}
