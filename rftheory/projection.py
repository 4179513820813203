"""Projection residuals: how far θ (or a feature vector) is from the span of candidate features.

The reconstruction loss of the paper is

    L(X̂) = ‖P⊥_{Φ̂} θ‖² / ‖θ‖²,   Φ̂ = φ(X̂Vᵀ) ∈ R^{n̂×p},

computed through the n̂×n̂ Gram matrix (never forming the p×p projector): with
G = Φ̂Φ̂ᵀ, a = G⁺Φ̂θ and r = θ − Φ̂ᵀa, L = ‖r‖²/‖θ‖². Its gradient is closed form,
∂L/∂Φ̂ = −2 a rᵀ/‖θ‖², chained through φ′(X̂Vᵀ) and V (see :meth:`RandomFeatures.vjp`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from array_api_compat import array_namespace, device as array_device, is_cupy_namespace

from .backend import namespace_of
from .errors import ShapeError
from .features import (BLOCK_ROWS, SUM_GROUP, BlockSum, FeatureChunk, FeatureMap, float_itemsize,
                       check_data, stream_memory)
from .gram import GramSolution, solve_gram, solve_gram_checked

__all__ = ["ProjectionLoss", "projection_loss", "projection_residuals", "loss_memory",
           "keeps_blocks"]

#: Keep the streamed chunks of the first pass (φ, φ′ and, when it is not held anyway, V) for the
#: second when they take at most this many bytes (saves redrawing V and recomputing X̂Vᵀ and φ:
#: 4n̂pd instead of 6n̂pd flops per step).
KEEP_BLOCKS_BYTES = 2**30


def keep_budget(xp: Any) -> int:
    """Bytes the first pass of the projection loss may keep for the second.

    Parameters
    ----------
    xp : module
        The array namespace of the computation.

    Returns
    -------
    int
        :data:`KEEP_BLOCKS_BYTES` of host memory, or a quarter of the free memory of a CUDA
        device (where V is usually cached anyway), whichever is larger.
    """
    if is_cupy_namespace(xp):
        import cupy

        return max(KEEP_BLOCKS_BYTES, cupy.cuda.Device().mem_info[0] // 4)
    return KEEP_BLOCKS_BYTES


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

    *Accuracy.* The loss is computed as ‖θ − Φ̂ᵀa‖²/‖θ‖², not as 1 − θᵀP_{Φ̂}θ/‖θ‖² (which
    cancels to rounding level, ~1e-16): at a zero it falls to (ε·cond)², ~1e-31 in the example
    below, so losses far below 1e-16 are meaningful. The gradient is checked against central
    finite differences (``tests/test_projection.py``).

    Examples
    --------
    The loss vanishes at the training set and not at an unrelated candidate set:

    >>> from rftheory.data import gaussian_labels, sphere_points
    >>> from rftheory.features import RandomFeatures, train_min_norm
    >>> from rftheory.projection import projection_loss
    >>> X, Y = sphere_points(4, 10, seed=0), gaussian_labels(4, seed=0)
    >>> features = RandomFeatures("relu", d=10, p=200, seed=1)
    >>> theta = train_min_norm(features, X, Y).theta
    >>> at_truth = projection_loss(features, X, theta)
    >>> elsewhere = projection_loss(features, sphere_points(4, 10, seed=7), theta)
    >>> bool(at_truth.loss < 1e-20), bool(elsewhere.loss > 1e-2), at_truth.gradient.shape
    (True, True, (4, 10))
    """
    xp = check_data(X_hat, features.d, "X_hat")
    if theta.ndim not in (1, 2) or theta.shape[0] != features.p:
        raise ShapeError(f"θ must have shape (p,) or (p, k) with p = {features.p}, "
                         f"got {tuple(theta.shape)}")
    if not bool(xp.all(xp.isfinite(theta))):
        raise ShapeError("θ has non-finite entries")
    theta = xp.astype(theta, X_hat.dtype)
    theta_sq = float(xp.sum(theta * theta))
    if theta_sq == 0.0:
        raise ShapeError("θ is zero: the projection loss is undefined")
    # θ as (p, k): k outputs share the candidates' feature blocks.
    theta2 = theta if theta.ndim == 2 else theta[:, None]
    result, _ = projection_loss_checked(features, X_hat, theta2, theta_sq, xp, gradient=gradient,
                                 rcond=rcond)
    if theta.ndim == 1:
        result = dataclasses.replace(result, coefficients=result.coefficients[:, 0])
    return result


def projection_loss_checked(features: FeatureMap, X_hat: Any, theta2: Any, theta_sq: float,
                            xp: Any, *, gradient: bool, rcond: float | None = None,
                            keep_chunks: bool = False) -> tuple[ProjectionLoss, list | None]:
    """:func:`projection_loss` on checked input: θ as (p, k) in X̂'s dtype, ‖θ‖² > 0, ``xp``
    the namespace of both (what the public function computes before calling this, and what an
    iterative method computes once per run). The coefficients are (n̂, k).

    ``keep_chunks``: also return the first pass's kept blocks (V, φ, φ′ as
    :class:`FeatureChunk`, Z dropped) and the Gram matrix G = Φ̂Φ̂ᵀ, as (blocks, G), when it kept
    them with derivatives, else None — what a Gauss–Newton model at X̂ needs (see
    :meth:`rftheory.varpro.Problem.linearise`).

    Parameters
    ----------
    features : FeatureMap
        The model's feature map.
    X_hat : array
        Candidates, shape (n̂, d).
    theta2 : array
        θ as (p, k), in X̂'s dtype and namespace.
    theta_sq : float
        ‖θ‖² (> 0).
    xp : module
        The namespace of X̂ and θ.
    gradient : bool
        Also compute the gradient.
    rcond : float, optional
        Relative cut of the Gram solve (:func:`rftheory.gram.solve_gram`).
    keep_chunks : bool, default False
        Also return the kept blocks and G (see above).

    Returns
    -------
    tuple of (ProjectionLoss, list or None)
        The loss (with its gradient when asked) and the kept ``(blocks, G)`` or None.
    """
    dtype, dev = X_hat.dtype, array_device(X_hat)
    n_hat = X_hat.shape[0]
    itemsize = float_itemsize(dtype)
    kept_bytes = 2 * n_hat * features.p * itemsize
    if not features.weights_resident(xp, dtype, dev):
        kept_bytes += features.p * features.d * itemsize
    keep = kept_bytes <= keep_budget(xp)
    kept = []
    if type(X_hat) is np.ndarray and type(theta2) is np.ndarray:
        # numpy: the array-API calls below made as the numpy calls they wrap (matmul,
        # permute_dims → transpose, zeros, sum and astype as methods): the same arrays, at a
        # fraction of the per-call overhead (this runs at every evaluation of the attack).
        matmul, swap, sq_sum = np.matmul, _swap_numpy, _sq_sum_numpy

        def zeros(shape: tuple, dt: Any) -> Any:
            return np.zeros(shape, dtype=dt)
    else:
        matmul = xp.matmul

        def swap(x: Any) -> Any:
            return xp.permute_dims(x, (0, 2, 1))

        def sq_sum(R: Any) -> Any:
            return xp.astype(xp.sum(R * R, axis=(1, 2)), xp.float64)

        def zeros(shape: tuple, dt: Any) -> Any:
            return xp.zeros(shape, dtype=dt, device=dev)
    G = BlockSum(zeros((n_hat, n_hat), dtype))
    c = BlockSum(zeros((n_hat, theta2.shape[1]), dtype))
    for ch in features.unchecked_chunks(X_hat, xp, derivative=gradient and keep):
        G.add(ch.first_block, matmul(ch.F, swap(ch.F)))
        c.add(ch.first_block, matmul(ch.F, ch.stacked(theta2)))
        if keep:  # Z is not needed again: keep V, φ and φ′ only
            kept.append(FeatureChunk(ch.start, ch.V, None, ch.F, ch.D))
    gram = G.result()
    rhs = c.result()
    solved = solve_gram_checked(gram, rhs, namespace_of(gram, rhs), rcond)  # shapes: ours
    A = solved.solution  # (n̂, k)
    single = A.shape[1] == 1
    chunks = kept if keep else features.unchecked_chunks(X_hat, xp, derivative=gradient)
    # Per-block ‖R_b‖² are added in block order, in float64 whatever the working dtype.
    resid_sq = BlockSum(zeros((), xp.float64))
    grad = BlockSum(zeros(X_hat.shape, dtype)) if gradient else None
    for ch in chunks:
        # R_b = Θ_b − Φ̂_bᵀA and ∂L/∂Φ̂_b = −2 A R_bᵀ/‖Θ‖² (the constant is applied once, at the end).
        R = ch.stacked(theta2) - matmul(swap(ch.F), A[None, :, :])
        resid_sq.add(ch.first_block, sq_sum(R))
        if gradient and single:
            # (a r_bᵀ ⊙ D_b) V_b = diag(a) (D_b diag(r_b)) V_b: one elementwise pass, not two.
            grad.add(ch.first_block, matmul(ch.D * swap(R), ch.V))
        elif gradient:
            C = matmul(A[None, :, :], swap(R)) * ch.D
            grad.add(ch.first_block, matmul(C, ch.V))
    if gradient:
        grad = grad.result()
        grad = (-2.0 / theta_sq) * (A * grad if single else grad)
    result = ProjectionLoss(min(float(resid_sq.result()) / theta_sq, 1.0), grad, A, solved)
    return result, ((kept, gram) if keep_chunks and keep and gradient else None)


def _swap_numpy(x: Any) -> Any:
    """``permute_dims(x, (0, 2, 1))`` of a numpy array: the view it returns."""
    return x.transpose(0, 2, 1)


def _sq_sum_numpy(R: Any) -> Any:
    """``astype(sum(R * R, axis=(1, 2)), float64)`` of a numpy array: the same reduction."""
    return (R * R).sum(axis=(1, 2)).astype(np.float64)


def projection_residuals(features: FeatureMap, X_hat: Any, X: Any, *,
                         rcond: float | None = None) -> Any:
    """Relative distances of φ(x_i) to span{φ(x̂_j)}: ‖P⊥_{Φ̂}φ(x_i)‖/‖φ(x_i)‖ for each row of X.

    This is the hypothesis of Theorem 1 (training features in the span of the candidates'),
    measured per training point.

    Parameters
    ----------
    features : FeatureMap
        The feature map (V and φ).
    X_hat : array, shape (n̂, d)
        Candidates (their features span the subspace).
    X : array, shape (n, d)
        Training points.
    rcond : float, optional
        Eigenvalue cut-off of the candidates' Gram (see :func:`rftheory.gram.solve_gram`).

    Returns
    -------
    array, shape (n,)
        The relative residual of each training point's features.

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


# -- memory, declared next to the code it describes (summed and checked by rftheory.budget) -----

def keeps_blocks(m: float, d: float, p: float, itemsize: int = 8, resident: bool = False) -> bool:
    """Whether :func:`projection_loss` with gradient keeps its first pass's blocks for the second
    on the host (φ, φ′ and V unless resident within :data:`KEEP_BLOCKS_BYTES`), for m rows.

    Parameters
    ----------
    m, d, p : float
        Candidate rows, input dimension, features.
    itemsize : int
        Bytes per entry.
    resident : bool
        V is cached (not kept with the blocks).

    Returns
    -------
    bool
        True when the blocks are kept (one pass per evaluation), False when the second pass
        streams V again.

    Examples
    --------
    >>> keeps_blocks(10, 20, 2000), keeps_blocks(10, 3072, 10**6)
    (True, False)
    """
    return 2 * m * p * itemsize + (0.0 if resident else p * d * itemsize) <= KEEP_BLOCKS_BYTES


def loss_memory(m: float, d: float, p: float, k: float = 1, itemsize: int = 8, *,
                resident: bool = False, threads: int = 1) -> float:
    """Peak bytes of one :func:`projection_loss` with gradient for m candidate rows (host).

    The first pass keeps φ, φ′ (and V unless resident) of all of p for the second when
    :func:`keeps_blocks`; otherwise the second pass streams again, with φ′. The second pass
    holds the residual R, the cotangent and the gradient's per-block parts; the Gram solve
    three m × m matrices.

    Parameters
    ----------
    m, d, p, k : float
        Candidate rows, input dimension, features, outputs of θ.
    itemsize : int
        Bytes per entry.
    resident : bool
        V is cached (not drawn by the pass).
    threads : int
        Threads drawing V.

    Returns
    -------
    float
        Bytes (V's cache and θ excluded: the caller holds them).

    Examples
    --------
    >>> loss_memory(10, 20, 2000) < 2**21
    True
    """
    rows = min(p, SUM_GROUP * BLOCK_ROWS)
    blocks = math.ceil(rows / BLOCK_ROWS)
    keep = keeps_blocks(m, d, p, itemsize, resident)
    kept = 2 * m * p * itemsize + (0 if resident else p * d * itemsize)
    first = stream_memory(m, d, p, itemsize, cached=resident, threads=threads, derivative=keep,
                          gram=True, outputs=k, kept=keep)
    second_extra = (2 * m * rows + 2 * blocks * m * d + 2 * rows * k) * itemsize
    if keep:
        peak = max(first, second_extra) + kept
    else:
        again = stream_memory(m, d, p, itemsize, cached=resident, threads=threads,
                              derivative=True)
        peak = max(first, again + second_extra)
    return peak + 3 * m * m * itemsize
