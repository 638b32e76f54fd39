#!/usr/bin/env bash
# The sleep phase and one large run on a lent GPU, for ONE call (at most about 9 minutes; each
# part has its own time limit):
#
#   run(command="bash tools/device_sleep.sh", carry=[".pynini", ".device"], timeout_s=560)
#
# Its logs land in $OUT: gpu.txt, sleep_cuda.json and sleep_cpu.json (seconds per sleep step of
# SWA and swp-prefix on the same triples, each device in the same call), run.log, results.json
# and report.md (the large run; or, where it ran out of time, the stages it finished). Not part
# of the package; no test runs it.
#
# pynini: as tools/device_check.sh prepares it (.pynini); tools/device_env.sh sets up both
# scripts. The large run starts from a cipher base run made here at the large preset (its
# frozen scorer; 1.4 MB), carried in .device:
#
#   echo /.device/ >> .git/info/exclude && mkdir -p .device
#   nfst train-scorer cipher --preset large --run-dir .device/cipher-base --new
#   (or a copy of one made before, e.g. a confirmation's base run)
#
# The run: `nfst run --from` it on the GPU, SWA and swp-prefix (the samplers the sleep phase
# decides most for: cipher's choice, and the pick) in two processes, the large preset as the
# default trains them (sleep_steps=auto, named: a base run made before it was the default
# carries sleep_steps=0, which `--from` keeps), the SMC stage cut to 8 particles on 2 pairs to
# fit the call (at d 128 a step is launch-bound, so the GPU is about as fast as a CPU core:
# five samplers and the whole evaluation would not fit). To try the plumbing here, on the CPU:
#   DEVICE=cpu PRESET_OPTIONS='--option sampler.steps=20 --option sampler.sleep_cap=20' \
#       PATH=.venv/bin:$PATH bash tools/device_sleep.sh
# PARTS=2 runs the large run alone, RUN_SECONDS bounds it (default 360); run.tgz holds its run
# folder (histories, stage records, checkpoints) whether or not it finished.
set -uo pipefail
OUT=${OUT:-/tmp/device_sleep}
DEVICE=${DEVICE:-cuda}
BASE=${BASE:-.device/cipher-base}
source tools/device_env.sh
python3 -c 'import torch, pynini; print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
"pynini", pynini.__version__)' 2>&1 | tee -a "$OUT/gpu.txt" || exit 1
[ -f "$BASE/scorer.pt" ] || { echo "no base run at $BASE (see the header)"; exit 1; }

if [[ ${PARTS:-12} == *1* ]]; then
echo "== 1. the sleep phase: 50 sleep steps of SWA (twice: the second reads the lattice cache)"
echo "   and swp-prefix, on $DEVICE, then the same on the CPU, on the same triples"
timeout 90 env DEVICE="$DEVICE" python3 tools/sleep_step.py "$BASE" 50 "$OUT/sleep_cuda.json" \
    swa,swa,swp-prefix 2>&1 | tail -3
timeout 60 env DEVICE=cpu python3 tools/sleep_step.py "$BASE" 50 "$OUT/sleep_cpu.json" \
    swa,swa,swp-prefix 2>&1 | tail -3
fi

echo "== 2. one large run on $DEVICE: cipher, SWA and swp-prefix as the default trains them"
RUN=/tmp/device-run
# shellcheck disable=SC2086  # PRESET_OPTIONS is a list of words
timeout "${RUN_SECONDS:-360}" "${NFST[@]}" run --from "$BASE" --run-dir "$RUN" \
    --device "$DEVICE" --jobs 2 --samplers swa,swp-prefix --option sampler.sleep_steps=auto \
    --cache-dir /tmp/device-cache --option evaluate.smc_particles=[8] \
    --option evaluate.smc_pairs=2 ${PRESET_OPTIONS:-} 2>&1 | tee "$OUT/run.log" | tail -20
cp "$RUN/results.json" "$RUN/report/report.md" "$OUT/" 2>/dev/null \
    || ls "$RUN/stages" | tee -a "$OUT/run.log"
tar czf "$OUT/run.tgz" -C "$(dirname "$RUN")" "$(basename "$RUN")"
echo "== done"
