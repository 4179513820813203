"""Issues #14/#26's targets: success, iterations, passes over V, wall and CPU time of the attack.

For each case and seed s the model is the one of ``bench_reconstruct_success.py``: data
X = ``sphere_points(n, d, s)`` (or 5 digits images), labels from seed s, V seeded by s, θ* = Φ⁺Y;
then ``reconstruct(features, θ*, n, seed=s, method=M)`` with default options. A seed succeeds
when the paper's ρ (``rftheory.metrics.rho``, variant "abs") is below 0.01.

Cases (``--cases``, comma-separated):

* ``ACT:d:n:r`` — random features, p = round(r·d·n), Gaussian labels;
* ``patches:ACT:n:r`` — the same on n image patches (``load_dataset("patches")``, d = 3072);
* ``twolayer:DATA:LOSS:k:r`` — a two-layer network with W₁ frozen trained by GD
  (:func:`rftheory.twolayer.train_two_layer`, relu+tanh, W₂(0) = 0), θ = ΔW₂ᵀ of shape (width, k),
  p^(L) = k·width = round(r·d·n); DATA is ``sphere`` (d = n = 8, k random classes) or ``digits``
  (5 images, d = 64, k = 10 classes), LOSS is ``cross_entropy`` or ``square`` (one-hot targets;
  ``square`` with k = 1 fits Gaussian labels).

Methods (``--methods``, comma-separated): ``varpro`` and ``lbfgs`` are this tree's methods;
``ref`` is the *reference* tree's default attack (``--reference DIR``, a checkout of the commit to
compare against, e.g. ``git worktree add /tmp/ref d847871`` for the attack before issue #26): each
of its seeds runs in a child process with ``PYTHONPATH=DIR``, on the same problem (the data, V and
θ* are pure functions of the seed in both trees).

Usage::

    python benchmarks/bench_attack.py                      # issue #26's targets, 10 seeds
    python benchmarks/bench_attack.py --methods varpro,ref,lbfgs --reference /tmp/ref --seeds 6
    python benchmarks/bench_attack.py --methods varpro,lbfgs --cases relu+tanh:10:10:1.5
    python benchmarks/bench_attack.py --curve relu+tanh:10:10 --ratios 1,1.1,1.25,1.5,2
    python benchmarks/bench_attack.py --growth 10,20,40,80 # steps to success at 1.5dn, n = 8
    python benchmarks/bench_attack.py --init-table         # spectral initialisation: ρ at step 0
    python benchmarks/bench_attack.py --directions         # the build's residual directions
    python benchmarks/bench_attack.py --cases relu+tanh:10:10:1.1 --max-steps 100000 \
        --max-rounds 5000 --budgets 3000,20000,50000,100000   # success against the budget

Prints one line per seed, then per case and method: success rate (with its 95 % Wilson
interval over the seeds; a target inside that interval is reported as undecided at that many
seeds, whichever side of it the count falls), median/max LM or L-BFGS
iterations, passes over V, wall time, and the stop losses of the failures (with their ρ: a loss
≈ 0 with ρ large is a spurious zero, a loss well above tol an unfinished descent or a local
minimum). Timings on a shared machine vary with its load: the float64 GEMM rate is printed
before and after each case. CPU time is the process's (all threads); run seed sweeps with
``OPENBLAS_NUM_THREADS=1`` on a shared machine. The last lines are a side-by-side table: per case
and method, successes, median iterations and passes of the successes, median wall and CPU time.

``--budgets`` adds, per case and method, the success within each smaller budget B. It is read off
the same runs, exactly: the budget only stops a run (it is checked after an iteration and steers
nothing), so a run with budget B is the run with the larger budget cut at B. That holds while the
round cap (``--max-rounds``; reconstruct's default 1000 LM runs binds near 25 000–30 000
iterations) and the work budget in sweeps stay above what the largest budget uses.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import resource
import statistics
import sys
import time

import numpy as np

from rftheory.data import gaussian_labels, load_dataset, sphere_points
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.metrics import rho
from rftheory.reconstruct import reconstruct, step_budget

from bench_reconstruct_success import gemm_gflops  # the same GEMM probe (benchmarks/ is on the path)

#: The issue's targets: case → (success rate, median wall seconds on 2 cores) or None. The
#: k-output cases have no absolute rate: their target is the success of the k = 1 case of the
#: same data (:data:`K_OUTPUT_REFERENCE`), checked in the final lines.
TARGETS = {
    # issue #26
    "relu+tanh:10:10:1.1": (0.8, None), "relu+tanh:20:10:1.1": (0.8, None),
    "relu+tanh:10:10:1.05": (0.5, None), "relu+tanh:20:10:1.05": (0.5, None),
    "relu+tanh:40:8:1.25": (0.8, None), "relu+tanh:80:8:1.25": (0.8, None),
    "relu+tanh:80:16:1.25": (0.8, None),
    "patches:relu:10:10": (1.0, 900.0), "patches:relu:10:1": (0.0, 1800.0),
    # issue #14
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
#: The default cases: issue #26's targets that take seconds to minutes per seed (the d = 3072
#: patches cases take many minutes each: ask for them with --cases).
DEFAULT_CASES = ("relu+tanh:10:10:1.1,relu+tanh:20:10:1.1,relu+tanh:10:10:1.05,"
                 "relu+tanh:20:10:1.05,relu+tanh:40:8:1.25,relu+tanh:80:8:1.25,"
                 "relu+tanh:80:16:1.25,relu+tanh:100:20:10,relu:100:20:10")
_STREAM_CLASSES = 2**41 + 2   # the class labels' stream of verification/twolayer_law.py


def v_cache_bytes(d: int | None = None, n: int | None = None, p: int | None = None) -> int:
    """This tree's default V cache (:func:`rftheory.features.default_v_cache_bytes`, given the
    job's declared peak when the tree's default takes one, as ``rftheory reconstruct`` does),
    or 1 GiB in a tree that has none (the CLI's earlier default)."""
    try:
        from rftheory.features import default_v_cache_bytes
    except ImportError:
        return 2**30
    if d is None:
        return default_v_cache_bytes()
    from rftheory.pipeline import reconstruction_memory
    try:
        return default_v_cache_bytes(
            lambda cache: reconstruction_memory(d=d, n=n, p=p, v_cache_bytes=cache).peak_bytes)
    except TypeError:   # a tree whose default takes no peak
        return default_v_cache_bytes()


def rf_problem(activation: str, d: int, n: int, ratio: float, seed: int, data: str = "sphere"):
    """(features, θ*, X) of the random-features case (``data``: sphere or patches)."""
    X = sphere_points(n, d, seed) if data == "sphere" else load_dataset(data, n, rng=seed).X
    d = X.shape[1]
    p = max(n + 1, int(round(ratio * d * n)))
    features = RandomFeatures(activation, d, p, seed=seed, v_cache_bytes=v_cache_bytes(d, n, p))
    return features, train_min_norm(features, X, gaussian_labels(n, seed)).theta, X


def twolayer_problem(data: str, loss: str, k: int, ratio: float, seed: int):
    """(features, θ = ΔW₂ᵀ, X) of a GD-trained network with its first layer frozen."""
    from rftheory.twolayer import train_two_layer

    if data == "sphere":
        ds = load_dataset("sphere", 8, d=8, rng=seed)
        classes = np.random.default_rng([seed, _STREAM_CLASSES]).integers(0, k, ds.n)
    else:
        ds = load_dataset("digits", 5, rng=seed)
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


def run_seed(case: str, seed: int, method: str, reference: str | None = None,
             max_steps: int | None = None, max_rounds: int | None = None) -> dict:
    """One seed of one case; ``method="ref"``: the reference tree's default, in a child process.

    ``max_steps``, ``max_rounds``: the budget and the round cap (None: reconstruct's defaults)."""
    if method == "ref":
        if not reference:
            raise SystemExit("bench_attack.py: method 'ref' needs --reference DIR")
        env = dict(os.environ, PYTHONPATH=os.path.abspath(reference))
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", case,
                              str(seed), "default"]
                             + ([] if max_steps is None else ["--max-steps", str(max_steps)])
                             + ([] if max_rounds is None else ["--max-rounds", str(max_rounds)]),
                             env=env, check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    parts = case.split(":")
    if parts[0] == "patches":
        features, theta, X = rf_problem(parts[1], 0, int(parts[2]), float(parts[3]), seed,
                                        data="patches")
    elif parts[0] == "twolayer":
        features, theta, X = twolayer_problem(parts[1], parts[2], int(parts[3]),
                                              float(parts[4]), seed)
    else:
        features, theta, X = rf_problem(parts[0], int(parts[1]), int(parts[2]),
                                        float(parts[3]), seed)
    kwargs = {} if method == "default" else {"method": method}
    if max_steps is not None:
        kwargs["max_steps"] = max_steps
    if max_rounds is not None:
        kwargs["max_rounds"] = max_rounds
    t, c = time.perf_counter(), time.process_time()
    res = reconstruct(features, theta, X.shape[0], seed=seed, **kwargs)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    # Numerical rank r of θ: the span condition "span θ ⊂ span Φ̂" gives r·p equations, so
    # r·p/(dn) is the count that p/(dn) is for k = 1 (r ≤ min(k, n); rank-deficient ΔW₂ is
    # common with k ≥ n: GD's k outputs share at most n directions, often fewer).
    sing = np.linalg.svd(np.asarray(theta).reshape(features.p, -1), compute_uv=False)
    rank = int(np.sum(sing > 1e-8 * sing[0]))
    n, d = X.shape
    budget = step_budget(d, kwargs.get("method")) if max_steps is None else max_steps
    return {"rho": rho(X, res.X_hat, "abs"), "loss": res.loss, "steps": res.steps,
            "budget": budget,
            "rounds": res.rounds, "evaluations": res.evaluations, "passes": res.passes,
            "stop": res.stop_reason, "wall": wall, "cpu": cpu, "p": features.p, "rank": rank,
            "count": rank * features.p / (d * n)}


def success_interval(successes: int, runs: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a success rate (``scipy.stats.binomtest``).

    Seeds are independent draws of the problem, so successes/runs is a binomial proportion;
    the interval says how far a rate over this many seeds can be from the rate itself (6 of
    6 seeds: [61 %, 100 %]; 26 of 30: [70 %, 95 %]).
    """
    from scipy.stats import binomtest

    ci = binomtest(successes, runs).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def summarise(case: str, method: str, rows: list[dict], threshold: float) -> str:
    ok = [r["rho"] < threshold for r in rows]
    low, high = success_interval(sum(ok), len(rows))
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
        if low < rate <= high:
            verdict += " (undecided at %d seeds: the interval contains %d %%)" % (len(rows),
                                                                               100 * rate)
        if wall is not None:
            verdict += "; median wall target ≤ %g s: %s (timing: valid on a quiet machine only)" % (
                wall, "MET" if statistics.median(r["wall"] for r in rows) <= wall else "missed")
    return (f"== {case} [{method}] p={rows[0]['p']}: success {sum(ok)}/{len(rows)} "
            f"({100 * sum(ok) / len(rows):.0f} %, 95 % interval {100 * low:.0f}–{100 * high:.0f} %)"
            f"{verdict}; iterations median "
            f"{med(r['steps'] for r in rows):.0f} max {max(r['steps'] for r in rows)}; rounds "
            f"median {med(r['rounds'] for r in rows):.0f}; passes median "
            f"{med(r['passes'] for r in rows):.0f}; wall median {med(r['wall'] for r in rows):.2f}s "
            f"max {max(r['wall'] for r in rows):.2f}s; CPU median {med(r['cpu'] for r in rows):.2f}s"
            f"; failures (loss/ρ): {' '.join(fails) or '-'}"
            + ranks)


def budget_table(case: str, method: str, rows: list[dict], budgets: list[int],
                 threshold: float) -> str:
    """Success within each budget B (iterations), read off the runs (each row's ``budget``).

    A success counts within B when it took at most B iterations. A budget above the runs' own
    is not read ("–": the runs stopped there)."""
    cells = []
    max_steps = min(r.get("budget", math.inf) for r in rows) if rows else math.inf
    for b in budgets:
        good = sum(r["rho"] < threshold and r["steps"] <= b for r in rows)
        cells.append(f"{b}: {good}/{len(rows)}" if b <= max_steps else f"{b}: –")
    stops = sorted({r["stop"] for r in rows if r["rho"] >= threshold})
    return (f"== budget [{method}] {case}: success within " + ", ".join(cells)
            + f" iterations (runs of {max_steps}; failures stopped by: {', '.join(stops) or '-'})")


def side_by_side(results: dict[tuple[str, str], list[dict]], threshold: float) -> list[str]:
    """One line per (case, method): successes, median iterations/passes of the successes,
    median wall and CPU time of all seeds."""
    med = statistics.median
    lines = [f"{'case':<28} {'method':<7} {'success':>8} {'med it (ok)':>11} "
             f"{'med passes':>10} {'med wall':>9} {'med CPU':>8}"]
    for (case, method), rows in results.items():
        ok = [r for r in rows if r["rho"] < threshold]
        it = f"{med(r['steps'] for r in ok):.0f}" if ok else "-"
        ps = f"{med(r['passes'] for r in ok):.0f}" if ok else "-"
        lines.append(f"{case:<28} {method:<7} {len(ok):>3}/{len(rows):<4} {it:>11} {ps:>10} "
                     f"{med(r['wall'] for r in rows):>8.2f}s {med(r['cpu'] for r in rows):>7.2f}s")
    return lines


def growth_table(results: dict[tuple[str, str], list[dict]], dims: list[int], n: int,
                 threshold: float) -> list[str]:
    """Median iterations to success at 1.5dn against d, with the fitted exponent of d."""
    lines = []
    methods = sorted({m for (_, m) in results})
    for method in methods:
        points = []
        for d in dims:
            rows = results.get((f"relu+tanh:{d}:{n}:1.5", method), [])
            ok = [r["steps"] for r in rows if r["rho"] < threshold]
            if ok:
                points.append((d, statistics.median(ok), len(ok), len(rows)))
        text = ", ".join(f"d={d}: {m:.0f} ({k}/{t})" for d, m, k, t in points)
        slope = ""
        if len(points) >= 2:
            x = np.log([pt[0] for pt in points])
            y = np.log([max(pt[1], 1) for pt in points])
            slope = f"; fitted growth d^{np.polyfit(x, y, 1)[0]:.2f} (target: exponent ≤ 1)"
        lines.append(f"== growth [{method}] median iterations to success at 1.5dn, n = {n}: "
                     f"{text}{slope}")
    return lines


def init_table(seeds: int) -> list[str]:
    """ρ at step 0 of the spectral initialisation against p/(dn) and d (relu+tanh and relu)."""
    from rftheory.data import to_sphere
    from rftheory.spectral_init import spectral_init

    def span_cos2(B, X):
        Q, _ = np.linalg.qr(X.T)
        return float(np.mean(np.linalg.svd(B.T @ Q, compute_uv=False) ** 2))

    lines = [f"{'act':<10} {'(d, n)':<9} {'p/dn':>5} {'ρ0 spectral':>11} {'ρ0 random':>9} "
             f"{'span cos²':>9} {'(random)':>8}  note"]
    for act in ("relu+tanh", "relu"):
        for d, n in ((10, 10), (20, 10), (40, 8), (80, 8), (100, 20)):
            for r in (1.1, 1.5, 3, 10, 30):
                vals = []
                for seed in range(seeds):
                    features, theta, X = rf_problem(act, d, n, r, seed)
                    init = spectral_init(features, theta, n, seed=seed)
                    rnd = to_sphere(np.random.default_rng(seed).standard_normal((n, d)))
                    vals.append((rho(X, init.X), rho(X, rnd), span_cos2(init.basis, X)))
                m = np.median(np.array(vals), axis=0)
                lines.append(f"{act:<10} ({d}, {n}){'':<{9 - len(f'({d}, {n})')}} {r:>5} "
                             f"{m[0]:>11.3f} {m[1]:>9.3f} {m[2]:>9.3f} {min(1, n / d):>8.2f}  "
                             f"{init.note}")
                print(lines[-1], flush=True)
    return lines


def directions_table(seeds: int) -> list[str]:
    """|cos| between a left-out training point and the residual's moment directions.

    For each case and seed, every training point in turn is left out with the others exact,
    and :func:`rftheory.spectral_init.residual_directions` is asked for the residual's T_1 and
    top T_2 eigenvector; the table gives their median and smallest |cos| with the left-out
    point, against the best of 1000 random points (√(2 ln 1000/d), about).
    """
    from rftheory.projection import projection_loss
    from rftheory.spectral_init import residual_directions

    lines = [f"{'case':<22} {'T_1 median (min)':>17} {'T_2 median (min)':>17} "
             f"{'random best of 1000':>20}"]
    print(lines[0], flush=True)
    for act, d, n, r in (("relu+tanh", 10, 10, 1.1), ("relu+tanh", 20, 10, 1.1),
                         ("relu+tanh", 40, 8, 1.25), ("relu+tanh", 80, 16, 1.25),
                         ("relu", 100, 20, 10)):
        c1, c2 = [], []
        for seed in range(seeds):
            features, theta, X = rf_problem(act, d, n, r, seed)
            for i in range(n):
                rest = np.delete(X, i, axis=0)
                a = projection_loss(features, rest, theta, gradient=False).coefficients
                pts, _ = residual_directions(features, theta - features.rmatvec(rest, a),
                                             k=1, rng=seed)
                c1.append(abs(pts[0] @ X[i]) / d)
                c2.append(abs(pts[2] @ X[i]) / d)
        lines.append(f"{f'{act}:{d}:{n}:{r}':<22} {np.median(c1):>10.2f} ({min(c1):.2f}) "
                     f"{np.median(c2):>10.2f} ({min(c2):.2f}) "
                     f"{min(1.0, np.sqrt(2 * np.log(1000) / d)):>20.2f}")
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES,
                    help="comma-separated cases (default: issue #26's targets but the d = 3072 ones)")
    ap.add_argument("--curve", default=None, metavar="ACT:d:n",
                    help="instead of --cases: success against p/(dn) for one (activation, d, n)")
    ap.add_argument("--ratios", default="0.75,1,1.1,1.25,1.5,2,3",
                    help="p/(dn) values of --curve (default %(default)s)")
    ap.add_argument("--growth", default=None, metavar="d1,d2,...",
                    help="instead of --cases: relu+tanh, n = 8, p = 1.5dn for these d; prints the "
                         "median iterations to success against d")
    ap.add_argument("--init-table", action="store_true",
                    help="instead of the attack: ρ at step 0 of rftheory.spectral_init")
    ap.add_argument("--directions", action="store_true",
                    help="instead of the attack: |cos| of the residual's moment directions with "
                         "a left-out training point (rftheory.spectral_init.residual_directions)")
    ap.add_argument("--methods", default="varpro",
                    help="comma-separated: varpro, lbfgs (this tree), ref (--reference's default)")
    ap.add_argument("--reference", default=None, metavar="DIR",
                    help="checkout whose default attack the method 'ref' runs")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per case (default 10)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--threshold", type=float, default=0.01, help="success: ρ below this")
    ap.add_argument("--quiet", action="store_true", help="no per-seed lines")
    ap.add_argument("--max-steps", type=int, default=None,
                    help="iteration budget (default: reconstruct's, 20 000 up to d = 40 and "
                         "500·d above); a smaller one "
                         "screens ideas quickly, but the targets are for the default")
    ap.add_argument("--max-rounds", type=int, default=None,
                    help="round cap, LM runs (default: reconstruct's, max(1000, budget/20)); "
                         "raise it further with a large --max-steps if the cap stops the runs")
    ap.add_argument("--budgets", default=None, metavar="B1,B2,...",
                    help="also print the success within each of these budgets (iterations, at "
                         "most --max-steps), read off the same runs")
    ap.add_argument("--one", nargs=3, metavar=("CASE", "SEED", "METHOD"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        budgets = [] if args.budgets is None else [int(b) for b in args.budgets.split(",")]
    except ValueError:
        ap.error(f"--budgets takes comma-separated integers, got {args.budgets!r}")
    largest = math.inf if args.max_steps is None else args.max_steps
    if any(b < 1 or b > largest for b in budgets):
        ap.error(f"--budgets must lie in 1..{largest} (the runs' budget, --max-steps)")
    if args.one:   # a child of method 'ref': one seed, one JSON line
        case, seed, method = args.one
        print(json.dumps(run_seed(case, int(seed), method, max_steps=args.max_steps,
                                  max_rounds=args.max_rounds)),
              flush=True)
        return 0
    if args.directions:
        directions_table(min(args.seeds, 4))
        return 0
    if args.init_table:
        init_table(min(args.seeds, 4))
        return 0
    if args.curve:
        cases = [f"{args.curve}:{r}" for r in args.ratios.split(",")]
    elif args.growth:
        dims = [int(x) for x in args.growth.split(",")]
        cases = [f"relu+tanh:{d}:8:1.5" for d in dims]
    else:
        cases = args.cases.split(",")
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
          f"float64 GEMM {gemm_gflops():.1f} GFLOP/s, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}", flush=True)
    results: dict[tuple[str, str], list[dict]] = {}
    for case in cases:
        for method in args.methods.split(","):
            rows = []
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                r = run_seed(case, seed, method, args.reference, args.max_steps,
                             args.max_rounds)
                rows.append(r)
                if not args.quiet:
                    print(f"{case} [{method}] seed={seed:<3} ρ={r['rho']:.1e} loss={r['loss']:.1e} "
                          f"iterations={r['steps']:<6} rounds={r['rounds']:<4} "
                          f"evals={r['evaluations']:<6} passes={r['passes']:<7} {r['stop']:<9} "
                          f"{r['wall']:.2f}s cpu={r['cpu']:.2f}s rank(θ)={r['rank']} "
                          f"r·p/dn={r['count']:.2f}", flush=True)
            results[case, method] = rows
            print(summarise(case, method, rows, args.threshold)
                  + f"; GEMM now {gemm_gflops():.1f} GFLOP/s, peak RSS "
                  f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB", flush=True)
            if budgets:
                print(budget_table(case, method, rows, budgets, args.threshold),
                      flush=True)
    for (case, method), rows in results.items():
        ref = K_OUTPUT_REFERENCE.get(case)
        if ref is not None and (ref, method) in results:
            good = sum(r["rho"] < args.threshold for r in rows)
            ref_rows = results[ref, method]
            ref_good = sum(r["rho"] < args.threshold for r in ref_rows)
            met = good / len(rows) >= ref_good / len(ref_rows)
            print(f"== k-output target [{method}]: {case} {good}/{len(rows)} against k = 1 {ref} "
                  f"{ref_good}/{len(ref_rows)}: {'MET' if met else 'missed'}", flush=True)
    if args.growth:
        for line in growth_table(results, dims, 8, args.threshold):
            print(line, flush=True)
    print("\n".join(side_by_side(results, args.threshold)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
