"""Solving with an n×n Gram matrix G = ΦΦᵀ — written once, used by training, projection and checks.

Every quantity of the theory that involves a projection onto span(Φ) reduces to a solve with the
Gram matrix: the min-norm interpolator θ* = Φᵀ G⁺ Y, the projection coefficients
a = G⁻¹ Φ̂ θ of the reconstruction loss, the per-vector residuals of Theorem 1. This module is the
only place where that solve (and its rank-deficiency handling) is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backend import namespace_of
from .errors import NumericalError, ShapeError

__all__ = ["GramSolution", "solve_gram", "symmetric_eigh"]


@dataclass(frozen=True)
class GramSolution:
    """Result of :func:`solve_gram`.

    Attributes
    ----------
    solution : array
        ``G⁺ B`` (equal to ``G⁻¹ B`` when G is numerically non-singular).
    method : str
        ``"cholesky"`` when G passed the positive-definiteness and conditioning test and was
        solved directly, ``"eigh"`` when the eigen-decomposition pseudo-inverse was used.
    rank : int
        Numerical rank of G (eigenvalues above the cut-off; ``n`` on the Cholesky path).
    condition : float
        Condition-number estimate λ_max/λ_min (``inf`` for a singular G). On the Cholesky path
        this is the lower bound (max diag L / min diag L)².
    rank_deficient : bool
        True when eigenvalues were discarded (duplicated rows, p < n, ...).
    """

    solution: Any
    method: str
    rank: int
    condition: float
    rank_deficient: bool


def symmetric_eigh(A: Any, *, what: str = "matrix", vectors: bool = True) -> Any:
    """Eigenvalues (ascending) and, with ``vectors``, eigenvectors of a symmetric matrix — the
    one place where a numerical failure of an eigen-decomposition becomes a one-line error.

    Parameters
    ----------
    A : array, shape (n, n)
        Symmetric (only its lower triangle is read, as by ``linalg.eigh``).
    what : str
        What the matrix is, for the message (``"the kernel matrix K"``).
    vectors : bool
        True (default): ``(w, Q)``; False: ``w`` only.

    Returns
    -------
    array or tuple of array
        The eigenvalues ``w``, or ``(w, Q)`` with the eigenvectors as columns of ``Q``: as
        ``xp.linalg.eigh`` / ``eigvalsh`` of the input's namespace.

    Raises
    ------
    rftheory.errors.NumericalError
        When ``A`` has non-finite entries (overflow upstream: LAPACK would not converge, or
        return garbage) or the iteration does not converge; the message names ``what``.

    Examples
    --------
    >>> import numpy as np
    >>> symmetric_eigh(np.array([[2.0, 1.0], [1.0, 2.0]]), vectors=False).tolist()
    [1.0, 3.0]
    >>> symmetric_eigh(np.array([[np.inf, 0.0], [0.0, 1.0]]), what="K")
    Traceback (most recent call last):
    ...
    rftheory.errors.NumericalError: K has 1 non-finite entry of 4 (overflow in floating point); its eigenvalues cannot be computed
    """
    xp = namespace_of(A)
    finite = xp.isfinite(A)
    if not bool(xp.all(finite)):
        bad = int(xp.sum(xp.astype(~finite, xp.int64)))
        total = int(A.shape[0]) * int(A.shape[-1])
        raise NumericalError(f"{what} has {bad} non-finite entr{'y' if bad == 1 else 'ies'} of "
                             f"{total} (overflow in floating point); its eigenvalues cannot be "
                             "computed")
    try:
        return xp.linalg.eigh(A) if vectors else xp.linalg.eigvalsh(A)
    except Exception as exc:  # numpy's LinAlgError; other namespaces raise their own types
        if "linalg" not in type(exc).__name__.lower() and "converge" not in str(exc):
            raise
        raise NumericalError(f"the eigenvalues of {what} cannot be computed in floating point "
                             f"({str(exc).strip() or type(exc).__name__})") from None


def _default_rcond(n: int, dtype: Any, xp: Any) -> float:
    return float(max(n, 1) * 10 * xp.finfo(dtype).eps)


def solve_gram(G: Any, B: Any, *, rcond: float | None = None) -> GramSolution:
    """Solve ``G X = B`` for a symmetric positive semi-definite Gram matrix, robustly.

    Parameters
    ----------
    G : array, shape (n, n)
        Symmetric positive semi-definite (a Gram matrix ΦΦᵀ).
    B : array, shape (n,) or (n, k)
        Right-hand side(s).
    rcond : float, optional
        Relative eigenvalue cut-off: eigenvalues below ``rcond * λ_max`` are treated as zero.
        Default ``10 · n · eps`` of the dtype.

    Returns
    -------
    GramSolution

    Notes
    -----
    Cholesky is tried first; its diagonal gives the condition lower bound (max L_ii/min L_ii)².
    If the factorisation fails (CuPy signals this with NaNs rather than an exception) or that
    bound exceeds 1/√eps — it is only a lower bound, and a rank-deficient G (p < n) can pass
    Cholesky with a bound near 1e13 while its solution is meaningless — the solve falls back to the eigen-decomposition G = QΛQᵀ and
    returns the minimum-norm solution Q Λ⁺ Qᵀ B with the cut-off above. This is the exact
    pseudo-inverse semantics needed when rows of Φ coincide (duplicated candidates), when p < n, or
    when a projection has converged onto a lower-dimensional span; no jitter is added, so no bias
    is introduced on well-conditioned problems. Results are always finite for finite input.

    Examples
    --------
    >>> import numpy as np
    >>> from rftheory.gram import solve_gram
    >>> s = solve_gram(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([1.0, 1.0]))
    >>> s.solution.round(12).tolist(), s.method, s.rank, s.rank_deficient
    ([0.333333333333, 0.333333333333], 'cholesky', 2, False)
    """
    xp = namespace_of(G, B)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ShapeError(f"Gram matrix must be square, got shape {tuple(G.shape)}")
    if B.shape[0] != G.shape[0] or B.ndim not in (1, 2):
        raise ShapeError(f"right-hand side of shape {tuple(B.shape)} does not match Gram "
                         f"matrix of size {G.shape[0]}")
    return solve_gram_checked(G, B, xp, rcond)


def solve_gram_checked(G: Any, B: Any, xp: Any, rcond: float | None = None,
                       known: GramSolution | None = None) -> GramSolution:
    """:func:`solve_gram` on checked input of namespace ``xp``.

    ``known``: the result of an earlier solve with this same G (bit for bit) and ``rcond``. When
    it took the Cholesky path, G passed the positive-definiteness and conditioning test — which
    depends on G alone — so the test is not repeated (its factor is not used by the solve); the
    result is the one :func:`solve_gram` gives.

    Parameters
    ----------
    G : array
        The Gram matrix, shape (n, n), checked by the caller.
    B : array
        Right-hand side, shape (n,) or (n, k).
    xp : module
        The namespace of G and B.
    rcond : float, optional
        Relative eigenvalue cut of the pseudo-inverse path (as :func:`solve_gram`).
    known : GramSolution, optional
        An earlier solve with this same G and ``rcond`` (see above).

    Returns
    -------
    GramSolution
        As :func:`solve_gram`.
    """
    n = G.shape[0]
    if type(G) is np.ndarray and type(B) is np.ndarray:
        # numpy: the same operations called directly (no wrappers), the same numbers.
        return _solve_gram_numpy(G, B, xp, rcond, known)
    G = (G + xp.matrix_transpose(G)) / 2  # symmetrise away rounding asymmetry
    if known is not None and known.method == "cholesky":
        ok, cond, conditioned = True, known.condition, True
    else:
        try:
            L = xp.linalg.cholesky(G)
            diag = xp.abs(xp.linalg.diagonal(L))
            dmin = float(xp.min(diag))
            ok = bool(xp.all(xp.isfinite(L))) and dmin > 0.0
        except Exception:  # numpy raises LinAlgError on non-PD input; other namespaces differ
            ok = False
        if ok:
            cond = (float(xp.max(diag)) / dmin) ** 2
            conditioned = cond * math.sqrt(float(xp.finfo(G.dtype).eps)) < 1.0
    if ok and conditioned:
        X = xp.linalg.solve(G, B if B.ndim == 2 else B[:, None])
        X = X if B.ndim == 2 else X[:, 0]
        if bool(xp.all(xp.isfinite(X))):
            return GramSolution(X, "cholesky", n, cond, False)
    return _solve_gram_eigh(G, B, xp, rcond)


def _solve_gram_numpy(G: np.ndarray, B: np.ndarray, xp: Any, rcond: float | None,
                      known: GramSolution | None) -> GramSolution:
    """:func:`solve_gram_checked` for host numpy arrays: each array-API call of the generic
    path made as the numpy call it wraps (``matrix_transpose`` → ``.T``, ``linalg.diagonal`` →
    ``.diagonal()``, ``min``/``max``/``all`` → the methods, the same reductions;
    ``linalg.solve`` → ``np.linalg.solve``, the same LAPACK gufunc for a 2-D right-hand side),
    so bit-identical to it (``tests/test_gram.py``) at a third of the Python overhead — it runs
    twice per LM iteration of the attack on 10 × 10 systems."""
    n = G.shape[0]
    G = (G + G.T) / 2  # symmetrise away rounding asymmetry
    if known is not None and known.method == "cholesky":
        ok, cond, conditioned = True, known.condition, True
    else:
        try:
            L = np.linalg.cholesky(G)
            diag = np.abs(L.diagonal())
            dmin = float(diag.min())
            ok = bool(np.isfinite(L).all()) and dmin > 0.0
        except Exception:  # LinAlgError on non-PD input; min of an empty G
            ok = False
        if ok:
            cond = (float(diag.max()) / dmin) ** 2
            conditioned = cond * math.sqrt(float(np.finfo(G.dtype).eps)) < 1.0
    if ok and conditioned:
        X = np.linalg.solve(G, B if B.ndim == 2 else B[:, None])
        X = X if B.ndim == 2 else X[:, 0]
        if bool(np.isfinite(X).all()):
            return GramSolution(X, "cholesky", n, cond, False)
    return _solve_gram_eigh(G, B, xp, rcond)


def _solve_gram_eigh(G: Any, B: Any, xp: Any, rcond: float | None) -> GramSolution:
    """The pseudo-inverse path of :func:`solve_gram_checked` (G already symmetrised)."""
    n = G.shape[0]
    if rcond is None:
        rcond = _default_rcond(n, G.dtype, xp)
    w, Q = xp.linalg.eigh(G)
    wmax = float(xp.max(w)) if n else 0.0
    cutoff = rcond * max(wmax, 0.0)
    keep = w > cutoff
    rank = int(xp.sum(xp.astype(keep, xp.int64)))
    if rank == 0:
        X = xp.zeros_like(B)
        return GramSolution(X, "eigh", 0, float("inf"), n > 0)
    inv = xp.where(keep, 1.0 / xp.where(keep, w, xp.ones_like(w)), xp.zeros_like(w))
    QtB = xp.matmul(xp.matrix_transpose(Q), B if B.ndim == 2 else B[:, None])
    X = xp.matmul(Q, inv[:, None] * QtB)
    X = X if B.ndim == 2 else X[:, 0]
    wmin = float(xp.min(w))
    condition = wmax / wmin if wmin > cutoff else float("inf")
    return GramSolution(X, "eigh", rank, condition, rank < n)
