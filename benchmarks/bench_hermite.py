"""Benchmark: Hermite coefficients of tanh, fast (double) and mpmath (30 digits).

Targets (from the project brief):

* ``method="fast"``: μ_0..μ_100 of tanh in < 0.5 s, accurate to 1e-12 against mpmath;
* ``method="mpmath"``: 30-digit μ_0..μ_60 of tanh in < 10 s.

Run from the repository root::

    python benchmarks/bench_hermite.py

It prints wall and CPU time (median of repeats), the achieved accuracy against the mpmath method
and against the stored ``mpmath.quad`` reference (tests/reference/hermite_reference.json, if
present), peak memory, and the machine's measured float64 GEMM rate for context. The machine may be
shared: the 1-minute load average is printed too.
"""

from __future__ import annotations

import json
import os
import pathlib
import platform
import resource
import statistics
import time

import mpmath
import numpy as np

from rftheory.hermite import hermite_coefficients

REFERENCE = pathlib.Path(__file__).resolve().parents[1] / "tests" / "reference" / "hermite_reference.json"


def timed(function, repeats: int):
    """Median wall and CPU seconds of ``repeats`` calls, and the last result."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        result = function()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), result


def gemm_rate(n: int = 1024, repeats: int = 5) -> float:
    """Measured float64 matrix-multiply rate of this machine, GFLOP/s (best of ``repeats``)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    best = min(timed(lambda: a @ b, 1)[0] for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def main() -> None:
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load average (1 min) {os.getloadavg()[0]:.1f}; numpy {np.__version__}, mpmath "
          f"{mpmath.__version__} (backend {mpmath.libmp.BACKEND})")
    print(f"float64 GEMM rate (1024^3): {gemm_rate():.1f} GFLOP/s")
    reference = json.loads(REFERENCE.read_text())["activations"].get("tanh") if REFERENCE.exists() else None

    hermite_coefficients("tanh", 100, method="fast")  # warm-up: imports, scipy.special
    wall, cpu, fast = timed(lambda: hermite_coefficients("tanh", 100, method="fast"), 7)
    high = hermite_coefficients("tanh", 100, method="mpmath", dps=30)
    with mpmath.workdps(40):
        diff_mp = max(abs(mpmath.mpf(f) - m) for f, m in zip(fast.values, high.values))
    nodes = int(fast.notes.split(" nodes x ")[1].split(" panels")[0]) * 20 * 3 // 2  # fine + coarse
    flops = 2 * 2 * 101 * nodes  # two einsum products (values, rounding mass) per node and order
    print(f"fast   tanh mu_0..mu_100: wall {wall * 1e3:.1f} ms, CPU {cpu * 1e3:.1f} ms (median of 7; "
          f"target < 500 ms); ~{flops / cpu / 1e9:.2f} GFLOP/s in the projection")
    print(f"       max |fast - mpmath(30 digits)| = {float(diff_mp):.2e} (target <= 1e-12); "
          f"largest error estimate {max(fast.errors):.2e}")
    if reference is not None:
        diff_ref = max(abs(fast.values[k] - float(mpmath.mpf(v)))
                       for k, v in zip(reference["orders"], reference["values"]))
        print(f"       max |fast - mpmath.quad reference| over stored orders = {diff_ref:.2e}")
    wall_k, cpu_k, _ = timed(lambda: hermite_coefficients("tanh", 1000, method="fast"), 3)
    print(f"fast   tanh mu_0..mu_1000: wall {wall_k:.2f} s, CPU {cpu_k:.2f} s")

    wall, cpu, precise = timed(lambda: hermite_coefficients("tanh", 60, method="mpmath", dps=30), 3)
    print(f"mpmath tanh mu_0..mu_60 at 30 digits: wall {wall:.2f} s, CPU {cpu:.2f} s (median of 3; "
          f"target < 10 s); largest error estimate {max(precise.errors):.1e}")
    if reference is not None:
        with mpmath.workdps(50):
            diff = max(abs(precise.values[k] - mpmath.mpf(v))
                       for k, v in zip(reference["orders"], reference["values"]) if k <= 60)
        print(f"       max |mpmath - mpmath.quad reference| over stored orders <= 60 = {float(diff):.1e}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
