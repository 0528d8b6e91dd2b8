#!/bin/bash
# Take rows out of a finished (or partial) suite pass so that the next call runs them again, the rest kept:
#
#   bash benchmarks/h200/redo_rows.sh NAME PROBLEM_PREFIX [PROBLEM_PREFIX ...]    # e.g. c3 6_ 3_
#
# Run here, not on the device: reads benchmarks/h200/state/NAME.tgz (the committed state), drops each finished
# problem whose name starts with a prefix (its problems/*.json: the run is redone; its old run folder is replaced),
# writes .gpu/NAME.tgz (git-ignored; carry [".whl", ".gpu"]) with a marker .gpu/NAME.redo, and prints the device
# command. While the marker is there, suite_pass.sh resumes .gpu/NAME.tgz (the rows taken out are run again) even where
# the committed state holds more finished problems; each call's returned $OUT/NAME.tgz goes over .gpu/NAME.tgz. When
# the pass is whole again, copy it over benchmarks/h200/state/NAME.tgz, commit it, and remove the marker.
set -euo pipefail
name=$1
shift
[ $# -gt 0 ] || { echo "usage: redo_rows.sh NAME PROBLEM_PREFIX [...]" >&2; exit 2; }
state=benchmarks/h200/state/$name.tgz
[ -f "$state" ] || { echo "no $state: nothing to redo (start the pass with suite_pass.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf "$state" -C "$work"
dropped=0
for prefix in "$@"; do
  for done in "$work/$name"/problems/"$prefix"*.json; do
    [ -f "$done" ] || { echo "no finished problem starts with $prefix" >&2; exit 2; }
    rm "$done" && rm -rf "$work/$name/runs/$(basename "$done" .json)" && dropped=$((dropped + 1))
    echo "redo: $(basename "$done" .json)"
  done
done
mkdir -p .gpu
tar czf ".gpu/$name.tgz" -C "$work" "$name"
touch ".gpu/$name.redo"
left=$(tar tzf ".gpu/$name.tgz" | grep -c "^$name/problems/.*\.json$" || true)
echo "$dropped problem(s) taken out, $left kept: .gpu/$name.tgz"
echo "on the device: KEEP_S=130 bash benchmarks/h200/suite_pass.sh $name SECONDS  (.gpu/$name.redo: resumes .gpu/$name.tgz)"
