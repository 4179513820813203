"""The trained RF model: the min-norm interpolator θ* = Φ⁺Y = Φᵀ(ΦΦᵀ)⁺Y, without forming Φ⁺.

:func:`train_min_norm` streams the feature map (:mod:`rftheory.features`) twice — the Gram matrix
G = ΦΦᵀ, then θ* = Φᵀa with a = G⁺Y (:func:`rftheory.gram.solve_gram`) — and measures the training
residual by a third pass Φθ*; :func:`train_memory` declares its peak memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ShapeError
from .features import BOOKKEEPING_BYTES as _BOOKKEEPING
from .features import FeatureMap, available_cores, check_data, stream_memory
from .gram import GramSolution, solve_gram

__all__ = ["TrainedModel", "train_min_norm", "train_memory"]


@dataclass(frozen=True)
class TrainedModel:
    """A random-features model fitted by the min-norm interpolator θ* = Φ⁺Y.

    Attributes
    ----------
    features : FeatureMap
    theta : array, shape (p,) or (p, k)
    dual : array, shape (n,) or (n, k)
        a = G⁺Y with G = ΦΦᵀ, so θ* = Φᵀa.
    train_residual : float
        ‖Φθ* − Y‖/‖Y‖, measured by a separate pass Φθ* (not inferred from G).
    gram : GramSolution
        The Gram solve's diagnostics (method, rank, condition, rank deficiency).
    """

    features: FeatureMap
    theta: Any
    dual: Any
    train_residual: float
    gram: GramSolution


def train_min_norm(features: FeatureMap, X: Any, Y: Any, *, rcond: float | None = None) -> TrainedModel:
    """Fit θ* = Φ⁺Y = Φᵀ(ΦΦᵀ)⁺Y without forming Φ⁺, and measure the training residual.

    Parameters
    ----------
    features : FeatureMap
        The feature map (V and φ).
    X : array, shape (n, d)
        Training inputs.
    Y : array, shape (n,) or (n, k)
        Labels.
    rcond : float, optional
        Eigenvalue cut-off for a rank-deficient Gram (see :func:`rftheory.gram.solve_gram`).

    Returns
    -------
    TrainedModel
        θ*, the Gram's solve (``gram``) and the relative training residual ‖Φθ* − Y‖/‖Y‖.

    Notes
    -----
    When p < n the Gram matrix is singular: θ* is then the least-squares solution of minimum
    norm and ``train_residual`` is typically far from 0 — the label-fitting threshold p ≈ n is
    read off this number. ``gram.rank_deficient`` flags the case.

    Examples
    --------
    With p ≫ n the labels are fit exactly, and θ* is a zero of the projection loss at the
    training set:

    >>> from rftheory.data import gaussian_labels, sphere_points
    >>> from rftheory.features import RandomFeatures, train_min_norm
    >>> from rftheory.projection import projection_loss
    >>> X, Y = sphere_points(4, 10, seed=0), gaussian_labels(4, seed=0)
    >>> model = train_min_norm(RandomFeatures("relu", d=10, p=200, seed=1), X, Y)
    >>> model.theta.shape, bool(model.train_residual < 1e-12)
    ((200,), True)
    >>> bool(projection_loss(model.features, X, model.theta).loss < 1e-20)
    True
    """
    xp = check_data(X, features.d)
    if Y.ndim not in (1, 2) or Y.shape[0] != X.shape[0]:
        raise ShapeError(f"Y must have shape (n,) or (n, k) with n = {X.shape[0]}, got {tuple(Y.shape)}")
    if not bool(xp.all(xp.isfinite(Y))):
        raise ShapeError("Y has non-finite entries")
    Y = xp.astype(Y, X.dtype)
    G, _ = features.gram_and_matvec(X, None)
    solved = solve_gram(G, Y, rcond=rcond)
    theta = features.rmatvec(X, solved.solution)
    fitted = features.matvec(X, theta)
    norm_y = float(xp.linalg.vector_norm(Y))
    resid = float(xp.linalg.vector_norm(fitted - Y)) / (norm_y if norm_y > 0 else 1.0)
    return TrainedModel(features, theta, solved.solution, resid, solved)


def train_memory(*, d: float, n: float, p: float, k: float = 1, itemsize: int = 8,
                 v_cache_bytes: float = 0, threads: int | None = None) -> tuple[float, dict]:
    """Peak bytes of :func:`train_min_norm` with a streamed :class:`~rftheory.features.RandomFeatures`: the Gram
    pass (filling V's cache when p·d entries fit ``v_cache_bytes``), the Φᵀa and Φθ passes,
    the n × n solve, θ and the data.

    Parameters
    ----------
    d, n, p, k : float
        Input dimension, training points, features, outputs.
    itemsize : int
        Bytes per entry of the working dtype.
    v_cache_bytes : float
        The model's ``v_cache_bytes``.
    threads : int, optional
        Threads drawing V (default :func:`~rftheory.features.available_cores`).

    Returns
    -------
    peak : float
        Bytes, V's cache and θ included.
    parts : dict of str to float
        Its named terms.

    Examples
    --------
    >>> peak, parts = train_memory(d=20, n=10, p=2000)
    >>> peak < 2**22, sorted(parts)[0]
    (True, 'Gram and solve')
    """
    threads = available_cores() if threads is None else max(1, int(threads))
    cached = p * d * itemsize <= v_cache_bytes
    first = stream_memory(n, d, p, itemsize, threads=threads, gram=True, fills_cache=cached)
    later = stream_memory(n, d, p, itemsize, cached=cached, threads=threads, outputs=k)
    theta = p * k * itemsize
    solve = 3 * n * n * itemsize + 2 * n * k * itemsize
    data = n * d * 8.0  # the training inputs (host float64) and labels
    v_bytes = p * d * itemsize if cached else 0.0
    transient = max(first, later + theta, solve + n * n * itemsize) + data
    parts = {"streamed chunks": max(first, later), "θ": theta, "Gram and solve": solve,
             "data X": data, "V cached": v_bytes}
    return v_bytes + transient + theta + _BOOKKEEPING, parts
