#!/bin/bash
# session 50, call 2: conv.pointwise_split on 87 kernel by kernel beside cuDNN, 87 redone in the outside pass (H100;
# on an H200 c3's rows), conv.split_tf32 on 55 beside split_f16, then the moves' GPU tests of the new moves
set -u
PART=none source benchmarks/h200/next_call.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
k=benchmarks/h200/kernel_times.py
p87=$(ls .gpu/outside/87_*.py)
p55=$(ls benchmarks/kernelbench/families/55_*.py)
PYTHONPATH=/tmp/site:$PWD timeout 90 python3 $k $p87 --reference --move conv.pointwise_split --configs 6 \
  > "$OUT/t87.md" 2>&1
echo "[t87: rc $? at $(elapsed) s]" | tee -a "$OUT/card.txt"
[[ ${card:-} == *H200* ]] || { BOX=$(( $(elapsed) + 180 )) outside h100 outside 150; }
[[ ${card:-} == *H200* ]] && redo c3 200
echo "[pass: at $(elapsed) s]" | tee -a "$OUT/card.txt"
PYTHONPATH=/tmp/site:$PWD timeout 40 python3 $k $p55 --move conv.split_tf32 --configs 2 > "$OUT/t55.md" 2>&1
PYTHONPATH=/tmp/site:$PWD timeout 25 python3 $k $p55 --move conv.split_f16 --configs 1 >> "$OUT/t55.md" 2>&1
echo "[t55: rc $? at $(elapsed) s]" | tee -a "$OUT/card.txt"
timeout $(( ${TOTAL:-580} - $(elapsed) )) bash benchmarks/h200/gpu_tests.sh \
  "test_moves_gpu:(every_move and (conv_pointwise or conv2d)) or pointwise_convolution"
echo "[call2: $(elapsed) s]" | tee -a "$OUT/card.txt"
