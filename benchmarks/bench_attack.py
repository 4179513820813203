"""Issue #14's targets: success rate, iterations, passes over V and wall time of the attack.

For each case and seed s the model is the one of ``bench_reconstruct_success.py``: data
X = ``sphere_data(n, d, s)`` (or 5 digits images), labels from seed s, V seeded by s, θ* = Φ⁺Y;
then ``reconstruct(features, θ*, n, seed=s, method=M)`` with default options. A seed succeeds
when the paper's ρ (``rftheory.metrics.rho``, variant "abs") is below 0.01.

Cases (``--cases``, comma-separated):

* ``ACT:d:n:r`` — random features, p = round(r·d·n), Gaussian labels;
* ``twolayer:DATA:LOSS:k:r`` — a two-layer network with W₁ frozen trained by GD
  (:func:`rftheory.twolayer.train_two_layer`, relu+tanh, W₂(0) = 0), θ = ΔW₂ᵀ of shape (width, k),
  p^(L) = k·width = round(r·d·n); DATA is ``sphere`` (d = n = 8, k random classes) or ``digits``
  (5 images, d = 64, k = 10 classes), LOSS is ``cross_entropy`` or ``square`` (one-hot targets;
  ``square`` with k = 1 fits Gaussian labels).

Usage::

    python benchmarks/bench_attack.py                      # the issue's targets, 10 seeds
    python benchmarks/bench_attack.py --methods varpro,lbfgs --cases relu+tanh:10:10:1.5
    python benchmarks/bench_attack.py --curve relu+tanh:10:10 --ratios 1,1.1,1.25,1.5,2

Prints one line per seed, then per case and method: success rate, median/max LM or L-BFGS
iterations, passes over V, wall time, and the stop losses of the failures (with their ρ: a loss
≈ 0 with ρ large is a spurious zero, a loss well above tol an unfinished descent or a local
minimum). Timings on a shared machine vary with its load: the float64 GEMM rate is printed
before and after each case.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

import numpy as np

from rftheory.data import gaussian_labels, load_dataset, sphere_data
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.metrics import rho
from rftheory.reconstruct import reconstruct

from bench_reconstruct_success import gemm_gflops  # the same GEMM probe (benchmarks/ is on the path)

#: The issue's targets: case → (success rate, median wall seconds on 2 cores) or None. The
#: k-output cases have no absolute rate: their target is the success of the k = 1 case of the
#: same data (:data:`K_OUTPUT_REFERENCE`), checked in the final lines.
TARGETS = {
    "relu+tanh:10:10:1.5": (0.8, None), "relu+tanh:20:10:1.5": (0.8, None),
    "relu+tanh:10:10:1.25": (0.5, None), "relu+tanh:20:10:1.25": (0.5, None),
    "relu+tanh:100:20:10": (0.9, 10.0), "relu:100:20:10": (0.9, 10.0),
    "twolayer:sphere:square:1:4": None,
    "twolayer:sphere:cross_entropy:3:4": None, "twolayer:sphere:square:3:4": None,
    "twolayer:digits:square:1:4": None,
    "twolayer:digits:cross_entropy:10:4": None, "twolayer:digits:square:10:4": None,
}
#: k-output case → the k = 1 case whose success it must match (issue #14: "the same success
#: as k = 1" at p^(L) = 4dn).
K_OUTPUT_REFERENCE = {
    "twolayer:sphere:cross_entropy:3:4": "twolayer:sphere:square:1:4",
    "twolayer:sphere:square:3:4": "twolayer:sphere:square:1:4",
    "twolayer:digits:cross_entropy:10:4": "twolayer:digits:square:1:4",
    "twolayer:digits:square:10:4": "twolayer:digits:square:1:4",
}
_STREAM_CLASSES = 2**41 + 2   # the class labels' stream of verification/twolayer_law.py


def rf_problem(activation: str, d: int, n: int, ratio: float, seed: int):
    """(features, θ*, X) of the random-features case."""
    X = sphere_data(n, d, seed)
    p = max(n + 1, int(round(ratio * d * n)))
    features = RandomFeatures(activation, d, p, seed=seed, v_cache_bytes=2**30)
    return features, train_min_norm(features, X, gaussian_labels(n, seed)).theta, X


def twolayer_problem(data: str, loss: str, k: int, ratio: float, seed: int):
    """(features, θ = ΔW₂ᵀ, X) of a GD-trained network with its first layer frozen."""
    from rftheory.twolayer import train_two_layer

    if data == "sphere":
        ds = load_dataset("sphere", 8, 8, seed)
        classes = np.random.default_rng([seed, _STREAM_CLASSES]).integers(0, k, ds.n)
    else:
        ds = load_dataset("digits", 5, None, seed)
        classes = np.asarray(ds.classes, dtype=np.int64)
    X = ds.X
    n, d = X.shape
    if loss == "cross_entropy":
        Y, tol = classes, 1e-2
    elif k == 1:
        Y, tol = gaussian_labels(n, seed), 1e-16
    else:
        Y, tol = np.eye(k)[classes], 1e-16
    width = max(1, round(ratio * d * n / k))
    trained = train_two_layer(X, Y, width=width, activation="relu+tanh", loss=loss,
                              train_first_layer=False, steps=20000, tol=tol, seed=seed,
                              n_classes=k if loss == "cross_entropy" else None)
    return trained.features(), trained.theta, X


def run_seed(case: str, seed: int, method: str) -> dict:
    parts = case.split(":")
    if parts[0] == "twolayer":
        features, theta, X = twolayer_problem(parts[1], parts[2], int(parts[3]),
                                              float(parts[4]), seed)
    else:
        features, theta, X = rf_problem(parts[0], int(parts[1]), int(parts[2]),
                                        float(parts[3]), seed)
    t = time.perf_counter()
    res = reconstruct(features, theta, X.shape[0], seed=seed, method=method)
    wall = time.perf_counter() - t
    # Numerical rank r of θ: the span condition "span θ ⊂ span Φ̂" gives r·p equations, so
    # r·p/(dn) is the count that p/(dn) is for k = 1 (r ≤ min(k, n); rank-deficient ΔW₂ is
    # common with k ≥ n: GD's k outputs share at most n directions, often fewer).
    sing = np.linalg.svd(np.asarray(theta).reshape(features.p, -1), compute_uv=False)
    rank = int(np.sum(sing > 1e-8 * sing[0]))
    n, d = X.shape
    return {"rho": rho(X, res.X_hat, "abs"), "loss": res.loss, "steps": res.steps,
            "rounds": res.rounds, "evaluations": res.evaluations, "passes": res.passes,
            "stop": res.stop_reason, "wall": wall, "p": features.p, "rank": rank,
            "count": rank * features.p / (d * n)}


def summarise(case: str, method: str, rows: list[dict], threshold: float) -> str:
    ok = [r["rho"] < threshold for r in rows]
    med = statistics.median
    fails = [f"{r['loss']:.0e}/ρ={r['rho']:.2f}" for r, good in zip(rows, ok) if not good]
    by_rank = {}
    for r, good in zip(rows, ok):
        by_rank.setdefault(r["rank"], []).append(good)
    ranks = "" if set(by_rank) == {1} else "; by rank of θ (r·p/dn): " + ", ".join(
        f"r={k} ({statistics.median(x['count'] for x in rows if x['rank'] == k):.2f}) "
        f"{sum(v)}/{len(v)}" for k, v in sorted(by_rank.items()))
    target = TARGETS.get(case)
    verdict = ""
    if target is not None:
        rate, wall = target
        verdict = " target ≥ %d %%: %s" % (100 * rate,
                                           "MET" if sum(ok) >= rate * len(rows) else "missed")
        if wall is not None:
            verdict += "; median wall target ≤ %g s: %s (timing: valid on a quiet machine only)" % (
                wall, "MET" if statistics.median(r["wall"] for r in rows) <= wall else "missed")
    return (f"== {case} [{method}] p={rows[0]['p']}: success {sum(ok)}/{len(rows)} "
            f"({100 * sum(ok) / len(rows):.0f} %){verdict}; iterations median "
            f"{med(r['steps'] for r in rows):.0f} max {max(r['steps'] for r in rows)}; rounds "
            f"median {med(r['rounds'] for r in rows):.0f}; passes median "
            f"{med(r['passes'] for r in rows):.0f}; wall median {med(r['wall'] for r in rows):.2f}s "
            f"max {max(r['wall'] for r in rows):.2f}s; failures (loss/ρ): {' '.join(fails) or '-'}"
            + ranks)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(TARGETS),
                    help="comma-separated cases (default: the issue's targets)")
    ap.add_argument("--curve", default=None, metavar="ACT:d:n",
                    help="instead of --cases: success against p/(dn) for one (activation, d, n)")
    ap.add_argument("--ratios", default="0.75,1,1.1,1.25,1.5,2,3",
                    help="p/(dn) values of --curve (default %(default)s)")
    ap.add_argument("--methods", default="varpro", help="comma-separated: varpro, lbfgs")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per case (default 10)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--threshold", type=float, default=0.01, help="success: ρ below this")
    ap.add_argument("--quiet", action="store_true", help="no per-seed lines")
    args = ap.parse_args(argv)
    cases = ([f"{args.curve}:{r}" for r in args.ratios.split(",")] if args.curve
             else args.cases.split(","))
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
          f"float64 GEMM {gemm_gflops():.1f} GFLOP/s", flush=True)
    success: dict[tuple[str, str], tuple[int, int]] = {}
    for case in cases:
        for method in args.methods.split(","):
            rows = []
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                r = run_seed(case, seed, method)
                rows.append(r)
                if not args.quiet:
                    print(f"{case} [{method}] seed={seed:<3} ρ={r['rho']:.1e} loss={r['loss']:.1e} "
                          f"iterations={r['steps']:<6} rounds={r['rounds']:<4} "
                          f"evals={r['evaluations']:<6} passes={r['passes']:<7} {r['stop']:<9} "
                          f"{r['wall']:.2f}s rank(θ)={r['rank']} r·p/dn={r['count']:.2f}",
                          flush=True)
            success[case, method] = (sum(r["rho"] < args.threshold for r in rows), len(rows))
            print(summarise(case, method, rows, args.threshold)
                  + f"; GEMM now {gemm_gflops():.1f} GFLOP/s, peak RSS "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB", flush=True)
    for (case, method), (good, total) in success.items():
        ref = K_OUTPUT_REFERENCE.get(case)
        if ref is not None and (ref, method) in success:
            ref_good, ref_total = success[ref, method]
            met = good / total >= ref_good / ref_total
            print(f"== k-output target [{method}]: {case} {good}/{total} against k = 1 {ref} "
                  f"{ref_good}/{ref_total}: {'MET' if met else 'missed'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
