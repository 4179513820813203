"""How good are the size guards' estimates (rftheory.budget)? Prints, per job, the estimated peak
memory against the tracemalloc peak, and the estimated time against the wall time.

    python benchmarks/bench_budget.py            # all cases (~1 min on a quiet 2-core machine)
    python benchmarks/bench_budget.py --varpro   # only the varpro step model (~1 min)
    python benchmarks/bench_budget.py --varpro --large   # and d = 3072, n = 10, p = dn (~2 min)

Memory does not depend on load; the time column does — rerun on a quiet machine before quoting
it. The time estimates use the constant rates budget.FLOP_RATE and budget.DRAW_RATE; the last
lines print this machine's own float64 GEMM rate and Gaussian draw rate to compare with them.
Reconstruction is timed for a fixed small step budget, so its estimate is for that budget.

``--varpro`` prints, for the default attack (``reconstruct(method="varpro")``, dense and CG
solvers), the estimated seconds per LM iteration (the estimate for the steps made, training
excluded, divided by them) against the measured ``reconstruct`` time per step, with the counts
the model rests on: trial evaluations and CG products per step against its bounds.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rftheory import budget  # noqa: E402
from rftheory.data import gaussian_labels, sphere_data  # noqa: E402
from rftheory.features import RandomFeatures, train_min_norm  # noqa: E402
from rftheory.reconstruct import reconstruct  # noqa: E402


def measured(job):
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    out = job()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    start = time.perf_counter()  # timed again without tracemalloc's overhead
    job()
    return peak, time.perf_counter() - start, out


def row(label: str, est: budget.Estimate, peak: float, seconds: float) -> None:
    print(f"{label:48s} | peak est {est.peak_bytes / 2**20:9.1f} MiB, measured "
          f"{peak / 2**20:9.1f} MiB, ratio {est.peak_bytes / peak:5.2f} | time est "
          f"{est.seconds:8.2f} s, measured {seconds:8.2f} s, ratio {est.seconds / seconds:5.2f}",
          flush=True)


#: (d, n, p, steps, solver) of the varpro cases: dense and CG on both sides of the switch.
VARPRO_CASES = [(10, 10, 100, 200, "auto"), (20, 10, 4000, 40, "auto"), (20, 10, 4000, 40, "cg"),
                (80, 16, 1280, 30, "auto"), (80, 16, 12800, 10, "auto"),
                (3072, 4, 12288, 5, "auto")]
LARGE_CASES = [(3072, 10, 30720, 3, "auto")]


def varpro_steps(cases) -> None:
    """Estimated against measured seconds per LM iteration of reconstruct(method="varpro")."""
    import rftheory.reconstruct as rec
    from rftheory import varpro

    made: list = []

    class Counted(varpro.Problem):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    rec.Problem = Counted  # counts only; the attack is unchanged
    try:
        for d, n, p, steps, solver in cases:
            X, Y = sphere_data(n, d, 0), gaussian_labels(n, 0)
            features = RandomFeatures("relu+tanh", d=d, p=p, seed=0, v_cache_bytes=2**33)
            theta = train_min_norm(features, X, Y).theta
            start = time.perf_counter()
            result = rec.reconstruct(features, theta, n, seed=0, max_steps=steps, solver=solver)
            seconds = time.perf_counter() - start
            problem = made[-1]
            used = budget.varpro_solver(d=d, p=p, n_hat=n, solver=solver)
            est = budget.estimate_reconstruct(d=d, n=n, p=p, method="varpro", solver=solver,
                                              max_steps=result.steps, v_cache_bytes=2**33,
                                              include_training=False)
            per_est, per = est.seconds / result.steps, seconds / result.steps
            trials = result.evaluations / result.steps
            bound = budget._cg_iterations(n) + 1
            products = (f", CG products/trial {problem.products / result.evaluations:5.1f} "
                        f"(bound {bound:.0f})" if used == "cg" else "")
            print(f"varpro d={d:4d} n={n:2d} p={p:6d} {used:5s} {result.steps:3d} steps | "
                  f"est {per_est:8.4f} s/step, measured {per:8.4f} s/step, ratio "
                  f"{per_est / per:5.2f} | evaluations/step {trials:4.2f} (model "
                  f"{budget.VARPRO_EVALUATIONS:g}){products}", flush=True)
    finally:
        rec.Problem = varpro.Problem


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--varpro", action="store_true", help="only the varpro step model")
    parser.add_argument("--large", action="store_true",
                        help="with --varpro: also d = 3072, n = 10, p = dn (~1 GiB, minutes)")
    args = parser.parse_args()
    if args.varpro:
        varpro_steps(VARPRO_CASES + (LARGE_CASES if args.large else []))
        return
    for d, n, p, cache, act, dtype in [
            (50, 100, 40000, 0, "relu", "float64"), (50, 100, 40000, 2**30, "relu", "float64"),
            (100, 300, 20000, 0, "gelu", "float64"), (10, 1000, 5000, 0, "tanh", "float64"),
            (784, 50, 100000, 0, "relu", "float64"), (300, 50, 60000, 0, "relu+tanh", "float32")]:
        X, Y = sphere_data(n, d, 0).astype(dtype), gaussian_labels(n, 0).astype(dtype)

        def job():
            return train_min_norm(RandomFeatures(act, d=d, p=p, seed=0, v_cache_bytes=cache), X, Y)

        peak, seconds, _ = measured(job)
        row(f"train d={d} n={n} p={p} {act} {dtype} V {'cached' if cache else 'streamed'}",
            budget.estimate_train(d=d, n=n, p=p, dtype=dtype, v_cache_bytes=cache), peak, seconds)
    for d, n, p, cache, steps in [(50, 20, 30000, 2**30, 20), (50, 20, 30000, 0, 20),
                                  (100, 20, 20000, 2**30, 50)]:
        X, Y = sphere_data(n, d, 0), gaussian_labels(n, 0)

        def job():
            features = RandomFeatures("relu+tanh", d=d, p=p, seed=0, v_cache_bytes=cache)
            model = train_min_norm(features, X, Y)
            return reconstruct(features, model.theta, n, seed=0, max_steps=steps,
                               method="lbfgs")

        peak, seconds, result = measured(job)
        est = budget.estimate_reconstruct(
            d=d, n=n, p=p, method="lbfgs", max_steps=result.steps, max_rounds=result.rounds,
            evaluations_per_step=result.evaluations / max(result.steps, 1), v_cache_bytes=cache)
        row(f"reconstruct d={d} n={n} p={p} {result.steps} steps V "
            f"{'cached' if cache else 'streamed'}", est, peak, seconds)
    varpro_steps(VARPRO_CASES)
    from rftheory.concentration import measure_concentration
    for d, n, ps, reps in [(20, 200, [1000, 20000], 1), (10, 400, [3000], 1)]:
        peak, seconds, _ = measured(lambda: measure_concentration("relu", d, n, ps, reps=reps))
        row(f"kernel d={d} n={n} p={ps} reps={reps}",
            budget.estimate_kernel(d=d, n=n, p_values=ps, reps=reps), peak, seconds)
    for n, p, d in [(100, 50000, 20), (1000, 20000, 10)]:
        X = sphere_data(n, d, 0)
        peak, seconds, _ = measured(
            lambda: RandomFeatures("relu", d=d, p=p, seed=0).features(X, allow_large=True))
        row(f"features n={n} p={p} d={d}", budget.estimate_features(n=n, p=p, d=d), peak, seconds)

    a = np.random.default_rng(0).standard_normal((2000, 2000))
    start = time.perf_counter()
    a @ a
    gemm = 2 * 2000**3 / (time.perf_counter() - start)
    out = np.empty(10**7)
    start = time.perf_counter()
    np.random.default_rng(0).standard_normal(out=out)
    draws = out.size / (time.perf_counter() - start)
    print(f"this machine: float64 GEMM {gemm / 1e9:.1f} GFLOP/s (budget assumes "
          f"{budget.FLOP_RATE['float64'] / 1e9:.0f} for the streamed products); one-thread "
          f"Gaussian draws {draws / 1e6:.0f} M/s (budget assumes {budget.DRAW_RATE / 1e6:.0f} M/s "
          "with all cores)")
    print(f"available memory: {budget.available_memory() / 2**30:.2f} GiB; default limit "
          f"{budget.memory_limit()[1]}")


if __name__ == "__main__":
    main()
