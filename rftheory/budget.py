"""Size guards: the peak memory and the work of the package's jobs, estimated before they start.

Every job of the package is sized by a few integers (d, n, p, n̂, the number of outputs k, the
steps allowed, the dtype) long before it allocates anything, so a request that cannot fit this
machine, or would run for days, can be refused in one line instead of after minutes of
allocation (``reconstruct --p 100000000000``, ``kernel --d 100000000``, ``--p-mult 1e300``).
This module turns the sizes into an :class:`Estimate` — peak bytes of arrays, floating-point
operations, Gaussian draws of V, and the seconds they take at measured rates — and the ``check_*``
functions compare it with the limits and raise :class:`~rftheory.errors.ResourceLimitError`:

===============================  =========================================================
:func:`check_train`              min-norm fit θ* = Φ⁺Y (streamed Gram, solve, Φᵀa, Φθ)
:func:`check_reconstruct`        training, then the reconstruction from (θ*, V)
:func:`check_kernel`             the kernel concentration measurement (``rftheory kernel``)
:func:`check_features`           a materialised Φ (n × p)
:func:`check_cell`               one sweep cell (``label_fit`` or ``reconstruct``)
===============================  =========================================================

The ``estimate_*`` functions return the estimate without checking it. Sizes may be floats
(``p = 1e300`` is estimated, not refused by an overflow); everything is computed in floating
point.

Limits
------
*Memory*: by default 80 % (:data:`MEMORY_FRACTION`) of the memory available now
(``MemAvailable`` of ``/proc/meminfo``, or the cgroup's remaining allowance when it is smaller,
or ``os.sysconf`` elsewhere). ``memory_limit=`` (bytes) or the environment variable
``RFTHEORY_MEMORY_LIMIT`` (``"12G"``, ``"800M"``, bytes) replaces it, but never beyond the
machine's total memory (or the cgroup's limit): what cannot fit the machine is always refused.
*Time*: by default one hour (:data:`DEFAULT_TIME_LIMIT`) at the rates :data:`FLOP_RATE` and
:data:`DRAW_RATE`; ``time_limit=`` (seconds; ``math.inf`` for none) or ``RFTHEORY_TIME_LIMIT``
(seconds, or ``inf``) replaces it.

Examples
--------
>>> est = estimate_reconstruct(d=100, n=20, p=20_000)
>>> est.peak_bytes < 2**30, est.flops > 1e12
(True, True)
>>> check_reconstruct(d=100, n=20, p=10**11, memory_limit=2**34)
Traceback (most recent call last):
...
rftheory.errors.ResourceLimitError: reconstruct (d = 100, n = 20, n̂ = 20, p = 1e+11, float64, varpro/cg) needs ~154 TiB of memory (kept blocks (CG) 153 TiB, training 745 GiB, ...), over the limit of 16 GiB (16 GiB set by memory_limit); ...

Notes
-----
*What is counted.* Peak memory counts the arrays the package allocates (numpy's own allocations,
as ``tracemalloc`` sees them): the chunks of V drawn ahead by the generator threads, the
pre-activations, φ and φ′ of the chunk in use and of the previous one (a consumer holds one
while the stream computes the next), the per-chunk partial Gram matrices, V when it is cached,
the blocks a loss evaluation keeps for its second pass, the n×n Gram and its factorisation, θ.
Not counted: the interpreter and libraries (~150–300 MB of RSS), LAPACK's workspace, sympy's
compilation, the mpmath recomputation of non-finite values. Work counts the matrix products
exactly (as the streamed code issues them), an allowance of :data:`ACTIVATION_FLOPS` per
evaluated φ (and as much again for φ′), LAPACK's ``eigh`` as 9 n³ and Cholesky as n³/3, and
the exact number of Gaussian draws.

*Accuracy, measured* (``tests/test_budget.py``, tracemalloc peaks of small runs on the
development machine): peak memory within a factor 2 of the measured peak (typically 0.8–1.4×);
Gaussian draws exact; matrix-product flops exact against an instrumented ``matmul``. Time is
the work at the constant rates below, so it is only as good as the rates are for the machine:
a factor of a few. The reconstruction's estimate is for the whole step budget (``max_steps``;
``lbfgs``: every step at the pool size, ``max_rounds`` selections; ``varpro``: every LM
iteration at 2 trial steps, CG at its iteration cap, see :func:`estimate_reconstruct`) — an
upper bound: runs that converge stop earlier (the README's d = 100, n = 20 runs used a median of
932–2684 of 20 000 steps). It models the method ``reconstruct`` runs by default unless told
another (``method=``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import os
from dataclasses import dataclass
from typing import Any, Mapping

from .errors import ResourceLimitError, RFTheoryError

__all__ = [
    "Estimate",
    "estimate_train",
    "estimate_reconstruct",
    "estimate_kernel",
    "estimate_features",
    "estimate_cell",
    "check",
    "check_train",
    "check_reconstruct",
    "check_kernel",
    "check_features",
    "check_cell",
    "available_memory",
    "format_bytes",
    "format_duration",
    "memory_limit",
    "time_limit",
    "varpro_solver",
    "FLOP_RATE",
    "DRAW_RATE",
    "LBFGS_EVALUATIONS",
    "VARPRO_EVALUATIONS",
    "VARPRO_PASS_SECONDS",
    "PRODUCT_BYTES_RATE",
    "DEFAULT_TIME_LIMIT",
    "MEMORY_FRACTION",
]

#: Sustained rate of the package's streamed products (flop/s) on the 2-core development machine,
#: the kind CI runs on: 19.2–20.2 GFLOP/s measured for float32 at CIFAR scale by
#: ``benchmarks/bench_features.py --cifar`` and ``benchmarks/bench_projection_step.py``
#: (README, "Speed"); float64 BLAS runs at half the float32 rate on the same cores.
FLOP_RATE = {"float32": 2.0e10, "float64": 1.0e10}
#: Gaussian draws of V per second with both cores (README, "Speed": ~140 M normals/s;
#: ``benchmarks/bench_features.py`` prints this machine's figure).
DRAW_RATE = 1.4e8
#: Default time limit (seconds).
DEFAULT_TIME_LIMIT = 3600.0
#: Default memory limit as a fraction of the memory available when the check runs.
MEMORY_FRACTION = 0.8
#: Loss evaluations per L-BFGS step (its line search; 1.1 is typical).
LBFGS_EVALUATIONS = 1.1
#: Trial steps (one solve and one loss evaluation each) per accepted LM iteration of
#: ``method="varpro"``, rejected trials, each run's first evaluation and the exchanges'
#: single-row runs included: 1.06–1.72 measured (``benchmarks/bench_budget.py``, d = 10–3072,
#: n = 4–16); 2 bounds them.
VARPRO_EVALUATIONS = 2.0
#: Seconds of Python and small-array work per pass over V (or over the kept blocks) of
#: ``method="varpro"``, beyond its flops: what decides its steps at small sizes (~1 ms measured
#: per pass at d ≤ 80, p ≤ 4000 on the 2-core machine under a load that halves its speed; half
#: of it quiet, the conditions FLOP_RATE is measured in).
VARPRO_PASS_SECONDS = 5e-4
#: Bytes per second at which the CG products of ``method="varpro"`` stream their float32 blocks
#: (V twice, φ′ and φ per product). With only n̂ columns these GEMMs are bound by memory
#: traffic, not flops, below n̂ ≈ 10: measured 1.8 GB/s effective at d = 3072, n̂ = 4 and 10
#: (``benchmarks/bench_budget.py --varpro --large``) under a load that halves the machine's
#: speed; twice that quiet. A product takes the longer of its flops and its traffic.
PRODUCT_BYTES_RATE = 4e9
#: Allowance (flops per element) for one evaluation of φ; φ′ costs as much again. The compiled
#: programs of the registry cost 1.25–20 ns per element (``benchmarks/bench_activation.py``),
#: i.e. ~10–200 flops at the rates above; 30 is their order of magnitude.
ACTIVATION_FLOPS = 30.0

# The streaming constants of rftheory.features, repeated so that this module imports nothing
# heavy (it runs before a command has decided to compute). tests/test_budget.py checks that they
# agree with features.py.
_BLOCK_ROWS = 1024
_SUM_GROUP = 16
_THREADED_DRAW_MIN = 2**21
_KEEP_BLOCKS_BYTES = 2**30      # rftheory.projection.KEEP_BLOCKS_BYTES
_KERNEL_ORDER = 64              # rftheory.kernel.DEFAULT_ORDER
_RECONSTRUCT_MAX_STEPS = 20000  # rftheory.reconstruct.reconstruct's default
_METHODS = ("varpro", "lbfgs")  # rftheory.reconstruct.METHODS
_LBFGS_MAX_ROUNDS = 10          # reconstruct's max_rounds for method="lbfgs"
_VARPRO_MAX_ROUNDS = 1000       # ... and for method="varpro"
_EIGH_FLOPS = 9.0               # × n³: LAPACK syevd with eigenvectors
_EIGVALSH_FLOPS = 4.0 / 3.0     # × n³: tridiagonal reduction, eigenvalues only
_CHOLESKY_FLOPS = 1.0 / 3.0     # × n³
#: Bookkeeping, the compiled activation and small arrays (~0.5 MiB measured on small runs).
_OVERHEAD = 2.0**19


@dataclass(frozen=True)
class Estimate:
    """Peak memory and work of one job, from its sizes alone.

    Attributes
    ----------
    job : str
        What was estimated, with its sizes (used in messages).
    peak_bytes : float
        Peak bytes of the arrays the job allocates (see the module Notes for what is counted).
    flops : float
        Floating-point operations.
    draws : float
        Gaussian draws of V.
    dtype : str
        ``"float64"`` or ``"float32"``: selects the flop rate.
    parts : tuple of (str, float)
        The largest terms of ``peak_bytes``, largest first, for messages.
    overhead_seconds : float
        Time that is neither arithmetic nor drawing (e.g. a sweep's per-cell bookkeeping, the
        memory-bound wait of varpro's CG products).
    float32_flops : float
        The part of ``flops`` that runs in float32 whatever ``dtype`` is (the matrix-free
        products of ``reconstruct(method="varpro")``'s CG solver), timed at the float32 rate.
    """

    job: str
    peak_bytes: float
    flops: float
    draws: float
    dtype: str = "float64"
    parts: tuple[tuple[str, float], ...] = ()
    overhead_seconds: float = 0.0
    float32_flops: float = 0.0

    @property
    def seconds(self) -> float:
        """Estimated time at :data:`FLOP_RATE` and :data:`DRAW_RATE` (drawing and arithmetic
        share the same cores, so the two times add), plus ``overhead_seconds``."""
        fast = min(self.float32_flops, self.flops)
        return ((self.flops - fast) / FLOP_RATE[self.dtype] + fast / FLOP_RATE["float32"]
                + self.draws / DRAW_RATE + self.overhead_seconds)

    def describe(self) -> str:
        """One line: memory (with its main parts), work and time."""
        parts = ", ".join(f"{name} {_bytes(size)}" for name, size in self.parts[:3])
        return (f"{self.job}: ~{_bytes(self.peak_bytes)} of memory"
                + (f" ({parts})" if parts else "")
                + f", {self.flops:.2g} flops and {self.draws:.2g} Gaussian draws, "
                  f"~{_duration(self.seconds)}")


# ---------------------------------------------------------------------------------------------
# Formatting and validation
# ---------------------------------------------------------------------------------------------

def _bytes(value: float) -> str:
    """A byte count for messages, in binary units to 3 significant digits.

    Parameters
    ----------
    value : float
        Bytes (may be infinite).

    Returns
    -------
    str
        E.g. ``"1.5 GiB"``, ``"512 B"``, or ``"an unbounded amount"`` for a non-finite value.

    Examples
    --------
    >>> format_bytes(1.5 * 2**30), format_bytes(512), format_bytes(float("inf"))
    ('1.5 GiB', '512 B', 'an unbounded amount')
    """
    if not math.isfinite(value):
        return "an unbounded amount"
    for unit, size in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30),
                       ("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def _duration(seconds: float) -> str:
    """A duration for messages, in the largest unit it reaches (s, min, h, days, years).

    Parameters
    ----------
    seconds : float
        The duration in seconds (may be infinite).

    Returns
    -------
    str
        E.g. ``"2 h"``, ``"0.5 s"``, or ``"forever"`` for a non-finite value.

    Examples
    --------
    >>> format_duration(7200), format_duration(0.5), format_duration(float("inf"))
    ('2 h', '0.5 s', 'forever')
    """
    if not math.isfinite(seconds):
        return "forever"
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} s"


# Public names of the formatters (messages of other modules use the same units); a plain
# comment, so that the docs show the functions' own docstrings.
format_bytes = _bytes
format_duration = _duration


def _size(name: str, value: Any, minimum: float = 1) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise RFTheoryError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if math.isnan(value) or value < minimum:
        raise RFTheoryError(f"{name} must be >= {minimum:g}, got {value!r}")
    return value


def _itemsize(dtype: Any) -> tuple[str, int]:
    name = str(getattr(dtype, "name", dtype))
    if "float32" in name:
        return "float32", 4
    if "float64" in name:
        return "float64", 8
    raise RFTheoryError(f"dtype must be float64 or float32, got {dtype!r}")


def _show(value: float) -> str:
    return f"{int(value)}" if value < 1e9 and value == int(value) else f"{value:.3g}"


# ---------------------------------------------------------------------------------------------
# The streamed pass over V (rftheory.features) — the building block of every job
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Pass:
    peak: float        # transient bytes while the pass runs (V drawn, chunks, partial sums)
    flops: float
    draws: float


def _chunk_rows(p: float) -> float:
    """Rows of V per chunk (numpy: SUM_GROUP blocks; fewer when p is smaller)."""
    return min(p, _SUM_GROUP * _BLOCK_ROWS)


def _stream(n: float, d: float, p: float, itemsize: int, *, cached: bool, threads: int,
            derivative: bool = False, gram: bool = False, outputs: float = 0.0,
            kept: bool = False, fills_cache: bool = False) -> _Pass:
    """One pass over V computing φ (and φ′) of n rows, with a Gram and/or k outputs per block.

    Memory, from the structure of ``FeatureMap.chunks`` and ``BlockSum``:

    * V: unless it is cached, the chunks the generator threads draw ahead plus the one in use and
      the previous one (the consumer still holds it while the next is made), in the working
      dtype (the generator writes each chunk in it); when the pass fills a cache the drawn
      chunks *are* the cache (counted with it);
    * pre-activations Z, φ (and φ′) of the current and the previous chunk (at most p rows
      together), and temporaries of the compiled activation (one chunk, 1 array for φ, 2 for
      φ and φ′); with ``kept`` φ and φ′ are held for the whole of p by the caller (counted
      there) and only Z and the temporaries are the pass's own;
    * the partial Gram matrices: one group of SUM_GROUP blocks at a time, and for an incomplete
      last group its pending blocks and their concatenation;
    * per-block outputs (Φθ, Φᵀa parts) of two chunks.
    """
    rows = _chunk_rows(p)
    pair = min(p, 2 * rows)
    blocks = math.ceil(p / _BLOCK_ROWS)
    peak = 0.0
    draws = 0.0
    if not cached:
        threaded = threads > 1 and p * d >= _THREADED_DRAW_MIN
        in_flight = (math.ceil(threads / math.ceil(rows / _BLOCK_ROWS)) + 2) if threaded else 2
        if not fills_cache:
            # drawn on the host directly in the working dtype (rftheory.philox writes each chunk
            # in it; its float64 temporaries are batches of a few thousand words)
            peak += min(in_flight * rows, p) * d * itemsize
        draws = p * d
    temporaries = 1 + derivative
    if kept:
        peak += (1 + temporaries) * rows * n * itemsize  # Z and temporaries of one chunk
    else:
        peak += ((2 + derivative) * pair + temporaries * rows) * n * itemsize
    if gram:
        last = blocks % _SUM_GROUP
        peak += (max(_SUM_GROUP if blocks >= _SUM_GROUP else 0, 2 * last) + 1) * n * n * itemsize
    peak += 2 * math.ceil(rows / _BLOCK_ROWS) * n * outputs * itemsize
    flops = 2 * n * d * p + ACTIVATION_FLOPS * n * p * (1 + derivative)
    if gram:
        flops += 2 * n * n * p
    flops += 2 * n * p * outputs
    return _Pass(peak, flops, draws)


def _threads(threads: int | None) -> int:
    if threads is not None:
        return max(1, int(threads))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _v_cached(p: float, d: float, itemsize: int, v_cache_bytes: float) -> bool:
    return p * d * itemsize <= v_cache_bytes


# ---------------------------------------------------------------------------------------------
# Jobs
# ---------------------------------------------------------------------------------------------

def _train_parts(n: float, d: float, p: float, k: float, itemsize: int, cached: bool,
                 threads: int) -> tuple[float, float, float, dict[str, float]]:
    """(transient peak beyond V's cache and θ, flops, draws, named terms) of train_min_norm."""
    first = _stream(n, d, p, itemsize, cached=False, threads=threads, gram=True,
                    fills_cache=cached)
    later = _stream(n, d, p, itemsize, cached=cached, threads=threads, outputs=k)
    theta = p * k * itemsize
    solve = 3 * n * n * itemsize + 2 * n * k * itemsize
    # rmatvec keeps its per-chunk parts (p·k) and concatenates them into θ
    data = n * d * 8.0  # the training inputs X (host float64) and their labels
    transient = max(first.peak, later.peak + theta, solve + n * n * itemsize) + data
    flops = first.flops + 2 * later.flops + (_EIGH_FLOPS + _CHOLESKY_FLOPS) * n**3
    draws = first.draws + 2 * later.draws
    parts = {"streamed chunks": max(first.peak, later.peak), "θ": theta, "Gram and solve": solve,
             "data X": data}
    return transient, flops, draws, parts


def estimate_train(*, d: float, n: float, p: float, k: float = 1, dtype: Any = "float64",
                   v_cache_bytes: float = 0, threads: int | None = None) -> Estimate:
    """Estimate :func:`rftheory.features.train_min_norm` with a streamed :class:`RandomFeatures`.

    Parameters
    ----------
    d, n, p : number
        Input dimension, training points, random features.
    k : number
        Outputs (columns of Y).
    dtype : str or numpy dtype
        Working dtype of the data (``float64`` or ``float32``).
    v_cache_bytes : number
        The model's ``v_cache_bytes``: V (p·d entries) is kept after the first pass when it fits.
    threads : int, optional
        Threads drawing V (default: the cores this process may use).

    Returns
    -------
    Estimate
        Peak bytes, flops and Gaussian draws of the fit (``dtype`` sets the flop rate).

    Examples
    --------
    >>> est = estimate_train(d=20, n=10, p=2000)
    >>> est.draws == 3 * 2000 * 20  # three passes over V (Gram, Φᵀa, Φθ), nothing cached
    True
    """
    d, n, p, k = (_size(name, v) for name, v in (("d", d), ("n", n), ("p", p), ("k", k)))
    name, itemsize = _itemsize(dtype)
    cached = _v_cached(p, d, itemsize, _size("v_cache_bytes", v_cache_bytes, 0))
    transient, flops, draws, parts = _train_parts(n, d, p, k, itemsize, cached, _threads(threads))
    v_bytes = p * d * itemsize if cached else 0.0
    if cached:
        parts["V cached"] = v_bytes
        draws = p * d  # drawn once, by the first pass
    return Estimate(f"train (d = {_show(d)}, n = {_show(n)}, p = {_show(p)}, {name})",
                    v_bytes + transient + p * k * itemsize + _OVERHEAD, flops, draws, name,
                    _sorted(parts))


def _sorted(parts: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(((k, v) for k, v in parts.items() if v > 0), key=lambda kv: -kv[1]))


def _pool_size(n_hat: float, p: float, oversample: float) -> float:
    return min(p, max(n_hat, math.ceil(oversample * n_hat)))


def _loss_evaluation(m: float, d: float, p: float, k: float, itemsize: int, resident: bool,
                     threads: int) -> tuple[float, float, float]:
    """(peak, flops, draws) of one projection_loss with gradient for m candidate rows.

    The first pass keeps φ, φ′ (and V when it is not cached) of all of p for the second when
    they take at most KEEP_BLOCKS_BYTES; otherwise the second pass streams again, with φ′.
    """
    rows = _chunk_rows(p)
    blocks = math.ceil(rows / _BLOCK_ROWS)
    kept = 2 * m * p * itemsize + (0 if resident else p * d * itemsize)
    keep = kept <= _KEEP_BLOCKS_BYTES
    first = _stream(m, d, p, itemsize, cached=resident, threads=threads, derivative=keep,
                    gram=True, outputs=k, kept=keep)
    # second pass: the residual R (rows × k), the cotangent φ′ ⊙ Rᵀ (m × rows) and the
    # gradient's per-block parts (m × d)
    second_extra = (2 * m * rows + 2 * blocks * m * d + 2 * rows * k) * itemsize
    second_flops = 2 * m * p * k + m * p * k + 2 * m * p * d
    if keep:
        peak = max(first.peak, second_extra) + kept
        draws = first.draws
    else:
        again = _stream(m, d, p, itemsize, cached=resident, threads=threads, derivative=True)
        peak = max(first.peak, again.peak + second_extra)
        second_flops += again.flops
        draws = first.draws + again.draws
    peak += 3 * m * m * itemsize  # the Gram solve
    return peak, first.flops + second_flops + _CHOLESKY_FLOPS * m**3, draws


def _selection(pool: float, n_hat: float, d: float, p: float, k: float, itemsize: int,
               resident: bool, threads: int) -> tuple[float, float, float]:
    """(peak, flops, draws) of one backward elimination from the pool to n̂ rows."""
    stream = _stream(pool, d, p, itemsize, cached=resident, threads=threads, gram=True, outputs=k)
    # each removal solves a least-squares problem for every remaining candidate: Σ s·4(s−1)³
    removals = max(0.0, pool - n_hat)
    s_hi, s_lo = pool, n_hat + 1
    lstsq = 4.0 * (s_hi**5 - s_lo**5) / 5.0 if removals else 0.0
    return stream.peak + 3 * pool * pool * 8.0, stream.flops + lstsq, stream.draws


@functools.lru_cache(maxsize=1)
def _default_method() -> str:
    """``reconstruct``'s default ``method`` (read from its signature, so it follows the code)."""
    import inspect

    from .reconstruct import reconstruct

    return str(inspect.signature(reconstruct).parameters["method"].default)


def varpro_solver(*, d: float, p: float, n_hat: float, solver: str = "auto") -> str:
    """The linear solver ``reconstruct(method="varpro", solver=solver)`` uses for n̂ candidates.

    It asks :func:`rftheory.varpro.Problem.dense_for` itself (``"auto"``: the dense
    Gauss–Newton matrix when n̂d ≤ ``rftheory.varpro.DENSE_MAX_UNKNOWNS`` or
    max(p, n̂d)·(n̂d)² ≤ ``rftheory.varpro.DENSE_FLOPS``, else matrix-free CG), so the estimate
    switches where the attack does.

    Parameters
    ----------
    d, p, n_hat : number
        Input dimension, random features, candidates.
    solver : {"auto", "dense", "cg"}
        As in :func:`rftheory.reconstruct.reconstruct`.

    Returns
    -------
    str
        ``"dense"`` or ``"cg"``.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``solver`` is not one of :data:`rftheory.varpro.SOLVERS`.

    Examples
    --------
    >>> varpro_solver(d=20, p=4000, n_hat=10), varpro_solver(d=3072, p=30720, n_hat=10)
    ('dense', 'cg')
    """
    from types import SimpleNamespace

    from . import varpro

    if solver not in varpro.SOLVERS:
        raise RFTheoryError(f"unknown solver {solver!r}; choose one of {', '.join(varpro.SOLVERS)}")
    probe = SimpleNamespace(solver=solver, d=float(d), p=float(p))
    return "dense" if varpro.Problem.dense_for(probe, float(n_hat)) else "cg"  # type: ignore[arg-type]


def _cg_iterations(m: float) -> float:
    """Most CG iterations of one LM trial step: ``max_iter`` of rftheory.varpro._solve_step."""
    return max(20.0, 2.0 * m)


@dataclass(frozen=True)
class _Work:
    peak: float
    flops: float      # all of them, float32_flops included
    flops32: float    # the float32 matrix-free products
    draws: float
    passes: float     # passes over V (or over the kept blocks): each pays VARPRO_PASS_SECONDS
    waiting: float = 0.0  # seconds the products wait for memory beyond their flops


def _loss_passes(m: float, d: float, p: float, resident: bool) -> float:
    """Passes of one loss evaluation with gradient (rftheory.varpro.loss_passes on the host)."""
    return 1.0 if 2 * m * p * 8 + (0.0 if resident else p * d * 8) <= _KEEP_BLOCKS_BYTES else 2.0


def _lm_iteration(m: float, d: float, p: float, k: float, resident: bool, threads: int,
                  dense: bool, trials: float) -> tuple[_Work, dict[str, float]]:
    """One accepted LM iteration of rftheory.varpro for m candidates (float64 throughout but the
    products), with ``trials`` trial steps (each one solve and one loss evaluation)."""
    itemsize = 8
    md = m * d
    rows = _chunk_rows(p)
    chunk_blocks = math.ceil(rows / _BLOCK_ROWS)
    ev_peak, ev_flops, ev_draws = _loss_evaluation(m, d, p, k, itemsize, resident, threads)
    # Curvature pass (Problem.linearise): φ, φ′, the Gram G and the Kronecker traces Ctr.
    curv = _stream(m, d, p, itemsize, cached=resident, threads=threads, derivative=True,
                   gram=True, kept=not dense)
    flops = curv.flops + 2 * m * m * p + m * p + p * d
    flops32 = 0.0
    parts: dict[str, float] = {"loss evaluation": ev_peak}
    if dense:
        # E = φ′ ⊙ V (and its transposed copy) per chunk, M = EᵀE and N = ΦE summed per group
        pass_extra = 2 * rows * md * itemsize + (chunk_blocks + 2) * (md * md + m * md) * itemsize
        flops += 2 * p * md * md + 2 * m * md * p + md * p
        # host: K = M − NᵀG⁺N, the tangent projections, H and its symmetrisation
        flops += 2 * m * md * md + 16 * md * md + (_EIGH_FLOPS + 4) * m**3 + 4 * m * m * md
        host = 6 * md * md * itemsize
        # each trial: H + λS, its Cholesky factor, the solve and the predicted decrease
        trial = _CHOLESKY_FLOPS * md**3 + 5 * md * md
        peak = max(curv.peak + pass_extra, host, 3 * md * md * itemsize + ev_peak)
        parts["Gauss–Newton matrix"] = max(host, 3 * md * md * itemsize)
        passes = 1 + trials * _loss_passes(m, d, p, resident)
        waiting = 0.0
    else:
        # the blocks kept for the products: V (unless cached), φ, φ′ in float64 from the pass,
        # then their float32 copies (Problem._product), alive through every trial
        kept64 = 2 * m * p * itemsize + (0.0 if resident else p * d * itemsize)
        kept32 = (p * d + 2 * m * p) * 4
        flops += p * d + 2 * m * p  # the casts
        iterations = _cg_iterations(m)
        product32 = 4 * p * d * m + 8 * k * m * p + 3 * m * p
        traffic = (2 * p * d + 4 * m * p) * 4 / PRODUCT_BYTES_RATE - product32 / FLOP_RATE["float32"]
        product_host = (_EIGH_FLOPS + _CHOLESKY_FLOPS) * m**3 + 4 * m * m * k + 8 * md
        # each trial: ≤ max_iter products and preconditioner solves, one more product for the
        # predicted decrease, the preconditioner's Cholesky factor
        flops32 = trials * (iterations + 1) * product32
        trial = ((iterations + 1) * product_host + iterations * (2 * m * m * d + 6 * md)
                 + _CHOLESKY_FLOPS * m**3)
        sweep = (k * p + 4 * rows * m) * 4  # the first sweep's outputs y, S, Y of a chunk
        peak = max(curv.peak + kept64 + kept32, kept32 + sweep, kept32 + ev_peak)
        parts["kept blocks (CG)"] = kept64 + kept32
        passes = 1 + trials * (_loss_passes(m, d, p, resident) + iterations + 1)
        waiting = trials * (iterations + 1) * max(0.0, traffic)
    flops += trials * (trial + ev_flops) + flops32
    draws = curv.draws + trials * ev_draws
    return _Work(peak, flops, flops32, draws, passes, waiting), parts


@functools.lru_cache(maxsize=1)
def _exchange_sizes() -> tuple[float, float, float]:
    """(batch, screened points, refined points) of rftheory.varpro's exchange, from its code."""
    import inspect

    from . import varpro

    batch = float(inspect.signature(varpro._screen).parameters["batch"].default)
    return batch, float(varpro.EXCHANGE_SCREEN), float(varpro.EXCHANGE_TOP)


def _exchange(m: float, d: float, p: float, k: float, resident: bool, threads: int) -> _Work:
    """One grow/replace exchange of rftheory.varpro (its LM iterations are counted as steps):
    the leave-one-out pass, the loss and residual of the rows, the screen of EXCHANGE_SCREEN
    random points in batches, the start of the top candidates' LM runs."""
    itemsize = 8
    batch, screen, top = _exchange_sizes()
    rows = m + 1
    loo = _stream(rows, d, p, itemsize, cached=resident, threads=threads, gram=True, outputs=k)
    loss = _stream(m, d, p, itemsize, cached=resident, threads=threads, gram=True, outputs=k)
    resid = _stream(m, d, p, itemsize, cached=resident, threads=threads, outputs=k)
    batches = math.ceil(screen / batch)
    one = _stream(m + batch, d, p, itemsize, cached=resident, threads=threads, outputs=k)
    screen_flops = batches * (one.flops + 2 * m * (m + batch) * p + 2 * batch * p)
    ev_peak, ev_flops, ev_draws = _loss_evaluation(rows, d, p, k, itemsize, resident, threads)
    flops = (2 * loo.flops + loss.flops + resid.flops + screen_flops + top * ev_flops
             + 3 * _EIGH_FLOPS * rows**3)
    draws = 2 * loo.draws + loss.draws + resid.draws + batches * one.draws + top * ev_draws
    peak = max(loo.peak, one.peak + 3 * (m + batch) ** 2 * itemsize, ev_peak)
    passes = 4 + batches + top * _loss_passes(rows, d, p, resident)
    return _Work(peak, flops, 0.0, draws, passes)


def estimate_reconstruct(*, d: float, n: float, p: float, n_hat: float | None = None,
                         k: float = 1, method: str | None = None, solver: str = "auto",
                         max_steps: float = _RECONSTRUCT_MAX_STEPS,
                         max_rounds: float | None = None, oversample: float = 2.0,
                         memory: float = 20, dtype: Any = "float64",
                         v_cache_bytes: float = 2**30, evaluations_per_step: float | None = None,
                         threads: int | None = None, include_training: bool = True) -> Estimate:
    """Estimate training plus :func:`rftheory.reconstruct.reconstruct` (the whole step budget).

    Parameters
    ----------
    d, n, p : number
        Input dimension, training points, random features.
    n_hat : number, optional
        Candidates (default n).
    k : number
        Outputs of the model.
    method : {"varpro", "lbfgs"}, optional
        The reconstruction method (default: ``reconstruct``'s own default, read from its
        signature — ``"varpro"`` today).
    solver : {"auto", "dense", "cg"}
        ``"varpro"`` only, as in ``reconstruct``: the LM system's solver, chosen by
        :func:`varpro_solver` (the attack's own rule).
    max_steps, max_rounds : number
        As in :func:`rftheory.reconstruct.reconstruct` (``max_rounds`` default: 10 for
        ``"lbfgs"``, 1000 for ``"varpro"``, as there).
    oversample, memory
        ``"lbfgs"`` only, as in ``reconstruct`` (the pool has ⌈oversample·n̂⌉ rows, capped at
        p; L-BFGS keeps ``memory`` pairs of vectors).
    dtype : str or numpy dtype
        Working dtype of the training (``float64``, the default, or ``float32``);
        ``"varpro"`` works in float64 (its CG products in float32) whatever it is.
    v_cache_bytes : number
        V is cached when p·d entries fit (the CLI's ``--v-cache-mb``, 1 GiB by default).
    evaluations_per_step : float, optional
        Loss evaluations per step: L-BFGS's line search (default :data:`LBFGS_EVALUATIONS`),
        or LM trial steps per accepted iteration, each one solve and one evaluation, rejected
        trials and the exchanges' single-row runs included (default
        :data:`VARPRO_EVALUATIONS`).
    threads : int, optional
        Threads drawing V (default: the cores this process may use).
    include_training : bool
        Also count the min-norm fit that produces θ* (the CLI and the sweep cell both do).

    Returns
    -------
    Estimate
        Work for ``max_steps`` steps: an upper bound for runs that stop at the tolerance.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If a size is not positive, or ``method`` or ``solver`` is unknown.

    Notes
    -----
    *lbfgs*: every step one loss evaluation (with gradient) of the whole pool
    (``evaluations_per_step`` of them), plus ``max_rounds`` backward eliminations from the pool
    to n̂ rows.

    *varpro* (:mod:`rftheory.varpro`, m = n̂ rows, counted from the code): every accepted LM
    iteration is one curvature pass over V (φ, φ′, the Gram matrix, the Kronecker traces) and
    ``evaluations_per_step`` trial steps, each a solve and a loss evaluation with gradient.
    With the *dense* solver the pass also forms M = EᵀE and N = ΦE (2p(md)² + 2pm²d flops),
    the host forms H (2m(md)² + O((md)²)) and each trial factorises it ((md)³/3); the dense H
    and its factor ((md)² float64 each) are counted in memory. With *cg* the pass keeps φ, φ′
    (and V unless cached) and their float32 copies for the whole of p; each trial runs at most
    ``max_iter = max(20, 2m)`` CG iterations plus one product for the predicted decrease, each
    product two float32 GEMMs with V (4pdm + 8pmk flops at the float32 rate) — the bound, where
    CG often stops earlier at its relative residual. Rounds: at most min(``max_rounds``,
    ⌈max_steps/STALL_WINDOW⌉) LM runs (a run that stalls has made more than STALL_WINDOW
    iterations), each one more evaluation, and one exchange every EXCHANGE_EVERY rounds (its
    leave-one-out pass, the screen of EXCHANGE_SCREEN points in batches of 256, the starts of
    its LM runs). The solver switches exactly where the attack's does (:func:`varpro_solver`).

    Time beyond the flops: :data:`VARPRO_PASS_SECONDS` per pass over V or over the kept blocks
    (what decides tiny problems), and for each CG product the excess of its memory traffic
    (2pd + 4pm float32 words at :data:`PRODUCT_BYTES_RATE`) over its flops — with n̂ ≲ 10
    columns those GEMMs are bound by memory, not arithmetic.

    *Accuracy, measured* (``python benchmarks/bench_budget.py --varpro --large``, relu+tanh,
    3–200 steps per size, on the 2 free cores of the development machine, 2026-12-01): trial
    steps per accepted iteration 1.07–1.62 (the default 2 bounds them); CG products per trial
    5.9–23.8 of the bound 21–33; estimated over measured seconds per step 1.03 (d = 10, n = 10,
    p = 100, dense), 1.41 (d = 20, n = 10, p = 4000, dense), 1.81 (same, cg), 2.19 (d = 80,
    n = 16, p = 1280), 3.87 (p = 12 800), 1.80 (d = 3072, n = 4, p = 12 288), 1.64 (d = 3072,
    n = 10, p = 30 720): an upper bound within a factor of a few, as for the other jobs. On a
    loaded machine the measured times grow (the ratios were 0.69–2.69 at about half speed), so
    there the estimate is not a bound. Memory (``tests/test_budget.py``, tracemalloc): estimate
    over measured peak 0.90–1.21 for 3-step runs (CG blocks, V cached or streamed), 0.94 with
    the dense H at n̂d = 800, 1.04 for an 80-step run whose exchange screen sets the peak.
    Flops of the streamed products over their instrumented count, given the run's own trial
    count (d = 20, n = 10, p = 4000, 40 steps): 1.11 dense, 2.62 cg (CG priced at its cap).

    Examples
    --------
    >>> small = estimate_reconstruct(d=20, n=10, p=2000, method="lbfgs")
    >>> large = estimate_reconstruct(d=20, n=10, p=2000, method="lbfgs", max_steps=40000)
    >>> 1.9 < large.flops / small.flops < 2.0
    True

    The default ``"varpro"`` pays for its Gauss–Newton curvature (dense here: n̂d = 200):

    >>> vp = estimate_reconstruct(d=20, n=10, p=2000, method="varpro")
    >>> vp.flops > 5 * small.flops
    True
    >>> big = estimate_reconstruct(d=3072, n=10, p=30720, max_steps=3000, v_cache_bytes=2**33)
    >>> big.seconds > 3600  # the headline's p = dn cell: CG products dominate
    True
    """
    d, n, p, k = (_size(name, v) for name, v in (("d", d), ("n", n), ("p", p), ("k", k)))
    n_hat = n if n_hat is None else _size("n_hat", n_hat)
    method = _default_method() if method is None else method
    if method not in _METHODS:
        raise RFTheoryError(f"unknown method {method!r}; choose one of {', '.join(_METHODS)}")
    steps = _size("max_steps", max_steps)
    if max_rounds is None:
        max_rounds = _LBFGS_MAX_ROUNDS if method == "lbfgs" else _VARPRO_MAX_ROUNDS
    rounds = _size("max_rounds", max_rounds)
    oversample = _size("oversample", oversample, 1)
    if evaluations_per_step is None:
        evaluations_per_step = LBFGS_EVALUATIONS if method == "lbfgs" else VARPRO_EVALUATIONS
    evaluations_per_step = _size("evaluations_per_step", evaluations_per_step, 0)
    name, itemsize = _itemsize(dtype)
    threads = _threads(threads)
    resident = _v_cached(p, d, itemsize, _size("v_cache_bytes", v_cache_bytes, 0))
    v_bytes = p * d * itemsize if resident else 0.0
    flops32 = 0.0
    if method == "lbfgs":
        pool = _pool_size(n_hat, p, oversample)
        step_peak, step_flops, step_draws = _loss_evaluation(pool, d, p, k, itemsize, resident,
                                                             threads)
        select_peak, select_flops, select_draws = _selection(pool, n_hat, d, p, k, itemsize,
                                                             resident, threads)
        optimiser = (2 * _size("memory", memory, 0) + 6) * pool * d * 8.0
        evaluations = steps * evaluations_per_step
        flops = evaluations * step_flops + rounds * select_flops
        draws = evaluations * step_draws + rounds * select_draws
        peak = max(step_peak, select_peak) + optimiser
        parts = {"loss evaluation": step_peak, "pool selection": select_peak,
                 "optimiser state": optimiser}
        label = ""
        overhead = 0.0
    else:
        from . import varpro

        used = varpro_solver(d=d, p=p, n_hat=n_hat, solver=solver)
        step, parts = _lm_iteration(n_hat, d, p, k, resident, threads, used == "dense",
                                    evaluations_per_step)
        runs = min(rounds, math.ceil(steps / varpro.STALL_WINDOW))
        # exchanges start rounds 2, 2 + EXCHANGE_EVERY, ... (none within a single run)
        exchanges = math.ceil((runs - 1) / varpro.EXCHANGE_EVERY) if n_hat > 1 else 0.0
        ex = _exchange(n_hat, d, p, k, resident, threads)
        ev_peak, ev_flops, ev_draws = _loss_evaluation(n_hat, d, p, k, 8, resident, threads)
        flops = steps * step.flops + runs * ev_flops + exchanges * ex.flops
        flops32 = steps * step.flops32
        draws = steps * step.draws + runs * ev_draws + exchanges * ex.draws
        peak = max(step.peak, ex.peak if exchanges else 0.0)
        overhead = VARPRO_PASS_SECONDS * (steps * step.passes
                                          + runs * _loss_passes(n_hat, d, p, resident)
                                          + exchanges * ex.passes) + steps * step.waiting
        parts["exchange"] = ex.peak if exchanges else 0.0
        label = f", varpro/{used}"
    if include_training:
        t_peak, t_flops, t_draws, t_parts = _train_parts(n, d, p, k, itemsize, resident, threads)
        peak = max(peak, t_peak + p * k * itemsize)
        flops += t_flops
        draws += t_draws if not resident else 0.0
        parts["training"] = t_peak
    if resident:
        parts["V cached"] = v_bytes
        draws += p * d
    peak += v_bytes + p * k * itemsize + _OVERHEAD  # V and θ live through the whole run
    job = (f"reconstruct (d = {_show(d)}, n = {_show(n)}, n̂ = {_show(n_hat)}, p = {_show(p)}, "
           f"{name}{label})")
    return Estimate(job, peak, flops, draws, name, _sorted(parts), overhead_seconds=overhead,
                    float32_flops=flops32)


def estimate_kernel(*, d: float, n: float, p_values: Any, reps: float = 4,
                    order: float = _KERNEL_ORDER, threads: int | None = None) -> Estimate:
    """Estimate the kernel concentration measurement (``rftheory kernel``, float64).

    For every p and repetition: a streamed Gram and a Φᵀu pass (V never cached), and two n×n
    eigenvalue problems; once: the kernel matrix, its eigen-decomposition and the Hadamard-power
    bounds (up to ``order + 1`` eigenvalue problems of size n).

    Parameters
    ----------
    d, n : number
        Input dimension and number of points.
    p_values : sequence of number
        The feature counts measured (at least one).
    reps : number
        Independent draws of V per p (default 4).
    order : number
        Hermite truncation order of the kernel (default 64, :data:`rftheory.kernel.DEFAULT_ORDER`).
    threads : int, optional
        Threads drawing V (default: the cores this process may use).

    Returns
    -------
    Estimate
        Peak bytes (n×n matrices plus the largest streamed chunk), flops and draws, float64.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``p_values`` is not a non-empty sequence of numbers, or a size is not positive.

    Examples
    --------
    >>> est = estimate_kernel(d=10, n=20, p_values=[100, 400], reps=4)
    >>> est.draws == 4 * 2 * (100 + 400) * 10
    True
    """
    d, n = _size("d", d), _size("n", n)
    reps, order = _size("reps", reps), _size("order", order, 0)
    try:
        p_list = [_size("p", p) for p in p_values]
    except TypeError:
        raise RFTheoryError(f"p_values must be a list of numbers, got {p_values!r}") from None
    if not p_list:
        raise RFTheoryError("give at least one value of p")
    threads = _threads(threads)
    itemsize = 8
    dense = 6 * n * n * itemsize  # K and its eigenvectors, T and its powers, E = G/p − K
    data = n * d * itemsize  # the points X
    peak = dense + data + _OVERHEAD
    flops = (_EIGH_FLOPS + (order + 1) * _EIGVALSH_FLOPS) * n**3 + 4 * (order + 1) * n * n
    flops += 2 * n * n * d
    draws = 0.0
    stream_peak = 0.0
    for p in p_list:
        gram = _stream(n, d, p, itemsize, cached=False, threads=threads, gram=True)
        back = _stream(n, d, p, itemsize, cached=False, threads=threads, outputs=1)
        stream_peak = max(stream_peak, gram.peak, back.peak + 3 * p * itemsize)
        flops += reps * (gram.flops + back.flops + 2 * _EIGVALSH_FLOPS * n**3)
        draws += reps * (gram.draws + back.draws)
    peak += stream_peak
    biggest = max(p_list)
    job = (f"kernel (d = {_show(d)}, n = {_show(n)}, p up to {_show(biggest)}, "
           f"{_show(reps)} draws per p)")
    return Estimate(job, peak, flops, draws, "float64",
                    _sorted({"n × n matrices": dense, "streamed chunks": stream_peak,
                             "data X": data}))


def estimate_features(*, n: float, p: float, d: float, dtype: Any = "float64",
                      threads: int | None = None) -> Estimate:
    """Estimate a materialised Φ(X) (:meth:`RandomFeatures.features`): the n×p matrix, the
    blocks it is assembled from, and one stream.

    Parameters
    ----------
    n, p, d : number
        Points (rows of Φ), random features (columns) and input dimension.
    dtype : str or numpy dtype
        Working dtype (``float64``, the default, or ``float32``).
    threads : int, optional
        Threads drawing V (default: the cores this process may use).

    Returns
    -------
    Estimate
        Peak bytes (Φ and its blocks, about 2·n·p·itemsize), flops and draws of one stream.

    Examples
    --------
    >>> estimate_features(n=1000, p=10**6, d=100).peak_bytes > 2 * 8e9
    True
    """
    n, p, d = _size("n", n), _size("p", p), _size("d", d)
    name, itemsize = _itemsize(dtype)
    stream = _stream(n, d, p, itemsize, cached=False, threads=_threads(threads), kept=True)
    phi = n * p * itemsize  # the blocks while streaming, then the blocks and their concatenation
    return Estimate(f"Φ (n = {_show(n)}, p = {_show(p)}, {name})",
                    max(phi + stream.peak, 2 * phi) + _OVERHEAD,
                    stream.flops, stream.draws, name,
                    _sorted({"Φ and its blocks": 2 * phi, "streamed chunks": stream.peak}))


#: v_cache_bytes of the sweep cells (rftheory.pipeline.label_fit_cell, reconstruction_cell).
_CELL_V_CACHE = {"label_fit": 2**28, "reconstruct": 2**30}


def estimate_cell(kind: str, params: Mapping[str, Any], *, threads: int | None = 1) -> Estimate:
    """Estimate one sweep cell from its parameters (workers draw V with one thread by default).

    ``label_fit``: a streamed Gram with its eigenvalues, then the min-norm fit (V cached under
    256 MiB). ``reconstruct``: :func:`rftheory.pipeline.reconstruction_cell` (V cached under
    1 GiB, the reconstruction's default step budget unless ``max_steps`` is given). ``law``:
    :func:`rftheory.pipeline.law_cell`, i.e. ``label_fit`` when p < n, else ``reconstruct``.

    Parameters
    ----------
    kind : {"label_fit", "reconstruct", "law"}
        The sweep cell's kind.
    params : mapping
        The cell's parameters: ``d``, ``n``, ``p`` required; ``n_hat``, ``max_steps`` and
        ``method`` (default: reconstruct's) used by ``reconstruct`` (``law`` cells run the
        default method).
    threads : int, optional
        Threads drawing V (default 1, as in a sweep worker; None: the cores available).

    Returns
    -------
    Estimate
        The cell's peak bytes, flops and draws.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``d``, ``n`` or ``p`` is missing, or ``kind`` has no estimate.

    Examples
    --------
    >>> estimate_cell("label_fit", {"d": 5, "n": 8, "p": 16}).draws == 16 * 5
    True
    """
    try:
        d, n, p = params["d"], params["n"], params["p"]
    except KeyError as exc:
        raise RFTheoryError(f"a {kind} cell needs d, n and p (missing {exc.args[0]})") from None
    if kind == "law":  # rftheory.pipeline.law_cell: a label fit below p = n, else a reconstruction
        kind = "reconstruct" if p >= n else "label_fit"
    if kind == "label_fit":
        train = estimate_train(d=d, n=n, p=p, v_cache_bytes=_CELL_V_CACHE[kind], threads=threads)
        gram = _stream(float(n), float(d), float(p), 8, cached=train.draws == float(p) * float(d),
                       threads=_threads(threads), gram=True)
        flops = train.flops + gram.flops + _EIGVALSH_FLOPS * float(n) ** 3
        return Estimate(f"label_fit cell ({train.job.split('(', 1)[1]}", train.peak_bytes,
                        flops, train.draws, "float64", train.parts)
    if kind == "reconstruct":
        est = estimate_reconstruct(d=d, n=n, p=p, n_hat=params.get("n_hat"),
                                   method=params.get("method"),
                                   max_steps=params.get("max_steps") or _RECONSTRUCT_MAX_STEPS,
                                   v_cache_bytes=_CELL_V_CACHE[kind], threads=threads)
        return dataclasses.replace(est, job=f"reconstruct cell ({est.job.split('(', 1)[1]}")
    raise RFTheoryError(f"no estimate for cells of kind {kind!r} (known: label_fit, reconstruct, "
                       "law)")


# ---------------------------------------------------------------------------------------------
# This machine's memory, the limits, and the checks
# ---------------------------------------------------------------------------------------------

def _meminfo() -> dict[str, float]:
    values: dict[str, float] = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                fields = rest.split()
                if fields and fields[0].isdigit():
                    values[key] = float(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    except OSError:
        pass
    return values


def _cgroup() -> tuple[float, float] | None:
    """(limit, usage) of this process's cgroup v2 memory controller, if it has a limit."""
    try:
        with open("/proc/self/cgroup") as f:
            path = next((line.split(":", 2)[2].strip() for line in f if line.startswith("0::")),
                        None)
        if path is None:
            return None
        base = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
        with open(os.path.join(base, "memory.max")) as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(base, "memory.current")) as f:
            usage = float(f.read().strip())
        return float(limit), usage
    except (OSError, ValueError, StopIteration):
        return None


def _machine() -> tuple[float | None, float | None]:
    """(available, total) bytes of memory, None where unknown."""
    info = _meminfo()
    available = info.get("MemAvailable")
    total = info.get("MemTotal")
    if available is None:
        try:
            page = os.sysconf("SC_PAGE_SIZE")
            available = float(os.sysconf("SC_AVPHYS_PAGES") * page)
            total = float(os.sysconf("SC_PHYS_PAGES") * page)
        except (ValueError, OSError, AttributeError):
            pass
    group = _cgroup()
    if group is not None:
        limit, usage = group
        total = limit if total is None else min(total, limit)
        available = (limit - usage) if available is None else min(available, limit - usage)
    return available, total


def available_memory() -> float | None:
    """Bytes of memory available to this process now (None if this platform does not say).

    ``MemAvailable`` of ``/proc/meminfo`` (free memory plus what the kernel can reclaim), capped
    by the remaining allowance of a cgroup v2 memory limit (containers, CI runners);
    ``os.sysconf`` free pages where ``/proc`` does not exist.

    Returns
    -------
    float or None
        Available bytes, or None where the platform does not report them.
    """
    return _machine()[0]


def _parse_bytes(text: str, where: str) -> float:
    units = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    number, unit = (t[:-1], t[-1]) if t and t[-1] in "KMGT" else (t, "")
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        raise RFTheoryError(f"{where} must be a size such as 12G, 800M or a number of bytes, "
                            f"got {text!r}") from None
    if not value > 0:
        raise RFTheoryError(f"{where} must be positive, got {text!r}")
    return value


def memory_limit(explicit: float | str | None = None, *,
                 name: str = "memory_limit") -> tuple[float, str]:
    """The memory limit in bytes and a phrase saying where it comes from (for messages).

    ``explicit`` (bytes, or a size string; ``name`` is how messages call it, e.g. the CLI's
    ``--memory-limit``) or ``RFTHEORY_MEMORY_LIMIT`` replaces the default
    :data:`MEMORY_FRACTION` of the available memory; neither may exceed the machine's total.

    Parameters
    ----------
    explicit : float or str, optional
        Bytes, or a size string (``"12G"``, ``"800M"``, ``"1024"``); default None: the
        environment variable, else the default fraction.
    name : str
        How messages call ``explicit`` (default ``"memory_limit"``).

    Returns
    -------
    limit : float
        The limit in bytes (``math.inf`` where the platform reports no memory and none is set).
    source : str
        Where it comes from, e.g. ``"80% of the 12 GiB available"``.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``explicit`` (or the variable) is not a positive size.
    """
    available, total = _machine()
    source = None
    if explicit is None and os.environ.get("RFTHEORY_MEMORY_LIMIT"):
        explicit, source = os.environ["RFTHEORY_MEMORY_LIMIT"], "RFTHEORY_MEMORY_LIMIT"
    if explicit is not None:
        value = _parse_bytes(explicit, source or name) if isinstance(explicit, str) \
            else _size(name, explicit, 0)
        if total is not None and value > total:
            return total, f"this machine's total of {_bytes(total)}"
        return value, f"{_bytes(value)} set by {source or name}"
    if available is None:
        return math.inf, "no limit (this platform does not report its memory)"
    value = MEMORY_FRACTION * available
    return value, (f"{MEMORY_FRACTION:.0%} of the {_bytes(available)} available")


def time_limit(explicit: float | str | None = None, *,
               name: str = "time_limit") -> tuple[float, str]:
    """The time limit in seconds and where it comes from (``explicit``, called ``name`` in
    messages; ``RFTHEORY_TIME_LIMIT``; or the default).

    Parameters
    ----------
    explicit : float or str, optional
        Seconds (``math.inf`` or ``"inf"`` for no limit); default None: the environment
        variable, else :data:`DEFAULT_TIME_LIMIT` (one hour).
    name : str
        How messages call ``explicit`` (default ``"time_limit"``).

    Returns
    -------
    limit : float
        The limit in seconds.
    source : str
        Where it comes from, e.g. ``"the default 1 h"``.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If the value is not a positive number of seconds.

    Examples
    --------
    >>> time_limit(90)
    (90.0, '1.5 min set by time_limit')
    """
    source = name
    if explicit is None and os.environ.get("RFTHEORY_TIME_LIMIT"):
        explicit, source = os.environ["RFTHEORY_TIME_LIMIT"], "RFTHEORY_TIME_LIMIT"
    if explicit is None:
        return DEFAULT_TIME_LIMIT, f"the default {_duration(DEFAULT_TIME_LIMIT)}"
    try:
        value = float(explicit)
    except (TypeError, ValueError):
        raise RFTheoryError(f"{source} must be a number of seconds or inf, got {explicit!r}") \
            from None
    if math.isnan(value) or value <= 0:
        raise RFTheoryError(f"{source} must be positive, got {explicit!r}")
    return value, f"{_duration(value)} set by {source}"


def check(estimate: Estimate, *, memory_limit: float | str | None = None,
          time_limit: float | str | None = None,
          via: tuple[str, str] = ("memory_limit=", "time_limit=")) -> Estimate:
    """Return ``estimate`` if it fits the limits; raise :class:`ResourceLimitError` otherwise.

    The message is one line: the job, the estimate and its main parts, the limit and where it
    comes from, and how to change it. ``via`` names the two limits as the caller offers them
    (the CLI: ``("--memory-limit", "--time-limit")``).

    Parameters
    ----------
    estimate : Estimate
        The job's estimate (an ``estimate_*`` function's result).
    memory_limit : float or str, optional
        Memory limit in bytes or as a size string (``"12G"``); default: ``RFTHEORY_MEMORY_LIMIT``
        or :data:`MEMORY_FRACTION` of the available memory (see :func:`memory_limit`).
    time_limit : float or str, optional
        Time limit in seconds (``math.inf`` or ``"inf"`` for none); default:
        ``RFTHEORY_TIME_LIMIT`` or :data:`DEFAULT_TIME_LIMIT` (see :func:`time_limit`).
    via : tuple of (str, str)
        How messages name the two limits (default ``("memory_limit=", "time_limit=")``).

    Returns
    -------
    Estimate
        The estimate, when it fits both limits.

    Raises
    ------
    rftheory.errors.ResourceLimitError
        If the estimated peak memory or time is over its limit.
    """
    mem, mem_source = _limit_memory(memory_limit, name=via[0].rstrip("="))
    if not estimate.peak_bytes <= mem:
        parts = ", ".join(f"{name} {_bytes(size)}" for name, size in estimate.parts[:3])
        hint = ("reduce the sizes" if mem_source.startswith("this machine")
                else f"reduce the sizes, or raise the limit with {via[0]} or "
                     "RFTHEORY_MEMORY_LIMIT (at most the machine's total memory)")
        raise ResourceLimitError(
            f"{estimate.job} needs ~{_bytes(estimate.peak_bytes)} of memory"
            + (f" ({parts})" if parts else "")
            + f", over the limit of {_bytes(mem)} ({mem_source}); {hint}")
    seconds, time_source = _limit_time(time_limit, name=via[1].rstrip("="))
    if not estimate.seconds <= seconds:
        overhead = (f" and {_duration(estimate.overhead_seconds)} of bookkeeping and memory "
                    "traffic"
                    if estimate.overhead_seconds else "")
        fast = (f", {estimate.float32_flops:.2g} of them float32 at "
                f"{FLOP_RATE['float32']:.2g}/s" if estimate.float32_flops
                and estimate.dtype != "float32" else "")
        raise ResourceLimitError(
            f"{estimate.job} would take ~{_duration(estimate.seconds)} ({estimate.flops:.2g} "
            f"flops at {FLOP_RATE[estimate.dtype]:.2g}/s{fast} and {estimate.draws:.2g} Gaussian "
            f"draws at {DRAW_RATE:.2g}/s{overhead}), over the limit of {time_source}; reduce the sizes "
            f"or the step budget, or raise the limit with {via[1]} or RFTHEORY_TIME_LIMIT "
            "(seconds, or inf)")
    return estimate


# the public names memory_limit/time_limit are also check()'s keywords
_limit_memory = memory_limit
_limit_time = time_limit
#: How the library's callers name the limits in messages (the CLI passes its option names).
_VIA = ("memory_limit=", "time_limit=")


def check_train(*, memory_limit: float | str | None = None, time_limit: float | str | None = None,
                via: tuple[str, str] = _VIA, **sizes: Any) -> Estimate:
    """:func:`estimate_train` (same keywords), then :func:`check`.

    Parameters
    ----------
    memory_limit : float or str, optional
        Memory limit in bytes or as a size string (``"12G"``); default: ``RFTHEORY_MEMORY_LIMIT``
        or :data:`MEMORY_FRACTION` of the available memory (see :func:`memory_limit`).
    time_limit : float or str, optional
        Time limit in seconds (``math.inf`` or ``"inf"`` for none); default:
        ``RFTHEORY_TIME_LIMIT`` or :data:`DEFAULT_TIME_LIMIT` (see :func:`time_limit`).
    via : tuple of (str, str)
        How messages name the two limits (default ``("memory_limit=", "time_limit=")``).
    **sizes
        The keywords of :func:`estimate_train`.

    Returns
    -------
    Estimate
        The estimate, when it fits both limits.

    Raises
    ------
    rftheory.errors.ResourceLimitError
        If the estimated peak memory or time is over its limit.
    """
    return check(estimate_train(**sizes), memory_limit=memory_limit, time_limit=time_limit,
                 via=via)


def check_reconstruct(*, memory_limit: float | str | None = None,
                      time_limit: float | str | None = None, via: tuple[str, str] = _VIA,
                      **sizes: Any) -> Estimate:
    """:func:`estimate_reconstruct` (same keywords), then :func:`check`.

    Parameters
    ----------
    memory_limit : float or str, optional
        Memory limit in bytes or as a size string (``"12G"``); default: ``RFTHEORY_MEMORY_LIMIT``
        or :data:`MEMORY_FRACTION` of the available memory (see :func:`memory_limit`).
    time_limit : float or str, optional
        Time limit in seconds (``math.inf`` or ``"inf"`` for none); default:
        ``RFTHEORY_TIME_LIMIT`` or :data:`DEFAULT_TIME_LIMIT` (see :func:`time_limit`).
    via : tuple of (str, str)
        How messages name the two limits (default ``("memory_limit=", "time_limit=")``).
    **sizes
        The keywords of :func:`estimate_reconstruct`.

    Returns
    -------
    Estimate
        The estimate, when it fits both limits.

    Raises
    ------
    rftheory.errors.ResourceLimitError
        If the estimated peak memory or time is over its limit.

    Examples
    --------
    >>> check_reconstruct(d=20, n=10, p=2000).peak_bytes < 2**27
    True
    """
    return check(estimate_reconstruct(**sizes), memory_limit=memory_limit, time_limit=time_limit,
                 via=via)


def check_kernel(*, memory_limit: float | str | None = None, time_limit: float | str | None = None,
                 via: tuple[str, str] = _VIA, **sizes: Any) -> Estimate:
    """:func:`estimate_kernel` (same keywords), then :func:`check`.

    Parameters
    ----------
    memory_limit : float or str, optional
        Memory limit in bytes or as a size string (``"12G"``); default: ``RFTHEORY_MEMORY_LIMIT``
        or :data:`MEMORY_FRACTION` of the available memory (see :func:`memory_limit`).
    time_limit : float or str, optional
        Time limit in seconds (``math.inf`` or ``"inf"`` for none); default:
        ``RFTHEORY_TIME_LIMIT`` or :data:`DEFAULT_TIME_LIMIT` (see :func:`time_limit`).
    via : tuple of (str, str)
        How messages name the two limits (default ``("memory_limit=", "time_limit=")``).
    **sizes
        The keywords of :func:`estimate_kernel`.

    Returns
    -------
    Estimate
        The estimate, when it fits both limits.

    Raises
    ------
    rftheory.errors.ResourceLimitError
        If the estimated peak memory or time is over its limit.
    """
    return check(estimate_kernel(**sizes), memory_limit=memory_limit, time_limit=time_limit,
                 via=via)


def check_features(*, memory_limit: float | str | None = None,
                   time_limit: float | str | None = None, via: tuple[str, str] = _VIA,
                   **sizes: Any) -> Estimate:
    """:func:`estimate_features` (same keywords), then :func:`check`.

    Parameters
    ----------
    memory_limit : float or str, optional
        Memory limit in bytes or as a size string (``"12G"``); default: ``RFTHEORY_MEMORY_LIMIT``
        or :data:`MEMORY_FRACTION` of the available memory (see :func:`memory_limit`).
    time_limit : float or str, optional
        Time limit in seconds (``math.inf`` or ``"inf"`` for none); default:
        ``RFTHEORY_TIME_LIMIT`` or :data:`DEFAULT_TIME_LIMIT` (see :func:`time_limit`).
    via : tuple of (str, str)
        How messages name the two limits (default ``("memory_limit=", "time_limit=")``).
    **sizes
        The keywords of :func:`estimate_features`.

    Returns
    -------
    Estimate
        The estimate, when it fits both limits.

    Raises
    ------
    rftheory.errors.ResourceLimitError
        If the estimated peak memory or time is over its limit.
    """
    return check(estimate_features(**sizes), memory_limit=memory_limit, time_limit=time_limit,
                 via=via)


def check_cell(kind: str, params: Mapping[str, Any], *, memory_limit: float | str | None = None,
               time_limit: float | str | None = None, threads: int | None = 1,
               via: tuple[str, str] = _VIA) -> Estimate:
    """:func:`estimate_cell`, then :func:`check` (a sweep checks each cell's sizes before it
    starts; the total time of a grid is the caller's sum).

    Parameters
    ----------
    kind, params, threads
        As in :func:`estimate_cell`.
    memory_limit : float or str, optional
        Memory limit in bytes or as a size string (``"12G"``); default: ``RFTHEORY_MEMORY_LIMIT``
        or :data:`MEMORY_FRACTION` of the available memory (see :func:`memory_limit`).
    time_limit : float or str, optional
        Time limit in seconds (``math.inf`` or ``"inf"`` for none); default:
        ``RFTHEORY_TIME_LIMIT`` or :data:`DEFAULT_TIME_LIMIT` (see :func:`time_limit`).
    via : tuple of (str, str)
        How messages name the two limits (default ``("memory_limit=", "time_limit=")``).

    Returns
    -------
    Estimate
        The estimate, when it fits both limits.

    Raises
    ------
    rftheory.errors.ResourceLimitError
        If the estimated peak memory or time is over its limit.
    """
    return check(estimate_cell(kind, params, threads=threads), memory_limit=memory_limit,
                 time_limit=time_limit, via=via)
