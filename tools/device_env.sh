# Sourced from the checkout's root by the device scripts (tools/device_check.sh,
# tools/device_sleep.sh), with OUT set: makes pynini (carried in .pynini) and nfst importable
# there (nfst is not installed: links make nfst.tasks and nfst.fsts importable from the
# checkout; they are not committed), names the command line NFST (an array, not a function:
# `timeout` runs commands only), and begins $OUT/gpu.txt with the commit and the card.
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
mkdir -p "$OUT"
export PYTHONPATH="$PWD/.pynini:$PWD${PYTHONPATH:+:$PYTHONPATH}"
[ -e nfst/tasks ] || ln -s ../tasks nfst/tasks
[ -e nfst/fsts ] || ln -s ../fsts nfst/fsts
NFST=(python3 -m nfst.cli)
git log -1 --format='commit %h %s' 2>/dev/null | tee "$OUT/gpu.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 \
    | tee -a "$OUT/gpu.txt"
