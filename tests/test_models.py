"""Several chat models in one run: candidates shared among them, counted per model, and a model
that keeps failing dropped while the run goes on with the others."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import fast_context, run_graph
from langchain_core.language_models import BaseChatModel
from langchain_core.outputs import ChatResult
from scripted import DATA, RoutedChatModel, kernel_reply, two_bottlenecks_reply

from kernelopt.cli import _parser, main
from kernelopt.context import Context
from kernelopt.model_specs import ModelSpec, model_settings, parse_model_spec
from kernelopt.nodes.models import branch_model, failing_models
from kernelopt.records import Attempt, InputError


def _inputs(problem: Path) -> dict[str, str]:
    return {"problem_source": problem.read_text(), "kernel_source": (DATA / "add" / "kernel_base.py").read_text()}


def _report(final: dict[str, Any]) -> dict[str, Any]:
    return json.loads(Path(final["run_dir"], "report.json").read_text())


def _writes(kernel: str) -> RoutedChatModel:
    """A model that diagnoses with two bottlenecks and always writes `kernel`."""
    def route(prompt: str) -> str:
        return kernel_reply(kernel) if "PERFORMANCE TARGET" in prompt else two_bottlenecks_reply()

    return RoutedChatModel(route=route)


# ── the specs: --model NAME or NAME@URL, given once or more ─────────────────────────────


def test_repeated_model_flags_with_their_own_endpoints_become_the_context():
    args = _parser().parse_args(["optimize", "p.py", "--model", "gpt-4o", "--model",
                                 "qwen2.5-coder:32b@http://gpu-box:11434/v1", "--base-url", "http://proxy:8000/v1"])
    ctx = Context(**model_settings(args.model), base_url=args.base_url)
    assert ctx.model == "gpt-4o" and ctx.models == ["qwen2.5-coder:32b@http://gpu-box:11434/v1"]
    assert parse_model_spec(ctx.models[0]) == ModelSpec("qwen2.5-coder:32b", "http://gpu-box:11434/v1")
    assert parse_model_spec("m@https://user:pw@host/v1") == ModelSpec("m", "https://user:pw@host/v1")
    assert model_settings(["only"]) == {"model": "only", "models": None}  # one model: as before
    with pytest.raises(InputError, match="--model a is given more than once"):
        model_settings(["a", "a@http://other:8000/v1"])


@pytest.mark.parametrize(("spec", "said"), [("m@ftp://host/v1", "'ftp://host/v1' is not an http(s) URL"),
                                            ("@http://host:8000/v1", "names no model")])
def test_a_malformed_model_spec_is_one_line_and_exit_2(spec, said, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["optimize", str(DATA / "add" / "problem.py"), "--model", spec])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and len(err.strip().splitlines()) == 1 and said in err


# ── who writes, who is dropped ───────────────────────────────────────────────────────────


def _attempt(model: str, time_ms: float | None, error: str | None = None) -> Attempt:
    return Attempt(round=1, repair=0, kernel_path="k.py", source_hash="h", outcome="faster" if time_ms else "failed",
                   change="c", time_ms=time_ms, error=error,
                   model=model)


def test_branches_take_the_live_models_in_turn_and_a_repair_stays_with_its_writer():
    state = {"round": 3, "models": ["a", "b", "c"], "dropped_models": {"b": "its last 3 candidates failed"}}
    assert [branch_model(state, i) for i in range(3)] == ["c", "a", "c"]  # b is dropped: a, c in turn
    assert branch_model(state, 0, writer="a") == "a"
    assert branch_model(state, 0, writer="b") == "c"  # its writer dropped: the repair goes to the turn's model
    assert branch_model({"round": 1}, 0) is None  # the offline policy
    # a run resumed with only a dropped model named: that model writes, rather than none
    assert branch_model({"round": 1, "models": ["b"], "dropped_models": {"b": "failed"}}, 0) == "b"


def test_progress_names_the_model_that_wrote_and_the_one_dropped():
    from kernelopt.report.progress import render_event

    wrote = {"event": "candidate", "path": "/r/kernels/r001_a0.py", "tokens": {"input": 10, "output": 5}}
    assert render_event(wrote) == "  optimizer: wrote kernels/r001_a0.py [tokens: 10 in, 5 out]"  # one model
    assert render_event({**wrote, "model": "qwen"}).startswith("  optimizer [qwen]: wrote kernels/r001_a0.py")
    dropped = {"event": "model_dropped", "model": "qwen", "reason": "its last 3 candidates failed", "round": 2}
    assert render_event(dropped) == "  model qwen dropped from the run: its last 3 candidates failed"


def test_attempts_checkpointed_before_models_were_recorded_still_load():
    import dataclasses

    import ormsgpack
    from langgraph.checkpoint.serde import jsonplus

    from kernelopt.checkpoint import serializer

    attempt = Attempt(round=1, repair=0, kernel_path="k.py", source_hash="h", outcome="failed", change="c", model="a")
    saver = serializer()
    assert saver.loads_typed(saver.dumps_typed(attempt)) == attempt
    before = {f.name: getattr(attempt, f.name) for f in dataclasses.fields(attempt) if f.name != "model"}
    old = jsonplus._msgpack_enc(("kernelopt.records", "Attempt", before))
    data = ormsgpack.packb(ormsgpack.Ext(jsonplus.EXT_CONSTRUCTOR_KW_ARGS, old))
    assert saver.loads_typed(("msgpack", data)) == dataclasses.replace(attempt, model="")


def test_a_model_is_dropped_only_after_its_last_candidates_all_failed_and_while_another_works():
    history = [_attempt("a", None), _attempt("b", 1.0), _attempt("a", 2.0), _attempt("a", None, "no kernel"),
               _attempt("b", None), _attempt("a", None, "outside atol 1e-4")]
    dropped = failing_models(history, ["a", "b"], 2)
    assert list(dropped) == ["a"] and "its last 2 candidates failed" in dropped["a"] and "outside atol" in dropped["a"]
    assert failing_models(history, ["a", "b"], 3) == {}  # a's third to last passed
    both_failing = [*history, _attempt("b", None)]
    assert failing_models(both_failing, ["a", "b"], 2) == {}  # neither works better: both stay
    assert failing_models(history, ["a", "b"], 0) == {}


# ── the graph end to end, with two scripted models ───────────────────────────────────────


def test_candidates_are_shared_between_the_models_and_counted_per_model(tmp_path, add_problem):
    alpha, beta = _writes("kernel_wrong.py"), _writes("kernel_fast.py")
    ctx = fast_context(tmp_path, model="alpha", max_rounds=1, candidates_per_round=2)
    final, events = run_graph(_inputs(add_problem), ctx, {"alpha": alpha, "beta": beta})
    assert [p for p, _, _ in alpha.calls if "PERFORMANCE TARGET" not in p]  # the first model judged
    assert not [p for p, _, _ in beta.calls if "PERFORMANCE TARGET" not in p]
    round_one = {a.model: a.outcome for a in final["attempts"] if a.round == 1}
    assert round_one == {"alpha": "incorrect", "beta": "faster"}  # each wrote one of the round's two
    assert "BLOCK_SIZE = 1024" in Path(final["best"].path).read_text()
    rows = {row["model"]: row for row in _report(final)["models"]}
    assert [rows["alpha"][k] for k in ("written", "correct", "faster", "calls", "wrote_best")] == [1, 0, 0, 2, False]
    assert [rows["beta"][k] for k in ("written", "correct", "faster", "calls", "wrote_best")] == [1, 1, 1, 1, True]
    assert rows["alpha"]["input_tokens"] > rows["beta"]["input_tokens"] > 0  # alpha's judging counts too
    assert rows["alpha"]["dropped"] is None and rows["beta"]["dropped"] is None
    markdown = Path(final["run_dir"], "report.md").read_text()
    assert "## Models (2)" in markdown and "| beta | 1 | 1 | 1 |" in markdown
    assert {e.get("model") for e in events if e["event"] == "candidate"} == {"alpha", "beta"}


class _Down(BaseChatModel):
    """A model whose endpoint answers every call with an error that no retry mends."""

    @property
    def _llm_type(self) -> str:
        return "down"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        raise ValueError("Error code: 404 - The model `broken` does not exist")


def test_a_model_that_keeps_failing_is_dropped_and_the_run_goes_on_with_the_other(tmp_path, add_problem):
    def route(prompt: str) -> str:
        if "PERFORMANCE TARGET" not in prompt:
            return two_bottlenecks_reply()
        error = prompt.split("PREVIOUS ERROR", 1)[1].split("OUTPUT RULES", 1)[0] if "PREVIOUS ERROR" in prompt else ""
        return kernel_reply("kernel_fast.py" if "outside atol" in error else "kernel_wrong.py")

    good = RoutedChatModel(route=route)
    ctx = fast_context(tmp_path, model="broken", max_rounds=2, candidates_per_round=2, max_repairs=1,
                       drop_model_after=2, patience=5)
    final, events = run_graph(_inputs(add_problem), ctx, {"broken": _Down(), "good": good})
    assert final["stop_reason"] == "max_rounds"  # the failing endpoint ended nothing
    assert "BLOCK_SIZE = 1024" in Path(final["best"].path).read_text()  # the good model's repair
    dropped = [e for e in events if e["event"] == "model_dropped"]
    assert [(e["model"], e["round"]) for e in dropped] == [("broken", 1)]
    assert {a.model for a in final["attempts"] if a.round == 2} == {"good"}  # both branches of round 2
    diagnoses = [e for e in events if e["event"] == "diagnosis"]
    assert "the judging model broken failed" in diagnoses[0]["note"] and diagnoses[1]["source"] == "llm"
    rows = {row["model"]: row for row in _report(final)["models"]}
    assert rows["broken"]["written"] == 2 and rows["broken"]["correct"] == 0 and rows["broken"]["calls"] == 0
    assert rows["broken"]["dropped"].startswith("its last 2 candidates failed") and "404" in rows["broken"]["dropped"]
    assert rows["good"]["faster"] == 1 and rows["good"]["wrote_best"] and rows["good"]["dropped"] is None
    assert "dropped: its last 2 candidates failed" in Path(final["run_dir"], "report.md").read_text()
