"""The matmul family's tensor-descriptor (TMA) template: A @ B with the tiles loaded by Hopper's
tensor memory accelerator.

`tl.make_tensor_descriptor` builds each operand's descriptor on the device (host-side descriptors
live in `triton.tools`, outside the imports the verifier admits). A descriptor load brings a whole
tile into shared memory in one asynchronous copy, with no address arithmetic per element and no
mask: the edges past M, N or K come back as zeros, and a store clips at the edges, so any size
works. The programs are persistent (one per SM, or two), walking the tiles in GROUP_M order.

A descriptor needs one dimension of unit stride and the other's stride and the base address at a
multiple of 16 bytes. Where an operand or the output is not like that (fp16 rows of 337 elements,
a view that starts mid-row), or the GPU has no TMA (before sm_90), the same file runs the grouped
template instead, so the kernel is right for every input the verifier gives it.
"""

from __future__ import annotations

import textwrap

from kernelopt.offline.moves import matmul

_TMA = '''

@triton.jit
def matmul_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K, lda, ldb, ldc,
                      A_T: tl.constexpr, B_T: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PROGRAMS: tl.constexpr,
                      PRECISION: tl.constexpr):
    # A_T / B_T: the operand is stored transposed (its first dimension has unit stride): its
    # descriptor walks the storage as it lies and the loaded tile is transposed in registers.
    if A_T:
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[K, M], strides=[lda, 1], block_shape=[BLOCK_K, BLOCK_M])
    else:
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[lda, 1], block_shape=[BLOCK_M, BLOCK_K])
    if B_T:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[ldb, 1], block_shape=[BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[ldb, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[ldc, 1], block_shape=[BLOCK_M, BLOCK_N])
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in range(tl.program_id(0), tiles, PROGRAMS):
        pid_m, pid_n = _tile_ids(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        om = pid_m * BLOCK_M
        on = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            if A_T:
                a = a_desc.load([k, om]).T
            else:
                a = a_desc.load([om, k])
            if B_T:
                b = b_desc.load([on, k]).T
            else:
                b = b_desc.load([k, on])
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
        c_desc.store([om, on], acc.to(c_ptr.dtype.element_ty))


def _workspace(size, alignment, stream):
    # global memory for the descriptors the programs build on the device
    return torch.empty(size, device="cuda", dtype=torch.int8)


def _layout(x):
    # (stored transposed, leading stride) where a descriptor can read x, else None: a unit stride, the
    # other a multiple of 16 bytes past the rows' length (rows neither repeated nor overlapping), an aligned base
    s0, s1 = x.stride()
    if x.data_ptr() % 16:
        return None
    if s1 == 1 and s0 >= max(x.shape[1], 1) and (s0 * x.element_size()) % 16 == 0:
        return False, s0
    if s0 == 1 and s1 >= max(x.shape[0], 1) and (s1 * x.element_size()) % 16 == 0:
        return True, s1
    return None

''' + matmul.FORWARD_HEAD + '''        c = torch.empty((M, N), device=a.device, dtype=a.dtype)
        precision = "ieee" if a.dtype == torch.float32 else "tf32"
        tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
        la, lb, lc = _layout(a), _layout(b), _layout(c)
        # TMA from sm_90 on; the interpreter (a CPU tensor) emulates the descriptors
        hopper = a.device.type == "cpu" or torch.cuda.get_device_capability(a.device)[0] >= 9
        if la is None or lb is None or lc is None or lc[0] or not hopper:
''' + textwrap.indent(matmul.GROUPED_LAUNCH, "    ") + '''            return c
        triton.set_allocator(_workspace)
        matmul_tma_kernel[(min(PROGRAMS, tiles),)](
            a, b, c, M, N, K, la[1], lb[1], lc[1], A_T=la[0], B_T=lb[0], BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
            BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, PROGRAMS=PROGRAMS, PRECISION=precision, num_warps=8, num_stages=3)
        return c
'''


def tma(params: tuple[str, ...], operands: tuple[int, ...], transposed: tuple[bool, ...], programs: int) -> str:
    """A persistent matmul whose tiles TMA loads and stores through device-side tensor descriptors;
    the grouped template where an operand cannot be described (or the GPU has no TMA)."""
    grouped = matmul.grouped(params, operands, transposed)
    head, _ = grouped.split("\nclass ModelNew", 1)
    body = matmul.filled(_TMA, params, operands, transposed)
    what = f"TMA tiles, persistent over {programs} programs (grouped where TMA cannot read the operands)"
    head = head.replace("grouped (GROUP_M) program order", what, 1)
    return head.replace("GROUP_M = 8\n", f"GROUP_M = 8\nPROGRAMS = {programs}\n", 1).rstrip() + "\n" + body
