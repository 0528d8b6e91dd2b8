#!/bin/bash
# The second planned H200 call (written in session 35, no GPU lent): the convolution moves of session 35, none of
# them yet run on a GPU, in one call of 600 s. Run after next_call.sh (either order works; they share nothing).
#
#   device:        run(command="bash benchmarks/h200/next_call2.sh", carry=[".whl", ".gpu"], timeout_s=600)
#
# 1. conv.split_f16 at KernelBench 55's size (615 GFLOP) beside the 3xTF32 implicit GEMM, and every move of the two
#    small convolutions (tests/data/moves/conv2d.py, conv_depthwise.py: conv.depthwise's first GPU compile).
# 2. dot.conv_split_f16 on level 2's convolution seed at full size beside its 3xTF32 and in-register rewrites; the
#    seed of a strided, grouped transposed 3-D convolution (the phased path's first GPU run).
# 3. 55 and 82 (benchmarks/kernelbench/families) from nothing, offline, three rounds: what the split and the
#    depthwise stencil do against torch.compile (cuDNN at TF32 by PyTorch's default; the report gives both).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD KERNELOPT_RUNS_DIR=/tmp/kruns
began=$(date +%s)
elapsed() { echo $(( $(date +%s) - began )); }
timeout 240 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=8 --timeout 200 tests/test_moves_gpu.py \
  -k "split_convolution or (every_move and conv)" > "$OUT/test_moves_gpu_conv.log" 2>&1
echo "[test_moves_gpu conv: rc $? at $(elapsed) s]" | tee -a "$OUT/test_moves_gpu_conv.log"
timeout 220 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=8 --timeout 140 tests/test_seed_gpu.py \
  -k "convolution_on_split_parts or (made_cached and conv_transpose3d)" > "$OUT/test_seed_gpu_conv.log" 2>&1
echo "[test_seed_gpu conv: rc $? at $(elapsed) s]" | tee -a "$OUT/test_seed_gpu_conv.log"
mkdir -p /tmp/fconv && cp benchmarks/kernelbench/families/{55,82}_conv_*.py /tmp/fconv/
left=$(( 585 - $(elapsed) ))
[ "$left" -gt 120 ] && KEEP_S=100 bash benchmarks/h200/suite_pass.sh fconv "$left" /tmp/fconv --optimize --max-rounds 3 \
  --no-max-autotune --max-wall-s 150
echo "[next_call2: $(elapsed) s]"
