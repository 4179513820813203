"""GPU check: CPU and GPU projection losses/gradients agree, and a CIFAR-scale step's cost.

    python benchmarks/gpu_check.py                 # agreement, step rates, CIFAR scale (p=10dn)
    python benchmarks/gpu_check.py --p-mult 1      # smaller CIFAR-scale p (faster first pass)
    python benchmarks/gpu_check.py --skip-cifar --skip-rates   # agreement only

Prints "no CUDA device: skipped" and exits 0 where CuPy or a CUDA device is missing, so it can
run anywhere. Exit status 1 when CPU and GPU disagree beyond the tolerances below.

Part 1 — agreement (float64, n̂=10, d=100, p=20000, relu+tanh): the same V (drawn in float64 on
the host from the seed, then copied) gives the same loss and gradient on both backends up to
BLAS reassociation and the GPU's transcendental functions: relative 1e-9 on the loss, 1e-7 on the
gradient (norm-wise).

Part 2 — step rates with V cached on the device, float32 and float64, against the device's
measured GEMM rates ("square": a 8192² product; "same shape": (n̂×d)·(d×16384), the step's
pre-activation product), with the flop count of ``benchmarks/bench_projection_step.py``.

Part 3 — timing at CIFAR scale: V has p·d ≈ 9.4·10⁹ entries. It is drawn on the host, so the first
step (which also fills the V cache on the device, 38 GB in float32) is bound by host random
generation; later steps reuse the cached V and measure the GPU arithmetic. Peak device memory is
read from CuPy's memory pool.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

from rftheory.features import DEVICE_CHUNK_BLOCKS, RandomFeatures
from rftheory.projection import projection_loss

ACTIVATION = "relu+tanh"
LOSS_RTOL = 1e-9
GRAD_RTOL = 1e-7


def cuda_or_none():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        cupy.zeros(1).sum()  # touch the device: fails here if the driver is unusable
        return cupy
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "skip"
        return None


def sphere(n: int, d: int) -> np.ndarray:
    X = np.random.default_rng(1).standard_normal((n, d))
    return X * (math.sqrt(d) / np.linalg.norm(X, axis=1, keepdims=True))


def agreement(cp) -> bool:
    n_hat, d, p = 10, 100, 20_000
    rf = RandomFeatures(ACTIVATION, d=d, p=p, seed=0)
    X = sphere(n_hat, d)
    theta = np.random.default_rng(2).standard_normal(p)
    cpu = projection_loss(rf, X, theta)
    gpu = projection_loss(rf, cp.asarray(X), cp.asarray(theta))
    g_gpu = cp.asnumpy(gpu.gradient)
    loss_err = abs(gpu.loss - cpu.loss) / cpu.loss
    grad_err = np.linalg.norm(g_gpu - cpu.gradient) / np.linalg.norm(cpu.gradient)
    ok = loss_err <= LOSS_RTOL and grad_err <= GRAD_RTOL
    print(f"agreement n̂={n_hat} d={d} p={p} float64: loss cpu {cpu.loss:.12e} gpu {gpu.loss:.12e} "
          f"(rel {loss_err:.1e}); gradient rel {grad_err:.1e} -> {'OK' if ok else 'MISMATCH'}")
    return ok


def _device_time(cp, fn, min_seconds: float = 0.3, min_runs: int = 3) -> float:
    """Best wall time of ``fn()`` with the device synchronised around it, after one warm-up."""
    fn()
    cp.cuda.Device().synchronize()
    best, runs, t_start = np.inf, 0, time.perf_counter()
    while runs < min_runs or time.perf_counter() - t_start < min_seconds:
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best


def step_rates(cp, chunk_blocks: int) -> None:
    cases = [(50, 100, 20_000), (50, 100, 200_000), (50, 784, 392_000), (100, 3072, 307_200)]
    print(f"step rates, V cached on the device, chunk = {chunk_blocks or DEVICE_CHUNK_BLOCKS} blocks of V")
    print(f"{'dtype':>7} {'n̂':>4} {'d':>5} {'p':>8} | {'ms/step':>8} {'GFLOP/s':>9} | "
          f"{'% square':>8} {'% same-shape':>12}")
    for dtype in ("float32", "float64"):
        A = cp.asarray(np.random.default_rng(0).standard_normal((8192, 8192)), dtype=dtype)
        square = 2 * 8192**3 / _device_time(cp, lambda: A @ A) / 1e9
        del A
        for n_hat, d, p in cases:
            itemsize = np.dtype(dtype).itemsize
            rf = RandomFeatures(ACTIVATION, d=d, p=p, seed=0, v_cache_bytes=p * d * itemsize + 1,
                                chunk_rows=None if chunk_blocks is None else chunk_blocks * 1024)
            X = cp.asarray(sphere(n_hat, d), dtype=dtype)
            theta = cp.asarray(np.random.default_rng(2).standard_normal(p), dtype=dtype)
            Bm = cp.asarray(np.random.default_rng(3).standard_normal((16384, d)), dtype=dtype)
            same = 2 * n_hat * d * 16384 / _device_time(cp, lambda: X @ Bm.T) / 1e9
            seconds = _device_time(cp, lambda: projection_loss(rf, X, theta))
            rate = (4 * n_hat * p * d + 2 * n_hat**2 * p) / seconds / 1e9
            print(f"{dtype:>7} {n_hat:>4} {d:>5} {p:>8} | {1e3 * seconds:8.2f} {rate:9.0f} | "
                  f"{100 * rate / square:7.1f}% {100 * rate / same:11.1f}%   "
                  f"(GEMM square {square:.0f}, same shape {same:.0f} GFLOP/s)", flush=True)
            del rf, X, theta, Bm
            cp.get_default_memory_pool().free_all_blocks()


def cifar_timing(cp, p_mult: float, steps: int, dtype: str, chunk_blocks: int | None) -> None:
    n_hat, d = 100, 3072
    p = max(1, round(p_mult * d * n_hat))
    itemsize = np.dtype(dtype).itemsize
    rf = RandomFeatures(ACTIVATION, d=d, p=p, seed=0, v_cache_bytes=p * d * itemsize + 1,
                        chunk_rows=None if chunk_blocks is None else chunk_blocks * 1024)
    X = cp.asarray(sphere(n_hat, d), dtype=dtype)
    theta = cp.asarray(np.random.default_rng(2).standard_normal(p), dtype=dtype)
    flops = 4 * n_hat * p * d + 2 * n_hat**2 * p
    pool = cp.get_default_memory_pool()
    times = []
    for _ in range(steps):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        res = projection_loss(rf, X, theta)
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    print(f"CIFAR scale n̂={n_hat} d={d} p={p:,} {dtype}: loss {res.loss:.6f}")
    print(f"  first step (draws V on the host with {len(os.sched_getaffinity(0))} threads, fills the device "
          f"cache): {times[0]:.1f} s")
    if len(times) > 1:
        best = min(times[1:])
        A = cp.asarray(np.random.default_rng(0).standard_normal((8192, 8192)), dtype=dtype)
        square = 2 * 8192**3 / _device_time(cp, lambda: A @ A) / 1e9
        print(f"  cached-V step: {best:.3f} s, {flops / best / 1e9:.0f} GFLOP/s "
              f"({100 * flops / best / 1e9 / square:.1f} % of the square GEMM rate {square:.0f} GFLOP/s)")
    print(f"  device memory pool: {pool.total_bytes() / 2**30:.1f} GiB held "
          f"(V alone {p * d * itemsize / 2**30:.1f} GiB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p-mult", type=float, default=10.0, help="p = M·d·n̂ at CIFAR scale")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--skip-cifar", action="store_true")
    parser.add_argument("--skip-rates", action="store_true")
    parser.add_argument("--chunk-blocks", type=int, default=None,
                        help="blocks of V per chunk (default: the library's default for CuPy)")
    args = parser.parse_args(argv)
    cp = cuda_or_none()
    if cp is None:
        print("no CUDA device: skipped")
        return 0
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"device: {props['name'].decode() if isinstance(props['name'], bytes) else props['name']}")
    ok = agreement(cp)
    if not args.skip_rates:
        step_rates(cp, args.chunk_blocks)
    if not args.skip_cifar:
        cifar_timing(cp, args.p_mult, args.steps, args.dtype, args.chunk_blocks)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
