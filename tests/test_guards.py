"""Static kernel guards: every statically caught cheat is rejected, every honest kernel passes."""

import re
from pathlib import Path

import pytest

from kernelopt.harness.guards import (
    Violation,
    check_kernel_source,
    first_violation,
    first_violation_line,
    format_violation,
)
from kernelopt.harness.guards.rules import RULES

CHEATS_DIR = Path(__file__).parent / "cheats"
CHEATS = sorted(CHEATS_DIR.glob("cheat_*.py"))
HONEST = sorted(CHEATS_DIR.glob("honest_*.py"))
_CAUGHT_BY = re.compile(r"^Cheat: .+\. Caught by: (?P<defence>[^.(]+?)(?: \(.*\))?\.$")


def _defence(path: Path) -> str:
    first_line = path.read_text().splitlines()[0].removeprefix('"""').removesuffix('"""')
    match = _CAUGHT_BY.match(first_line)
    assert match, f"{path.name}: first line must read 'Cheat: <trick>. Caught by: <defence>.'"
    return match["defence"]


def _rules(source: str) -> set[str]:
    return {v.rule for v in check_kernel_source(source)}


def test_cheat_corpus_is_complete() -> None:
    assert len(CHEATS) >= 30 and len(HONEST) >= 4


@pytest.mark.parametrize("path", CHEATS, ids=lambda p: p.stem)
def test_cheat_is_caught_by_its_declared_defence(path: Path) -> None:
    defence = _defence(path)
    violations = check_kernel_source(path.read_text(), path.name)
    if defence.startswith("runtime:"):
        # Left to the runtime checks: the static guards must let it through to them.
        assert violations == [], f"{path.name} is meant for {defence}: {violations}"
    else:
        assert defence in RULES, f"{path.name} names an unknown rule {defence!r}"
        assert defence in {v.rule for v in violations}, f"{path.name}: {violations}"


@pytest.mark.parametrize("path", HONEST, ids=lambda p: p.stem)
def test_honest_kernel_has_no_violation(path: Path) -> None:
    assert check_kernel_source(path.read_text(), path.name) == []
    assert first_violation_line(path.read_text()) is None


def test_one_line_message_names_file_line_and_rule() -> None:
    source = (CHEATS_DIR / "cheat_torch_fallback_matmul.py").read_text()
    line = first_violation_line(source, "candidate_3.py")
    assert line is not None and "\n" not in line
    match = re.match(r"^candidate_3\.py:(\d+) \[([a-z-]+)\] (.+)$", line)
    assert match and match[2] == "operator-in-forward"
    assert source.splitlines()[int(match[1]) - 1].strip() == "return a_copy @ b"
    assert "@triton.jit kernel" in match[3]
    # the rule travels as a value beside its line: nothing parses it back out of the words
    assert first_violation(source, "candidate_3.py") == ("operator-in-forward", line)
    assert first_violation((CHEATS_DIR / "honest_add.py").read_text()) is None


def test_format_violation() -> None:
    violation = Violation("torch-compute-in-forward", 23, "forward uses torch.matmul")
    assert format_violation(violation) == (
        "kernel.py:23 [torch-compute-in-forward] forward uses torch.matmul"
    )


def test_syntax_error_reports_its_line() -> None:
    [violation] = check_kernel_source("import torch\n\ndef forward(:\n    pass\n")
    assert (violation.rule, violation.line) == ("syntax-error", 3)


def test_missing_pieces() -> None:
    assert {"no-model-new", "no-triton-kernel"} <= _rules("import torch\n")
    no_launch = (CHEATS_DIR / "honest_add.py").read_text().replace(
        "add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=block)", "pass"
    )
    assert _rules(no_launch) == {"no-kernel-launch"}


_TEMPLATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl
{header}

@triton.jit
def k(x_ptr, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) * 2, mask=o < n)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.shape[0] * 2 + x.numel() // 4
        k[(triton.cdiv(n, 128),)](out, n, B=128)
{body}
        return out
'''


def _forward(body: str, header: str = "") -> set[str]:
    indented = "\n".join("        " + line for line in body.splitlines())
    return _rules(_TEMPLATE.format(header=header, body=indented))


@pytest.mark.parametrize(
    ("body", "header", "rule"),
    [
        ("out = out.to(torch.float16)", "", "tensor-method-in-forward"),
        ("out = out.half()", "", "tensor-method-in-forward"),
        ("out = mm(x, x)", "mm = torch.mm", "torch-compute-in-forward"),
        ("out = matmul(x, x)", "from torch import matmul", "torch-compute-in-forward"),
        ("out = self.w * 2", "", "operator-in-forward"),
        ("out += x", "", "operator-in-forward"),
        ("out = -x", "", "operator-in-forward"),
        ("out[:2] = x[:2]", "", "operator-in-forward"),
        ("self._buf = out", "", "cache-across-calls"),
        ("global LAST", "", "global-write"),
        ("key = torch.os.environ", "", "forbidden-attribute"),
        ("torch.save(out, 'o.pt')", "", "forbidden-attribute"),
        ("sink = open('o.txt', mode='a')", "", "file-write"),
        ("fn = eval('torch.add')", "", "dynamic-access"),
        ("g = globals()", "", "dynamic-access"),
    ],
)
def test_forward_rule(body: str, header: str, rule: str) -> None:
    assert rule in _forward(body, header)


@pytest.mark.parametrize(
    "body",
    [
        "out = out.to(x.device)",
        "out = out.view(-1).reshape(x.shape).contiguous()",
        "m = max(n, 16) * 2",
        "assert x.is_contiguous() and x.dim() == 1",
        "if x.dtype == torch.float16:\n    n = n + 1",
        "t = x.t()\nstrides = (t.stride(0), t.stride(1))",
        "text = open('notes.txt').read()",
    ],
)
def test_forward_allowed(body: str) -> None:
    assert _forward(body) == set()


def test_monkey_patch_of_imported_class_attribute() -> None:
    assert "monkey-patch" in _forward("", "torch.Tensor.__add__ = lambda a, b: a")
    assert "monkey-patch" in _forward("", "setattr(triton, 'cdiv', lambda a, b: 1)")


def test_cache_decorator_and_property() -> None:
    source = _TEMPLATE.format(header="import functools\n\n@functools.lru_cache\ndef f(n):\n"
                              "    return n\n", body="")
    assert "cache-across-calls" in _rules(source)
    assert "deferred-output" in _forward("", "class Out:\n    @property\n    def v(self):\n"
                                         "        return 1")


def test_a_tensor_descriptor_s_load_and_store_pass_and_no_other_load_does() -> None:
    # d.load / d.store in a kernel where d is made by tl.make_tensor_descriptor is a TMA load or store;
    # a name bound to anything else (or a kernel parameter, whatever the caller passed) is not let through.
    from kernelopt.offline.moves import matmul_tma

    source = matmul_tma.tma(("A", "B"), (0, 1), (False, True), 132)
    assert check_kernel_source(source) == []
    rebound = source.replace("        for k in range(0, K, BLOCK_K):\n",
                             "        a_desc = b_ptr\n        for k in range(0, K, BLOCK_K):\n", 1)
    assert rebound != source and "forbidden-attribute" in _rules(rebound)
    passed_in = source.replace("def matmul_tma_kernel(a_ptr,", "def matmul_tma_kernel(a_desc, a_ptr,", 1)
    assert "forbidden-attribute" in _rules(passed_in)
    # bound some other way than `a_desc = ...`: a lambda's parameter, a match's capture
    loop = "        for k in range(0, K, BLOCK_K):\n"
    for other in ("        f = lambda a_desc: a_desc.load([0, 0])\n",
                  "        match b_ptr:\n            case a_desc:\n                x = a_desc.load([0, 0])\n"):
        bound = source.replace(loop, other + loop, 1)
        assert bound != source and "forbidden-attribute" in _rules(bound), other


def test_a_torch_hook_bound_without_a_def_or_on_a_parameter_subclass_is_refused() -> None:
    hook = "def _hook(cls, func, types, args=(), kwargs=None):\n    return func(*args, **(kwargs or {}))\n"
    in_body = f"import torch\n{hook}class Lazy:\n    __torch_function__ = classmethod(_hook)\n"
    afterwards = f"import torch\n{hook}class Lazy:\n    pass\nLazy.__torch_dispatch__ = _hook\n"
    parameter = "import torch.nn as nn\nclass Lazy(nn.Parameter):\n    pass\n"
    buffer = "import torch\nclass Lazy(torch.nn.Buffer):\n    pass\n"
    for source in (in_body, afterwards, parameter, buffer):
        assert "tensor-subclass" in _rules(source), source
    assert "deferred-output" in _rules("class Lazy:\n    __getattr__ = print\n")
    assert "tensor-subclass" not in _rules("import torch.nn as nn\nclass Net(nn.Module):\n    pass\n")


def test_every_way_of_binding_a_name_is_read_for_patches_and_hooks() -> None:
    # a for loop's target, a tuple's, a comprehension's, a with's and a walrus's bind as an assignment does
    head = "import torch\n"
    for patch in ("for torch.cuda.Event.elapsed_time in (print,):\n    pass\n",
                  "(torch.cuda.synchronize, _z) = (print, 0)\n",
                  "_ = [0 for torch.cuda.synchronize in (print,)]\n",
                  "with open('f') as torch.cuda.synchronize:\n    pass\n",
                  "del torch.cuda.synchronize\n"):
        assert "monkey-patch" in _rules(head + patch), patch
    for hook in ("class L:\n    for __torch_function__ in (classmethod(print),):\n        pass\n",
                 "class L:\n    __torch_function__, _x = classmethod(print), 0\n",
                 "class L:\n    _y = (__torch_function__ := classmethod(print))\n"):
        assert "tensor-subclass" in _rules(hook), hook
    assert not _rules(head + "for i in range(3):\n    pass\nx, y = 1, 2\n") & {"monkey-patch", "tensor-subclass"}


def test_the_worker_notes_the_timer_events_methods_not_only_its_class(monkeypatch: pytest.MonkeyPatch) -> None:
    # what the worker compares before and after the candidate runs (_Guards.check_untouched)
    import torch

    from kernelopt.harness.sandbox.worker import _timer_identities

    before = _timer_identities()
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.0)
    after = _timer_identities()
    changed = [name for name, obj in before.items() if after.get(name) is not obj]
    assert changed == ["torch.cuda.Event.elapsed_time"]
