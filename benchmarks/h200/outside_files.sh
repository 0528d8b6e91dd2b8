#!/bin/bash
# The outside pass's problems: public KernelBench level-1 files that are not among the project's 50, copied unchanged
# into the git-ignored .gpu/outside/ (carry [".whl", ".gpu"]); kept out of the repository so that nothing is tuned on
# them in place.
#
#   bash benchmarks/h200/outside_files.sh GIT_DIR [NUMBER ...]
#
# The default: session 43's eight (RESULTS.md (ba)), then 90, 92 and 93 (the other public scans, first run with the
# scan family). GIT_DIR: a clone or bare mirror of ScalingIntelligence/KernelBench (the fetch tool gives
# /work/.mirror/ScalingIntelligence+KernelBench/repo).
set -euo pipefail
git_dir=$1
shift
numbers=("$@")
[ ${#numbers[@]} -gt 0 ] || numbers=(7 16 31 53 87 91 96 98 90 92 93)
mkdir -p .gpu/outside
for n in "${numbers[@]}"; do
  path=$(git --git-dir "$git_dir" ls-tree -r --name-only HEAD -- KernelBench/level1/ | grep "/${n}_[^/]*\.py$")
  git --git-dir "$git_dir" show "HEAD:$path" > ".gpu/outside/$(basename "$path")"
  echo "outside: $(basename "$path")"
done
