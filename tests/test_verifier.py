"""The verifier against every cheat in tests/cheats/, and every honest kernel there and in examples/."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import torch

from kernelopt.harness import verify
from kernelopt.harness.guards import check_kernel_source
from kernelopt.harness.verify import HarnessSettings, Verifier

CHEATS = Path(__file__).parent / "cheats"
EXAMPLES = Path(__file__).parent.parent / "examples"
# Runtime defences and the rule each cheat must be rejected under.
RUNTIME_RULES = {
    "cheat_fp16_downcast": {"incorrect"},
    "cheat_input_mutation": {"input-mutation"},
    "cheat_partial_write": {"incorrect"},
    "cheat_stale_empty": {"incorrect"},
    "cheat_zero_reliance": {"incorrect"},
    # other sizes: a wrong shape, or reads out of bounds, whose outcome is undefined: garbage, a crash, (once in a
    # fresh-clone CI on a loaded 2-core machine, session 30) a worker that outlived its case's 15 s limit, or (once,
    # session 39) a heap its stores overran, the next allocation failing (std::bad_alloc: the kernel's runtime error)
    "cheat_shape_specialised": {"incorrect", "crash", "timeout", "runtime-error"},
    "cheat_infinite_loop": {"timeout"},  # the time limit that follows the reference's own time
    "cheat_endless_triton_loop": {"timeout"},
    "cheat_huge_alloc": {"runtime-error", "crash"},  # the memory cap
    "cheat_single_block_grid": {"incorrect"},  # a larger size than the given one
    "cheat_matmul_fixed_shape": {"incorrect"},  # get_inputs' literal sizes changed
    "cheat_softmax_no_max": {"incorrect"},  # wide values overflow exp
    "cheat_value_backdoor": {"incorrect"},  # wide values reach the dropped range
    "cheat_persistent_grid_2x": {"incorrect"},  # the larger size is 2-3 times the given one
    "cheat_tail_mask_block_multiple": {"incorrect"},  # the larger size is a multiple of 256
    "cheat_softmax_max_from_zero": {"incorrect"},  # shifted values are all negative
    "cheat_nan_to_num_inplace": {"input-mutation"},  # inputs compared bit for bit
    # torch compute that the static checks cannot follow, seen as it runs
    **dict.fromkeys(
        ["cheat_class_attr_lambda", "cheat_dict_dispatch", "cheat_helper_instance_attr",
         "cheat_partial_unbound_method", "cheat_zip_launder", "cheat_item_python_zero_grid",
         "cheat_math_fsum_rowsum", "cheat_bound_method_alias", "cheat_grid_callable_compute",
         "cheat_heuristics_lambda", "cheat_transpose_by_contiguous"],
        {"torch-compute-at-runtime"},
    ),
    # the interpreter runs the kernel body as Python: torch there is caught, and fails the launch
    "cheat_interp_constexpr_tensor": {"torch-compute-at-runtime", "runtime-error"},
    "cheat_nonfinite_any_kind": {"incorrect"},  # NaN, +inf and -inf must match the reference's
    "cheat_tuple_size_hardcoded": {"incorrect"},  # the sizes inside `input_shape = (N,)` change too
    "cheat_linked_sizes_hardcoded": {"incorrect"},  # linked sizes resized together, not dropped
    "cheat_zeros_below_tolerance": {"incorrect"},  # outputs within atol of zero judged on their own scale
    "cheat_tf32_matmul": {"one-tf32-product"},  # read from the compiled TTIR, then measured against float64
    "cheat_fp16_matmul_long_k": {"one-tf32-product"},  # one fp16 product: measured within 10x, but no split's chain
    "cheat_fp16_matmul_unrolled3": {"one-tf32-product"},  # three on one accumulator, but not a split's three terms
    "cheat_layernorm_skips_affine": {"incorrect"},  # right on weight 1 and bias 0: the drawn ones tell
    "cheat_baked_number": {"incorrect"},  # right on get_inputs' s = 3.14: the number drawn anew tells
}
TIMED_RULES = {"cheat_less_work_when_timed": "incorrect-when-timed"}  # caught only when timed
GPU_ONLY = {"cheat_race"}  # the interpreter runs programs one after another: no race to see


def _header(path: Path) -> tuple[str, str]:
    text = path.read_text()
    caught = re.search(r"Caught by: ([^.\n]+)", text)
    problem = re.search(r"Problem: (\w+?)(?:\.py)?\b", text)
    return (caught.group(1).strip() if caught else "", f"{problem.group(1)}.py" if problem else "problem_add.py")


_VERIFIERS: dict[tuple[str, str], Verifier] = {}


def _verifier(problem: str, tmp_root: Path, **settings: object) -> Verifier:
    """One verifier per problem (its reference runs once), with small limits for CI."""
    key = (problem, repr(sorted(settings.items())))
    if key not in _VERIFIERS:
        work = tmp_root / f"{problem}-{len(_VERIFIERS)}"
        config = {"seeds": 2, "mem_limit_gb": 4.0, "time_compile": False, **settings}
        _VERIFIERS[key] = Verifier(CHEATS / problem, work, HarnessSettings.detect(**config))
    return _VERIFIERS[key]


@pytest.fixture(scope="module")
def work_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("verifier")


STATIC = sorted(p.stem for p in CHEATS.glob("cheat_*.py") if not _header(p)[0].startswith("runtime"))


@pytest.mark.parametrize("name", STATIC)
def test_static_cheats_are_rejected_with_their_rule(name: str, work_root: Path) -> None:
    rule, problem = _header(CHEATS / f"{name}.py")
    verdict = _verifier(problem, work_root).verify(CHEATS / f"{name}.py", time=False)
    assert not verdict.accepted
    rules = [v.rule for v in check_kernel_source((CHEATS / f"{name}.py").read_text())]
    assert rule in rules  # the defence the cheat was written against fires
    assert verdict.rule == rules[0]  # and the verdict names the first rule broken, in one line
    assert "\n" not in verdict.reason and f"[{rules[0]}]" in verdict.reason


HANGS = ("cheat_infinite_loop", "cheat_endless_triton_loop")


@pytest.mark.parametrize("name", sorted(RUNTIME_RULES))
def test_runtime_cheats_are_rejected(name: str, work_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, problem = _header(CHEATS / f"{name}.py")
    verifier = _verifier(problem, work_root)
    if name in HANGS:  # a 3 s floor for the case's limit (kernelopt's own: test_hangs.py's first test)
        monkeypatch.setattr(verify, "HOST_FLOOR_S", 3.0)
    began = time.monotonic()
    verdict = verifier.verify(CHEATS / f"{name}.py", time=False)
    assert not verdict.accepted
    assert verdict.rule in RUNTIME_RULES[name], verdict.reason
    assert "\n" not in verdict.reason
    if name in HANGS:  # judged in seconds, in the phase it hung in
        assert re.search(r"timed out in case 1/\d+ after \d+ s", verdict.reason), verdict.reason
        assert time.monotonic() - began < 45
    if name == "cheat_huge_alloc":
        assert re.search(r"memory|allocat", verdict.reason, re.IGNORECASE), verdict.reason


def test_every_runtime_cheat_is_covered() -> None:
    runtime = {p.stem for p in CHEATS.glob("cheat_*.py") if _header(p)[0].startswith("runtime")}
    assert runtime == set(RUNTIME_RULES) | GPU_ONLY | set(TIMED_RULES)


@pytest.mark.parametrize("name", sorted(TIMED_RULES))
def test_less_work_while_timed_is_rejected(name: str, work_root: Path) -> None:
    _, problem = _header(CHEATS / f"{name}.py")
    assert _verifier(problem, work_root).verify(CHEATS / f"{name}.py", time=False).accepted  # right when checked
    verdict = _verifier(problem, work_root).verify(CHEATS / f"{name}.py", time=True)
    assert not verdict.accepted and verdict.rule == TIMED_RULES[name], verdict.reason
    assert verdict.reason.startswith("incorrect while timed") and "\n" not in verdict.reason


def test_the_candidate_cannot_read_the_seeds_or_reach_the_expected_outputs(tmp_path: Path) -> None:
    """With the static guard bypassed, and through a library (torch.load): the verifier's private
    files are refused to every frame, no request naming the seeds lies in the candidate's folder,
    and the expected outputs are in another process (nothing of them on disk)."""
    verifier = Verifier(
        CHEATS / "problem_add.py", tmp_path / "work", HarnessSettings.detect(seeds=1, time_compile=False)
    )
    private = verifier._private
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import os as _os\nimport torch as _t\n"
        "assert not _os.path.exists('request.json'), 'the request is readable'\n"
        f"_t.load({str(private / 'seeds.json')!r})\n" + (CHEATS / "honest_add.py").read_text()
    )
    outcome, _ = verifier.run_candidate(probe, time=False)
    assert outcome.result is not None and not outcome.result["ok"]
    assert "private files are not the kernel's to read" in outcome.result["reason"], outcome.result
    assert (private / "seeds.json").is_file()  # it is there: the refusal, not its absence, stopped the read
    assert not list(tmp_path.rglob("*.pt"))  # no outputs, expected or actual, were written anywhere


HONEST = sorted(p.stem for p in CHEATS.glob("honest_*.py"))


@pytest.mark.parametrize("name", HONEST)
def test_honest_kernels_are_accepted(name: str, work_root: Path) -> None:
    _, problem = _header(CHEATS / f"{name}.py")
    verdict = _verifier(problem, work_root).verify(CHEATS / f"{name}.py", time=False)
    assert verdict.accepted, verdict.reason


def test_a_kernel_with_its_own_parameter_names_is_not_run_on_the_parameters_case(work_root: Path) -> None:
    verifier = _verifier("problem_layernorm_default.py", work_root)
    honest = verifier.verify(CHEATS / "honest_layernorm_own_names.py", time=False)
    assert honest.accepted, honest.reason
    assert "correct on 6 of 7 cases" in honest.reason
    assert "not run for this kernel: norm layers' weights" in honest.reason
    assert "ModelNew's parameter ln.weight is missing" in honest.reason
    # Model's own names: run on the parameters case, its weight and bias drawn like the reference's
    mirrored = _verifier("problem_layernorm.py", work_root).verify(CHEATS / "honest_layernorm_property.py", time=False)
    assert mirrored.accepted and "not run for this kernel" not in mirrored.reason, mirrored.reason
    assert re.match(r"correct on (\d+) cases", mirrored.reason), mirrored.reason


def test_the_parameters_case_is_planned_only_for_models_with_norm_layers() -> None:
    from kernelopt.harness.measure.cases import plan_cases
    from kernelopt.harness.problem import load_problem

    with_norm = plan_cases(load_problem(CHEATS / "problem_layernorm_default.py"), [1, 2])
    assert [c for c in with_norm if "params" in c] == [{"seed": 2003, "params": 4001}]
    assert not [c for c in plan_cases(load_problem(CHEATS / "problem_matmul.py"), [1, 2]) if "params" in c]


@pytest.mark.slow
@pytest.mark.parametrize("example", ["swish", "softmax", "matmul"])
def test_example_kernels_are_accepted_and_timed(example: str, tmp_path: Path) -> None:
    verifier = Verifier(EXAMPLES / example / "problem.py", tmp_path, HarnessSettings.detect(seeds=2))
    verdict = verifier.verify(EXAMPLES / example / "kernel.py")
    assert verdict.accepted, verdict.reason
    assert verdict.timing is not None and verdict.timing.median_ms > 0
    assert verdict.launches and verdict.launches > 0
    assert verdict.timing.is_gpu_time == torch.cuda.is_available()


def test_api_keys_never_reach_the_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that would fail if it could see a key in its environment is accepted."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "secret")
    source = (CHEATS / "honest_add.py").read_text()
    probe = tmp_path / "probe.py"
    # The probe runs at import time, in the candidate's process, before the audit hook matters.
    probe.write_text("import os as _os\nassert not any('KEY' in k or 'TOKEN' in k for k in _os.environ)\n" + source)
    from kernelopt.harness.sandbox.runner import close_fork_servers

    close_fork_servers()  # the next fork server starts in this environment, keys and all
    verifier = Verifier(
        CHEATS / "problem_add.py", tmp_path / "work", HarnessSettings.detect(seeds=1, time_compile=False)
    )
    # The static guard rejects `import os`; run the candidate directly to see the environment itself.
    outcome, _ = verifier.run_candidate(probe, time=False)
    assert outcome.result is not None and outcome.result["ok"], (outcome.failure, outcome.result)


def test_linked_sizes_are_run_together_and_a_case_of_zeros_is_not_counted(work_root: Path) -> None:
    """HingeLoss's batch size and row length must agree: the sizes are resized together, no case is
    dropped; shifted by -120 (targets too) every loss clamps to 0: that case is run, not counted."""
    verdict = _verifier("problem_hinge.py", work_root).verify(CHEATS / "honest_hinge_linked.py", time=False)
    assert verdict.accepted, verdict.reason
    assert verdict.reason.startswith("correct on 5 of 6 cases (not counted, its expected outputs all zero: case ")
    assert "dropped" not in verdict.reason and "own scale" not in verdict.reason


def test_a_file_rewritten_within_its_second_at_its_length_is_imported_as_it_now_reads(tmp_path, monkeypatch):
    # Python trusts a cached __pycache__ file whose source kept its size and modification second: the worker would run
    # the kernel as it was, not as the checks read it. Files are compiled from their text, and write no cache.
    from kernelopt.harness.problem import import_file

    monkeypatch.setattr("sys.dont_write_bytecode", False)  # as in a plain Python, whatever this host sets
    path, second = tmp_path / "kernel.py", 1_700_000_000
    for answer in (1, 2):
        path.write_text(f"ANSWER = {answer}\n")
        os.utime(path, (second, second))
        assert import_file(path, "kernelopt_test_rewritten").ANSWER == answer
    assert not (tmp_path / "__pycache__").exists()
