"""Random features φ(Vx) streamed over seeded blocks of V, and the trained RF model θ* = Φ⁺Y.

A random-features model is (activation, d, p, seed). Its first layer V ∈ R^{p×d},
V_ij ~ N(0, 1/d), is never stored whole by default: it is generated in blocks of
:data:`BLOCK_ROWS` rows, block ``b`` drawn from ``numpy.random.default_rng([seed, b])``. Hence

* V is a pure function of (seed, p, d) — and the first p rows of a model with p' > p are the V of
  the model with p (models are nested in p);
* every reduction over p (Gram, Φθ, vector–Jacobian products) accumulates one block at a time, in
  block order, so results are **bit-identical whatever compute chunk size** is used;
* memory beyond the inputs is O(n · chunk_rows + n²).

V is drawn in float64 on the host and cast to the data's dtype and device, so numpy, CuPy and
float32 runs all see the same V (up to the cast).

Seed streams: V's blocks use ``default_rng([seed, b])``; every other random object of the package
(data, labels, initial candidates, bootstrap, ...) uses ``default_rng([seed, tag])`` with a fixed
``tag >= 2**40``, so one user seed drives them all independently. (``default_rng(seed)`` equals
block 0's stream — never use it for anything that must be independent of V.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
from array_api_compat import array_namespace, device as array_device

from .activations import Activation, get_activation
from .errors import RFTheoryError, ShapeError
from .gram import GramSolution, solve_gram

__all__ = [
    "BLOCK_ROWS",
    "FeatureBlock",
    "FeatureMap",
    "RandomFeatures",
    "DenseFeatures",
    "TrainedModel",
    "train_min_norm",
    "check_data",
]

#: Rows of V per generated block; also the unit of every reduction over p.
BLOCK_ROWS = 1024
#: Largest Φ (entries) that :meth:`RandomFeatures.features` materialises without ``allow_large``.
MATERIALIZE_LIMIT = 2**26


def check_data(X: Any, d: int, name: str = "X") -> Any:
    """Validate a data matrix: 2-D, ``d`` columns, real floating dtype, finite entries.

    Returns the array namespace of ``X``.
    """
    try:
        xp = array_namespace(X)
    except TypeError as exc:
        raise ShapeError(f"{name} must be an array (numpy, CuPy, ...): {exc}") from None
    if X.ndim != 2:
        raise ShapeError(f"{name} must be 2-D (n, d), got shape {tuple(X.shape)}")
    if X.shape[1] != d:
        raise ShapeError(f"{name} has {X.shape[1]} columns but the model has d = {d}")
    if not xp.isdtype(X.dtype, "real floating"):
        raise ShapeError(f"{name} must have a real floating dtype, got {X.dtype}")
    if not bool(xp.all(xp.isfinite(X))):
        raise ShapeError(f"{name} has non-finite entries (NaN or inf)")
    return xp


@dataclass(frozen=True)
class FeatureBlock:
    """One block of rows of V and the features of the data on it.

    Attributes
    ----------
    rows : slice
        Rows of V (and entries of θ) covered by this block.
    V : array, shape (m, d)
        The block of V.
    Z : array, shape (n, m)
        Pre-activations X V_bᵀ.
    F : array, shape (n, m)
        Features φ(Z) — columns ``rows`` of Φ(X).
    D : array, shape (n, m), or None
        Derivatives φ′(Z), when the stream was asked for them.
    """

    rows: slice
    V: Any
    Z: Any
    F: Any
    D: Any = None


class FeatureMap:
    """Operations shared by every feature map x ↦ φ(Wx) streamed over blocks of rows of W.

    Subclasses provide ``activation``, ``d``, ``p`` and ``_chunks(xp, dtype, device)``, which
    yields ``(first block index, chunk of whole blocks of W as an (m, d) array)`` in order.
    """

    activation: Activation
    d: int
    p: int

    def _chunks(self, xp: Any, dtype: Any, dev: Any) -> Iterator[tuple[int, Any]]:
        raise NotImplementedError

    # -- streaming ----------------------------------------------------------------------------
    def blocks(self, X: Any, *, derivative: bool = False) -> Iterator[FeatureBlock]:
        """Stream Φ(X) over the blocks of V, in order.

        Pre-activations of a chunk are computed as a stack of per-block products (same shape for
        every full block), so every block's numbers are independent of the chunk size.
        φ (and φ′ when ``derivative``) is evaluated once per chunk, not per block.
        """
        act = self.activation
        xp = check_data(X, self.d)
        dev = array_device(X)
        for b0, Vc in self._chunks(xp, X.dtype, dev):
            m_total = Vc.shape[0]
            full = m_total // BLOCK_ROWS
            if full:
                Vs = xp.reshape(Vc[: full * BLOCK_ROWS, :], (full, BLOCK_ROWS, self.d))
                Zs = xp.matmul(X[None, :, :], xp.permute_dims(Vs, (0, 2, 1)))
                Fs = act(Zs)
                Ds = act.derivative(Zs) if derivative else None
                for i in range(full):
                    start = (b0 + i) * BLOCK_ROWS
                    yield FeatureBlock(slice(start, start + BLOCK_ROWS), Vs[i, ...], Zs[i, ...],
                                       Fs[i, ...], Ds[i, ...] if derivative else None)
            if m_total > full * BLOCK_ROWS:  # the last, partial block of V
                Vb = Vc[full * BLOCK_ROWS:, :]
                Zb = xp.matmul(X, xp.matrix_transpose(Vb))
                start = (b0 + full) * BLOCK_ROWS
                yield FeatureBlock(slice(start, start + Vb.shape[0]), Vb, Zb, act(Zb),
                                   act.derivative(Zb) if derivative else None)

    # -- operations ---------------------------------------------------------------------------
    def features(self, X: Any, *, allow_large: bool = False) -> Any:
        """Materialise Φ(X), shape (n, p). Refused above 2**26 entries unless ``allow_large``."""
        xp = check_data(X, self.d)
        if X.shape[0] * self.p > MATERIALIZE_LIMIT and not allow_large:
            raise RFTheoryError(
                f"Φ would have {X.shape[0] * self.p:,} entries; use the streamed operations "
                "or pass allow_large=True")
        return xp.concat([blk.F for blk in self.blocks(X)], axis=1)

    def gram(self, X: Any) -> Any:
        """Gram matrix Φ(X)Φ(X)ᵀ, shape (n, n)."""
        return self.gram_and_matvec(X, None)[0]

    def gram_and_matvec(self, X: Any, theta: Any | None) -> tuple[Any, Any]:
        """Φ(X)Φ(X)ᵀ and Φ(X)θ in one pass over V (θ may be None, or (p,) or (p, k))."""
        xp = check_data(X, self.d)
        self._check_theta(theta, xp)
        n = X.shape[0]
        G = xp.zeros((n, n), dtype=X.dtype, device=array_device(X))
        c = None
        for blk in self.blocks(X):
            G = G + xp.matmul(blk.F, xp.matrix_transpose(blk.F))
            if theta is not None:
                term = xp.matmul(blk.F, theta[blk.rows, ...])
                c = term if c is None else c + term
        return G, c

    def cross_gram(self, X: Any, Y: Any) -> Any:
        """Φ(X)Φ(Y)ᵀ, shape (n_X, n_Y)."""
        xp = check_data(X, self.d)
        check_data(Y, self.d, "Y")
        nx = X.shape[0]
        both = xp.concat([X, xp.astype(Y, X.dtype)], axis=0)
        out = xp.zeros((nx, Y.shape[0]), dtype=X.dtype, device=array_device(X))
        for blk in self.blocks(both):
            out = out + xp.matmul(blk.F[:nx, :], xp.matrix_transpose(blk.F[nx:, :]))
        return out

    def matvec(self, X: Any, theta: Any) -> Any:
        """Φ(X)θ, shape (n,) or (n, k): the model's outputs at the rows of X."""
        xp = check_data(X, self.d)
        self._check_theta(theta, xp)
        out = None
        for blk in self.blocks(X):
            term = xp.matmul(blk.F, theta[blk.rows, ...])
            out = term if out is None else out + term
        return out

    def rmatvec(self, X: Any, a: Any) -> Any:
        """Φ(X)ᵀa, shape (p,) or (p, k) for a of shape (n,) or (n, k)."""
        xp = check_data(X, self.d)
        if a.shape[0] != X.shape[0] or a.ndim not in (1, 2):
            raise ShapeError(f"coefficients of shape {tuple(a.shape)} do not match n = {X.shape[0]}")
        return xp.concat([xp.matmul(xp.matrix_transpose(blk.F), a) for blk in self.blocks(X)], axis=0)

    def vjp(self, X: Any, cotangent: Any) -> Any:
        """Vector–Jacobian product of X ↦ Φ(X): Σ_b (C_b ⊙ φ′(X V_bᵀ)) V_b, shape (n, d).

        Parameters
        ----------
        cotangent : callable
            ``cotangent(block) -> C_b`` of shape (n, m): the cotangent ∂L/∂Φ on that block's
            columns (it may use ``block.F``). φ′ is evaluated at the pre-activations X V_bᵀ.
        """
        xp = check_data(X, self.d)
        out = xp.zeros(X.shape, dtype=X.dtype, device=array_device(X))
        for blk in self.blocks(X, derivative=True):
            C = cotangent(blk) * blk.D
            out = out + xp.matmul(C, blk.V)
        return out

    def _check_theta(self, theta: Any, xp: Any) -> None:
        if theta is None:
            return
        if theta.ndim not in (1, 2) or theta.shape[0] != self.p:
            raise ShapeError(f"θ must have shape (p,) or (p, k) with p = {self.p}, "
                             f"got {tuple(theta.shape)}")
        if not bool(xp.all(xp.isfinite(theta))):
            raise ShapeError("θ has non-finite entries")



@dataclass(frozen=True)
class RandomFeatures(FeatureMap):
    """The random-features map x ↦ φ(Vx) ∈ R^p, streamed over seeded blocks of V.

    Parameters
    ----------
    activation : Activation or str
        φ (a registry name or a safe expression in ``z``).
    d, p : int
        Input dimension and number of features.
    seed : int
        Seed of V; together with (p, d) it determines V exactly.
    chunk_rows : int
        Rows of V processed together (rounded down to a multiple of :data:`BLOCK_ROWS`, at least
        one block). Affects speed and memory only — never the results.
    v_cache_bytes : int
        If V (p·d entries in the working dtype) fits in this many bytes it is kept, per array
        namespace/device/dtype, after the first pass, so iterative methods do not redraw it every
        step. 0 (default) streams every time. The cache never changes results.

    Notes
    -----
    All operations take data X of shape (n, d) in any array-API namespace and return arrays in
    that namespace, in X's dtype.
    """

    activation: Activation
    d: int
    p: int
    seed: int = 0
    chunk_rows: int = 16 * BLOCK_ROWS
    v_cache_bytes: int = 0
    _v_cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation", get_activation(self.activation))
        for name in ("d", "p"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise RFTheoryError(f"{name} must be a positive integer, got {value!r}")
            object.__setattr__(self, name, int(value))
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise RFTheoryError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.chunk_rows < 1:
            raise RFTheoryError(f"chunk_rows must be positive, got {self.chunk_rows}")

    # -- V ------------------------------------------------------------------------------------
    @property
    def n_blocks(self) -> int:
        """Number of blocks of V."""
        return math.ceil(self.p / BLOCK_ROWS)

    def _block_host(self, b: int) -> np.ndarray:
        rows = min(BLOCK_ROWS, self.p - b * BLOCK_ROWS)
        rng = np.random.default_rng([self.seed, b])
        return rng.standard_normal((rows, self.d)) / math.sqrt(self.d)

    def weights(self, xp: Any = np, dtype: Any = None, device: Any = None) -> Any:
        """Materialise all of V, shape (p, d) — explicit, for small models and tests."""
        V = np.concatenate([self._block_host(b) for b in range(self.n_blocks)], axis=0)
        dtype = xp.float64 if dtype is None else dtype
        return xp.asarray(V, dtype=dtype, device=device)

    def _chunks(self, xp: Any, dtype: Any, dev: Any) -> Iterator[tuple[int, Any]]:
        """Yield (first block index, V chunk of whole blocks as (m, d)) in block order."""
        key = (getattr(xp, "__name__", str(xp)), str(dev), str(dtype))
        cached = self._v_cache.get(key)
        if cached is not None:
            yield from cached
            return
        itemsize = 4 if "32" in str(dtype) else 8
        keep = self.p * self.d * itemsize <= self.v_cache_bytes
        per_chunk = max(1, self.chunk_rows // BLOCK_ROWS)
        out = []
        for b0 in range(0, self.n_blocks, per_chunk):
            host = np.concatenate([self._block_host(b)
                                   for b in range(b0, min(b0 + per_chunk, self.n_blocks))])
            chunk = (b0, xp.asarray(host, dtype=dtype, device=dev))
            if keep:
                out.append(chunk)
            yield chunk
        if keep:
            self._v_cache[key] = out



@dataclass(frozen=True)
class DenseFeatures(FeatureMap):
    """The feature map x ↦ φ(Wx) for a given first-layer matrix W (e.g. a trained network's).

    Parameters
    ----------
    activation : Activation or str
    weights : array, shape (p, d)
        W, in the namespace and on the device where the features will be computed. It is cast to
        the data's dtype per call.

    Notes
    -----
    Streams over the same row blocks of :data:`BLOCK_ROWS` as :class:`RandomFeatures`, so every
    operation (Gram, products, VJPs, the projection loss, reconstruction) applies unchanged.
    """

    activation: Activation
    weights: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation", get_activation(self.activation))
        W = self.weights
        if getattr(W, "ndim", None) != 2 or W.shape[0] < 1 or W.shape[1] < 1:
            raise ShapeError(f"weights must be a non-empty 2-D array (p, d), got {getattr(W, 'shape', W)!r}")
        xp = array_namespace(W)
        if not bool(xp.all(xp.isfinite(W))):
            raise ShapeError("weights have non-finite entries")

    @property
    def d(self) -> int:  # type: ignore[override]
        return int(self.weights.shape[1])

    @property
    def p(self) -> int:  # type: ignore[override]
        return int(self.weights.shape[0])

    def _chunks(self, xp: Any, dtype: Any, dev: Any) -> Iterator[tuple[int, Any]]:
        yield 0, xp.astype(xp.asarray(self.weights, device=dev), dtype)

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
    X : array, shape (n, d)
    Y : array, shape (n,) or (n, k)
    rcond : float, optional
        Eigenvalue cut-off for a rank-deficient Gram (see :func:`rftheory.gram.solve_gram`).

    Notes
    -----
    When p < n the Gram matrix is singular: θ* is then the least-squares solution of minimum
    norm and ``train_residual`` is typically far from 0 — the label-fitting threshold p ≈ n is
    read off this number. ``gram.rank_deficient`` flags the case.
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
