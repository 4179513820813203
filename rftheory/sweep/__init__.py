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

**Before anything runs** (:func:`check_sweep_size`): the cells are counted without building
the grid (:meth:`SweepSpec.count_cells`; a grid beyond :data:`MAX_CELLS` is refused when the
file is read), and the memory of the largest cell (declared by
:func:`rftheory.cells.cell_memory`), of that many cells at once on the workers, and of the
collector's scan of the store (:data:`rftheory.sweep.store.SCANNED_ROW_BYTES` per cell) is
checked against the limit of :mod:`rftheory.budget` — at ``--dry-run`` too. Time is not
estimated: a tqdm bar shows the cells done and the rate measured in this run, and a deadline
(``--time-limit``) stops the run, keeping every finished cell. The grid's cells are generated
lazily, in constant memory, and stored cells are matched against the grid by
:meth:`SweepSpec.contains`.

**The definition of V.** A store records the definition of V its cells were computed with
(:data:`rftheory.features.V_DEFINITION`; a store without the record was written before it
existed and is taken as :data:`LEGACY_V_DEFINITION`). Cells of another V are never resumed into:
such a store is refused with a message to use a new directory; its report still works and says
which V produced it.

**Interrupted runs.** Each run is recorded with its host and pid. SIGINT and SIGTERM stop a run
cleanly (its workers are stopped, it is recorded ``interrupted``); a run recorded ``running``
whose writer lock is free (the process was killed) reads as ``interrupted``, and the next
writer records it so. Worker processes die with the collecting process however it dies
(:mod:`rftheory.processes`).

**Determinism.** A cell is a pure function of its parameters; the one environmental input that
changes its last bits, the BLAS thread count, is pinned to 1 in every worker process
(:func:`limit_blas_threads`), so a cell gives the same numbers on any worker.

**Modules**, one per object: :mod:`~rftheory.sweep.cells` (the registry of cell kinds, functions of
:mod:`rftheory.pipeline`), :mod:`~rftheory.sweep.spec` (sweep files and a cell's identity),
:mod:`~rftheory.sweep.store` (the SQLite store), :mod:`~rftheory.sweep.export` (a store's compact
gzip'd JSON-lines export, for keeping a finished sweep in a repository), :mod:`~rftheory.sweep.executors` (local processes,
dask, BLAS threads), :mod:`~rftheory.sweep.run` (the run loop and what a worker does with a cell)
and :mod:`~rftheory.sweep.report` (statistics over seeds, the figure). Their public names are all
importable from :mod:`rftheory.sweep`.
"""

from .cells import CELL_KINDS, CellKind, Metric
from .export import export_store, read_export
from .executors import ExecutorHandle, check_executor_choice, limit_blas_threads, open_executor
from .report import TIMING_KEYS, comparable_results, plot_sweep_report, sweep_report
from .run import SweepAbortedError, SweepRun, check_sweep_size, plan_sweep, run_cell, run_sweep
from .spec import (MAX_CELLS, Cell, SweepSpec, SweepSpecError, canonical_json, cell_key,
                   load_spec, parse_spec)
from .store import (LEGACY_V_DEFINITION, STORE_FILE, StoredCell, StoreScan, SweepStore,
                    SweepStoreError)

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
    "StoredCell",
    "StoreScan",
    "SweepRun",
    "STORE_FILE",
    "TIMING_KEYS",
    "ExecutorHandle",
    "load_spec",
    "parse_spec",
    "check_executor_choice",
    "open_executor",
    "run_sweep",
    "sweep_report",
    "plot_sweep_report",
    "run_cell",
    "limit_blas_threads",
    "canonical_json",
    "cell_key",
    "comparable_results",
    "plan_sweep",
    "export_store",
    "read_export",
    "check_sweep_size",
    "MAX_CELLS",
    "LEGACY_V_DEFINITION",
]
