"""Benchmark the sweep runner: speed-up of N local worker processes over 1 on a CPU-bound grid.

    python benchmarks/bench_sweep.py                 # 24 label_fit cells, 1 and all-CPU workers
    python benchmarks/bench_sweep.py --workers 1 2 4 --cells 48

Each configuration runs the whole sweep into a fresh store (worker start-up, SQLite commits and
all), so the time is what a user waits; use enough cells to amortise worker start-up (each
worker imports numpy, scipy and sympy, about 1 s). Printed per configuration: wall time,
cells/s, speed-up and parallel efficiency against 1 worker, aggregate GFLOP/s of the cells and,
for reference, this machine's measured one-thread and all-thread GEMM rates and its load
average (other jobs on the machine skew every number here). "mean cell" (time inside one cell)
and "cells busy" (summed cell time / wall time, i.e. how many cells ran at once on average)
separate the runner's overhead from contention: when the mean cell time grows with the workers,
the cores were not free.

Workers run BLAS with one thread each (``blas_threads=1``, the runner's default). Why: N worker
processes each using an all-core BLAS put N × cores threads on the cores (oversubscription;
``--unpinned`` adds a run showing the cost), and a cell's numbers are then independent of the
worker it lands on (BLAS reductions split across threads round differently).

Flops counted per ``label_fit`` cell (d, n, p): two Gram passes (eigenvalues, then the fit),
each 2·n·p·d (pre-activations) + n²·p (ΦΦᵀ), and Φᵀa and Φθ, each 2·n·p·d + 2·n·p.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from rftheory.sweep import SweepStore, parse_spec, run_sweep


def gemm_rate(threads: int | None) -> float:
    """GFLOP/s of a 1024² double GEMM with ``threads`` BLAS threads (None: the default)."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((1024, 1024)), rng.standard_normal((1024, 1024))
    with threadpool_limits(limits=threads):
        A @ B
        reps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 1.0:
            A @ B
            reps += 1
        return 2 * 1024**3 * reps / (time.perf_counter() - t0) / 1e9


def cell_flops(d: int, n: int, p: int) -> float:
    return 2 * (2 * n * p * d + n * n * p) + 2 * (2 * n * p * d + 2 * n * p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parser.add_argument("--workers", type=int, nargs="+", default=sorted({1, cpus}),
                        help=f"worker counts to time (default: 1 and {cpus})")
    parser.add_argument("--cells", type=int, default=24, help="cells in the grid (multiple of 2)")
    parser.add_argument("--d", type=int, default=50)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--p", type=int, default=16_384)
    parser.add_argument("--unpinned", action="store_true",
                        help="also time the most workers with BLAS left at all threads (slow)")
    args = parser.parse_args()
    if 1 not in args.workers:
        args.workers.insert(0, 1)

    seeds = max(1, args.cells // 2)
    spec = parse_spec({"sweep": {"cell": "label_fit", "name": "bench", "seeds": seeds},
                       "grid": {"activation": ["relu", "tanh"]},
                       "fixed": {"d": args.d, "n": args.n, "p": args.p}})
    total = len(list(spec.cells()))
    flops = total * cell_flops(args.d, args.n, args.p)
    print(f"machine: {platform.machine()}, {cpus} CPUs, load average "
          f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}; GEMM {gemm_rate(1):.1f} GFLOP/s "
          f"(1 thread), {gemm_rate(None):.1f} GFLOP/s (all threads)", flush=True)
    print(f"grid: {total} label_fit cells, d={args.d} n={args.n} p={args.p} "
          f"({flops / total / 1e9:.2f} GFLOP each)")
    configs = [(w, 1) for w in args.workers] + ([(max(args.workers), None)] if args.unpinned else [])
    baseline = None
    for workers, blas in configs:
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            run = run_sweep(spec, Path(tmp), workers=workers, blas_threads=blas)
            seconds = time.perf_counter() - t0
            with SweepStore.open_reader(tmp) as store:
                cell_seconds = [c.seconds for c in store.scan().cells.values()]
        assert run.computed == total and run.errors == 0
        if baseline is None:
            baseline = seconds
        label = f"{workers} worker{'s' if workers > 1 else ' '}" + \
            (", BLAS unpinned" if blas is None else ", 1 BLAS thread")
        print(f"{label:30s} {seconds:7.2f} s  {total / seconds:6.2f} cells/s  "
              f"{flops / seconds / 1e9:6.1f} GFLOP/s  speed-up {baseline / seconds:4.2f}x  "
              f"efficiency {100 * baseline / seconds / workers:5.1f} %  | mean cell "
              f"{np.mean(cell_seconds):5.2f} s, cells busy {sum(cell_seconds) / seconds:4.2f} "
              "of the wall time", flush=True)


if __name__ == "__main__":  # the guard worker processes (forkserver/spawn) need
    main()
