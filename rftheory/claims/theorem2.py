"""Claim (Theorem 2, n = 2): the projection loss has no "duplicate" minimiser.

With n = n̂ = 2 training points, Theorem 1 alone allows both candidates to sit near the *same*
training point x₁ (a duplicate) — each of them is then "close to a training point". Theorem 2
excludes this: the projection loss L(x̂₁, x̂₂) = ‖P⊥_{Φ̂}θ*‖²/‖θ*‖² stays bounded away from 0
on the duplicate region

    D(δ) = {(x̂₁, x̂₂) on the √d-sphere : ‖x̂_j − x₁‖ ≤ δ√d, j = 1, 2},

whereas the true configuration (x₁, x₂) has loss 0.

What is measured, for several activations and p/(dn) (here dn = 2d):

* ``min_D(δ) L`` by multi-start L-BFGS-B (:func:`duplicate_region_minimum`) on a geodesic
  parametrisation of the caps (only box constraints), for a grid of δ. Every value is the loss of
  a feasible configuration, so it is an *upper bound* on the true minimum; starts include the best
  configurations of smaller δ (the regions are nested) and the δ → 0 optimal pair, so the
  reported curve is non-increasing in δ by construction.
* its δ → 0 limit, computed directly (:func:`duplicate_limit`): as both candidates approach x₁
  the span of their features tends to span{φ(x₁), Dφ(x₁)[u]} with u tangent at x₁, and

      L₀ = min_u ‖P⊥_{span{φ(x₁), J u}} θ‖²/‖θ‖²,   J = diag φ′(Vx₁) · V,

  which has the closed form L₀ = ‖P⊥_{span{φ(x₁), J B}} θ‖²/‖θ‖², B an orthonormal basis of the
  tangent space x₁⊥ (derivation in :func:`duplicate_limit`). L₀ is an upper bound on min_D(δ) L
  for every δ (the limit is approached inside every D(δ)), and equals its δ → 0 limit.
* the agreement of the two at a small δ, below the *kink radius* of the activation (ReLU-type
  activations: the radius inside which no feature's pre-activation crosses a kink; beyond it,
  pairs straddling a kink gain extra freedom and the minimum drops faster than O(δ)).

Run: ``python -m rftheory.claims.theorem2 [--quick]`` or ``rftheory verify theorem2``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import scipy.linalg
import scipy.optimize

from rftheory.claims._common import ClaimConfig, main_for
from rftheory.data import gaussian_labels, sphere_data
from rftheory.errors import RFTheoryError, ShapeError
from rftheory.features import FeatureMap, RandomFeatures, train_min_norm
from rftheory.gram import GramSolution, solve_gram
from rftheory.projection import projection_loss
from rftheory.output import format_table, save_figure, sparse_log_ticks

CLAIM = "theorem2"

#: Activations compared (the paper's relu+tanh, two odd smooth ones and ReLU).
DEFAULT_ACTIVATIONS = ("relu+tanh", "tanh", "erf", "relu")
#: A duplicate-region minimum below this counts as "reaches 0". The true configuration has loss
#: ~1e-30 and L-BFGS-B drives reachable zeros to ≲ 1e-12 (ftol below); the smallest non-zero
#: minima measured at p ≥ 2dn are ≥ 5e-2, four orders above.
ZERO_LOSS = 1e-6
#: Accepted relative gap (L₀ − min_D(δ) L)/L₀ at the small check δ (below the kink radius): the
#: measured gap there is O(δ) ≲ 1e-4 for smooth activations; 1e-2 leaves room for an optimiser
#: that stops a little early.
LIMIT_RTOL = 1e-2
#: The small δ of the limit check (capped at half the kink radius for ReLU-type activations).
DELTA_CHECK = 1e-3
#: Smallest δ the limit check will use: below it the candidates' Gram matrix has condition
#: ≳ 1/δ² ≈ 1e10 and the comparison says more about rounding than about the limit.
DELTA_CHECK_MIN = 1e-5
#: Ratios p/(dn) counted as "large" for the verdict (the theorem's p ≫ dn regime).
LARGE_RATIO = 2.0
#: L-BFGS-B tolerances: losses here are O(1e-2..1) and scipy's ftol test is relative to
#: max(|f|, 1), so 1e-13 asks for ~12 significant digits of the smallest losses.
_LBFGS = {"ftol": 1e-13, "gtol": 1e-11, "maxiter": 3000}
_V_STREAM = 0x54484D32  # "THM2": tag of the seed stream of V


@dataclass(frozen=True)
class Config(ClaimConfig):
    """The Theorem 2 check (see :func:`run`); checked on creation.

    Attributes
    ----------
    d : int
        Input dimension (n = 2); data ``sphere_data(2, d, seed)``.
    ratios : tuple of float
        p/(dn) of the models (V nested in p).
    deltas : tuple of float
        Radii δ of the duplicate regions D(δ), 0 < δ < 2.
    random_starts : int
        Random L-BFGS-B starts per (p, δ), besides the warm and limit starts.
    activations : tuple of str
    """

    d: int = 8
    ratios: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    deltas: tuple[float, ...] = (0.005, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5)
    random_starts: int = 5
    activations: tuple[str, ...] = DEFAULT_ACTIVATIONS

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("ratios", "deltas", "activations"):
            self._set(name, tuple(getattr(self, name)))
        if self.d < 2 or not self.ratios or not self.activations or self.random_starts < 0:
            raise RFTheoryError("theorem2 check needs d >= 2, ratios, activations and "
                                "random_starts >= 0")
        if any(not 0.0 < dl < 2.0 for dl in self.deltas):
            raise RFTheoryError(f"deltas must lie in (0, 2), got {self.deltas}")


FULL = Config()
QUICK = Config(d=6, ratios=(0.5, 2.0, 8.0), deltas=(0.05, 0.3), random_starts=2)


# ---------------------------------------------------------------------------------------------
# The δ → 0 limit
# ---------------------------------------------------------------------------------------------

def tangent_basis(x: np.ndarray) -> np.ndarray:
    """Orthonormal basis (d, d−1) of the tangent space x⊥ of the sphere at x."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or not np.any(x):
        raise ShapeError("x must be a non-zero vector")
    return scipy.linalg.null_space(x[None, :])


@dataclass(frozen=True)
class DuplicateLimit:
    """The δ → 0 limit of the duplicate-region minimum of the projection loss at x.

    Attributes
    ----------
    loss : float
        L₀ = ‖P⊥_{span{φ(x), J B}} θ‖²/‖θ‖².
    direction : numpy.ndarray, shape (d,)
        The optimal tangent direction u* (unit norm, u* ⊥ x): the limit pair is x ± h u*.
    coefficients : numpy.ndarray, shape (d,)
        Weights of [φ(x), J B] in the projection of θ.
    gram : GramSolution
        Diagnostics of the d × d Gram solve.
    """

    loss: float
    direction: np.ndarray
    coefficients: np.ndarray
    gram: GramSolution


def duplicate_limit(features: FeatureMap, x: Any, theta: Any) -> DuplicateLimit:
    """δ → 0 limit of min over D(δ) of the projection loss, with both candidates tending to x.

    Parameters
    ----------
    features : FeatureMap
    x : array, shape (d,)
        The training point both candidates approach (on the √d-sphere).
    theta : array, shape (p,)

    Returns
    -------
    DuplicateLimit

    Notes
    -----
    Write x̂₁ = x + h₁, x̂₂ = x + h₂ with h₁, h₂ → 0. Then span{φ(x̂₁), φ(x̂₂)} =
    span{φ(x̂₁), (φ(x̂₂) − φ(x̂₁))/‖x̂₂ − x̂₁‖} → span{φ(x), J u}, where J = diag(φ′(Vx)) V is the
    Jacobian of x ↦ φ(Vx) and u the limiting direction of x̂₂ − x̂₁, tangent to the sphere at x
    (both points stay on the sphere). Let e = φ(x)/‖φ(x)‖, θ′ = (I − eeᵀ)θ, A = (I − eeᵀ)J B
    (B: orthonormal basis of x⊥, u = Bw). Then

        ‖P⊥_{span{φ(x), JBw}} θ‖² = ‖θ′‖² − (bᵀw)²/(wᵀMw),   b = Aᵀθ′, M = AᵀA.

    The generalised Rayleigh quotient (bᵀw)²/(wᵀMw) has a rank-one numerator, so by
    Cauchy–Schwarz in the M inner product its maximum is bᵀM⁻¹b, attained at w* = M⁻¹b — which is
    exactly ‖P_{span A}θ′‖². Hence the best *single* direction already captures the projection
    onto the whole d-dimensional space, and

        L₀ = ‖P⊥_{span{φ(x), J B}} θ‖²/‖θ‖²,   u* ∝ B c₁:,

    c the coefficients of θ's projection on [φ(x), J B]. It is computed streaming over the blocks
    of V: the d × d Gram matrix of [φ(x), J B] and its product with θ in one pass
    (:func:`rftheory.gram.solve_gram`), the residual θ − [φ(x), J B]c in a second — a direct
    residual, accurate to rounding (no Gram difference).

    For activations with kinks (ReLU) J uses the derivative convention of the activation; the
    limit is the limit of the *smooth* picture, valid once δ is below the kink radius
    (:func:`kink_radius`).
    """
    x = np.asarray(x, dtype=np.float64)
    d = features.d
    if x.shape != (d,):
        raise ShapeError(f"x must have shape ({d},), got {x.shape}")
    theta = np.asarray(theta, dtype=np.float64)
    B = tangent_basis(x)
    G = np.zeros((d, d))
    c = np.zeros(d)
    for blk in features.blocks(x[None, :]):
        A = _limit_columns(features, blk, B)
        G += A.T @ A
        c += A.T @ theta[blk.rows]
    solved = solve_gram(G, c)
    a = solved.solution
    resid_sq = 0.0
    for blk in features.blocks(x[None, :]):
        r = theta[blk.rows] - _limit_columns(features, blk, B) @ a
        resid_sq += float(r @ r)
    u = B @ a[1:]
    norm_u = float(np.linalg.norm(u))
    direction = u / norm_u if norm_u > 0 else B[:, 0]
    return DuplicateLimit(min(resid_sq / float(theta @ theta), 1.0), direction, a, solved)


def _limit_columns(features: FeatureMap, blk: Any, B: np.ndarray) -> np.ndarray:
    """Rows ``blk.rows`` of the p × d matrix [φ(x), diag(φ′(Vx)) V B] (one block of V)."""
    return np.concatenate([blk.F.T, features.activation.derivative(blk.Z).T * (blk.V @ B)], axis=1)


def kink_radius(features: FeatureMap, x: Any) -> float:
    """Largest δ such that no feature's pre-activation crosses a kink of φ within ‖x̂ − x‖ ≤ δ√d.

    min over features k and kinks κ of |v_kᵀx − κ| / (‖v_k‖√d); ``inf`` for a smooth activation.
    Inside that ball every pre-activation stays on one smooth piece of φ, so the Taylor picture
    behind :func:`duplicate_limit` applies.
    """
    kinks = features.activation.kinks
    if not kinks:
        return math.inf
    x = np.asarray(x, dtype=np.float64)
    best = math.inf
    for blk in features.blocks(x[None, :]):
        norms = np.linalg.norm(blk.V, axis=1)
        for kappa in kinks:
            best = min(best, float(np.min(np.abs(blk.Z[0] - kappa) / norms)))
    return best / math.sqrt(features.d)


# ---------------------------------------------------------------------------------------------
# The duplicate-region minimum
# ---------------------------------------------------------------------------------------------

class _CapPair:
    """Geodesic coordinates of m points in the cap of angle α around x on the √d-sphere.

    Point j is √d (cos a_j e + sin a_j B u_j/‖u_j‖), e = x/√d, with 0 ≤ a_j ≤ α (box bounds) and
    u_j ∈ R^{d−1} free. ‖x̂_j − x‖ = 2√d sin(a_j/2), so α = 2 arcsin(δ/2) is the cap of D(δ).
    """

    def __init__(self, x: np.ndarray, m: int):
        self.d = x.shape[0]
        self.m = m
        self.sd = math.sqrt(self.d)
        self.e = x / self.sd
        self.B = tangent_basis(x)

    def unpack(self, z: np.ndarray):
        a = z[: self.m]
        U = z[self.m:].reshape(self.m, self.d - 1)
        nu = np.linalg.norm(U, axis=1, keepdims=True)
        nu = np.where(nu > 0, nu, 1.0)
        Ut = U / nu
        W = Ut @ self.B.T
        X = self.sd * (np.cos(a)[:, None] * self.e + np.sin(a)[:, None] * W)
        return a, Ut, nu, W, X

    def points(self, z: np.ndarray) -> np.ndarray:
        return self.unpack(z)[4]

    def coordinates(self, X: np.ndarray) -> np.ndarray:
        """Inverse map (up to the scale of u): coordinates of points X (m, d) in the cap."""
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        cos = np.clip(Xn @ self.e, -1.0, 1.0)
        a = np.arccos(cos)
        T = (Xn - cos[:, None] * self.e) @ self.B
        T = np.where(np.linalg.norm(T, axis=1, keepdims=True) > 0, T, 1.0)
        return np.concatenate([a, T.ravel()])

    def chain(self, z: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Gradient in z from the Euclidean gradient g = ∂L/∂X (m, d)."""
        a, Ut, nu, W, _ = self.unpack(z)
        ga = self.sd * np.sum(g * (-np.sin(a)[:, None] * self.e + np.cos(a)[:, None] * W), axis=1)
        gt = g @ self.B
        gu = self.sd * np.sin(a)[:, None] * (gt - np.sum(gt * Ut, axis=1, keepdims=True) * Ut) / nu
        return np.concatenate([ga, gu.ravel()])


def duplicate_region_minimum(features: FeatureMap, x: Any, theta: Any, delta: float, *,
                             random_starts: int = 4, seed: int = 0,
                             warm: Sequence[np.ndarray] = (),
                             limit: DuplicateLimit | None = None) -> dict[str, Any]:
    """Minimise L(x̂₁, x̂₂) over D(δ) = {‖x̂_j − x‖ ≤ δ√d} by multi-start L-BFGS-B.

    Parameters
    ----------
    features : FeatureMap
    x : array, shape (d,)
        Centre of the duplicate region (a training point, on the √d-sphere).
    theta : array, shape (p,)
    delta : float
        Radius of the region in units of √d, 0 < δ < 2.
    random_starts : int
        Random starting pairs (cap angle uniform in [α/2, α], direction uniform).
    seed : int
        Seed of the random starts.
    warm : sequence of arrays (2, d)
        Extra starting pairs (e.g. minimisers for a smaller δ); those outside D(δ) are skipped.
    limit : DuplicateLimit, optional
        If given, the pair x ± (boundary) u* along its optimal direction is also a start.

    Returns
    -------
    dict
        ``loss`` (the smallest loss found — an upper bound on the minimum), ``X_hat`` (its pair),
        ``losses`` and ``iterations`` per start, ``start_kinds``, ``max_distance`` (largest
        ‖x̂_j − x‖/√d of the best pair, ≤ δ up to rounding) and ``separation`` (‖x̂₁ − x̂₂‖/√d).

    Notes
    -----
    The objective and gradient are :func:`rftheory.projection.projection_loss` (closed-form
    gradient through φ′ and V), chained through the cap coordinates of :class:`_CapPair`.
    L-BFGS-B handles the bounds 0 ≤ a_j ≤ α exactly. Non-convex: more starts can only lower the
    result.
    """
    x = np.asarray(x, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    if not (0.0 < delta < 2.0):
        raise RFTheoryError(f"delta must lie in (0, 2), got {delta!r}")
    cap = _CapPair(x, 2)
    d = cap.d
    alpha = 2.0 * math.asin(delta / 2.0)
    rng = np.random.default_rng([seed, _V_STREAM, int(round(delta * 1e9))])

    def fun(z):
        res = projection_loss(features, cap.points(z), theta)
        return res.loss, cap.chain(z, res.gradient)

    starts: list[tuple[str, np.ndarray]] = []
    if limit is not None:
        # Both points on the cap's boundary, on opposite sides along u*: the limit pair scaled up.
        coords = np.concatenate([[alpha, alpha],
                                 cap.B.T @ limit.direction, -(cap.B.T @ limit.direction)])
        starts.append(("limit", coords))
    for Xw in warm:
        Xw = np.asarray(Xw, dtype=np.float64)
        if np.all(np.linalg.norm(Xw - x, axis=1) <= delta * math.sqrt(d) * (1 + 1e-9)):
            z = cap.coordinates(Xw)
            z[:2] = np.minimum(z[:2], alpha)
            starts.append(("warm", z))
    for _ in range(random_starts):
        starts.append(("random", np.concatenate([alpha * rng.uniform(0.5, 1.0, 2),
                                                 rng.standard_normal(2 * (d - 1))])))
    if not starts:
        raise RFTheoryError("no starting point: give random_starts >= 1, warm pairs or a limit")
    bounds = [(0.0, alpha)] * 2 + [(None, None)] * (2 * (d - 1))
    losses, iterations, best = [], [], (math.inf, None)
    for _, z0 in starts:
        out = scipy.optimize.minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                                      options=_LBFGS)
        X_hat = cap.points(out.x)
        loss = projection_loss(features, X_hat, theta, gradient=False).loss
        losses.append(loss)
        iterations.append(int(out.nit))
        if loss < best[0]:
            best = (loss, X_hat)
    X_hat = best[1]
    return {
        "delta": float(delta), "loss": float(best[0]), "X_hat": X_hat,
        "losses": losses, "iterations": iterations, "start_kinds": [k for k, _ in starts],
        "max_distance": float(np.max(np.linalg.norm(X_hat - x, axis=1)) / math.sqrt(d)),
        "separation": float(np.linalg.norm(X_hat[0] - X_hat[1]) / math.sqrt(d)),
    }


# ---------------------------------------------------------------------------------------------
# One activation
# ---------------------------------------------------------------------------------------------

def feature_seed(seed: int) -> int:
    """Seed of V (the same for every p: models are nested in p)."""
    return int(np.random.SeedSequence([seed, _V_STREAM]).generate_state(1, np.uint32)[0])


def duplicate_curves(activation: str, d: int, ratios: Sequence[float], deltas: Sequence[float], *,
                     seed: int = 0, random_starts: int = 4,
                     progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """min_D(δ) L against δ and p/(dn), and its δ → 0 limit, for one activation (n = 2).

    Data: ``sphere_data(2, d, seed)``, labels ``gaussian_labels(2, seed)``, V with seed
    :func:`feature_seed`. δ values above half the distance from x₁ to the nearer of ±x₂ are
    skipped (the region would no longer be a pure duplicate region for odd activations, whose
    features cannot tell x₂ from −x₂).
    """
    n = 2
    X = sphere_data(n, d, seed)
    Y = gaussian_labels(n, seed)
    x1 = X[0]
    separation = float(min(np.linalg.norm(X[0] - X[1]), np.linalg.norm(X[0] + X[1])) / math.sqrt(d))
    kept = [float(dl) for dl in sorted(deltas) if dl <= separation / 2]
    skipped = [float(dl) for dl in sorted(deltas) if dl > separation / 2]
    rows = []
    for ratio in ratios:
        p = max(n, int(round(ratio * d * n)))
        t0 = time.perf_counter()
        features = RandomFeatures(activation, d, p, seed=feature_seed(seed), v_cache_bytes=2**26)
        model = train_min_norm(features, X, Y)
        theta = np.asarray(model.theta)
        truth = projection_loss(features, X, theta, gradient=False).loss
        limit = duplicate_limit(features, x1, theta)
        radius = kink_radius(features, x1)
        minima, warm = [], []
        for k, delta in enumerate(kept):
            out = duplicate_region_minimum(features, x1, theta, delta, random_starts=random_starts,
                                           seed=seed + k, warm=warm, limit=limit)
            warm = [out["X_hat"]]
            minima.append(out)
        # The limit check: one small δ below the kink radius, started from the limit pair.
        delta_check = min(DELTA_CHECK, radius / 2)
        check = None
        if delta_check >= DELTA_CHECK_MIN:
            check = duplicate_region_minimum(features, x1, theta, delta_check, random_starts=1,
                                             seed=seed, limit=limit)
        row = {
            "ratio": float(ratio), "p": p, "p_over_dn": p / (d * n),
            "train_residual": model.train_residual, "truth_loss": truth,
            "limit_loss": limit.loss, "limit_direction": limit.direction,
            "kink_radius": radius if math.isfinite(radius) else None,
            "deltas": kept,
            "min_loss": [m["loss"] for m in minima],
            "minimisers": [m["X_hat"] for m in minima],
            "start_losses": [m["losses"] for m in minima],
            "iterations": [m["iterations"] for m in minima],
            "pair_separation": [m["separation"] for m in minima],
            "delta_check": delta_check if check is not None else None,
            "check_loss": None if check is None else check["loss"],
            # Relative gap only where L₀ is a genuine positive number (p ≤ d makes it ~1e-30).
            "check_relative_gap": (None if check is None or limit.loss <= ZERO_LOSS else
                                   (limit.loss - check["loss"]) / limit.loss),
            "seconds": time.perf_counter() - t0,
        }
        rows.append(row)
        if progress:
            mins = ", ".join(f"{dl:g}: {v:.3e}" for dl, v in zip(kept, row["min_loss"]))
            progress(f"{activation}: p = {p} (p/dn = {p / (d * n):g}): L0 = {limit.loss:.4e}; "
                     f"min over D(delta) {mins}; {row['seconds']:.1f} s")
    large = [r for r in rows if r["ratio"] >= LARGE_RATIO]
    bounded = bool(large) and all(min(r["min_loss"] + [r["limit_loss"]]) > ZERO_LOSS for r in large)
    checks = [r["check_relative_gap"] for r in rows if r["check_relative_gap"] is not None]
    return {
        "activation": activation, "d": d, "n": n, "seed": seed, "v_seed": feature_seed(seed),
        "X": X, "separation": separation, "deltas": kept, "deltas_skipped": skipped,
        "rows": rows,
        "verdict": {
            "bounded_away_at_large_p": bounded,
            "smallest_min_at_large_p": min((min(r["min_loss"] + [r["limit_loss"]]) for r in large),
                                           default=None),
            "limit_agrees": bool(checks) and all(abs(g) <= LIMIT_RTOL for g in checks),
        },
    }


# ---------------------------------------------------------------------------------------------
# Protocol: run, plot, summary
# ---------------------------------------------------------------------------------------------

def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The check for every activation of ``config`` (:data:`FULL` by default, :data:`QUICK` for
    ``--quick``; see the module docstring)."""
    curves = [duplicate_curves(a, config.d, config.ratios, config.deltas, seed=config.seed,
                               random_starts=config.random_starts, progress=progress)
              for a in config.activations]
    per_activation = {c["activation"]: c["verdict"] for c in curves}
    main = per_activation.get("relu+tanh", next(iter(per_activation.values())))
    verdict = {
        "satisfied_by": [a for a, v in per_activation.items() if v["bounded_away_at_large_p"]],
        "violated_by": [a for a, v in per_activation.items() if not v["bounded_away_at_large_p"]],
        "limit_formula_agrees": all(v["limit_agrees"] for v in per_activation.values()),
    }
    verdict["supported"] = bool(main["bounded_away_at_large_p"] and verdict["limit_formula_agrees"])
    return {
        "claim": CLAIM,
        "statement": ("n = 2: min of the projection loss over the duplicate region "
                      "{||x_hat_j - x_1|| <= delta sqrt(d), j = 1, 2} stays above "
                      f"{ZERO_LOSS:g} for p/(dn) >= {LARGE_RATIO:g}; its delta -> 0 limit equals "
                      "the residual of theta on span{phi(x1), J_x1 B} (closed form)"),
        "config": config.as_dict(),
        "zero_loss": ZERO_LOSS, "limit_rtol": LIMIT_RTOL, "large_ratio": LARGE_RATIO,
        "curves": curves,
        "verdict": verdict,
    }


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """Per activation: min_D(δ) L / L₀ against δ (one line per p/(dn)); and L₀ and min_D(δ) L
    against p/(dn). PNG + PDF."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    curves = result["curves"]
    fig, axes = plt.subplots(2, len(curves), figsize=(4.2 * len(curves), 7.4), squeeze=False,
                             constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    floor = 1e-16
    for col, c in enumerate(curves):
        # Top: the minimum relative to its δ → 0 limit (rows where L₀ > 0 only; p ≤ d has
        # L₀ = 0 and appears in the bottom panel).
        ax = axes[0, col]
        for i, r in enumerate(c["rows"]):
            if r["limit_loss"] <= result["zero_loss"]:
                continue
            color = colors[i % len(colors)]
            ax.plot(r["deltas"], np.asarray(r["min_loss"], dtype=float) / r["limit_loss"], "o-",
                    color=color, ms=4, label=f"p/(dn) = {r['p_over_dn']:g}")
            if r["check_loss"] is not None:
                ax.plot([r["delta_check"]], [r["check_loss"] / r["limit_loss"]], "x", color=color)
        ax.axhline(1.0, color="k", lw=1)
        ax.set_xscale("log")
        ax.set_ylim(0.0, 1.05)
        ax.set_xlabel(r"$\delta$")
        ax.set_ylabel(r"$\min_{D(\delta)} L \,/\, L_0$")
        ax.set_title(f"{c['activation']} (d = {c['d']}, n = 2)\n$L_0$: $\\delta\\to 0$ limit "
                     "(closed form); x: small-$\\delta$ check", fontsize=9)
        if col == 0:
            ax.legend(fontsize=7)
        ax = axes[1, col]
        ratio = [r["p_over_dn"] for r in c["rows"]]
        ax.plot(ratio, [max(r["limit_loss"], floor) for r in c["rows"]], "s--", label=r"$L_0$")
        for j, delta in enumerate(c["deltas"]):
            ax.plot(ratio, [max(r["min_loss"][j], floor) for r in c["rows"]], "o-", ms=4,
                    label=rf"$\delta$ = {delta:g}")
        ax.axhline(result["zero_loss"], color="k", ls=":", lw=1)
        ax.axvline(1.0, color="grey", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"$p/(dn)$")
        ax.set_ylabel(r"$\min_{D(\delta)}$ loss")
        if col == 0:
            ax.legend(fontsize=7)
    for ax in np.ravel(axes):
        sparse_log_ticks(ax)
    ratios = sorted({r["p_over_dn"] for c in curves for r in c["rows"]})
    for ax in axes[1]:
        ax.set_xticks(ratios, [f"{r:g}" for r in ratios])
    return save_figure(fig, stem)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3e}"


def summary(result: dict[str, Any]) -> str:
    """Per activation and p: L₀, the duplicate-region minima per δ, the small-δ check."""
    lines = []
    for c in result["curves"]:
        headers = ["p", "p/(dn)", "L0"] + [f"delta={dl:g}" for dl in c["deltas"]] + [
            "check delta", "(L0-min)/L0", "kink radius"]
        rows = []
        for r in c["rows"]:
            rows.append([r["p"], f"{r['p_over_dn']:g}", f"{r['limit_loss']:.3e}"]
                        + [f"{v:.3e}" for v in r["min_loss"]]
                        + ["-" if r["delta_check"] is None else f"{r['delta_check']:.1e}",
                           "-" if r["check_relative_gap"] is None else f"{r['check_relative_gap']:.1e}",
                           "-" if r["kink_radius"] is None else f"{r['kink_radius']:.1e}"])
        v = c["verdict"]
        lines.append(f"{c['activation']} (d = {c['d']}, n = 2; ||x1 -+ x2||/sqrt(d) >= "
                     f"{c['separation']:.3f}): bounded away at p/(dn) >= {result['large_ratio']:g}: "
                     f"{v['bounded_away_at_large_p']} (smallest {_fmt(v['smallest_min_at_large_p'])}); "
                     f"limit agrees: {v['limit_agrees']}")
        lines.append(format_table(headers, rows))
    v = result["verdict"]
    lines.append("verdict: " + ", ".join(f"{k} = {v[k]}" for k in v))
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
