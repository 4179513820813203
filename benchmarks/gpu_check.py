"""GPU check: the device draws the same V as numpy, CPU and GPU steps agree, and a CIFAR-scale
step's cost with V drawn on the device every pass vs cached.

    python benchmarks/gpu_check.py                 # everything below (≈ 3–5 min on an H200)
    python benchmarks/gpu_check.py --skip-cifar --skip-rates   # generator + agreement only
    python benchmarks/gpu_check.py --p-mult 1 --skip-p30        # a smaller CIFAR-scale p

Prints "no CUDA device: skipped" and exits 0 where CuPy or a CUDA device is missing, so it can
run anywhere. Exit status 1 when the device's V or the CPU/GPU step disagree beyond the
tolerances below.

Part 0 — the generator (rftheory.philox): the device's Philox words for a window of V equal
numpy's bit for bit; its float64 normals are within MAX_ULPS ulps of numpy's (the libm of log/sin
differs); the float32 V differs from numpy's float32 V in a small fraction of entries by one
float32 ulp at most. Prints the measured max ulps and fractions, and the device's generation rate
(normals/s, float32 and float64 output) on a default chunk of V at d = 3072.

Part 1 — agreement (float64, n̂=10, d=100, p=20000, relu+tanh): V drawn by numpy on the CPU and by
the kernel on the device give the same loss and gradient up to BLAS reassociation, the
transcendental functions and V's MAX_ULPS: relative 1e-9 on the loss, 1e-7 on the gradient
(norm-wise).

Part 2 — step rates with V cached on the device, float32 and float64, against the device's
measured GEMM rates ("square": a 8192² product; "same shape": (n̂×d)·(d×16384), the step's
pre-activation product), with the flop count of ``benchmarks/bench_projection_step.py``.

Part 3 — CIFAR scale (n̂ = 100, d = 3072, p = 10·d·n̂ = 3.07M, float32; V would be 37.7 GB):
(a) V drawn on the device every pass (no cache): first step (cuBLAS warm-up; the kernel was
compiled in Part 0), best later step, GFLOP/s and its fraction of the fp32 GEMM rates (target ≥ 50 % of square),
peak device memory; (b) V cached on the device (the first step fills the cache); (c) one step at
p = 30·d·n̂ (V would be 113 GB), drawn on the device. Peak device memory is the CuPy memory
pool's size after the case (the pool keeps what it once held; it is emptied between cases).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from rftheory import philox
from rftheory.features import BLOCK_ROWS, DEVICE_CHUNK_BLOCKS, RandomFeatures
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


def generator(cp) -> bool:
    """Part 0: device integers and normals against numpy's; the device's generation rate."""
    seed, row0, rows, d = 2**64 + 77, 2**33 + 5, 4096, 3072
    groups = -(-d // philox.GROUP)
    t0 = time.perf_counter()
    philox.cupy_words(seed, 0, 1, 1)
    cp.cuda.Device().synchronize()
    print(f"generator kernel: compiled (NVRTC, or CuPy's disk cache) and first launch in "
          f"{time.perf_counter() - t0:.2f} s")
    words_ok = bool(np.array_equal(cp.asnumpy(philox.cupy_words(seed, row0, rows, groups)),
                                   philox.philox_words(seed, range(row0, row0 + rows), groups)))
    Z_gpu = cp.asnumpy(philox.cupy_fill(seed, row0, cp.empty((rows, d))))
    Z_cpu = philox.standard_normal(seed, range(row0, row0 + rows), d)
    ulps = np.abs(Z_gpu - Z_cpu) / np.spacing(np.maximum(np.abs(Z_gpu), np.abs(Z_cpu)))
    V32_gpu = cp.asnumpy(philox.cupy_fill(seed, row0, cp.empty((rows, d), cp.float32), scale_dim=d))
    V32_cpu = philox.standard_normal(seed, range(row0, row0 + rows), d, scale_dim=d,
                                     out=np.empty((rows, d), np.float32))
    ulps32 = np.abs(V32_gpu.astype(np.float64) - V32_cpu) / np.spacing(np.abs(V32_cpu))
    ok = words_ok and ulps.max() <= philox.MAX_ULPS and ulps32.max() <= 1
    print(f"generator {philox.V_DEFINITION}: {rows}×{groups} Philox words on the device "
          f"{'EQUAL to' if words_ok else 'DIFFERENT from'} numpy's; float64 normals: max "
          f"{ulps.max():.0f} ulps (limit {philox.MAX_ULPS}), {100 * np.mean(ulps > 0):.2f} % not "
          f"bit-equal, mean {ulps.mean():.3f} ulps; float32 V: max {ulps32.max():.0f} ulp, "
          f"{100 * np.mean(ulps32 > 0):.4f} % of entries differ -> {'OK' if ok else 'MISMATCH'}")
    del Z_gpu, V32_gpu
    for dtype in ("float32", "float64"):
        chunk = cp.empty((DEVICE_CHUNK_BLOCKS * BLOCK_ROWS, d), dtype=dtype)
        seconds = _device_time(cp, lambda: philox.cupy_fill(0, 0, chunk, scale_dim=d))
        rate = chunk.size / seconds
        print(f"  device generation, {dtype} output: {rate / 1e9:.1f} G normals/s "
              f"({1e3 * seconds:.1f} ms per chunk of {DEVICE_CHUNK_BLOCKS} blocks × d = {d}; a "
              f"CIFAR-scale pass, p·d = 9.4e9, would spend {9.437e9 / rate:.3f} s generating V)")
        del chunk
    cp.get_default_memory_pool().free_all_blocks()
    return ok


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


def _steps(cp, rf, X, theta, steps: int) -> list[float]:
    times = []
    for _ in range(steps):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        projection_loss(rf, X, theta)
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return times


def cifar_timing(cp, p_mult: float, steps: int, dtype: str, chunk_blocks: int | None,
                 skip_cached: bool, skip_p30: bool) -> None:
    n_hat, d = 100, 3072
    itemsize = np.dtype(dtype).itemsize
    chunk_rows = None if chunk_blocks is None else chunk_blocks * BLOCK_ROWS
    pool = cp.get_default_memory_pool()
    A = cp.asarray(np.random.default_rng(0).standard_normal((8192, 8192)), dtype=dtype)
    square = 2 * 8192**3 / _device_time(cp, lambda: A @ A) / 1e9
    del A
    X = cp.asarray(sphere(n_hat, d), dtype=dtype)
    Bm = cp.asarray(np.random.default_rng(3).standard_normal((16384, d)), dtype=dtype)
    same = 2 * n_hat * d * 16384 / _device_time(cp, lambda: X @ Bm.T) / 1e9
    del Bm
    pool.free_all_blocks()
    print(f"CIFAR scale n̂={n_hat} d={d} {dtype}: GEMM square {square:.0f} GFLOP/s, same shape "
          f"{same:.0f} GFLOP/s")

    def case(label: str, p: int, cache: bool, n_steps: int) -> None:
        pool.free_all_blocks()
        rf = RandomFeatures(ACTIVATION, d=d, p=p, seed=0, chunk_rows=chunk_rows,
                            v_cache_bytes=p * d * itemsize + 1 if cache else 0)
        theta = cp.asarray(np.random.default_rng(2).standard_normal(p), dtype=dtype)
        times = _steps(cp, rf, X, theta, n_steps)
        flops = 4 * n_hat * p * d + 2 * n_hat**2 * p
        best = min(times[1:]) if len(times) > 1 else times[0]
        rate = flops / best / 1e9
        print(f"  {label} p={p:,} ({p / (d * n_hat):.0f}·dn): first step {times[0]:.2f} s; "
              f"{'best later step' if len(times) > 1 else 'step'} {best:.3f} s, {rate:.0f} GFLOP/s "
              f"= {100 * rate / square:.1f} % of square GEMM, {100 * rate / same:.1f} % of same-shape; "
              f"device memory pool peak {pool.total_bytes() / 2**30:.1f} GiB "
              f"(V would be {p * d * itemsize / 2**30:.1f} GiB)", flush=True)
        del rf, theta

    p = max(1, round(p_mult * d * n_hat))
    case("V drawn on the device every pass:", p, False, steps)
    if not skip_cached:
        case("V cached on the device:          ", p, True, steps)
    if not skip_p30:
        case("V drawn on the device, p = 30·dn: ", 30 * d * n_hat, False, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p-mult", type=float, default=10.0, help="p = M·d·n̂ at CIFAR scale")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--skip-cifar", action="store_true")
    parser.add_argument("--skip-rates", action="store_true")
    parser.add_argument("--skip-cached", action="store_true", help="CIFAR: no cached-V case (38 GB)")
    parser.add_argument("--skip-p30", action="store_true", help="CIFAR: no p = 30·dn step")
    parser.add_argument("--chunk-blocks", type=int, default=None,
                        help="blocks of V per chunk (default: the library's default for CuPy)")
    args = parser.parse_args(argv)
    cp = cuda_or_none()
    if cp is None:
        print("no CUDA device: skipped")
        return 0
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"device: {name}, {props['totalGlobalMem'] / 2**30:.0f} GiB")
    ok = generator(cp)
    ok = agreement(cp) and ok
    if not args.skip_rates:
        step_rates(cp, args.chunk_blocks)
    if not args.skip_cifar:
        cifar_timing(cp, args.p_mult, args.steps, args.dtype, args.chunk_blocks,
                     args.skip_cached, args.skip_p30)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
