"""A reference whose __init__ reads its own module's names (sizes, an import, a helper module): the kernel files
that copy that __init__ (the compiler seed, the convolution template, the affine norms') define them where it runs
(kernelopt/seed/init_names.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelopt.harness.verify import HarnessSettings, Verifier
from kernelopt.offline.moves import structural_moves
from kernelopt.offline.tuner import with_config
from kernelopt.seed.writer import reference_init

PROBLEM = '''import math
import torch
import torch.nn as nn

B, C, L = 2, 4, 37
KERNEL = 3  # a default of the signature: read where the class body runs the def
HIDDEN = C + 2
SCALE = math.sqrt(HIDDEN)  # read through another module-level name


class Scaled(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.full((n,), SCALE))


class Model(nn.Module):
    def __init__(self, kernel: int = KERNEL):
        """A convolution sized by the module's names."""
        super(Model, self).__init__()
        self.conv = nn.Conv1d(C, HIDDEN, kernel, bias=False)
        self.extra = Scaled(HIDDEN)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(B, C, L)]


def get_init_inputs():
    return []
'''


def _model_new(init: str) -> type:
    scope: dict = {}
    exec("import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n" + init, scope)  # noqa: S102
    return scope["ModelNew"]


def _built_alike(problem: str, init: str) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The problem's Model and ModelNew with the copied `init`, each built from seed 0: the same state_dict keys."""
    scope: dict = {}
    exec(problem, scope)  # noqa: S102
    torch.manual_seed(0)
    reference = scope["Model"]()
    torch.manual_seed(0)
    copied = _model_new(init)()
    assert list(copied.state_dict()) == list(reference.state_dict())
    return reference, copied


def test_the_copied_init_defines_the_module_names_it_reads_and_builds_the_same_parameters(tmp_path: Path) -> None:
    init = reference_init(PROBLEM)
    assert "HIDDEN = C + 2" in init and "import math" in init and "class Scaled(nn.Module):" in init
    signature = init.split("    def __init__", 1)[0]  # what the class body runs before the def: its default
    assert signature.startswith("    # the reference module's own names its signature reads\n")
    assert "        KERNEL = 3" in signature and "    KERNEL, = _reference_module_names()" in signature
    assert "get_inputs" not in init and "class Model(" not in init and "def forward" not in init.split("__init__")[0]
    reference, copied = _built_alike(PROBLEM, init)
    assert all(torch.equal(a, b) for a, b in zip(copied.state_dict().values(), reference.state_dict().values(),
                                                  strict=True))


def test_an_init_that_reads_no_module_name_is_copied_as_it_stands() -> None:
    plain = PROBLEM.replace("nn.Conv1d(C, HIDDEN, kernel, bias=False)", "nn.Conv1d(4, 6, kernel, bias=False)")
    plain = plain.replace("kernel: int = KERNEL", "kernel: int = 3")
    plain = plain.replace("        self.extra = Scaled(HIDDEN)\n", "")
    init = reference_init(plain)
    assert init == ("    def __init__(self, kernel: int = 3):\n"
                    '        """A convolution sized by the module\'s names."""\n'
                    "        super().__init__()\n        self.conv = nn.Conv1d(4, 6, kernel, bias=False)\n")


BLOCK = '''import torch
import torch.nn as nn

WIDTH = 6


class Model(nn.Module):
    """A block whose __init__ reads a class attribute and calls a method of its own (level 3's ResNetBasicBlock's
    `expansion = 1`, DenseNet121DenseBlock's `self._make_layer(...)`); forward calls another."""
    expansion: int = 2
    layers = 2

    def __init__(self, features: int = 4):
        super(Model, self).__init__()
        self.blocks = nn.ModuleList(self._make_layer(features * self.expansion) for _ in range(self.layers))
        self.first = nn.Linear(features, features * self.expansion)

    @staticmethod
    def _width(n):
        return n + WIDTH - WIDTH

    def _make_layer(self, n):
        assert isinstance(self, Model)  # the class named in a helper: ModelNew where it is copied
        return nn.Linear(n, Model._width(n))

    def _run(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return x

    def forward(self, x):
        return self._run(self.first(x))
'''


def test_the_models_class_attributes_and_helper_methods_are_copied_with_its_init() -> None:
    # ModelNew had only the __init__: "'ModelNew' object has no attribute 'expansion'" (or '_make_layer') on the
    # public level-3 blocks, so no seed; the members come after the __init__, each method with the module names
    # it reads, a decorator kept, forward left to the kernel file
    init = reference_init(BLOCK)
    assert "    expansion: int = 2\n" in init and "    layers = 2\n" in init and "    @staticmethod\n" in init
    assert "    def _make_layer(self, n):" in init and "    def _run(self, x):" in init and "def forward" not in init
    assert "        WIDTH = 6" in init.split("def _width")[1]  # the module name the static method reads
    assert "isinstance(self, ModelNew)" in init and "nn.Linear(n, ModelNew._width(n))" in init
    assert "Model" not in init.replace("ModelNew", "")  # its super(Model, self) too
    reference, copied = _built_alike(BLOCK, init)
    x = torch.randn(3, 4)
    with torch.no_grad():
        torch.testing.assert_close(copied._run(copied.first(x)), reference(x))


def test_the_convolution_template_of_such_a_reference_passes_the_verifier(tmp_path: Path) -> None:
    problem = tmp_path / "conv_globals.py"
    problem.write_text(PROBLEM)
    moves = structural_moves(problem)
    assert moves.family is not None and moves.family.name == "conv"
    move = moves.instances[0]
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(move.source, {"CONV_BLOCK_M": 16, "CONV_BLOCK_N": 16, "CONV_BLOCK_K": 16}))
    verdict = Verifier(problem, tmp_path / "harness", HarnessSettings.detect(seeds=1, time_compile=False)).verify(
        kernel, time=False)
    assert verdict.accepted, verdict.reason


# module-level names built in several statements, a dependency named as a parameter, a decorated helper
_CASES = {
    "rebound": ("C = 4\nC = C * 2\n",
                "def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(C, 5)", "[]"),
    "read_then_rebound": ("N = 4\nD = N * 2\nN = 8\n", "def __init__(self):\n        super().__init__()\n"
                          "        self.lin = nn.Linear(D, N)", "[]"),
    "changed_in_place": ("CONFIG = {'d': 4}\nCONFIG['h'] = 6\nSIZES = [4, 8]\nSIZES += [16]\n",
                         "def __init__(self):\n        super().__init__()\n"
                         "        self.lin = nn.Linear(CONFIG['d'], CONFIG['h'])\n"
                         "        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(SIZES, SIZES[1:]))",
                         "[]"),
    "parameter_named_as_a_dependency": ("D = 8\nH = D * 4\n", "def __init__(self, D):\n        super().__init__()\n"
                                        "        self.up = nn.Linear(D, H)", "[16]"),
    "decorated": ("import dataclasses\n\n\n@dataclasses.dataclass\nclass Cfg:\n    d: int = 4\n    h: int = 6\n",
                  "def __init__(self):\n        super().__init__()\n        cfg = Cfg(d=5)\n"
                  "        self.lin = nn.Linear(cfg.d, cfg.h)", "[]"),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_module_names_are_built_as_the_module_builds_them(case: str) -> None:
    names, init, init_inputs = _CASES[case]
    problem = (f"import torch\nimport torch.nn as nn\n\n{names}\n\nclass Model(nn.Module):\n    {init}\n\n"
               "    def forward(self, x):\n        return x\n\n\ndef get_inputs():\n    return [torch.randn(2)]\n\n\n"
               f"def get_init_inputs():\n    return {init_inputs}\n")
    scope: dict = {}
    exec(problem, scope)  # noqa: S102
    arguments = eval(init_inputs)  # noqa: S307 - the test's own text
    reference = scope["Model"](*arguments)
    copied = _model_new(reference_init(problem))(*arguments)
    shapes = [{k: v.shape for k, v in m.state_dict().items()} for m in (copied, reference)]
    assert shapes[0] == shapes[1]
