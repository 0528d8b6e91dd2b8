#!/bin/bash
# The next planned H200 call, kept in the repository (a new checkout loses the git-ignored .gpu/): rewrite it after
# each call, and quote it in RESULTS.md with what it returned. Now (written in session 36, whose GPU time ran out in
# failed starts): this session's convolution and stencil work, none of it yet run on a GPU, in one call of 600 s.
#
#   here, first (the probe's "old" rows: the stencil before its taps were unrolled, git-ignored .gpu/dw_old.txt):
#     git show 10701fd~1:kernelopt/seed/conv.py > /tmp/old_conv.py && python -c "import runpy; \
#       open('.gpu/dw_old.txt', 'w').write(runpy.run_path('/tmp/old_conv.py')['DEPTHWISE'])"
#   device:
#     run(command="bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#   then, a second call (c3's rows the one-read launch and one output a thread may raise):
#     bash benchmarks/h200/redo_rows.sh c3 38_ 39_ 41_      # here: .gpu/c3.tgz and .gpu/c3.redo
#     run(command="KEEP_S=110 bash benchmarks/h200/suite_pass.sh c3 560", carry=[".whl", ".gpu"], timeout_s=600)
#
# 1. tests/test_moves_gpu.py -k "split_convolution or (every_move and conv)": the split convolution at 55's size with
#    its fp16 parts channels last and as the input lies (7.45 ms in session 36: in sm_90 TTGIR the channels-last
#    input tile loads as pipelined 16-byte copies); every conv move of the two small problems (the unrolled stencil).
# 2. benchmarks/h200/depthwise_probe.py: 82's shape unpadded and padded; the stencil as written at six tiles (three of
#    one output a thread), every tap masked and the looped stencil at two; against cuDNN fp32 and the floor.
# 3. 82, 86 and 55 (benchmarks/kernelbench/families) from nothing, offline, three rounds (82 held 1.449 ms, 55
#    7.451 ms in session 36's first pass).
# Switches: TEST_K (the test expression; "" for none), PROBE_S (0: no probe), FDW ("82 86 55"), FDW_S (0: none).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD KERNELOPT_RUNS_DIR=/tmp/kruns
began=$(date +%s)
elapsed() { echo $(( $(date +%s) - began )); }
test_k=${TEST_K-split_convolution or (every_move and conv)}
if [ -n "$test_k" ]; then
  timeout 150 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --timeout 120 tests/test_moves_gpu.py -k "$test_k" \
    > "$OUT/test_moves_gpu.log" 2>&1
  echo "[test_moves_gpu: rc $? at $(elapsed) s]" | tee -a "$OUT/test_moves_gpu.log"
fi
old=()
[ -f .gpu/dw_old.txt ] && old=(.gpu/dw_old.txt)
if [ "${PROBE_S:-90}" -gt 0 ]; then
  timeout "${PROBE_S:-90}" python3 benchmarks/h200/depthwise_probe.py "${old[@]}" > "$OUT/depthwise_probe.log" 2>&1
  echo "[depthwise probe: rc $? at $(elapsed) s]" | tee -a "$OUT/depthwise_probe.log"
fi
mkdir -p /tmp/fdw && for n in ${FDW:-82 86 55}; do cp benchmarks/kernelbench/families/${n}_conv_*.py /tmp/fdw/; done
fdw_s=${FDW_S:-$(( 585 - $(elapsed) ))}
[ "$fdw_s" -gt 100 ] && KEEP_S=100 bash benchmarks/h200/suite_pass.sh fdw "$fdw_s" /tmp/fdw --optimize --max-rounds 3 \
  --no-max-autotune --max-wall-s 150
echo "[next_call: $(elapsed) s]"
