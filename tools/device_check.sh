#!/usr/bin/env bash
# GPU check of the walk captured as a CUDA graph (issue 40), for ONE call on a lent H100,
# about 3 minutes (each part has its own time limit; 6 minutes at the very worst):
#
#   run(command="bash tools/device_check.sh", carry=[".pynini"], timeout_s=420)
#
# Its logs land in $OUT (gpu.txt, bench_step.log, bench_step_eager.log, graph.log,
# train.log, pytest.log). Not part of the package; no test runs it.
#
# The device has Python 3.12 and torch 2.11 but no pynini, which nfst imports (lattice
# compilation) and nothing can be fetched there. pynini's wheel is 165 MB, over what a call
# carries; with its libraries stripped it is 31 MB. Prepare it once, here, in the checkout:
#
#   echo /.pynini/ >> .git/info/exclude && mkdir -p .pynini
#   python -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux_2_28_x86_64 -d /tmp/whl pynini==2.1.7
#   (cd .pynini && unzip -q /tmp/whl/pynini-2.1.7-cp312-*.whl \
#       && strip --strip-unneeded _p*.so pynini.libs/*.so*)
#
# nfst itself is not installed there: tools/device_env.sh makes it importable from the checkout.
set -uo pipefail
OUT=${OUT:-/tmp/device_check}
source tools/device_env.sh
python3 -c 'import torch, pynini; print("torch", torch.__version__, torch.cuda.get_device_name(0),
"pynini", pynini.__version__)' 2>&1 | tee -a "$OUT/gpu.txt" || exit 1

echo "== 1. nfst bench step --device cuda (d 256 and 64), the walk replayed as a CUDA graph"
timeout 120 "${NFST[@]}" bench step --device cuda 2>&1 | tee "$OUT/bench_step.log"

echo "== 2. the captured walk against the same walk launched step by step (float64)"
timeout 60 python3 tools/device_train.py graph 2>&1 | tee "$OUT/graph.log"

echo "== 3. the same bench at d 256 with the eager walk (static_walk off), same card"
timeout 75 python3 -c '
import nfst.models.samplers.base as base
base.Sampler.walks_statically = lambda self, batch: False
from nfst.bench import run_benchmark
run_benchmark("step", device="cuda", dims=(256,))' 2>&1 | tee "$OUT/bench_step_eager.log"

echo "== 4. training at the paper sizes: up to 200 steps (25 s) of each sampler, ms per step"
timeout 200 env SECONDS_PER_SAMPLER=25 python3 tools/device_train.py train 200 \
    nolookahead swa sws swp swp-prefix swp-sws 2>&1 | tee "$OUT/train.log"

echo "== 5. the samplers' tests on CUDA"
timeout 90 python3 -m pytest -q -p no:cacheprovider tests/models/samplers/test_base.py -k cuda \
    2>&1 | tail -25 | tee "$OUT/pytest.log"
echo "== done"
