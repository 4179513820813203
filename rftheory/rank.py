"""The numerical rank of a trained last layer θ ∈ R^{p×k}: how many outputs really count.

A network with k outputs gives k·p equations only if its k columns of θ = W_L − W_L(0) are
independent; a θ of rank r gives r(p − n) equations against n(d − 1) unknowns (the count behind
the law, with k replaced by r). :func:`numerical_rank` counts singular values above a stated
tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ShapeError

__all__ = ["numerical_rank", "singular_values"]


def singular_values(theta: Any) -> np.ndarray:
    """Singular values of θ (a vector is one column), descending, float64 numpy.

    Parameters
    ----------
    theta : array, shape (p,) or (p, k)

    Returns
    -------
    numpy.ndarray, shape (min(p, k),)
    """
    t = np.asarray(theta, dtype=np.float64)
    if t.ndim == 1:
        t = t[:, None]
    if t.ndim != 2 or t.size == 0:
        raise ShapeError(f"θ must have shape (p,) or (p, k), got {np.shape(theta)}")
    if not np.all(np.isfinite(t)):
        raise ShapeError("θ has non-finite entries")
    return np.linalg.svd(t, compute_uv=False)


def numerical_rank(theta: Any, rtol: float | None = None) -> int:
    """The number of singular values of θ above ``rtol``·σ_max.

    Parameters
    ----------
    theta : array, shape (p,) or (p, k)
        The trained last layer (or its change), p parameters per output.
    rtol : float, optional
        Relative tolerance. Default max(p, k)·eps: the singular values of θ are computed with
        an absolute error of about max(p, k)·eps·σ_max (backward-stable SVD), so smaller ones are
        indistinguishable from 0.

    Returns
    -------
    int
        r ∈ {0, …, min(p, k)} (0 for θ = 0).

    Examples
    --------
    >>> import numpy as np
    >>> u, v = np.arange(1.0, 6.0), np.array([1.0, -2.0, 0.5])
    >>> numerical_rank(np.outer(u, v)), numerical_rank(np.eye(5, 3)), numerical_rank(u)
    (1, 3, 1)
    >>> theta = np.outer(u, v) + 1e-8 * np.eye(5, 3)
    >>> numerical_rank(theta), numerical_rank(theta, rtol=1e-6)
    (3, 1)
    """
    s = singular_values(theta)
    p, k = (np.shape(theta) + (1,))[:2]
    tol = (max(p, k) * np.finfo(np.float64).eps if rtol is None else float(rtol))
    if not np.isfinite(tol) or tol < 0:
        raise ShapeError(f"rtol must be a non-negative number, got {rtol!r}")
    return int(np.sum(s > tol * s[0])) if s[0] > 0 else 0
