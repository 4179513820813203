"""The per-point attack: single inputs whose feature lies in the span of the trained weights.

A k-output model has θ* = ΦᵀA ∈ R^{p×k} with A = G⁻¹Y (n × k). When the coefficient matrix A has
rank n (k ≥ n outputs with generic labels), span θ* = span Φ: the attacker who holds (θ*, V) knows
the span of the training features, and each training point is a zero of the *span residual*

    r(x̂)² = ‖P⊥_{span θ} φ(Vx̂)‖² / ‖φ(Vx̂)‖²,   x̂ on the √d-sphere,

a function of one point. Theorem 1's single-candidate count (d − 1 unknowns against p − n
conditions) says that away from the training points zeros exist for p ≤ n + d − 2 (a manifold
through each x_i), are isolated at p = n + d − 1 and generically absent from p = n + d on: there
the zeros of r are exactly the ±x_i (odd φ: both signs; otherwise x_i only), and a
multi-start minimisation of r recovers training points one at a time, far below p ≈ dn.

:func:`theta_span` gives the orthonormal basis of span θ (and its numerical rank, which reveals
min(n, k) to the attacker); :func:`span_residual` the residual and its gradient;
:func:`span_attack` the multi-start minimisation, keeping the distinct zeros.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.optimize
from threadpoolctl import threadpool_limits

from .backend import to_host
from .errors import RFTheoryError, ShapeError
from .features import FeatureMap
from .seeding import RNGLike, generator, rng_or_seed

__all__ = ["ThetaSpan", "theta_span", "span_residual", "SpanAttackResult", "span_attack"]

#: Relative singular-value cut-off of :func:`theta_span`: the training coefficients have
#: condition ≲ 1e6 at the sizes used, far above; rounding sits at ~1e-16.
RANK_RTOL = 1e-10
_STREAM = 2**40 + 170  # seed stream of the random starts


@dataclass(frozen=True)
class ThetaSpan:
    """An orthonormal basis of span θ.

    Attributes
    ----------
    basis : numpy.ndarray, shape (p, r)
        Orthonormal columns spanning θ's column space (host float64).
    singular_values : numpy.ndarray, shape (min(p, k),)
    rank : int
        Numerical rank r (singular values above RANK_RTOL·σ_max): min(n, k) for θ* = Φ⁺Y with
        generic labels, so a k > n output model tells the attacker n.
    """

    basis: np.ndarray
    singular_values: np.ndarray
    rank: int


def theta_span(theta: Any, *, rtol: float = RANK_RTOL) -> ThetaSpan:
    """Orthonormal basis of the column space of θ (shape (p,) or (p, k)) by a thin SVD.

    Parameters
    ----------
    theta : array_like
        The trained weights.
    rtol : float
        Singular values below ``rtol`` times the largest are dropped (the numerical rank).

    Returns
    -------
    ThetaSpan
        The basis (p, rank) and the rank.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> theta = rng.standard_normal((50, 3)) @ rng.standard_normal((3, 6))   # rank 3
    >>> s = theta_span(theta)
    >>> s.rank, s.basis.shape, bool(np.allclose(s.basis.T @ s.basis, np.eye(3)))
    (3, (50, 3), True)
    """
    T = np.asarray(to_host(theta), dtype=np.float64)
    T = T[:, None] if T.ndim == 1 else T
    if T.ndim != 2 or not np.all(np.isfinite(T)):
        raise ShapeError("theta must be a finite array of shape (p,) or (p, k)")
    U, sv, _ = np.linalg.svd(T, full_matrices=False)
    if sv.size == 0 or sv[0] == 0.0:
        raise ShapeError("theta is zero: it spans nothing")
    rank = int(np.sum(sv > rtol * sv[0]))
    return ThetaSpan(U[:, :rank], sv, rank)


def span_residual(features: FeatureMap, span: ThetaSpan, x_hat: Any, *,
                  gradient: bool = True) -> tuple[float, np.ndarray | None]:
    """r(x̂)² = ‖P⊥_{span θ} φ(Vx̂)‖²/‖φ(Vx̂)‖² and its gradient with respect to x̂.

    Parameters
    ----------
    features : FeatureMap
        V and φ.
    span : ThetaSpan
        From :func:`theta_span`.
    x_hat : array, shape (d,)
        The candidate.
    gradient : bool
        Also return the gradient.

    Returns
    -------
    value : float
        r(x̂)².
    gradient : numpy.ndarray or None
        ∂r²/∂x̂, shape (d,) (None when not asked for).

    Notes
    -----
    ρ = φ − Q(Qᵀφ) is a direct residual (Q orthonormal to rounding), so r² keeps its relative
    accuracy down to ~eps²·(1 + ‖Qᵀφ‖²/‖φ‖²)·p — a floor of ~1e-30 at a training point, not the
    ~1e-16 of 1 − ‖Qᵀφ‖²/‖φ‖². The gradient 2(ρ − r²φ)/‖φ‖² in φ is pulled back by the streamed
    vector–Jacobian product (one more pass over V).

    Examples
    --------
    >>> from rftheory.features import RandomFeatures, train_min_norm
    >>> from rftheory.data import sphere_points
    >>> X = sphere_points(3, 4, 0)
    >>> f = RandomFeatures("tanh", 4, 40, seed=1)
    >>> theta = train_min_norm(f, X, np.eye(3)).theta          # k = n = 3 outputs
    >>> s = theta_span(theta)
    >>> bool(span_residual(f, s, X[1], gradient=False)[0] < 1e-25)
    True
    """
    x_hat = np.asarray(to_host(x_hat), dtype=np.float64)
    if x_hat.shape != (features.d,):
        raise ShapeError(f"x_hat must have shape ({features.d},), got {x_hat.shape}")
    Q = span.basis
    if Q.shape[0] != features.p:
        raise ShapeError(f"the span has {Q.shape[0]} rows but the model has p = {features.p}")
    phi = np.asarray(to_host(features.features(x_hat[None, :])))[0]
    phi_sq = float(phi @ phi)
    if phi_sq == 0.0:
        raise RFTheoryError("φ(x̂) = 0: the relative residual is undefined")
    rho = phi - Q @ (Q.T @ phi)
    value = float(rho @ rho) / phi_sq
    if not gradient:
        return value, None
    cot = 2.0 * (rho - value * phi) / phi_sq
    g = np.asarray(to_host(features.vjp(x_hat[None, :], lambda blk: cot[blk.rows][None, :])))[0]
    return value, g


@dataclass(frozen=True)
class SpanAttackResult:
    """Result of :func:`span_attack`.

    Attributes
    ----------
    candidates : numpy.ndarray, shape (m, d)
        Distinct end points with r(x̂)² ≤ ``zero_tol`` (the attack's output), best first.
    residuals : numpy.ndarray, shape (m,)
        Their r(x̂)².
    rank : int
        Numerical rank of θ (:class:`ThetaSpan`).
    ends : numpy.ndarray, shape (starts, d)
        Every start's end point (zero or not).
    end_residuals : numpy.ndarray, shape (starts,)
    iterations : list of int
    """

    candidates: np.ndarray
    residuals: np.ndarray
    rank: int
    ends: np.ndarray = field(repr=False)
    end_residuals: np.ndarray = field(repr=False)
    iterations: list = field(repr=False)


def span_attack(features: FeatureMap, theta: Any, *, starts: int = 50, rng: RNGLike = 0,
                zero_tol: float = 1e-16, distinct: float = 1e-4, maxiter: int = 1000,
                target: float = 1e-28, seed: int | None = None) -> SpanAttackResult:
    """Minimise the span residual r(x̂)² over single points from many random starts.

    Parameters
    ----------
    features : FeatureMap
        V and φ.
    theta : array, shape (p,) or (p, k)
        Trained weights.
    starts : int
        Random starting points, uniform on the √d-sphere.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the starts (SPEC 7, :func:`rftheory.seeding.generator`): an integer seed
        or a SeedSequence gives the function's own stream, a Generator is drawn from as it is.
    seed : int, optional
        The old name of an integer ``rng``.
    zero_tol : float
        End points with r² ≤ zero_tol are zeros (the attack's candidates). The floor at a
        training point is ~1e-30; non-zero local minima measured at p ≥ n + d are ≳ 1e-6.
    distinct : float
        Zeros closer than ``distinct``·√d are one candidate (−x̂ is a different point).
    maxiter : int
        L-BFGS-B iterations per start.
    target : float
        A start stops as soon as r² ≤ target.

    Returns
    -------
    SpanAttackResult

    Notes
    -----
    Parametrisation x = √d·u/‖u‖ (gradient projected on the tangent space and scaled by
    √d/‖u‖), L-BFGS-B with one BLAS thread (its vectors have d entries). Each evaluation makes
    two passes over V (φ(x̂), then the VJP). A rank-1 θ (k = 1) spans one direction: no training
    feature lies in it, so the attack only makes sense when rank θ = n (k ≥ n).
    """
    span = theta_span(theta)
    d = features.d
    sd = math.sqrt(d)
    for name, v in (("starts", starts), ("maxiter", maxiter)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise RFTheoryError(f"{name} must be a positive integer, got {v!r}")
    rng = generator(rng_or_seed(rng, seed), _STREAM)

    def fun(u):
        nu = float(np.linalg.norm(u))
        x = u * (sd / nu)
        value, g = span_residual(features, span, x)
        unit = u / nu
        last["value"], last["x"] = value, x
        return value, (g - (g @ unit) * unit) * (sd / nu)

    ends, vals, its = [], [], []
    for _ in range(starts):
        u0 = rng.standard_normal(d)
        last = {"value": math.inf, "x": u0 * (sd / np.linalg.norm(u0))}

        def stop(intermediate_result):
            if intermediate_result.fun <= target:
                raise StopIteration

        with threadpool_limits(limits=1, user_api="blas"):
            out = scipy.optimize.minimize(fun, u0, jac=True, method="L-BFGS-B", callback=stop,
                                          options={"ftol": 0.0, "gtol": 1e-14,
                                                   "maxiter": maxiter})
        x = out.x * (sd / np.linalg.norm(out.x))
        ends.append(x)
        vals.append(span_residual(features, span, x, gradient=False)[0])
        its.append(int(out.nit))
    ends_a, vals_a = np.array(ends), np.array(vals)
    keep: list[int] = []
    for j in np.argsort(vals_a):
        if vals_a[j] > zero_tol:
            break
        if all(np.linalg.norm(ends_a[j] - ends_a[q]) > distinct * sd for q in keep):
            keep.append(int(j))
    return SpanAttackResult(ends_a[keep].reshape(len(keep), d), vals_a[keep], span.rank,
                            ends_a, vals_a, its)
