"""Random features φ(Vx) streamed over blocks of a counter-based V (the fit: :mod:`rftheory.fit`).

A random-features model is (activation, d, p, seed). Its first layer V ∈ R^{p×d},
V_ij ~ N(0, 1/d), is defined entry by entry in :mod:`rftheory.philox`:
``V[i, j] = Z[i, j]/√d`` with Z[i, j] a standard normal computed from Philox4x64-10 of the counter
(i, j // 4, 0, 0) under the key of ``seed`` (Box–Muller, in float64; a float32 V is that value
rounded once). It is never stored whole by default but generated in blocks of
:data:`BLOCK_ROWS` rows — on the host by a pool of threads, on a CUDA device by a kernel that
writes each chunk in the working dtype. Hence

* V is a pure function of (seed, i, j) (and d, through the scale 1/√d) — not of the block size,
  the chunk size, the thread count, the device or the dtype beyond that final rounding; models
  are nested in p and in d (up to the scale);
* every reduction over p (Gram, Φθ, vector–Jacobian products) adds per-block terms in an
  association fixed by the block index (:class:`~rftheory.blocksum.BlockSum`), so results are **bit-identical
  whatever compute chunk size** is used (with numpy; on CuPy up to cuBLAS's choice of kernel,
  which may depend on the chunk's size);
* memory beyond the inputs is O(n · chunk_rows + n²).

numpy and CuPy compute the same Philox integers and the same correctly rounded float64
operations (the package's own ``log``/``sin``/``cos``, no libm), so V is the same bits on every
IEEE-754 machine (:data:`rftheory.philox.MAX_ULPS` = 0; see :mod:`rftheory.philox`).
:data:`V_DEFINITION` names the definition; stored results that depend on V should record it.

Seed streams: V uses no numpy ``Generator`` at all, so no ``default_rng`` stream can coincide with
it (not even ``default_rng(seed)``). The package's other random objects (data, labels, initial
candidates, bootstrap, ...) use ``default_rng([seed, tag])`` with a fixed ``tag >= 2**40`` per
purpose, so one user seed drives them all independently.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator

import numpy as np
from array_api_compat import device as array_device, is_cupy_namespace

from . import philox, philox_cupy
from .activations import Activation, get_activation
from .backend import namespace_of
from .errors import RFTheoryError, ShapeError
from .blocksum import SUM_GROUP, BlockSum
from .philox import V_DEFINITION

__all__ = [
    "V_DEFINITION",
    "BLOCK_ROWS",
    "FeatureBlock",
    "FeatureChunk",
    "FeatureMap",
    "RandomFeatures",
    "DenseFeatures",
    "check_data",
    "stream_memory",
    "features_memory",
    "available_memory_bytes",
    "default_v_cache_bytes",
]

#: Rows of V per generated block; also the unit of every reduction over p.
BLOCK_ROWS = 1024
#: Largest Φ (entries) that :meth:`RandomFeatures.features` materialises without ``allow_large``.
MATERIALIZE_LIMIT = 2**26
#: Default blocks of V per chunk for CuPy arrays (chunks are assembled on the device).
DEVICE_CHUNK_BLOCKS = 128
#: Below this many entries of V, drawing it in one thread is faster than starting a pool.
THREADED_DRAW_MIN = 2**21


def check_data(X: Any, d: int, name: str = "X") -> Any:
    """Validate a data matrix: 2-D, ``d`` columns, real floating dtype, finite entries.

    Parameters
    ----------
    X : array
        The data.
    d : int
        The columns it must have.
    name : str
        Its name in error messages.

    Returns
    -------
    module
        The array namespace of ``X``.

    Raises
    ------
    RFTheoryError
        When ``X`` is not such a matrix.
    """
    try:
        xp = namespace_of(X)
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


@dataclass(frozen=True)
class FeatureChunk:
    """Consecutive blocks of V of equal size, stacked, with the data's features on them.

    Stacking lets one batched product serve all blocks of a chunk, while every block's numbers
    (and every per-block partial sum) stay those of that block alone — so reductions that add the
    per-block terms in block order are bit-identical whatever the chunk size.

    Attributes
    ----------
    start : int
        First row of V covered.
    V : array, shape (nb, m, d)
        The blocks of V.
    Z, F : arrays, shape (nb, n, m)
        Pre-activations X V_bᵀ and features φ(Z), per block.
    D : array, shape (nb, n, m), or None
        φ′(Z), when the stream was asked for derivatives.
    """

    start: int
    V: Any
    Z: Any
    F: Any
    D: Any = None

    @property
    def first_block(self) -> int:
        """Index of the chunk's first block of V."""
        return self.start // BLOCK_ROWS

    @property
    def rows(self) -> slice:
        """Rows of V (and of θ) covered by the chunk."""
        return slice(self.start, self.start + self.V.shape[0] * self.V.shape[1])

    def stacked(self, theta: Any) -> Any:
        """θ's rows for this chunk as (nb, m, k) (a 1-D θ gets k = 1)."""
        nb, m = self.V.shape[0], self.V.shape[1]
        part = theta[self.rows, ...]
        shape = (nb, m, part.shape[1] if part.ndim == 2 else 1)
        if type(part) is np.ndarray:  # what the array-API reshape calls, without its wrapper
            return part.reshape(shape)
        return namespace_of(part).reshape(part, shape)

    def blocks(self) -> Iterator[FeatureBlock]:
        """The chunk's blocks, one at a time (views, no copies)."""
        m = self.V.shape[1]
        for i in range(self.V.shape[0]):
            s = self.start + i * m
            yield FeatureBlock(slice(s, s + m), self.V[i, ...], self.Z[i, ...], self.F[i, ...],
                               None if self.D is None else self.D[i, ...])


def _preactivations_cupy(X: Any, Vs: Any) -> Any:
    """X V_bᵀ for every block of a CuPy chunk, as (nb, n, m).

    cuBLAS runs the broadcast batched product (1, n, d)·(nb, d, m) with transposed operands at
    ~40 % of its GEMM rate; one 2-D product over the whole chunk and a re-layout copy (a few % of
    the product's time) run ~2.3× faster (``benchmarks/gpu_profile_step.py``, H200, d = 3072).
    """
    import cupy

    nb, m, d = Vs.shape
    Z = cupy.matmul(X, cupy.reshape(Vs, (nb * m, d)).T)  # (n, nb·m)
    return cupy.ascontiguousarray(cupy.transpose(cupy.reshape(Z, (X.shape[0], nb, m)), (1, 0, 2)))


def _transpose_blocks(x: Any) -> Any:
    """(nb, a, b) -> (nb, b, a) as a view."""
    return namespace_of(x).permute_dims(x, (0, 2, 1))


class FeatureMap:
    """Operations shared by every feature map x ↦ φ(Wx) streamed over blocks of rows of W.

    Subclasses provide ``activation``, ``d``, ``p``, ``_chunks(xp, dtype, device)``, which yields
    ``(first row, stack of equal blocks of W as an (nb, m, d) array)`` in row order, and
    ``weights_resident(xp, dtype, device)``.
    """

    activation: Activation
    d: int
    p: int

    def _chunks(self, xp: Any, dtype: Any, dev: Any) -> Iterator[tuple[int, Any]]:
        raise NotImplementedError

    def weights_resident(self, xp: Any, dtype: Any, dev: Any) -> bool:
        """True when streaming W again costs no generation (W is held in memory)."""
        raise NotImplementedError

    def weight_chunks(self, xp: Any = np, dtype: Any = np.float64,
                      device: Any = None) -> Iterator[tuple[int, Any]]:
        """Stream W itself, as :meth:`chunks` sees it: ``(first row, (nb, m, d) stack of
        blocks)`` in row order, in namespace ``xp``, ``dtype`` and on ``device`` (default: the
        namespace's default device; host numpy float64 by default)."""
        dev = array_device(xp.empty(0)) if device is None else device
        yield from self._chunks(xp, dtype, dev)

    # -- streaming ----------------------------------------------------------------------------
    def chunks(self, X: Any, *, derivative: bool = False) -> Iterator[FeatureChunk]:
        """Stream Φ(X) over stacks of blocks of V, in order.

        One batched product gives the pre-activations of all blocks of a chunk, and φ (with φ′,
        sharing their common subexpressions, when ``derivative``) is evaluated once per chunk.
        """
        yield from self.unchecked_chunks(X, check_data(X, self.d), derivative=derivative)

    def unchecked_chunks(self, X: Any, xp: Any, *,
                         derivative: bool = False) -> Iterator[FeatureChunk]:
        """:meth:`chunks` without validating X: for hot loops that checked X once.

        Parameters
        ----------
        X : array, shape (n, d)
            Points, already checked (:func:`check_data` gave ``xp``); nothing
            is checked here, so a wrong shape or dtype fails inside the product or, worse,
            does not.
        xp : namespace
            The array namespace of X.
        derivative : bool, default False
            Also φ′ at the pre-activations.

        Yields
        ------
        FeatureChunk
            As :meth:`chunks`.
        """
        act = self.activation
        on_gpu = is_cupy_namespace(xp)
        host = type(X) is np.ndarray  # numpy: matmul and the transpose without their wrappers
        for start, Vs in self._chunks(xp, X.dtype, array_device(X)):
            if on_gpu:
                Zs = _preactivations_cupy(X, Vs)
            elif host and type(Vs) is np.ndarray:
                Zs = np.matmul(X[None, :, :], Vs.transpose(0, 2, 1))
            else:
                Zs = xp.matmul(X[None, :, :], _transpose_blocks(Vs))
            if derivative:
                Fs, Ds = act.value_and_derivative(Zs)
            else:
                Fs, Ds = act(Zs), None
            yield FeatureChunk(start, Vs, Zs, Fs, Ds)

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
        return xp.concat([blk.F for blk in self.blocks(X)], axis=1)

    def gram(self, X: Any) -> Any:
        """Gram matrix Φ(X)Φ(X)ᵀ, shape (n, n)."""
        return self.gram_and_matvec(X, None)[0]

    def gram_and_matvec(self, X: Any, theta: Any | None) -> tuple[Any, Any]:
        """Φ(X)Φ(X)ᵀ and Φ(X)θ in one pass over V (θ may be None, or (p,) or (p, k))."""
        return self._gram_and_outputs(X, theta, gram=True)

    def _gram_and_outputs(self, X: Any, theta: Any | None, *, gram: bool) -> tuple[Any, Any]:
        xp = check_data(X, self.d)
        self._check_theta(theta, xp)
        n, dev = X.shape[0], array_device(X)
        G = BlockSum(xp.zeros((n, n), dtype=X.dtype, device=dev)) if gram else None
        c = None
        if theta is not None:
            theta = xp.astype(theta, X.dtype)
            k = theta.shape[1] if theta.ndim == 2 else 1
            c = BlockSum(xp.zeros((n, k), dtype=X.dtype, device=dev))
        for ch in self.chunks(X):
            if G is not None:
                G.add(ch.first_block, xp.matmul(ch.F, _transpose_blocks(ch.F)))
            if c is not None:
                c.add(ch.first_block, xp.matmul(ch.F, ch.stacked(theta)))
        if c is not None:
            c = c.result() if theta.ndim == 2 else c.result()[:, 0]
        return (None if G is None else G.result()), c

    def cross_gram(self, X: Any, Y: Any) -> Any:
        """Φ(X)Φ(Y)ᵀ, shape (n_X, n_Y)."""
        xp = check_data(X, self.d)
        check_data(Y, self.d, "Y")
        nx = X.shape[0]
        both = xp.concat([X, xp.astype(Y, X.dtype)], axis=0)
        out = BlockSum(xp.zeros((nx, Y.shape[0]), dtype=X.dtype, device=array_device(X)))
        for ch in self.chunks(both):
            out.add(ch.first_block, xp.matmul(ch.F[:, :nx, :], _transpose_blocks(ch.F[:, nx:, :])))
        return out.result()

    def matvec(self, X: Any, theta: Any) -> Any:
        """Φ(X)θ, shape (n,) or (n, k): the model's outputs at the rows of X."""
        if theta is None:
            raise ShapeError("θ is required")
        return self._gram_and_outputs(X, theta, gram=False)[1]

    def rmatvec(self, X: Any, a: Any) -> Any:
        """Φ(X)ᵀa, shape (p,) or (p, k) for a of shape (n,) or (n, k)."""
        xp = check_data(X, self.d)
        if a.shape[0] != X.shape[0] or a.ndim not in (1, 2):
            raise ShapeError(f"coefficients of shape {tuple(a.shape)} do not match n = {X.shape[0]}")
        A = xp.astype(a if a.ndim == 2 else a[:, None], X.dtype)
        parts = []
        for ch in self.chunks(X):
            Ps = xp.matmul(_transpose_blocks(ch.F), A[None, :, :])  # (nb, m, k)
            parts.append(xp.reshape(Ps, (Ps.shape[0] * Ps.shape[1], A.shape[1])))
        out = xp.concat(parts, axis=0)
        return out if a.ndim == 2 else out[:, 0]

    def vjp(self, X: Any, cotangent: Any) -> Any:
        """Vector–Jacobian product of X ↦ Φ(X): Σ_b (C_b ⊙ φ′(X V_bᵀ)) V_b, shape (n, d).

        Parameters
        ----------
        cotangent : callable
            ``cotangent(block) -> C_b`` of shape (n, m): the cotangent ∂L/∂Φ on that block's
            columns (it may use ``block.F``). φ′ is evaluated at the pre-activations X V_bᵀ.
        """
        xp = check_data(X, self.d)
        out = BlockSum(xp.zeros(X.shape, dtype=X.dtype, device=array_device(X)))
        for ch in self.chunks(X, derivative=True):
            Cs = xp.stack([cotangent(blk) for blk in ch.blocks()], axis=0) * ch.D
            out.add(ch.first_block, xp.matmul(Cs, ch.V))
        return out.result()

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
    """The random-features map x ↦ φ(Vx) ∈ R^p, streamed over blocks of a counter-based V.

    Parameters
    ----------
    activation : Activation or str
        φ (a registry name or a safe expression in ``z``).
    d, p : int
        Input dimension and number of features.
    seed : int
        Seed of V, in [0, 2**128) (the Philox key); V[i, j] is a pure function of (seed, i, j, d).
    chunk_rows : int, optional
        Rows of V processed together (rounded down to a multiple of :data:`BLOCK_ROWS`, at least
        one block). Default: :data:`~rftheory.blocksum.SUM_GROUP` blocks for numpy, :data:`DEVICE_CHUNK_BLOCKS` for
        CuPy. Affects speed and memory only — never the results. With numpy, memory of a pass is
        about (1 + ahead) chunks of V in the working dtype on the host (ahead = the chunks drawn
        in advance, ⌈threads/blocks per chunk⌉) plus 3·n·chunk_rows entries for Z, φ and φ′; at
        d = 3072 a default chunk of V is 201 MB in float32. With CuPy, one chunk of V on the
        device (1.6 GB at d = 3072 in float32), generated there; no host memory.
    v_cache_bytes : int
        If V (p·d entries in the working dtype) fits in this many bytes it is kept, per array
        namespace/device/dtype, after the first pass, so iterative methods do not redraw it every
        step. 0 (default) streams every time. The cache never changes results.
    threads : int
        Host threads that draw the blocks of V (V is a pure function of its indices, so any
        number gives the same V); the next chunks are drawn while the current one is in use. 0
        (default): one per available core. Unused on CuPy. Never changes results.

    Attributes
    ----------
    v_definition : str
        :data:`V_DEFINITION`, the name and version of the definition of V — record it with any
        stored number that depends on V.

    Notes
    -----
    All operations take data X of shape (n, d) in any array-API namespace and return arrays in
    that namespace, in X's dtype. V is defined in :mod:`rftheory.philox` (Philox4x64-10 counters,
    Box–Muller in float64, ``V = Z/√d``; |Z| ≤ 8.57, float64 within 2.3 ulps of the exact
    transform; see :func:`rftheory.philox.box_muller`). V is the same bits on numpy (any SIMD
    level) and CuPy; results computed from it (φ(VX) through numpy's ``exp``/``tanh``, BLAS
    sums) agree to the precision of the arithmetic, not bit for bit.

    On the host, drawing V costs more than the arithmetic it feeds once n is small: a pass does
    about 2n + 2n²/d flops per entry of V, while the generator gives ~25 M normals/s per core
    (``benchmarks/bench_rng.py`` on the shared 2-core development machine: ~3× slower than
    numpy's ziggurat, the price of one definition, in float64, on every device and dtype). Iterative methods should therefore cache V (``v_cache_bytes``)
    whenever it fits; on a GPU, V is generated on the device at a rate far above the GEMM's need,
    so no cache is needed there.

    Examples
    --------
    >>> import numpy as np
    >>> rf = RandomFeatures("tanh", d=3, p=5, seed=1)
    >>> V = rf.weights()
    >>> bool((RandomFeatures("tanh", d=3, p=2, seed=1).weights() == V[:2]).all())  # nested in p
    True
    >>> rf.v_definition
    'philox4x64-10+box-muller/2'
    """

    activation: Activation
    d: int
    p: int
    seed: int = 0
    chunk_rows: int | None = None
    v_cache_bytes: int = 0
    threads: int = 0
    _v_cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    v_definition: ClassVar[str] = V_DEFINITION

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation", get_activation(self.activation))
        for name in ("d", "p"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise RFTheoryError(f"{name} must be a positive integer, got {value!r}")
            object.__setattr__(self, name, int(value))
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) \
                or not 0 <= self.seed < 2**128:
            raise RFTheoryError(f"seed must be an integer in [0, 2**128), got {self.seed!r}")
        object.__setattr__(self, "seed", int(self.seed))
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
        """Write block ``b`` of V into ``out`` (float32 or float64, shape (rows, d))."""
        philox.standard_normal(self.seed, range(b * BLOCK_ROWS, b * BLOCK_ROWS + out.shape[0]),
                               self.d, scale_dim=self.d, out=out)

    def weights(self, xp: Any = None, dtype: Any = None, device: Any = None, *,
                like: Any = None) -> Any:
        """Materialise all of V, shape (p, d) — explicit, for small models and tests.

        With CuPy (``xp`` a CuPy namespace) V is generated on the device.

        Parameters
        ----------
        xp : module, optional
            Array namespace of the result, where nothing else says: default the namespace of
            ``like``, else numpy.
        dtype : dtype, optional
            Default ``like``'s dtype, else float64 (a float32 V is the float64 one rounded).
        device : object, optional
            Default ``like``'s device.
        like : array, optional
            An array whose namespace, floating dtype and device V takes (what it will be
            multiplied with).

        Returns
        -------
        array, shape (p, d)
            V in that namespace, dtype and device.

        Examples
        --------
        >>> import numpy as np
        >>> rf = RandomFeatures("relu", d=3, p=4, seed=0)
        >>> rf.weights(like=np.zeros(3, dtype=np.float32)).dtype
        dtype('float32')
        """
        if like is not None:
            lxp = namespace_of(like)
            xp = lxp if xp is None else xp
            if dtype is None and xp is lxp and xp.isdtype(like.dtype, "real floating"):
                dtype = like.dtype
            device = array_device(like) if device is None and xp is lxp else device
        xp = np if xp is None else xp
        dtype = xp.float64 if dtype is None else dtype
        if is_cupy_namespace(xp):
            with _on_device(device):
                V = xp.empty((self.p, self.d), dtype=_generated_dtype(dtype, xp))
                philox_cupy.cupy_fill(self.seed, 0, V, scale_dim=self.d)
            return V.astype(dtype, copy=False)
        V = philox.standard_normal(self.seed, self.p, self.d, scale_dim=self.d,
                                   out=np.empty((self.p, self.d), dtype=_generated_dtype(dtype, np)))
        return xp.asarray(V, dtype=dtype, device=device)

    def _blocks_per_chunk(self, xp: Any = np) -> int:
        if self.chunk_rows is not None:
            return max(1, self.chunk_rows // BLOCK_ROWS)
        # On a GPU each array operation costs a kernel launch and ~10–50 µs of host dispatch:
        # larger chunks keep the device busy with the products instead.
        return DEVICE_CHUNK_BLOCKS if is_cupy_namespace(xp) else SUM_GROUP

    def _plan(self, per: int) -> list[tuple[int, int]]:
        """Block ranges [b0, b1) of ``per`` whole blocks, then the partial last block alone."""
        full = self.p // BLOCK_ROWS
        plan = [(b0, min(b0 + per, full)) for b0 in range(0, full, per)]
        if self.p % BLOCK_ROWS:
            plan.append((full, full + 1))
        return plan

    def _host_chunks(self, per: int, dtype: Any = np.float64) -> Iterator[tuple[int, np.ndarray]]:
        """(first row, host stack (nb, m, d) in ``dtype``) of at most ``per`` blocks each, in order.

        Blocks are drawn by a pool of threads (numpy's Philox and ufuncs release the GIL while
        filling arrays), a few stacks ahead of the consumer.
        """
        plan = self._plan(per)

        def draw(b0: int, b1: int, submit: Any) -> tuple[np.ndarray, list]:
            rows = min(BLOCK_ROWS, self.p - b0 * BLOCK_ROWS)
            buf = np.empty((b1 - b0, rows, self.d), dtype=dtype)
            return buf, [submit(self._fill_block, b, buf[b - b0]) for b in range(b0, b1)]

        threads = self.threads or available_cores()
        if threads == 1 or self.p * self.d < THREADED_DRAW_MIN:
            for b0, b1 in plan:
                buf, _ = draw(b0, b1, lambda fn, *args: fn(*args))
                yield b0 * BLOCK_ROWS, buf
            return
        # Enough stacks in flight to keep every thread busy while the consumer works on one.
        ahead = -(-threads // per)
        with ThreadPoolExecutor(threads, thread_name_prefix="rftheory-V") as pool:
            pending: deque = deque()
            todo = iter(plan)
            for b0, b1 in itertools.islice(todo, ahead):
                pending.append((b0, draw(b0, b1, pool.submit)))
            while pending:
                b0, (buf, futures) = pending.popleft()
                for fut in futures:
                    fut.result()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append((nxt[0], draw(*nxt, pool.submit)))
                yield b0 * BLOCK_ROWS, buf

    def _device_chunks(self, xp: Any, dtype: Any, dev: Any, per: int) -> Iterator[tuple[int, Any]]:
        """(first row, CuPy stack (nb, m, d)) generated on the device by one kernel per chunk."""
        gen = _generated_dtype(dtype, xp)
        for b0, b1 in self._plan(per):
            rows = min(BLOCK_ROWS, self.p - b0 * BLOCK_ROWS)
            with _on_device(dev):
                Vs = xp.empty((b1 - b0, rows, self.d), dtype=gen)
                philox_cupy.cupy_fill(self.seed, b0 * BLOCK_ROWS, Vs, scale_dim=self.d)
            yield b0 * BLOCK_ROWS, (Vs if gen == dtype else xp.astype(Vs, dtype))

    def _assembled_host_chunks(self, xp: Any, dtype: Any, dev: Any,
                               per: int) -> Iterator[tuple[int, Any]]:
        """Host-drawn stacks moved to ``xp``/``dev``; chunks above SUM_GROUP blocks are assembled
        there (the host draws at most SUM_GROUP blocks at a time: bounded host memory)."""
        pieces: list[tuple[int, Any]] = []  # whole-block stacks waiting to fill one chunk

        def assemble() -> tuple[int, Any]:
            stack = pieces[0][1] if len(pieces) == 1 else xp.concat([s for _, s in pieces], axis=0)
            chunk = (pieces[0][0], stack)
            pieces.clear()
            return chunk

        for start, host in self._host_chunks(min(per, SUM_GROUP), _generated_dtype(dtype, np)):
            stack = xp.asarray(host, dtype=dtype, device=dev)
            if stack.shape[1] < BLOCK_ROWS:  # the partial last block: a chunk of its own
                if pieces:
                    yield assemble()
                pieces.append((start, stack))
                yield assemble()
                continue
            pieces.append((start, stack))
            if sum(s.shape[0] for _, s in pieces) >= per:
                yield assemble()
        if pieces:
            yield assemble()

    def weights_resident(self, xp: Any, dtype: Any, dev: Any) -> bool:
        return (self._cache_key(xp, dtype, dev) in self._v_cache
                or self.p * self.d * float_itemsize(dtype) <= self.v_cache_bytes)

    @staticmethod
    def _cache_key(xp: Any, dtype: Any, dev: Any) -> tuple[str, str, str]:
        # Memoised: str(dtype) costs ~20 µs, and every pass over V asks for the key.
        memo = (xp, type(dtype), dtype, type(dev), dev)
        try:
            return _CACHE_KEYS[memo]
        except TypeError:  # an unhashable device: no memo
            return (getattr(xp, "__name__", str(xp)), str(dev), str(dtype))
        except KeyError:
            key = _CACHE_KEYS[memo] = (getattr(xp, "__name__", str(xp)), str(dev), str(dtype))
            return key

    def _chunks(self, xp: Any, dtype: Any, dev: Any) -> Iterator[tuple[int, Any]]:
        """Yield (first row, V stack (nb, m, d)) in row order, from the cache when it is there."""
        key = self._cache_key(xp, dtype, dev)
        cached = self._v_cache.get(key)
        if cached is not None:
            yield from cached
            return
        keep = self.p * self.d * float_itemsize(dtype) <= self.v_cache_bytes
        per = self._blocks_per_chunk(xp)
        if is_cupy_namespace(xp):
            source = self._device_chunks(xp, dtype, dev, per)
        else:
            source = self._assembled_host_chunks(xp, dtype, dev, per)
        out: list[tuple[int, Any]] = []
        for chunk in source:
            if keep:
                out.append(chunk)
            yield chunk
        if keep:
            self._v_cache[key] = out


#: RandomFeatures._cache_key's memo: (namespace, dtype, device) -> key.
_CACHE_KEYS: dict[tuple, tuple[str, str, str]] = {}


def _generated_dtype(dtype: Any, xp: Any) -> Any:
    """The dtype V is generated in for a working ``dtype``: float32 stays, all else float64."""
    return xp.float32 if float_itemsize(dtype) == 4 else xp.float64


def _on_device(dev: Any) -> Any:
    """``with`` context making ``dev`` current (a CuPy Device is its own context manager)."""
    return dev if hasattr(dev, "__enter__") else contextlib.nullcontext()


def float_itemsize(dtype: Any) -> int:
    """Bytes of a float of ``dtype`` (4 for float32, else 8), memoised: str(dtype) is slow.

    Parameters
    ----------
    dtype : dtype of any array library
        A floating dtype (numpy, CuPy or any array-API namespace).

    Returns
    -------
    int
        4 for a 32-bit float, else 8.

    Examples
    --------
    >>> import numpy as np
    >>> float_itemsize(np.float32), float_itemsize(np.float64)
    (4, 8)
    """
    memo = (type(dtype), dtype)  # the type first: no comparison of dtypes across libraries
    try:
        return _ITEMSIZES[memo]
    except TypeError:  # unhashable
        return 4 if "32" in str(dtype) else 8
    except KeyError:
        size = _ITEMSIZES[memo] = 4 if "32" in str(dtype) else 8
        return size


#: float_itemsize's memo.
_ITEMSIZES: dict[tuple, int] = {}


#: Fraction of the memory available when a model is built that :func:`default_v_cache_bytes`
#: lets the V cache use. An iterative method may hold V in float64 and, for the matrix-free
#: products, in float32 too (1.5× the float64 size), so a quarter keeps both under 40 %.
V_CACHE_FRACTION = 0.25
#: Smallest default V cache (the earlier fixed default, 1 GiB), used when the available memory
#: cannot be read.
V_CACHE_FLOOR = 2**30


def available_memory_bytes() -> int | None:
    """Memory available to a new allocation now, in bytes (None where the platform does not say).

    The one memory probe of the package, :func:`rftheory.budget.available_memory`
    (``MemAvailable`` capped by a cgroup limit), as an integer.

    Returns
    -------
    int or None
        Bytes.
    """
    from .budget import available_memory

    available = available_memory()
    return None if available is None else int(available)


def default_v_cache_bytes(peak: Callable[[int], float] | None = None,
                          limit: float | None = None) -> int:
    """The default ``v_cache_bytes``, from the memory available now and the job's declared peak.

    Without ``peak``: :data:`V_CACHE_FRACTION` of the available memory. With ``peak`` (the job's
    declared peak bytes as a function of its V cache, e.g. from
    :func:`rftheory.pipeline.reconstruction_memory`): all of the available memory when the job's
    peak with that cache (V cached if it fits at all) is within ``limit``, else the fraction
    rule. So a job keeps V whenever its whole declared peak fits the memory limit, and never
    caches V into a peak that the limit would refuse: at d = 3072, n = 10, p = 10·dn (V =
    7.0 GiB) on a 24 GB machine with ~20 GB available, the fraction rule (a quarter) streamed V
    while the job's declared peak with V cached (10.6 GiB) was well within the limit.

    At least :data:`V_CACHE_FLOOR` (also the value when the available memory is unknown). The
    cache changes speed only, never results, so a value that depends on the machine's state is
    safe to default to.

    Parameters
    ----------
    peak : callable, optional
        ``peak(v_cache_bytes)``: the job's declared peak memory in bytes with that V cache.
    limit : float, optional
        The job's memory limit in bytes (default: :func:`rftheory.budget.memory_limit`'s).

    Returns
    -------
    int
        Bytes.

    Examples
    --------
    >>> default_v_cache_bytes() >= V_CACHE_FLOOR
    True
    >>> default_v_cache_bytes(lambda cache: 0.0) >= default_v_cache_bytes()   # any job fits
    True
    """
    available = available_memory_bytes()
    if available is None:
        return V_CACHE_FLOOR
    fallback = max(V_CACHE_FLOOR, int(V_CACHE_FRACTION * available))
    if peak is None:
        return fallback
    if limit is None:
        from .budget import memory_limit

        limit = memory_limit()[0]
    whole = max(V_CACHE_FLOOR, int(available))
    return whole if peak(whole) <= limit else fallback


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
        φ.
    weights : array, shape (p, d)
        W, in the namespace and on the device where the features will be computed. It is cast to
        the data's dtype per call.

    Notes
    -----
    Streams over the same row blocks of :data:`BLOCK_ROWS` as :class:`RandomFeatures` (16 blocks
    per chunk), so every operation (Gram, products, VJPs, the projection loss, reconstruction)
    applies unchanged.
    """

    activation: Activation
    weights: Any

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation", get_activation(self.activation))
        W = self.weights
        if getattr(W, "ndim", None) != 2 or W.shape[0] < 1 or W.shape[1] < 1:
            raise ShapeError(f"weights must be a non-empty 2-D array (p, d), got {getattr(W, 'shape', W)!r}")
        xp = namespace_of(W)
        if not bool(xp.all(xp.isfinite(W))):
            raise ShapeError("weights have non-finite entries")

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
        per = 16 * BLOCK_ROWS
        full = (self.p // BLOCK_ROWS) * BLOCK_ROWS
        for start in range(0, full, per):
            stop = min(start + per, full)
            yield start, xp.reshape(W[start:stop, :], ((stop - start) // BLOCK_ROWS, BLOCK_ROWS, self.d))
        if full < self.p:
            yield full, W[None, full:, :]

# -- memory, declared next to the code it describes (summed and checked by rftheory.budget) -----

def _ceil(x: float) -> float:
    return float(math.ceil(x)) if math.isfinite(x) else x


def stream_memory(n: float, d: float, p: float, itemsize: int = 8, *, cached: bool = False,
                  threads: int = 1, derivative: bool = False, gram: bool = False,
                  outputs: float = 0.0, kept: bool = False, fills_cache: bool = False) -> float:
    """Peak transient bytes of one pass of :meth:`FeatureMap.chunks` over V for n rows.

    From the structure of the stream (BLOCK_ROWS, SUM_GROUP, THREADED_DRAW_MIN) and of
    :class:`~rftheory.blocksum.BlockSum`: V's chunks drawn ahead by the generator threads plus the one in use and
    the previous one, unless V is cached (when the pass fills the cache its chunks *are* the
    cache, counted by the caller); Z, φ (and φ′) of the current and previous chunk and the
    activation's temporaries (``kept``: the caller holds φ, φ′ of all of p, counted there); one
    group of partial Gram matrices (``gram``); per-block outputs of two chunks (``outputs``
    columns).

    Parameters
    ----------
    n, d, p : float
        Rows, input dimension, features (floats: 1e300 is sized, not overflowed).
    itemsize : int
        Bytes per entry of the working dtype.
    cached, threads, derivative, gram, outputs, kept, fills_cache
        What the pass does, as above.

    Returns
    -------
    float
        Bytes.

    Examples
    --------
    >>> stream_memory(10, 20, 2000) < 2**20
    True
    """
    rows = min(p, SUM_GROUP * BLOCK_ROWS)
    pair = min(p, 2 * rows)
    blocks = _ceil(p / BLOCK_ROWS)
    peak = 0.0
    if not cached:
        threaded = threads > 1 and p * d >= THREADED_DRAW_MIN
        in_flight = (math.ceil(threads / math.ceil(rows / BLOCK_ROWS)) + 2) if threaded else 2
        if not fills_cache:
            peak += min(in_flight * rows, p) * d * itemsize
    temporaries = 1 + derivative
    if kept:
        peak += (1 + temporaries) * rows * n * itemsize
    else:
        peak += ((2 + derivative) * pair + temporaries * rows) * n * itemsize
    if gram:
        last = blocks % SUM_GROUP if math.isfinite(blocks) else 0.0
        peak += (max(SUM_GROUP if blocks >= SUM_GROUP else 0, 2 * last) + 1) * n * n * itemsize
    peak += 2 * math.ceil(rows / BLOCK_ROWS) * n * outputs * itemsize
    return peak


def features_memory(*, n: float, p: float, d: float, itemsize: int = 8,
                    threads: int | None = None) -> tuple[float, dict]:
    """Peak bytes of :meth:`RandomFeatures.features` (a materialised n × p Φ): its blocks while
    streaming, then the blocks and their concatenation.

    Parameters
    ----------
    n, p, d : float
        Points (rows of Φ), features (columns), input dimension.
    itemsize : int
        Bytes per entry of the working dtype.
    threads : int, optional
        Threads drawing V (default :func:`available_cores`).

    Returns
    -------
    peak : float
        Bytes.
    parts : dict of str to float
        Its named terms.

    Examples
    --------
    >>> features_memory(n=1000, p=10**6, d=100)[0] > 2 * 8e9
    True
    """
    threads = available_cores() if threads is None else max(1, int(threads))
    stream = stream_memory(n, d, p, itemsize, threads=threads, kept=True)
    phi = n * p * itemsize
    return (max(phi + stream, 2 * phi) + _BOOKKEEPING,
            {"Φ and its blocks": 2 * phi, "streamed chunks": stream})


#: Bookkeeping, the compiled activation and small arrays (~0.5 MiB measured on small runs).
BOOKKEEPING_BYTES = 2.0**19
_BOOKKEEPING = BOOKKEEPING_BYTES


#: Names that moved to :mod:`rftheory.fit` (one object per module), still importable from here.
_MOVED = {"TrainedModel": "fit", "train_min_norm": "fit", "train_memory": "fit"}


def __getattr__(name: str) -> Any:
    """The min-norm fit's names, where they were before :mod:`rftheory.fit` held them (lazily:
    :mod:`rftheory.fit` imports this module)."""
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(f"rftheory.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
