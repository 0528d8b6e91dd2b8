"""Which of the judger's categories (offline/judge.py) each structural move answers: a move's name after its
family's ("softmax.one_read" -> "one_read") keys its cures, and a diagnosis puts the moves that cure it first."""

from __future__ import annotations

# What each structure answers, in the judger's categories: a kernel that reads its data more than
# once ("memory": DRAM traffic over the minimum) wants the moves that read once; too few programs
# ("occupancy": waves under one) wants the moves that split the work.
CURES: dict[str, tuple[str, ...]] = {
    "rows_in_registers": ("memory", "latency"),
    "one_read": ("memory",),
    "looped_online": ("memory", "latency"),
    "looped_resident": ("memory", "latency"),  # the second pass from L2: reads the rows from memory once
    "split_row": ("occupancy",),
    "grouped": ("memory", "other"),
    "split_k": ("occupancy",),
    "persistent": ("occupancy", "latency", "other"),
    "tma": ("memory", "latency", "occupancy", "compute", "other"),  # whole tiles by TMA: no address registers
    "columns": ("memory", "latency", "occupancy"),
    "streaming": ("memory", "latency", "other"),
    "tiled": ("memory", "latency", "occupancy", "other"),
    "flat": ("memory", "latency", "occupancy", "other"),
    "interior": ("memory", "latency", "compute", "other"),  # tiled, its tiles inside the input read with no mask
    "rolling": ("memory", "latency", "other"),  # a window's row reductions carried: KW loads an output, not KH x KW
    "sliding": ("memory", "latency", "other"),  # a running sum, or a max by segment scans: 2 loads an output, not KW
    "tf32x3": ("compute",),  # fp32 products moved from the CUDA cores to the tensor cores
    "f16x3": ("compute",),  # fp32 products as three fp16 products of tiles split in registers
    "grouped_tf32x3": ("compute", "memory", "other"),
    "persistent_tf32x3": ("compute", "occupancy", "latency", "other"),
    "split_k_tf32x3": ("compute", "occupancy"),
    "k_major_tf32x3": ("compute", "memory", "other"),  # operands copied K-major: no tile transposed per K step
    "k_major_split_k_tf32x3": ("compute", "occupancy", "memory", "other"),  # the same, then K split over the SMs
    "split_tf32": ("compute", "memory", "other"),  # operands split once: three plain TF32 products a step
    "split_f16": ("compute", "memory", "other"),  # rows scaled into fp16's range, split once: three fp16 products
    "split_f16_tma": ("compute", "memory", "latency", "other"),  # the same, its tiles loaded whole by TMA
    "split_f16_regs": ("compute", "memory", "other"),  # the same, the larger operand split in registers instead
    # each K step's tiles scaled and split in registers: three fp16 products with no pass over the operands first,
    # but each tile split again for every output tile it meets. Not a cure for "memory": on the H200 they lost to
    # the operands split once at both shapes measured (6: 1.85 against 1.04 ms; 3: 7.30 against 2.69; RESULTS (ap))
    "split_k_f16x3": ("compute", "occupancy"),
    # B split once, A's tiles split where wgmma reads them: no operand written back to shared memory a step. Not a
    # cure for "memory": on the H100 its product barely beat the K-major copy's (6: 0.74 against 0.76 ms) and its
    # split pass wrote twice the copy's bytes (0.59 against 0.37 ms): 1.41 against 1.19 ms in all (RESULTS (bi))
    "split_k_parts": ("compute", "occupancy"),
    "batched_f16x3": ("compute",),
    "aligned": ("memory", "other"),  # rows no multiple of 16 elements: tiles gathered element by element
    "aligned_tf32x3": ("compute", "memory", "other"),
    "batched": ("memory", "other"),
    "rows": ("memory", "latency", "occupancy", "other"),
    "batched_tf32x3": ("compute", "memory", "other"),
    "implicit_gemm": ("memory", "latency", "other"),
    "implicit_gemm_tf32x3": ("compute", "memory", "other"),
    "implicit_gemm_f16x3": ("compute", "memory", "other"),
    "conv_split_f16": ("compute", "memory", "other"),  # a seed's convolution on operands split once (conv.split_f16's)
    "conv_split_tf32": ("compute", "memory", "other"),  # a seed's convolution on TF32 parts (conv.split_tf32's)
    "conv_epilogue": ("memory", "other", "latency"),  # a seed's pointwise kernel computed in its convolution's store
    "conv_rows": ("memory", "other", "latency"),  # a seed's reduction over the channels in its convolution's store
    # a 1 x 1 convolution as a product of contiguous rows: no gathered offsets, no masks inside the tensor
    "pointwise": ("memory", "latency", "compute", "other"),
    "pointwise_split": ("compute", "memory", "other"),
    "pointwise_tf32x3": ("compute", "memory", "other"),
    "pointwise_f16x3": ("compute", "memory", "other"),
    "depthwise": ("memory", "latency", "occupancy", "compute", "other"),  # a stencil, not a GEMM of one column
    # few input channels a group: each tap's inputs loaded once for all a group's outputs, no K columns gathered
    "direct": ("compute", "memory", "latency", "other"),
    # each input row loaded once a strip, into the running sums of the KH output rows it feeds: KW loads an output
    "depthwise_rows": ("memory", "latency", "compute", "other"),
    # a depthwise convolution and the 1 x 1 convolution of its output in one kernel: the intermediate never written
    "fused": ("memory", "latency", "compute", "other"),
    "fused_f16x3": ("compute", "memory", "latency", "other"),
    # the pair as two kernels, each at its best: the rows stencil, then the 1 x 1 product at the seed's precision, or
    # split in registers for fp32
    "two_pass": ("memory", "latency", "compute", "other"),
    "two_pass_f16x3": ("compute", "memory", "latency", "other"),
    "two_pass_pointwise": ("memory", "latency", "compute", "other"),  # the same, the product per sample
    # a row's pieces walked twice by one kernel, the second walk from L2 (standardize_l2.py)
    "l2_pieces": ("memory", "latency", "other"),
    # BatchNorm's channels as pieces of planes: a channel per program (the seed's) leaves SMs idle
    "split": ("occupancy", "memory", "latency", "other"),
}
