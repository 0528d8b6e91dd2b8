#!/bin/bash
# session 49, call 3: conv.pointwise's GPU tests and the 3-D pools' (never run on a GPU), then on an H100 the outside
# pass's 87 redone from nothing (on an H200 c3's rows), then test_seed_gpu's cases the first call's box cut
PART=none source benchmarks/h200/next_call.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
timeout 140 bash benchmarks/h200/gpu_tests.sh "test_moves_gpu:conv_pointwise or pointwise_convolution or 3d_pools or pool3d or separable"
if h200; then BOX=$(( $(elapsed) + 250 )) redo c3 250
else BOX=$(( $(elapsed) + 190 )) outside h100 outside 150; fi
if ! h200; then  # 86's pair kernel by kernel: the stencil, then the product per sample (H100: 2.476 ms, rows_h100)
  PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/h200/kernel_times.py \
    benchmarks/kernelbench/families/86_conv_depthwise_separable_2D.py --move separable.two_pass --configs 3 \
    > "$OUT/times86.md" 2>&1
fi
left=$(( ${TOTAL:-585} - $(elapsed) ))
[ $left -gt 40 ] && timeout $left bash benchmarks/h200/gpu_tests.sh "test_seed_gpu:rows_instance_norm or attention or neither"
echo "[call3: $(elapsed) s]"
