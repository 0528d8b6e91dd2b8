"""Where a long row's one-read softmax loses its time, variant by variant (H200, 4096 x 393,216 fp32).

    python3 benchmarks/h200/softmax_probe.py                # every variant, each in its own process
    python3 benchmarks/h200/softmax_probe.py VARIANT CHUNK WARPS   # one

Variants (each checked against torch.softmax, timed by CUDA events, median of 15 after 3 warm-ups):
- `regs`: `offline/moves/rows.one_read` as it is: a piece held in registers from the read to the
  write, every piece merging the row's statistics itself after the counter is full.
- `reread`: the same, but the piece is read again after the wait instead of kept (it was read
  microseconds ago: an L2 hit), so a program holds few registers and more fit an SM.
- `reread_last`: `reread`, and only the piece that arrives last merges the row's statistics; the
  others wait on a per-row flag and read two numbers.
- `copy`: the same programs with no statistics and no wait (a copy): what this shape of program moves.
- `template`: the kernel `rows.one_read` writes today (one exp a value for softmax; session 21 timed
  a wait polling with volatile loads from every thread at 6.04 ms, so the wait is one thread's acquire
  atomic again, as in `regs`): against `regs`, what the one exp gains.
- `pipelined`: persistent groups of a row's pieces, all resident; each program reads and publishes its
  piece of the group's next row before it waits for the current one, so the reads never stop for a
  wait (two pieces held at once). Not yet run on a GPU (session 22 wrote it after its device time).
- `fused`, `fused_merge`: `template` with a piece's (max, sum) and the row's merge (or the merge alone) each one
  reduction of pairs (`fused_statistics`): fewer barriers, more exps. Not yet run on a GPU (session 34).
- `clone`, `torch`: `x.clone()` (the floor's own rate) and `torch.softmax`.

Each variant runs in a child with a time limit: a wait that never ends (pieces not all resident)
costs that limit, not the call. Prints one line per variant: ms, TB/s, registers, max error.
"""

from __future__ import annotations

import re
import subprocess
import sys

ROWS, N = 4096, 393_216


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def regs(out_ptr, x_ptr, m_ptr, s_ptr, count_ptr, flag_ptr, row_ptr, n, inner, chunks,
             CHUNK: tl.constexpr, PIECES: tl.constexpr):
        pid = tl.program_id(0).to(tl.int64)
        row = pid // chunks
        piece = pid % chunks
        base = (row // inner) * n * inner + row % inner
        offs = piece * CHUNK + tl.arange(0, CHUNK)
        mask = offs < n
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=float("-inf")).to(tl.float32)
        m = tl.max(x, axis=0)
        s = tl.sum(tl.where(mask, tl.exp(x - m), 0.0), axis=0)
        tl.store(m_ptr + row * chunks + piece, m)
        tl.store(s_ptr + row * chunks + piece, s)
        tl.debug_barrier()
        seen = tl.atomic_add(count_ptr + row, 1, sem="release") + 1
        while seen < chunks:
            seen = tl.atomic_add(count_ptr + row, 0, sem="acquire")
        tl.debug_barrier()
        idx = tl.arange(0, PIECES)
        live = idx < chunks
        pm = tl.load(m_ptr + row * chunks + idx, mask=live, other=float("-inf"), cache_modifier=".cg")
        ps = tl.load(s_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg")
        m = tl.max(pm, axis=0)
        s = tl.sum(tl.where(live, ps * tl.exp(pm - m), 0.0), axis=0)
        y = tl.exp(x - m) / s
        tl.store(out_ptr + base + offs.to(tl.int64) * inner, y, mask=mask)

    @triton.jit
    def reread(out_ptr, x_ptr, m_ptr, s_ptr, count_ptr, flag_ptr, row_ptr, n, inner, chunks,
               CHUNK: tl.constexpr, PIECES: tl.constexpr):
        pid = tl.program_id(0).to(tl.int64)
        row = pid // chunks
        piece = pid % chunks
        base = (row // inner) * n * inner + row % inner
        offs = piece * CHUNK + tl.arange(0, CHUNK)
        mask = offs < n
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=float("-inf"),
                    eviction_policy="evict_last").to(tl.float32)
        m = tl.max(x, axis=0)
        s = tl.sum(tl.where(mask, tl.exp(x - m), 0.0), axis=0)
        tl.store(m_ptr + row * chunks + piece, m)
        tl.store(s_ptr + row * chunks + piece, s)
        tl.debug_barrier()
        seen = tl.atomic_add(count_ptr + row, 1, sem="release") + 1
        while seen < chunks:
            seen = tl.atomic_add(count_ptr + row, 0, sem="acquire")
        tl.debug_barrier()
        idx = tl.arange(0, PIECES)
        live = idx < chunks
        pm = tl.load(m_ptr + row * chunks + idx, mask=live, other=float("-inf"), cache_modifier=".cg")
        ps = tl.load(s_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg")
        m = tl.max(pm, axis=0)
        s = tl.sum(tl.where(live, ps * tl.exp(pm - m), 0.0), axis=0)
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
        y = tl.exp(x - m) / s
        tl.store(out_ptr + base + offs.to(tl.int64) * inner, y, mask=mask)

    @triton.jit
    def reread_last(out_ptr, x_ptr, m_ptr, s_ptr, count_ptr, flag_ptr, row_ptr, n, inner, chunks,
                    CHUNK: tl.constexpr, PIECES: tl.constexpr):
        pid = tl.program_id(0).to(tl.int64)
        row = pid // chunks
        piece = pid % chunks
        base = (row // inner) * n * inner + row % inner
        offs = piece * CHUNK + tl.arange(0, CHUNK)
        mask = offs < n
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=float("-inf"),
                    eviction_policy="evict_last").to(tl.float32)
        m = tl.max(x, axis=0)
        s = tl.sum(tl.where(mask, tl.exp(x - m), 0.0), axis=0)
        tl.store(m_ptr + row * chunks + piece, m)
        tl.store(s_ptr + row * chunks + piece, s)
        tl.debug_barrier()
        arrived = tl.atomic_add(count_ptr + row, 1, sem="acq_rel")
        if arrived == chunks - 1:
            idx = tl.arange(0, PIECES)
            live = idx < chunks
            pm = tl.load(m_ptr + row * chunks + idx, mask=live, other=float("-inf"), cache_modifier=".cg")
            ps = tl.load(s_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg")
            mm = tl.max(pm, axis=0)
            ss = tl.sum(tl.where(live, ps * tl.exp(pm - mm), 0.0), axis=0)
            tl.store(row_ptr + 2 * row, mm)
            tl.store(row_ptr + 2 * row + 1, ss)
            tl.debug_barrier()
            tl.atomic_xchg(flag_ptr + row, 1, sem="release")
        else:
            flag = tl.atomic_add(flag_ptr + row, 0, sem="acquire")
            while flag == 0:
                flag = tl.atomic_add(flag_ptr + row, 0, sem="acquire")
        tl.debug_barrier()
        m = tl.load(row_ptr + 2 * row, cache_modifier=".cg")
        s = tl.load(row_ptr + 2 * row + 1, cache_modifier=".cg")
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=float("-inf"),
                    eviction_policy="evict_first").to(tl.float32)
        y = tl.exp(x - m) / s
        tl.store(out_ptr + base + offs.to(tl.int64) * inner, y, mask=mask)

    @triton.jit
    def copy(out_ptr, x_ptr, m_ptr, s_ptr, count_ptr, flag_ptr, row_ptr, n, inner, chunks,
             CHUNK: tl.constexpr, PIECES: tl.constexpr):
        # the same programs with no statistics and no wait: what this shape of program can move
        pid = tl.program_id(0).to(tl.int64)
        row = pid // chunks
        piece = pid % chunks
        base = (row // inner) * n * inner + row % inner
        offs = piece * CHUNK + tl.arange(0, CHUNK)
        mask = offs < n
        x = tl.load(x_ptr + base + offs.to(tl.int64) * inner, mask=mask, other=0.0)
        tl.store(out_ptr + base + offs.to(tl.int64) * inner, x, mask=mask)

    @triton.jit
    def pipelined(out_ptr, x_ptr, m_ptr, s_ptr, count_ptr, n, chunks, rows, groups,
                  CHUNK: tl.constexpr, PIECES: tl.constexpr):
        # Persistent: `groups` groups of `chunks` programs, all resident; group g takes rows g, g + groups, ...
        # and program j of a group always piece j. After publishing a row's piece statistics a program does
        # not wait: it reads its piece of the group's next row and publishes that first, then waits for the
        # first row (whose other pieces have had that read's time to arrive) and writes it. Two pieces are
        # held at once; the read stream never stops for a row's wait.
        pid = tl.program_id(0)
        piece = pid % chunks
        row = (pid // chunks).to(tl.int64)
        offs = piece * CHUNK + tl.arange(0, CHUNK)
        mask = offs < n
        idx = tl.arange(0, PIECES)
        live = idx < chunks
        x = tl.load(x_ptr + row * n + offs, mask=mask, other=float("-inf")).to(tl.float32)  # groups <= rows
        m = tl.max(x, axis=0)
        s = tl.sum(tl.where(mask, tl.exp(x - m), 0.0), axis=0)
        tl.store(m_ptr + row * chunks + piece, m)
        tl.store(s_ptr + row * chunks + piece, s)
        tl.debug_barrier()
        tl.atomic_add(count_ptr + row, 1, sem="release")
        while row < rows:
            nxt = row + groups
            more = nxt < rows
            ahead = offs < tl.where(more, n, 0)  # no next row: nothing read
            x_next = tl.load(x_ptr + nxt * n + offs, mask=ahead, other=float("-inf")).to(tl.float32)
            m_next = tl.max(x_next, axis=0)
            s_next = tl.sum(tl.where(mask, tl.exp(x_next - m_next), 0.0), axis=0)
            if more:
                tl.store(m_ptr + nxt * chunks + piece, m_next)
                tl.store(s_ptr + nxt * chunks + piece, s_next)
                tl.debug_barrier()
                tl.atomic_add(count_ptr + nxt, 1, sem="release")
            seen = tl.atomic_add(count_ptr + row, 0, sem="acquire")
            while seen < chunks:
                seen = tl.atomic_add(count_ptr + row, 0, sem="acquire")
            tl.debug_barrier()
            pm = tl.load(m_ptr + row * chunks + idx, mask=live, other=float("-inf"), cache_modifier=".cg")
            ps = tl.load(s_ptr + row * chunks + idx, mask=live, other=0.0, cache_modifier=".cg")
            row_m = tl.max(pm, axis=0)
            row_s = tl.sum(tl.where(live, ps * tl.exp(pm - row_m), 0.0), axis=0)
            tl.store(out_ptr + row * n + offs, tl.exp(x - row_m) / row_s, mask=mask)
            x = x_next
            row = nxt

    return {"regs": regs, "reread": reread, "reread_last": reread_last, "copy": copy, "template": _template(),
            "pipelined": pipelined, "fused": _template(("own", "merge")), "fused_merge": _template(("merge",))}


def _resident_groups(compiled, warps: int, chunks: int, sms: int) -> int:
    """How many groups of `chunks` programs of `compiled` are all resident at once (H200: 64K registers,
    64 warps, 32 programs and 227 KB of shared memory an SM; registers allocated 256 a warp at a time)."""
    per_warp = -(-compiled.n_regs * 32 // 256) * 256
    per_sm = min(65536 // (per_warp * warps), 64 // warps, 32,
                 (227 * 1024) // max(compiled.metadata.shared, 1))
    return max(1, per_sm * sms // chunks)


# Each block reduction of the one-read kernel is a pass through shared memory with its barriers (Triton 3.6's sm_90
# SASS: 15 BAR a program, 9 for the L1 norm's one statistic). A piece's (max, sum of exps) and the merge of the
# row's pieces can each be one reduction of pairs, merged as online softmax merges two blocks: 9 BAR, the same 40
# registers at CHUNK 4096 / 8 warps (64 -> 52 at 8192), but the pairs' merges take more exps (35 -> 78 MUFU).
ONLINE_MERGE = '''

@triton.jit
def online_merge(m1, s1, m2, s2):
    # two (max, sum of exp(x - max)) pairs as one; a side all -inf adds nothing
    m = tl.maximum(m1, m2)
    safe = tl.where(m == float('-inf'), 0.0, m)
    return m, s1 * tl.exp(m1 - safe) + s2 * tl.exp(m2 - safe)


'''


def fused_statistics(source: str, which: tuple[str, ...]) -> str:
    """`rows.one_read`'s softmax with its piece's statistics ("own") and the row's merge ("merge") each one
    reduction of (max, sum) pairs."""
    if "own" in which:
        own = "m = tl.max(x)\n    s = tl.sum(tl.where(mask, tl.exp(x - tl.where(m == float('-inf'), 0.0, m)), 0.0))"
        assert own in source
        source = source.replace(own, "if VEC > 1:  # x is (vectors, VEC)\n"
                                "        m, s = tl.reduce((x, tl.where(mask, 1.0, 0.0)), 1, online_merge)\n"
                                "        m, s = tl.reduce((m, s), 0, online_merge)\n"
                                "    else:\n"
                                "        m, s = tl.reduce((x, tl.where(mask, 1.0, 0.0)), 0, online_merge)")
    if "merge" in which:  # in both of the template's merges (LAST_MERGES 0 and 1), at their indentation
        merge = re.compile(r"^( +)m = tl\.max\(pm, axis=0\)\n +s = tl\.sum\(tl\.where\(live, ps \* tl\.exp\(pm - m\), "
                           r"0\.0\), axis=0\)$", re.M)
        source, found = merge.subn(r"\1m, s = tl.reduce((pm, tl.where(live, ps, 0.0)), 0, online_merge)", source)
        assert found == 2, found
    at = source.index("@triton.jit\ndef one_read_kernel")
    return source[:at] + ONLINE_MERGE.lstrip("\n") + source[at:]


def _template(fused: tuple[str, ...] = ()):
    """`rows.one_read`'s kernel as kernelopt writes it now (one exp a value, the wait polling with plain
    loads, then one acquire), taking the probe's arguments; `fused`: its reductions fused (fused_statistics)."""
    import importlib.util
    import tempfile
    from pathlib import Path

    from kernelopt.offline.moves import rows

    path = Path(tempfile.mkdtemp()) / "one_read_template.py"
    path.write_text(fused_statistics(rows.one_read("softmax", 1, ("x",)), fused) if fused
                    else rows.one_read("softmax", 1, ("x",)))
    spec = importlib.util.spec_from_file_location("one_read_template", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = module.one_read_kernel

    class Launch:
        def __getitem__(self, grid):
            def launch(out, x, m, s, count, flag, row_stats, n, inner, chunks, **knobs):
                # `flag` and `row_stats` stand in for LAST_MERGES's flag and row statistics (not read: LAST=False)
                return kernel[grid](out, x, m, s, count, flag, row_stats, n, inner, chunks, **knobs, VEC=1,
                                    LAST=False)
            return launch

    return Launch()


def _time(fn, reps: int = 15) -> float:
    import torch

    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def one(variant: str, chunk: int, warps: int) -> None:
    import torch
    import triton

    torch.manual_seed(0)
    x = torch.randn(ROWS, N, device="cuda")
    out = torch.empty_like(x)
    chunks = triton.cdiv(N, max(chunk, 1))
    pieces = triton.next_power_of_2(chunks)
    m = torch.empty((ROWS, chunks), device="cuda")
    s = torch.empty((ROWS, chunks), device="cuda")
    count = torch.zeros((ROWS,), device="cuda", dtype=torch.int32)
    flag = torch.zeros((ROWS,), device="cuda", dtype=torch.int32)
    row_stats = torch.empty((ROWS * 2,), device="cuda")
    regs = "-"
    if variant == "clone":
        fn = x.clone
    elif variant == "torch":
        fn = lambda: torch.softmax(x, dim=1)  # noqa: E731
    elif variant == "pipelined":
        kernel = _kernels()[variant]
        # one group first (always resident, so it cannot wait forever): the compile, and its registers
        compiled = kernel[(chunks,)](out, x, m, s, count.zero_(), N, chunks, ROWS, 1, CHUNK=chunk, PIECES=pieces,
                                     num_warps=warps)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        groups = min(ROWS, _resident_groups(compiled, warps, chunks, sms))

        def fn():
            count.zero_()
            return kernel[(groups * chunks,)](out, x, m, s, count, N, chunks, ROWS, groups, CHUNK=chunk,
                                              PIECES=pieces, num_warps=warps)

        regs = f"{compiled.n_regs} regs, {compiled.metadata.shared} B shared, {groups} groups"
    else:
        kernel = _kernels()[variant]

        def fn():
            count.zero_()
            flag.zero_()
            return kernel[(chunks * ROWS,)](out, x, m, s, count, flag, row_stats, N, 1, chunks, CHUNK=chunk,
                                            PIECES=pieces, num_warps=warps)

        compiled = fn()
        regs = f"{compiled.n_regs} regs, {compiled.metadata.shared} B shared"
    ms = _time(fn)
    err = "-"
    if variant not in ("clone", "copy"):
        got = out if variant != "torch" else fn()
        if variant != "torch":
            fn()
            torch.cuda.synchronize()
        err = f"{(got[:64] - torch.softmax(x[:64], dim=1)).abs().max().item():.2e}"
    tb = 2 * x.numel() * 4 / (ms * 1e-3) / 1e12
    print(f"{variant:12s} CHUNK {chunk:6d} warps {warps:2d} pieces {chunks:4d}: {ms:.3f} ms {tb:.2f} TB/s "
          f"({regs}; max err {err})", flush=True)


# session 20 ran the first fourteen (benchmarks/h200/probes/softmax_probe.log); `template` came after
PLAN = [("clone", 0, 0), ("torch", 0, 0), ("copy", 4096, 8), ("copy", 2048, 4), ("copy", 1024, 4),
        ("regs", 4096, 8), ("regs", 2048, 4), ("regs", 1024, 2), ("reread", 4096, 8), ("reread", 2048, 4),
        ("reread", 8192, 8), ("reread_last", 4096, 8), ("reread_last", 2048, 4), ("reread_last", 1024, 4),
        ("template", 4096, 8), ("template", 8192, 8), ("template", 4096, 4),
        ("pipelined", 4096, 8), ("pipelined", 2048, 4), ("pipelined", 4096, 4), ("pipelined", 8192, 8),
        ("fused", 4096, 8), ("fused", 8192, 8), ("fused_merge", 4096, 8)]


def main(argv: list[str]) -> int:
    if argv:
        one(argv[0], int(argv[1]), int(argv[2]))
        return 0
    for variant, chunk, warps in PLAN:
        try:
            done = subprocess.run([sys.executable, __file__, variant, str(chunk), str(warps)], timeout=60,
                                  capture_output=True, text=True)
            lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
            print(lines[-1] if done.returncode == 0 else f"{variant} {chunk} {warps}: rc {done.returncode}: "
                  + " | ".join(lines[-3:]), flush=True)
        except subprocess.TimeoutExpired:
            print(f"{variant} CHUNK {chunk} warps {warps}: no answer in 60 s (a wait that never ended?)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
