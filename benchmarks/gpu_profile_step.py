"""Where the time of one projection step goes on a GPU (CuPy), phase by phase.

    python benchmarks/gpu_profile_step.py [--n-hat 100 --d 3072 --p 307200 --chunk-blocks 128]

Times, with V cached on the device and the device synchronised around each phase (so the sum
exceeds a real, asynchronous step by the launch gaps it exposes): the pre-activation product,
φ and φ′, the Gram and θ products, the residual, the cotangent and the V-product; then the same
products written as single 2-D GEMMs over a whole chunk, and the device's GEMM rate. Prints
"no CUDA device: skipped" without one.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from rftheory.activations import get_activation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-hat", type=int, default=100)
    parser.add_argument("--d", type=int, default=3072)
    parser.add_argument("--p", type=int, default=307_200)
    parser.add_argument("--chunk-blocks", type=int, default=128)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args(argv)
    try:
        import cupy as cp

        cp.zeros(1).sum()
    except Exception:  # noqa: BLE001 - no CuPy or no device
        print("no CUDA device: skipped")
        return 0
    n, d, nb, m = args.n_hat, args.d, args.chunk_blocks, 1024
    chunks = max(1, args.p // (nb * m))
    dt = args.dtype
    rng = np.random.default_rng(0)
    X = cp.asarray(rng.standard_normal((n, d)), dtype=dt)
    Vs = cp.asarray(rng.standard_normal((nb, m, d)) / np.sqrt(d), dtype=dt)
    th = cp.asarray(rng.standard_normal((nb, m, 1)), dtype=dt)
    A = cp.asarray(rng.standard_normal((n, 1)), dtype=dt)
    act = get_activation("relu+tanh")
    times: dict[str, float] = {}

    def timed(name, fn, reps=5):
        fn()
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            out = fn()
        cp.cuda.Device().synchronize()
        times[name] = (time.perf_counter() - t0) / reps
        return out

    Z = timed("Z = X Vᵀ (batched)", lambda: cp.matmul(X[None], cp.transpose(Vs, (0, 2, 1))))
    F, D = timed("φ, φ′", lambda: act.value_and_derivative(Z))
    timed("Gram F Fᵀ (batched)", lambda: cp.matmul(F, cp.transpose(F, (0, 2, 1))))
    timed("F θ (batched)", lambda: cp.matmul(F, th))
    R = timed("R = θ − Fᵀa", lambda: th - cp.matmul(cp.transpose(F, (0, 2, 1)), A[None]))
    C = timed("C = D ⊙ Rᵀ", lambda: D * cp.transpose(R, (0, 2, 1)))
    timed("C V (batched)", lambda: cp.matmul(C, Vs))
    timed("group sums (8×2 launches)", lambda: [cp.sum(C[i:i + 16, :, :4], axis=0) for i in range(0, nb, 16)])
    V2 = Vs.reshape(nb * m, d)
    timed("Z as one 2-D GEMM", lambda: X @ V2.T)
    C2 = cp.ascontiguousarray(cp.transpose(C, (1, 0, 2)).reshape(n, nb * m))
    timed("C V as one 2-D GEMM", lambda: C2 @ V2)
    F2 = C2
    timed("Gram as one 2-D GEMM", lambda: F2 @ F2.T)
    sq = cp.asarray(rng.standard_normal((8192, 8192)), dtype=dt)
    timed("square GEMM 8192³", lambda: sq @ sq)
    gemm_rate = 2 * 8192**3 / times["square GEMM 8192³"] / 1e9
    flops = {"Z = X Vᵀ (batched)": 2 * n * d * nb * m, "C V (batched)": 2 * n * d * nb * m,
             "Gram F Fᵀ (batched)": 2 * n * n * nb * m, "Z as one 2-D GEMM": 2 * n * d * nb * m,
             "C V as one 2-D GEMM": 2 * n * d * nb * m, "Gram as one 2-D GEMM": 2 * n * n * nb * m}
    print(f"n̂={n} d={d} chunk={nb} blocks ({chunks} chunks for p={args.p}), {dt}; "
          f"square GEMM {gemm_rate:.0f} GFLOP/s")
    for name, t in times.items():
        rate = f"{flops[name] / t / 1e9:8.0f} GFLOP/s" if name in flops else ""
        print(f"  {name:28s} {1e3 * t:8.3f} ms/chunk {rate}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
