#!/bin/bash
# Every GPU test, each file in a time box, its `pytest -v` output kept as it comes ($OUT/NAME.log):
#
#   bash benchmarks/h200/gpu_tests.sh [FILE_STEM[:EXPR] ...]    # default: every tests/test_*gpu*.py
#
# FILE_STEM:EXPR runs only that file's tests matching the pytest -k expression EXPR
# ("test_seed_gpu:tall_skinny or gelu_tanh"); its log is still $OUT/FILE_STEM.log.
#
# Run from the repository root on the device with the wheels in .whl (carry [".whl"]). A box
# that kills pytest still leaves the lines written so far (never pipe pytest through `tail`).
set -u
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD KERNELOPT_RUNS_DIR=/tmp/kruns KERNELOPT_FAILURES_NOW=1  # tracebacks as tests fail
declare -A box=([test_gpu]=400 [test_seed_gpu]=600 [test_moves_gpu]=560 [test_gpu_baselines]=110 [test_export_gpu]=90)
stems=("$@")
[ ${#stems[@]} -eq 0 ] && stems=($(ls tests/test_*gpu*.py | xargs -n1 basename | sed 's/\.py$//'))
for spec in "${stems[@]}"; do
  stem=${spec%%:*} only=()
  [ "$spec" != "$stem" ] && only=(-k "${spec#*:}")
  began=$(date +%s)
  timeout "${box[$stem]:-120}" python3 -m pytest -m gpu -v -rA -p no:cacheprovider --durations=8 --timeout 180 \
    "tests/$stem.py" "${only[@]}" > "$OUT/$stem.log" 2>&1
  echo "[$spec: rc $? in $(( $(date +%s) - began )) s]" | tee -a "$OUT/$stem.log"
done
