"""Success rate, steps and wall time of :func:`rftheory.reconstruct.reconstruct` with its defaults.

For each case (activation, d, n) and each seed s: data X = ``sphere_points(n, d, s)``, labels
Y = ``gaussian_labels(n, s)``, p = ratio·d·n features with V seeded by s, θ* = Φ⁺Y by
``train_min_norm``; then ``reconstruct(features, θ*, n, seed=s)`` with no tuning. A seed succeeds
when the paper's ρ (``rftheory.metrics.rho``, variant "abs") is below the threshold (0.01).
The sign-invariant ρ (ReLU) or the signed ρ (other activations) is printed too.

Usage::

    python benchmarks/bench_reconstruct_success.py                       # the brief's 4 cases, 10 seeds
    python benchmarks/bench_reconstruct_success.py --cases relu+tanh:20:10 --seeds 3   # quick

Prints one line per seed, then per case: success rate, median/max optimiser steps, median/max
wall time, the machine's measured float64 GEMM rate and the peak resident memory. Timings on a
shared machine vary with its load; the GEMM rate printed alongside says how fast it was.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

import numpy as np

from rftheory.data import gaussian_labels, sphere_points
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.metrics import rho
from rftheory.reconstruct import reconstruct

DEFAULT_CASES = "relu+tanh:20:10,relu+tanh:100:20,relu:20:10,relu:100:20"


def gemm_gflops(size: int = 1024, repeats: int = 3) -> float:
    """Measured float64 matrix-multiply rate of this machine (best of ``repeats``)."""
    A = np.random.default_rng(0).standard_normal((size, size))
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        A @ A
        best = min(best, time.perf_counter() - t)
    return 2 * size**3 / best / 1e9


def run_seed(activation: str, d: int, n: int, seed: int, ratio: int) -> dict:
    X = sphere_points(n, d, seed)
    Y = gaussian_labels(n, seed)
    features = RandomFeatures(activation, d, ratio * d * n, seed=seed, v_cache_bytes=2**30)
    theta = train_min_norm(features, X, Y).theta
    t = time.perf_counter()
    res = reconstruct(features, theta, n, seed=seed)
    wall = time.perf_counter() - t
    other = "sign_invariant" if activation == "relu" else "signed"
    return {"rho": rho(X, res.X_hat, "abs"), "rho_other": rho(X, res.X_hat, other),
            "other": other, "loss": res.loss, "steps": res.steps, "rounds": res.rounds,
            "evaluations": res.evaluations, "stop": res.stop_reason, "wall": wall}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES,
                    help="comma-separated activation:d:n (default: %(default)s)")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per case (default 10)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--ratio", type=int, default=10, help="p = ratio·d·n (default 10)")
    ap.add_argument("--threshold", type=float, default=0.01, help="success: ρ below this")
    args = ap.parse_args(argv)
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
          f"float64 GEMM {gemm_gflops():.1f} GFLOP/s", flush=True)
    for case in args.cases.split(","):
        activation, d, n = case.split(":")
        d, n = int(d), int(n)
        rows = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            r = run_seed(activation, d, n, seed, args.ratio)
            rows.append(r)
            print(f"{activation:>10} d={d:<4} n={n:<4} seed={seed:<3} ρ={r['rho']:.1e} "
                  f"ρ_{r['other']}={r['rho_other']:.1e} loss={r['loss']:.1e} "
                  f"steps={r['steps']:<6} rounds={r['rounds']} evals={r['evaluations']:<6} "
                  f"{r['stop']:<9} {r['wall']:.1f}s", flush=True)
        ok = sum(r["rho"] < args.threshold for r in rows)
        steps = [r["steps"] for r in rows]
        walls = [r["wall"] for r in rows]
        print(f"== {activation} d={d} n={n} p={args.ratio * d * n}: success {ok}/{len(rows)} "
              f"({100 * ok / len(rows):.0f} %), steps median {statistics.median(steps):.0f} "
              f"max {max(steps)}, wall median {statistics.median(walls):.1f}s "
              f"max {max(walls):.1f}s, GEMM now {gemm_gflops():.1f} GFLOP/s, peak RSS "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
