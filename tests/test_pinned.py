"""Pinned tuning: an autotuned rewrite is judged at its parent's configuration first, then tuned;
the report splits the gain from the change and the gain from tuning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import fast_context, run_graph
from scripted import DATA, RoutedChatModel, kernel_reply

from kernelopt.harness.verify import Verifier
from kernelopt.nodes.pinned import pin_of
from kernelopt.records import Attempt, Candidate, config_of, config_text
from kernelopt.report.pinned import gains

ADD = DATA / "add"


def _attempt(path: Path, time_ms: float, winner: str = "") -> Attempt:
    return Attempt(round=0, repair=0, kernel_path=str(path), source_hash="h", outcome="correct", change="start",
                   time_ms=time_ms, winner=winner)


def _copy(name: str, to: Path) -> Path:
    to.write_text((ADD / name).read_text())
    return to


def test_the_pin_is_the_rewrites_config_that_matches_its_parents_launch(tmp_path: Path) -> None:
    parent = _copy("kernel_base.py", tmp_path / "r000_a0.py")  # BLOCK_SIZE = 64, a literal
    rewrite = _copy("kernel_autotune_same.py", tmp_path / "r001_a0.py")
    pin = pin_of(Candidate(str(rewrite), "autotune"), str(parent), [_attempt(parent, 2.0)])
    assert pin is not None and pin.config == "BLOCK_SIZE=64, num_warps=4" and pin.parent_ms == 2.0
    pinned = Path(pin.path).read_text()
    assert Path(pin.path).name == "r001_a0_pinned.py"
    assert '"BLOCK_SIZE": 64' in pinned and '"BLOCK_SIZE": 1024' not in pinned  # one config: nothing to tune

    # a parent that was itself autotuned: what its autotuner picked is its launch
    tuned_parent = _copy("kernel_autotune_same.py", tmp_path / "r001_a1.py")
    pin = pin_of(Candidate(str(rewrite), "again"), str(tuned_parent),
                 [_attempt(tuned_parent, 1.0, "BLOCK_SIZE=1024, num_warps=4, num_stages=3")])
    assert pin is not None and pin.config == "BLOCK_SIZE=1024, num_warps=4"


def test_no_pin_where_none_of_the_rewrites_configs_is_the_parents_or_there_is_nothing_to_tune(tmp_path: Path) -> None:
    parent = _copy("kernel_block128.py", tmp_path / "r000_a0.py")  # 128: in no config of the rewrite
    rewrite = _copy("kernel_autotune_same.py", tmp_path / "r001_a0.py")
    assert pin_of(Candidate(str(rewrite), "x"), str(parent), [_attempt(parent, 2.0)]) is None
    plain = _copy("kernel_fast.py", tmp_path / "r001_a1.py")  # no autotune
    assert pin_of(Candidate(str(plain), "x"), str(parent), [_attempt(parent, 2.0)]) is None
    assert pin_of(Candidate(str(rewrite), "x"), "", []) is None  # a first kernel: no parent
    assert pin_of(Candidate(str(rewrite), "x"), str(parent), []) is None  # a parent never timed
    assert not list(tmp_path.glob("*_pinned.py"))


def test_config_words_and_gains() -> None:
    assert config_of(config_text({"BLOCK_SIZE": 64, "num_warps": 4})) == {"BLOCK_SIZE": 64, "num_warps": 4}
    assert config_of("") == {} and config_text(None) == ""
    tuned = {"parent_ms": 2.0, "pinned_ms": 1.6, "time_ms": 0.8, "outcome": "faster", "error": None}
    assert gains(tuned) == pytest.approx((1.25, 2.0))
    settled = {"parent_ms": 1.0, "pinned_ms": 2.0, "time_ms": 2.0, "outcome": "slower", "error": "not tuned"}
    assert gains(settled) == (0.5, None)


def test_an_autotuned_kernel_runs_under_the_interpreter_and_its_pick_is_read() -> None:
    # Triton's autotuner asks for a GPU driver to time its configs; the sandbox gives it the host clock.
    script = f"""
import os, sys, torch
os.environ["TRITON_INTERPRET"] = "1"
from kernelopt.harness.sandbox import autotune
from kernelopt.harness.problem import import_file
autotune.install()
module = import_file({str(ADD / "kernel_autotune_same.py")!r}, "tuned")
x, y = torch.randn(4096), torch.randn(4096)
assert torch.allclose(module.ModelNew()(x, y), x + 2 * y)
print(autotune.winners(module))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    picked = eval(proc.stdout.strip().splitlines()[-1])  # noqa: S307  (a dict literal this test printed)
    assert picked["BLOCK_SIZE"] in (64, 1024) and picked["num_warps"] == 4 and "num_stages" in picked


IDEAS = {"IDEA-SAME": "kernel_autotune_same.py", "IDEA-PASSES": "kernel_autotune_passes.py"}


def _route(prompt: str) -> str:
    if "PERFORMANCE TARGET" not in prompt:
        bottlenecks = [{"category": "memory", "summary": f"{idea}: launch overhead", "reasoning": "64 per program",
                        "root_causes": [f"{idea}: BLOCK_SIZE of 64 is too small"], "recommended_fixes": ["autotune"]}
                       for idea in IDEAS]
        return "```json\n" + json.dumps(bottlenecks) + "\n```"
    asked = prompt.split("PERFORMANCE TARGET")[0]
    return kernel_reply(next(name for idea, name in IDEAS.items() if f"{idea}: BLOCK" in asked))


def test_a_rewrite_is_judged_at_its_parents_config_then_tuned(tmp_path: Path, add_problem: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []  # every kernel file the sandbox ran
    real = Verifier.run_candidate

    def counted(self: Verifier, kernel: Path, **kwargs: Any) -> Any:
        ran.append(Path(kernel).name)
        return real(self, kernel, **kwargs)

    monkeypatch.setattr(Verifier, "run_candidate", counted)
    # The start is the rewrites' kernel frozen at 64 per program: the unchanged rewrite's pin compiles to
    # the start's very kernels, so it takes the start's time (dedup), whatever the interpreter's noise.
    inputs = {"problem_source": add_problem.read_text(), "kernel_source": (ADD / "kernel_autotune_one.py").read_text()}
    # a wide noise margin: the interpreter's times are what they are; the passes cost 8x at the pin
    ctx = fast_context(tmp_path, model="routed", max_rounds=1, candidates_per_round=2, min_gain_pct=40.0)
    final, _ = run_graph(inputs, ctx, RoutedChatModel(route=_route))

    by_source = {Path(a.kernel_path).read_text(): a for a in final["attempts"] if a.round == 1}
    same = by_source[(ADD / "kernel_autotune_same.py").read_text()]
    passes = by_source[(ADD / "kernel_autotune_passes.py").read_text()]
    start = next(a for a in final["attempts"] if a.round == 0)
    for attempt in (same, passes):
        assert attempt.pinned == "BLOCK_SIZE=64, num_warps=4" and attempt.parent_ms == start.time_ms
        assert attempt.pinned_ms is not None
    # the costly change: slower than its parent at the parent's config, so never tuned
    assert passes.outcome == "slower" and passes.pinned_ms > start.time_ms * 1.4
    assert "not tuned" in (passes.error or "") and not passes.new_best
    assert Path(passes.kernel_path).name not in ran and f"{Path(passes.kernel_path).stem}_pinned.py" in ran
    # the same computation: no loss at the pin (the start's own kernel, not timed again), then tuned to 1024
    assert same.pinned_ms == start.time_ms and f"{Path(same.kernel_path).stem}_pinned.py" in ran
    assert same.new_best and same.time_ms is not None and same.time_ms < same.pinned_ms
    assert config_of(same.winner)["BLOCK_SIZE"] == 1024 and same.error is None
    report = json.loads(Path(final["run_dir"], "report.json").read_text())
    rows = {row["kernel"]: row for row in report["pinned"]}
    tuned = rows[Path(same.kernel_path).name]
    assert tuned["tuning_gain"] == pytest.approx(same.pinned_ms / same.time_ms)
    assert tuned["change_gain"] == pytest.approx(start.time_ms / same.pinned_ms)
    assert rows[Path(passes.kernel_path).name]["tuning_gain"] is None
    markdown = Path(final["run_dir"], "report.md").read_text()
    assert "## Change and tuning (pinned)" in markdown and "gain from the change" in markdown
