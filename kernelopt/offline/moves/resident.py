"""How many programs of one launch a GPU holds at once, for the templates whose programs wait for each other
(`rows.one_read`, `standardize.one_read`: a row's pieces publish their statistics, then wait until every piece of
the row has).

Such a launch is safe where a row has no more pieces than the GPU holds programs at once. Programs are dispatched in
order, so every row before the earliest unfinished one is done and nothing after it is dispatched before its own
pieces: those hold fewer slots than the GPU has, so the ones not yet dispatched always find one, and no piece waits
on a piece that cannot start. A piece per SM (the templates' first bound) is the case of one program an SM; an SM
holds as many as its threads, registers, shared memory and its limit of 32 programs allow, which the launch reads
from the compiled kernel (`SOURCE`, written into the templates). GroupNorm's groups of 2,097,152 values take 512
pieces of 4096 so; LayerNorm's rows of 4,194,304 (KernelBench 40) would need 512 programs of 8192 values resident,
more registers than an H200 has at that kernel's 57 a thread.

The planner (`rowwise.one_read_grid`) cannot read a kernel it has not compiled: it estimates the registers from the
values a thread holds, above what Triton 3.6 allocated for each template on sm_90 (benchmarks/row_registers.py),
and offers a launch only where that estimate fits. Where the compiled kernel holds fewer pieces than a row has,
the launch takes the looped kernel.
"""

from __future__ import annotations

import textwrap

# An SM of compute capability 9.0 (the H100 and H200): threads, registers and programs an SM holds.
SM_THREADS = 2048
SM_REGISTERS = 65536
SM_PROGRAMS = 32
REGISTER_UNIT = 256  # registers are allocated a warp at a time, in units of 256


def per_sm(registers: int, warps: int, shared: int = 0, sm_shared: int = 233472, sm_threads: int = SM_THREADS,
           sm_registers: int = SM_REGISTERS) -> int:
    """Programs of `warps` warps, `registers` a thread and `shared` bytes of shared memory that one SM holds: each
    quarter of its register file takes whole warps, and each program's shared memory takes 1 KB more."""
    per_warp = -(-registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
    by_registers = (sm_registers // 4 // per_warp) * 4 // warps
    return min(by_registers, sm_threads // (32 * warps), sm_shared // (shared + 1024), SM_PROGRAMS)


def estimated_registers(values_per_thread: int) -> int:
    """Registers a thread of a one-read kernel holding this many values is likely to take: at or above Triton 3.6's
    sm_90 allocations for every one-read kernel (benchmarks/row_registers.py), so that a planned launch rarely
    falls back. For 16, 32 and 64 values a thread: rows.one_read on aligned rows 40, 64 and 111, on rows off a
    16-byte boundary (aligned windows) 40, 93 and 184; standardize.one_read for LayerNorm (a weight and a bias a
    value) 57, 120 and 191."""
    return min(255, 8 + 7 * values_per_thread // 2)


# A piece publishes its statistics (the barrier and the release order them first), then waits for the
# row's other pieces, polling the row's counter with an acquire atomic (the publishing add acquires
# too: the piece that arrives last polls no more, and must still see the others' statistics); their
# statistics are then read through L2 (.cg), never a stale L1 line. Triton issues a scalar atomic
# from one thread and hands its value to the others through shared memory, so a piece sends one
# request a poll. Polling with volatile loads instead (every thread loads) took softmax at 4096 x
# 393,216 from 3.77 to 6.04 ms on the H200: the polls of a row's pieces crowd the L2 that the reads
# need. `rows.one_read` and `standardize.one_read` wait so.
WAIT = """    # Publish, then wait for the row's other pieces (one thread polls the counter with an acquire atomic);
    # their statistics are read through L2 (.cg).
    tl.debug_barrier()
    seen = tl.atomic_add(count_ptr + row, 1, sem="acq_rel") + 1
    while seen < chunks:
        seen = tl.atomic_add(count_ptr + row, 0, sem="acquire")
    tl.debug_barrier()"""


def merged(merge: str, first: str, second: str) -> str:
    """A one-read kernel's wait and merge (its LAST constexpr choosing, its `row_ptr` and `flag_ptr` arguments): `merge`
    (4 spaces in) sets the row's two statistics `first` and `second` from every piece's. Each piece merging: `WAIT`,
    then `merge`. LAST: the piece whose arrival fills the row's counter merges, stores the two values and raises the
    row's flag with a release exchange; the others poll the flag (one thread's acquire) and read the two values. A
    row's pieces then read 2 values each, not every piece's statistics (pieces^2 values a row)."""
    publish = f"""tl.store(row_ptr + 2 * row, {first})
tl.store(row_ptr + 2 * row + 1, {second})
tl.debug_barrier()
tl.atomic_xchg(flag_ptr + row, 1, sem="release")"""
    return f"""    if LAST:
        # the row's last piece to arrive merges the row's statistics; the others wait on the row's flag
        tl.debug_barrier()
        seen = tl.atomic_add(count_ptr + row, 1, sem="acq_rel") + 1
        if seen == chunks:
{textwrap.indent(textwrap.dedent(merge), " " * 12)}
{textwrap.indent(publish, " " * 12)}
        else:
            done = tl.atomic_add(flag_ptr + row, 0, sem="acquire")
            while done == 0:
                done = tl.atomic_add(flag_ptr + row, 0, sem="acquire")
            tl.debug_barrier()
            {first} = tl.load(row_ptr + 2 * row, cache_modifier=".cg")
            {second} = tl.load(row_ptr + 2 * row + 1, cache_modifier=".cg")
    else:
{textwrap.indent(WAIT, "    ")}
{textwrap.indent(textwrap.dedent(merge), " " * 8)}"""


SOURCE = '''


def resident_programs(kernel, device, args, meta, warps):
    """How many programs of `kernel`, launched with `args` and `meta` on `warps` warps, the GPU holds at once: its
    SMs times the programs an SM holds by its threads, its registers (each quarter of the file takes whole warps,
    256 registers at a time), its shared memory (1 KB more a program) and its limit of 32. A row's pieces wait for
    each other, so a row may have no more pieces than this. Read from the kernel compiled for these very arguments
    (a size or an alignment Triton specializes on can change its registers); Triton's cache makes a call after the
    first a lookup."""
    props = torch.cuda.get_device_properties(device)
    compiled = kernel.warmup(*args, grid=(1,), **meta, num_warps=warps)
    compiled = compiled.result() if hasattr(compiled, "result") else compiled
    # a kernel a compile hook kept, or a Triton or torch that names these otherwise: a program an SM, which any
    # program that launches at all fits. `run` is the launcher: loading it loads the binary, whose registers are
    # known then
    if compiled is None or not (hasattr(compiled, "run") and hasattr(compiled, "n_regs")
                                and hasattr(props, "regs_per_multiprocessor")
                                and hasattr(props, "max_threads_per_multi_processor")
                                and hasattr(props, "shared_memory_per_multiprocessor")):
        return props.multi_processor_count
    registers, shared = compiled.n_regs, compiled.metadata.shared
    sm_registers, sm_threads = props.regs_per_multiprocessor, props.max_threads_per_multi_processor
    sm_shared = props.shared_memory_per_multiprocessor
    per_warp = -(-registers * 32 // 256) * 256
    by_registers = (sm_registers // 4 // per_warp) * 4 // warps
    by_threads = sm_threads // (32 * warps)
    by_shared = sm_shared // (shared + 1024)
    # programs an SM holds at most: 32 on sm_80 and sm_90, 24 on sm_89, 16 on sm_75, sm_86 and sm_87 (a row of more
    # pieces than that would wait for ever)
    capability = (props.major, props.minor) if hasattr(props, "major") and hasattr(props, "minor") else (9, 0)
    most = {(7, 5): 16, (8, 6): 16, (8, 7): 16, (8, 9): 24}.get(capability, 32)
    return props.multi_processor_count * max(1, min(by_registers, by_threads, by_shared, most))
'''
