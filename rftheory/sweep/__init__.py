"""Parameter sweeps at scale: a TOML grid of cells, run on any ``concurrent.futures`` executor,
each result committed to an SQLite store as soon as it is collected, resumable after any crash.

A **sweep file** (TOML, read with the standard library's :mod:`tomllib`) names a *cell kind*
(a function of keyword parameters returning a dict of numbers), the axes of a grid and fixed
parameters::

    [sweep]
    cell = "reconstruct"          # a key of CELL_KINDS
    seeds = 3                     # the seed axis 0, 1, 2 (or give `seed = [...]` in [grid])

    [grid]                        # every combination of the axes is one cell
    activation = ["relu", "relu+tanh"]
    d = [6]
    n = [4]
    p_mult = [0.5, 1.0, 2.0]      # p = round(p_mult·d·n), as `rftheory reconstruct --p-mult`

    [fixed]                       # the same for every cell; budgets (max_steps) go here
    max_steps = 300

Keys are checked against the cell function's signature and type annotations before anything
runs; a bad file raises :class:`SweepSpecError` naming the section and key.

**Execution** goes through the :class:`concurrent.futures.Executor` interface only: a local
:class:`~concurrent.futures.ProcessPoolExecutor` by default, or ``dask.distributed``
(``Client(address).get_executor()`` for a running cluster, a ``LocalCluster`` for a quick
multi-process run) when asked. Cells are submitted in a bounded window so a grid of millions of
cells never holds millions of futures.

**The store** is one SQLite file, ``<out>/sweep.sqlite``, written by one process only — the one
that collects results (guarded by an exclusive ``flock`` on ``<out>/sweep.lock``). Each finished
cell is one row, committed in its own transaction (WAL journal, ``synchronous=FULL``) the moment
its future completes, so a sweep killed at any instant — SIGKILL included — loses at most the
cells still in flight. A row carries the cell key (SHA-256 of the canonical JSON of kind and
parameters), the parameters (canonical JSON), the seed, the result (canonical JSON), the package
version, and a SHA-256 checksum over all of these; rows whose checksum, key or JSON does not
verify (tampered, half-written by a foreign tool, bit rot) are reported, deleted when a run
starts, and their cells recomputed. Page-level damage is caught by SQLite's own
``PRAGMA integrity_check`` on every open, which refuses the file. Keep the store on a local disk:
SQLite's WAL mode and locks are not safe on network file systems. With a cluster, only the
collecting process touches the store; workers return results through the executor.

**Resume policy.** ``resume=True`` skips every cell with a verified row (successful or failed;
``retry_errors=True`` reruns the failed ones) and computes the rest. It refuses a store whose
stored cells are not all part of the new sweep — i.e. a sweep file may *grow* its grid (more
seeds, more values on an axis) and resume into the same store, but changing a fixed parameter,
the cell kind or removing computed values needs a new output directory. Without ``resume``, a
store that already holds cells is refused. ``resume`` on a directory without a store simply
starts, so job scripts can always pass it.

**Determinism.** A cell is a pure function of its parameters; the one environmental input that
changes its last bits, the BLAS thread count, is pinned to 1 in every worker process
(:func:`limit_blas_threads`), so a cell gives the same numbers on any worker.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import hashlib
import importlib
import inspect
import itertools
import json
import math
import os
import socket
import sqlite3
import sys
import threading
import time
import tomllib
import traceback
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from .. import __version__
from ..errors import RFTheoryError
from ..output import to_jsonable

__all__ = [
    "CELL_KINDS",
    "CellKind",
    "Metric",
    "Cell",
    "SweepSpec",
    "SweepSpecError",
    "SweepStoreError",
    "SweepAbortedError",
    "SweepStore",
    "SweepRun",
    "STORE_FILE",
    "load_spec",
    "parse_spec",
    "open_executor",
    "run_sweep",
    "sweep_report",
    "plot_sweep_report",
    "label_fit_cell",
    "run_cell",
    "limit_blas_threads",
    "canonical_json",
    "comparable_results",
    "plan_sweep",
]

#: Name of the SQLite store inside a sweep's output directory.
STORE_FILE = "sweep.sqlite"
#: Lock file held (``flock``) by the one process that writes the store.
LOCK_FILE = "sweep.lock"
#: Version of the store's schema; a store with another version is refused.
SCHEMA_VERSION = 1
#: Result keys left out when two runs' numbers are compared (wall-clock time is not deterministic).
TIMING_KEYS = frozenset({"seconds"})


class SweepSpecError(RFTheoryError):
    """A sweep file was refused: missing, not TOML, or a key/value the cell kind does not accept."""



def _recover_wal_if_no_writer(directory: Path, path: Path) -> None:
    """Let SQLite replay the WAL of a writer that was killed, before a read-only open.

    A writer killed between making a commit durable in the WAL and updating the shared WAL index
    leaves a commit that read-only connections do not see (they cannot rebuild the index), so a
    report right after a SIGKILL could miss the last finished cell. When no writer holds the lock,
    a short read-write connection rebuilds the index; it writes no rows.
    """
    import fcntl

    if not (directory / LOCK_FILE).is_file() or not Path(f"{path}-wal").is_file():
        return
    with open(directory / LOCK_FILE, "a+") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return  # a writer is running: its index is current
        try:
            with sqlite3.connect(path, timeout=60) as db:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError:
            pass  # open_reader reports an unusable store itself

class SweepStoreError(RFTheoryError):
    """A sweep store cannot be used: wrong sweep, locked by another writer, damaged or missing."""


class SweepAbortedError(RuntimeError):
    """The executor failed (a worker died, the scheduler went away); finished cells are stored."""


# ---------------------------------------------------------------------------------------------
# Cell kinds
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Metric:
    """A number a cell returns that the report aggregates over seeds and plots.

    ``label`` is the axis label (the paper's symbol); ``log`` puts the axis on a log scale.
    """

    name: str
    label: str
    log: bool = False


@dataclass(frozen=True)
class CellKind:
    """A kind of sweep cell: the function to call and how to report its results.

    Attributes
    ----------
    target : str
        ``"module:function"``; imported lazily, in the collecting process to check a sweep file
        and in each worker to run cells. Never taken from user input: sweep files only choose a
        key of :data:`CELL_KINDS`.
    description : str
    x : str or None
        The report's abscissa: ``"p_over_dn"`` (p/(dn), the reconstruction threshold),
        ``"p_over_n"`` (p/n, the label-fitting threshold) or None (table only).
    metrics : tuple of Metric
        Headline numbers for the table and figure (the JSON report aggregates every numeric key).
    """

    target: str
    description: str
    x: str | None
    metrics: tuple[Metric, ...]


_RHO = Metric("rho_abs", r"$\rho$")
_TRAIN_RESIDUAL = Metric("train_residual", r"$\|\Phi\theta^* - Y\| / \|Y\|$", log=True)

#: The cell kinds a sweep file may name, as a fixed table (never extended from user input).
CELL_KINDS: Mapping[str, CellKind] = types.MappingProxyType({
    "reconstruct": CellKind(
        "rftheory.pipeline:reconstruction_cell",
        "train θ* = Φ⁺Y, reconstruct the training set from (θ*, V), score ρ",
        "p_over_dn", (_RHO, _TRAIN_RESIDUAL)),
    "label_fit": CellKind(
        "rftheory.sweep:label_fit_cell",
        "train θ* = Φ⁺Y on sphere data and measure how well the labels are fit",
        "p_over_n", (_TRAIN_RESIDUAL,
                     Metric("gram_min_eig", r"$\lambda_{\min}(\Phi\Phi^\top / p)$", log=True))),
})

_X_AXES = {
    "p_over_dn": (r"$p/(dn)$", lambda p: p["p"] / (p["d"] * p["n"])),
    "p_over_n": (r"$p/n$", lambda p: p["p"] / p["n"]),
}
# Parameters that must be >= 1 / >= 0 whenever a cell takes them (refused before running).
_POSITIVE = frozenset({"d", "n", "p", "n_hat", "max_steps"})
_NON_NEGATIVE = frozenset({"seed"})


def label_fit_cell(*, activation: str, d: int, n: int, p: int, seed: int,
                   labels: str = "gaussian") -> dict:
    """Fit n seeded labels on the √d-sphere with p random features; how well are they fit?

    The label-fitting half of the paper's picture: the min-norm interpolator θ* = Φ⁺Y fits
    generic labels once p ≥ n (train residual ≈ 0, Gram ΦΦᵀ of full rank), and for p ≫ n the
    Gram matrix concentrates, λ_min(ΦΦᵀ/p) → λ_min of the RF kernel matrix (> 0 for
    non-polynomial φ and distinct points).

    Parameters
    ----------
    activation : str
        φ (registry name or expression in z).
    d, n, p : int
        Input dimension, training points, features.
    seed : int
        Drives V, the data and the labels through separate streams (:mod:`rftheory.data`).
    labels : {"gaussian", "sign"}

    Returns
    -------
    dict
        ``train_residual`` (‖Φθ*−Y‖/‖Y‖), ``gram_min_eig`` and ``gram_max_eig`` (extreme
        eigenvalues of ΦΦᵀ/p), ``gram_rank`` and ``rank_deficient`` (from the one Gram solve,
        :func:`rftheory.gram.solve_gram`), ``theta_norm`` (‖θ*‖).

    Notes
    -----
    float64 throughout. The numbers' last bits depend on the BLAS thread count (sweeps pin it,
    see :func:`limit_blas_threads`). Eigenvalues from LAPACK ``eigh`` have absolute error
    ~ n·ε·λ_max, so ``gram_min_eig`` below ~1e-14·``gram_max_eig`` means "numerically zero".
    """
    import numpy as np

    from ..data import gaussian_labels, sign_labels, sphere_data
    from ..features import RandomFeatures, train_min_norm

    if labels not in ("gaussian", "sign"):
        raise RFTheoryError(f"labels must be 'gaussian' or 'sign', got {labels!r}")
    # V is kept between the four passes (eigenvalues, fit, Φᵀa, Φθ) when it fits in 256 MiB;
    # the cache changes speed only, never the numbers
    features = RandomFeatures(activation, d=d, p=p, seed=seed, v_cache_bytes=2**28)
    X = sphere_data(n, d, seed)
    Y = gaussian_labels(n, seed) if labels == "gaussian" else sign_labels(n, seed)
    eigenvalues = np.linalg.eigvalsh(features.gram(X) / p)
    model = train_min_norm(features, X, Y)
    return {
        "train_residual": float(model.train_residual),
        "gram_min_eig": float(eigenvalues[0]),
        "gram_max_eig": float(eigenvalues[-1]),
        "gram_rank": int(model.gram.rank),
        "rank_deficient": bool(model.gram.rank_deficient),
        "theta_norm": float(np.linalg.norm(model.theta)),
    }


def _resolve(target: str) -> Callable[..., dict]:
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def canonical_json(value: Any) -> str:
    """The one JSON text of ``value`` used for keys and checksums: sorted keys, no spaces.

    Floats are written by ``repr`` (shortest round-trip form), so equal numbers give equal text;
    NaN and infinities are written as ``NaN``/``Infinity`` (read back by Python's :mod:`json`).
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=True)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_cell(target: str, params: Mapping[str, Any], blas_threads: int | None = 1) -> dict:
    """Run one cell in the current process; what every worker executes.

    Returns ``{"status": "ok", "payload": <canonical JSON of the result>, ...}`` or, when the cell
    raised, ``{"status": "error", "payload": <canonical JSON of {"error", "traceback"}>}`` —
    a cell's own exception is a result to store, never a reason to stop the sweep. Exceptions
    that escape (the worker dying, unpicklable arguments) are the executor's and abort the sweep.

    ``blas_threads`` (None: leave as is) first fixes the BLAS thread count of the executing
    process when the cell runs in its main thread, see :func:`limit_blas_threads`.
    """
    if blas_threads is not None and threading.current_thread() is threading.main_thread():
        limit_blas_threads(blas_threads)
    start = time.perf_counter()
    try:
        result = _resolve(target)(**params)
        if not isinstance(result, dict):
            raise TypeError(f"cell returned a {type(result).__name__}, not a dict")
        plain = to_jsonable(result, finite_only=False, strict=True, where="result")
        payload, status = canonical_json(plain), "ok"
    except Exception as exc:  # noqa: BLE001 - any failure of the cell is recorded with the cell
        text = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
        payload = canonical_json({"error": text, "traceback": traceback.format_exc(limit=8)})
        status = "error"
    return {"status": status, "payload": payload, "seconds": time.perf_counter() - start,
            "worker": f"{socket.gethostname()}:{os.getpid()}"}


_BLAS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def limit_blas_threads(threads: int) -> None:
    """Set the BLAS/OpenMP thread count of this process (a worker's) to ``threads``.

    Why, in a sweep: (1) N worker processes each running a BLAS with one thread per core put
    N × cores threads on the cores — oversubscription, much slower than one thread each (see
    ``benchmarks/bench_sweep.py --unpinned``); (2) the last bits of BLAS reductions depend on
    how the work is split between threads (measured: ``gram_min_eig`` of a ``label_fit`` cell
    with d=20, n=30, p=5000 changes in the 15th digit between 1 and 2 OpenBLAS threads), so a
    cell gives the same numbers on every worker only if every worker uses the same count.

    Notes
    -----
    Effective where it is called from a process's main thread, which is where
    ProcessPoolExecutor workers run cells (:func:`run_cell` only calls it there). A pthreads
    OpenBLAS has one process-wide pool that threadpoolctl lets only one thread resize, so
    threads of an in-process executor (ThreadPoolExecutor, dask ``processes=False``) cannot
    pin it: those use the calling process's setting. dask's nanny starts its worker processes
    with OMP/MKL/OPENBLAS_NUM_THREADS=1 already. The environment variables set here cover
    libraries loaded later; threadpoolctl resizes the BLAS numpy has already loaded.
    """
    for name in _BLAS_ENV:
        os.environ[name] = str(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn depends on threadpoolctl
        return
    threadpool_limits(limits=threads)


# ---------------------------------------------------------------------------------------------
# The sweep file
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    """One point of the grid: a cell kind and the full keyword arguments of its function.

    ``params_json`` (canonical JSON of the parameters) and ``key`` (SHA-256 of the canonical
    JSON of ``{"kind", "params"}``, the cell's identity) are computed once, at creation.
    """

    kind: str
    params: Mapping[str, Any]
    params_json: str = dataclasses.field(init=False, repr=False, compare=False)
    key: str = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        text = canonical_json(dict(self.params))
        object.__setattr__(self, "params_json", text)
        object.__setattr__(self, "key", cell_key(self.kind, text))

    @property
    def seed(self) -> int | None:
        return self.params.get("seed")


def cell_key(kind: str, params_json: str) -> str:
    """The key of a cell from its kind and canonical parameter JSON."""
    return _sha256(canonical_json({"kind": kind, "params": json.loads(params_json)}))


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: the cell kind, the grid axes (in file order) and the fixed parameters.

    ``p_mult`` may be an axis or a fixed value; it is turned into ``p = round(p_mult·d·n)`` per
    cell (cells that round to the same p are one cell).
    """

    cell: str
    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    fixed: tuple[tuple[str, Any], ...]
    name: str = ""
    description: str = ""

    @property
    def kind(self) -> CellKind:
        return CELL_KINDS[self.cell]

    def to_json(self) -> dict:
        return {"cell": self.cell, "name": self.name, "description": self.description,
                "grid": {k: list(v) for k, v in self.axes}, "fixed": dict(self.fixed)}

    @property
    def grid_size(self) -> int:
        return math.prod(len(values) for _, values in self.axes)

    def cells(self) -> Iterator[Cell]:
        """The grid's cells in file order (last axis fastest), each distinct cell once."""
        names = [k for k, _ in self.axes]
        seen: set[str] = set()
        for combo in itertools.product(*(values for _, values in self.axes)):
            params = dict(self.fixed)
            params.update(zip(names, combo))
            if "p_mult" in params:
                params["p"] = max(1, round(params.pop("p_mult") * params["d"] * params["n"]))
            cell = Cell(self.cell, params)
            key = cell.key
            if key not in seen:
                seen.add(key)
                yield cell


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file; raises :class:`SweepSpecError` naming the bad key."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SweepSpecError(f"sweep file not found: {path}") from None
    except OSError as exc:
        raise SweepSpecError(f"cannot read sweep file {path}: {exc.strerror or exc}") from None
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SweepSpecError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise SweepSpecError(f"{path}: invalid TOML: {exc}") from None
    return parse_spec(document, source=str(path))


_SECTIONS = ("sweep", "grid", "fixed")
_SWEEP_KEYS = ("cell", "name", "description", "seeds")


def _type_name(kind: Any) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        kind, "a number, string or boolean")


def _parameter_types(function: Callable) -> dict[str, tuple[Any, bool]]:
    """``{name: (scalar type or None, required)}`` from a cell function's signature."""
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to no type checks
        hints = {}
    out = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        hint = hints.get(name)
        # `int | None` and Optional[int]: TOML has no null, so the non-None member is the type.
        members = [a for a in typing.get_args(hint) if a is not type(None)] \
            if typing.get_origin(hint) in (typing.Union, types.UnionType) else [hint]
        scalar = members[0] if len(members) == 1 and members[0] in (int, float, str, bool) else None
        out[name] = (scalar, parameter.default is inspect.Parameter.empty)
    return out


def parse_spec(document: Mapping[str, Any], *, source: str = "<sweep>") -> SweepSpec:
    """Validate a parsed sweep document (the dict :mod:`tomllib` returns) into a SweepSpec.

    Every check runs here, before any cell: unknown sections or keys, empty or repeated axis
    values, wrong value types (from the cell function's annotations), out-of-range sizes, unknown
    activations, missing required parameters, an unknown or unavailable cell kind.
    """
    def fail(where: str, message: str) -> SweepSpecError:
        return SweepSpecError(f"{source}: {where}: {message}")

    for key, value in document.items():
        if key not in _SECTIONS:
            hint = " (put it under [sweep], [grid] or [fixed])" if not isinstance(value, dict) else ""
            raise fail(key, f"unknown key{hint}; the sections are [sweep], [grid] and [fixed]")
        if not isinstance(value, dict):
            raise fail(f"[{key}]", "must be a table")
    sweep = document.get("sweep")
    if sweep is None:
        raise fail("[sweep]", "missing section; it names the cell kind: cell = \"reconstruct\"")
    for key in sweep:
        if key not in _SWEEP_KEYS:
            raise fail(f"[sweep] {key}", f"unknown key; allowed: {', '.join(_SWEEP_KEYS)}")
    kind_name = sweep.get("cell")
    if kind_name is None:
        raise fail("[sweep] cell", f"missing; choose from: {', '.join(sorted(CELL_KINDS))}")
    if not isinstance(kind_name, str) or kind_name not in CELL_KINDS:
        raise fail("[sweep] cell", f"unknown cell kind {kind_name!r}; choose from: "
                                   f"{', '.join(sorted(CELL_KINDS))}")
    for key in ("name", "description"):
        if not isinstance(sweep.get(key, ""), str):
            raise fail(f"[sweep] {key}", "must be a string")
    try:
        function = _resolve(CELL_KINDS[kind_name].target)
    except (ImportError, AttributeError) as exc:
        raise fail("[sweep] cell", f"cell kind {kind_name!r} is not available in this "
                                   f"installation ({exc})") from None
    parameters = _parameter_types(function)
    accepted = dict(parameters)
    if {"p", "d", "n"} <= set(parameters):
        accepted["p_mult"] = (float, False)

    def check_value(where: str, name: str, value: Any) -> Any:
        kind = accepted[name][0]
        if isinstance(value, (dict, list)) or not isinstance(value, (int, float, str, bool)):
            raise fail(where, f"expected {_type_name(kind)}, got {type(value).__name__}")
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # one canonical form, so `1` and `1.0` are the same cell
        elif kind is not None and (not isinstance(value, kind) or
                                   (kind is int and isinstance(value, bool))):
            raise fail(where, f"expected {_type_name(kind)}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise fail(where, f"must be finite, got {value!r}")
        if name in _POSITIVE and value < 1:
            raise fail(where, f"must be >= 1, got {value!r}")
        if name in _NON_NEGATIVE and value < 0:
            raise fail(where, f"must be >= 0, got {value!r}")
        if name == "p_mult" and value <= 0:
            raise fail(where, f"must be > 0, got {value!r}")
        if name == "activation":
            from ..activations import get_activation

            try:
                get_activation(value)
            except RFTheoryError as exc:
                raise fail(where, str(exc)) from None
        return value

    def check_name(section: str, name: str) -> None:
        if name not in accepted:
            raise fail(f"[{section}] {name}", f"not a parameter of cell {kind_name!r} (its "
                                              f"parameters: {', '.join(accepted)})")

    grid = document.get("grid", {})
    fixed_doc = document.get("fixed", {})
    axes: list[tuple[str, tuple[Any, ...]]] = []
    for name, values in grid.items():
        check_name("grid", name)
        if name in fixed_doc:
            raise fail(f"[grid] {name}", "also given in [fixed]; give it in one place")
        if not isinstance(values, list):
            raise fail(f"[grid] {name}", f"an axis must be a list of values, got {values!r}")
        if not values:
            raise fail(f"[grid] {name}", "axis is empty")
        checked = tuple(check_value(f"[grid] {name}[{i}]", name, v) for i, v in enumerate(values))
        seen: set[str] = set()
        for i, value in enumerate(checked):
            text = canonical_json(value)
            if text in seen:
                raise fail(f"[grid] {name}[{i}]", f"value {value!r} appears twice")
            seen.add(text)
        axes.append((name, checked))
    fixed = []
    for name, value in fixed_doc.items():
        check_name("fixed", name)
        fixed.append((name, check_value(f"[fixed] {name}", name, value)))

    if "seeds" in sweep:
        seeds = sweep["seeds"]
        if "seed" in grid or "seed" in fixed_doc:
            raise fail("[sweep] seeds", "give either [sweep] seeds or a seed in [grid]/[fixed]")
        if "seed" not in parameters:
            raise fail("[sweep] seeds", f"cell {kind_name!r} takes no seed")
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise fail("[sweep] seeds", f"expected a positive integer (seeds 0..N-1), got {seeds!r}")
        axes.append(("seed", tuple(range(seeds))))
    given = {k for k, _ in axes} | {k for k, _ in fixed}
    if "p_mult" in given and "p" in given:
        raise fail("p_mult", "give p or p_mult (p = p_mult·d·n), not both")
    if "p_mult" in given:
        given.add("p")
    for name, (_, required) in parameters.items():
        if required and name not in given:
            raise fail(name, f"cell {kind_name!r} needs this parameter; give it in [grid] "
                             "(a list) or [fixed]" + (" or [sweep] seeds" if name == "seed" else ""))
    return SweepSpec(cell=kind_name, axes=tuple(axes), fixed=tuple(fixed),
                     name=sweep.get("name", ""), description=sweep.get("description", ""))


# ---------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS specs (
    id INTEGER PRIMARY KEY, spec TEXT NOT NULL, total_cells INTEGER NOT NULL,
    recorded_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
    executor TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, version TEXT NOT NULL,
    planned INTEGER NOT NULL, computed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS cells (
    cell_key TEXT PRIMARY KEY, kind TEXT NOT NULL, params TEXT NOT NULL, seed INTEGER,
    status TEXT NOT NULL, payload TEXT NOT NULL, version TEXT NOT NULL, checksum TEXT NOT NULL,
    seconds REAL, worker TEXT, run_id INTEGER, finished_at TEXT);
"""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def record_checksum(cell_key_: str, kind: str, params: str, seed: Any, status: str, payload: str,
                    version: str) -> str:
    """SHA-256 over the canonical JSON of a row's content (the stored texts, verbatim)."""
    return _sha256(canonical_json({"cell_key": cell_key_, "kind": kind, "params": params,
                                   "seed": seed, "status": status, "payload": payload,
                                   "version": version}))


@dataclass(frozen=True)
class StoredCell:
    """A verified row of the store."""

    key: str
    kind: str
    params: dict
    seed: int | None
    status: str
    result: dict
    version: str
    seconds: float | None
    worker: str | None
    run_id: int | None


@dataclass(frozen=True)
class StoreScan:
    """Every row of a store, verified: ``cells`` maps key → row; ``corrupt`` lists the SQLite
    rowids of rows that failed verification (their key column itself may be damaged)."""

    cells: dict[str, StoredCell]
    corrupt: tuple[int, ...]

    @property
    def ok(self) -> int:
        return sum(c.status == "ok" for c in self.cells.values())

    @property
    def errors(self) -> int:
        return sum(c.status == "error" for c in self.cells.values())


class SweepStore:
    """The SQLite file of one sweep (see the module docstring for the design).

    Open with :meth:`open_writer` (creates the directory and file, takes the writer lock) or
    :meth:`open_reader` (read-only; never creates or changes anything). Use as a context manager.
    """

    def __init__(self, directory: Path, connection: sqlite3.Connection,
                 lock: Any = None) -> None:
        self.directory = directory
        self.path = directory / STORE_FILE
        self._db = connection
        self._lock = lock

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open_writer(cls, directory: str | Path) -> "SweepStore":
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        lock = open(directory / LOCK_FILE, "a+")
        try:
            import fcntl

            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # not POSIX: no cross-process guard, documented limitation
            pass
        except OSError:
            lock.close()
            raise SweepStoreError(f"another process is writing the sweep store in {directory} "
                                  "(only one collecting process may write it)") from None
        try:
            db = sqlite3.connect(directory / STORE_FILE, isolation_level=None, timeout=60)
            store = cls(directory, db, lock)
            store._check_integrity()
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a commit is on disk before the next cell
            db.executescript(_SCHEMA)
            version = store.meta("schema_version")
            if version is None:
                store._set_meta({"schema_version": str(SCHEMA_VERSION), "created_at": _now()})
            elif version != str(SCHEMA_VERSION):
                raise SweepStoreError(f"{store.path}: store schema version {version}, this "
                                      f"rftheory writes version {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            lock.close()
            raise SweepStoreError(
                f"{directory / STORE_FILE}: not a usable SQLite store ({exc})") from None
        except BaseException:
            lock.close()
            raise
        return store

    @classmethod
    def open_reader(cls, directory: str | Path) -> "SweepStore":
        directory = Path(directory)
        path = directory / STORE_FILE
        if not path.is_file():
            raise SweepStoreError(f"no sweep store in {directory} (expected {path})")
        _recover_wal_if_no_writer(directory, path)
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                 isolation_level=None, timeout=60)
            store = cls(directory, db)
            store._check_integrity()
            if store.meta("schema_version") != str(SCHEMA_VERSION):
                raise SweepStoreError(f"{path}: not a sweep store of this rftheory version")
        except sqlite3.DatabaseError as exc:
            raise SweepStoreError(f"{path}: not a usable SQLite store ({exc})") from None
        return store

    def _check_integrity(self) -> None:
        """SQLite's own page-level check; row-level damage is caught by the checksums."""
        problems = [row[0] for row in self._db.execute("PRAGMA integrity_check(5)")]
        if problems != ["ok"]:
            raise SweepStoreError(f"{self.path}: SQLite integrity check failed: "
                                  f"{'; '.join(problems)}. Move the file aside and rerun.")

    def close(self) -> None:
        self._db.close()
        if self._lock is not None:
            self._lock.close()  # releases the flock

    def __enter__(self) -> "SweepStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- metadata -----------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # no meta table: an empty or foreign database
            return None
        return None if row is None else row[0]

    def _set_meta(self, values: Mapping[str, str]) -> None:
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                 list(values.items()))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def spec(self) -> dict | None:
        text = self.meta("spec")
        return None if text is None else json.loads(text)

    def record_spec(self, spec: SweepSpec, total: int) -> None:
        text = canonical_json(spec.to_json())
        if text == self.meta("spec") and self.meta("total_cells") == str(total):
            return
        with self._transaction():
            self._db.execute("INSERT INTO specs (spec, total_cells, recorded_at) VALUES (?, ?, ?)",
                             (text, total, _now()))
            self._db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                 [("spec", text), ("total_cells", str(total))])

    # -- rows ---------------------------------------------------------------------------------
    def scan(self) -> StoreScan:
        """Read and verify every row: JSON parses, key matches the parameters, checksum matches."""
        cells: dict[str, StoredCell] = {}
        corrupt: list[int] = []
        query = ("SELECT rowid, cell_key, kind, params, seed, status, payload, version, checksum, "
                 "seconds, worker, run_id FROM cells")
        for rowid, key, kind, params, seed, status, payload, version, checksum, seconds, worker, \
                run_id in self._db.execute(query):
            try:
                if not all(isinstance(v, str) for v in (key, kind, params, status, payload,
                                                         version, checksum)):
                    raise ValueError("a text column holds another type")
                if checksum != record_checksum(key, kind, params, seed, status, payload, version):
                    raise ValueError("checksum mismatch")
                if key != cell_key(kind, params) or status not in ("ok", "error"):
                    raise ValueError("key or status inconsistent")
                result = json.loads(payload)
                if not isinstance(result, dict):
                    raise ValueError("payload is not an object")
                cells[key] = StoredCell(key, kind, json.loads(params), seed, status, result,
                                        version, seconds, worker, run_id)
            except (ValueError, TypeError):
                corrupt.append(rowid)
        return StoreScan(cells, tuple(corrupt))

    def delete_rows(self, rowids: Iterable[int]) -> None:
        """Remove rows (the corrupt ones a scan found) in one transaction."""
        with self._transaction():
            self._db.executemany("DELETE FROM cells WHERE rowid = ?", [(r,) for r in rowids])

    def put(self, cell: Cell, outcome: Mapping[str, Any], run_id: int) -> None:
        """Store one finished cell in its own transaction (replacing a corrupt row of its key)."""
        params, key, seed = cell.params_json, cell.key, cell.seed
        checksum = record_checksum(key, cell.kind, params, seed, outcome["status"],
                                   outcome["payload"], __version__)
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO cells (cell_key, kind, params, seed, status, payload, "
                "version, checksum, seconds, worker, run_id, finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, cell.kind, params, seed, outcome["status"], outcome["payload"], __version__,
                 checksum, outcome.get("seconds"), outcome.get("worker"), run_id, _now()))
            self._db.execute("UPDATE runs SET computed = computed + 1 WHERE id = ?", (run_id,))

    # -- runs ---------------------------------------------------------------------------------
    def start_run(self, executor: str, planned: int) -> int:
        with self._transaction():
            cursor = self._db.execute(
                "INSERT INTO runs (started_at, status, executor, host, pid, version, planned) "
                "VALUES (?, 'running', ?, ?, ?, ?, ?)",
                (_now(), executor, socket.gethostname(), os.getpid(), __version__, planned))
        return int(cursor.lastrowid)

    def finish_run(self, run_id: int, status: str) -> None:
        with self._transaction():
            self._db.execute("UPDATE runs SET finished_at = ?, status = ? WHERE id = ?",
                             (_now(), status, run_id))

    def runs(self) -> list[dict]:
        columns = ("id", "started_at", "finished_at", "status", "executor", "host", "version",
                   "planned", "computed")
        rows = self._db.execute(f"SELECT {', '.join(columns)} FROM runs ORDER BY id").fetchall()
        return [dict(zip(columns, row)) for row in rows]


# ---------------------------------------------------------------------------------------------
# Executors
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExecutorHandle:
    """An open executor, a one-line description of it, and how many cells it runs at once."""

    executor: cf.Executor
    description: str
    slots: int


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def check_executor_choice(*, workers: int | None = None, dask_scheduler: str | None = None,
                          dask_local: int | None = None) -> None:
    """Refuse a bad executor choice (conflicting options, counts < 1, dask not installed)."""
    for name, value in (("--workers", workers), ("--dask-local", dask_local)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise RFTheoryError(f"{name} must be an integer >= 1, got {value!r}")
    chosen = [n for n, v in (("--workers", workers), ("--dask-scheduler", dask_scheduler),
                             ("--dask-local", dask_local)) if v is not None]
    if len(chosen) > 1:
        raise RFTheoryError(f"give one of --workers, --dask-scheduler, --dask-local, not "
                            f"{' and '.join(chosen)}")
    if dask_scheduler is not None or dask_local is not None:
        try:
            import dask.distributed  # noqa: F401 - only checking that it is installed
        except ImportError:
            raise RFTheoryError("dask execution needs dask.distributed: "
                                "pip install 'rftheory[cluster]'") from None


@contextlib.contextmanager
def open_executor(*, workers: int | None = None, dask_scheduler: str | None = None,
                  dask_local: int | None = None) -> Iterator[ExecutorHandle]:
    """Open the executor cells run on, closing it (and any cluster it started) on exit.

    Exactly one of: ``dask_scheduler`` (address of a running ``dask.distributed`` scheduler;
    its workers must have rftheory installed), ``dask_local`` (start a ``LocalCluster`` with this
    many single-threaded worker processes), or neither — a local ProcessPoolExecutor with
    ``workers`` processes (default: the CPUs this process may use). Worker processes start by
    ``forkserver`` (``spawn`` where it does not exist), so a script that calls this needs the
    usual ``if __name__ == "__main__":`` guard of multiprocessing programs.
    """
    check_executor_choice(workers=workers, dask_scheduler=dask_scheduler, dask_local=dask_local)
    if dask_scheduler is not None or dask_local is not None:
        from dask.distributed import Client, LocalCluster

        cluster = None
        if dask_local is not None:
            import logging

            cluster = LocalCluster(n_workers=dask_local, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=logging.ERROR)
            address = cluster.scheduler_address
            description = f"dask LocalCluster ({dask_local} workers)"
        else:
            address, description = dask_scheduler, f"dask scheduler {dask_scheduler}"
        try:
            client = Client(address, timeout=30)
        except (OSError, TimeoutError, ValueError) as exc:
            if cluster is not None:
                cluster.close()
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise RFTheoryError(f"cannot connect to the dask scheduler at {address}: "
                                f"{reason}") from None
        try:
            slots = max(1, sum(client.nthreads().values()))
            # pure=False: every submission runs; dask must not merge or cache cells by hash
            yield ExecutorHandle(client.get_executor(pure=False), description, slots)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return
    workers = _cpu_count() if workers is None else workers
    import multiprocessing

    # forkserver: workers start from a clean process, not a fork of one holding threads (tqdm's
    # monitor, BLAS pools), which can deadlock; spawn where forkserver does not exist.
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    executor = cf.ProcessPoolExecutor(max_workers=workers,
                                      mp_context=multiprocessing.get_context(method))
    try:
        yield ExecutorHandle(executor, f"{workers} local processes", workers)
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepRun:
    """What one :func:`run_sweep` call did."""

    store: str
    total: int
    already_done: int
    planned: int
    computed: int
    errors: int
    corrupt_recomputed: int
    seconds: float
    executor: str
    run_id: int | None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def _check_resume(store: SweepStore, scan: StoreScan, spec: SweepSpec, keys: set[str],
                  resume: bool) -> None:
    """Apply the resume policy: cells already stored must all belong to the new sweep."""
    rows = len(scan.cells) + len(scan.corrupt)
    if rows and not resume:
        raise SweepStoreError(f"{store.directory} already holds a sweep with {rows} finished "
                              "cells: pass --resume to continue it, or choose another --out")
    foreign = [k for k in scan.cells if k not in keys]
    if foreign:
        old = store.spec() or {}
        new = spec.to_json()
        changed = [f"[{section}] {name}" for section in ("grid", "fixed")
                   for name in sorted(set(old.get(section, {})) | set(new[section]))
                   if old.get(section, {}).get(name) != new[section].get(name)]
        if old.get("cell") != new["cell"]:
            changed.insert(0, "[sweep] cell")
        raise SweepStoreError(
            f"{store.directory} holds a different sweep: {len(foreign)} of its {len(scan.cells)} "
            f"cells are not in this sweep file (changed: {', '.join(changed) or 'grid'}); a sweep "
            "may only grow its grid to resume into a store — use another --out")


def plan_sweep(spec: SweepSpec, out_dir: str | Path, *, resume: bool = False,
               retry_errors: bool = False) -> dict:
    """Count what :func:`run_sweep` would do, reading the store (if any) without changing it."""
    keys = {c.key for c in spec.cells()}
    summary = {"store": str(Path(out_dir) / STORE_FILE), "total": len(keys), "already_done": 0,
               "corrupt": 0, "planned": len(keys)}
    if (Path(out_dir) / STORE_FILE).is_file():
        with SweepStore.open_reader(out_dir) as store:
            scan = store.scan()
            _check_resume(store, scan, spec, keys, resume)
        done = _finished(scan, retry_errors) & keys
        summary.update(already_done=len(done), corrupt=len(scan.corrupt),
                       planned=len(keys) - len(done))
    return summary


def _finished(scan: StoreScan, retry_errors: bool) -> set[str]:
    return {k for k, c in scan.cells.items() if c.status == "ok" or not retry_errors}


def run_sweep(spec: SweepSpec, out_dir: str | Path, *, resume: bool = False,
              retry_errors: bool = False, workers: int | None = None,
              dask_scheduler: str | None = None, dask_local: int | None = None,
              executor: cf.Executor | None = None, max_in_flight: int | None = None,
              blas_threads: int | None = 1, progress: bool = False) -> SweepRun:
    """Run every cell of ``spec`` not already in the store at ``out_dir``; return what was done.

    Parameters
    ----------
    spec : SweepSpec
        From :func:`load_spec`.
    out_dir : path
        Directory of the store (created if needed).
    resume : bool
        Continue a store that already holds cells (see the module docstring's policy).
    retry_errors : bool
        Also rerun cells whose stored outcome is an error.
    workers, dask_scheduler, dask_local
        Choose the executor, see :func:`open_executor`.
    blas_threads : int or None
        BLAS threads of each local worker process (default 1, see :func:`limit_blas_threads`;
        None leaves the workers' setting alone). In-process executors (threads) use the
        calling process's setting instead.
    executor : concurrent.futures.Executor, optional
        Use this executor instead (left open). Its workers must be able to import the cell.
    max_in_flight : int, optional
        Cells submitted but not collected at any time (default: twice the executor's slots).
    progress : bool
        Show a tqdm bar (cells done, rate, ETA) on stderr.

    Raises
    ------
    SweepStoreError
        The store belongs to another sweep, is locked by another writer, or is damaged.
    SweepAbortedError
        The executor failed; every cell collected before the failure is stored.
    """
    start = time.perf_counter()
    if executor is None:  # refuse a bad choice before the store is touched
        check_executor_choice(workers=workers, dask_scheduler=dask_scheduler,
                              dask_local=dask_local)
    # only the keys are held: the cells themselves are generated again, lazily, for submission
    keys = {c.key for c in spec.cells()}
    target = spec.kind.target
    with SweepStore.open_writer(out_dir) as store:
        scan = store.scan()
        _check_resume(store, scan, spec, keys, resume)
        store.record_spec(spec, len(keys))
        if scan.corrupt:  # their cells are not in `done`, so they are recomputed below
            store.delete_rows(scan.corrupt)
        corrupt = len(scan.corrupt)
        done = _finished(scan, retry_errors) & keys
        already, planned = len(done), len(keys) - len(done)
        pending = (c for c in spec.cells() if c.key not in done)
        if not planned:
            return SweepRun(str(store.path), len(keys), already, 0, 0, 0, corrupt,
                            time.perf_counter() - start, "none (nothing to do)", None)
        with contextlib.ExitStack() as stack:
            if executor is None:
                handle = stack.enter_context(open_executor(
                    workers=workers, dask_scheduler=dask_scheduler, dask_local=dask_local))
            else:
                slots = getattr(executor, "_max_workers", None) or _cpu_count()
                handle = ExecutorHandle(executor, type(executor).__name__, slots)
            window = max_in_flight or 2 * handle.slots
            run_id = store.start_run(handle.description, planned)
            bar = None
            if progress:
                from tqdm import tqdm

                bar = stack.enter_context(tqdm(total=len(keys), initial=already, unit="cell",
                                               desc=spec.name or "sweep", file=sys.stderr,
                                               dynamic_ncols=True, smoothing=0.05))
            status = "failed"
            try:
                computed, errors = _collect(handle.executor, target, blas_threads, pending,
                                            store, run_id, window, bar)
                status = "finished"
            except KeyboardInterrupt:
                status = "interrupted"
                raise
            finally:
                store.finish_run(run_id, status)
    return SweepRun(str(store.path), len(keys), already, planned, computed, errors,
                    corrupt, time.perf_counter() - start, handle.description, run_id)


def _collect(executor: cf.Executor, target: str, blas_threads: int | None,
             pending: Iterable[Cell], store: SweepStore, run_id: int, window: int,
             bar: Any) -> tuple[int, int]:
    """Keep ``window`` cells in flight; store each result the moment its future completes."""
    queue = iter(pending)
    in_flight: dict[cf.Future, Cell] = {}
    computed = errors = 0

    def refill() -> None:
        while len(in_flight) < window:
            cell = next(queue, None)
            if cell is None:
                return
            in_flight[executor.submit(run_cell, target, dict(cell.params), blas_threads)] = cell

    try:
        refill()
        while in_flight:
            finished, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
            for future in finished:
                cell = in_flight.pop(future)
                try:
                    outcome = future.result()
                except Exception as exc:  # noqa: BLE001 - the executor's failure, not the cell's
                    raise SweepAbortedError(
                        f"the executor failed while running a cell ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else 'no message'}); "
                        f"{computed} cells of this run are stored — rerun with --resume") from exc
                store.put(cell, outcome, run_id)
                computed += 1
                errors += outcome["status"] == "error"
                if bar is not None:
                    bar.update(1)
                    if errors:
                        bar.set_postfix(errors=errors, refresh=False)
            refill()
    finally:
        for future in in_flight:
            future.cancel()
    return computed, errors


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

def _stats(values: list[float]) -> dict:
    import numpy as np

    a = np.asarray(values, dtype=float)
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return {"count": int(a.size), "finite": 0, "mean": math.nan, "std": math.nan,
                "median": math.nan, "min": math.nan, "max": math.nan}
    return {"count": int(a.size), "finite": int(finite.size), "mean": float(finite.mean()),
            "std": float(finite.std(ddof=1)) if finite.size > 1 else 0.0,
            "median": float(np.median(finite)), "min": float(finite.min()),
            "max": float(finite.max())}


def sweep_report(out_dir: str | Path, metrics: Iterable[str] | None = None) -> dict:
    """Aggregate a store over seeds: the JSON-serialisable result behind the table and figure.

    Rows with the same parameters except ``seed`` form a group; every numeric result key
    (booleans count as 0/1) gets count, mean, std (ddof=1), median, min and max over the group's
    successful cells, NaN/inf left out of the statistics (``finite`` says how many remained).
    Groups are ordered by the varying parameters, then by the x coordinate (p/(dn) or p/n).
    Works on a store that is still being written (a read-only snapshot).
    """
    with SweepStore.open_reader(out_dir) as store:
        spec = store.spec() or {}
        total = int(store.meta("total_cells") or 0)
        scan = store.scan()
        runs = store.runs()
        path = str(store.path)
    kind_name = spec.get("cell")
    kind = CELL_KINDS.get(kind_name)
    headline = list(metrics) if metrics else [m.name for m in kind.metrics] if kind else []
    x_name = kind.x if kind else None
    groups: dict[str, dict] = {}
    error_samples = []
    for stored in scan.cells.values():
        base = {k: v for k, v in stored.params.items() if k != "seed"}
        group = groups.setdefault(canonical_json(base), {"params": base, "seeds": [],
                                                         "errors": 0, "values": {}})
        if stored.status == "error":
            group["errors"] += 1
            if len(error_samples) < 10:
                error_samples.append({"params": stored.params, "error": stored.result.get("error")})
            continue
        group["seeds"].append(stored.seed)
        for name, value in stored.result.items():
            # numbers only (bools count 0/1); parameters echoed back by the cell are not results
            if isinstance(value, (int, float)) and name not in TIMING_KEYS \
                    and name not in stored.params:
                group["values"].setdefault(name, []).append(float(value))
    x_of = None
    if x_name is not None:
        label, x_of = _X_AXES[x_name]
    all_params = [g["params"] for g in groups.values()]
    varying = sorted({k for p in all_params for k in p
                      if len({canonical_json(q.get(k)) for q in all_params}) > 1})
    line_keys = [k for k in varying if k != "p"]
    rows = []
    for group in groups.values():
        params = group["params"]
        x = x_of(params) if x_of is not None and {"p", "d", "n"} <= set(params) else None
        rows.append({"params": params, "line": {k: params.get(k) for k in line_keys}, "x": x,
                     "seeds": len(group["seeds"]), "errors": group["errors"],
                     "stats": {name: _stats(v) for name, v in sorted(group["values"].items())}})
    rows.sort(key=lambda r: (canonical_json(r["line"]), r["x"] if r["x"] is not None else 0.0,
                             canonical_json(r["params"])))
    missing = [m for m in headline if rows and not any(m in r["stats"] for r in rows)]
    if missing and metrics:
        raise RFTheoryError(f"metric(s) {', '.join(missing)} not found in the store's results")
    return {
        "store": path, "name": spec.get("name", ""), "cell": kind_name, "spec": spec,
        "total_cells": total, "ok": scan.ok, "errors": scan.errors, "corrupt": len(scan.corrupt),
        "pending": max(0, total - len(scan.cells)),
        "versions": sorted({c.version for c in scan.cells.values()}),
        "x": None if x_name is None else {"name": x_name, "label": label},
        "metrics": headline, "metric_labels": {m.name: m.label for m in kind.metrics} if kind else {},
        "metric_log": {m.name: m.log for m in kind.metrics} if kind else {},
        "varying": varying, "line_keys": line_keys, "groups": rows, "error_samples": error_samples,
        "runs": runs,
    }


def plot_sweep_report(report: Mapping[str, Any], path: str | Path) -> list[Path]:
    """Draw the report's headline metrics against p/(dn) (or p/n), aggregated over seeds.

    One panel per headline metric, one line per combination of the varying parameters other
    than p; a dashed line marks the threshold x = 1. Linear axes (ρ) show mean ± std; log axes
    (residuals, eigenvalues) show the median with min–max whiskers, which stay positive. Writes
    ``path`` as PNG and PDF (a .png/.pdf suffix is replaced) and returns both paths.
    """
    if report.get("x") is None:
        raise RFTheoryError(f"cell kind {report.get('cell')!r} has no x axis to plot against")
    points = [r for r in report["groups"] if r["x"] is not None]
    if not points:
        raise RFTheoryError("the store holds no finished cell to plot yet")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    base = Path(path)
    base = base.with_suffix("") if base.suffix.lower() in (".png", ".pdf") else base
    metrics = report["metrics"]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.6 * len(metrics), 3.6), squeeze=False)
    lines: dict[str, list[dict]] = {}
    for row in points:
        lines.setdefault(canonical_json(row["line"]), []).append(row)
    for ax, metric in zip(axes[0], metrics):
        log = bool(report["metric_log"].get(metric))
        for rows in lines.values():
            rows = [r for r in rows if r["stats"].get(metric, {}).get("finite")]
            if not rows:
                continue
            stats = [r["stats"][metric] for r in rows]
            if log:
                centre = [s["median"] for s in stats]
                spread = [[s["median"] - s["min"] for s in stats],
                          [s["max"] - s["median"] for s in stats]]
            else:
                centre, spread = [s["mean"] for s in stats], [s["std"] for s in stats]
            label = ", ".join(f"{k}={v}" for k, v in rows[0]["line"].items()) or None
            ax.errorbar([r["x"] for r in rows], centre, yerr=spread, marker="o", ms=3,
                        capsize=2, label=label)
        ax.axvline(1.0, color="0.6", ls="--", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        if log:
            ax.set_yscale("log")
        ax.set_xlabel(report["x"]["label"])
        ax.set_ylabel(report["metric_labels"].get(metric, metric))
        ax.set_title("median, min–max over seeds" if log else "mean ± std over seeds", fontsize=8)
        if ax.get_legend_handles_labels()[0] and len(lines) > 1:
            ax.legend(fontsize=7)
    seeds = max(r["seeds"] for r in points)
    fig.suptitle(f"{report.get('name') or report.get('cell')}: {report.get('cell')} cells, "
                 f"up to {seeds} seeds per point", fontsize=9)
    fig.tight_layout()
    written = []
    for suffix in (".png", ".pdf"):
        out = base.with_suffix(suffix)
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=150)
        written.append(out)
    plt.close(fig)
    return written


def comparable_results(out_dir: str | Path) -> dict[str, tuple[str, dict]]:
    """``{cell key: (status, result without timing keys)}`` of a store — to compare two runs."""
    with SweepStore.open_reader(out_dir) as store:
        scan = store.scan()
    out = {}
    for key, cell in scan.cells.items():
        result = {k: v for k, v in cell.result.items() if k not in TIMING_KEYS}
        if cell.status == "error":
            result = {"error": cell.result.get("error")}
        out[key] = (cell.status, result)
    return out

