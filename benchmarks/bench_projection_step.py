"""Benchmark one step of the reconstruction: ``projection_loss`` value + gradient.

Prints, per case, the time of a step, the achieved GFLOP/s and its ratio to this machine's GEMM
rate measured in the same run, in float32 and float64; then a few steps at CIFAR scale with the
peak memory. Not part of the test suite.

    python benchmarks/bench_projection_step.py               # d ∈ {100, 784}, then CIFAR scale
                                                             # (≳ 8 CPU-minutes per CIFAR step)
    python benchmarks/bench_projection_step.py --skip-cifar  # quick part only (~2 min, 2 cores)
    python benchmarks/bench_projection_step.py --skip-cifar --cpu-time  # on a shared machine

Flops counted per step: 4·n̂·p·d (pre-activations X̂Vᵀ and the vector–Jacobian product C·V)
+ 2·n̂²·p (Gram matrix Φ̂Φ̂ᵀ). Element-wise work (φ, φ′, the residual) and the generation of V
are not counted: they are the overheads this benchmark exposes.

Two GEMM references are printed: "square" — an (N×N)·(N×N) product, the machine's peak BLAS rate
— and "same shape" — (n̂×d)·(d×16384), the skinny products the stream actually performs (for small
n̂ these are memory-bound, so they bound what any implementation of this step can reach).
Two V modes: "drawn" regenerates V from its seed every step (``v_cache_bytes=0``, the default of
:class:`RandomFeatures`), "cached" keeps V in memory between steps as an optimiser would.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc

import numpy as np

from rftheory import philox
from rftheory.features import RandomFeatures
from rftheory.projection import projection_loss

ACTIVATION = "relu+tanh"


#: Clock of every measurement: wall time, or with --cpu-time the process CPU time (summed over
#: BLAS threads), which is robust to other processes sharing the cores; GFLOP/s are then per
#: CPU-second and the ratios to the GEMM rate (measured the same way) stay meaningful.
CLOCK = time.perf_counter


def _best_time(fn, min_seconds: float = 0.5, min_runs: int = 2) -> float:
    """Best time of one call on :data:`CLOCK`, after one warm-up call (BLAS, caches, V cache)."""
    fn()
    best, runs, t_start = np.inf, 0, time.perf_counter()
    while runs < min_runs or time.perf_counter() - t_start < min_seconds:
        t0 = CLOCK()
        fn()
        best = min(best, CLOCK() - t0)
        runs += 1
    return best


def rng_rate() -> float:
    """Million normals per second of V's host generator (rftheory.philox), one thread."""
    out = np.empty((1024, 4096))
    return out.size / _best_time(lambda: philox.standard_normal(0, 1024, 4096, out=out)) / 1e6


def gemm_square(dtype, size: int = 2048) -> float:
    """GFLOP/s of one square (size×size)² product: the machine's peak BLAS rate."""
    A = np.random.default_rng(0).standard_normal((size, size)).astype(dtype)
    return 2 * size**3 / _best_time(lambda: A @ A) / 1e9


def gemm_same_shape(dtype, n_hat: int, d: int, cols: int = 16384) -> float:
    """GFLOP/s of (n̂×d)·(d×cols): the shape of the step's pre-activation products."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n_hat, d)).astype(dtype)
    B = rng.standard_normal((cols, d)).astype(dtype)
    return 2 * n_hat * d * cols / _best_time(lambda: A @ B.T) / 1e9


def sphere(n: int, d: int, dtype) -> np.ndarray:
    X = np.random.default_rng(1).standard_normal((n, d))
    return (X * (np.sqrt(d) / np.linalg.norm(X, axis=1, keepdims=True))).astype(dtype)


def step_case(n_hat: int, d: int, p: int, dtype, cached: bool, sq: float) -> dict:
    itemsize = np.dtype(dtype).itemsize
    rf = RandomFeatures(ACTIVATION, d=d, p=p, seed=0,
                        v_cache_bytes=p * d * itemsize + 1 if cached else 0)
    X = sphere(n_hat, d, dtype)
    theta = np.random.default_rng(2).standard_normal(p).astype(dtype)
    seconds = _best_time(lambda: projection_loss(rf, X, theta))
    flops = 4 * n_hat * p * d + 2 * n_hat**2 * p
    same = gemm_same_shape(dtype, n_hat, d)
    rate = flops / seconds / 1e9
    return {"n_hat": n_hat, "d": d, "p": p, "dtype": np.dtype(dtype).name,
            "V": "cached" if cached else "drawn", "seconds": seconds, "gflops": rate,
            "pct_square": 100 * rate / sq, "pct_same": 100 * rate / same, "same": same}


def cifar_case(steps: int, dtype) -> None:
    n_hat, d = 100, 3072
    p = 10 * d * n_hat
    rf = RandomFeatures(ACTIVATION, d=d, p=p, seed=0)
    X = sphere(n_hat, d, dtype)
    theta = np.random.default_rng(2).standard_normal(p).astype(dtype)
    flops = 4 * n_hat * p * d + 2 * n_hat**2 * p
    tracemalloc.start()
    times = []
    for _ in range(steps):
        t0 = CLOCK()
        projection_loss(rf, X, theta)
        times.append(CLOCK() - t0)
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # KiB on Linux
    best = min(times)
    print(f"CIFAR scale n̂={n_hat} d={d} p={p:,} {np.dtype(dtype).name}: "
          f"{steps} step(s), best {best:.1f} s/step, {flops / best / 1e9:.1f} GFLOP/s; "
          f"peak traced {traced / 2**20:.0f} MiB, process max RSS {maxrss:.0f} MiB "
          f"(θ alone {p * np.dtype(dtype).itemsize / 2**20:.0f} MiB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-cifar", action="store_true", help="skip the slow CIFAR-scale case")
    parser.add_argument("--cifar-only", action="store_true", help="run only the CIFAR-scale case")
    parser.add_argument("--cifar-steps", type=int, default=2)
    parser.add_argument("--cpu-time", action="store_true",
                        help="time with process CPU time (robust on a shared machine)")
    parser.add_argument("--cifar-dtype", choices=("float32", "float64"), default="float32")
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.process_time if args.cpu_time else time.perf_counter

    print(f"clock: {'process CPU time' if args.cpu_time else 'wall time'}")
    print(f"numpy {np.__version__}; activation {ACTIVATION}; step = value + gradient; "
          f"host RNG {rng_rate():.0f} M normals/s (bounds the 'drawn' rows)")
    cases = [(10, 100, 20_000), (50, 100, 20_000), (10, 784, 80_000), (50, 784, 80_000)]
    header = (f"{'n̂':>4} {'d':>4} {'p':>7} {'dtype':>7} {'V':>6} | {'s/step':>8} {'GFLOP/s':>8}"
              f" | {'% square GEMM':>13} {'% same-shape':>12} ({'GF/s':>5})")
    for dtype in () if args.cifar_only else (np.float32, np.float64):
        sq = gemm_square(dtype)
        print(f"\n{np.dtype(dtype).name}: square GEMM {sq:.1f} GFLOP/s")
        print(header)
        for n_hat, d, p in cases:
            for cached in (False, True):
                r = step_case(n_hat, d, p, dtype, cached, sq)
                print(f"{r['n_hat']:>4} {r['d']:>4} {r['p']:>7} {r['dtype']:>7} {r['V']:>6} | "
                      f"{r['seconds']:8.4f} {r['gflops']:8.2f} | {r['pct_square']:12.1f}% "
                      f"{r['pct_same']:11.1f}% ({r['same']:5.1f})")
        sys.stdout.flush()
    if not args.skip_cifar:
        print()
        cifar_case(args.cifar_steps, np.dtype(args.cifar_dtype))
    return 0


if __name__ == "__main__":
    sys.exit(main())
