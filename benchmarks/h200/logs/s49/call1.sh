#!/bin/bash
# session 49, call 1: the GPU tests at HEAD, the three public seeds, then on an H200 c3's rows
PART=none source benchmarks/h200/next_call.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl 2>/dev/null
bash benchmarks/h200/gpu_tests.sh test_gpu
for p in .gpu/seeds/*.py; do
  n=$(basename $p .py); b=$(date +%s)
  PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m kernelopt.seed $p /tmp/seed_$n.py > "$OUT/seed_$n.log" 2>&1
  echo "[seed $n: rc $? in $(( $(date +%s) - b )) s]" | tee -a "$OUT/seed_$n.log"
  cp /tmp/seed_$n.py "$OUT/" 2>/dev/null
done
(cd $OUT && tar czf seeds.tgz seed_* && rm -f seed_*)
if h200; then redo c3 $(( ${BOX:-585} - $(elapsed) ))
else timeout $(( 585 - $(elapsed) )) bash benchmarks/h200/gpu_tests.sh "test_seed_gpu:the_seed_is_made"; fi
echo "[call1: $(elapsed) s]"
