"""Benchmark the generator of V on the host: the counter-based definition against the old ziggurat.

    python benchmarks/bench_rng.py               # draw rates, then Gram/step with V drawn vs cached
    python benchmarks/bench_rng.py --cpu-time    # per CPU-second (robust on a shared machine)
    python benchmarks/bench_rng.py --skip-step   # draw rates only (~20 s)

Part 1 — draw rates (million normals per second), float64 and float32 outputs, one thread and
all threads, for

* "old": numpy's ``default_rng([seed, b]).standard_normal`` (the ziggurat that drew V before
  :data:`rftheory.philox.V_DEFINITION`), one generator per block of 1024 × 1024;
* "new": :func:`rftheory.philox.standard_normal` (Philox4x64-10 + Box–Muller in float64, cast
  once; since V version 2 with the package's own correctly rounded ``log``/``sin``/``cos``, so V
  is the same bits everywhere), block by block as :class:`RandomFeatures` draws them;
* "stream": the entries of V per second that ``RandomFeatures.chunks`` delivers (n = 1, so the
  generator is all the work; includes the thread pool and chunk assembly);

and the two parts of the new generator alone: numpy's Philox raw words and the transform
(beside version 1's transform on numpy's ``log``/``sin``, the price of V to the bit); then
the cost of the counter layout (i, j // 4, 0, 0): one numpy Philox call per run of rows of one
column group, so the per-call overhead is shared by the rows of a block (1024) whatever d is, and
only windows of few rows (p < 1024) pay it per row. Printed as ns per normal for blocks of 1024
rows at several d, and for windows of few rows at d = 784.

Part 2 — one streamed Gram and one projection-loss step (value + gradient) at n̂ = 20, d = 784,
p = 10·d·n̂, float32, with V drawn every pass and with V cached, against this machine's GEMM rate
for the same shape. The counted flops are those of ``benchmarks/bench_projection_step.py``. With
``--cpu-time`` the GEMM reference is charged for BLAS's spinning threads too, so its percentages
can exceed 100 %: read them from a wall-clock run on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import bench_projection_step as steps  # this folder's step benchmark: its clock, GEMM and step
from rftheory import philox
from rftheory.features import BLOCK_ROWS, RandomFeatures, available_cores

BLOCK_COLS = 1024
BLOCKS = 16
_best = steps._best_time  # best time on steps.CLOCK (set by --cpu-time) after a warm-up call


def _old_block(b: int, out: np.ndarray) -> None:
    rng = np.random.default_rng([0, b])
    if out.dtype == np.float64:
        rng.standard_normal(out=out)
    else:
        rng.standard_normal(dtype=np.float32, out=out)
    out /= np.sqrt(BLOCK_COLS)


def _new_block(b: int, out: np.ndarray) -> None:
    philox.standard_normal(0, range(b * BLOCK_ROWS, (b + 1) * BLOCK_ROWS), BLOCK_COLS,
                           scale_dim=BLOCK_COLS, out=out)


def draw_rate(fill, dtype, threads: int) -> float:
    """Million normals/s filling BLOCKS blocks of 1024 × 1024 with ``threads`` threads."""
    buf = np.empty((BLOCKS, BLOCK_ROWS, BLOCK_COLS), dtype=dtype)
    if threads == 1:
        def run():
            for b in range(BLOCKS):
                fill(b, buf[b])
    else:
        pool = ThreadPoolExecutor(threads)

        def run():
            list(pool.map(lambda b: fill(b, buf[b]), range(BLOCKS)))
    try:
        return buf.size / _best(run) / 1e6
    finally:
        if threads > 1:
            pool.shutdown()


def stream_rate(dtype, threads: int) -> float:
    """Million entries of V/s that RandomFeatures.chunks delivers (n = 1)."""
    d, p = BLOCK_COLS, 32 * BLOCK_ROWS
    rf = RandomFeatures("relu", d=d, p=p, seed=0, threads=threads)
    X = np.zeros((1, d), dtype=dtype)

    def run():
        for _ in rf.chunks(X):
            pass
    return p * d / _best(run) / 1e6


def _box_muller_v1(words: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The transform of V version 1 (``philox4x64-10+box-muller/1``), for timing only: numpy's
    libm-style ``log`` and ``sin`` (SIMD-dependent in the last bit), c = √((1 − s)(1 + s))."""
    u1, u2, u4, u11, u61 = (np.uint64(k) for k in (1, 2, 4, 11, 61))
    a, b = words[..., 0::2], words[..., 1::2]
    r = (a >> u11).astype(np.float64)
    r += 1.0
    r *= 2.0**-53
    np.log(r, out=r)
    r *= -2.0
    np.sqrt(r, out=r)
    o = b >> u61
    m = (b >> u11) & np.uint64((1 << 50) - 1)
    m = np.where((o & u1).astype(bool), np.uint64(1 << 50) - m, m)
    s = m.astype(np.float64)
    s *= (np.pi / 4) * 2.0**-50
    np.sin(s, out=s)
    c = np.subtract(1.0, s)
    c *= 1.0 + s
    np.sqrt(c, out=c)
    swap = ((o + u1) & u2).astype(bool)
    x, y = np.where(swap, s, c), np.where(swap, c, s)
    x.view(np.uint64)[...] ^= ((o + u2) & u4) << u61
    y.view(np.uint64)[...] ^= (o & u4) << u61
    np.multiply(r, x, out=out[..., 0::2])
    np.multiply(r, y, out=out[..., 1::2])
    return out


def part_rates() -> tuple[float, float, float]:
    """(M words/s of numpy's Philox alone, M normals/s of box_muller alone, M normals/s of
    version 1's libm transform), one thread."""
    key = philox.philox_key(0)
    bg = np.random.Philox(key=key)
    n = 2**20
    words = _best(lambda: bg.random_raw(n)) / n
    w = philox.philox_words(0, 1024, 4)
    out = np.empty(w.shape)
    transform = _best(lambda: philox.box_muller(w, out=out)) / w.size
    v1 = _best(lambda: _box_muller_v1(w, out)) / w.size
    return 1e-6 / words, 1e-6 / transform, 1e-6 / v1


def layout_costs() -> None:
    """ns per normal of philox.standard_normal for tall blocks at several d and for short windows."""
    def ns(rows: int, d: int) -> float:
        out = np.empty((rows, d))
        return 1e9 * _best(lambda: philox.standard_normal(0, rows, d, out=out), 0.3, 3) / out.size
    per_call = _best(lambda: philox.philox_words(0, 1, 1), 0.3, 3)
    print(f"counter layout (i, j//4, 0, 0): one Philox call per (run of rows, column group), "
          f"{1e6 * per_call:.1f} µs per call")
    print("  1024 rows, d = " + ", ".join(f"{d}: {ns(1024, d):.1f}" for d in (4, 16, 100, 784, 3072))
          + " ns/normal")
    print("  d = 784, rows = " + ", ".join(f"{r}: {ns(r, 784):.1f}" for r in (4, 32, 256, 1024))
          + " ns/normal")


def step_rates(n_hat: int = 20, d: int = 784, mult: int = 10, dtype=np.float32) -> None:
    p = mult * d * n_hat
    X = steps.sphere(n_hat, d, dtype)
    sq = steps.gemm_square(dtype)
    print(f"\nGram and step at n̂={n_hat} d={d} p={p:,} ({mult}·d·n̂) {np.dtype(dtype).name}; "
          f"square GEMM {sq:.1f} GFLOP/s")
    for cached in (False, True):
        rf = RandomFeatures("relu+tanh", d=d, p=p, seed=0,
                            v_cache_bytes=p * d * np.dtype(dtype).itemsize + 1 if cached else 0)
        gram_flops = 2 * n_hat * p * d + n_hat**2 * p
        t_gram = _best(lambda: rf.gram(X))
        step = steps.step_case(n_hat, d, p, dtype, cached, sq)
        print(f"  V {step['V']:6s}: Gram {t_gram:7.3f} s {gram_flops / t_gram / 1e9:6.1f} GFLOP/s "
              f"({100 * gram_flops / t_gram / 1e9 / step['same']:5.1f} % of same-shape GEMM) | "
              f"step {step['seconds']:7.3f} s {step['gflops']:6.1f} GFLOP/s "
              f"({step['pct_same']:5.1f} % of same-shape GEMM {step['same']:.1f} GFLOP/s, "
              f"{step['pct_square']:5.1f} % of square)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-time", action="store_true",
                        help="time on the process CPU clock (all threads summed)")
    parser.add_argument("--skip-step", action="store_true")
    args = parser.parse_args(argv)
    if args.cpu_time:
        steps.CLOCK = time.process_time
    cores = available_cores()
    clock = "per CPU-second (all threads summed)" if args.cpu_time else "wall clock"
    print(f"V: {philox.V_DEFINITION}; {cores} cores available ({os.cpu_count()} online); {clock}")
    print(f"{'generator':>9} {'dtype':>8} | {'1 thread':>10} | {f'{cores} threads':>11}   (M normals/s)")
    for name, fill in (("old", _old_block), ("new", _new_block)):
        for dtype in (np.float64, np.float32):
            one, many = draw_rate(fill, dtype, 1), draw_rate(fill, dtype, cores)
            print(f"{name:>9} {np.dtype(dtype).name:>8} | {one:10.1f} | {many:11.1f}", flush=True)
    for dtype in (np.float64, np.float32):
        print(f"{'stream':>9} {np.dtype(dtype).name:>8} | {stream_rate(dtype, 1):10.1f} | "
              f"{stream_rate(dtype, cores):11.1f}", flush=True)
    words, transform, v1 = part_rates()
    print(f"parts of the new generator (1 thread): numpy Philox {words:.0f} M words/s "
          f"({1e3 / words:.1f} ns per normal), box_muller {transform:.0f} M normals/s "
          f"({1e3 / transform:.1f} ns per normal; version 1's libm transform: {v1:.0f} M "
          f"normals/s, {1e3 / v1:.1f} ns)")
    layout_costs()
    if not args.skip_step:
        step_rates()
    return 0


if __name__ == "__main__":
    sys.exit(main())
