#!/bin/bash
# session 50, a short call: conv.pointwise_split on 87 and conv.split_tf32 on 55 kernel by kernel beside their rivals,
# then the new moves through the verifier on the GPU (every move of the conv test problems)
set -u
PART=none source benchmarks/h200/next_call.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
k=benchmarks/h200/kernel_times.py
p87=$(ls .gpu/outside/87_*.py)
p55=$(ls benchmarks/kernelbench/families/55_*.py)
PYTHONPATH=/tmp/site:$PWD timeout 75 python3 $k $p87 --reference --move conv.pointwise_split --configs 4 \
  > "$OUT/t87.md" 2>&1
echo "[t87: rc $? at $(elapsed) s]" | tee -a "$OUT/card.txt"
PYTHONPATH=/tmp/site:$PWD timeout 40 python3 $k $p55 --move conv.split_tf32 --configs 2 > "$OUT/t55.md" 2>&1
PYTHONPATH=/tmp/site:$PWD timeout 25 python3 $k $p55 --move conv.split_f16 --configs 1 >> "$OUT/t55.md" 2>&1
echo "[t55: rc $? at $(elapsed) s]" | tee -a "$OUT/card.txt"
left=$(( ${TOTAL:-240} - $(elapsed) ))
[ $left -gt 30 ] && timeout $left bash benchmarks/h200/gpu_tests.sh "test_moves_gpu:every_move and (conv_pointwise or conv2d)"
echo "[call3: $(elapsed) s]" | tee -a "$OUT/card.txt"
