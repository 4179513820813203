"""Issue #26: why the default attack fails at p = 1.05–1.1·dn — measurements of its landscape.

The problems are those of ``bench_attack.py`` (``rf_problem``: sphere data, Gaussian labels, V
seeded by the seed, θ* = Φ⁺Y), so "seed s" here is seed s there. Success = the paper's ρ ("abs")
below 0.01. Everything is deterministic (same command → same numbers); CPU times are the
process's.

Subcommands:

* ``basin`` — the truth's basin under one LM run: from the training set X, every row turned by
  about σ radians (x + σ‖x‖g/√d, retracted), how often does one LM run (no hops) come back
  (ρ < 0.01)? Also the spread of the Gauss–Newton matrix JᵀJ at the truth in the tangent
  spaces: its smallest eigenvalue relative to the mean damping scale s_i and its condition
  number.
* ``walks`` — the default outer search (a replica of :func:`rftheory.varpro.minimise`'s loop with
  a record of every LM run; same random stream as ``reconstruct(..., seed=s)``, so the same
  outcome), then per walk: its best loss, how many of its rows lie within cos > 0.99 of a
  training point and which ones; and, per training point, its weight |a_i| (the training set's
  own coefficients, θ* = Φᵀa, relative to the largest) and the number of walks that found it.
  ``--hop`` swaps the perturbation for a variant (see HOPS) to measure it; ``--consensus``
  starts each fresh walk from the rows that recur in the earlier walks' bests.
* ``hard`` — the training points that no walk finds are those of smallest |a_i|. This puts the
  others at the truth turned by ε degrees, draws the k smallest-|a| rows at random, and runs LM on
  those k rows alone, then on all rows: how often does that recover the data, against ε?

Usage::

    python benchmarks/diag_attack_limit.py basin --d 10 --n 10 --ratios 1.05,1.1,1.25,1.5 --seeds 4
    python benchmarks/diag_attack_limit.py walks --d 10 --n 10 --ratio 1.1 --seeds 2 --first-seed 1
    python benchmarks/diag_attack_limit.py walks --hop angle0.2 --seeds 8 --quiet
    python benchmarks/diag_attack_limit.py walks --consensus --seeds 8 --quiet
    python benchmarks/diag_attack_limit.py hard --seed 2 --k 3 --eps 0,1,2,4
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from rftheory import varpro as vp
from rftheory.metrics import rho
from rftheory.reconstruct import _STREAM_CANDIDATES

from bench_attack import rf_problem  # benchmarks/ is on the path

GOOD_COS = 0.99   # a row "has found" a training point when its cosine to it exceeds this


def problem(d: int, n: int, ratio: float, seed: int, activation: str = "relu+tanh"):
    features, theta, X = rf_problem(activation, d, n, ratio, seed)
    return vp.Problem(features, np.asarray(theta, dtype=np.float64).reshape(features.p, -1),
                      np, None), np.asarray(X, dtype=np.float64)


def weights(P: vp.Problem, X: np.ndarray) -> np.ndarray:
    """|a_i| (row norms of the coefficients) at X, relative to the largest."""
    A = np.asarray(P.evaluate(X).coefficients, dtype=np.float64).reshape(X.shape[0], -1)
    w = np.linalg.norm(A, axis=1)
    return w / w.max()


def found(Xh: np.ndarray, X: np.ndarray) -> np.ndarray:
    """For each training point, whether some row of Xh lies within cos > GOOD_COS of it."""
    U = Xh / np.linalg.norm(Xh, axis=1, keepdims=True)
    T = X / np.linalg.norm(X, axis=1, keepdims=True)
    return (U @ T.T).max(axis=0) > GOOD_COS


def one_run(P: vp.Problem, X0: np.ndarray, max_steps: int, free=None, tol: float = 1e-10):
    """LM from X0 (``free``: then on all rows); returns (best X, best loss, iterations)."""
    run = vp._Run(P, tol, max_steps, None, 10, lambda x: x)
    try:
        X1 = X0
        if free is not None:
            X1, _ = vp.levenberg_marquardt(P, X0, run, free=np.asarray(free))
        vp.levenberg_marquardt(P, X1, run)
    except vp._Stop:
        pass
    return run.best_X, run.best_loss, run.steps


# -- basin ------------------------------------------------------------------------------------

def basin(args) -> None:
    sigmas = [float(s) for s in args.sigmas.split(",")]
    print(f"# LM from the truth, every row turned by ~σ rad, {args.tries} tries per σ; "
          f"JᵀJ at the truth (tangent spaces), eigenvalues / mean damping scale")
    for ratio in [float(r) for r in args.ratios.split(",")]:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            P, X = problem(args.d, args.n, ratio, seed)
            lin = P.linearise(X, P.evaluate(X))
            m, d = X.shape
            T = np.zeros((m * d, m * (d - 1)))
            for i in range(m):
                u = X[i] / np.linalg.norm(X[i])
                T[i * d:(i + 1) * d, i * (d - 1):(i + 1) * (d - 1)] = \
                    np.linalg.svd(np.eye(d) - np.outer(u, u))[0][:, :d - 1]
            ev = np.linalg.eigvalsh(T.T @ lin.hessian @ T)
            s = float(np.mean(lin.scale))
            parts = []
            for sig in sigmas:
                ok, its = 0, []
                for t in range(args.tries):
                    rng = np.random.default_rng([seed, t, int(round(sig * 1000))])
                    X0 = vp.retract(X, sig * rng.standard_normal(X.shape))
                    Xb, _, st = one_run(P, X0, args.max_steps)
                    ok += rho(X, Xb, "abs") < 0.01
                    its.append(st)
                parts.append(f"σ={sig:g}: {ok}/{args.tries} ({int(np.median(its))} it)")
            print(f"(d, n) = ({args.d}, {args.n}) p = {ratio:g}dn seed {seed}: "
                  f"λmin/s = {ev[0] / s:.1e}, cond = {ev[-1] / ev[0]:.1e}; " + ", ".join(parts),
                  flush=True)


# -- walks ------------------------------------------------------------------------------------

def hop_default(P, walk_X, rng, m, d):
    return vp.retract(walk_X, vp.HOP_ANGLE * rng.standard_normal((m, d)))


def hop_angle(angle):
    def hop(P, walk_X, rng, m, d):
        return vp.retract(walk_X, angle * rng.standard_normal((m, d)))
    return hop


def hop_log_uniform(P, walk_X, rng, m, d):
    """Every row turned by one angle drawn log-uniformly in [0.05, 0.5] rad."""
    angle = math.exp(rng.uniform(math.log(0.05), math.log(0.5)))
    return vp.retract(walk_X, angle * rng.standard_normal((m, d)))


def hop_mixed(P, walk_X, rng, m, d):
    """Every row turned by 0.1, 0.2 or 0.3 rad (one of them, uniformly)."""
    angle = [0.1, 0.2, 0.3][rng.integers(3)]
    return vp.retract(walk_X, angle * rng.standard_normal((m, d)))


def hop_subset(P, walk_X, rng, m, d):
    """A random subset of 1..m rows turned by HOP_ANGLE, the others kept."""
    k = int(rng.integers(1, m + 1))
    rows = rng.choice(m, k, replace=False)
    step = np.zeros((m, d))
    step[rows] = vp.HOP_ANGLE * rng.standard_normal((k, d))
    return vp.retract(walk_X, step)


def hop_small_a(redraw: bool):
    """The j ≤ ⌈m/2⌉ rows of smallest |a| redrawn at random (``redraw``) or turned by 0.6 rad,
    the others turned by 0.1 rad (``redraw``) or 0.15 rad."""
    def hop(P, walk_X, rng, m, d):
        w = weights(P, walk_X)
        j = int(rng.integers(1, (m + 1) // 2 + 1))
        rows = np.argsort(w, kind="stable")[:j]
        if redraw:
            X = vp.retract(walk_X, 0.1 * rng.standard_normal((m, d)))
            X[rows] = vp.random_points(rng, j, d)
            return X
        ang = np.full((m, 1), 0.15)
        ang[rows] = 0.6
        return vp.retract(walk_X, ang * rng.standard_normal((m, d)))
    return hop


HOPS = {"default": hop_default, "angle0.2": hop_angle(0.2), "subset": hop_subset,
        "log-uniform": hop_log_uniform, "mixed": hop_mixed,
        "small-a-redraw": hop_small_a(True), "small-a-turn": hop_small_a(False)}


def consensus_start(bests, rng, m, d, threshold=0.98):
    """A fresh walk's start from the best points of the walks so far (issue #26's "restarts
    informed by which candidates are already fitted"): rows that recur (cos > ``threshold``) in
    the bests of other walks, most recurrent first, each replaced by the normalised mean of its
    matches, at most m − 1 of them; the other rows random. Random when fewer than 2 walks ended."""
    X = vp.random_points(rng, m, d)
    if len(bests) < 2:
        return X
    U = np.concatenate([b / np.linalg.norm(b, axis=1, keepdims=True) for b in bests])
    walk_of = np.repeat(np.arange(len(bests)), m)
    C = U @ U.T
    count = np.array([len(set(walk_of[C[i] > threshold]) - {walk_of[i]}) for i in range(len(U))])
    picked, alive = [], np.ones(len(U), dtype=bool)
    for i in np.argsort(-count, kind="stable"):
        if count[i] < 1 or len(picked) == m - 1:
            break
        if alive[i]:
            mean = U[C[i] > threshold].mean(axis=0)
            picked.append(mean / np.linalg.norm(mean) * math.sqrt(d))
            alive &= C[i] <= threshold
    if picked:
        X[:len(picked)] = np.array(picked)
    return X


def walk_search(P, X0, rng, *, max_steps, hop, patience=30, tol=1e-10, consensus=False):
    """:func:`rftheory.varpro.minimise`'s loop (same moves, same stream with ``hop_default``)
    with a record (walk, loss, X) of every LM run; ``consensus``: fresh walks start from
    :func:`consensus_start` instead of random points."""
    run = vp._Run(P, tol, max_steps, None, 10, lambda x: x)
    m, d = X0.shape
    X, record, walk, bests = X0, [], 1, []
    walk_X, walk_loss, walk_rounds, since_better, returns = None, math.inf, 0, 0, 0
    stop = None
    try:
        while True:
            walk_rounds += 1
            X_end, loss_end = vp.levenberg_marquardt(P, X, run)
            record.append((walk, loss_end, X_end))
            returned = abs(loss_end - walk_loss) <= vp.RETURN_TOL * walk_loss
            returns = returns + 1 if returned else 0
            if loss_end < walk_loss:
                since_better = 0 if loss_end < vp.IMPROVEMENT * walk_loss else since_better + 1
                walk_X, walk_loss = X_end, loss_end
            else:
                since_better += 1
            if since_better >= patience or returns >= vp.RETURNS:
                bests.append(walk_X)
                X = consensus_start(bests, rng, m, d) if consensus else vp.random_points(rng, m, d)
                walk += 1
                walk_X, walk_loss, walk_rounds, since_better, returns = None, math.inf, 0, 0, 0
                continue
            move = vp.next_move(walk_rounds, since_better, m)
            if move == "hop":
                X = hop(P, walk_X, rng, m, d)
            else:
                X = vp.exchange(P, walk_X, rng, run, grow=move == "grow",
                                n_screen=vp.EXCHANGE_SCREEN, top=vp.EXCHANGE_TOP)
    except vp._Stop as exc:   # an LM run (or an exchange) ended the search mid-way
        stop = exc.reason
        if stop == "tolerance":
            record.append((walk, run.best_loss, run.best_X))
    return run, stop, record


def walks(args) -> None:
    hop = HOPS[args.hop]
    ok_all = 0
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        P, X = problem(args.d, args.n, args.ratio, seed)
        a = weights(P, X)
        rng = np.random.default_rng([seed, _STREAM_CANDIDATES])   # reconstruct's stream
        X0 = vp.random_points(rng, args.n, args.d)
        c = time.process_time()
        run, stop, record = walk_search(P, X0, rng, max_steps=args.max_steps, hop=hop,
                                        consensus=args.consensus)
        cpu = time.process_time() - c
        r = rho(X, run.best_X, "abs")
        ok_all += r < 0.01
        nwalks = record[-1][0] if record else 0
        print(f"[{args.hop}{' consensus' if args.consensus else ''}] ({args.d}, {args.n}) {args.ratio:g}dn seed {seed}: ρ = {r:.1e}, "
              f"loss {run.best_loss:.1e}, {stop}, {run.steps} iterations, {len(record)} LM runs, "
              f"{nwalks} walks, cpu {cpu:.1f} s", flush=True)
        if args.quiet:
            continue
        hits = np.zeros(args.n, dtype=int)
        for w in range(1, nwalks + 1):
            runs = [(l, Xe) for (ww, l, Xe) in record if ww == w]
            if not runs:
                continue
            lb, Xb = min(runs, key=lambda t: t[0])
            f = found(Xb, X)
            hits += f
            print(f"    walk {w:2d}: {len(runs):3d} LM runs, best loss {lb:.1e}, "
                  f"points found {int(f.sum())}/{args.n}: {np.flatnonzero(f).tolist()}")
        order = np.argsort(a)
        print("    training points by |a_i| (ascending): "
              + ", ".join(f"#{i} |a|={a[i]:.2f} found by {hits[i]}/{nwalks}" for i in order))
    print(f"SUMMARY [{args.hop}{' consensus' if args.consensus else ''}] ({args.d}, {args.n}) {args.ratio:g}dn seeds "
          f"{args.first_seed}–{args.first_seed + args.seeds - 1}, budget {args.max_steps}: "
          f"{ok_all}/{args.seeds}", flush=True)


# -- hard -------------------------------------------------------------------------------------

def hard(args) -> None:
    P, X = problem(args.d, args.n, args.ratio, args.seed)
    a = weights(P, X)
    rows = np.sort(np.argsort(a)[:args.k])
    print(f"# ({args.d}, {args.n}) {args.ratio:g}dn seed {args.seed}: the {args.k} smallest-|a| "
          f"points {rows.tolist()} (|a| {np.round(a[rows], 3).tolist()}) redrawn at random, the "
          f"others at the truth turned by ε degrees; {args.tries} tries each")
    for eps in [float(e) for e in args.eps.split(",")]:
        res = {"alone, then all": 0, "all at once": 0}
        rng = np.random.default_rng([args.seed, int(round(eps * 100))])
        for t in range(args.tries):
            base = vp.retract(X, math.radians(eps) * rng.standard_normal(X.shape))
            X0 = base.copy()
            X0[rows] = vp.random_points(rng, args.k, args.d)
            for name, free in (("alone, then all", rows), ("all at once", None)):
                Xb, _, _ = one_run(P, X0, args.max_steps, free=free)
                res[name] += rho(X, Xb, "abs") < 0.01
        print(f"ε = {eps:g}°: " + ", ".join(f"{k} {v}/{args.tries}" for k, v in res.items()),
              flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("basin", "walks", "hard"):
        s = sub.add_parser(name)
        s.add_argument("--d", type=int, default=10)
        s.add_argument("--n", type=int, default=10)
        s.add_argument("--seeds", type=int, default=4)
        s.add_argument("--first-seed", type=int, default=0)
        s.add_argument("--tries", type=int, default=8)
        if name == "basin":
            s.add_argument("--ratios", default="1.05,1.1,1.25,1.5")
            s.add_argument("--sigmas", default="0.05,0.1,0.2,0.3")
            s.add_argument("--max-steps", type=int, default=3000)
        elif name == "walks":
            s.add_argument("--ratio", type=float, default=1.1)
            s.add_argument("--max-steps", type=int, default=20000)
            s.add_argument("--hop", choices=sorted(HOPS), default="default")
            s.add_argument("--quiet", action="store_true", help="no per-walk lines")
            s.add_argument("--consensus", action="store_true",
                           help="fresh walks start from the consensus of earlier walk bests")
        else:
            s.add_argument("--ratio", type=float, default=1.1)
            s.add_argument("--seed", type=int, default=2)
            s.add_argument("--k", type=int, default=3)
            s.add_argument("--eps", default="0,1,2,4")
            s.add_argument("--max-steps", type=int, default=3000)
    args = ap.parse_args(argv)
    {"basin": basin, "walks": walks, "hard": hard}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
