"""Per-sample recovery: which training points an attack on (θ*, V) recovers exactly.

The reconstruction error ρ of :mod:`rftheory.metrics` averages over a matched set; it cannot say
whether *some* training points are recovered while the rest are not. Here every training point
x_i is scored on its own by its distance to the nearest candidate,

    e_i = min_j ‖x_i − x̂_j‖/‖x_i‖        (sign-invariant: min_j min_± ‖x_i ∓ x̂_j‖/‖x_i‖),

and x_i counts as recovered when e_i < tol (default 0.01, relative to ‖x_i‖ = √d). Candidates are
not matched one-to-one: an attack may return any number of them ("more candidates give more
chances"), and the fraction of candidates near no training point is reported alongside.

An *attack* is any callable ``attack(features, theta, n_hat, seed) -> AttackOutput``; the ones
here are :func:`reconstruct_attack` (the package's set reconstruction, with optional restarts
whose candidates are pooled) and :func:`span_point_attack` (the per-point attack of
:mod:`rftheory.span_attack`). A stronger optimiser plugs in with the same signature.

Why k = 1 cannot give single samples below p ≈ dn (the count behind the measurement): the zero
set of the projection loss, {(X̂, c): Φ̂ᵀc = θ}, has dimension nd − p at the truth for p < nd.
Its tangent vectors with δx̂₁ = 0 form a space of dimension max(nd − d + 1 − p, 0) (x̂₁ fixed:
d − 1 fewer unknowns), strictly smaller than nd − p: moving along the zero set moves x̂₁, and by
symmetry every x̂_i. So no training point is determined by θ alone until p ≈ dn. With k ≥ n
outputs the conditions separate point by point (span θ = span Φ) and single points are
determined from p ≈ n + d.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .backend import to_host
from .errors import RFTheoryError, ShapeError
from .features import FeatureMap

__all__ = ["SampleRecovery", "sample_recovery", "AttackOutput", "Attack",
           "reconstruct_attack", "span_point_attack", "RECOVERY_TOL"]

#: Default relative distance below which a training point counts as recovered.
RECOVERY_TOL = 0.01


@dataclass(frozen=True)
class SampleRecovery:
    """Per-sample distances of training points to their nearest candidate.

    Attributes
    ----------
    tol : float
    distances : numpy.ndarray, shape (n,)
        e_i = min_j ‖x_i − x̂_j‖/‖x_i‖ (no sign forgiven).
    sign_invariant_distances : numpy.ndarray, shape (n,)
        min_j min(‖x_i − x̂_j‖, ‖x_i + x̂_j‖)/‖x_i‖.
    nearest : numpy.ndarray of int, shape (n,)
        Index of the nearest candidate (signed distance).
    candidate_distances : numpy.ndarray, shape (m,)
        For each candidate, its sign-invariant distance to the nearest training point.
    sign_invariant : bool
        Which distance ``recovered`` uses.
    """

    tol: float
    distances: np.ndarray
    sign_invariant_distances: np.ndarray
    nearest: np.ndarray
    candidate_distances: np.ndarray
    sign_invariant: bool

    @property
    def recovered(self) -> np.ndarray:
        """Boolean mask of the recovered training points."""
        e = self.sign_invariant_distances if self.sign_invariant else self.distances
        return e < self.tol

    @property
    def fraction(self) -> float:
        """Fraction of training points recovered."""
        return float(np.mean(self.recovered))

    @property
    def count(self) -> int:
        return int(np.sum(self.recovered))

    @property
    def n_candidates(self) -> int:
        return int(self.candidate_distances.shape[0])

    @property
    def true_candidates(self) -> int:
        """Candidates within ``tol`` of some training point (sign-invariant)."""
        return int(np.sum(self.candidate_distances < self.tol))


def sample_recovery(X: Any, candidates: Any, *, tol: float = RECOVERY_TOL,
                    sign_invariant: bool = False) -> SampleRecovery:
    """Score every training point by its distance to the nearest candidate.

    Parameters
    ----------
    X : array, shape (n, d)
        Training points.
    candidates : array, shape (m, d)
        The attack's output (m ≥ 0; no candidates recover nothing).
    tol : float
        Relative distance below which a point counts as recovered.
    sign_invariant : bool
        Forgive a global sign per candidate (odd activations cannot tell x from −x).

    Returns
    -------
    SampleRecovery

    Examples
    --------
    >>> X = np.array([[2.0, 0.0], [0.0, 2.0]])
    >>> r = sample_recovery(X, np.array([[2.0, 0.001], [-1.0, 1.0]]))
    >>> r.recovered.tolist(), r.fraction, r.true_candidates
    ([True, False], 0.5, 1)
    >>> sample_recovery(X, np.array([[0.0, -2.0]]), sign_invariant=True).recovered.tolist()
    [False, True]
    """
    Xh = np.asarray(to_host(X), dtype=np.float64)
    C = np.asarray(to_host(candidates), dtype=np.float64)
    if Xh.ndim != 2 or Xh.shape[0] < 1:
        raise ShapeError(f"X must be 2-D (n, d) with n ≥ 1, got shape {Xh.shape}")
    C = C.reshape(0, Xh.shape[1]) if C.size == 0 else C
    if C.ndim != 2 or C.shape[1] != Xh.shape[1]:
        raise ShapeError(f"candidates must have shape (m, {Xh.shape[1]}), got {C.shape}")
    if not (tol > 0 and math.isfinite(tol)):
        raise RFTheoryError(f"tol must be a positive number, got {tol!r}")
    norms = np.linalg.norm(Xh, axis=1)
    if C.shape[0] == 0:
        inf = np.full(Xh.shape[0], np.inf)
        return SampleRecovery(tol, inf, inf.copy(), np.full(Xh.shape[0], -1), np.empty(0),
                              sign_invariant)
    minus = np.linalg.norm(Xh[:, None, :] - C[None, :, :], axis=2) / norms[:, None]
    plus = np.linalg.norm(Xh[:, None, :] + C[None, :, :], axis=2) / norms[:, None]
    both = np.minimum(minus, plus)
    return SampleRecovery(tol, minus.min(axis=1), both.min(axis=1), minus.argmin(axis=1),
                          both.min(axis=0), sign_invariant)


@dataclass(frozen=True)
class AttackOutput:
    """What an attack returns: candidate inputs and free-form diagnostics.

    Attributes
    ----------
    candidates : numpy.ndarray, shape (m, d)
    info : dict
        JSON-friendly diagnostics (losses, steps, …).
    """

    candidates: np.ndarray
    info: dict = field(default_factory=dict)


#: Signature of an attack: (features, theta, n_hat, seed) -> AttackOutput.
Attack = Callable[[FeatureMap, Any, int, int], AttackOutput]


def reconstruct_attack(*, restarts: int = 1, n_hat_factor: int = 1, **options: Any) -> Attack:
    """The set reconstruction :func:`rftheory.reconstruct.reconstruct` as an attack.

    Parameters
    ----------
    restarts : int
        Independent runs (seeds ``seed·1000 + r``) whose candidates are pooled.
    n_hat_factor : int
        Rows returned per run: n̂ = n_hat_factor·n (a superset; extra rows are free).
    **options
        Keyword arguments of ``reconstruct`` (``method``, ``max_steps``, ``tol``, ...). None by
        default: the package's default — its strongest — reconstruction, whatever it is.

    Returns
    -------
    callable
        ``attack(features, theta, n_hat, seed)``; ``info`` holds per-run loss, steps and stop
        reason.

    Examples
    --------
    >>> reconstruct_attack().__name__, reconstruct_attack(restarts=2, max_steps=500).__name__
    ('reconstruct()', 'reconstruct(max_steps=500, restarts=2)')
    """
    from .reconstruct import reconstruct

    if restarts < 1 or n_hat_factor < 1:
        raise RFTheoryError("restarts and n_hat_factor must be positive integers")

    def attack(features: FeatureMap, theta: Any, n_hat: int, seed: int) -> AttackOutput:
        rows, runs = [], []
        m = min(features.p, n_hat_factor * n_hat)
        for r in range(restarts):
            out = reconstruct(features, theta, m, seed=seed * 1000 + r, **options)
            rows.append(np.asarray(to_host(out.X_hat)))
            runs.append({"loss": out.loss, "steps": out.steps, "stop_reason": out.stop_reason})
        return AttackOutput(np.concatenate(rows), {"runs": runs})

    named = dict(options, **({"restarts": restarts} if restarts != 1 else {}),
                 **({"n_hat_factor": n_hat_factor} if n_hat_factor != 1 else {}))
    attack.__name__ = "reconstruct(" + ", ".join(f"{k}={v!r}" for k, v in sorted(named.items())) + ")"
    return attack


def span_point_attack(*, starts_per_point: int = 10, **options: Any) -> Attack:
    """The per-point attack :func:`rftheory.span_attack.span_attack` as an attack.

    ``starts_per_point``·n̂ random starts (the attacker reads n̂ = rank θ when k > n; here it is
    passed in). ``info`` holds the rank of θ, the number of zeros found and the end residuals.

    Parameters
    ----------
    starts_per_point : int
        Random starts per candidate sought.
    **options
        Passed to :func:`rftheory.span_attack.span_attack`.

    Returns
    -------
    Attack
        The attack, for :func:`sample_recovery`.
    """
    from .span_attack import span_attack

    def attack(features: FeatureMap, theta: Any, n_hat: int, seed: int) -> AttackOutput:
        out = span_attack(features, theta, starts=starts_per_point * n_hat, seed=seed, **options)
        return AttackOutput(out.candidates, {
            "rank": out.rank, "zeros": int(out.candidates.shape[0]),
            "end_residuals": out.end_residuals.tolist(), "iterations": out.iterations})

    attack.__name__ = f"span_point(starts_per_point={starts_per_point})"
    return attack
