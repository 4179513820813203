"""Random features φ(Vx) streamed over seeded blocks of V, and the trained RF model θ* = Φ⁺Y.

A random-features model is (activation, d, p, seed). Its first layer V ∈ R^{p×d},
V_ij ~ N(0, 1/d), is never stored whole by default: it is generated in blocks of
:data:`BLOCK_ROWS` rows, block ``b`` drawn from ``numpy.random.default_rng([seed, b])``. Hence

* V is a pure function of (seed, p, d) — and the first p rows of a model with p' > p are the V of
  the model with p (models are nested in p);
* every reduction over p (Gram, Φθ, vector–Jacobian products, the projection loss) adds one term
  per *group* of :data:`GROUP_ROWS` consecutive rows of V, each computed by one product of a shape
  fixed by the group alone, in group order; a compute chunk is a whole number of groups, so
  results are **bit-identical whatever compute chunk size** is used (with numpy; on CuPy up to
  cuBLAS's choice of kernel);
* memory beyond the inputs is O(n · chunk_rows + n²), plus a few groups of V on the host while
  they are drawn.

V is drawn in float64 on the host (by a pool of threads, a few groups ahead of the arithmetic) and
cast to the data's dtype and device, so numpy, CuPy and float32 runs all see the same V (up to
the cast).

Seed streams: V's blocks use ``default_rng([seed, b])``; every other random object of the package
(data, labels, initial candidates, bootstrap, ...) uses ``default_rng([seed, tag])`` with a fixed
``tag >= 2**40``, so one user seed drives them all independently. (``default_rng(seed)`` equals
block 0's stream — never use it for anything that must be independent of V.)
"""

from __future__ import annotations

import itertools
import math
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
from array_api_compat import array_namespace, device as array_device, is_cupy_namespace

from .activations import Activation, get_activation
from .errors import RFTheoryError, ShapeError
from .gram import GramSolution, solve_gram

__all__ = [
    "BLOCK_ROWS",
    "GROUP_ROWS",
    "FeatureBlock",
    "FeatureChunk",
    "FeatureMap",
    "contract_group",
    "RandomFeatures",
    "DenseFeatures",
    "TrainedModel",
    "train_min_norm",
    "check_data",
]

#: Rows of V per seeded block (the unit that defines V).
BLOCK_ROWS = 1024
#: Rows of V per reduction group (the unit of every reduction over p): 16 blocks.
GROUP_ROWS = 16 * BLOCK_ROWS
#: Default groups per compute chunk for CuPy arrays (assembled on the device; on a GPU each array
#: operation costs a launch and some host dispatch, so larger chunks keep it busy with products).
DEVICE_CHUNK_GROUPS = 8
#: Largest Φ (entries) that :meth:`RandomFeatures.features` materialises without ``allow_large``.
MATERIALIZE_LIMIT = 2**26
#: Below this many entries of V, drawing it in one thread is faster than starting a pool.
THREADED_DRAW_MIN = 2**21


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
    """A run of rows of V (a block or a reduction group) and the features of the data on it.

    Attributes
    ----------
    rows : slice
        Rows of V (and entries of θ) covered.
    V : array, shape (m, d)
        Those rows of V.
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


@dataclass(frozen=True)
class FeatureChunk:
    """Consecutive rows of V — whole reduction groups — with the data's features on them.

    Attributes
    ----------
    start : int
        First row of V covered (a multiple of :data:`GROUP_ROWS`).
    V : array, shape (m, d)
    Z, F : arrays, shape (n, m)
        Pre-activations and features.
    D : array, shape (n, m), or None
        φ′(Z), when the stream was asked for derivatives.
    """

    start: int
    V: Any
    Z: Any
    F: Any
    D: Any = None

    @property
    def rows(self) -> slice:
        """Rows of V (and of θ) covered by the chunk."""
        return slice(self.start, self.start + self.V.shape[0])

    def _runs(self, size: int) -> Iterator[FeatureBlock]:
        m = self.V.shape[0]
        for i in range(0, m, size):
            j = min(i + size, m)
            yield FeatureBlock(slice(self.start + i, self.start + j), self.V[i:j, :],
                               None if self.Z is None else self.Z[:, i:j], self.F[:, i:j],
                               None if self.D is None else self.D[:, i:j])

    def groups(self) -> Iterator[FeatureBlock]:
        """The chunk's reduction groups, in order (views): one term of each reduction apiece."""
        return self._runs(GROUP_ROWS)

    def blocks(self) -> Iterator[FeatureBlock]:
        """The chunk's blocks of V, in order (views)."""
        return self._runs(BLOCK_ROWS)


def contract_group(A: Any, B: Any) -> Any:
    """A·B for A (n, m), B (m, k) whose contraction runs over the m rows of one reduction group.

    numpy: one product. CuPy: the group's whole blocks as one batched product, summed over
    blocks — cuBLAS gives a long contraction with a small (n×k) output to only a few of the GPU's
    multiprocessors, while per-block products fill it. Either way the term depends on the group
    alone, so reductions stay independent of the chunk size.
    """
    xp = array_namespace(A)
    m = A.shape[1]
    if not is_cupy_namespace(xp) or m % BLOCK_ROWS or m == BLOCK_ROWS:
        return xp.matmul(A, B)
    nb = m // BLOCK_ROWS
    A3 = xp.permute_dims(xp.reshape(A, (A.shape[0], nb, BLOCK_ROWS)), (1, 0, 2))
    B3 = xp.reshape(B, (nb, BLOCK_ROWS, B.shape[1]))
    return xp.sum(xp.matmul(A3, B3), axis=0)


class FeatureMap:
    """Operations shared by every feature map x ↦ φ(Wx) streamed over rows of W.

    Subclasses provide ``activation``, ``d``, ``p``, ``_chunks(xp, dtype, device)``, which yields
    ``(first row, rows of W as an (m, d) array)`` in row order — whole groups of
    :data:`GROUP_ROWS` rows, the last possibly short — and ``weights_resident(xp, dtype, device)``.
    """

    activation: Activation
    d: int
    p: int

    def _chunks(self, xp: Any, dtype: Any, dev: Any) -> Iterator[tuple[int, Any]]:
        raise NotImplementedError

    def weights_resident(self, xp: Any, dtype: Any, dev: Any) -> bool:
        """True when streaming W again costs no generation (W is held in memory)."""
        raise NotImplementedError

    # -- streaming ----------------------------------------------------------------------------
    def chunks(self, X: Any, *, derivative: bool = False) -> Iterator[FeatureChunk]:
        """Stream Φ(X) over chunks of V (whole reduction groups), in order.

        The pre-activations are one product per group (a chunk of several groups joins them),
        and φ (with φ′, sharing their common subexpressions, when ``derivative``) is evaluated
        once per chunk.
        """
        act = self.activation
        xp = check_data(X, self.d)
        for start, Vc in self._chunks(xp, X.dtype, array_device(X)):
            m = Vc.shape[0]
            parts = [xp.matmul(X, xp.matrix_transpose(Vc[i:min(i + GROUP_ROWS, m), :]))
                     for i in range(0, m, GROUP_ROWS)]
            Z = parts[0] if len(parts) == 1 else xp.concat(parts, axis=1)
            F, D = act.value_and_derivative(Z) if derivative else (act(Z), None)
            yield FeatureChunk(start, Vc, Z, F, D)

    def groups(self, X: Any, *, derivative: bool = False) -> Iterator[FeatureBlock]:
        """Stream Φ(X) one reduction group of V at a time, in order."""
        for chunk in self.chunks(X, derivative=derivative):
            yield from chunk.groups()

    def blocks(self, X: Any, *, derivative: bool = False) -> Iterator[FeatureBlock]:
        """Stream Φ(X) one block of V at a time, in order (views into :meth:`chunks`)."""
        for chunk in self.chunks(X, derivative=derivative):
            yield from chunk.blocks()

    # -- operations ---------------------------------------------------------------------------
    def features(self, X: Any, *, allow_large: bool = False) -> Any:
        """Materialise Φ(X), shape (n, p). Refused above 2**26 entries unless ``allow_large``."""
        xp = check_data(X, self.d)
        if X.shape[0] * self.p > MATERIALIZE_LIMIT and not allow_large:
            raise RFTheoryError(
                f"Φ would have {X.shape[0] * self.p:,} entries; use the streamed operations "
                "or pass allow_large=True")
        return xp.concat([ch.F for ch in self.chunks(X)], axis=1)

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
        if theta is not None:
            theta = xp.astype(theta, X.dtype)
            c = xp.zeros((n,) + tuple(theta.shape[1:]), dtype=X.dtype, device=array_device(X))
        for g in self.groups(X):
            G = G + contract_group(g.F, xp.matrix_transpose(g.F))
            if theta is not None:
                c = c + xp.matmul(g.F, theta[g.rows, ...])
        return G, c

    def cross_gram(self, X: Any, Y: Any) -> Any:
        """Φ(X)Φ(Y)ᵀ, shape (n_X, n_Y)."""
        xp = check_data(X, self.d)
        check_data(Y, self.d, "Y")
        nx = X.shape[0]
        both = xp.concat([X, xp.astype(Y, X.dtype)], axis=0)
        out = xp.zeros((nx, Y.shape[0]), dtype=X.dtype, device=array_device(X))
        for g in self.groups(both):
            out = out + contract_group(g.F[:nx, :], xp.matrix_transpose(g.F[nx:, :]))
        return out

    def matvec(self, X: Any, theta: Any) -> Any:
        """Φ(X)θ, shape (n,) or (n, k): the model's outputs at the rows of X."""
        xp = check_data(X, self.d)
        self._check_theta(theta, xp)
        theta = xp.astype(theta, X.dtype)
        out = xp.zeros((X.shape[0],) + tuple(theta.shape[1:]), dtype=X.dtype, device=array_device(X))
        for g in self.groups(X):
            out = out + xp.matmul(g.F, theta[g.rows, ...])
        return out

    def rmatvec(self, X: Any, a: Any) -> Any:
        """Φ(X)ᵀa, shape (p,) or (p, k) for a of shape (n,) or (n, k)."""
        xp = check_data(X, self.d)
        if a.shape[0] != X.shape[0] or a.ndim not in (1, 2):
            raise ShapeError(f"coefficients of shape {tuple(a.shape)} do not match n = {X.shape[0]}")
        a = xp.astype(a, X.dtype)
        return xp.concat([xp.matmul(xp.matrix_transpose(g.F), a) for g in self.groups(X)], axis=0)

    def vjp(self, X: Any, cotangent: Any) -> Any:
        """Vector–Jacobian product of X ↦ Φ(X): Σ_g (C_g ⊙ φ′(X V_gᵀ)) V_g, shape (n, d).

        Parameters
        ----------
        cotangent : callable
            ``cotangent(block) -> C`` of shape (n, m): the cotangent ∂L/∂Φ on the columns
            ``block.rows`` (it may use ``block.F``); it is called once per reduction group.
            φ′ is evaluated at the pre-activations X Vᵀ.
        """
        xp = check_data(X, self.d)
        out = xp.zeros(X.shape, dtype=X.dtype, device=array_device(X))
        for g in self.groups(X, derivative=True):
            out = out + contract_group(cotangent(g) * g.D, g.V)
        return out

    def _check_theta(self, theta: Any, xp: Any) -> None:
        if theta is None:
            return
        if theta.ndim not in (1, 2) or theta.shape[0] != self.p:
            raise ShapeError(f"θ must have shape (p,) or (p, k) with p = {self.p}, "
                             f"got {tuple(theta.shape)}")
        if not bool(xp.all(xp.isfinite(theta))):
            raise ShapeError("θ has non-finite entries")


def _groups_per_chunk(chunk_rows: int | None, xp: Any) -> int:
    if chunk_rows is not None:
        return max(1, -(-chunk_rows // GROUP_ROWS))
    return DEVICE_CHUNK_GROUPS if is_cupy_namespace(xp) else 1


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
    chunk_rows : int, optional
        Rows of V processed together, rounded up to a whole number of reduction groups
        (:data:`GROUP_ROWS` rows). Default: one group for numpy, :data:`DEVICE_CHUNK_GROUPS` for
        CuPy. Affects speed and memory only — never the results.
    v_cache_bytes : int
        If V (p·d entries in the working dtype) fits in this many bytes it is kept, per array
        namespace/device/dtype, after the first pass, so iterative methods do not redraw it every
        step. 0 (default) streams every time. The cache never changes results.
    threads : int
        Host threads that draw the blocks of V (each block has its own generator, so any number
        gives the same V); the next groups are drawn while the current one is in use. 0
        (default): one per available core. Never changes results.

    Notes
    -----
    All operations take data X of shape (n, d) in any array-API namespace and return arrays in
    that namespace, in X's dtype.

    Memory of a pass: the chunk's Z, φ (and φ′) — 3·n·chunk_rows entries — plus, while V is
    drawn, about 1 + ⌈threads/16⌉ groups of V in float64 on the host (a group is 128 MB at
    d = 1024, 403 MB at d = 3072).

    Drawing V costs about as much as the arithmetic it feeds once n is small: a pass does about
    2n + 2n²/d flops per Gaussian draw, while numpy's generator gives ~30–110 M draws/s per core.
    Iterative methods should therefore cache V (``v_cache_bytes``) whenever it fits.
    """

    activation: Activation
    d: int
    p: int
    seed: int = 0
    chunk_rows: int | None = None
    v_cache_bytes: int = 0
    threads: int = 0
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
        if self.chunk_rows is not None and self.chunk_rows < 1:
            raise RFTheoryError(f"chunk_rows must be positive, got {self.chunk_rows}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, (int, np.integer)) \
                or self.threads < 0:
            raise RFTheoryError(f"threads must be a non-negative integer, got {self.threads!r}")

    # -- V ------------------------------------------------------------------------------------
    @property
    def n_blocks(self) -> int:
        """Number of blocks of V."""
        return math.ceil(self.p / BLOCK_ROWS)

    def _fill_block(self, b: int, out: np.ndarray) -> None:
        """Draw block ``b`` of V into ``out`` (float64, shape (rows, d))."""
        np.random.default_rng([self.seed, b]).standard_normal(out=out)
        np.divide(out, math.sqrt(self.d), out=out)

    def weights(self, xp: Any = np, dtype: Any = None, device: Any = None) -> Any:
        """Materialise all of V, shape (p, d) — explicit, for small models and tests."""
        V = np.concatenate([host for _, host in self._host_groups()], axis=0)
        dtype = xp.float64 if dtype is None else dtype
        return xp.asarray(V, dtype=dtype, device=device)

    def _host_groups(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, float64 rows of V) for each reduction group, in order.

        Blocks are drawn by a pool of threads (numpy's generators release the GIL while filling
        an array), enough groups ahead of the consumer to keep every thread busy.
        """
        per = GROUP_ROWS // BLOCK_ROWS

        def draw(g0: int, submit: Any) -> tuple[np.ndarray, list]:
            start = g0 * GROUP_ROWS
            buf = np.empty((min(GROUP_ROWS, self.p - start), self.d))
            jobs = [submit(self._fill_block, b, buf[i * BLOCK_ROWS:(i + 1) * BLOCK_ROWS])
                    for i, b in enumerate(range(g0 * per, min((g0 + 1) * per, self.n_blocks)))]
            return buf, jobs

        n_groups = math.ceil(self.p / GROUP_ROWS)
        threads = self.threads or available_cores()
        if threads == 1 or self.p * self.d < THREADED_DRAW_MIN:
            for g in range(n_groups):
                yield g * GROUP_ROWS, draw(g, lambda fn, *args: fn(*args))[0]
            return
        with ThreadPoolExecutor(threads, thread_name_prefix="rftheory-V") as pool:
            pending: deque = deque()
            todo = iter(range(n_groups))
            for g in itertools.islice(todo, -(-threads // per)):
                pending.append((g, draw(g, pool.submit)))
            while pending:
                g, (buf, jobs) = pending.popleft()
                for job in jobs:
                    job.result()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append((nxt, draw(nxt, pool.submit)))
                yield g * GROUP_ROWS, buf

    def weights_resident(self, xp: Any, dtype: Any, dev: Any) -> bool:
        return (self._cache_key(xp, dtype, dev) in self._v_cache
                or self.p * self.d * _itemsize(dtype) <= self.v_cache_bytes)

    @staticmethod
    def _cache_key(xp: Any, dtype: Any, dev: Any) -> tuple[str, str, str]:
        return (getattr(xp, "__name__", str(xp)), str(dev), str(dtype))

    def _chunks(self, xp: Any, dtype: Any, dev: Any) -> Iterator[tuple[int, Any]]:
        """Yield (first row, rows of V as (m, d)) per chunk, in order, from the cache if there."""
        key = self._cache_key(xp, dtype, dev)
        cached = self._v_cache.get(key)
        if cached is not None:
            yield from cached
            return
        keep = self.p * self.d * _itemsize(dtype) <= self.v_cache_bytes
        per = _groups_per_chunk(self.chunk_rows, xp)
        out: list[tuple[int, Any]] = []
        pieces: list[tuple[int, Any]] = []  # groups waiting to fill one chunk

        def assemble() -> tuple[int, Any]:
            V = pieces[0][1] if len(pieces) == 1 else xp.concat([v for _, v in pieces], axis=0)
            chunk = (pieces[0][0], V)
            pieces.clear()
            if keep:
                out.append(chunk)
            return chunk

        # The host holds a few groups at a time; larger chunks are assembled on the target device.
        for start, host in self._host_groups():
            pieces.append((start, xp.asarray(host, dtype=dtype, device=dev)))
            if len(pieces) == per:
                yield assemble()
        if pieces:
            yield assemble()
        if keep:
            self._v_cache[key] = out


def _itemsize(dtype: Any) -> int:
    return 4 if "32" in str(dtype) else 8


def available_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class DenseFeatures(FeatureMap):
    """The feature map x ↦ φ(Wx) for a given first-layer matrix W (e.g. a trained network's).

    Parameters
    ----------
    activation : Activation or str
    weights : array, shape (p, d)
        W, in the namespace and on the device where the features will be computed. It is cast to
        the data's dtype per call.
    chunk_rows : int, optional
        As for :class:`RandomFeatures`.

    Notes
    -----
    Streams over the same reduction groups as :class:`RandomFeatures`, so every operation (Gram,
    products, VJPs, the projection loss, reconstruction) applies unchanged, and a DenseFeatures
    holding a RandomFeatures' V gives bit-identical results.
    """

    activation: Activation
    weights: Any
    chunk_rows: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation", get_activation(self.activation))
        W = self.weights
        if getattr(W, "ndim", None) != 2 or W.shape[0] < 1 or W.shape[1] < 1:
            raise ShapeError(f"weights must be a non-empty 2-D array (p, d), got {getattr(W, 'shape', W)!r}")
        xp = array_namespace(W)
        if not bool(xp.all(xp.isfinite(W))):
            raise ShapeError("weights have non-finite entries")
        if self.chunk_rows is not None and self.chunk_rows < 1:
            raise RFTheoryError(f"chunk_rows must be positive, got {self.chunk_rows}")

    @property
    def d(self) -> int:  # type: ignore[override]
        return int(self.weights.shape[1])

    @property
    def p(self) -> int:  # type: ignore[override]
        return int(self.weights.shape[0])

    def weights_resident(self, xp: Any, dtype: Any, dev: Any) -> bool:
        return True

    def _chunks(self, xp: Any, dtype: Any, dev: Any) -> Iterator[tuple[int, Any]]:
        W = xp.astype(xp.asarray(self.weights, device=dev), dtype)
        rows = _groups_per_chunk(self.chunk_rows, xp) * GROUP_ROWS
        for start in range(0, self.p, rows):
            yield start, W[start:min(start + rows, self.p), :]


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
