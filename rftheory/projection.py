"""Projection residuals: how far θ (or a feature vector) is from the span of candidate features.

The reconstruction loss of the paper is

    L(X̂) = ‖P⊥_{Φ̂} θ‖² / ‖θ‖²,   Φ̂ = φ(X̂Vᵀ) ∈ R^{n̂×p},

computed through the n̂×n̂ Gram matrix (never forming the p×p projector): with
G = Φ̂Φ̂ᵀ, a = G⁺Φ̂θ and r = θ − Φ̂ᵀa, L = ‖r‖²/‖θ‖². Its gradient is closed form,
∂L/∂Φ̂ = −2 a rᵀ/‖θ‖², chained through φ′(X̂Vᵀ) and V (see :meth:`RandomFeatures.vjp`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from array_api_compat import array_namespace, device as array_device

from .errors import ShapeError
from .features import FeatureMap, check_data
from .gram import GramSolution, solve_gram

__all__ = ["ProjectionLoss", "projection_loss", "projection_residuals"]

#: Keep the streamed blocks of the first pass for the second when they take at most this many
#: bytes (saves recomputing X̂Vᵀ and φ: 4n̂pd instead of 6n̂pd flops per step).
KEEP_BLOCKS_BYTES = 256 * 2**20


@dataclass(frozen=True)
class ProjectionLoss:
    """Value (and gradient) of the projection loss at X̂.

    Attributes
    ----------
    loss : float
        ‖P⊥_{Φ̂}θ‖²/‖θ‖² ∈ [0, 1], computed as ‖θ − Φ̂ᵀa‖² (not 1 − θᵀPθ, which would lose all
        relative accuracy once the loss is small).
    gradient : array or None
        Euclidean gradient ∂L/∂X̂, shape (n̂, d), in X̂'s namespace.
    coefficients : array
        a = G⁺Φ̂θ, shape (n̂,) or (n̂, k): the weight of each candidate in the projection.
    gram : GramSolution
        Diagnostics of the Gram solve (``rank_deficient`` flags duplicated rows, p < n̂, ...).
    """

    loss: float
    gradient: Any
    coefficients: Any
    gram: GramSolution

    @property
    def rank_deficient(self) -> bool:
        """True when the candidates' Gram matrix was numerically singular."""
        return self.gram.rank_deficient


def projection_loss(features: FeatureMap, X_hat: Any, theta: Any, *, gradient: bool = True,
                    rcond: float | None = None) -> ProjectionLoss:
    """The projection loss L(X̂) = ‖P⊥_{Φ̂}θ‖²/‖θ‖² and its gradient with respect to X̂.

    Parameters
    ----------
    features : FeatureMap
        The model's feature map (a :class:`RandomFeatures` regenerates V from its seed).
    X_hat : array, shape (n̂, d)
        Candidate inputs (any array-API namespace; float64 recommended).
    theta : array, shape (p,) or (p, k)
        The trained weights θ* (k outputs share the candidates' feature block; the loss is then
        Σ_c ‖P⊥θ_c‖² / Σ_c ‖θ_c‖²).
    gradient : bool
        Also return ∂L/∂X̂ (one more pass over V when the blocks are not kept).
    rcond : float, optional
        Eigenvalue cut-off of the Gram solve.

    Returns
    -------
    ProjectionLoss

    Notes
    -----
    φ′ is evaluated at the pre-activations X̂Vᵀ; at kinks the activation's convention applies
    (mean of one-sided derivatives). When G is rank deficient (identical rows, p < n̂) the
    pseudo-inverse makes a the minimum-norm coefficient vector, the loss stays finite and exact,
    and the gradient is that of the loss with the span held fixed (finite, flagged by
    ``gram.rank_deficient``).
    """
    xp = check_data(X_hat, features.d, "X_hat")
    if theta.ndim not in (1, 2) or theta.shape[0] != features.p:
        raise ShapeError(f"θ must have shape (p,) or (p, k) with p = {features.p}, "
                         f"got {tuple(theta.shape)}")
    if not bool(xp.all(xp.isfinite(theta))):
        raise ShapeError("θ has non-finite entries")
    theta = xp.astype(theta, X_hat.dtype)
    n_hat = X_hat.shape[0]
    itemsize = 4 if "32" in str(X_hat.dtype) else 8
    keep = 3 * n_hat * features.p * itemsize <= KEEP_BLOCKS_BYTES
    kept = []
    G = xp.zeros((n_hat, n_hat), dtype=X_hat.dtype, device=array_device(X_hat))
    c = xp.zeros((n_hat,) + tuple(theta.shape[1:]), dtype=X_hat.dtype, device=array_device(X_hat))
    for blk in features.blocks(X_hat, derivative=gradient and keep):
        G = G + xp.matmul(blk.F, xp.matrix_transpose(blk.F))
        c = c + xp.matmul(blk.F, theta[blk.rows, ...])
        if keep:
            kept.append(blk)
    solved = solve_gram(G, c, rcond=rcond)
    a = solved.solution
    theta_sq = float(xp.sum(theta * theta))
    if theta_sq == 0.0:
        raise ShapeError("θ is zero: the projection loss is undefined")
    blocks = kept if keep else features.blocks(X_hat, derivative=gradient)
    resid_sq = 0.0
    grad = xp.zeros(X_hat.shape, dtype=X_hat.dtype, device=array_device(X_hat)) if gradient else None
    # With k outputs sharing one feature block: R = Θ_b − Φ̂_bᵀA and ∂L/∂Φ̂_b = −2 A R_bᵀ/‖Θ‖².
    A = a if a.ndim == 2 else a[:, None]
    theta2 = theta if theta.ndim == 2 else theta[:, None]
    for blk in blocks:
        R = theta2[blk.rows, :] - xp.matmul(xp.matrix_transpose(blk.F), A)
        resid_sq += float(xp.sum(R * R))
        if gradient:
            C = (-2.0 / theta_sq) * xp.matmul(A, xp.matrix_transpose(R)) * blk.D
            grad = grad + xp.matmul(C, blk.V)
    return ProjectionLoss(min(resid_sq / theta_sq, 1.0), grad, a, solved)


def projection_residuals(features: FeatureMap, X_hat: Any, X: Any, *,
                         rcond: float | None = None) -> Any:
    """Relative distances of φ(x_i) to span{φ(x̂_j)}: ‖P⊥_{Φ̂}φ(x_i)‖/‖φ(x_i)‖ for each row of X.

    This is the hypothesis of Theorem 1 (training features in the span of the candidates'),
    measured per training point.

    Parameters
    ----------
    X_hat : array, shape (n̂, d)
    X : array, shape (n, d)

    Returns
    -------
    array, shape (n,)

    Notes
    -----
    With B = Φ̂Φᵀ (n̂×n) and H = ΦΦᵀ: ‖P⊥φ(x_i)‖² = H_ii − B_iᵀG⁺B_i. This difference of two
    Gram quantities loses relative accuracy when the residual is below about √eps·‖φ(x_i)‖
    (≈1e-8 in float64); smaller values are reported as 0 up to that floor.
    """
    xp = check_data(X_hat, features.d, "X_hat")
    check_data(X, features.d, "X")
    n_hat = X_hat.shape[0]
    both = xp.concat([X_hat, xp.astype(X, X_hat.dtype)], axis=0)
    K = features.gram(both)
    G, B, H = K[:n_hat, :n_hat], K[:n_hat, n_hat:], K[n_hat:, n_hat:]
    sol = solve_gram(G, B, rcond=rcond).solution
    h = xp.linalg.diagonal(H)
    proj = xp.sum(B * sol, axis=0)
    resid = xp.clip(h - proj, min=0.0)
    return xp.sqrt(resid / h)
