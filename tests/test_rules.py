"""One rule table: every rule id kernelopt can refuse a kernel under is in it, with its stage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelopt.harness.guard_rules import RULES as STATIC_RULES
from kernelopt.harness.rule_table import RULES
from kernelopt.harness.verify import Verdict

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


def test_a_verdict_under_a_rule_outside_the_table_is_a_kernelopt_bug() -> None:
    with pytest.raises(ValueError, match="not in kernelopt.harness.rule_table.RULES"):
        Verdict(False, "made up", rule="no-such-rule")
    assert Verdict(False, "x", rule="incorrect").rule == "incorrect"
