#!/usr/bin/env bash
# Everything a lent GPU machine should run, in one call (see /work/.library/device or the README):
#   run(command="bash benchmarks/gpu_session.sh", carry=[".whl"], timeout_s=560)
# The machine's image has numpy, scipy, sympy, CuPy, pytest, ... but not array-api-compat /
# array-api-strict: their pure-Python wheels travel in .whl/ (fetch them with
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl \
#       array-api-compat==1.16.0 array-api-strict==2.6.1).
# What it measures (issue #13, V drawn on the device): the GPU tests (same Philox integers as
# numpy, normals within rftheory.philox.MAX_ULPS, features/Gram/training equal to the CPU's),
# then benchmarks/gpu_check.py: device integers/ulps/generation rate, CPU-GPU step agreement,
# cached-V step rates, and at CIFAR scale the step with V drawn on the device every pass vs cached
# (fraction of the fp32 GEMM rate, first-step time, peak device memory) and one step at p = 30·dn.
# Budget: pytest ≤ 150 s, gpu_check ≤ 360 s (expected ≈ 3–5 min on an H200), so the whole
# session fits one 10-minute call with a minute to spare. Logs go to $OUT (or ./gpu-logs).
set -o pipefail
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv
python3 -c "import numpy, cupy, sys; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__)"
echo "== GPU tests"
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest_gpu.log" | tail -8
echo "== gpu_check.py"
timeout 360 python3 benchmarks/gpu_check.py "$@" 2>&1 | tee "$OUT/gpu_check.log"

# == The headline table at the paper's size (issue #15; rftheory.claims.headline.LARGE):
# n = 100 patches of scikit-image's photographs (d = 3072), ReLU and relu+tanh, p = n, dn, 10·dn
# (100, 307 200, 3 072 000 features), 3000 steps per reconstruction, V drawn on the device.
# Opt-in, and in a call of its own (the parts above take ~8 of a call's 10 minutes):
#   run(command="HEADLINE=1 bash benchmarks/gpu_session.sh", carry=[".whl"], timeout_s=590)
# with the lead's one-line guard around the parts above, or as the bare commands below. The
# patches need scikit-image on the device; its wheels travel in .whl/ with the others:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl \
#       scikit-image==0.26.0 imageio==2.38.2 lazy_loader==0.6 networkx==3.6.1 tifffile==2026.3.3
# (pillow is in the machine's image; add pillow==13.0.0 if it is not). Unmeasured so far: the
# CPU budget (rftheory.budget) puts the 10·dn cells at ~3.8e16 flops each, i.e. minutes per cell
# on an H200 at best; one cell line per finished cell goes to headline.log as it ends, so a run
# the timeout stops still records the cells it finished (the JSON is written only at the end).
if [ "${HEADLINE:-0}" = 1 ]; then
    echo "== headline table, n = 100 (verify headline --large)"
    if python3 -c "import skimage" 2>/dev/null; then
        timeout "${HEADLINE_TIMEOUT:-560}" python3 -m rftheory.claims.headline --large \
            --out "$OUT/headline" 2>&1 | tee "$OUT/headline.log"
    else
        echo "skipped: scikit-image is not installed (put its wheels in .whl/, see above)"
    fi
fi
