#!/bin/bash
# One H200 call's share of a suite pass that may take several calls (and sessions):
#
#   [KEEP_S=S] bash benchmarks/h200/suite_pass.sh NAME SECONDS [kernelopt suite arguments, without --out/--resume]
#
# KEEP_S: stop when a problem finishes with fewer than S seconds of the box left (set it to a problem's usual wall).
# REDO=1, or the marker .gpu/NAME.redo that benchmarks/h200/redo_rows.sh leaves: resume from .gpu/NAME.tgz even where
# the committed state holds more finished problems (the rows redo_rows.sh took out of it are run again).
#
# Run from the repository root on the device with the wheels in .whl (carry [".whl", ".gpu"]).
# If .gpu/NAME.tgz (what an earlier call sent back, copied into .gpu/ here) or
# benchmarks/h200/state/NAME.tgz (a pass an earlier session left unfinished) exists, the suite is resumed from
# whichever holds more finished problems, so finished problems are not redone; otherwise it starts. After SECONDS it is
# stopped (a problem under way is redone next time), and the suite's state (suite.json, one JSON
# per finished problem, results.*, and each run's events, sweep tables, best kernel, report, and round 0's kernels and logs) goes back as $OUT/NAME.tgz with the log as $OUT/NAME.log;
# so does the problem stopped under way (its events, sweep tables and worker logs: where its time went).
set -u
name=$1 seconds=$2
shift 2
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD KERNELOPT_RUNS_DIR=/tmp/kruns
out=/tmp/suites/$name
mkdir -p /tmp/suites
# of the two states, the one with more finished problems (a stale .gpu copy is not resumed over a newer one)
finished() { if [ -f "$1" ]; then tar tzf "$1" | grep -c "^$name/problems/.*\.json$"; else echo -1; fi; }
state=.gpu/$name.tgz
[ "${REDO:-0}" = 1 ] || [ -f ".gpu/$name.redo" ] || [ "$(finished "$state")" -ge "$(finished benchmarks/h200/state/$name.tgz)" ] \
  || state=benchmarks/h200/state/$name.tgz
if [ -f "$state" ]; then
  tar xzf "$state" -C /tmp/suites
  how=(--resume "$out")
else
  how=("$@" --out "$out")
fi
began=$(date +%s)
timeout "$seconds" python3 -m kernelopt.cli suite "${how[@]}" > "$OUT/$name.log" 2>&1 &
suite=$!
# KEEP_S=S (optional): when a problem finishes with fewer than S seconds of the box left, stop there rather than
# start a problem the box would cut off (held device time is saved; that problem runs whole in the next call)
keep=${KEEP_S:-0}
done_count() { ls "$out"/problems/*.json 2>/dev/null | wc -l; }
total() { python3 -c "import json,pathlib,sys; d=pathlib.Path(json.load(open(sys.argv[1]))['problems_dir']); print(len([p for p in d.glob('*.py') if not p.name.startswith('_')]))" "$out/suite.json" 2>/dev/null || echo 0; }
seen=$(done_count)
while [ "$keep" -gt 0 ] && kill -0 $suite 2>/dev/null; do
  sleep 2
  now_done=$(done_count)
  [ "$now_done" -gt "$seen" ] || continue
  seen=$now_done left=$(( seconds - ($(date +%s) - began) ))
  if [ "$left" -lt "$keep" ] && [ "$now_done" -lt "$(total)" ]; then
    echo "[$now_done finished; $left s left, under KEEP_S=$keep: stopping before the next problem]" | tee -a "$OUT/$name.log"
    kill $suite
  fi
done
wait $suite
echo "[suite $name: rc $? in $(( $(date +%s) - began )) s]" | tee -a "$OUT/$name.log"
# each finished run's own record too (events with their times, sweep tables, the best kernel, the report, and its
# start with the start's check log: a rejected start is read here; the sweeps' process logs: where a sweep's time went): small
# the profiles' ncu output, with the profiled program's own stage times: where a profile's seconds went
# (sizes in k: find rounds a size up to its unit, so -1M would match only empty files)
cd /tmp/suites && tar czf "$OUT/$name.tgz" "$name/suite.json" $(ls -d "$name/problems" "$name"/results.* 2>/dev/null) \
  $(for done in "$name"/problems/*.json; do run="$name/runs/$(basename "$done" .json)"
      ls "$run"/events.jsonl "$run"/sweeps/round-*.json "$run"/best_kernel.py "$run"/report.md "$run"/kernels/r000_*.py \
        "$run"/harness/candidates/r000_*/worker.log "$run"/harness/reference/worker.log 2>/dev/null
      find "$run/profiles" -name ncu_raw.csv -size -1024k 2>/dev/null | head -10
      find "$run/sweeps" -name worker.log -size -1024k 2>/dev/null | head -40; done) \
  $(for run in "$name"/runs/*/; do run=${run%/}; [ -f "$name/problems/$(basename "$run").json" ] && continue
      find "$run" \( -name events.jsonl -o -name 'round-*.json' -o -name worker.log \) -size -2048k 2>/dev/null | head -200
    done)
