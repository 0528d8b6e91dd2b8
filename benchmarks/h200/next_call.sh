#!/bin/bash
# The next planned GPU calls, kept in the repository (a new checkout loses the git-ignored .gpu/): rewrite it after
# each session, and quote it in RESULTS.md with what it returned. Now (written in session 38, after its three calls):
# the lead-launch mend (e284f0c) has run on no GPU beyond 97's split; the c3 rows that predate the one-read launch
# (session 37 lifted 38 from 75.5% to 83.5% of its floor with it) are redone; 97 and 86 from nothing on one card.
#
#   here, once:  bash benchmarks/h200/redo_rows.sh c3 23_ 24_ 34_
#   device:
#     run(command="PART=1 bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#     (copy a returned c3.tgz into .gpu/ here)
#     run(command="PART=2 bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#     run(command="PART=3 bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#
# PART=1: test_gpu, test_gpu_baselines, test_export_gpu (268 s in session 37), then on an H200 only (c3 is an H200
#         pass: an H100's rows would not compare) c3's 23, 24 and 34 again (softmax 71.7%, log-softmax 73.7% and
#         InstanceNorm 71.7% of the floor, all made by one_read before session 37's launch mend).
# PART=2: test_seed_gpu whole (452 s in session 37): every seed at full size under the lead-launch rule; on an H100
#         first test_moves_gpu's split_batch_norm (46 s on the H200), whose H100 failure left no message.
# PART=3: suite fdw3, 97 86 82 85 from nothing, offline, three rounds, 150 s each at most: 97 as the sweep finds the
#         batched split (15.96 ms at the test's tile on the H200); 86 with `separable.two_pass` (built after session
#         38's calls: the rows stencil, then the 1 x 1 product split in registers), where both fused moves lost to the
#         seed on the H100 (fdw2_h100); 82 and 85 with the rows grid led by four outputs a thread. Name the card in
#         RESULTS: fdw2 ran on an H100.
set -u
export PYTHONUNBUFFERED=1
began=$(date +%s)
elapsed() { echo $(( $(date +%s) - began )); }
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "[card: $card]" | tee "$OUT/card.txt"
case ${PART:-1} in
1)
  bash benchmarks/h200/gpu_tests.sh test_gpu test_gpu_baselines test_export_gpu
  if [[ $card == *H200* ]]; then
    KEEP_S=110 bash benchmarks/h200/suite_pass.sh c3 $(( 585 - $(elapsed) ))
  else
    echo "[c3 not resumed: $card is not the H200 the pass ran on]"
  fi ;;
2)
  # on an H100, first the batch-norm test that failed there in session 38 with its message cut (it passed on the H200)
  [[ $card == *H100* ]] && bash benchmarks/h200/gpu_tests.sh "test_moves_gpu:split_batch_norm"
  bash benchmarks/h200/gpu_tests.sh test_seed_gpu ;;
3)
  mkdir -p /tmp/fdw3
  for n in ${FDW:-97 86 82 85}; do cp benchmarks/kernelbench/families/${n}_*.py /tmp/fdw3/; done
  KEEP_S=100 bash benchmarks/h200/suite_pass.sh fdw3 $(( 585 - $(elapsed) )) /tmp/fdw3 --optimize --max-rounds 3 \
    --no-max-autotune --max-wall-s 150 ;;
esac
echo "[next_call PART=${PART:-1}: $(elapsed) s]"
