#!/bin/bash
# The next planned H200 call, kept in the repository (a new checkout loses the git-ignored .gpu/): rewrite it after
# each call, and quote it in RESULTS.md with what it returned. Now (session 36): the depthwise stencil with its
# taps unrolled, public depthwise problems from nothing, and c3's one-read row norms again, in a box of 480 s (690 s
# of device time left after two failed starts).
#
#   here, first:
#     bash benchmarks/h200/redo_rows.sh c3 38_ 39_      # .gpu/c3.tgz without 38 and 39, and .gpu/c3.redo
#     git show 10701fd~1:kernelopt/seed/conv.py > /tmp/old_conv.py && python -c "import runpy; \
#       open('.gpu/dw_old.txt', 'w').write(runpy.run_path('/tmp/old_conv.py')['DEPTHWISE'])"   # the probe's "old"
#   device:
#     run(command="bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#
# 1. benchmarks/h200/depthwise_probe.py: 82's shape unpadded and padded, 85's 3 x 7 kernel; the stencil as written,
#    every tap masked, and the looped stencil before; at four tiles; against cuDNN fp32 and the floor.
# 2. 82 and 86 (benchmarks/kernelbench/families) from nothing, offline, three rounds: the stencil alone, and beside a
#    1 x 1 convolution (86's seed: the helper's stencil, then the implicit GEMM and its split).
# 3. In what is left, c3's 38_L1Norm_ and 39_L2Norm_ again: last run in session 33, before session 34's one-read
#    launch; this session's first call timed that launch at 38's shape at 4.479 ms (CHUNK 8192, 8 warps) where the row holds 4.740 ms.
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD KERNELOPT_RUNS_DIR=/tmp/kruns
began=$(date +%s)
elapsed() { echo $(( $(date +%s) - began )); }
old=()
[ -f .gpu/dw_old.txt ] && old=(.gpu/dw_old.txt)
# TEST_K="EXPR": tests/test_moves_gpu.py's tests matching EXPR first (none by default)
if [ -n "${TEST_K:-}" ]; then
  timeout 120 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --timeout 100 tests/test_moves_gpu.py -k "$TEST_K" \
    > "$OUT/test_moves_gpu.log" 2>&1
  echo "[test_moves_gpu: rc $? at $(elapsed) s]" | tee -a "$OUT/test_moves_gpu.log"
fi
# PROBE_S, FDW="82", FDW_S: a shorter call (the probe's seconds, 0 for none; the problems' numbers in
# benchmarks/kernelbench/families and the seconds they get, 0 for none)
if [ "${PROBE_S:-100}" -gt 0 ]; then
  timeout "${PROBE_S:-100}" python3 benchmarks/h200/depthwise_probe.py "${old[@]}" > "$OUT/depthwise_probe.log" 2>&1
  echo "[depthwise probe: rc $? at $(elapsed) s]" | tee -a "$OUT/depthwise_probe.log"
fi
mkdir -p /tmp/fdw && for n in ${FDW:-82 86}; do cp benchmarks/kernelbench/families/${n}_conv_*.py /tmp/fdw/; done
[ "${FDW_S:-250}" -gt 0 ] && KEEP_S=100 bash benchmarks/h200/suite_pass.sh fdw "${FDW_S:-250}" /tmp/fdw --optimize \
  --max-rounds 3 --no-max-autotune --max-wall-s 120
left=$(( 470 - $(elapsed) ))
# SKIP_C3=1 on another card than the H200 (c3's rows are the H200's)
[ "${SKIP_C3:-0}" = 1 ] || { [ "$left" -gt 115 ] && KEEP_S=110 bash benchmarks/h200/suite_pass.sh c3 "$left"; }
echo "[next_call: $(elapsed) s]"
