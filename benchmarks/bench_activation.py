"""Benchmark elementwise activation evaluation: ns per element for φ, φ′ and both together.

    python benchmarks/bench_activation.py
    python benchmarks/bench_activation.py --shape 50 16384 --repeats 7

For each activation and dtype it prints the best-of-``repeats`` time per element of ``act(x)``,
``act.derivative(x)``, the two called one after the other, and ``act.value_and_derivative(x)``
(which shares common subexpressions such as tanh(z) between φ and φ′), plus a NumPy reference for
the cheapest possible pass over the array (``np.tanh(x)``) so figures can be compared across
machines. Pre-activations are N(0, 1) draws (seed 0), the distribution the RF model feeds φ.
Prints its figures; not part of the test suite.

At this size one float64 array is 6.5 MB. When several are alive at once (the "phi+dphi" and
"v_and_d" columns), glibc returns the freed memory to the OS after each call and the next call
page-faults it back, which can cost as much as the arithmetic; running with
``MALLOC_TRIM_THRESHOLD_=1000000000 MALLOC_MMAP_THRESHOLD_=1000000000`` shows the figures without
that effect.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from rftheory.activations import get_activation

NAMES = ("relu+tanh", "relu", "gelu", "tanh", "erf")


def best_time(fn, repeats: int) -> float:
    """Best wall time of ``fn()`` over ``repeats`` runs after one warm-up run."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=2, default=(50, 16384))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    shape = tuple(args.shape)
    size = shape[0] * shape[1]
    print(f"shape {shape} ({size} elements), best of {args.repeats}; ns/element")
    print(f"{'activation':10s} {'dtype':7s} | {'phi':>7s} {'dphi':>7s} {'phi+dphi':>9s} "
          f"{'v_and_d':>8s} {'speedup':>8s}")
    for dtype in (np.float32, np.float64):
        x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
        ref = best_time(lambda: np.tanh(x), args.repeats) / size * 1e9
        for name in NAMES:
            act = get_activation(name)
            t_phi = best_time(lambda: act(x), args.repeats) / size * 1e9
            t_dphi = best_time(lambda: act.derivative(x), args.repeats) / size * 1e9
            t_both = best_time(lambda: (act(x), act.derivative(x)), args.repeats) / size * 1e9
            if hasattr(act, "value_and_derivative"):
                t_vd = best_time(lambda: act.value_and_derivative(x), args.repeats) / size * 1e9
                vd, speedup = f"{t_vd:8.2f}", f"{t_both / t_vd:7.2f}x"
            else:  # code from before value_and_derivative existed
                vd, speedup = f"{'n/a':>8s}", f"{'n/a':>8s}"
            print(f"{name:10s} {np.dtype(dtype).name:7s} | {t_phi:7.2f} {t_dphi:7.2f} "
                  f"{t_both:9.2f} {vd} {speedup}")
        print(f"{'np.tanh':10s} {np.dtype(dtype).name:7s} | {ref:7.2f}  (one NumPy pass, for scale)")


if __name__ == "__main__":
    main()
