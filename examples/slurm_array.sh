#!/usr/bin/env bash
# A run's samplers on a SLURM cluster, one (sampler, training seed) per task of an array job,
# all against the run's one frozen scorer (docs/tutorials/distributed.md). On the login node:
#
#   examples/slurm_array.sh RUN_DIR TASK SAMPLERS SEEDS [nfst options...]
#   examples/slurm_array.sh runs/tr tr swa,sws,swp,swp-prefix 3 --preset large --data-dir DATA
#
# submits three jobs, each after the one before has succeeded: the scorer (`nfst train-scorer
# --new`, which records the run: its task, settings, samplers, data directory), an array of
# (number of SAMPLERS) x SEEDS tasks, each `nfst train-sampler --seeds SEEDS --training-seed S`
# of one sampler into the shared run directory, and the rest of the run (`nfst run --run-dir`:
# evaluation, SMC, results.json and the report; every sampler is trained by then). RUN_DIR
# must be on a file system that every node sees, with working file locks (NFS; Lustre
# mounted with flock). The #SBATCH lines, or SBATCH_* environment variables
# (SBATCH_PARTITION, SBATCH_TIMELIMIT, ...), set the cluster's resources; each task runs
# `nfst` from the PATH it was submitted with (an activated virtual environment).
#SBATCH --job-name=nfst
#SBATCH --cpus-per-task=1
set -euo pipefail

if [[ -z "${SLURM_ARRAY_TASK_ID:-}" ]]; then  # submit
    if (( $# < 4 )); then
        awk 'NR > 1 && !/^#( |$)/ {exit} NR > 1' "$0" >&2  # the comment above
        exit 2
    fi
    run_dir=$1 task=$2 samplers=$3 seeds=$4
    shift 4
    IFS=, read -ra names <<< "$samplers"
    options=$(printf ' %q' "$@")
    scorer=$(sbatch --parsable --job-name=nfst-scorer --wrap "nfst train-scorer $(printf %q \
        "$task") --new --run-dir $(printf %q "$run_dir") --samplers $samplers --quiet$options")
    array=$(sbatch --parsable --dependency="afterok:$scorer" \
        --array="0-$(( ${#names[@]} * seeds - 1 ))" "$0" "$run_dir" "$samplers" "$seeds")
    sbatch --parsable --job-name=nfst-run --dependency="afterok:$array" \
        --wrap "nfst run --run-dir $(printf %q "$run_dir") --quiet"
else  # one task of the array: task i trains sampler i mod n from training seed i div n
    run_dir=$1 samplers=$2 seeds=$3
    IFS=, read -ra names <<< "$samplers"
    i=$SLURM_ARRAY_TASK_ID n=${#names[@]}
    nfst train-sampler --run-dir "$run_dir" --sampler "${names[i % n]}" --seeds "$seeds" \
        --training-seed $(( i / n )) --quiet
fi
