"""Sign analysis of a reconstruction: what tells x from −x.

Two general tools, used by the sign claim (:mod:`rftheory.claims.sign`) and the report card
(:mod:`rftheory.report`):

* :func:`flipped_truth_losses` — the projection loss at the true training set with one sample,
  or all, negated: far above the optimiser's tolerance when the loss sees the flip;
* :func:`antipodal_slope` — K'(−1)/K'(1), the slope of the kernel overlap at the antipode, which
  vanishes for ReLU (a candidate near −x feels no pull towards x).

Memory: :func:`flipped_truth_losses` holds one (n, p) feature block of the model at a time
(:func:`rftheory.projection.projection_loss`'s own budget); :func:`antipodal_slope` holds O(1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["antipodal_slope", "flipped_truth_losses"]


def flipped_truth_losses(features: Any, theta: Any, X: np.ndarray) -> dict[str, float]:
    """Projection loss of the true training set X with one sample, or all, negated.

    Evaluates L at X (sanity: ≈ 0), at X with row i negated for every i, and at −X.

    Parameters
    ----------
    features : RandomFeatures
        The model's features (V and φ).
    theta : array_like
        The trained weights θ*, shape (p,) or (p, k).
    X : numpy.ndarray
        The training set, shape (n, d).

    Returns
    -------
    dict
        ``loss_truth``, ``loss_one_flipped`` (median over i), ``loss_one_flipped_min`` (min over
        i) and ``loss_all_flipped``.
    """
    from rftheory.projection import projection_loss

    def loss(Z: np.ndarray) -> float:
        return float(projection_loss(features, Z, theta, gradient=False).loss)

    one = []
    for i in range(X.shape[0]):
        Z = X.copy()
        Z[i] = -Z[i]
        one.append(loss(Z))
    return {"loss_truth": loss(X), "loss_one_flipped": float(np.median(one)),
            "loss_one_flipped_min": float(np.min(one)), "loss_all_flipped": loss(-X)}


def antipodal_slope(activation: str) -> float:
    """K'(−1)/K'(1) = E[φ'(g)φ'(−g)] / E[φ'(g)²], g ~ N(0, 1): how the kernel overlap of a candidate
    with a training point varies when the candidate sits at the antipode −x.

    K(t) = Σ_k μ_k² t^k is the RF kernel of two points at cosine t, and K'(t) = E[φ'(u)φ'(v)] for
    standard Gaussians u, v of correlation t. At t = −1 the overlap ⟨φ(Vx̂), φ(Vx)⟩ has slope K'(−1);
    when it is 0 (ReLU: φ'(z)φ'(−z) = 0 for z ≠ 0) the antipode is a stationary point of the
    single-sample overlap and a gradient method can stall there. ±1 means an exact symmetry (φ odd:
    +1, φ even: −1).

    Parameters
    ----------
    activation : str
        A registry name or an expression in ``z`` (:func:`rftheory.activations.get_activation`).

    Returns
    -------
    float
        K'(−1)/K'(1), in [−1, 1].

    Notes
    -----
    Adaptive quadrature (:func:`scipy.integrate.quad`) on [−40, 40] split at ± the kinks of φ, where
    φ' may jump; the Gaussian tail beyond 40 is below 1e-300. Absolute error ≲ 1e-10 for the
    registry activations.

    Examples
    --------
    0 for ReLU (φ'(z)φ'(−z) = 0), the exact symmetries ±1 for odd and even φ:

    >>> from rftheory.signs import antipodal_slope
    >>> [round(antipodal_slope(name), 8) for name in ("relu", "tanh", "abs")]
    [0.0, 1.0, -1.0]
    """
    from scipy.integrate import quad

    from rftheory.activations import get_activation

    act = get_activation(activation)
    edges = sorted({-40.0, 40.0, *act.kinks, *(-k for k in act.kinks)})
    edges = [e for e in edges if -40.0 <= e <= 40.0]
    density = 1.0 / math.sqrt(2.0 * math.pi)

    def integral(f) -> float:
        return sum(quad(f, a, b, limit=200, epsabs=1e-13)[0] for a, b in zip(edges[:-1], edges[1:]))

    def dphi(z: float) -> float:
        return float(act.derivative(np.array([z]))[0])

    cross = integral(lambda z: dphi(z) * dphi(-z) * density * math.exp(-z * z / 2))
    square = integral(lambda z: dphi(z) ** 2 * density * math.exp(-z * z / 2))
    return cross / square
