#!/bin/bash
# fuse.conv_epilogue and fuse.conv_rows on the GPU (sessions 52, 53), problem by problem: the compiler seed made here,
# then the seed, its pointwise kernel (or its reduction over the channels) fused into the convolution's store, the seed's convolution on split fp16 parts
# (dot.conv_split_f16) and that split fused, each verified (`kernelopt verify`: every derived case, the verifier's
# times) and timed kernel by kernel (kernel_times.py, no L2 flush: where the time goes).
#
#   bash benchmarks/h200/epilogue_probe.sh SECONDS PROBLEM...     # on the device, after the wheels' install
#
# Writes $OUT/epilogue.md. A problem starts only where SECONDS (counted from the script's start) leave it 60.
set -u
box=$1; shift
began=$(date +%s)
export PYTHONPATH=/tmp/site:$PWD
for p in "$@"; do
  [ $(( $(date +%s) - began + 60 )) -le "$box" ] || { echo "[$p: no time left]" >> "$OUT/epilogue.md"; continue; }
  n=$(basename "$p" .py) d=/tmp/epi/$(basename "$p" .py)
  mkdir -p "$d"
  echo "## $n" >> "$OUT/epilogue.md"
  if ! timeout 120 python3 -m kernelopt.seed "$p" "$d/seed.py" > "$d/seed.log" 2>&1; then
    echo "no seed:" >> "$OUT/epilogue.md"; tail -3 "$d/seed.log" >> "$OUT/epilogue.md"; continue
  fi
  python3 - "$d" >> "$OUT/epilogue.md" 2>&1 <<'PY'
import sys
from pathlib import Path

from kernelopt.offline.moves import conv_epilogue, conv_reduce, conv_split

d = Path(sys.argv[1])
seed = (d / "seed.py").read_text()
fused = None
for module in (conv_epilogue, conv_reduce):  # a pointwise kernel, else a reduction over the channels
    try:
        fused = module.rewrite(seed)
        print(f"fused by {module.NAME}")
        break
    except conv_epilogue.NotFused as why:
        print(f"{module.NAME}: not fused: {why}")
if fused is None:
    sys.exit(1)
(d / "fused.py").write_text(fused)
split = conv_split.rewrite(seed)
if split is not None:
    (d / "split.py").write_text(split)
    (d / "split_fused.py").write_text(conv_split.rewrite(fused))
PY
  for k in seed fused split split_fused; do
    [ -f "$d/$k.py" ] || continue
    echo "- $k: $(timeout 100 python3 -m kernelopt.cli verify "$p" "$d/$k.py" --json 2>&1 | python3 -c '
import json, sys
text = sys.stdin.read()
try:
    v = json.loads(text[text.index("{\n"):])
    print(v.get("accepted"), v.get("time_ms") or v.get("kernel_ms"), (v.get("reason") or "")[:160])
except Exception:
    print("no verdict:", text[-300:].replace("\n", " "))')" >> "$OUT/epilogue.md"
  done
  files=$(for k in seed fused split split_fused; do [ -f "$d/$k.py" ] && echo "--file $d/$k.py"; done)
  timeout 120 python3 benchmarks/h200/kernel_times.py "$p" --reference $files >> "$OUT/epilogue.md" 2>&1
done
