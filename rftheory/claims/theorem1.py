"""Claim (Theorem 1): for p ≫ dn the training set is the only zero of the projection loss, and a
candidate whose feature lies in the span of the training features is a training point (±).

Two faces are measured on sphere data with the paper's activation (relu+tanh).

*Zero-loss uniqueness* (:func:`zero_loss_search`). For each p, many reconstructions — plain
single runs of the default optimiser from random starts (:func:`rftheory.reconstruct.reconstruct` with no over-complete pool,
which can stop in any local minimum, spurious zeros included) and the full over-complete
reconstruction — and, among those that reach projection loss ≤ :data:`ZERO_LOSS`, the largest
reconstruction error ρ. Counting dimensions: the n̂ = n candidates have n(d−1) degrees of
freedom and θ* ∈ span Φ̂ imposes p − n conditions, so for p < dn the zero set is a manifold of
dimension nd − p containing spurious solutions; for p > dn it is a finite set, which the theorem
says is just the training set once p ≫ dn.

*Recover one* (:func:`span_residual`). The relative distance of a single candidate's feature to the span
of the training features,

    r(x̂) = ‖P⊥_{span Φ} φ(x̂)‖ / ‖φ(x̂)‖,

and the gap g(ε) = min r(x̂) over candidates x̂ on the √d-sphere at distance ≥ ε√d from every
±x_i, by multi-start SLSQP (:func:`min_span_residual`). Counting dimensions again: x̂ has d − 1
degrees of freedom and r(x̂) = 0 imposes p − n conditions, so away from the training points the
zeros form a manifold of dimension n + d − 1 − p for p ≤ n + d − 2, are isolated (possibly absent)
at p = n + d − 1, and generically do not exist for p ≥ n + d: the single-candidate gap should open
at p ≈ n + d, far below dn. As p → ∞, r(x̂)² tends to the kernel residual
1 − k̂ᵀK⁻¹k̂/K(x̂, x̂) (k̂_i = K(x̂, x_i)), whose minimum g_∞(ε) (:func:`kernel_gap`, from the
Hermite series of :mod:`rftheory.kernel`) is the independent large-p reference.

Numerical floor of r. r² is computed by :func:`rftheory.projection.projection_loss` with θ = φ(x̂)
and the training points as "candidates": ‖φ̂ − Φᵀa‖²/‖φ̂‖², a direct residual. Its floor is set by
the error of a = G⁻¹Φφ̂, whose component in span Φ adds in quadrature: ~κ(G)·eps·‖φ̂‖, measured
as r(x_i) (≈ 1e-15 here, reported as ``residual_floor``) — seven orders below the 1e-8 floor of
the Gram-difference formula 1 − φ̂ᵀΦᵀG⁻¹Φφ̂/‖φ̂‖² of :func:`rftheory.projection.projection_residuals`.

Run: ``python -m rftheory.claims.theorem1 [--quick]`` or ``rftheory verify theorem1``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.optimize
from numpy.polynomial import polynomial as npoly

from rftheory.claims._common import ClaimConfig, main_for
from rftheory.data import gaussian_labels, sphere_points, to_sphere
from rftheory.errors import RFTheoryError, ShapeError
from rftheory.features import FeatureMap, RandomFeatures, train_min_norm
from rftheory.gram import solve_gram
from rftheory.kernel import KernelSeries, kernel_series
from rftheory.metrics import match
from rftheory.projection import projection_loss
from rftheory.reconstruct import reconstruct
from rftheory.output import format_table, save_figure

CLAIM = "theorem1"

ACTIVATION = "relu+tanh"
#: A reconstruction "reaches zero loss" at or below this. The optimiser's target is 1e-12; the
#: non-zero local minima measured at p ≈ dn sit at ≳ 4e-5, far above.
ZERO_LOSS = 1e-10
#: Optimiser target loss of the reconstructions.
TARGET_LOSS = 1e-12
#: A zero-loss solution is "the training set" when its ρ is below this. Converged solutions at
#: p > dn have ρ ~ 1e-6; spurious ones ρ ~ 0.5–1 (random points on the sphere: ρ ≈ 0.6).
RHO_SAME = 0.01
#: g(ε) below this counts as 0. The residual floor r(x_i) is ~1e-15 and SLSQP drives reachable
#: zeros to ≲ 1e-10; the smallest positive gaps measured (at p = n + d) are ~1e-3 or more.
GAP_ZERO = 1e-8
#: Ratios p/(dn) counted as "p ≫ dn" for the verdict.
LARGE_RATIO = 4.0
#: Truncation order of the kernel series for g_∞ (relu+tanh: tail bound 1.5e-5 at t = 1, below
#: 1e-7 for |t| ≤ 0.97, i.e. ε ≥ 0.25).
KERNEL_ORDER = 200
_SLSQP = {"ftol": 1e-22, "maxiter": 500}
_STREAM = 0x54484D31  # "THM1": tag of the seed streams of this check


@dataclasses.dataclass(frozen=True)
class Config(ClaimConfig):
    """Both faces of the Theorem 1 check (see :func:`run`); checked on creation.

    Attributes
    ----------
    d, n : int
        Input dimension and training-set size; data ``sphere_points(n, d, seed)``.
    ratios : tuple of float
        p/(dn) of the zero-loss uniqueness search.
    local_starts, reconstruct_starts : int
        Single local runs and over-complete reconstructions per p (:func:`zero_loss_search`).
    max_steps : int
        Optimiser budget of each reconstruction.
    gap_offsets : tuple of int
        p = n + d + offset for the single-candidate gap g(ε) (with ``gap_ratios``).
    gap_ratios : tuple of float
        p = round(ratio·dn) for the gap.
    epsilons : tuple of float
        Radii ε of the excluded balls, increasing.
    gap_starts : int
        SLSQP starts per (p, ε).
    """

    d: int = 8
    n: int = 4
    ratios: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 4.0, 8.0)
    local_starts: int = 8
    reconstruct_starts: int = 2
    max_steps: int = 2000
    gap_offsets: tuple[int, ...] = (-4, -2, -1, 0, 1, 2, 4)
    gap_ratios: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
    epsilons: tuple[float, ...] = (0.25, 0.5, 1.0)
    gap_starts: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("ratios", "gap_offsets", "gap_ratios", "epsilons"):
            self._set(name, tuple(getattr(self, name)))
        if list(self.epsilons) != sorted(self.epsilons):
            raise RFTheoryError("epsilons must be in increasing order")
        if self.d < 1 or self.n < 1 or self.max_steps < 1 or self.gap_starts < 1 \
                or min(self.local_starts, self.reconstruct_starts) < 0:
            raise RFTheoryError("theorem1 check needs d, n, max_steps, gap_starts >= 1 and "
                                "non-negative start counts")


FULL = Config()
QUICK = Config(d=6, n=3, ratios=(0.5, 1.0, 2.0, 8.0), local_starts=4, reconstruct_starts=1,
               max_steps=1000, gap_offsets=(-3, -2, -1, 0, 1, 3), gap_ratios=(2.0, 8.0),
               epsilons=(0.5,), gap_starts=5)


def feature_seed(seed: int) -> int:
    """Seed of V (the same for every p: models are nested in p).

    Parameters
    ----------
    seed : int
        The check's base seed.

    Returns
    -------
    int
        The seed of the random features.
    """
    return int(np.random.SeedSequence([seed, _STREAM]).generate_state(1, np.uint32)[0])


# ---------------------------------------------------------------------------------------------
# Recover one: the span residual of a single candidate and its constrained minimum
# ---------------------------------------------------------------------------------------------

def span_residual(features: FeatureMap, X: Any, x_hat: Any, *,
                  gradient: bool = True) -> tuple[float, np.ndarray | None]:
    """r(x̂)² = ‖P⊥_{span Φ(X)} φ(x̂)‖²/‖φ(x̂)‖² and its gradient with respect to x̂.

    Parameters
    ----------
    features : FeatureMap
        The random features (V and φ).
    X : array, shape (n, d)
        Training points (their features span the subspace).
    x_hat : array, shape (d,)
        The candidate.
    gradient : bool
        Also return ∂r²/∂x̂ (shape (d,)).

    Returns
    -------
    value : float
        r(x̂)².
    gradient : numpy.ndarray or None
        ∂r²/∂x̂, or None when ``gradient`` is false.

    Notes
    -----
    The value is :func:`rftheory.projection.projection_loss` with θ = φ̂ = φ(Vx̂) and the
    training points as the spanning set. With ρ = P⊥φ̂ = φ̂ − Φᵀa (a the loss's coefficients,
    Φᵀa by :meth:`~rftheory.features.FeatureMap.rmatvec`),

        ∂r²/∂φ̂ = 2(ρ − r² φ̂)/‖φ̂‖²,

    chained to x̂ by the streamed vector–Jacobian product
    :meth:`~rftheory.features.FeatureMap.vjp`. Floor: see the module docstring (~1e-15 in r).

    Examples
    --------
    A training point lies in the span of the training features; a fresh point does not:

    >>> from rftheory.data import sphere_points
    >>> from rftheory.features import RandomFeatures
    >>> from rftheory.claims.theorem1 import span_residual
    >>> X = sphere_points(3, 6, seed=0)
    >>> features = RandomFeatures("relu+tanh", d=6, p=200, seed=0)
    >>> on, _ = span_residual(features, X, X[0], gradient=False)
    >>> off, grad = span_residual(features, X, sphere_points(1, 6, seed=5)[0])
    >>> bool(on < 1e-20), bool(off > 1e-3), grad.shape
    (True, True, (6,))
    """
    x_hat = np.asarray(x_hat, dtype=np.float64)
    if x_hat.ndim != 1 or x_hat.shape[0] != features.d:
        raise ShapeError(f"x_hat must have shape ({features.d},), got {x_hat.shape}")
    phi = np.asarray(features.features(x_hat[None, :]))[0]
    phi_sq = float(phi @ phi)
    if phi_sq == 0.0:
        raise RFTheoryError("φ(x̂) = 0: the relative residual is undefined")
    res = projection_loss(features, X, phi, gradient=False)
    if not gradient:
        return res.loss, None
    resid = phi - np.asarray(features.rmatvec(X, res.coefficients))
    value = float(resid @ resid) / phi_sq
    cot = 2.0 * (resid - value * phi) / phi_sq
    g = np.asarray(features.vjp(x_hat[None, :], lambda blk: cot[blk.rows][None, :]))[0]
    return value, g


def _far_constraints(X: np.ndarray, eps: float) -> tuple[float, list[dict]]:
    """SLSQP constraints: ‖x̂‖² = d and ‖x̂ ∓ x_i‖ ≥ ε√d, i.e. |⟨x̂, x_i⟩|/d ≤ 1 − ε²/2."""
    d = X.shape[1]
    c = 1.0 - eps**2 / 2.0
    cons = [{"type": "eq", "fun": lambda x: np.array([x @ x / d - 1.0]),
             "jac": lambda x: (2.0 * x / d)[None, :]},
            {"type": "ineq", "fun": lambda x: c**2 - (X @ x / d) ** 2,
             "jac": lambda x: -2.0 * (X @ x / d)[:, None] * X / d}]
    return c, cons


def _random_far_points(X: np.ndarray, c: float, count: int, rng: np.random.Generator) -> list:
    """``count`` uniform points of the √d-sphere with |⟨x, x_i⟩|/d ≤ c for every i."""
    d = X.shape[1]
    out = []
    for _ in range(1000 * count):
        x = to_sphere(rng.standard_normal(d))
        if np.all(np.abs(X @ x / d) <= c):
            out.append(x)
            if len(out) == count:
                return out
    raise RFTheoryError("could not sample starting points outside the ε-balls; lower ε")


def _constrained_min(objective: Callable[[np.ndarray], tuple[float, np.ndarray]], X: np.ndarray,
                     eps: float, starts: int, rng: np.random.Generator) -> dict[str, Any]:
    """Multi-start SLSQP of ``objective`` (value, gradient) on the sphere outside the ε-balls."""
    d = X.shape[1]
    c, cons = _far_constraints(X, eps)
    values, iterations = [], []
    best = (math.inf, None)
    for x0 in _random_far_points(X, c, starts, rng):
        out = scipy.optimize.minimize(objective, x0, jac=True, method="SLSQP", constraints=cons,
                                      options=_SLSQP)
        x = to_sphere(out.x)
        # Feasible up to SLSQP's constraint tolerance (≈1e-12 here); anything worse is dropped.
        if np.max(np.abs(X @ x / d)) > c + 1e-8:
            values.append(None)
            iterations.append(int(out.nit))
            continue
        value = objective(x)[0]
        values.append(value)
        iterations.append(int(out.nit))
        if value < best[0]:
            best = (value, x)
    if best[1] is None:
        raise RFTheoryError("no SLSQP run ended feasible")
    return {"value": best[0], "x": best[1], "values": values, "iterations": iterations}


def min_span_residual(features: FeatureMap, X: Any, eps: float, *, starts: int = 10,
                      seed: int = 0) -> dict[str, Any]:
    """g(ε) = min r(x̂) over the √d-sphere minus the balls ‖x̂ ∓ x_i‖ < ε√d (multi-start SLSQP).

    Parameters
    ----------
    features : FeatureMap
        The random features (V and φ).
    X : array_like
        Training points, shape (n, d), on the √d-sphere.
    eps : float
        The radius of the excluded balls, in units of √d.
    starts : int
        Random starts.
    seed : int
        Seed of the starts.

    Returns
    -------
    dict
        ``gap`` (smallest r found: an upper bound on the true minimum), ``x_hat`` (its candidate),
        ``distance`` (min_i ‖x̂ ∓ x_i‖/√d of it, ≥ ε; = ε when the minimum sits on a ball's
        boundary), ``residuals`` and ``iterations`` per start (None: ended infeasible).
    """
    X = np.asarray(X, dtype=np.float64)
    if not (0.0 < eps <= math.sqrt(2.0)):
        raise RFTheoryError(f"eps must lie in (0, √2], got {eps!r}")
    rng = np.random.default_rng([seed, _STREAM, int(round(eps * 1e6))])
    out = _constrained_min(lambda x: span_residual(features, X, x), X, eps, starts, rng)
    x = out["x"]
    d = X.shape[1]
    dist = float(min(np.min(np.linalg.norm(X - x, axis=1)), np.min(np.linalg.norm(X + x, axis=1))))
    return {"eps": eps, "gap": math.sqrt(max(out["value"], 0.0)), "x_hat": x,
            "distance": dist / math.sqrt(d),
            "residuals": [None if v is None else math.sqrt(max(v, 0.0)) for v in out["values"]],
            "iterations": out["iterations"]}


def kernel_span_residual(series: KernelSeries, X: np.ndarray, x_hat: np.ndarray,
                         ) -> tuple[float, np.ndarray]:
    """p → ∞ limit of r(x̂)²: 1 − k̂ᵀK⁻¹k̂/K(1), k̂_i = K(⟨x̂, x_i⟩/d), with its gradient.

    K(t) = Σ_k μ_k² t^k is the truncated Hermite series; the diagonal uses the exact second
    moment K(1) = E[φ(g)²].

    Parameters
    ----------
    series : KernelSeries
        The kernel's Hermite series (:func:`rftheory.kernel.rf_kernel_series`).
    X : numpy.ndarray
        Training points, shape (n, d).
    x_hat : numpy.ndarray
        The candidate, shape (d,).

    Returns
    -------
    value : float
        The limit of r(x̂)².
    gradient : numpy.ndarray
        Its gradient with respect to x̂, shape (d,).

    Notes
    -----
    A Gram-difference formula: its floor is ~1e-8 in r, ample for the limiting gaps (~1e-1).
    """
    d = X.shape[1]
    # Evaluated at x̂ rescaled onto the sphere (the series is only valid for |t| ≤ 1, and SLSQP
    # may step off the sphere); the gradient is chained through the rescaling.
    x_s, norm = to_sphere(x_hat, return_norms=True)
    scale = math.sqrt(d) / norm
    coef = np.asarray(series.coefficients, dtype=np.float64)
    m2 = float(series.second_moment)
    T = X @ X.T / d
    K = npoly.polyval(T, coef)
    np.fill_diagonal(K, m2)
    t = np.clip(X @ x_s / d, -1.0, 1.0)
    k = npoly.polyval(t, coef)
    dk = npoly.polyval(t, npoly.polyder(coef))
    w = solve_gram(K, k).solution
    value = 1.0 - float(k @ w) / m2
    g_s = -2.0 * ((w * dk) @ X) / (d * m2)
    grad = scale * (g_s - (g_s @ x_s) * x_s / d)
    return value, grad


def kernel_gap(activation: str, X: Any, eps: float, *, starts: int = 10, seed: int = 0,
               order: int = KERNEL_ORDER) -> dict[str, Any]:
    """g_∞(ε): the minimum of the kernel-limit residual (:func:`kernel_span_residual`).

    Parameters
    ----------
    activation : str
        A registry name or an expression in ``z``.
    X : array_like
        Training points, shape (n, d), on the √d-sphere.
    eps : float
        Candidates keep a distance ≥ ε√d from every ±x_i.
    starts : int
        Random starts of the minimisation (multi-start SLSQP).
    seed : int
        Seed of the starts.
    order : int
        Truncation order of the Hermite series of K.

    Returns
    -------
    dict
        ``eps``, ``gap`` (the smallest limit residual found: an upper bound on g_∞(ε)),
        ``order`` and ``series_tail_bound`` (the truncation bound of the series).
    """
    X = np.asarray(X, dtype=np.float64)
    series = kernel_series(activation, order)
    rng = np.random.default_rng([seed, _STREAM, 7, int(round(eps * 1e6))])
    # The kernel objective is cheap (n × n): at least 20 starts, as its landscape is as
    # multi-modal as the finite-p one.
    out = _constrained_min(lambda x: kernel_span_residual(series, X, x), X, eps,
                           max(starts, 20), rng)
    return {"eps": eps, "gap": math.sqrt(max(out["value"], 0.0)), "order": order,
            "series_tail_bound": float(series.tail_bound)}


# ---------------------------------------------------------------------------------------------
# Zero-loss uniqueness
# ---------------------------------------------------------------------------------------------

def _kinds(runs: list[dict[str, Any]]) -> dict[str, int]:
    """Counts of :data:`rftheory.metrics.FAILURE_KINDS` among the runs of one p (success: the
    training set, ρ ≤ :data:`RHO_SAME`)."""
    from rftheory.metrics import FAILURE_KINDS, failure_kind

    out = dict.fromkeys(FAILURE_KINDS, 0)
    for r in runs:
        out[failure_kind(r["rho"], r["loss"], tol=ZERO_LOSS,
                         rho_success=math.nextafter(RHO_SAME, math.inf))] += 1
    return out


def zero_loss_search(features: RandomFeatures, X: np.ndarray, theta: Any, *, local_starts: int,
                     reconstruct_starts: int, seed: int = 0,
                     max_steps: int = 2000) -> list[dict[str, Any]]:
    """Reconstructions from many starts; each with its loss and ρ against the training set.

    ``local``: one run of the default optimiser from a random start (``reconstruct(..., oversample=1,
    max_rounds=1)``), free to stop in any minimum, spurious zeros included. ``reconstruct``: the
    default over-complete reconstruction. Seeds of the starts: ``seed·1000 + k``.

    Parameters
    ----------
    features : RandomFeatures
        The trained model's features.
    X : numpy.ndarray
        The training set, shape (n, d).
    theta : array_like
        The trained weights θ*.
    local_starts : int
        How many single local runs.
    reconstruct_starts : int
        How many over-complete ``reconstruct`` runs.
    seed : int
        Base seed of the starts.
    max_steps : int
        Step budget of each run.

    Returns
    -------
    list of dict
        Per run: ``method``, ``seed``, ``loss``, ``rho`` (official), ``rho_sign_invariant``,
        ``steps`` and ``stop_reason``.
    """
    n = X.shape[0]
    runs = []
    plans = ([("local", k, {"oversample": 1.0, "max_rounds": 1}) for k in range(local_starts)]
             + [("reconstruct", local_starts + k, {}) for k in range(reconstruct_starts)])
    for method, k, options in plans:
        out = reconstruct(features, theta, n, seed=seed * 1000 + k, tol=TARGET_LOSS,
                          max_steps=max_steps, **options)
        X_hat = np.asarray(out.X_hat)
        runs.append({"method": method, "seed": seed * 1000 + k, "loss": out.loss,
                     "rho": match(X, X_hat, "abs").rho,
                     "rho_sign_invariant": match(X, X_hat, "sign_invariant").rho,
                     "steps": out.steps, "stop_reason": out.stop_reason})
    return runs


# ---------------------------------------------------------------------------------------------
# Protocol: run, plot, summary
# ---------------------------------------------------------------------------------------------

def _gap_p_values(config: Config) -> list[int]:
    d, n = config.d, config.n
    ps = {n + d + k for k in config.gap_offsets} | {int(round(r * d * n)) for r in config.gap_ratios}
    return sorted(p for p in ps if p > n)


def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Both faces of Theorem 1 (see the module docstring), for ``config``.

    Parameters
    ----------
    config : Config
        The sizes and seeds (:data:`FULL` by default, :data:`QUICK` for ``--quick``).
    progress : callable, optional
        Called with one line of text per finished step.

    Returns
    -------
    dict
        JSON-serialisable: the parameters, the zero-loss runs per p (``uniqueness``), g(ε) per
        p (``gaps``), the kernel limits (``kernel_limit``) and the ``verdict``.
    """
    cfg, seed = config, config.seed
    d, n = cfg.d, cfg.n
    X = sphere_points(n, d, seed)
    Y = gaussian_labels(n, seed)
    v_seed = feature_seed(seed)

    def model(p: int):
        features = RandomFeatures(ACTIVATION, d, p, seed=v_seed, v_cache_bytes=2**26)
        return features, train_min_norm(features, X, Y)

    # Zero-loss uniqueness.
    uniqueness = []
    for ratio in cfg.ratios:
        p = max(n, int(round(ratio * d * n)))
        t0 = time.perf_counter()
        features, trained = model(p)
        runs = zero_loss_search(features, X, trained.theta, local_starts=cfg.local_starts,
                                reconstruct_starts=cfg.reconstruct_starts, seed=seed,
                                max_steps=cfg.max_steps)
        zeros = [r for r in runs if r["loss"] <= ZERO_LOSS]
        row = {"ratio": ratio, "p": p, "p_over_dn": p / (d * n),
               "train_residual": trained.train_residual, "runs": runs,
               "zero_loss_count": len(zeros),
               "spurious_count": sum(r["rho"] > RHO_SAME for r in zeros),
               "max_rho_zero_loss": max((r["rho"] for r in zeros), default=None),
               # every run classified (rftheory.metrics.failure_kind): success = the training
               # set; a failure is a spurious zero (loss <= ZERO_LOSS) or an unfinished descent
               "failure_kinds": _kinds(runs),
               "min_loss": min(r["loss"] for r in runs),
               "seconds": time.perf_counter() - t0}
        uniqueness.append(row)
        if progress:
            progress(f"uniqueness: p = {p} (p/dn = {p / (d * n):g}): {len(zeros)}/{len(runs)} "
                     f"zero-loss, {row['spurious_count']} spurious, max rho among them "
                     f"{row['max_rho_zero_loss']}; {row['seconds']:.1f} s")

    # Recover one: the gap.
    gaps = []
    for p in _gap_p_values(cfg):
        t0 = time.perf_counter()
        features, _ = model(p)
        floor = max(math.sqrt(max(span_residual(features, X, X[i], gradient=False)[0], 0.0))
                    for i in range(n))
        per_eps = [min_span_residual(features, X, eps, starts=cfg.gap_starts, seed=seed)
                   for eps in cfg.epsilons]
        gaps.append({"p": p, "p_over_dn": p / (d * n), "p_minus_n_minus_d": p - n - d,
                     "residual_floor": floor,
                     "gap": [g["gap"] for g in per_eps], "distance": [g["distance"] for g in per_eps],
                     "residuals": [g["residuals"] for g in per_eps],
                     "iterations": [g["iterations"] for g in per_eps],
                     "x_hat": [g["x_hat"] for g in per_eps],
                     "seconds": time.perf_counter() - t0})
        if progress:
            progress(f"gap: p = {p} (p - n - d = {p - n - d}): g(eps) = "
                     + ", ".join(f"{e:g}: {g['gap']:.3e}" for e, g in zip(cfg.epsilons, per_eps))
                     + f" (floor {floor:.1e}); {gaps[-1]['seconds']:.1f} s")
    limits = [kernel_gap(ACTIVATION, X, eps, starts=cfg.gap_starts, seed=seed)
              for eps in cfg.epsilons]

    # Verdicts.
    opens_at = []
    for j, _ in enumerate(cfg.epsilons):
        positive_from = None
        for row in reversed(gaps):
            if row["gap"][j] > GAP_ZERO:
                positive_from = row["p"]
            else:
                break
        opens_at.append(positive_from)
    small = [r for r in uniqueness if r["ratio"] < 1.0]
    large = [r for r in uniqueness if r["ratio"] >= LARGE_RATIO]
    # p ≤ n + d − 2: the zero set of r away from the training points has dimension ≥ 1;
    # p = n + d − 1: isolated zeros, which may be absent (or missed): not part of the verdict.
    below = [r for r in gaps if r["p"] <= n + d - 2]
    above = [r for r in gaps if r["p"] >= n + d]
    verdict = {
        "spurious_zeros_below_dn": bool(small) and all(r["spurious_count"] > 0 for r in small),
        "unique_at_large_p": bool(large) and all(
            r["zero_loss_count"] > 0 and r["spurious_count"] == 0 for r in large),
        # Judged at the smallest ε: for p ≤ n + d − 2 the zero set of r is a manifold through
        # each x_i, so zeros exist just outside small balls; whether it reaches the region far
        # from every ±x_i (large ε) is not implied by the count.
        "gap_zero_up_to_n_plus_d_minus_2": bool(below) and all(r["gap"][0] <= GAP_ZERO
                                                               for r in below),
        "gap_positive_from_n_plus_d": bool(above) and all(min(r["gap"]) > GAP_ZERO for r in above),
        "gap_opens_at_p": opens_at,
        "n_plus_d": n + d, "dn": d * n,
    }
    verdict["supported"] = bool(verdict["unique_at_large_p"] and above
                                and min(above[-1]["gap"]) > GAP_ZERO)
    return {
        "claim": CLAIM,
        "statement": ("for p >> dn every zero of the projection loss is the training set "
                      f"(rho < {RHO_SAME:g}) and g(eps) = min r(x_hat) over x_hat eps-far from all "
                      "+-x_i is > 0; dimension counting predicts spurious zeros for p < dn and a "
                      "single-candidate gap from p = n + d"),
        "activation": ACTIVATION, "d": d, "n": n, "v_seed": v_seed,
        "config": cfg.as_dict(),
        "zero_loss": ZERO_LOSS, "rho_same": RHO_SAME, "gap_zero": GAP_ZERO,
        "large_ratio": LARGE_RATIO, "epsilons": list(cfg.epsilons),
        "uniqueness": uniqueness,
        "gaps": gaps,
        "kernel_limit": limits,
        "verdict": verdict,
    }


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """Draw Theorem 1's figure: (a) zero-loss uniqueness, (b) the single-candidate gap g(ε)
    against p, (c) g(ε) against its kernel limit.

    (a) ρ of every reconstruction against p/(dn): zeros of the loss (loss ≤ the zero threshold)
    that are the training set (ρ below the dotted line), spurious zeros (ρ above it), and runs
    that stopped at a non-zero loss (open grey); circles are single local runs from random starts,
    squares full over-complete ``reconstruct`` runs. Spurious zeros exist below p = dn and none
    are found well above it. (b) The gap g(ε) = min ‖P⊥_Φ φ(x̂)‖/‖φ(x̂)‖ over candidates at
    distance ≥ ε√d from every ±x_i, against p (p = n + d dashed, p = dn solid); black dots: the
    numerical floor max_i r(x_i); the dotted line is the threshold below which a gap counts as
    closed. The gap opens at p ≈ n + d, far below dn. (c) g(ε)/g_∞(ε), g_∞ the kernel limit p → ∞ (legend), against p/(dn): the
    finite-p gap approaches its limit.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or its JSON).
    stem : path
        Where to write ``stem.png`` and ``stem.pdf``.

    Returns
    -------
    list of Path
        The PNG's and the PDF's paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.lines import Line2D

    from rftheory.plotting import (PALETTE, SYMBOLS, legend_above, log_ticks, log_values,
                                   panel_label, paper_figure, paper_style, tidy_log_axis)

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    d, n = result["d"], result["n"]
    floor = 1e-16
    good, spurious, grey = PALETTE[2], PALETTE[1], "0.6"
    with paper_style():
        fig, axes = paper_figure(2, ncols=3, aspect=0.95)
        ax = axes[0]
        for row in result["uniqueness"]:
            for r in row["runs"]:
                zero = r["loss"] <= result["zero_loss"]
                kind = ("zero loss, training set" if zero and r["rho"] <= result["rho_same"]
                        else "zero loss, spurious" if zero else "loss > 0")
                colour = {"zero loss, training set": good, "zero loss, spurious": spurious,
                          "loss > 0": grey}[kind]
                marker = "o" if r["method"] == "local" else "s"
                ax.plot(row["p_over_dn"], max(r["rho"], 1e-8), marker, color=colour,
                        mfc="none" if not zero else colour, ms=4)
        ax.axhline(result["rho_same"], color="k", ls=":", lw=0.8)
        ax.axvline(1.0, color="0.5", lw=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        tidy_log_axis(ax, "y")
        log_ticks(ax, [row["p_over_dn"] for row in result["uniqueness"]], "x")
        ax.set_xlabel(SYMBOLS["p_over_dn"])
        ax.set_ylabel(SYMBOLS["rho"])
        panel_label(ax, "a")

        ax = axes[1]
        ps = np.asarray([r["p"] for r in result["gaps"]], dtype=float)
        for j, eps in enumerate(result["epsilons"]):
            gaps = [r["gap"][j] for r in result["gaps"]]
            ax.plot(ps, log_values(gaps, floor)[0], "o-", color=PALETTE[j])
        ax.plot(ps, [max(r["residual_floor"], floor) for r in result["gaps"]], ".", color="k",
                ms=3)
        ax.axhline(result["gap_zero"], color="k", ls=":", lw=0.8)
        for x in (n + d, d * n):
            ax.axvline(x, color="0.5", lw=0.6, ls="--" if x == n + d else "-")
        ax.set_xscale("log")
        top = ax.secondary_xaxis("top")
        top.set_xticks([n + d, d * n], [r"$n+d$", r"$dn$"])
        top.tick_params(length=2, pad=1)
        ax.set_yscale("log")
        tidy_log_axis(ax, "y")
        ax.set_xlabel(SYMBOLS["p"])
        ax.set_ylabel(r"$g(\varepsilon)$")
        panel_label(ax, "b")

        ax = axes[2]
        ratios = {1.0}
        for j, eps in enumerate(result["epsilons"]):
            g_inf = result["kernel_limit"][j]["gap"]
            rows = [r for r in result["gaps"] if r["p"] >= n + d]
            ratios.update(r["p_over_dn"] for r in rows)
            ax.plot([r["p_over_dn"] for r in rows], [r["gap"][j] / g_inf for r in rows], "o-",
                    color=PALETTE[j])
        ax.axhline(1.0, color="k", lw=0.6)
        ax.axvline(1.0, color="0.5", lw=0.6)
        ax.set_xscale("log")
        log_ticks(ax, ratios, "x", fmt="{:.2g}")
        ax.set_xlabel(SYMBOLS["p_over_dn"])
        ax.set_ylabel(r"$g(\varepsilon)/g_\infty(\varepsilon)$")
        panel_label(ax, "c")
        key = [Line2D([], [], ls="", marker="o", color=good, label="zero loss, training set"),
               Line2D([], [], ls="", marker="o", color=spurious, label="zero loss, spurious"),
               Line2D([], [], ls="", marker="o", color=grey, mfc="none", label="loss > 0"),
               Line2D([], [], ls="", marker="o", color="k", mfc="none", label="local start"),
               Line2D([], [], ls="", marker="s", color="k", mfc="none", label="over-complete")]
        key += [Line2D([], [], marker="o", color=PALETTE[j],
                       label=rf"$\varepsilon = {eps:g}$ ($g_\infty = "
                             rf"{result['kernel_limit'][j]['gap']:.3f}$)")
                for j, eps in enumerate(result["epsilons"])]
        key.append(Line2D([], [], ls="", marker=".", color="k", label=r"floor $\max_i r(x_i)$"))
        legend_above(fig, key, [k.get_label() for k in key], ncol=4)
        return save_figure(fig, stem)


def _fmt(value: float | None, spec: str = ".2e") -> str:
    return "-" if value is None else format(value, spec)


def summary(result: dict[str, Any]) -> str:
    """Tables: zero-loss solutions per p; g(ε) per p; the kernel limit; the verdict.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or its JSON).

    Returns
    -------
    str
        The tables, ready to print.
    """
    d, n = result["d"], result["n"]
    rows = [[r["p"], f"{r['p_over_dn']:g}", f"{r['zero_loss_count']}/{len(r['runs'])}",
             r["spurious_count"], r.get("failure_kinds", {}).get("unfinished", "—"),
             _fmt(r["max_rho_zero_loss"]), _fmt(r["min_loss"])]
            for r in result["uniqueness"]]
    lines = [f"{result['activation']}, d = {d}, n = {n} (dn = {d * n}, n + d = {n + d})",
             "zero-loss uniqueness:",
             format_table(["p", "p/(dn)", "zero-loss", "spurious", "unfinished (loss > tol)",
                           "max rho (zero-loss)", "min loss"], rows)]
    eps = result["epsilons"]
    rows = [[r["p"], r["p_minus_n_minus_d"], f"{r['p_over_dn']:.3g}"]
            + [_fmt(g, ".3e") for g in r["gap"]] + [_fmt(r["residual_floor"], ".1e")]
            for r in result["gaps"]]
    lines += ["single-candidate gap g(eps):",
              format_table(["p", "p-n-d", "p/(dn)"] + [f"eps={e:g}" for e in eps] + ["floor"],
                           rows),
              "kernel limit g_inf(eps): " + ", ".join(
                  f"eps={k['eps']:g}: {k['gap']:.4f}" for k in result["kernel_limit"])]
    v = result["verdict"]
    lines.append("verdict: " + ", ".join(f"{k} = {v[k]}" for k in v))
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
