"""One rule table: every rule id kernelopt can refuse a kernel under is in it, with its stage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelopt.harness.guards.rules import RULES as STATIC_RULES
from kernelopt.harness.rule_table import RULES
from kernelopt.records import Verdict

PACKAGE = Path(__file__).resolve().parents[1] / "kernelopt"
# Every way the code names a rule: Rejected("id", ...), rule="id", "rule": "id", *_RULE = "id".
RAISED = re.compile(r'Rejected\(\s*"([a-z0-9-]+)"|rule="([a-z0-9-]+)"|"rule": "([a-z0-9-]+)"|_RULE = "([a-z0-9-]+)"')


def _raised_ids() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for match in RAISED.finditer(path.read_text()):
            found.add(next(group for group in match.groups() if group))
    return found


def test_every_rule_the_code_can_raise_is_in_the_table() -> None:
    raised = _raised_ids()
    assert {"incorrect", "timeout", "torch-compute-at-runtime", "rejected-by-person"} <= raised  # the scan sees them
    assert raised - set(RULES) == set()


def test_the_static_guards_rules_are_the_tables_static_stage() -> None:
    assert {id_ for id_, rule in RULES.items() if rule.stage == "static"} == set(STATIC_RULES) | {"static-check"}
    assert all(rule.line and rule.id == id_ for id_, rule in RULES.items())


def test_a_verdict_under_a_rule_outside_the_table_is_a_kernelopt_bug(tmp_path: Path) -> None:
    from kernelopt.harness.rule_table import known_rule
    from kernelopt.harness.verify import HarnessSettings, Verifier

    with pytest.raises(ValueError, match="not in kernelopt.harness.rule_table.RULES"):
        known_rule("no-such-rule")
    assert known_rule("incorrect") == "incorrect"
    verifier = Verifier(Path(__file__).parent / "cheats" / "problem_add.py", tmp_path, HarnessSettings())
    verifier._verify = lambda *a, **k: Verdict(accepted=False, reason="made up", rule="no-such-rule")  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="no-such-rule"):  # every verdict is checked on its way out
        verifier.verify(tmp_path / "kernel.py")


def _raise_from(path: Path, code: str) -> BaseException:
    namespace: dict[str, object] = {}
    exec(compile(code, str(path), "exec"), namespace)
    try:
        namespace["fail"]()  # type: ignore[operator]
    except Exception as err:
        return err
    raise AssertionError("no error raised")


def test_an_error_is_the_kernels_when_its_file_or_the_gpu_is_on_the_way(tmp_path: Path) -> None:
    from kernelopt.harness.sandbox.worker import candidates_fault

    kernel = tmp_path / "kernel.py"
    own = _raise_from(kernel, "def fail():\n    return [][1]\n")
    assert candidates_fault(own, (str(kernel), None))
    # a launch's illegal address surfaces in whatever harness code syncs next: still the kernel's
    gpu = RuntimeError("CUDA error: an illegal memory access was encountered")
    assert candidates_fault(gpu, (str(kernel), None))
    # under the interpreter a store past a tensor lands in the process's heap; the next allocation, in kernelopt's
    # own code, fails: the kernel's (a fresh-clone CI once took it for kernelopt's, cheat_shape_specialised)
    import kernelopt.harness.sandbox.transfer as transfer

    for raised in ("raise RuntimeError('std::bad_alloc')", "raise MemoryError()"):
        heap = _raise_from(Path(transfer.__file__), f"def fail():\n    {raised}\n")
        assert candidates_fault(heap, (str(kernel), None)), raised
    other = _raise_from(Path(transfer.__file__), "def fail():\n    raise RuntimeError('a bug of our own')\n")
    assert not candidates_fault(other, (str(kernel), None))  # the same place, any other error: kernelopt's


def test_an_error_raised_by_kernelopts_own_code_is_kernelopts(tmp_path: Path) -> None:
    """A bug in the harness is reported to the user as kernelopt's, never to the LLM as the kernel's."""
    import socket

    import torch

    from kernelopt.harness.sandbox import transfer
    from kernelopt.harness.sandbox.runner import WorkerOutcome
    from kernelopt.harness.sandbox.worker import candidates_fault
    from kernelopt.harness.verify import HarnessSettings, Verifier
    from kernelopt.records import HarnessError

    try:  # raised by kernelopt's own code, no kernel frame on the way
        transfer.read_tensors(socket.socket(socket.AF_UNIX), {"tensors": "x"}, torch.device("cpu"))
    except transfer.TransferError as err:
        assert not candidates_fault(err, (str(tmp_path / "kernel.py"), None))
    try:  # raised in torch on the kernel's behalf (a forward called with the wrong arguments, say)
        torch.nn.Identity()(1, 2)
    except TypeError as err:
        assert candidates_fault(err, (str(tmp_path / "kernel.py"), None))

    cheats = Path(__file__).parent / "cheats"
    verifier = Verifier(cheats / "problem_add.py", tmp_path, HarnessSettings(seeds=1, time_compile=False))
    outcome = WorkerOutcome({"ok": False, "harness_error": True, "reason": "KeyError: 'x'"}, None, "w.log", 0.1)
    verifier.run_candidate = lambda *a, **k: (outcome, {"rule": None})  # type: ignore[method-assign]
    with pytest.raises(HarnessError, match="its own error, not the kernel's"):
        verifier.verify(cheats / "honest_add.py")
