"""Benchmark the streamed Gram matrix Φ(X)Φ(X)ᵀ: time, GFLOP/s, ratio to this machine's GEMM rate,
and peak memory. Prints its figures; not part of the test suite.

    python benchmarks/bench_features.py            # d = 100 and d = 784 cases
    python benchmarks/bench_features.py --cifar    # adds n=100, d=3072, p=3.07M (float32; minutes)

Flops counted: 2·n·p·d (pre-activations) + n²·p (Gram, symmetric half counted as full: 2n²p/2).
The "V drawn" pass includes generating V from its seed on the host; the "V cached" pass keeps V in
memory (``v_cache_bytes``) as iterative methods do, so it measures the arithmetic alone.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import tracemalloc

import numpy as np

from rftheory import philox
from rftheory.features import BLOCK_ROWS, RandomFeatures


def gemm_rate(dtype, n: int, d: int) -> float:
    """Measured GFLOP/s of one (n×d)·(d×BLOCK_ROWS) product, the shape the stream uses."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, d)).astype(dtype)
    B = rng.standard_normal((d, 8 * BLOCK_ROWS)).astype(dtype)
    A @ B
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        A @ B
        reps += 1
    return 2 * n * d * B.shape[1] * reps / (time.perf_counter() - t0) / 1e9


def rng_rate() -> float:
    """Normals per second of V's generator (rftheory.philox) in one thread."""
    out = np.empty((BLOCK_ROWS, 4096))
    t0 = time.perf_counter()
    philox.standard_normal(0, BLOCK_ROWS, 4096, out=out)
    return out.size / (time.perf_counter() - t0)


def stream_draw_rate(threads: int) -> float:
    """Entries of V per second delivered by the stream (n = 1, so drawing dominates)."""
    d, p = 1024, 64 * BLOCK_ROWS
    rf = RandomFeatures("relu", d=d, p=p, seed=0, threads=threads)
    t0 = time.perf_counter()
    for _ in rf.chunks(np.zeros((1, d))):
        pass
    return p * d / (time.perf_counter() - t0)


def run_case(n: int, d: int, p: int, dtype, cache: bool) -> None:
    X = np.random.default_rng(1).standard_normal((n, d))
    X = (X * np.sqrt(d) / np.linalg.norm(X, axis=1, keepdims=True)).astype(dtype)
    itemsize = np.dtype(dtype).itemsize
    rf = RandomFeatures("relu+tanh", d=d, p=p, seed=0,
                        v_cache_bytes=(p * d * itemsize + 1) if cache else 0)
    flops = 2 * n * p * d + n * n * p
    peak_gemm = gemm_rate(dtype, n, d)
    tracemalloc.start()
    t0 = time.perf_counter()
    rf.gram(X)
    t_drawn = time.perf_counter() - t0
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    line = (f"n={n:4d} d={d:5d} p={p:9d} {np.dtype(dtype).name:7s} | V drawn: {t_drawn:8.2f} s "
            f"{flops / t_drawn / 1e9:7.1f} GFLOP/s ({100 * flops / t_drawn / 1e9 / peak_gemm:5.1f} % of GEMM)")
    if cache:
        t0 = time.perf_counter()
        rf.gram(X)
        t_cached = time.perf_counter() - t0
        line += (f" | V cached: {t_cached:7.3f} s {flops / t_cached / 1e9:7.1f} GFLOP/s "
                 f"({100 * flops / t_cached / 1e9 / peak_gemm:5.1f} % of GEMM)")
    line += f" | GEMM {peak_gemm:6.1f} GFLOP/s | traced peak {traced_peak / 2**20:8.1f} MiB"
    print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cifar", action="store_true", help="add the CIFAR-scale case (slow on 2 cores)")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    print(f"V generator: {rng_rate() / 1e6:.0f} M Gaussian draws/s in one thread; the stream "
          f"delivers {stream_draw_rate(1) / 1e6:.0f} M/s with 1 thread, "
          f"{stream_draw_rate(cores) / 1e6:.0f} M/s with {cores} (all cores)")
    for dtype in (np.float64, np.float32):
        run_case(20, 100, 20_000, dtype, cache=True)
        run_case(50, 784, 392_000, dtype, cache=True)
    if args.cifar:
        run_case(100, 3072, 3_072_000, np.float32, cache=False)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
    print(f"peak resident memory of this process: {rss:.0f} MiB "
          f"(V at CIFAR scale would be {3_072_000 * 3072 * 4 / 1e9:.1f} GB in float32)")


if __name__ == "__main__":
    main()
