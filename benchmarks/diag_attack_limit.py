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
  a record of every LM run: the hop angle :func:`rftheory.varpro.hop_angle_for` of d, fresh
  walks built by :func:`rftheory.varpro.build` from d = BUILD_DIMENSION on, the same random
  stream as ``reconstruct(..., seed=s)``, so the same outcome below the wide-start size
  p < 6·dn), then per walk: its best loss, how many of its rows lie within cos > 0.99 of a
  training point and which ones; and, per training point, its weight |a_i| (the training set's
  own coefficients, θ* = Φᵀa, relative to the largest) and the number of walks that found it.
  ``--hop`` swaps the perturbation for a variant (see HOPS) to measure it — among them
  ``landscape`` (after the hop, one LM run on a random m·d of the p equations: a hop of the
  landscape too) and ``free-radius`` (after the hop, a few LM iterations with the rows off the
  sphere, held near it by a penalty: a continuation in the sphere constraint); the iterations
  of their extra LM runs count against the budget; ``softK``/``stiffK`` hop along the K
  softest/stiffest eigenvectors of the Gauss–Newton matrix at the walk's best point.
  ``loss-scaled`` shrinks the hop as the walk's best loss falls (to a third of the angle below
  1e-5). ``--consensus`` starts each fresh walk from the rows that recur in the earlier walks'
  bests; ``--patience N`` ends a walk after N rounds without a 10 % gain (reconstruct's: 30).
* ``recurrence`` — can the walks' failures be recombined? On each seed the default search
  fails, the rows its LM runs reached are clustered (cos > 0.99) and counted by the walks that
  reached them: how many of the clusters that recur (≥ 2 walks) lie at a training point, the
  truth of the most-recurring ones, what orthogonal matching pursuit of θ* over that pool
  picks, and an oracle — the pool's rows at the training points kept, the others random — run
  by LM (the random rows alone, then all) and by short searches with the default hops.
* ``continuation`` — a continuation in the number of equations: the p equations in a random
  order, LM from random rows on the first ``--start``·dn of them (below the count: a manifold of
  zeros through the training set), then one more equation at a time, each stage from the last
  one's point. Printed per try: the first q whose stage no longer ends at a zero (loss > 1e-16),
  and the loss and ρ at the end (all p equations).
* ``hard`` — the training points that no walk finds are those of smallest |a_i|. This puts the
  others at the truth turned by ε degrees, draws the k smallest-|a| rows at random, and runs LM on
  those k rows alone, then on all rows: how often does that recover the data, against ε?
* ``hessian`` — is the point where a failed run stops a local minimum or a saddle? The full
  Hessian of L at the run's best point, by central differences of the gradient in orthonormal
  tangent coordinates of each row (x̂_i + B_i c_i, retracted; at a stationary point that is the
  Riemannian Hessian, for any retraction), at several steps ε; its lowest eigenvalues next to
  the Gauss–Newton matrix's (the model LM uses; dense sizes only), the distance of the nearest
  row to a kink of φ (|v_j·x̂_i|/‖v_j‖), and the loss along the lowest eigenvector at ±t. An
  eigenvalue that grows like 1/ε is a kink of ReLU inside the difference, not curvature; the
  loss along its direction tells whether it is a way down.
* ``cost`` — the default attack's cost to success against d at a fixed p/(dn): every seed runs
  ``reconstruct`` (default options) with a large budget, and the runs of one (d, p/(dn)) give a
  success *rate per iteration* λ = successes / iterations spent (an exponential waiting time,
  censored at the budget: the maximum-likelihood rate), its exact 95 % Poisson interval, the
  expected iterations to success 1/λ, and the success within the default budget B at that d
  (observed, and 1 − exp(−λ·B) as the constant-rate model predicts it: a check of that model),
  and the budget that model needs for an 80 % success, ln 5/λ (with λ's interval carried over). A
  Poisson regression of the successes on d (log λ = α + βd, exposure = iterations) gives the
  factor e^β by which each unit of d multiplies the rate, with a profile-likelihood interval.
  ``--jsonl`` keeps one line per run; ``--from`` pools such files (several processes' runs)
  (plain or gzipped) and only analyses; ``--plot`` draws 1/λ against d, one line per p/(dn).
  ``--smooth-kinks W`` measures a variant of the attack (not the default): every LM run on all
  rows is preceded by one on the same θ* and V with φ's ReLU kinks smoothed at width W
  (:func:`smooth_kinks`), its iterations counted against the same budget (:func:`smoothed_lm`).
* ``screen`` — can an exchange find a missing training point behind bent rows? One training
  point is left out (the one of smallest |a_i|, then the one of largest), the others turned by
  about σ rad (how a failed search leaves them), and the missing point hidden among N − 1 random
  points. Printed: its rank (0 = first) under the plain screen (the gain against the residual of
  the bent rows, :func:`rftheory.varpro.fixed_rows_gain`) and under
  :func:`rftheory.varpro.linearised_gain` (the bent rows linearised), and the linearised gain's
  ratio of the missing point to the best random one. ``--moments``: also how well the moment
  directions of the plain and of the linearised residual
  (:func:`rftheory.spectral_init.residual_directions`) point at the missing point (largest |cos|).
* ``weights`` — which seeds fail? For the runs of ``cost --jsonl`` files, each seed's problem is
  rebuilt and its dual weights |a_i|/max|a| at the training points computed; per case the
  smallest of them is compared between the seeds recovered within the budget and the others
  (medians, quartiles, the two-sided Mann–Whitney U test, and the success rate below and above
  the case's median).

Usage::

    python benchmarks/diag_attack_limit.py basin --d 10 --n 10 --ratios 1.05,1.1,1.25,1.5 --seeds 4
    python benchmarks/diag_attack_limit.py walks --d 10 --n 10 --ratio 1.1 --seeds 2 --first-seed 1
    python benchmarks/diag_attack_limit.py walks --hop angle0.2 --seeds 8 --quiet
    python benchmarks/diag_attack_limit.py walks --consensus --seeds 8 --quiet
    python benchmarks/diag_attack_limit.py walks --patience 60 --seeds 24 --first-seed 2000 --quiet
    python benchmarks/diag_attack_limit.py walks --hop landscape --seeds 24 --first-seed 1600 --quiet
    python benchmarks/diag_attack_limit.py recurrence --seeds 12 --first-seed 1600
    python benchmarks/diag_attack_limit.py continuation --ratios 1.1,1.5 --seeds 6 --tries 2
    python benchmarks/diag_attack_limit.py hard --seed 2 --k 3 --eps 0,1,2,4
    python benchmarks/diag_attack_limit.py hessian --d 10 --n 10 --ratio 1.1 --seeds 6 --first-seed 400
    python benchmarks/diag_attack_limit.py cost --ds 4,6,8,10 --ratios 1.1 --seeds 8 \
        --max-steps 100000 --jsonl runs.jsonl
    python benchmarks/diag_attack_limit.py cost --from runs.jsonl other.jsonl --plot cost.png
    python benchmarks/diag_attack_limit.py cost --ds 10 --seeds 12 --smooth-kinks 0.1
    python benchmarks/diag_attack_limit.py screen --d 10 --n 10 --ratio 1.1 --seeds 6
    python benchmarks/diag_attack_limit.py screen --d 80 --n 8 --ratio 1.25 --seeds 6 --moments
    python benchmarks/diag_attack_limit.py weights --from runs.jsonl other.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import sys
import time

import numpy as np
import sympy as sp

from rftheory import varpro as vp
from rftheory.activations import Activation, get_activation
from rftheory.data import tangent_basis
from rftheory.features import DenseFeatures, RandomFeatures
from rftheory.metrics import rho
from rftheory.reconstruct import STREAM_CANDIDATES, reconstruct, step_budget
from rftheory.spectral_init import residual_directions

from bench_attack import rf_problem, success_interval  # benchmarks/ is on the path

GOOD_COS = 0.99   # a row "has found" a training point when its cosine to it exceeds this
STREAM_CONTINUATION = 2**40 + 2601   # the continuation's tries (an order and a start each)
STREAM_ORACLE = 2**40 + 2602         # the recurrence oracle's random rows and hops


def host_problem(features, theta) -> vp.Problem:
    """varpro's problem of (features, θ*) on the host, in float64."""
    return vp.Problem(features, np.asarray(theta, dtype=np.float64).reshape(features.p, -1),
                      np, None)


def problem(d: int, n: int, ratio: float, seed: int, activation: str = "relu+tanh"):
    features, theta, X = rf_problem(activation, d, n, ratio, seed)
    return host_problem(features, theta), np.asarray(X, dtype=np.float64)


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
    run = vp.Run(P, tol, max_steps, None, 10, lambda x: x)
    try:
        X1 = X0
        if free is not None:
            X1, _ = vp.levenberg_marquardt(P, X0, run, free=np.asarray(free))
        vp.levenberg_marquardt(P, X1, run)
    except vp.Stop:
        pass
    return run.best_X, run.best_loss, run.steps


# -- basin ------------------------------------------------------------------------------------

def basin(args) -> None:
    sigmas = args.sigmas
    print(f"# LM from the truth, every row turned by ~σ rad, {args.tries} tries per σ; "
          f"JᵀJ at the truth (tangent spaces), eigenvalues / mean damping scale")
    for ratio in args.ratios:
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

def hop_default(P, walk_X, rng, m, d, run):
    return vp.retract(walk_X, vp.hop_angle_for(d) * rng.standard_normal((m, d)))


def hop_angle(angle):
    def hop(P, walk_X, rng, m, d, run):
        return vp.retract(walk_X, angle * rng.standard_normal((m, d)))
    return hop


def hop_log_uniform(P, walk_X, rng, m, d, run):
    """Every row turned by one angle drawn log-uniformly in [0.05, 0.5] rad."""
    angle = math.exp(rng.uniform(math.log(0.05), math.log(0.5)))
    return vp.retract(walk_X, angle * rng.standard_normal((m, d)))


def hop_mixed(P, walk_X, rng, m, d, run):
    """Every row turned by 0.1, 0.2 or 0.3 rad (one of them, uniformly)."""
    angle = [0.1, 0.2, 0.3][rng.integers(3)]
    return vp.retract(walk_X, angle * rng.standard_normal((m, d)))


def hop_loss_scaled(P, walk_X, rng, m, d, run):
    """The default hop's angle scaled by (L/1e-3)^(1/4), within [1/3, 1], L the walk's best loss:
    the full angle far from a zero (plain LM's minima sit near 1e-3), a third of it near one
    (the truth's basin is ~0.1 rad per row at 1.1·dn, "the outer search" above)."""
    loss = float(P.evaluate(walk_X).loss)
    scale = min(1.0, max(1.0 / 3.0, (loss / 1e-3) ** 0.25))
    return vp.retract(walk_X, scale * vp.hop_angle_for(d) * rng.standard_normal((m, d)))


def hop_subset(P, walk_X, rng, m, d, run):
    """A random subset of 1..m rows turned by HOP_ANGLE, the others kept."""
    k = int(rng.integers(1, m + 1))
    rows = rng.choice(m, k, replace=False)
    step = np.zeros((m, d))
    step[rows] = vp.HOP_ANGLE * rng.standard_normal((k, d))
    return vp.retract(walk_X, step)


def hop_small_a(redraw: bool):
    """The j ≤ ⌈m/2⌉ rows of smallest |a| redrawn at random (``redraw``) or turned by 0.6 rad,
    the others turned by 0.1 rad (``redraw``) or 0.15 rad."""
    def hop(P, walk_X, rng, m, d, run):
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


def host_weights(P: vp.Problem) -> np.ndarray:
    """V of P's features, (p, d) host float64, from the features' V cache where it holds V
    (``rf_problem``'s features do: no Philox generation again, which costs ~3 ms per call at
    (80, 8), 1.25·dn, against 0.2 ms for the cached copy)."""
    d = P.features.d
    return np.concatenate([c.reshape(-1, d) for _, c in P.features.weight_chunks(np, np.float64)])


def subset_problem(P: vp.Problem, rows: np.ndarray) -> vp.Problem:
    """The problem of the equations ``rows`` of P alone: θ*[rows] on the features of V[rows]."""
    V = host_weights(P)
    feats = DenseFeatures(P.features.activation, np.ascontiguousarray(V[rows]))
    return vp.Problem(feats, np.ascontiguousarray(np.asarray(P.theta)[rows]), np, None)


def side_lm(P_sub: vp.Problem, X: np.ndarray, max_steps: int, *,
            rounds: int = 1) -> tuple[np.ndarray, float, int]:
    """Up to ``rounds`` LM runs on ``P_sub`` from X (the next one only while the last lowered
    the loss by more than IMPROVEMENT), at most ``max_steps`` iterations in all. Returns the
    best point, its loss on P_sub and the iterations spent. A loss of 0 on P_sub does not stop
    anything (tol 0)."""
    sub = vp.Run(P_sub, 0.0, max(1, max_steps), None, 10**9, lambda x: x)
    last = math.inf
    try:
        for _ in range(rounds):
            X, loss = vp.levenberg_marquardt(P_sub, X, sub)
            if not loss < vp.IMPROVEMENT * last:
                break
            last = loss
    except vp.Stop:
        pass
    if sub.best_X is None:           # no LM iteration was accepted: X is where it started
        return X, P_sub.loss(X), sub.steps
    return sub.best_X, sub.best_loss, sub.steps


def charge(run: vp.Run, steps: int, X: np.ndarray) -> np.ndarray:
    """Count ``steps`` iterations of a side run against ``run``'s budget; raise Stop("budget")
    once it is spent (as an iteration of the search itself would), else return X."""
    run.steps += steps
    if run.steps >= run.max_steps:
        raise vp.Stop("budget")
    return X


def hop_landscape(P, walk_X, rng, m, d, run):
    """The default hop, then one LM run on a random subset of m·d of the p equations (the
    fewest that keep the training set an isolated zero): a hop of the landscape as well as of
    the point. Its iterations count against the budget."""
    X = hop_default(P, walk_X, rng, m, d, run)
    rows = np.sort(rng.choice(P.p, min(P.p, m * d), replace=False))
    X, _, steps = side_lm(subset_problem(P, rows), X, run.max_steps - run.steps)
    return charge(run, steps, X)


def free_radius_residual(P: vp.Problem, Y: np.ndarray, mu: float):
    """Residual and (Kaufman) Jacobian of the projection loss with the rows *off* the sphere,
    plus the penalty √μ(‖y_i‖²/d − 1): [P⊥θ/‖θ‖; √μ(‖y‖²/d − 1)] and its derivative in Y
    (row-major), J = −P⊥B/‖θ‖ with B's block i = a_i φ′(V y_i) ⊙ V. Dense (diagnostic sizes)."""
    V = host_weights(P)
    theta = np.asarray(P.theta, dtype=np.float64)[:, 0]
    m, d = Y.shape
    Z = V @ Y.T                                             # p × m
    f, df = P.features.activation.value_and_derivative(Z)
    Q, R = np.linalg.qr(f)
    c = Q.T @ theta
    a = np.linalg.solve(R, c)
    scale = np.linalg.norm(theta)
    r = (theta - Q @ c) / scale
    B = (df * a)[:, :, None] * V[:, None, :]                # p × m × d
    B = B.reshape(len(theta), m * d)
    J = -(B - Q @ (Q.T @ B)) / scale
    root = math.sqrt(mu)
    pen = root * (np.sum(Y * Y, axis=1) / d - 1.0)
    Jp = np.zeros((m, m * d))
    for i in range(m):
        Jp[i, i * d:(i + 1) * d] = 2.0 * root * Y[i] / d
    return np.concatenate([r, pen]), np.vstack([J, Jp])


FREE_RADIUS_ITERATIONS = 20


def hop_free_radius(P, walk_X, rng, m, d, run):
    """The default hop, then a continuation in the sphere constraint: up to
    FREE_RADIUS_ITERATIONS Levenberg–Marquardt iterations (MINPACK, ``scipy.optimize.
    least_squares(method="lm")``) with the rows free to leave the sphere, held near it by the
    penalty μ(‖y‖²/d − 1)², μ = the walk's best loss (so a row may change its radius by O(1)
    where that buys a comparable drop of the loss); the rows are then put back on the sphere.
    Its Jacobian evaluations count against the budget as iterations."""
    from scipy.optimize import least_squares

    X = hop_default(P, walk_X, rng, m, d, run)
    mu = P.loss(walk_X)
    cache = {}

    def both(y):
        key = y.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = free_radius_residual(P, y.reshape(m, d), mu)
        return cache[key]

    method = "lm" if P.p + m >= m * d else "trf"
    sol = least_squares(lambda y: both(y)[0], X.ravel(), jac=lambda y: both(y)[1], method=method,
                        max_nfev=max(1, min(FREE_RADIUS_ITERATIONS, run.max_steps - run.steps)))
    Y = sol.x.reshape(m, d)
    return charge(run, int(sol.njev), math.sqrt(d) * Y / np.linalg.norm(Y, axis=1, keepdims=True))


def hop_modes(k: int, stiff: bool):
    """A hop of the default's size (σ√(md) in all) along the k softest (or, ``stiff``, the k
    stiffest) eigenvectors of the Gauss–Newton matrix at the walk's best point, in the rows'
    tangent spaces, with independent N(0, 1) weights: do the ways out of a funnel lie along its
    flat or its steep directions? Dense sizes only (the matrix is LM's own dense one)."""
    def hop(P, walk_X, rng, m, d, run):
        H = P.linearise(walk_X).hessian
        if H is None:
            raise ValueError("hop_modes needs the dense Gauss–Newton matrix "
                             "(Problem.dense_for sizes)")
        B = np.zeros((m * d, m * (d - 1)))
        for i, x in enumerate(walk_X):
            B[i * d:(i + 1) * d, i * (d - 1):(i + 1) * (d - 1)] = tangent_basis(x)
        Ht = B.T @ H @ B
        _, E = np.linalg.eigh(0.5 * (Ht + Ht.T))            # ascending eigenvalues
        j = min(k, E.shape[1])
        c = (E[:, -j:] if stiff else E[:, :j]) @ rng.standard_normal(j)
        c *= vp.hop_angle_for(d) * math.sqrt(m * d) / np.linalg.norm(c)
        return vp.retract(walk_X, (B @ c).reshape(m, d))
    return hop


HOPS = {"default": hop_default, "angle0.2": hop_angle(0.2), "angle0.45": hop_angle(0.45),
        "subset": hop_subset,
        "log-uniform": hop_log_uniform, "mixed": hop_mixed, "loss-scaled": hop_loss_scaled,
        "small-a-redraw": hop_small_a(True), "small-a-turn": hop_small_a(False),
        "landscape": hop_landscape, "free-radius": hop_free_radius,
        "soft10": hop_modes(10, False), "soft30": hop_modes(30, False),
        "stiff30": hop_modes(30, True), "stiff60": hop_modes(60, True)}


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
    """:func:`rftheory.varpro.minimise`'s loop (same moves, same stream with ``hop_default``;
    fresh walks built at d ≥ BUILD_DIMENSION, as there; not the wide first walk of p ≥ 6·dn)
    with a record (walk, loss, X) of every LM run; ``consensus``: fresh walks start from
    :func:`consensus_start` instead. ``hop(P, walk_X, rng, m, d, run)`` gives the next round's
    start (``run``: for hops that spend LM iterations, which count against the budget)."""
    run = vp.Run(P, tol, max_steps, None, 10, lambda x: x)
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
                if consensus:
                    X = consensus_start(bests, rng, m, d)
                elif d >= vp.BUILD_DIMENSION:
                    X = vp.build(P, rng, run, m)
                else:
                    X = vp.random_points(rng, m, d)
                walk += 1
                walk_X, walk_loss, walk_rounds, since_better, returns = None, math.inf, 0, 0, 0
                continue
            move = vp.next_move(walk_rounds, since_better, m)
            if move == "hop":
                X = hop(P, walk_X, rng, m, d, run)
            else:
                X = vp.exchange(P, walk_X, rng, run, grow=move == "grow",
                                n_screen=vp.EXCHANGE_SCREEN, top=vp.EXCHANGE_TOP)
    except vp.Stop as exc:   # an LM run (or an exchange) ended the search mid-way
        stop = exc.reason
        if stop == "tolerance":
            record.append((walk, run.best_loss, run.best_X))
    return run, stop, record


def seed_search(P: vp.Problem, seed: int, n: int, **options):
    """:func:`walk_search` for n rows from ``reconstruct(..., seed=seed)``'s random start and
    stream."""
    rng = np.random.default_rng([seed, STREAM_CANDIDATES])   # reconstruct's stream
    return walk_search(P, vp.random_points(rng, n, P.d), rng, **options)


def walks(args) -> None:
    hop = HOPS[args.hop]
    patience = {} if args.patience is None else {"patience": args.patience}
    label = args.hop + (" consensus" if args.consensus else "") + \
        ("" if args.patience is None else f" patience {args.patience}")
    ok_all = 0
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        P, X = problem(args.d, args.n, args.ratio, seed)
        a = weights(P, X)
        c = time.process_time()
        run, stop, record = seed_search(P, seed, args.n, max_steps=args.max_steps, hop=hop,
                                        consensus=args.consensus, **patience)
        cpu = time.process_time() - c
        r = rho(X, run.best_X, "abs")
        ok_all += r < 0.01
        nwalks = record[-1][0] if record else 0
        print(f"[{label}] ({args.d}, {args.n}) {args.ratio:g}dn seed {seed}: ρ = {r:.1e}, "
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
    print(f"SUMMARY [{label}] ({args.d}, {args.n}) {args.ratio:g}dn seeds "
          f"{args.first_seed}–{args.first_seed + args.seeds - 1}, budget {args.max_steps}: "
          f"{ok_all}/{args.seeds}", flush=True)


# -- recurrence -------------------------------------------------------------------------------

def row_clusters(record, threshold: float = GOOD_COS) -> tuple[np.ndarray, np.ndarray]:
    """The rows of every LM run's end in ``record`` ((walk, loss, X) triples) grouped greedily
    (a row joins the first cluster whose centre, its first row, lies within cos > threshold);
    returns the unit centres and, per cluster, the number of distinct walks that reached it."""
    centres: list[np.ndarray] = []
    walks_of: list[set] = []
    for walk, _, X_end in record:
        for u in X_end / np.linalg.norm(X_end, axis=1, keepdims=True):
            if centres:
                c = np.asarray(centres) @ u
                k = int(np.argmax(c))
                if c[k] > threshold:
                    walks_of[k].add(walk)
                    continue
            centres.append(u)
            walks_of.append({walk})
    return np.asarray(centres), np.array([len(w) for w in walks_of])


def omp_rows(P: vp.Problem, pool: np.ndarray, m: int) -> tuple[np.ndarray, float]:
    """Orthogonal matching pursuit of θ* over the features of the pool rows (√d-sphere): the m
    rows picked (indices) and the relative loss ‖P⊥θ*‖²/‖θ*‖² of their span."""
    F = np.asarray(P.features.features(pool), dtype=np.float64).T        # p × K
    theta = np.asarray(P.theta, dtype=np.float64)
    norms = np.linalg.norm(F, axis=0)
    picked: list[int] = []
    residual = theta
    for _ in range(m):
        score = np.linalg.norm(F.T @ residual, axis=1) / norms             # θ*: p × k
        score[picked] = -np.inf
        picked.append(int(np.argmax(score)))
        coef, *_ = np.linalg.lstsq(F[:, picked], theta, rcond=None)
        residual = theta - F[:, picked] @ coef
    return np.array(picked), float(np.sum(residual**2) / np.sum(theta**2))


def recurrence(args) -> None:
    """Can the walks' failures be recombined? On each seed the default search fails, the rows
    that its LM runs reached are clustered; printed: how many clusters ≥2 walks reached and how
    many of them lie at a training point, the truth of the most-recurring ones, what OMP over
    that pool picks, and an oracle: the pool's rows nearest each training point they found
    (cos > 0.99) kept, the others random, then ``--tries`` LM runs (the random rows alone, then
    all) and ``--walk-tries`` searches of ``--walk-steps`` iterations (the default hops)."""
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        P, X = problem(args.d, args.n, args.ratio, seed)
        run, stop, record = seed_search(P, seed, args.n, max_steps=args.max_steps,
                                        hop=hop_default)
        r = rho(X, run.best_X, "abs")
        if r < 0.01:
            print(f"seed {seed}: recovered ({stop}, {run.steps} iterations)", flush=True)
            continue
        T = X / np.linalg.norm(X, axis=1, keepdims=True)
        centres, reached = row_clusters(record)
        recurs = reached >= 2
        pool, pool_reached = centres[recurs], reached[recurs]
        if len(pool) == 0:
            print(f"seed {seed}: ρ = {r:.2f} ({stop}); no row reached by two walks", flush=True)
            continue
        near = pool @ T.T
        true = near.max(axis=1) > GOOD_COS
        points = np.flatnonzero(near.max(axis=0) > GOOD_COS)
        top = np.argsort(-pool_reached, kind="stable")[:12]
        picked, omp_loss = omp_rows(P, pool * math.sqrt(args.d), args.n)
        kept = [pool[int(np.argmax(near[:, i]))] * math.sqrt(args.d) for i in points]
        pinned = walked = 0
        for t in range(max(args.tries, args.walk_tries)):
            trng = np.random.default_rng([seed, STREAM_ORACLE, t])
            start = np.vstack(kept + [vp.random_points(trng, args.n - len(kept), args.d)])
            if t < args.tries:
                free = np.arange(len(kept), args.n) if len(kept) < args.n else None
                Xb, _, _ = one_run(P, start, 400, free=free)
                pinned += rho(X, Xb, "abs") < 0.01
            if t < args.walk_tries:
                wrun, _, _ = walk_search(P, start, trng, max_steps=args.walk_steps,
                                         hop=hop_default)
                walked += rho(X, wrun.best_X, "abs") < 0.01
        print(f"seed {seed}: ρ = {r:.2f} ({stop}, {record[-1][0]} walks); clusters reached by "
              f"≥2 walks: {len(pool)}, {int(true.sum())} at a training point, "
              f"{len(points)}/{args.n} points among them; the 12 most reached: "
              + " ".join(f"{pool_reached[i]}{'T' if true[i] else 'f'}" for i in top)
              + f"; OMP picks {int(true[picked].sum())} true (loss {omp_loss:.1e}); oracle with "
              f"{len(kept)} true rows: LM {pinned}/{args.tries}, walks {walked}/{args.walk_tries}",
              flush=True)


# -- continuation -----------------------------------------------------------------------------

ZERO_LOSS = 1e-16        # below this, a subset's loss counts as a zero (float64 round-off level)
STAGE_STEPS = 400        # LM iterations per stage of the continuation, at most


def continuation_try(P: vp.Problem, X_true: np.ndarray, rng: np.random.Generator, start: float,
                     step: int = 1) -> dict:
    """One try of the continuation in the number of equations: the p equations in a random
    order; LM from random rows on the first round(start·dn) of them, then ``step`` more at a
    time, each stage from the last stage's point (up to STAGE_STEPS iterations, LM runs repeated
    while they lower the loss by IMPROVEMENT). Below the count (q < dn) every stage has a
    manifold of zeros through the training set, so a zero can be *tracked* as equations are
    added; the try succeeds if the tracked zero ends at the training set.

    Returns {"lost_at": the first q whose stage ended above ZERO_LOSS (None if none did),
    "lost_loss": that stage's loss, "loss": the last stage's (all p equations) loss, "rho": ρ
    of its point, "steps": LM iterations in all}."""
    m, d = X_true.shape
    order = rng.permutation(P.p)
    X = vp.random_points(rng, m, d)
    q = min(P.p, max(m + 1, int(round(start * d * m))))
    lost_at, lost_loss, steps = None, None, 0
    while True:
        sub = subset_problem(P, np.sort(order[:q]))
        X, loss, spent = side_lm(sub, X, STAGE_STEPS, rounds=STAGE_STEPS)
        steps += spent
        if lost_at is None and loss > ZERO_LOSS:
            lost_at, lost_loss = q, loss
        if q == P.p:
            break
        q = min(P.p, q + step)
    return {"lost_at": lost_at, "lost_loss": lost_loss, "loss": loss,
            "rho": rho(X_true, X, "abs"), "steps": steps}


def continuation(args) -> None:
    for ratio in args.ratios:
        ok, lost, tries = 0, [], 0
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            P, X = problem(args.d, args.n, ratio, seed)
            count = args.d * args.n
            for t in range(args.tries):
                c = time.process_time()
                out = continuation_try(P, X, np.random.default_rng([seed, t, STREAM_CONTINUATION]),
                                       args.start, args.step)
                tries += 1
                ok += out["rho"] < 0.01
                where = "kept to the end" if out["lost_at"] is None else \
                    (f"lost at q = {out['lost_at']} ({out['lost_at'] / count:.2f}·dn, "
                     f"loss {out['lost_loss']:.1e})")
                if out["lost_at"] is not None:
                    lost.append(out["lost_at"] / count)
                print(f"({args.d}, {args.n}) {ratio:g}dn seed {seed} try {t}: zero {where}; "
                      f"p equations: loss {out['loss']:.1e}, ρ = {out['rho']:.2g}; "
                      f"{out['steps']} LM iterations, cpu {time.process_time() - c:.1f} s", flush=True)
        spread = (f"; the zero was lost at {min(lost):.2f}–{max(lost):.2f}·dn (median "
                  f"{float(np.median(lost)):.2f})") if lost else ""
        print(f"SUMMARY continuation ({args.d}, {args.n}) {ratio:g}dn from {args.start:g}·dn, "
              f"seeds {args.first_seed}–{args.first_seed + args.seeds - 1} × {args.tries} tries: "
              f"recovered {ok}/{tries}{spread}", flush=True)


# -- hard -------------------------------------------------------------------------------------

def hard(args) -> None:
    P, X = problem(args.d, args.n, args.ratio, args.seed)
    a = weights(P, X)
    rows = np.sort(np.argsort(a)[:args.k])
    print(f"# ({args.d}, {args.n}) {args.ratio:g}dn seed {args.seed}: the {args.k} smallest-|a| "
          f"points {rows.tolist()} (|a| {np.round(a[rows], 3).tolist()}) redrawn at random, the "
          f"others at the truth turned by ε degrees; {args.tries} tries each")
    for eps in args.eps:
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


# -- screen -----------------------------------------------------------------------------------

def screen_ranks(P: vp.Problem, X: np.ndarray, miss: int, sigma: float, pool_size: int,
                 rng: np.random.Generator, moments: bool = False) -> tuple:
    """(plain rank, linearised rank, linearised gain of the missing point / best random one),
    and with ``moments`` the largest |cos| with the missing point of the plain and of the
    linearised residual's moment directions (``spectral_init.residual_directions``, k = 3)."""
    rows = vp.retract(np.delete(X, miss, axis=0), sigma * rng.standard_normal((X.shape[0] - 1, X.shape[1])))
    pool = np.concatenate([X[miss:miss + 1], vp.random_points(rng, pool_size - 1, X.shape[1])])
    lin = vp.linearised_gain(P, rows, pool)
    plain = vp.fixed_rows_gain(P, rows, pool)
    out = (int(np.sum(plain > plain[0])), int(np.sum(lin > lin[0])), float(lin[0] / np.max(lin[1:])))
    if moments:
        u = X[miss] / np.linalg.norm(X[miss])
        for r in (vp.fixed_rows_residual(P, rows), vp.linearised_residual(P, rows)):
            points, _ = residual_directions(P.features, r, k=min(3, X.shape[1]), rng=0)
            out += (float(np.max(np.abs(points @ u)) / np.sqrt(X.shape[1])),)
    return out


def pool_size(text: str) -> int:
    """argparse type of ``--pool``: an integer ≥ 2 (the missing point and one random point)."""
    value = numbers(int, positive=True)(text)[0]
    if value < 2:
        raise argparse.ArgumentTypeError(f"at least 2 (the missing point and a random one), got {text!r}")
    return value


def screen(args) -> None:
    print(f"# ({args.d}, {args.n}) {args.ratio:g}dn: one training point left out, the others turned "
          f"by ~{args.sigma:g} rad, the missing one among {args.pool} points; rank 0 = first")
    print("seed point  |a|/max  plain rank  linearised rank  linearised: missing/best random"
          + ("  moments |cos|: plain  linearised" if args.moments else ""))
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        P, X = problem(args.d, args.n, args.ratio, seed)
        if not P.small:
            raise SystemExit("screen: the linearised gain needs the small-problem path (p·d ≤ 2**20)")
        a = weights(P, X)
        rng = np.random.default_rng(seed)
        for miss in (int(np.argmin(a)), int(np.argmax(a))):
            plain, lin, ratio, *cos = screen_ranks(P, X, miss, args.sigma, args.pool, rng,
                                                   args.moments)
            print(f"{seed:4d} {miss:5d} {a[miss]:8.2f} {plain:11d} {lin:16d} {ratio:33.2f}"
                  + "".join(f"{c:17.2f}" for c in cos), flush=True)


# -- cost -------------------------------------------------------------------------------------

def tangent_hessian(P: vp.Problem, X: np.ndarray, eps: float) -> tuple:
    """(gradient, Hessian, bases B_i) of c ↦ L(retract(X̂ + B c)) at c = 0, B_i an orthonormal basis of the
    tangent space at row i: the gradient exact, the Hessian by central differences of it with
    step ``eps`` (symmetrised). Cost: 2·m(d − 1) + 1 gradient evaluations."""
    m, d = X.shape
    bases = [tangent_basis(X[i]) for i in range(m)]                     # (d, d − 1) each

    def grad(c: np.ndarray) -> np.ndarray:
        Y = X + np.stack([bases[i] @ ci for i, ci in enumerate(c.reshape(m, d - 1))])
        g = np.asarray(P.evaluate(vp.retract(Y, np.zeros_like(Y))).gradient, dtype=np.float64)
        norms = np.linalg.norm(Y, axis=1, keepdims=True)
        Yh = Y / norms
        g = math.sqrt(d) / norms * (g - (g * Yh).sum(axis=1, keepdims=True) * Yh)  # chain rule
        return np.concatenate([bases[i].T @ g[i] for i in range(m)])

    k = m * (d - 1)
    H = np.empty((k, k))
    for j in range(k):
        e = np.zeros(k)
        e[j] = eps
        H[:, j] = (grad(e) - grad(-e)) / (2 * eps)
    return grad(np.zeros(k)), 0.5 * (H + H.T), bases


def hessian(args) -> None:
    print(f"# relu+tanh ({args.d}, {args.n}), p = {args.ratio:g}·dn, default attack with "
          f"{args.max_steps} iterations; the full Hessian at its best point (tangent coordinates)")
    eps_list = args.eps
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        features, theta, X = rf_problem("relu+tanh", args.d, args.n, args.ratio, seed)
        res = reconstruct(features, theta, args.n, seed=seed, max_steps=args.max_steps)
        P = host_problem(features, theta)
        Xh = np.asarray(res.X_hat, dtype=np.float64)
        m, d = Xh.shape
        V = np.asarray(features.weights(np))
        kink = float(np.abs(Xh @ V.T / np.linalg.norm(V, axis=1)).min())
        line = [f"seed {seed}: loss {res.loss:.2e}, ρ {float(rho(X, Xh, 'abs')):.3f}, "
                f"nearest kink {kink:.1e}"]
        lowest = None
        for eps in eps_list:
            g, H, bases = tangent_hessian(P, Xh, eps)
            w, U = np.linalg.eigh(H)
            line.append(f"ε={eps:g}: λ_min {w[0]:.2e} (next {w[1]:.2e})")
            if lowest is None:
                lowest = (w, U, g)
        w, U, g = lowest
        line.insert(1, f"|grad| {np.linalg.norm(g):.1e}, λ_max {w[-1]:.2e}")
        if P.dense_for(m):
            B = np.zeros((m * d, m * (d - 1)))
            for i in range(m):
                B[i * d:(i + 1) * d, i * (d - 1):(i + 1) * (d - 1)] = bases[i]
            gn = np.linalg.eigvalsh(B.T @ (2 * P.linearise(Xh).hessian) @ B)
            line.append(f"Gauss–Newton λ_min {gn[0]:.2e}")
        u = U[:, 0].reshape(m, d - 1)
        direction = np.stack([bases[i] @ u[i] for i in range(m)])
        L0 = P.loss(Xh)
        along = []
        for t in (1e-3, 1e-2, 1e-1) if L0 > 0 else ():
            up = P.loss(vp.retract(Xh, t * direction)) / L0
            down = P.loss(vp.retract(Xh, -t * direction)) / L0
            along.append(f"±{t:g}: {up:.4f}/{down:.4f}")
        line.append("L/L₀ along the lowest eigenvector " + ", ".join(along))
        print("; ".join(line), flush=True)


def rate_interval(successes: int, exposure: float, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) interval of a Poisson rate: ``successes`` events in ``exposure`` units.

    The bounds are the rates λ at which P(N ≤ k) and P(N ≥ k) for N ~ Poisson(λ·exposure) equal
    (1 − confidence)/2: χ²-quantiles with 2k and 2k + 2 degrees of freedom, halved. With k = 0
    the lower bound is 0.
    """
    from scipy.stats import chi2

    if exposure <= 0 or successes < 0:
        raise ValueError("exposure must be positive and successes non-negative")
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else chi2.ppf(tail, 2 * successes) / (2.0 * exposure)
    high = chi2.ppf(1.0 - tail, 2 * successes + 2) / (2.0 * exposure)
    return float(low), float(high)


def rate_trend(xs, successes, exposures, confidence: float = 0.95):
    """Poisson regression log λ = α + β·x with exposures: (e^β, its profile-likelihood interval).

    Given β, the likelihood's best α is log(Σk / Σ T e^{βx}), so the profile log-likelihood is
    ℓ(β) = Σ k (α̂(β) + βx) − Σk up to a constant; the interval is where 2(ℓ(β̂) − ℓ(β)) stays
    below the χ²₁ quantile. An end that the data do not bound (e.g. no success at the largest
    x) is reported as 0 or ∞, and so is β̂ itself when every success sits at one end. Returns
    None without any success or with a single x.
    """
    from scipy.optimize import brentq, minimize_scalar
    from scipy.stats import chi2

    x = np.asarray(xs, dtype=float)
    k = np.asarray(successes, dtype=float)
    T = np.asarray(exposures, dtype=float)
    if k.sum() == 0 or len(set(x.tolist())) < 2:
        return None

    def profile(beta):
        log_sum = np.log(np.sum(T * np.exp(beta * (x - x.mean())))) + beta * x.mean()
        alpha = np.log(k.sum()) - log_sum
        return float(np.sum(k * (alpha + beta * x)))

    span = 50.0 / (x.max() - x.min())
    fit = minimize_scalar(lambda b: -profile(b), bounds=(-span, span), method="bounded",
                          options={"xatol": 1e-10})
    beta, top = float(fit.x), profile(float(fit.x))
    cut = chi2.ppf(confidence, 1) / 2.0
    gap = lambda b: top - profile(b) - cut
    low = brentq(gap, -span, beta) if gap(-span) > 0 else -math.inf
    high = brentq(gap, beta, span) if gap(span) > 0 else math.inf
    if k[x != x.min()].sum() == 0:     # all successes at the smallest x: β̂ = −∞
        beta = -math.inf
    elif k[x != x.max()].sum() == 0:   # all at the largest: β̂ = +∞
        beta = math.inf
    return math.exp(beta), (math.exp(low), math.exp(high))


def smooth_kinks(activation: str, width: float) -> Activation:
    """φ with every ReLU kink smoothed: relu(u) = Max(u, 0) → E relu(u + wξ), ξ ~ N(0, 1).

    E relu(u + wξ) = u·Φ(u/w) + w·ϕ(u/w) (Φ, ϕ: the standard normal CDF and density), written
    with ``erf`` and ``exp``. It exceeds relu(u) by w·ϕ(u/w) − |u|·Φ(−|u|/w) ∈ (0, 0.399w], largest
    at the kink, and is infinitely differentiable. Activations with other kinds of kink
    (``abs``, ``heaviside``, ``sign``, ``Max``/``Min`` of other arguments) are refused
    (ValueError), as is one without a ReLU.
    """
    if not width > 0:
        raise ValueError(f"the smoothing width must be positive, got {width!r}")
    w = sp.Float(width)
    expr = get_activation(activation).expr
    relu = lambda e: isinstance(e, sp.Max) and len(e.args) == 2 and sp.S.Zero in e.args  # noqa: E731

    def smoothed(e: sp.Max) -> sp.Expr:
        (u,) = [a for a in e.args if a != 0]
        return u * (1 + sp.erf(u / (w * sp.sqrt(2)))) / 2 + w * sp.exp(-u**2 / (2 * w**2)) / sp.sqrt(2 * sp.pi)

    if not expr.has(sp.Max) or not any(relu(e) for e in sp.preorder_traversal(expr)):
        raise ValueError(f"{activation!r} has no ReLU kink to smooth")
    out = expr.replace(relu, smoothed)
    if out.has(sp.Max, sp.Min, sp.Abs, sp.Heaviside, sp.sign):
        raise ValueError(f"{activation!r} has kinks other than ReLU's; only those are smoothed")
    return Activation(f"{activation}, kinks smoothed at {width:g}", out)


@contextlib.contextmanager
def smoothed_lm(features, theta, width: float):
    """While active, every LM run of ``varpro`` on all rows (not an exchange's pool or single-row
    runs) is preceded by an LM run from the same start on the problem with the smoothed φ
    (:func:`smooth_kinks`; the same V and θ*), whose iterations count against the run's budget.
    The real run then starts where the smoothed one ended. A measurement of the idea, not the
    attack: ``varpro`` is unchanged outside this block."""
    smooth = RandomFeatures(smooth_kinks(features.activation.name, width), features.d,
                            features.p, seed=features.seed, v_cache_bytes=features.v_cache_bytes)
    if not np.array_equal(smooth.weights(np), features.weights(np)):
        raise AssertionError("the smoothed problem must have the same V")
    sp_problem = host_problem(smooth, theta)
    plain = vp.levenberg_marquardt

    def lm(problem, X, run, free=None, pool=False):
        if free is None and not pool:
            sub = vp.Run(sp_problem, 0.0, max(1, run.max_steps - run.steps), None, 10,
                          lambda x: x)
            try:
                X, _ = plain(sp_problem, X, sub)
            except vp.Stop:   # its budget (the run's remainder) or a zero of the smoothed loss
                X = sub.best_X if sub.best_X is not None else X
            run.steps += sub.steps
            if run.steps >= run.max_steps:
                raise vp.Stop("budget")
        return plain(problem, X, run, free, pool)

    vp.levenberg_marquardt = lm
    try:
        yield
    finally:
        vp.levenberg_marquardt = plain


def cost_run(activation: str, d: int, n: int, ratio: float, seed: int, max_steps: int,
             max_rounds: int, threshold: float, smooth: float | None = None) -> dict:
    features, theta, X = rf_problem(activation, d, n, ratio, seed)
    c = time.process_time()
    with smoothed_lm(features, theta, smooth) if smooth else contextlib.nullcontext():
        res = reconstruct(features, theta, n, seed=seed, max_steps=max_steps,
                          max_rounds=max_rounds)
    cpu = time.process_time() - c
    r = float(rho(X, np.asarray(res.X_hat), "abs"))
    row = {"activation": activation, "d": d, "n": n, "ratio": ratio, "seed": seed,
           "p": int(features.p), "budget": max_steps, "steps": int(res.steps),
           "success": bool(r < threshold), "converged": bool(res.converged),
           "loss": float(res.loss), "rho": r, "stop": res.stop_reason, "cpu": cpu}
    if smooth:
        row["smooth_kinks"] = smooth
    return row


def cost_groups(rows: list[dict]) -> dict:
    """{(activation, n, p/(dn)): {d: (successes, iterations, runs)}}, both levels sorted."""
    groups: dict = {}
    for r in rows:
        act = r["activation"] + (f", ReLU kinks smoothed (w = {r['smooth_kinks']:g})"
                                 if r.get("smooth_kinks") else "")
        groups.setdefault((act, r["n"], r["ratio"]), {}).setdefault(r["d"], []).append(r)
    return {key: {d: (sum(r["success"] for r in rs), float(sum(r["steps"] for r in rs)), rs)
                  for d, rs in sorted(by_d.items())}
            for key, by_d in sorted(groups.items())}


def cost_table(rows: list[dict]) -> list[str]:
    """Per (activation, n, p/(dn), d): the success rate per iteration and what it implies."""
    lines = []
    for (act, n, ratio), by_d in cost_groups(rows).items():
        lines.append(f"# {act}, n = {n}, p = {ratio:g}·dn: λ = successes per 10⁵ iterations "
                     f"(exact 95 % interval); 1/λ = expected iterations to success")
        lines.append(f"{'d':>3} {'seeds':>5} {'budget':>7} {'successes':>9} {'iterations':>11} "
                     f"{'λ·1e5 [95 %]':>22} {'1/λ':>9} {'CPU/1e5 it':>10} "
                     f"{'within default: seen [95 %]':>28} {'model':>6} "
                     f"{'budget for 80 %':>22}")
        xs, ks, Ts = [], [], []
        for d, (k, T, rs) in by_d.items():
            lo, hi = rate_interval(k, T)
            lam = k / T
            cpu = 1e5 * sum(r["cpu"] for r in rs) / T
            default = step_budget(d)
            within = sum(r["success"] and r["steps"] <= default for r in rs)
            wl, wh = success_interval(within, len(rs))
            model = 1.0 - math.exp(-lam * default)
            inv = f"{1 / lam:9.3g}" if k else f"{'>' + format(1 / hi, '.2g'):>9}"
            # The constant-rate model's budget for an 80 % success: 1 − exp(−λB) = 0.8.
            b80 = (f"{math.log(5) / lam:.2g} [{math.log(5) / hi:.2g}, "
                   f"{math.log(5) / lo if lo else math.inf:.2g}]" if k
                   else f"> {math.log(5) / hi:.2g}")
            budgets = sorted({r["budget"] for r in rs})
            lines.append(f"{d:>3} {len(rs):>5} {'/'.join(str(b) for b in budgets):>7} {k:>9} "
                         f"{int(T):>11} {1e5 * lam:>7.3g} [{1e5 * lo:.2g}, {1e5 * hi:.2g}]"
                         f"{'':>1} {inv} {cpu:>9.1f}s "
                         f"{within:>4}/{len(rs)} [{100 * wl:.0f}, {100 * wh:.0f}] % {100 * model:>5.0f}% "
                         f"{b80:>22}")
            xs.append(d)
            ks.append(k)
            Ts.append(T)
        trend = rate_trend(xs, ks, Ts)
        if trend is not None:
            factor, (lo, hi) = trend
            if 0 < factor < math.inf:
                lines.append(f"  rate trend (Poisson regression, log λ linear in d): ×{factor:.3g} "
                             f"per unit of d [{lo:.3g}, {hi:.3g}], i.e. ×{factor ** 10:.3g} per "
                             f"10 of d")
            else:   # every success at one end: the estimate is that end, the interval one-sided
                lines.append(f"  rate trend (Poisson regression, log λ linear in d): every success "
                             f"at the {'smallest' if factor == 0 else 'largest'} d; the factor per "
                             f"unit of d is in [{lo:.3g}, {hi:.3g}]")
    return lines


def cost_figure(rows: list[dict], path: str) -> None:
    """Expected iterations to success 1/λ (95 % interval) against d, one line per p/(dn)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rftheory.plotting import paper_figure, paper_style

    groups = cost_groups(rows)
    with paper_style():
        fig, ax = paper_figure(columns=1, aspect=0.8)
        any_bound = False
        # each p/(dn) is nudged sideways a little, so that equal values at one d stay visible
        for index, ((act, n, ratio), by_d) in enumerate(groups.items()):
            nudge = 0.2 * (index - (len(groups) - 1) / 2)
            ds, mid, low, high, bound_d, bound = [], [], [], [], [], []
            for d, (k, T, _) in by_d.items():
                lo, hi = rate_interval(k, T)
                if k:
                    ds.append(d + nudge)
                    mid.append(T / k)
                    low.append(T / k - 1 / hi)
                    high.append((1 / lo if lo else 1e12) - T / k)
                else:
                    bound_d.append(d + nudge)
                    bound.append(1 / hi)
            line = ax.errorbar(ds, mid, yerr=[low, high], marker="o", capsize=2,
                               label=f"p = {ratio:g}·dn")
            if bound_d:   # no success: the interval's lower end of 1/λ, an arrow upwards
                ax.plot(bound_d, bound, marker="^", markersize=7, linestyle="none",
                        color=line.lines[0].get_color(), zorder=5)
                any_bound = True
        if any_bound:
            ax.plot([], [], marker="^", linestyle="none", color="0.4",
                    label="no success: lower end of 1/λ's interval")
        dims = sorted({d for by_d in groups.values() for d in by_d})
        budgets = [step_budget(d) for d in dims]   # flat at 20 000 up to d = 40
        ax.plot(dims, budgets, color="0.5", linewidth=0.8, linestyle="--")
        ax.text(dims[-1], budgets[-1] * 0.8, "default budget ", color="0.4",
                fontsize="x-small", ha="right", va="top")
        ax.set_yscale("log")
        ax.set_xlabel("d (n = %s)" % ", ".join(sorted({str(r["n"]) for r in rows})))
        ax.set_ylabel("expected LM iterations to success, 1/λ")
        ax.legend(fontsize="x-small")
        fig.savefig(path)
        plt.close(fig)


class RunFileError(ValueError):
    """A ``--from`` file that is not a file of ``cost --jsonl`` runs (one line: where, what)."""


#: Fields of a ``cost --jsonl`` row that ``cost --from`` and ``weights`` read, and their types.
RUN_FIELDS = {"d": int, "n": int, "ratio": (int, float), "seed": int, "steps": int,
              "success": bool, "budget": int, "cpu": (int, float), "activation": str}


def read_runs(paths: list[str], fields: tuple[str, ...] = tuple(RUN_FIELDS)) -> list[dict]:
    """The rows of ``cost --jsonl`` files (plain or gzipped), in order.

    Raises RunFileError (one line: file, line and what is wrong) for a line that is not a JSON
    object with ``fields`` of the types in RUN_FIELDS; ``activation`` may be missing
    (relu+tanh).
    """
    rows: list[dict] = []
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8") as fh:
                lines = [(k, line) for k, line in enumerate(fh, 1) if line.strip()]
        except (OSError, UnicodeDecodeError, EOFError) as exc:
            raise RunFileError(f"{path}: not a readable JSONL file ({exc})") from None
        for k, line in lines:
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RunFileError(f"{path}:{k}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise RunFileError(f"{path}:{k}: a run is a JSON object")
            row.setdefault("activation", "relu+tanh")
            for name in fields:
                kind = RUN_FIELDS[name]
                value = row.get(name)
                if value is None or not isinstance(value, kind) or (
                        kind is not bool and isinstance(value, bool)):
                    raise RunFileError(f"{path}:{k}: field {name!r} missing or not "
                                     f"{getattr(kind, '__name__', 'a number')}")
            rows.append(row)
    return rows


def run_file(text: str) -> str:
    """argparse type of ``--from``: a readable file."""
    try:
        with open(text, "rb"):
            return text
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {text!r}: {exc.strerror}") from None


def cost(args) -> None:
    rows: list[dict] = []
    if args.from_:
        rows = read_runs(args.from_)
    else:
        out = open(args.jsonl, "a", encoding="utf-8") if args.jsonl else None
        try:
            for ratio in args.ratios:
                for d in args.ds:
                    for seed in range(args.first_seed, args.first_seed + args.seeds):
                        row = cost_run(args.activation, d, args.n, ratio, seed, args.max_steps,
                                       args.max_rounds, args.threshold, args.smooth_kinks)
                        rows.append(row)
                        print(f"({d}, {args.n}) {ratio:g}dn seed {seed}: "
                              f"{'SUCCESS' if row['success'] else 'fail'} ρ = {row['rho']:.1e}, "
                              f"loss {row['loss']:.1e}, {row['stop']}, {row['steps']} iterations, "
                              f"cpu {row['cpu']:.1f} s", flush=True)
                        if out is not None:
                            out.write(json.dumps(row) + "\n")
                            out.flush()
        finally:
            if out is not None:
                out.close()
    for line in cost_table(rows):
        print(line, flush=True)
    if args.plot:
        cost_figure(rows, args.plot)


# -- weights ----------------------------------------------------------------------------------

def smallest_weights(rows: list[dict], budget: int | None) -> dict:
    """{(activation, d, n, p/(dn)): (min |a|/max|a| of the recovered seeds, of the others)}.

    A seed counts as recovered when its run succeeded within ``budget`` iterations (None:
    reconstruct's default budget at its d); a seed run more than once counts by its last row.
    """
    last = {}
    for r in rows:
        key = (r.get("activation", "relu+tanh"), int(r["d"]), int(r["n"]), float(r["ratio"]))
        within = step_budget(int(r["d"])) if budget is None else budget
        last[key + (int(r["seed"]),)] = bool(r["success"]) and int(r["steps"]) <= within
    groups: dict = {}
    for (act, d, n, ratio, seed), ok in sorted(last.items()):
        P, X = problem(d, n, ratio, seed, act)
        groups.setdefault((act, d, n, ratio), ([], []))[0 if ok else 1].append(
            float(np.min(weights(P, X))))
    return groups


def weights_table(groups: dict, budget: int | None) -> list[str]:
    """One line per case: the smallest weight of recovered against failed seeds."""
    from scipy.stats import mannwhitneyu

    def quartiles(v):
        return (f"{np.median(v):.3f} [{np.quantile(v, 0.25):.3f}, {np.quantile(v, 0.75):.3f}]"
                if v else "–")

    within = "the default budget at each d" if budget is None else f"{budget} iterations"
    lines = [f"# smallest |a_i|/max|a| per seed (median [quartiles]); recovered: within {within}; "
             "p: two-sided Mann–Whitney U",
             "activation  (d, n)  p/(dn)  recovered  recovered: min|a|     failed: min|a|"
             "        p        rate, min|a| ≤ median / > median"]
    for (act, d, n, ratio), (ok, bad) in groups.items():
        both = ok + bad
        pval = (f"{mannwhitneyu(ok, bad, alternative='two-sided').pvalue:.1e}"
                if ok and bad else "–")
        median = float(np.median(both))
        low = [w <= median for w in both]
        won = [True] * len(ok) + [False] * len(bad)
        below = [s for s, lo in zip(won, low) if lo]
        above = [s for s, lo in zip(won, low) if not lo]
        lines.append(f"{act}  ({d}, {n})  {ratio:g}  {len(ok)}/{len(both)}  {quartiles(ok)}  "
                     f"{quartiles(bad)}  {pval}  {sum(below)}/{len(below)} / "
                     f"{sum(above)}/{len(above)}")
    return lines


def weights_cmd(args) -> None:
    rows = read_runs(args.from_, ("d", "n", "ratio", "seed", "steps", "success", "activation"))
    for line in weights_table(smallest_weights(rows, args.budget), args.budget):
        print(line, flush=True)


def numbers(kind, *, positive: bool = False):
    """An argparse type: comma-separated ``kind`` values (finite, and > 0 if ``positive``), as a
    list; anything else is argparse's one-line usage error (exit 2)."""
    def parse(text: str) -> list:
        try:
            values = [kind(v) for v in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"comma-separated {kind.__name__} values, got {text!r}")
        if not all(math.isfinite(v) and (v > 0 or not positive) for v in values):
            raise argparse.ArgumentTypeError(f"{'positive ' if positive else ''}finite values, got {text!r}")
        return values
    return parse


def case_options(parser: argparse.ArgumentParser, *, first_seed: int) -> argparse.ArgumentParser:
    """The options of a subcommand that runs the default search on seeds of one case: --d,
    --n, --ratio, --seeds, --first-seed and --max-steps (default: reconstruct's at --d)."""
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--ratio", type=float, default=1.1)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--first-seed", type=int, default=first_seed)
    parser.add_argument("--max-steps", type=int, default=None,
                        help="iteration budget of each run (default: reconstruct's at --d)")
    return parser


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cost")
    c.add_argument("--ds", type=numbers(int, positive=True), default="4,6,8,10", help="input dimensions (default %(default)s)")
    c.add_argument("--n", type=int, default=10)
    c.add_argument("--ratios", type=numbers(float, positive=True), default="1.1", help="p/(dn) values (default %(default)s)")
    c.add_argument("--activation", default="relu+tanh")
    c.add_argument("--seeds", type=int, default=8)
    c.add_argument("--first-seed", type=int, default=0)
    c.add_argument("--max-steps", type=int, default=100000,
                   help="iteration budget of each run (default %(default)s)")
    c.add_argument("--max-rounds", type=int, default=100000,
                   help="LM-run cap, above what the budget uses (default %(default)s)")
    c.add_argument("--threshold", type=float, default=0.01, help="success: ρ below this")
    c.add_argument("--smooth-kinks", type=lambda t: numbers(float, positive=True)(t)[0], default=None, metavar="W",
                   help="measure the variant that precedes every LM run by one with φ's ReLU "
                        "kinks smoothed at width W (not the default attack)")
    c.add_argument("--jsonl", default=None, help="append one JSON line per run to this file")
    c.add_argument("--from", dest="from_", nargs="+", type=run_file, default=None, metavar="FILE",
                   help="only analyse these --jsonl files (pooled; .gz ones gunzipped)")
    c.add_argument("--plot", default=None, metavar="PNG",
                   help="draw 1/λ against d, one line per p/(dn), into this file")
    h = case_options(sub.add_parser("hessian"), first_seed=400)
    h.add_argument("--eps", type=numbers(float, positive=True), default="1e-5,1e-6,1e-4",
                   help="difference steps; the first one's eigenvectors are scanned")
    sc = sub.add_parser("screen")
    sc.add_argument("--d", type=int, default=10)
    sc.add_argument("--n", type=int, default=10)
    sc.add_argument("--ratio", type=float, default=1.1)
    sc.add_argument("--seeds", type=int, default=6)
    sc.add_argument("--first-seed", type=int, default=0)
    sc.add_argument("--sigma", type=lambda t: numbers(float, positive=True)(t)[0], default=0.035,
                    help="turn of the kept rows, rad (default %(default)s: ~2°)")
    sc.add_argument("--pool", type=pool_size, default=1000,
                    help="points screened, the missing one included (default %(default)s)")
    sc.add_argument("--moments", action="store_true",
                    help="also the largest |cos| with the missing point of the plain and the linearised "
                         "residual's moment directions")
    w = sub.add_parser("weights")
    w.add_argument("--from", dest="from_", nargs="+", type=run_file, required=True, metavar="FILE",
                   help="JSONL files of cost --jsonl (plain or gzipped)")
    w.add_argument("--budget", type=lambda t: numbers(int, positive=True)(t)[0],
                   default=None,
                   help="a seed is recovered if it succeeded within this many iterations "
                        "(default: the attack's at each d, 20 000 up to d = 40, 500·d above)")
    for name in ("basin", "walks", "hard"):
        s = sub.add_parser(name)
        s.add_argument("--d", type=int, default=10)
        s.add_argument("--n", type=int, default=10)
        s.add_argument("--seeds", type=int, default=4)
        s.add_argument("--first-seed", type=int, default=0)
        s.add_argument("--tries", type=int, default=8)
        if name == "basin":
            s.add_argument("--ratios", type=numbers(float, positive=True), default="1.05,1.1,1.25,1.5")
            s.add_argument("--sigmas", type=numbers(float, positive=True), default="0.05,0.1,0.2,0.3")
            s.add_argument("--max-steps", type=int, default=3000)
        elif name == "walks":
            s.add_argument("--ratio", type=float, default=1.1)
            s.add_argument("--max-steps", type=int, default=None,
                           help="iteration budget (default: reconstruct's at --d, 20 000 up "
                                "to d = 40, 500·d above)")
            s.add_argument("--hop", choices=sorted(HOPS), default="default")
            s.add_argument("--quiet", action="store_true", help="no per-walk lines")
            s.add_argument("--consensus", action="store_true",
                           help="fresh walks start from the consensus of earlier walk bests")
            s.add_argument("--patience", type=int, default=None,
                           help="rounds without a 10 %% gain that end a walk (default: "
                                "reconstruct's, 30)")
        else:
            s.add_argument("--ratio", type=float, default=1.1)
            s.add_argument("--seed", type=int, default=2)
            s.add_argument("--k", type=int, default=3)
            s.add_argument("--eps", type=numbers(float), default="0,1,2,4")
            s.add_argument("--max-steps", type=int, default=3000)
    ct = sub.add_parser("continuation")
    ct.add_argument("--d", type=int, default=10)
    ct.add_argument("--n", type=int, default=10)
    ct.add_argument("--ratios", type=numbers(float, positive=True), default="1.1,1.5")
    ct.add_argument("--seeds", type=int, default=4)
    ct.add_argument("--first-seed", type=int, default=0)
    ct.add_argument("--tries", type=int, default=2)
    ct.add_argument("--start", type=lambda t: numbers(float, positive=True)(t)[0], default=0.5,
                    help="equations of the first stage, in units of dn (default %(default)s)")
    ct.add_argument("--step", type=lambda t: numbers(int, positive=True)(t)[0], default=1,
                    help="equations added per stage (default %(default)s)")
    rc = case_options(sub.add_parser("recurrence"), first_seed=1600)
    rc.add_argument("--tries", type=int, default=20, help="oracle LM runs per seed")
    rc.add_argument("--walk-tries", type=int, default=3, help="oracle searches per seed")
    rc.add_argument("--walk-steps", type=int, default=3000,
                    help="iterations of each oracle search (default %(default)s)")
    args = ap.parse_args(argv)
    if getattr(args, "max_steps", 0) is None:   # the attack's own budget at this d
        args.max_steps = step_budget(args.d)
    try:
        return _dispatch(args)
    except RunFileError as exc:
        ap.error(str(exc))                                   # one line, exit 2


def _dispatch(args) -> int:
    {"basin": basin, "walks": walks, "hard": hard, "cost": cost, "hessian": hessian,
     "screen": screen, "weights": weights_cmd, "continuation": continuation,
     "recurrence": recurrence}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
