#!/usr/bin/env bash
# The runs of a confirmation protocol, one task at a time, on the task's frozen scorer:
#   PROTOCOL=confirm (docs/results/confirm-protocol.md): the usual training, the candidate
#     default and the recommendation, each with training seeds 100 and four hashed from it;
#   PROTOCOL=swa-cap (docs/results/swa-cap-protocol.md): the default, and SWA by 4,000 sleep
#     steps, each with training seeds 200 and four hashed from it.
# Every command resumes what is done, so the same command again, after an interruption, goes
# on where it stopped.
#
#   [PROTOCOL=swa-cap] tools/confirm_runs.sh RUNS_DIR [TASK ...]   (default tasks: tr scan cipher)
#
# NFST names the nfst command (default: nfst); run it from a frozen clone of the protocol's
# commit. Once a task's runs are done, its confirmation file is written:
#   python tools/confirm.py collect TASK LABEL=RUN_DIR ... --command ... [--name swa-cap]
set -euo pipefail
runs=${1:?usage: [PROTOCOL=swa-cap] tools/confirm_runs.sh RUNS_DIR [TASK ...]}
shift
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(tr scan cipher)
nfst=${NFST:-nfst}
protocol=${PROTOCOL:-confirm}
case $protocol in
  confirm) seeds=(--seed 100 --seeds 5 --jobs 2) ;;
  swa-cap) seeds=(--seed 200 --seeds 5 --jobs 2) ;;
  *) echo "PROTOCOL: confirm or swa-cap, not $protocol" >&2; exit 2 ;;
esac
step() {  # LABEL RUN_DIR [nfst run options]: one run of the protocol on the task's scorer
  local label=$1 dir=$2
  shift 2
  echo "== $task: $label ($(date -u +%FT%TZ))"
  $nfst run --from "$base" --run-dir "$dir" "${seeds[@]}" "$@"
}
for task in "${tasks[@]}"; do
  base="$runs/$task-base"
  echo "== $task: scorer ($(date -u +%FT%TZ))"
  $nfst train-scorer "$task" --preset large --run-dir "$base" --new
  if [ "$protocol" = confirm ]; then
    step usual "$runs/$task-usual" --option sampler.sleep_steps=0
    step default "$runs/$task-default" --option sampler.sleep_steps=auto
    step recommended "$runs/$task-recommended" --samplers swp-prefix \
      --option sampler.sleep_steps=4000
  else
    step default "$runs/$task-swa-cap-default" --option sampler.sleep_steps=auto
    step swa-cap "$runs/$task-swa-cap" --samplers swa --option sampler.sleep_steps=4000
  fi
  echo "== $task: done ($(date -u +%FT%TZ))"
done
