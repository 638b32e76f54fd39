#!/usr/bin/env bash
# The runs of the confirmation protocol (docs/results/confirm-protocol.md), one task at a time:
# the task's scorer, then the usual training, the candidate default and the recommendation on
# it, each with the protocol's five training seeds. Every command resumes what is done, so the
# same command again, after an interruption, goes on where it stopped.
#
#   tools/confirm_runs.sh RUNS_DIR [TASK ...]      (default tasks: tr scan cipher)
#
# NFST names the nfst command (default: nfst); run it from a frozen clone of the protocol's
# commit. Once a task's three runs are done, its confirmation file is written:
#   python tools/confirm.py collect TASK default=... usual=... recommended=... --command ...
set -euo pipefail
runs=${1:?usage: tools/confirm_runs.sh RUNS_DIR [TASK ...]}
shift
tasks=("$@")
[ ${#tasks[@]} -gt 0 ] || tasks=(tr scan cipher)
nfst=${NFST:-nfst}
seeds=(--seed 100 --seeds 5 --jobs 2)
for task in "${tasks[@]}"; do
  base="$runs/$task-base"
  echo "== $task: scorer ($(date -u +%FT%TZ))"
  $nfst train-scorer "$task" --preset large --run-dir "$base" --new
  echo "== $task: usual ($(date -u +%FT%TZ))"
  $nfst run --from "$base" --run-dir "$runs/$task-usual" "${seeds[@]}" \
    --option sampler.sleep_steps=0
  echo "== $task: default ($(date -u +%FT%TZ))"
  $nfst run --from "$base" --run-dir "$runs/$task-default" "${seeds[@]}" \
    --option sampler.sleep_steps=auto
  echo "== $task: recommended ($(date -u +%FT%TZ))"
  $nfst run --from "$base" --run-dir "$runs/$task-recommended" "${seeds[@]}" \
    --samplers swp-prefix --option sampler.sleep_steps=4000
  echo "== $task: done ($(date -u +%FT%TZ))"
done
