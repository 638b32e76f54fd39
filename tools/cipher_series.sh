#!/usr/bin/env bash
# The cipher series of docs/results.md (tools/cipher_series.py says what each job measures):
# nolookahead, SWA, SWS and sws-mlp at 2,000 and 20,000 training pairs, (i) fitted to the
# generating paths (examples/cipher_choice.py supervised) and (ii) trained as usual against
# the frozen scorer of the first size's run (the large preset, SWP beside them for the gaps).
# Every job runs on one thread, all at once (18 processes at the peak: 8 fitting, 10 trained
# as usual); every job still running DEADLINE seconds after the start is stopped.
#
# Sizing, for 16 cores about 1.5x as fast as a development core (per-step CPU times measured
# there, one thread: fitting 27-40 ms a step, SWA 329 ms a training step, the other samplers
# 195-265 ms; compiling 20,000 pairs 174 CPU-s; the n-gram and scorer 120 CPU-s): compiling
# ~20 s, the scorer ~60-80 s beside the fitting jobs, then 800 training steps of SWA ~220 s
# and its measurement ~25 s, so the last job ends near 350 s; fitting 8,000 steps near 300 s.
#
#     bash tools/cipher_series.sh OUT
#
# Writes OUT/jobs/*.json[l] (one per job), OUT/logs/*.log, OUT/cipher-series.json (the
# summary) and OUT/summary.md (its tables). Settings (environment):
#   PYTHON       the interpreter, with nfst installed and pynini importable (default: python)
#   FIT_STEPS    steps of 16 pairs fitting the generating paths (default 8000)
#   USUAL_STEPS  training steps of each sampler trained as usual (default 800; no early stop)
#   DEADLINE     seconds after which every job still running is stopped (default 400)
#   NFST_CACHE_DIR  the lattice cache (default OUT/cache)
#   SCORER_DEVICE, SCORER_THREADS  where the one scorer trains (default: a GPU if there is
#                one, else the CPU) and its intra-op threads there (default 4)
#   MACHINE      a description of the machine, for the summary
#   SIZES        the training-set sizes (default "2000 20000"; smaller ones make a quick trial)
#   OPTIONS      further --option settings of both runs, space-separated (default: none)
set -euo pipefail
OUT=${1:?usage: bash tools/cipher_series.sh OUT}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python}
FIT_STEPS=${FIT_STEPS:-8000}
USUAL_STEPS=${USUAL_STEPS:-800}
DEADLINE=${DEADLINE:-400}
export SIZES=${SIZES:-2000 20000}
export NFST_CACHE_DIR=${NFST_CACHE_DIR:-$OUT/cache}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mkdir -p "$OUT/jobs" "$OUT/logs"
cd "$ROOT"
START=$(date +%s)
left() { local s=$((DEADLINE - ($(date +%s) - START))); echo $((s > 1 ? s : 1)); }
"$PYTHON" -c "import nfst.tasks, pynini" || { echo "needs nfst installed and pynini" >&2; exit 2; }

"$PYTHON" tools/cipher_series.py prepare "$OUT" "$USUAL_STEPS" | tee "$OUT/logs/prepare.json"
runs=()
for size in $SIZES; do
    runs+=("$OUT/runs/c$size")
    for sampler in nolookahead swa sws sws-mlp; do
        timeout "$(left)" "$PYTHON" examples/cipher_choice.py supervised "$OUT/runs/c$size" \
            "$sampler" "$FIT_STEPS" 3e-3 > "$OUT/jobs/supervised-$sampler-$size.jsonl" \
            2> "$OUT/logs/supervised-$sampler-$size.log" &
    done
done
(   # one scorer (the first size's) for every size, then every sampler against it
    timeout "$(left)" "$PYTHON" tools/cipher_series.py scorer "${runs[@]}" \
        > "$OUT/logs/scorer.log" 2>&1
    for size in $SIZES; do
        for sampler in nolookahead swa sws sws-mlp swp; do
            timeout "$(left)" "$PYTHON" tools/cipher_series.py usual "$OUT/runs/c$size" \
                "$sampler" "$OUT/jobs/usual-$sampler-$size.json" \
                > "$OUT/logs/usual-$sampler-$size.log" 2>&1 &
        done
    done
    wait
) &
wait || true  # a job stopped by the deadline leaves its log; the summary takes what finished
"$PYTHON" tools/cipher_series.py summary "$OUT" | tee "$OUT/summary.md"
echo "wall seconds: $(($(date +%s) - START))"
