"""Every rule a kernel can be refused under: its id, the stage that applies it, and the line a
person (or the LLM, as repair feedback) reads. A verdict's rule is always an id of this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from kernelopt.harness.guards.rules import RULES as STATIC_RULES

Stage = Literal["input", "static", "runtime", "timing", "correctness", "graph"]


@dataclass(frozen=True)
class Rule:
    id: str
    stage: Stage
    line: str


_OTHER = (
    Rule("bad-input", "input", "the kernel file is missing, unreadable, does not parse or defines no ModelNew"),
    Rule("static-check", "static", "a static check refused the kernel"),
    Rule("timeout", "runtime", "the kernel ran past its phase's time limit (an endless loop or a hang)"),
    Rule("crash", "runtime", "the kernel's process died (a signal, out of memory) before reporting"),
    Rule("runtime-error", "runtime", "the kernel raised an error while it was imported, built or run"),
    Rule("output-type", "runtime", "forward must return plain torch.Tensor outputs, in a tuple or list"),
    Rule("output-aliases-input", "runtime", "an output may not live in an input's memory"),
    Rule("input-mutation", "runtime", "inputs are read-only"),
    Rule("no-triton-launch", "runtime", "every forward call must launch a Triton kernel"),
    Rule("torch-compute-at-runtime", "runtime", "forward ran PyTorch compute outside Triton kernels"),
    Rule("harness-patch", "runtime", "the kernel replaced a timer or a part of the harness"),
    Rule("impossible-speed", "timing", "the GPU time is under the roofline floor: work skipped or not timed"),
    Rule("incorrect", "correctness", "outputs differ from the reference beyond the tolerance"),
    Rule("incorrect-when-timed", "correctness", "a timed call's outputs differ from the reference"),
    Rule("one-tf32-product", "correctness", "an fp32 problem's tl.dot multiplied fp32 at one TF32 product "
         "(Triton's default precision), and its outputs measured more than 10x the problem's own fp32 error "
         "from float64 (or could not be measured)"),
    Rule("unjudgeable", "correctness", "no case of the problem can tell a right answer from zeros"),
    Rule("duplicate", "graph", "the same kernel as another candidate of the step"),
    Rule("bad-reply", "graph", "the optimizer's reply held no runnable kernel"),
    Rule("rejected-by-person", "graph", "a person rejected the rewrite before it was tried"),
    Rule("time-budget", "graph", "not run: the run's time budget (max_wall_s) ran out first"),
)

# A static rule may be checked at run time too (cache-across-calls: timed calls that return the
# same memory); it keeps its one id and the stage that sees it first.
RULES: MappingProxyType[str, Rule] = MappingProxyType(
    {**{id_: Rule(id_, "static", line) for id_, line in STATIC_RULES.items()}, **{r.id: r for r in _OTHER}}
)


def known_rule(rule: str | None) -> str | None:
    """`rule` itself, once checked to be in the table (a rule outside it is kernelopt's bug)."""
    if rule is not None and rule not in RULES:
        raise ValueError(f"kernelopt bug: rule {rule!r} is not in kernelopt.harness.rule_table.RULES")
    return rule
