"""Structural moves checked in the code Triton compiles for an H200 (sm_90, on the host: ptxas is in
Triton's wheel, no GPU needed): what a template promises about its instructions at real sizes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sm90 import compile_sm90
from test_seed_specialize import INTEGER_DIVISION

from kernelopt.offline.moves import structural_moves
from kernelopt.offline.tuner import with_config

MOVES = Path(__file__).parent / "data" / "moves"


def _count(path: Path, name: str, signature: dict[str, str], fixed: dict[str, object],
           pattern: str = INTEGER_DIVISION.pattern) -> int:
    """How often `pattern` (integer div/rem) matches a line of the kernel's PTX for sm_90."""
    return len(re.findall(pattern, compile_sm90(path, name, signature, fixed)["ptx"], re.M))


def _stages(path: Path, name: str, signature: dict[str, str], fixed: dict[str, object],
            divisible: tuple[str, ...] = ()) -> tuple[int, int]:
    """One kernel's sm_90 TTGIR at 8 warps (its products on wgmma, asserted): how many shared-memory buffers it makes
    from registers (`local_alloc` of a tensor: an operand written back, or a layout changed through shared memory),
    and how many tiles it copies into shared memory asynchronously (a pipeline's stages)."""
    ttgir = _ptx(path, name, {**signature, **dict.fromkeys(fixed, "constexpr")}, fixed, 8, True, "ttgir", divisible)
    assert "ttng.warp_group_dot" in ttgir, name
    return len(re.findall(r"ttg\.local_alloc %", ttgir)), ttgir.count("async_copy_global_to_local")


def test_the_flat_pooling_divides_by_no_run_time_size_and_keeps_nans_at_kernelbench_sizes(tmp_path: Path) -> None:
    # Its sizes are constants of each compile: splitting a flat index into plane, row and column
    # divides by constants (multiplications in PTX), with 32-bit offsets (KernelBench's 1-D max
    # pool: 64 x 192 x 65,536) and with 64-bit ones (a 2-D pool of 2**32 values).
    move = next(m for m in structural_moves(MOVES / "max_pool2d.py").instances if m.name == "pooling.flat")
    kernel = tmp_path / "flat.py"
    kernel.write_text(with_config(move.source, {"BLOCK": 1024}))
    one_row = {"TOTAL": 64 * 192 * 65523, "H": 1, "W": 65536, "OH": 1, "OW": 65523, "KH": 1, "KW": 8, "SH": 1,
               "SW": 1, "PH": 0, "PW": 4, "DH": 1, "DW": 3, "WIDE": False}
    planes = {"TOTAL": 1024 * 1023 * 1023, "H": 2048, "W": 2048, "OH": 1023, "OW": 1023, "KH": 3, "KW": 3, "SH": 2,
              "SW": 2, "PH": 0, "PW": 0, "DH": 1, "DW": 1, "WIDE": True}
    for sizes in (one_row, planes):
        fixed = {**sizes, "IS_MAX": True, "COUNT_PAD": True, "BLOCK": 1024}
        signature = {"out_ptr": "*fp32", "x_ptr": "*fp32", **{k: "constexpr" for k in fixed}}
        assert _count(kernel, "pool_kernel", signature, fixed) == 0, sizes
        # a NaN in a max pool's window wins on the GPU too (a plain max.f32 drops it; the interpreter keeps it)
        assert _count(kernel, "pool_kernel", signature, fixed, r"\bmax\.NaN\.f32\b") > 0, sizes


def _ptx(path: Path, name: str, signature: dict[str, str], fixed: dict[str, object], warps: int,
         aligned: bool = False, asm: str = "ptx", divisible: tuple[str, ...] = ()) -> str:
    """The sm_90 PTX (or the `asm` Triton names: "ttgir") of one kernel of a file at `warps` warps, compiled
    without the interpreter (`aligned`: with its pointers, and the integers named in `divisible`, known multiples
    of 16, as a launch specializes them: torch's tensors are 16-byte aligned, padded sizes multiples of 16)."""
    attrs = {(i,): [["tt.divisibility", 16]] for i, (arg, kind) in enumerate(signature.items())
             if kind.startswith("*") or arg in divisible}
    return compile_sm90(path, name, signature, fixed, (asm,), {"num_warps": warps}, attrs if aligned else None)[asm]


# standardize.one_read_kernel's run-time arguments
STANDARDIZE = {"out_ptr": "*fp32", "x_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "mean_ptr": "*fp32",
               "m2_ptr": "*fp32", "count_ptr": "*i32", "flag_ptr": "*i32", "row_ptr": "*fp32", "n": "i32",
               "eps": "fp32", "groups": "i32", "plane": "i32", "chunks": "i32"}


def _waits_then_acquires(ptx: str) -> None:
    """One acquire-release add; the polls are acquires that one thread issues (no volatile load: every
    thread would poll), then the pieces' statistics are read (.cg), in that order."""

    # the publishing add releases and acquires (the last piece to arrive polls no more)
    assert len(re.findall(r"\batom\.global\.gpu\.acq_rel\.add\b", ptx)) == 1
    assert "ld.volatile.global" not in ptx
    # sm_90 compiles an acquire atomic that adds 0 to an acquire load, issued by one thread (predicated)
    polls = [m.start() for m in re.finditer(r"@%p\d+ (ld|atom)\.global\.gpu\.acquire", ptx)]
    statistics = ptx.find("ld.global.cg", max(polls, default=0))
    assert polls and polls[-1] < statistics, (polls, statistics)


def test_the_one_read_wait_polls_with_one_thread_s_acquire_and_reads_the_statistics_after_it(
    tmp_path: Path,
) -> None:
    # The pieces' statistics are read after the wait: without an acquire they may be stale, so the acquire
    # must be in the code ptxas gets, before the statistics are read; the polls are atomics, which one
    # thread issues (volatile loads polled by every thread took softmax from 3.77 to 6.04 ms on the H200).
    # At the launch's 8 warps.

    from kernelopt.offline.moves import rows, standardize

    # VEC=4: rows off a 16-byte boundary, read in aligned windows of whole vectors (16-byte loads and stores)
    pointers = {"out_ptr": "*fp32", "x_ptr": "*fp32", "m_ptr": "*fp32", "s_ptr": "*fp32", "count_ptr": "*i32",
                "flag_ptr": "*i32", "row_ptr": "*fp32"}
    signature = {**pointers, "n": "i32", "inner": "i32", "chunks": "i32", "CHUNK": "constexpr", "PIECES": "constexpr",
                 "VEC": "constexpr", "LAST": "constexpr"}
    for family in ("softmax", "log_softmax"):
        kernel = tmp_path / f"{family}.py"
        kernel.write_text(rows.one_read(family, 1, ("x",), 1e-5))
        for vec in (1, 4):
            ptx = _ptx(kernel, "one_read_kernel", signature, {"CHUNK": 4096, "PIECES": 128, "VEC": vec, "LAST": False},
                       8, True)
            _waits_then_acquires(ptx)
            assert ("ld.global.v4" in ptx and "st.global.v4" in ptx) == (vec == 4)
            # the windows' offsets are 32-bit: 64-bit ones compared each value (33 compares a thread at CHUNK
            # 8192) and held 93 registers a thread at CHUNK 8192, 8 warps, against 48
            # (at VEC=1 none at all: with 64-bit piece offsets softmax's rows of 393,216 held 79 registers a thread
            # at CHUNK 8192, with 32-bit ones 64, in Triton 3.6's cubin for the H200: benchmarks/row_registers.py)
            assert len(re.findall(r"\bsetp\.\w+\.s64\b", ptx)) <= (8 if vec == 4 else 0), (family, vec)
    kernel = tmp_path / "standardize.py"
    kernel.write_text(standardize.one_read(1, 1e-5, ("x",)))
    fixed: dict[str, object] = {"CHUNK": 4096, "PIECES": 128, "has_w": False, "has_b": False, "UNIFORM": False,
                                "LAST": False}
    signature = {**STANDARDIZE, **{k: "constexpr" for k in fixed}}
    _waits_then_acquires(_ptx(kernel, "one_read_kernel", signature, fixed, 8))
    # LAST_MERGES: the row's last piece publishes the row's statistics with one release exchange of its flag; the
    # others poll the flag with one thread's acquire, then read the row's two values (.cg)
    ptx = _ptx(kernel, "one_read_kernel", signature, {**fixed, "LAST": True}, 8)
    assert len(re.findall(r"\batom\.global\.gpu\.acq_rel\.add\b", ptx)) == 1
    exchanges = [m.start() for m in re.finditer(r"\batom\.global\.gpu\.release\.exch\b", ptx)]
    assert len(exchanges) == 1, re.findall(r"atom[.\w]*", ptx)
    # the row's mean and rstd are stored, then the program's barrier, then the flag is raised
    stored = ptx.rfind("st.global", 0, exchanges[0])
    assert -1 < stored < ptx.rfind("bar.sync", 0, exchanges[0]), (stored, exchanges)
    assert "ld.volatile.global" not in ptx
    assert re.findall(r"@%p\d+ (?:ld|atom)\.global\.gpu\.acquire", ptx)


def test_a_group_norm_piece_in_one_channel_takes_one_weight_and_its_offsets_are_32_bit(tmp_path: Path) -> None:
    # GroupNorm's weight and bias are a channel's: where the launch finds a piece inside one channel (its plane a
    # multiple of CHUNK: KernelBench 35's 262,144 against 4096) the piece loads one of each; else each value's
    # channel is divided out, in 32 bits. The offsets within a row are 32-bit: no 64-bit compare a value (there
    # were 20 a thread, and a 64-bit division of each value's offset by the plane: Triton 3.6 on sm_90 held 58-62
    # registers a thread at CHUNK 4096, 8 warps, and 48 with a weight a piece; RESULTS.md (ar))
    from kernelopt.offline.moves import standardize

    kernel = tmp_path / "group_norm.py"
    kernel.write_text(standardize.one_read(1, 1e-5, ("x",), standardize.Affine("", "self.gn.weight", "self.gn.bias",
                                                                              per_channel=True), 8))
    loads = {}
    for uniform in (True, False):
        fixed: dict[str, object] = {"CHUNK": 4096, "PIECES": 512, "has_w": True, "has_b": True, "UNIFORM": uniform,
                                    "LAST": False}
        signature = {**STANDARDIZE, **{k: "constexpr" for k in fixed}}
        ptx = _ptx(kernel, "one_read_kernel", signature, fixed, 8, True)
        assert not re.findall(r"\bsetp\.\w+\.s64\b", ptx), uniform
        assert not re.findall(r"\b(?:div|rem)\.\w+\.[su]64\b", ptx), uniform  # no offset divided in 64 bits
        loads[uniform] = len(re.findall(r"\bld\.global\.(?:v\d\.)?b32\b", ptx))
    # 16 values a thread: a weight and a bias each (32 loads) against one of each for the piece
    assert loads[False] - loads[True] == 30, loads


@pytest.mark.parametrize("transposed", [(False, False), (False, True), (True, False)])
def test_the_tma_template_compiles_to_bulk_tensor_copies_and_wgmma_for_sm_90(transposed, tmp_path: Path) -> None:
    # The H200's own code for the fp16 example's tile (128 x 256 x 64, 8 warps): the tiles come by TMA
    # (cp.async.bulk.tensor through tensormaps made on the device), and the products are wgmma.

    from kernelopt.offline.moves import matmul_tma

    kernel = tmp_path / "tma.py"
    kernel.write_text(matmul_tma.tma(("A", "B"), (0, 1), transposed, 132))
    knobs = ("A_T", "B_T", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "PROGRAMS", "PRECISION")
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **dict.fromkeys(("M", "N", "K"), "i32"),
                 **dict.fromkeys(("lda", "ldb", "ldc"), "i32"), **dict.fromkeys(knobs, "constexpr")}
    fixed = {"A_T": transposed[0], "B_T": transposed[1], "BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8,
             "PROGRAMS": 132, "PRECISION": "tf32"}
    ptx = _ptx(kernel, "matmul_tma_kernel", signature, fixed, 8)
    assert re.search(r"\bcp\.async\.bulk\.tensor\.2d\.shared::\w+\.global\.mbarrier", ptx)  # the loads
    assert re.search(r"\bcp\.async\.bulk\.tensor\.2d\.global\.shared::\w+", ptx)  # the store
    assert re.search(r"\bwgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16\b", ptx)
    assert "ld.global" not in ptx  # no tile loaded thread by thread


def _sliding_pool(tmp_path: Path, data: str, window: tuple[str, str], config: dict[str, int],
                  fixed: dict[str, object]) -> tuple[Path, dict[str, str]]:
    """`pooling.sliding`'s kernel file for a tests/data/moves pooling with its window (`init` list) replaced, at
    `config`; and pool_kernel's signature with `fixed`'s names as constants."""
    problem = tmp_path / data
    problem.write_text((MOVES / data).read_text().replace(f"return {window[0]}", f"return {window[1]}"))
    move = next(m for m in structural_moves(problem).instances if m.name == "pooling.sliding")
    kernel = tmp_path / "sliding_kernel.py"
    kernel.write_text(with_config(move.source, config))
    signature = {"out_ptr": "*fp32", "x_ptr": "*fp32", "H": "i32", "W": "i32", "OH": "i32", "OW": "i32",
                 **{k: "constexpr" for k in fixed}}
    return kernel, signature


def test_the_sliding_pool_compiles_for_the_h200_with_its_direct_check(tmp_path: Path) -> None:
    # The interpreter runs the running sum's block check as Python; the GPU compiles it (a scalar branch on a
    # reduction). At 44_Average_Pooling_1D's sizes, both ways of summing are in the PTX: the cumsum's shuffles and
    # the direct sum's window of loads after the branch.
    fixed = {"KH": 1, "KW": 8, "KWP": 8, "SH": 1, "PH": 0, "PW": 4, "COUNT_PAD": True, "BLOCK_W": 512}
    kernel, signature = _sliding_pool(tmp_path, "avg_pool1d.py", ("[4, 2, 1]", "[8, 1, 4]"), {"BLOCK_W": 512}, fixed)
    assert _count(kernel, "pool_kernel", signature, fixed, r"\bshfl\.sync") > 0  # the cumsum across a warp
    assert _count(kernel, "pool_kernel", signature, fixed, r"^\s*@!?%p\d+ bra") > 0  # the branch to the direct sum


def test_the_segment_maxima_compile_for_the_h200_to_two_loads_an_output(tmp_path: Path) -> None:
    # 41_Max_Pooling_1D's window (8 taps 3 apart): the [segments, 8, 4] block of 1024 lanes at 4 warps is 8 lanes a
    # thread, each loading its window's first and last tap (16 loads; the tiled and flat templates load 8 a lane).
    # The scans along the segment run across a warp's lanes by shuffles, reversed and not; nothing through shared
    # memory.
    fixed = {"KH": 1, "KW": 8, "KWP": 8, "SH": 1, "PH": 0, "DH": 1, "PW": 4, "DW": 3, "DWP": 4, "SEGMENTS": 32}
    kernel, signature = _sliding_pool(tmp_path, "max_pool1d.py", ("[4, 1, 2, 3]", "[8, 1, 4, 3]"), {"SEGMENTS": 32},
                                      fixed)
    ptx = _ptx(kernel, "pool_kernel", signature, fixed, 4)
    assert len(re.findall(r"\bld\.global", ptx)) == 16 and len(re.findall(r"\bst\.global", ptx)) == 8
    assert re.search(r"\bshfl\.sync\.(up|down|idx)", ptx) and "ld.shared" not in ptx
    assert re.search(r"\bmax\.NaN\.f32", ptx)  # the NaN-propagating maximum


def test_rows_off_a_16_byte_boundary_are_loaded_and_stored_in_16_byte_vectors(tmp_path: Path) -> None:
    # KernelBench 38's rows of 65,535: with VEC=1 every access is 4 bytes (Triton cannot prove a row's start
    # aligned); with VEC=4 the aligned windows are 16-byte loads and stores, for each structure that reads so.
    from kernelopt.offline.moves import rows

    pointers = {"out_ptr": "*fp32", "x_ptr": "*fp32"}
    kernel = tmp_path / "registers.py"
    kernel.write_text(rows.rows_in_registers("row_l1_norm", 1, ("x",)))
    signature = {**pointers, "n_rows": "i32", "n": "i32", "inner": "i32", "ROWS": "constexpr", "BLOCK_N": "constexpr",
                 "VEC": "constexpr"}
    for vec in (1, 4):
        ptx = _ptx(kernel, "rows_kernel", signature, {"ROWS": 2, "BLOCK_N": 4096, "VEC": vec}, 4, True)
        vectors = len(re.findall(r"\bld\.global\.v4\.b32\b", ptx)), len(re.findall(r"\bst\.global\.v4\.b32\b", ptx))
        assert (vectors[0] >= 8 and vectors[1] >= 8) if vec == 4 else vectors == (0, 0), (vec, vectors)
        assert vec == 1 or len(re.findall(r"\bsetp\.\w+\.s64\b", ptx)) <= 8  # 32-bit offsets: none a value


@pytest.mark.parametrize("family", ["standardize", "softmax"])
def test_the_l2_pieces_kernel_keeps_its_first_walk_in_l2_and_reads_the_row_after_its_wait(family: str,
                                                                                        tmp_path: Path) -> None:
    # l2_pieces at LayerNorm 40's first configuration (pieces of 16,384 values in blocks of 4,096, 16 warps), and the
    # softmax's: the statistics walk's loads ask L2 to keep their lines, the writing walk's loads and stores mark
    # theirs first to go, and the wait is one_read's (one thread's acquire, then the pieces' statistics through L2).
    from kernelopt.offline.moves import rows_l2, standardize_l2

    kernel = tmp_path / "l2_pieces.py"
    fixed: dict[str, object] = {"CHUNK": 16384, "BLOCK": 4096, "PIECES": 256}
    if family == "standardize":
        kernel.write_text(standardize_l2.l2_pieces(1, 1e-5, ("x",)))
        fixed |= {"has_w": True, "has_b": True, "UNIFORM": False, "LAST": False}
        signature = {**STANDARDIZE, **{k: "constexpr" for k in fixed}}
    else:
        kernel.write_text(rows_l2.l2_pieces(family, 1, ("x",)))
        fixed |= {"LAST": False}
        signature = {"out_ptr": "*fp32", "x_ptr": "*fp32", "m_ptr": "*fp32", "s_ptr": "*fp32", "count_ptr": "*i32",
                     "flag_ptr": "*i32", "row_ptr": "*fp32", "n": "i32", "inner": "i32", "chunks": "i32",
                     **{k: "constexpr" for k in fixed}}
    ptx = _ptx(kernel, "l2_pieces_kernel", signature, fixed, 16, True)
    _waits_then_acquires(ptx)
    assert "createpolicy.fractional.L2::evict_last" in ptx and "createpolicy.fractional.L2::evict_first" in ptx
    wait = ptx.find("atom.global.gpu.acq_rel.add")
    kept = [m.start() for m in re.finditer(r"ld\.global\.L1::evict_last(\.L2::cache_hint)?(\.v4)?\.b32", ptx)]
    last = [m.start() for m in re.finditer(r"ld\.global\.L1::evict_first(\.L2::cache_hint)?(\.v4)?\.b32", ptx)]
    assert kept and last, sorted(set(re.findall(r"ld\.global[.\w:]*", ptx)))
    assert max(kept) < wait < min(last)  # the first walk before the wait, the second after it
    # (scalar here: the row's length is a run-time size; a launch's n divisible by 16 is specialized to vectors)
    assert re.search(r"st\.global\.L1::evict_first(\.L2::cache_hint)?(\.v4)?\.b32", ptx), sorted(
        set(re.findall(r"st\.global[.\w:]*", ptx)))


def test_the_pointwise_split_product_never_writes_its_operands_back_to_shared_memory(tmp_path: Path) -> None:
    # conv.pointwise_split's kernel at 87's sizes and first tile (64 -> 128 channels, 8 warps, 3 stages) in the
    # H200's TTGIR: wgmma products, and every shared-memory buffer is a pipeline stage filled by async copies; none
    # is made from registers in the K loop. Its 3xTF32 twin splits its B operand (x's tile) in registers and writes
    # both parts back to shared memory every K step, waiting on each product (0.43 ms against 0.16 at ieee on a
    # bottleneck's 1 x 1 reduce, RESULTS.md (bg)); here x is the A operand, which wgmma reads from registers.
    from kernelopt.offline.moves import conv_pointwise

    imports = "import torch\nimport triton\nimport triton.language as tl\n"
    sizes = {"P": "i32", "CG": "i32", "OCG": "i32", "G": "i32"}
    strides = dict.fromkeys(("sxn", "sxc", "son", "soc"), "i32")
    fixed = {"HAS_BIAS": False, "EVEN": True, "WIDE": False, "BLOCK_CO": 128, "BLOCK_P": 128, "BLOCK_C": 32}
    kernels = {
        "split": ("conv_pw_split_kernel", {"x_ptr": "*fp32", "wh_ptr": "*fp32", "wl_ptr": "*fp32", "b_ptr": "*fp32",
                                           "out_ptr": "*fp32", **sizes, "CO_TILES": "i32", **strides}),
        "tf32x3": ("conv_pw_kernel", {"x_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32",
                                      **sizes, **strides}),
    }
    written = {}
    for precision, (name, signature) in kernels.items():
        kernel = tmp_path / f"{precision}.py"
        kernel.write_text(imports + conv_pointwise.helper("float32", precision))
        written[precision] = _stages(kernel, name, signature, fixed)[0]
    assert written["split"] == 0 and written["tf32x3"] > 0, written


def test_the_tf32_split_convolution_never_writes_its_operands_back_to_shared_memory(tmp_path: Path) -> None:
    # conv.split_tf32's implicit GEMM at a 3 x 3 convolution's first tile (128 x 128 x 32, 8 warps, 3 stages) in the
    # H200's TTGIR: wgmma products, no shared-memory buffer made from registers in the K loop (the gathered input
    # tile is split in registers as the A operand, the weight's parts come K-major from memory); the 3xTF32 twin
    # (implicit_gemm_tf32x3) writes its B operand's parts back to shared memory every K step.
    from kernelopt.offline.moves import conv_split
    from kernelopt.offline.moves.conv import _IEEE
    from kernelopt.seed.conv import CONV_HELPER

    imports = "import torch\nimport triton\nimport triton.language as tl\n"
    sizes = ("OD", "OH", "OW", "D", "H", "W", "KD", "KH", "KW", "M", "CG", "OCG", "sxn", "sxc", "sxd", "sxh", "sxw",
             "son", "soc", "sod", "soh", "sow", "std", "sth", "stw", "pdd", "pdh", "pdw", "dld", "dlh", "dlw", "MQ",
             "QD", "QH", "QW")
    fixed = {"TRANSPOSED": False, "HAS_BIAS": False, "IS_FP32": True, "WIDE": False, "BLOCK_M": 128, "BLOCK_N": 128,
             "BLOCK_K": 32, "CG_POW": 0, "PHASED": False}
    texts = {"split_tf32": (conv_split.tf32_helper(), ("x_ptr", "wg_ptr", "wl_ptr", "b_ptr", "out_ptr"), ("KKCG",)),
             "tf32x3": (CONV_HELPER.replace(_IEEE, 'input_precision="tf32x3"'),
                        ("x_ptr", "wg_ptr", "b_ptr", "out_ptr"), ())}
    written = {}
    for name, (text, pointers, extra) in texts.items():
        kernel = tmp_path / f"{name}.py"
        kernel.write_text(imports + text)
        signature = {**dict.fromkeys(pointers, "*fp32"), **dict.fromkeys((*extra, *sizes), "i32")}
        written[name] = _stages(kernel, "conv_igemm_kernel", signature, fixed)[0]
    assert written["split_tf32"] == 0 and written["tf32x3"] > 0, written


def test_the_split_k_product_on_b_parts_never_writes_its_operands_back_to_shared_memory(tmp_path: Path) -> None:
    # matmul.split_k_parts' product at 6_Matmul's first tile (128 x 128 x 32, 8 warps) in the H200's TTGIR: wgmma
    # products, A's tile split in registers as the A operand, B's parts K-major from memory; the K-major split-K at
    # 3xTF32 it is offered beside (6's best in pass c3, 1.04 ms) writes its operands' parts back every K step.
    from kernelopt.offline.moves import matmul, matmul_kmajor, matmul_parts

    operands = (("A", "B"), (0, 1), (False, False))
    tile = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}
    sizes = dict.fromkeys(("M", "N", "K", "sam", "k_per_split"), "i32")
    kernels = {
        "parts": (matmul_parts.split_k_parts(*operands), "parts_partial_kernel",
                  {"a_ptr": "*fp32", "bh_ptr": "*fp32", "bl_ptr": "*fp32", "p_ptr": "*fp32", **sizes, "ldb": "i32"},
                  {**tile, "EVEN": True, "sak": 1}),
        "tf32x3": (matmul.on_tensor_cores(matmul_kmajor.k_major_split_k(*operands)), "partial_kernel",
                   {"a_ptr": "*fp32", "b_ptr": "*fp32", "p_ptr": "*fp32", **sizes, "sbn": "i32"},
                   {**tile, "PRECISION": "tf32x3", "sak": 1, "sbk": 1}),
    }
    written = {}
    for name, (source, kernel_name, signature, fixed) in kernels.items():
        (tmp_path / f"{name}.py").write_text(source)
        written[name] = _stages(tmp_path / f"{name}.py", kernel_name, signature, fixed)[0]
    assert written["parts"] == 0 and written["tf32x3"] > 0, written


def test_the_register_split_product_never_writes_its_operands_back_to_shared_memory(tmp_path: Path) -> None:
    # bmm.split_f16_regs' product at 3_Batched's first tile (128 x 128 x 64, 8 warps) in the H200's TTGIR: wgmma
    # products, every operand tile a pipeline stage filled by async copies, none made from registers: x's tile is
    # scaled by its rows' powers of two (found before the launch: a reduction here would move the tile out of the
    # layout wgmma reads A in) and split in registers, y's parts come K-major from memory. The batched twin that
    # splits both tiles in registers (bmm.batched_f16x3, 7.30 ms against split_f16's 2.69 on the H200) writes its B
    # operand's parts back every K step. The padded sizes are multiples of 16, as a launch specializes them: an fp16
    # row not known to start 16 bytes apart is loaded element by element, with no async copy.
    from kernelopt.offline.moves import matmul, matmul_f16x3, matmul_regs

    operands = (("A", "B"), (0, 1), (False, False))
    tile = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
    regs = {**dict.fromkeys(("x_ptr", "iy_ptr", "c_ptr"), "*fp32"), "bx_ptr": "*i32", "yh_ptr": "*fp16",
            "yl_ptr": "*fp16", **dict.fromkeys(("P", "Q", "K", "Pp", "Qp", "Kp", "sxb", "sxp", "scb", "scp"), "i32")}
    twin = {**dict.fromkeys(("a_ptr", "b_ptr", "c_ptr"), "*fp32"),
            **dict.fromkeys(("M", "N", "K", "sab", "sam", "sbb", "sbk", "scb", "scm"), "i32")}
    kernels = {
        "regs": (matmul_regs.split_f16_regs(*operands, batched=True), "regs_split_kernel", regs,
                 {**tile, "EVEN": True, "sxk": 1, "scq": 1}, ("Pp", "Qp", "Kp", "K", "sxb", "sxp", "scb", "scp")),
        "f16x3": (matmul_f16x3.on_fp16_splits(matmul.batched(*operands)), "bmm_kernel", twin,
                  {**tile, "sak": 1, "sbn": 1, "scn": 1}, ("K", "sab", "sam", "sbb", "sbk", "scb", "scm")),
    }
    written = {}
    for name, (source, kernel_name, signature, fixed, divisible) in kernels.items():
        (tmp_path / f"{name}.py").write_text(source)
        written[name] = _stages(tmp_path / f"{name}.py", kernel_name, signature, fixed, divisible)
    assert written["regs"][0] == 0 and written["regs"][1] > 0 and written["f16x3"][0] > 0, written


def test_the_register_split_convolution_never_writes_its_operands_back_to_shared_memory(tmp_path: Path) -> None:
    # conv.split_f16_regs' implicit GEMM at 55's first tile (128 x 128 x 64, 8 warps, 3 stages) in the H200's TTGIR:
    # wgmma products, the gathered input tile scaled by its samples' powers of two (found before the launch) and
    # split in registers as the A operand, the weight's fp16 parts K-major from memory: every tile a pipeline stage
    # filled by async copies, none made from registers. The sizes a launch passes as multiples of 16 (a column of
    # the weight's parts, KKCG, at 64 channels a group) are marked so.
    from kernelopt.offline.moves import conv_split

    sizes = ("OD", "OH", "OW", "D", "H", "W", "KD", "KH", "KW", "M", "CG", "OCG", "sxn", "sxc", "sxd", "sxh", "sxw",
             "son", "soc", "sod", "soh", "sow", "std", "sth", "stw", "pdd", "pdh", "pdw", "dld", "dlh", "dlw", "MQ",
             "QD", "QH", "QW")
    fixed = {"TRANSPOSED": False, "HAS_BIAS": False, "IS_FP32": True, "WIDE": False, "BLOCK_M": 128, "BLOCK_N": 128,
             "BLOCK_K": 64, "CG_POW": 0, "PHASED": False}
    signature = {"x_ptr": "*fp32", "wg_ptr": "*fp16", "wl_ptr": "*fp16", "bx_ptr": "*i32", "iw_ptr": "*fp32",
                 "b_ptr": "*fp32", "out_ptr": "*fp32", "KKCG": "i32", "OCGP": "i32", **dict.fromkeys(sizes, "i32")}
    kernel = tmp_path / "regs.py"
    kernel.write_text("import torch\nimport triton\nimport triton.language as tl\n" + conv_split.regs_helper())
    made, copied = _stages(kernel, "conv_igemm_kernel", signature, fixed, ("KKCG", "OCGP", "CG", "sxn", "sxc"))
    assert made == 0 and copied > 0, (made, copied)


def test_a_kernel_that_does_not_compile_answers_its_error_and_the_next_compile_goes_on(tmp_path: Path) -> None:
    # the kept compiler child (tests/sm90.py): a failed job is one reply, not a lost child
    broken = tmp_path / "broken.py"
    broken.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr):\n"
                      "    tl.store(x_ptr, tl.load(x_ptr) + undefined_name)\n")
    import sm90

    with pytest.raises(AssertionError, match="undefined_name"):
        compile_sm90(broken, "k", {"x_ptr": "*fp32"}, {})
    child = sm90._child
    fine = tmp_path / "fine.py"
    fine.write_text(broken.read_text().replace(" + undefined_name", " + 1.0"))
    assert "st.global" in compile_sm90(fine, "k", {"x_ptr": "*fp32"}, {})["ptx"]
    assert child is not None and sm90._child is child and child.poll() is None  # the same child served both
