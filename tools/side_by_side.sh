#!/usr/bin/env bash
# Two checkouts' whole `nfst run TASK --preset large`, started together on one machine, one job
# each (so that both meet the same load), each with a cache of its own (both compile cold):
#
#   tools/side_by_side.sh OLD_CHECKOUT NEW_CHECKOUT TASK OUT [NEW_OPTION ...]
#
# NEW_OPTION (e.g. sampler.sleep_steps=auto) go to the new checkout's run as --option. Each
# checkout needs its .venv (make setup). OUT gets the runs (OUT/TASK-old, OUT/TASK-new), their
# logs and OUT/TASK-times.txt: each command's exit status and wall seconds. Run it with nothing
# else of the project running: the ratio is the figure, the seconds depend on the machine.
set -euo pipefail
old=$(cd "${1:?usage: side_by_side.sh OLD NEW TASK OUT [NEW_OPTION ...]}" && pwd)
new=$(cd "${2:?}" && pwd)
task=${3:?}
mkdir -p "${4:?}"
out=$(cd "$4" && pwd)
shift 4
options=()
for o in "$@"; do options+=(--option "$o"); done
one() {  # LABEL CHECKOUT [ARGS ...]
  local label=$1 checkout=$2 started
  shift 2
  started=$(date +%s)
  set +e
  (cd "$checkout" && NFST_CACHE_DIR="$out/cache-$label" .venv/bin/nfst run "$task" \
    --preset large --run-dir "$out/$task-$label" --jobs 1 "$@" >"$out/$task-$label.log" 2>&1)
  echo "$label rc=$? wall=$(($(date +%s) - started))" >>"$out/$task-times.txt"
}
one old "$old" &
one new "$new" "${options[@]}" &
wait
cat "$out/$task-times.txt"
