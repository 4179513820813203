#!/usr/bin/env bash
# Everything a lent GPU machine should run, in one call (see /work/.library/device or the README):
#   run(command="bash benchmarks/gpu_session.sh", carry=[".whl"], timeout_s=480)
# The machine's image has numpy, scipy, sympy, CuPy, pytest, ... but not array-api-compat /
# array-api-strict: their pure-Python wheels travel in .whl/ (fetch them with
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl \
#       array-api-compat==1.16.0 array-api-strict==2.6.1).
# Logs go to $OUT (or ./gpu-logs when $OUT is unset).
set -o pipefail
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv
python3 -c "import numpy, cupy, sys; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'cupy', cupy.__version__)"
echo "== GPU tests"
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests 2>&1 | tee "$OUT/pytest_gpu.log" | tail -8
echo "== gpu_check.py"
timeout 420 python3 benchmarks/gpu_check.py "$@" 2>&1 | tee "$OUT/gpu_check.log"
