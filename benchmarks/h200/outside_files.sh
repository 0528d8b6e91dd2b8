#!/bin/bash
# The outside pass's problems: public KernelBench level-1 files that are not among the project's 50, copied unchanged
# into the git-ignored .gpu/outside/ (carry [".whl", ".gpu"]); kept out of the repository so that nothing is tuned on
# them in place.
#
#   bash benchmarks/h200/outside_files.sh GIT_DIR [NUMBER ...]
#   LEVEL=2 bash benchmarks/h200/outside_files.sh GIT_DIR [NUMBER ...]     # level 2, into .gpu/outside_l2/
#
# The default: session 43's eight (RESULTS.md (ba)), then 90, 92 and 93 (the other public scans, first run with the
# scan family); at LEVEL=2, six fused problems none of the project's ten level-2 problems resemble closely (a GEMM
# then a group norm, a row sum, a row max; a convolution then an instance norm; a transposed one then GELU and a
# group norm; a 3-D one then a softmax over channels and two pools), first run in session 44; then 28, whose seed
# the CPU audit (benchmarks/seed_audit.py) found impossible before session 44's mend (a warning broke its graph). GIT_DIR: a clone or bare mirror of ScalingIntelligence/KernelBench (the fetch tool gives
# /work/.mirror/ScalingIntelligence+KernelBench/repo).
set -euo pipefail
git_dir=$1
shift
numbers=("$@")
level=${LEVEL:-1}
if [ "$level" = 1 ]; then dir=.gpu/outside; default=(7 16 31 53 87 91 96 98 90 92 93)
else dir=.gpu/outside_l$level; default=(30 56 80 17 19 6 28); fi
[ ${#numbers[@]} -gt 0 ] || numbers=("${default[@]}")
mkdir -p "$dir"
for n in "${numbers[@]}"; do
  path=$(git --git-dir "$git_dir" ls-tree -r --name-only HEAD -- "KernelBench/level$level/" | grep "/${n}_[^/]*\.py$")
  git --git-dir "$git_dir" show "HEAD:$path" > "$dir/$(basename "$path")"
  echo "outside: $(basename "$path")"
done
