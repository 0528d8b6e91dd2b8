#!/bin/bash
# The next planned H200 call, kept in the repository (a new checkout loses the git-ignored .gpu/): rewrite it after
# each call, and quote it in RESULTS.md with what it returned. Now (written in session 34, no GPU lent): what
# sessions 33 and 34 changed and nothing has timed, in one call of 600 s.
#
#   here, first:   bash benchmarks/h200/redo_rows.sh c3 35_        # .gpu/c3.tgz without 35, and .gpu/c3.redo
#   device:        run(command="bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#
# In the order run: 2, 1, 3, 4; each later step only where the box has room for it.
# 1. 682815c's and 8eefbbd's 32-bit offsets in the row templates (registers from Triton 3.6's cubins, RESULTS.md
#    (aq)): the one-read L1 norm on rows off a boundary and aligned, the in-register rows both ways, softmax's one
#    read at CHUNK 4096 and 8192 (its best, 3.74 ms at 4096 / 8 warps, kept its 40 registers), and with its
#    reductions of (max, sum) pairs fused (softmax_probe.py `fused`, `fused_merge`: 15 -> 9 barriers a program).
# 2. The one-read launch reading its compiled kernel (moves/resident.py, session 34; every one-read row takes it):
#    the long-row softmax through the verifier, and 35 at full size with more pieces than SMs, its launch checked
#    to take the one-read kernel, verified and timed (tests/test_moves_gpu.py).
# 3. c3's 35_GroupNorm_ again (redo_rows.sh above): the planner now offers one_read at 512 pieces of 4096, and every
#    standardize template takes a weight a block on GroupNorm's planes.
# 4. 97_ScaledDotProductAttention from nothing (85bd817's share of outliers in the wide cases, never run on a GPU).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD KERNELOPT_RUNS_DIR=/tmp/kruns
began=$(date +%s)
elapsed() { echo $(( $(date +%s) - began )); }
# 2 first: every one-read row's launch now goes through resident_programs, never yet run on a GPU
timeout 300 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=8 --timeout 200 tests/test_moves_gpu.py \
  -k "more_pieces_than_sms or one_read_and_looped" > "$OUT/test_moves_gpu.log" 2>&1
echo "[test_moves_gpu: rc $? at $(elapsed) s]" | tee -a "$OUT/test_moves_gpu.log"
{
  for a in "product 65535 8192 8" "product 65535 4096 8" "template 65536 4096 8" "template 65536 8192 8" \
           "registers 4095 4 0" "registers_v1 4095 4 0" "registers 1023 8 0" "registers_v1 1023 8 0"; do
    [ "$(elapsed)" -lt 400 ] && timeout 60 python3 benchmarks/h200/rownorm_probe.py $a
  done
  for a in "template 4096 8" "fused 4096 8" "fused_merge 4096 8" "template 8192 8" "fused 8192 8" "template 4096 4"; do
    [ "$(elapsed)" -lt 420 ] && timeout 60 python3 benchmarks/h200/softmax_probe.py $a
  done
} > "$OUT/probes.log" 2>&1
echo "[probes: done at $(elapsed) s]" | tee -a "$OUT/probes.log"
# 3, then 4, in what is left (35 took about 150 s in pass c3; 97's seed alone about 100 s)
left=$(( 575 - $(elapsed) ))
[ "$left" -gt 170 ] && KEEP_S=60 bash benchmarks/h200/suite_pass.sh c3 $(( left > 330 ? left - 160 : left ))
mkdir -p /tmp/f97 && cp benchmarks/kernelbench/families/97_ScaledDotProductAttention.py /tmp/f97/
left=$(( 580 - $(elapsed) ))
[ "$left" -gt 120 ] && bash benchmarks/h200/suite_pass.sh f97 "$left" /tmp/f97 --optimize --max-rounds 3 \
  --no-max-autotune --max-wall-s 150
echo "[next_call: $(elapsed) s]"
