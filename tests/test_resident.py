"""How many programs a GPU holds at once, for the one-read templates whose pieces wait for each other: the launch's
reading of the compiled kernel, the planner's estimate, and the rows that may now take more pieces than SMs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelopt.harness.guards import check_kernel_source
from kernelopt.offline.moves import resident, rows, standardize, structural_moves
from kernelopt.offline.moves.rowwise import one_read_grid
from kernelopt.offline.tuner import knob_values, with_config

PROBLEMS = Path(__file__).resolve().parents[1] / "benchmarks" / "kernelbench" / "problems"
# the H200's SM: 132 of them, 64K registers, 2048 threads and 228 KB of shared memory each
H200 = SimpleNamespace(multi_processor_count=132, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048,
                       shared_memory_per_multiprocessor=233472)


@pytest.mark.parametrize(("registers", "warps", "shared", "expected"), [
    (40, 8, 0, 6),  # softmax's one-read kernel at CHUNK 4096 (Triton 3.6, sm_90): 1280 registers a warp
    (32, 8, 0, 8),  # the threads bind first: 2048 / 256
    (64, 8, 0, 4),
    (76, 8, 0, 3),  # the pipelined softmax probe's 76: 3 programs an SM, 4 groups of 96 pieces on the H200
    (72, 4, 0, 7),  # 2304 a warp: 7 warps in each quarter of the file, 28 in all
    (111, 4, 0, 4),
    (32, 4, 100 * 1024, 2),  # shared memory binds: 101 KB and its 1 KB reserve twice in 228 KB
    (16, 1, 0, 32),  # the limit of 32 programs an SM
    (255, 16, 0, 0),  # no program of 512 threads at 255 registers fits (Triton refuses to launch it)
])
def test_an_sm_holds_as_many_programs_as_its_threads_registers_and_shared_memory_allow(
        registers: int, warps: int, shared: int, expected: int) -> None:
    assert resident.per_sm(registers, warps, shared) == expected


class _Compiled:
    def __init__(self, registers: int, warps: int, shared: int) -> None:
        self.n_regs = None  # known once the binary is loaded, as Triton's CompiledKernel
        self.metadata = SimpleNamespace(num_warps=warps, shared=shared)
        self._registers = registers

    @property
    def run(self) -> object:
        self.n_regs = self._registers
        return object()


class _Kernel:
    """A JITFunction's warmup: what it was asked to compile, and a kernel (or a future of one) of these resources."""

    def __init__(self, compiled: _Compiled | None, future: bool = False) -> None:
        self.compiled, self.future, self.calls = compiled, future, []

    def warmup(self, *args: Any, grid: tuple[int, ...], **kwargs: Any) -> Any:
        self.calls.append((args, grid, kwargs))
        return SimpleNamespace(result=lambda: self.compiled) if self.future else self.compiled


def _resident_programs(monkeypatch: pytest.MonkeyPatch) -> Any:
    import torch

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: H200)
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(resident.SOURCE, "resident", "exec"), namespace)  # noqa: S102 - the templates' own helper
    return namespace["resident_programs"]


@pytest.mark.parametrize(("registers", "warps", "shared"), [(40, 8, 0), (64, 8, 0), (111, 4, 0), (32, 4, 102400),
                                                            (24, 16, 4096)])
def test_the_launch_reads_the_compiled_kernel_as_the_planner_counts(registers: int, warps: int, shared: int,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    resident_programs = _resident_programs(monkeypatch)
    kernel = _Kernel(_Compiled(registers, warps, shared))
    args, meta = ("out", "x", 65535, 8), {"CHUNK": 4096, "PIECES": 16, "VEC": 4}
    held = resident_programs(kernel, "cuda:0", args, meta, warps)
    assert held == 132 * max(1, resident.per_sm(registers, warps, shared))
    # compiled for the launch's very arguments (a specialization can change the registers), never launched
    assert kernel.calls == [(args, (1,), {**meta, "num_warps": warps})]


def test_an_sm_that_holds_fewer_programs_is_not_counted_at_hopper_s_32(monkeypatch: pytest.MonkeyPatch) -> None:
    # A one-warp kernel of few registers: Hopper holds 32 programs an SM (64 by threads), an sm_89 (an L40S, 142
    # SMs, 1,536 threads) 24 and an sm_86 16. Counted at 32, a row of 4,096 pieces on the L40S would wait for ever.
    import torch

    resident_programs = _resident_programs(monkeypatch)
    assert resident_programs(_Kernel(_Compiled(24, 1, 0)), "cuda:0", (), {}, 1) == 132 * 32
    for major, minor, sms, most in ((8, 9, 142, 24), (8, 6, 84, 16), (8, 0, 108, 32)):
        props = SimpleNamespace(multi_processor_count=sms, regs_per_multiprocessor=65536, major=major, minor=minor,
                                max_threads_per_multi_processor=1536 if minor else 2048,
                                shared_memory_per_multiprocessor=102400)
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device, p=props: p)
        assert resident_programs(_Kernel(_Compiled(24, 1, 0)), "cuda:0", (), {}, 1) == sms * most, (major, minor)


def test_the_launch_waits_for_an_asynchronous_compile_and_falls_back_to_a_program_an_sm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    resident_programs = _resident_programs(monkeypatch)
    assert resident_programs(_Kernel(_Compiled(40, 8, 0), future=True), "cuda:0", (), {}, 8) == 132 * 6
    assert resident_programs(_Kernel(None), "cuda:0", (), {}, 8) == 132  # a compile hook kept the kernel


def test_a_triton_or_torch_that_names_the_resources_otherwise_gets_a_program_an_sm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    resident_programs = _resident_programs(monkeypatch)
    nameless = SimpleNamespace(run=object(), metadata=SimpleNamespace(shared=0))  # no n_regs once loaded
    assert resident_programs(_Kernel(nameless), "cuda:0", (), {}, 8) == 132
    assert resident_programs(_Kernel(_Compiled(40, 8, 0)), "cuda:0", (), {}, 8) == 132 * 6
    # a torch whose device properties have no register file: the bound that needs no reading
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: SimpleNamespace(multi_processor_count=132))
    assert resident_programs(_Kernel(_Compiled(40, 8, 0)), "cuda:0", (), {}, 8) == 132


def test_the_estimate_is_above_what_triton_3_6_allocated_for_the_row_templates() -> None:
    # sm_90 cubins (benchmarks/row_registers.py, RESULTS.md (aq) and (ar)) at 16, 32 and 64 values a thread, the
    # most any launch took: rows.one_read's on aligned rows and on rows off a 16-byte boundary (softmax's aligned
    # windows), standardize.one_read's for LayerNorm (a weight and a bias a value)
    for values, took in ((16, (40, 40, 57)), (32, (64, 93, 120)), (64, (111, 184, 191))):
        assert resident.estimated_registers(values) >= max(took)
    assert resident.estimated_registers(1024) == 255


def test_rows_of_millions_of_values_take_more_pieces_than_sms() -> None:
    # 35_GroupNorm_'s groups of 2,097,152 values: 512 pieces of 4096 on 8 warps (4 an SM at an estimated 64
    # registers hold 528; Triton 3.6 took 48), where a piece an SM took 16384 a piece at least
    group = one_read_grid(2097152, 132)
    assert group[0] == {"CHUNK": 4096, "num_warps": 8}
    assert {"CHUNK": 4096, "num_warps": 16} not in group  # 3 an SM (by an estimated 36 registers) hold 396
    for config in group:
        pieces = -(-2097152 // config["CHUNK"])
        values = config["CHUNK"] // (32 * config["num_warps"])
        assert pieces <= 132 * resident.per_sm(resident.estimated_registers(values), config["num_warps"])
    # rows of 4,194,304 (40_LayerNorm's): 512 programs of 8192 values would need 2 of 16 warps an SM at 57
    # registers a thread; no launch's pieces are resident at once
    assert one_read_grid(4194304, 132) == []


def test_the_group_norm_is_offered_one_read_and_its_files_pass_the_guards() -> None:
    moves = structural_moves(PROBLEMS / "35_GroupNorm_.py")
    one_read = {m.name: m for m in moves.instances}["standardize.one_read"]
    # 512 pieces, more than two an SM: each launch also with the row's last piece merging (LAST_MERGES)
    assert one_read.grid[:3] == ({"CHUNK": 4096, "num_warps": 8, "LAST_MERGES": 0},
                                 {"CHUNK": 4096, "num_warps": 8, "LAST_MERGES": 1},
                                 {"CHUNK": 4096, "num_warps": 4, "LAST_MERGES": 0})
    assert {c["LAST_MERGES"] for c in one_read.grid if c["CHUNK"] == 16384} == {0}  # 128 pieces: each merges
    assert check_kernel_source(one_read.source) == []
    why = {s.name: s.why for s in structural_moves(PROBLEMS / "40_LayerNorm.py").skipped}
    assert why["standardize.one_read"] == ("a row of 4194304 needs more pieces than the 132 SMs are estimated to "
                                           "hold at once")


@pytest.mark.parametrize("source", [rows.one_read("softmax", 1, ("x",)), standardize.one_read(1, 1e-5, ("x",))],
                         ids=["rows", "standardize"])
def test_the_sweep_sets_the_one_read_launch_s_warps_and_its_residency_reads_them(source: str) -> None:
    assert check_kernel_source(source) == []
    knobs = {"CHUNK": 4096, "num_warps": 8}
    assert knob_values(source) == (knobs if "LAST_MERGES" not in source else {**knobs, "LAST_MERGES": 0})
    swept = with_config(source, {"CHUNK": 8192, "num_warps": 4})
    assert "        warps = 4\n" in swept and "CHUNK = 8192\n" in swept
    # the residency is read at the launch's own warps, and the launch takes them
    assert "resident_programs(one_read_kernel, x.device, args, meta, warps)" in swept
    assert "one_read_kernel[(chunks * rows,)](*args, **meta, num_warps=warps)" in swept


MOVES = Path(__file__).parent / "data" / "moves"


@pytest.mark.parametrize(("template", "config"), [("looped_online", {"BLOCK": 4}), ("one_read", {"CHUNK": 4}),
                                                  ("split_row", {"CHUNK": 8, "BLOCK": 4}),
                                                  ("split_row", {"CHUNK": 10, "BLOCK": 4})])
def test_a_group_norm_s_blocks_inside_one_channel_take_its_weight_and_pass_the_verifier(
        template: str, config: dict[str, int], tmp_path: Path) -> None:
    # group_norm.py: planes of 4 x 5 = 20 values, so blocks of 4 lie in one channel each and the launch takes one
    # weight and one bias a block (UNIFORM); pieces of 10 (not a multiple of the block: a block can straddle two
    # channels) keep a weight a value, and a piece's last block stops at its end.
    # The interpreter runs one_read's looped kernel, stepping by the piece.
    from kernelopt.harness.verify import HarnessSettings, Verifier
    from kernelopt.offline.moves import _affine
    from tests.test_moves import _family

    family = _family(MOVES / "group_norm.py")
    source = getattr(standardize, template)(family.dim, family.eps, family.input_names,
                                            _affine(family, MOVES / "group_norm.py"), family.groups)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(with_config(source, config))
    verdict = Verifier(MOVES / "group_norm.py", tmp_path / "harness",
                       HarnessSettings.detect(seeds=1, time_compile=False)).verify(kernel, time=False)
    assert verdict.accepted, verdict.reason


@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("uniform", [True, False])
def test_the_one_read_kernel_of_a_group_norm_is_exact_with_a_weight_a_piece_or_a_value(
        uniform: bool, last: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # The GPU's one-read kernel itself (the interpreter's launch takes the looped one): 2 samples of 6 channels in
    # 3 groups, planes of 8 values, so rows (groups) of 16 in 4 pieces of 4, each inside one channel. The
    # interpreter runs programs one at a time, so the kernel runs twice: the first run leaves every piece's
    # statistics, the second merges them (as test_moves' one-read tests). Each piece merging: the counter is set
    # past the wait. The last piece merging (LAST_MERGES): the counter is set so that a row's first piece arrives
    # last; it merges, raises the row's flag, and the row's other pieces read what it wrote.
    import types

    import torch

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    module = types.ModuleType("kernelopt_test_group_norm")
    source = standardize.one_read(1, 1e-5, ("x",), standardize.Affine("", "None", "None", per_channel=True), 3)
    exec(compile(source, "template.py", "exec"), module.__dict__)  # noqa: S102 - our own template
    x = torch.randn(2, 6, 2, 4) * 3 + 50
    w, b = torch.randn(6), torch.randn(6)
    out, first, second = torch.full_like(x, float("nan")), torch.empty(6, 4), torch.empty(6, 4)
    row_stats = torch.full((6, 2), float("nan"))
    for _ in range(2):
        count = torch.full((6,), 3 if last else 100, dtype=torch.int32)
        flag = torch.zeros(6, dtype=torch.int32)
        module.one_read_kernel[(24,)](out, x, w, b, first, second, count, flag, row_stats, 16, 1e-5, 3, 8, 4,
                                      CHUNK=4, PIECES=4, has_w=True, has_b=True, UNIFORM=uniform, LAST=last)
    assert flag.tolist() == [int(last)] * 6
    groups = x.reshape(6, 16).double()
    if last:  # the last piece wrote each row's mean (less its first value, the pivot) and rstd, which its row's
        # other pieces read
        expected_stats = [groups.mean(1) - groups[:, 0], (groups.var(1, unbiased=False) + 1e-5).rsqrt()]
        torch.testing.assert_close(row_stats, torch.stack(expected_stats, 1).float(), atol=1e-5, rtol=1e-5)
    else:
        assert row_stats.isnan().all()
    expected = torch.nn.functional.group_norm(x, 3, w, b, 1e-5)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("family", "vec"), [("softmax", 1), ("log_softmax", 4), ("row_l1_norm", 4),
                                             ("row_rms_norm", 1)])
def test_the_row_templates_last_piece_merges_the_row_for_the_others(family: str, vec: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # rows.one_read with LAST_MERGES: 4 rows of 151 in 5 pieces of 32 (with VEC=4 rows start off a 16-byte
    # boundary). The counter is set so that each row's first piece arrives last (the interpreter runs programs one
    # at a time): it merges the row's statistics, stores them and raises the flag; the others read them. The kernel
    # runs twice: the first run leaves every piece's statistics, the second merges them.
    import types

    import torch

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    module = types.ModuleType("kernelopt_test_rows_last")
    exec(compile(rows.one_read(family, 1, ("x",), 1e-5), "template.py", "exec"), module.__dict__)  # noqa: S102
    x = torch.randn(4, 151) * 4 - 2
    x[::2] += 100
    out, first, second = torch.full_like(x, float("nan")), torch.empty(4, 5), torch.empty(4, 5)
    row_stats = torch.full((4, 2), float("nan"))
    for _ in range(2):
        count, flag = torch.full((4,), 4, dtype=torch.int32), torch.zeros(4, dtype=torch.int32)
        module.one_read_kernel[(20,)](out, x, first, second, count, flag, row_stats, 151, 1, 5, CHUNK=32, PIECES=8,
                                      VEC=vec, LAST=True)
    expected = {"softmax": torch.softmax(x, 1), "log_softmax": torch.log_softmax(x, 1),
                "row_l1_norm": x / x.abs().mean(1, keepdim=True),
                "row_rms_norm": x / torch.sqrt((x**2).mean(1, keepdim=True) + 1e-5)}[family]
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    assert flag.tolist() == [1] * 4
    total = {"softmax": torch.exp(x - x.max(1).values[:, None]).sum(1), "row_l1_norm": x.abs().sum(1),
             "row_rms_norm": (x**2).sum(1)}
    if family in total:  # the row's (max, sum) or sum, as the last piece stored it for the others
        torch.testing.assert_close(row_stats[:, 1], total[family], rtol=1e-5, atol=1e-5)
