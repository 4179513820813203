"""The projection loss ‖P⊥_{Φ̂}θ‖²/‖θ‖² on explicit features: numpy (through the package's one
Gram solve) and traceable JAX (for the attack's jitted steps).

Both compute a = G⁺Φ̂θ with G = Φ̂Φ̂ᵀ (n̂×n̂, never the p×p projector) and the loss as
‖θ − Φ̂ᵀa‖²/‖θ‖², as :func:`rftheory.projection.projection_loss` does for random features.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ShapeError
from ..gram import solve_gram
from .backend import require_jax

__all__ = ["span_loss", "jax_projection", "RCOND_FACTOR"]

#: The eigenvalue cut-off of the JAX solve, RCOND_FACTOR·n̂·eps·λ_max: the default of
#: :func:`rftheory.gram.solve_gram`, so both solves discard the same directions.
RCOND_FACTOR = 10.0


def span_loss(Phi: Any, theta: Any) -> float:
    """‖P⊥_Φ θ‖²/‖θ‖² for explicit features Φ (n, p) and θ (p,) or (p, k), in float64 numpy.

    Parameters
    ----------
    Phi : array, shape (n, p)
        Features of the candidates (rows).
    theta : array, shape (p,) or (p, k)
        The target.

    Returns
    -------
    float
        The loss in [0, 1].

    Notes
    -----
    The Gram solve is :func:`rftheory.gram.solve_gram` (Cholesky, or the eigen pseudo-inverse
    when G is singular); the loss is the squared residual, accurate down to (eps·cond(Φ))².

    Examples
    --------
    >>> import numpy as np
    >>> Phi = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    >>> span_loss(Phi, np.array([1.0, 2.0, 0.0])), span_loss(Phi, np.array([0.0, 1.0, 1.0]))
    (0.0, 0.5)
    """
    Phi = np.asarray(Phi, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    if Phi.ndim != 2 or theta.ndim not in (1, 2) or theta.shape[0] != Phi.shape[1]:
        raise ShapeError(f"need Φ (n, p) and θ (p,) or (p, k); got {Phi.shape} and {theta.shape}")
    t2 = theta if theta.ndim == 2 else theta[:, None]
    norm = float(np.sum(t2 * t2))
    if norm == 0.0:
        raise ShapeError("θ is zero: the projection loss is undefined")
    a = solve_gram(Phi @ Phi.T, Phi @ t2).solution
    r = t2 - Phi.T @ a
    return min(float(np.sum(r * r)) / norm, 1.0)


def jax_projection(Phi: Any, theta: Any) -> tuple[Any, Any, Any, Any]:
    """Traceable projection of θ (p,) on the row span of Φ̂ (n̂, p).

    Parameters
    ----------
    Phi : jax array, shape (n_hat, p)
        The candidates' features Φ̂ (rows).
    theta : jax array, shape (p,)
        The target θ.

    Returns
    -------
    loss, a, r, solve
        ‖r‖²/‖θ‖², the coefficients a = G⁺Φ̂θ, the residual r = θ − Φ̂ᵀa and ``solve(b)``
        = G⁺b (the same eigen-decomposition, for further projections).

    Notes
    -----
    G⁺ by the eigen-decomposition with cut-off :data:`RCOND_FACTOR`·n̂·eps·λ_max (a traced
    function cannot branch to Cholesky as :func:`rftheory.gram.solve_gram` does; both give G⁻¹
    on a well-conditioned G and the same pseudo-inverse on a singular one). Checked against
    :func:`rftheory.projection.projection_loss` in ``tests/test_deep.py``.
    """
    jnp = require_jax().numpy
    G = Phi @ Phi.T
    G = (G + G.T) / 2
    w, Q = jnp.linalg.eigh(G)
    cutoff = RCOND_FACTOR * G.shape[0] * jnp.finfo(G.dtype).eps * jnp.maximum(jnp.max(w), 0.0)
    keep = w > cutoff
    inv = jnp.where(keep, 1.0 / jnp.where(keep, w, 1.0), 0.0)

    def solve(b: Any) -> Any:
        return Q @ (inv * (Q.T @ b))

    a = solve(Phi @ theta)
    r = theta - Phi.T @ a
    loss = jnp.sum(r * r) / jnp.sum(theta * theta)
    return loss, a, r, solve
