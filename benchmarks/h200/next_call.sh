#!/bin/bash
# The next planned GPU calls, kept in the repository (a new checkout loses the git-ignored .gpu/): rewrite it after
# each session, and quote it in RESULTS.md with what it returned. Now (written in session 38, after its three calls):
# the lead-launch mend (e284f0c) has run on no GPU beyond 97's split; c3l2's GEMM rows that never took the fp16 split
# and c3's rows that predate the one-read launch mend are redone; the families' new moves run from nothing.
#
#   here, once:  bash benchmarks/h200/redo_rows.sh c3l2 1_ 9_ 14_ 29_ 33_ 40_ 76_ 99_
#                bash benchmarks/h200/redo_rows.sh c3 23_ 24_ 34_
#   device (copy each returned c3l2.tgz, c3.tgz or fdw3.tgz into .gpu/ here before the next call):
#     run(command="PART=1 bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#     run(command="PART=2 bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#     run(command="PART=3 bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#
# c3 and c3l2 are H200 passes: their rows are redone only on an H200 (an H100's would not compare); on an H100 the
# calls run suite fdw3 instead.
# PART=1: test_gpu, test_gpu_baselines, test_export_gpu (268 s in session 37); then on an H200 c3l2's seven GEMM rows
#         that still hold the seed at 3xTF32 (1.42-1.50 ms, 28-29% of the floor): dot.split_f16 took 76's seed to
#         0.931 ms and 99's to 0.972 in session 29's test, and 12 and 45 to 2.84x and 2.53x torch.compile in a pass,
#         but these rows were never run again; and 1_Conv2D_ReLU_BiasAdd (6.77 ms at 3xTF32, 13.4% of the floor),
#         which predates `dot.conv_split_f16` (55's convolution: 1.84x the 3xTF32 implicit GEMM). On an H100, fdw3.
# PART=2: on an H100 first test_moves_gpu's split_batch_norm (46 s on the H200), whose H100 failure left no message;
#         then test_seed_gpu whole (452 s in session 37): every seed at full size under the lead-launch rule.
# PART=3: on an H200 c3l2 resumed, then c3's 23, 24 and 34 (softmax 71.7%, log-softmax 73.7%, InstanceNorm 71.7% of the
#         floor, made by one_read before session 37's launch mend, which lifted 38 from 75.5% to 83.5%). On an H100,
#         fdw3 resumed.
# fdw3: 97 86 82 85 from nothing, offline, three rounds, 150 s each at most: 97 as the sweep finds the batched split
#       (15.96 ms at the test's tile on the H200); 86 with `separable.two_pass` (the rows stencil, then the 1 x 1
#       product split in registers), where both fused moves lost to the seed on the H100 (fdw2_h100); 82 and 85 with
#       the rows grid led by four outputs a thread. Name the card in RESULTS.
set -u
export PYTHONUNBUFFERED=1
began=$(date +%s)
elapsed() { echo $(( $(date +%s) - began )); }
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "[card: $card]" | tee "$OUT/card.txt"
fdw3() {
  mkdir -p /tmp/fdw3
  for n in ${FDW:-97 86 82 85}; do cp benchmarks/kernelbench/families/${n}_*.py /tmp/fdw3/; done
  KEEP_S=100 bash benchmarks/h200/suite_pass.sh fdw3 $(( 585 - $(elapsed) )) /tmp/fdw3 --optimize --max-rounds 3 \
    --no-max-autotune --max-wall-s 150
}
h200() { [[ $card == *H200* ]]; }
redo() {  # a pass's rows again, where redo_rows.sh left its marker here (without it the finished pass is resumed: nothing)
  if [ -f ".gpu/$1.redo" ]; then KEEP_S=110 bash benchmarks/h200/suite_pass.sh "$1" "$2"
  else echo "[$1: no .gpu/$1.redo: run benchmarks/h200/redo_rows.sh here first, as the header says]" | tee -a "$OUT/card.txt"
       return 1; fi
}
case ${PART:-1} in
1)
  bash benchmarks/h200/gpu_tests.sh test_gpu test_gpu_baselines test_export_gpu
  if h200; then redo c3l2 $(( 585 - $(elapsed) )) || fdw3; else fdw3; fi ;;
2)
  h200 || bash benchmarks/h200/gpu_tests.sh "test_moves_gpu:split_batch_norm"
  bash benchmarks/h200/gpu_tests.sh test_seed_gpu ;;
3)
  if h200; then
    redo c3l2 300
    redo c3 $(( 585 - $(elapsed) )) || fdw3
  else
    fdw3
  fi ;;
esac
echo "[next_call PART=${PART:-1}: $(elapsed) s]"
