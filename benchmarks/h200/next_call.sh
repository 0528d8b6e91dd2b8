#!/bin/bash
# The next planned H200 call, kept in the repository (a new checkout loses the git-ignored .gpu/): rewrite it after
# each call, and quote it in RESULTS.md with what it returned. Now (written in session 37, after its four calls):
# session 37's CPU-built work, none of it yet run on a GPU, in one call of 600 s.
#
#   device:
#     run(command="bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#   then, a second call resuming the suite (copy the returned fdw2.tgz into .gpu/ here first):
#     run(command="TEST_SEED= TEST_MOVES= bash benchmarks/h200/next_call.sh", carry=[".whl", ".gpu"], timeout_s=600)
#   then a third (test_moves_gpu whole: session 37's fourth call cut it at its 8th test of 41):
#     run(command="bash benchmarks/h200/gpu_tests.sh test_moves_gpu", carry=[".whl", ".gpu"], timeout_s=600)
#
# 1. tests/test_seed_gpu.py -k 97_Scaled: dot.split_f16 on attention's two batched templates at 97's full size
#    (1,024 batches; the seed ran 27.06 ms, its 3xTF32 rewrite 26.26, torch.compile 24.99).
# 2. tests/test_moves_gpu.py -k "depthwise_rows or separable": the rolling-rows stencil at 82's size, its first three
#    strips, beside the tile stencil's 1 x 512 / 8 warps (1.06 ms in session 37's sweep); the fused depthwise-separable
#    pair (both precisions) on the small problem, its first GPU compile.
# 3. 86, 97, 82 and 85 from nothing (suite fdw2: fdw's state is committed, and a pass of that name would resume it),
#    offline, three rounds, 150 s each at most: the fused pair, the batched split and the rows stencil as the sweep
#    finds them (86 held 3.051 ms, 97 26.26, 82 1.059, in sessions 36 and 37).
# Switches: TEST_SEED (the test_seed_gpu expression; "" for none), TEST_MOVES (test_moves_gpu's), FDW ("86 97 82 85"),
# FDW_S (0: none).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD KERNELOPT_RUNS_DIR=/tmp/kruns
began=$(date +%s)
elapsed() { echo $(( $(date +%s) - began )); }
test_seed=${TEST_SEED-97_Scaled}
if [ -n "$test_seed" ]; then
  timeout 300 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --timeout 280 tests/test_seed_gpu.py -k "$test_seed" \
    > "$OUT/test_seed_gpu.log" 2>&1
  echo "[test_seed_gpu: rc $? at $(elapsed) s]" | tee -a "$OUT/test_seed_gpu.log"
fi
test_moves=${TEST_MOVES-depthwise_rows or separable}
if [ -n "$test_moves" ]; then
  timeout 150 python3 -m pytest -m gpu -v -rA -p no:cacheprovider --timeout 110 tests/test_moves_gpu.py \
    -k "$test_moves" > "$OUT/test_moves_gpu.log" 2>&1
  echo "[test_moves_gpu: rc $? at $(elapsed) s]" | tee -a "$OUT/test_moves_gpu.log"
fi
mkdir -p /tmp/fdw2
for n in ${FDW:-86 97 82 85}; do cp benchmarks/kernelbench/families/${n}_*.py /tmp/fdw2/; done
fdw_s=${FDW_S:-$(( 585 - $(elapsed) ))}
[ "$fdw_s" -gt 100 ] && KEEP_S=100 bash benchmarks/h200/suite_pass.sh fdw2 "$fdw_s" /tmp/fdw2 --optimize \
  --max-rounds 3 --no-max-autotune --max-wall-s 150
echo "[next_call: $(elapsed) s]"
