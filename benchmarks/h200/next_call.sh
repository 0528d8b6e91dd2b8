#!/bin/bash
# The next planned H200 call, kept in the repository (a new checkout loses the git-ignored .gpu/): rewrite it after
# each call, and quote it in RESULTS.md with what it returned. Now (session 36): the depthwise stencil with its taps
# unrolled, and the public depthwise problems from nothing, in one call of 500 s (the session had 780 s of device time left).
#
#   here, first (the probe's "old" rows: the stencil before its taps were unrolled, git-ignored .gpu/dw_old.txt):
#     git show 10701fd~1:kernelopt/seed/conv.py > /tmp/old_conv.py && python -c "import runpy; \
#       open('.gpu/dw_old.txt', 'w').write(runpy.run_path('/tmp/old_conv.py')['DEPTHWISE'])"
#   device:        run(command="bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#
# 1. benchmarks/h200/depthwise_probe.py: 82's shape unpadded and padded, 85's 3 x 7 kernel; the stencil as written,
#    every tap masked, and the looped stencil before; at six tiles; against cuDNN fp32 and the floor.
# 2. The conv moves' GPU test (every move of the two small convolutions through the verifier).
# 3. 82, 85 and 86 (benchmarks/kernelbench/families) from nothing, offline, three rounds: the stencil alone, with a
#    3 x 7 kernel, and beside a 1 x 1 convolution (86's seed: the stencil, then the implicit GEMM and its split).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD KERNELOPT_RUNS_DIR=/tmp/kruns
began=$(date +%s)
elapsed() { echo $(( $(date +%s) - began )); }
old=()
[ -f .gpu/dw_old.txt ] && old=(.gpu/dw_old.txt)
timeout 150 python3 benchmarks/h200/depthwise_probe.py "${old[@]}" > "$OUT/depthwise_probe.log" 2>&1
echo "[depthwise probe: rc $? at $(elapsed) s]" | tee -a "$OUT/depthwise_probe.log"
timeout 120 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=8 --timeout 100 tests/test_moves_gpu.py \
  -k "every_move and conv" > "$OUT/test_moves_gpu_conv.log" 2>&1
echo "[test_moves_gpu conv: rc $? at $(elapsed) s]" | tee -a "$OUT/test_moves_gpu_conv.log"
mkdir -p /tmp/fdw && cp benchmarks/kernelbench/families/{82,85,86}_conv_*.py /tmp/fdw/
left=$(( 480 - $(elapsed) ))
[ "$left" -gt 120 ] && KEEP_S=100 bash benchmarks/h200/suite_pass.sh fdw "$left" /tmp/fdw --optimize --max-rounds 3 \
  --no-max-autotune --max-wall-s 120
echo "[next_call: $(elapsed) s]"
