"""Running a sweep: the cells not yet stored go to the executor in a bounded window, and each
result is committed the moment its future completes (:func:`run_sweep`); what one worker does
with one cell is :func:`run_cell`.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import os
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..deadline import NO_DEADLINE, TIME_LIMIT_REACHED, Deadline
from ..features import V_DEFINITION
from ..output import to_jsonable
from .cells import CELL_KINDS
from .executors import ExecutorHandle, check_executor_choice, cpu_count, limit_blas_threads, open_executor
from .spec import Cell, SweepSpec, canonical_json
from .store import SCANNED_ROW_BYTES, STORE_FILE, StoreScan, SweepStore, SweepStoreError

__all__ = ["SweepRun", "SweepAbortedError", "run_cell", "run_sweep", "plan_sweep",
           "check_sweep_size"]


class SweepAbortedError(RuntimeError):
    """The executor failed (a worker died, the scheduler went away); finished cells are stored."""


def run_cell(kind: str, params: Mapping[str, Any], blas_threads: int | None = 1) -> dict:
    """Run one cell of kind ``kind`` (a key of :data:`CELL_KINDS`) in the current process; what
    every worker executes.

    Returns ``{"status": "ok", "payload": <canonical JSON of the result>, ...}`` or, when the cell
    raised, ``{"status": "error", "payload": <canonical JSON of {"error", "traceback"}>}`` —
    a cell's own exception is a result to store, never a reason to stop the sweep. Exceptions
    that escape (the worker dying, unpicklable arguments) are the executor's and abort the sweep.

    ``blas_threads`` (None: leave as is) first fixes the BLAS thread count of the executing
    process when the cell runs in its main thread, see :func:`limit_blas_threads`.

    Parameters
    ----------
    kind : str
        The cell kind.
    params : mapping
        The keyword arguments of its function.
    blas_threads : int or None
        BLAS threads of this process while the cell runs (default 1).

    Returns
    -------
    dict
        ``status`` (``"ok"`` or ``"error"``), ``payload`` (canonical JSON text), ``seconds``
        (wall time) and ``worker`` (``"host:pid"``).
    """
    if blas_threads is not None and threading.current_thread() is threading.main_thread():
        limit_blas_threads(blas_threads)
    start = time.perf_counter()
    try:
        result = CELL_KINDS[kind].function(**params)
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


@dataclass(frozen=True)
class SweepRun:
    """What one :func:`run_sweep` call did.

    Attributes
    ----------
    store : str
        Path of the store file.
    total : int
        Cells of the sweep.
    already_done : int
        Cells found in the store and skipped.
    planned : int
        Cells this call set out to compute.
    computed : int
        Cells computed and stored by this call.
    errors : int
        Of those, cells whose function raised (stored as errors).
    corrupt_recomputed : int
        Rows that failed verification, deleted and recomputed.
    seconds : float
        Wall time of the call.
    executor : str
        One-line description of the executor.
    run_id : int or None
        The run's id in the store.
    stop_reason : str
        ``"finished"``, or ``"time_limit"`` when the deadline stopped the run (the cells not
        computed stay to do: ``--resume`` continues).
    """

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
    stop_reason: str = "finished"

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


#: Parameters a cell's memory depends on (the others — activation, seed, labels — do not).
_SIZE_KEYS = ("d", "n", "p", "p_mult", "n_hat", "method")


def _cell_memory(kind: str, params: Mapping[str, Any]) -> Any:
    from ..cells import cell_memory
    from .spec import p_from_expression

    params = dict(params)
    if "p_mult" in params:
        params["p"] = params.pop("p_mult") * params["d"] * params["n"]
    elif isinstance(params.get("p"), str):  # "n-1", "0.25dn": the p of these d and n
        params["p"] = p_from_expression(params["p"], d=params["d"], n=params["n"])
    return cell_memory(kind, params)


def _largest(name: str, values: Sequence[Any], sizes: Mapping[str, Any]) -> Any:
    """The value of size axis ``name`` that gives the largest cell; a p axis holding expressions
    is ordered by their p at the largest d and n (every expression grows with both)."""
    from .spec import p_from_expression

    if name == "p" and any(isinstance(v, str) for v in values):
        d, n = sizes["d"], sizes["n"]
        return max(values, key=lambda v: p_from_expression(v, d=d, n=n) if isinstance(v, str)
                   else v)
    return max(values)


def check_sweep_size(spec: SweepSpec, *, slots: int | None, planned: int | None = None,
                     memory_limit: float | str | None = None,
                     via: str = "memory_limit=") -> dict:
    """Refuse a sweep whose cells cannot fit in memory, from the sizes alone, before anything
    runs (:func:`rftheory.budget.check`, raising :class:`~rftheory.errors.ResourceLimitError`).

    Three checks: the collector's scan of the store (every cell's row in memory,
    :data:`rftheory.sweep.store.SCANNED_ROW_BYTES` each: a 10⁸-cell grid is refused by counting),
    the largest cell alone (every size parameter at its largest value: an upper
    bound of every cell, since a cell's memory grows with each of them; its memory is declared
    by :func:`rftheory.cells.cell_memory`), and ``slots`` such cells at once. The grid is
    never built; how many cells it has is counted (:meth:`SweepSpec.count_cells`; a grid beyond
    :data:`rftheory.sweep.MAX_CELLS` is refused when the file is read). Time is not estimated:
    a deadline stops the run (:func:`run_sweep`).

    ``slots=None`` (a remote dask cluster, whose machines are not this one): nothing is checked
    against this machine.

    Parameters
    ----------
    spec : SweepSpec
        The sweep.
    slots : int or None
        Cells run at once (None: a remote cluster, see above).
    planned : int, optional
        Cells to be computed (default all of the grid).
    memory_limit : float or str, optional
        The limit of :func:`rftheory.budget.check` (bytes or a size string).
    via : str
        How messages name the limit (the CLI passes its option name).

    Returns
    -------
    dict
        For a dry run's report: ``cells``, ``planned``, ``largest_cell`` (``params``, ``job``,
        ``peak_bytes``), ``scan_bytes`` and ``workers``.

    Raises
    ------
    rftheory.errors.ResourceLimitError
        If a check fails.
    """
    from ..budget import Memory, check

    kind = spec.cell
    count = spec.count_cells()
    planned = count if planned is None else planned
    size_axes = [(k, v) for k, v in spec.axes if k in _SIZE_KEYS]
    fixed = {k: v for k, v in spec.fixed if k in _SIZE_KEYS}
    largest_params = dict(fixed) | {k: max(v) for k, v in size_axes if k not in ("p", "method")}
    largest_params |= {k: _largest(k, v, largest_params) for k, v in size_axes if k == "p"}
    for k, v in size_axes:  # the method whose cell needs most memory at these sizes
        if k == "method":
            largest_params[k] = max(v, key=lambda m: _cell_memory(
                kind, largest_params | {"method": m}).peak_bytes)
    largest = _cell_memory(kind, largest_params)
    where = ", ".join(f"{k} = {largest_params[k]:.3g}" if isinstance(largest_params[k], float)
                      else f"{k} = {largest_params[k]}" for k in sorted(largest_params))
    one = largest.named(f"the largest cell of this sweep ({kind}: {where})")
    scan = count * SCANNED_ROW_BYTES
    check(Memory(f"the collector's scan of a store of {count:.3g} cells (at least "
                 f"{SCANNED_ROW_BYTES} B each); split the grid into several sweeps", scan),
          memory_limit=memory_limit, via=via)
    if slots is not None:
        check(one, memory_limit=memory_limit, via=via)
        if slots > 1:
            check(largest.times(slots, f"{slots} workers each running a cell as large as the "
                                       f"largest ({where}); use fewer workers or smaller cells"),
                  memory_limit=memory_limit, via=via)
    return {"cells": count, "planned": planned,
            "largest_cell": {"params": largest_params, "job": largest.job,
                             "peak_bytes": largest.peak_bytes},
            "scan_bytes": scan, "workers": slots or 1}


def _check_resume(store: SweepStore, scan: StoreScan, spec: SweepSpec, resume: bool) -> None:
    """Apply the resume policy: cells already stored must all belong to the new sweep, and must
    have been computed with this rftheory's V."""
    rows = len(scan.cells) + len(scan.corrupt)
    if rows and not resume:
        raise SweepStoreError(f"{store.directory} already holds a sweep with {rows} finished "
                              "cells: pass --resume to continue it, or choose another --out")
    stored_v, recorded = store.v_definition()
    if scan.cells and stored_v != V_DEFINITION:
        raise SweepStoreError(
            f"{store.directory} holds cells computed with V = {stored_v}"
            + ("" if recorded else " (the store does not record V: written before it did)")
            + f", and this rftheory draws V = {V_DEFINITION}: they cannot be continued into "
              "one sweep; use a new --out directory (sweep report still reads the old one)")
    foreign = [k for k, c in scan.cells.items() if not spec.contains(c.kind, c.params)]
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
               retry_errors: bool = False, slots: int | None = None,
               memory_limit: float | str | None = None, via: str = "memory_limit=") -> dict:
    """Count what :func:`run_sweep` would do, reading the store (if any) without changing it,
    and apply the same checks: the resume policy and the size guards
    (:func:`check_sweep_size` with ``slots`` workers, default the CPUs).

    Parameters
    ----------
    spec : SweepSpec
        The sweep.
    out_dir : str or Path
        Directory of the store (read only, if it exists).
    resume, retry_errors : bool
        As in :func:`run_sweep` (default False).
    slots : int, optional
        Workers assumed by the size guard (default: the CPUs this process may use).
    memory_limit : float or str, optional
        The limit of :func:`rftheory.budget.check` (bytes or a size string).
    via : str
        How messages name the limit (the CLI passes its option name).

    Returns
    -------
    dict
        ``store``, ``total``, ``already_done``, ``corrupt``, ``planned`` (cells a run would
        compute) and ``estimate`` (:func:`check_sweep_size`'s).

    Raises
    ------
    rftheory.sweep.SweepStoreError
        If the store may not be resumed into by this sweep.
    rftheory.errors.ResourceLimitError
        If the sweep's cells cannot fit in memory.
    """
    total = spec.count_cells()
    summary = {"store": str(Path(out_dir) / STORE_FILE), "total": total, "already_done": 0,
               "corrupt": 0, "planned": total}
    if (Path(out_dir) / STORE_FILE).is_file():
        with SweepStore.open_reader(out_dir) as store:
            scan = store.scan()
            _check_resume(store, scan, spec, resume)
        done = _finished(scan, retry_errors, spec)
        summary.update(already_done=len(done), corrupt=len(scan.corrupt),
                       planned=total - len(done))
    summary["estimate"] = check_sweep_size(
        spec, slots=cpu_count() if slots is None else slots, planned=summary["planned"],
        memory_limit=memory_limit, via=via)
    return summary


def _finished(scan: StoreScan, retry_errors: bool, spec: SweepSpec) -> set[str]:
    """Keys of the stored cells of ``spec`` that a run skips."""
    return {k for k, c in scan.cells.items()
            if (c.status == "ok" or not retry_errors) and spec.contains(c.kind, c.params)}


def run_sweep(spec: SweepSpec, out_dir: str | Path, *, resume: bool = False,
              retry_errors: bool = False, workers: int | None = None,
              dask_scheduler: str | None = None, dask_local: int | None = None,
              executor: cf.Executor | None = None, max_in_flight: int | None = None,
              blas_threads: int | None = 1, progress: bool = False,
              memory_limit: float | str | None = None, via: str = "memory_limit=",
              deadline: Deadline | None = None) -> SweepRun:
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
    memory_limit, via
        The memory guard's limit (:func:`check_sweep_size`, :mod:`rftheory.budget`), applied
        before the store is touched.
    deadline : rftheory.deadline.Deadline, optional
        When it passes, no further cell starts, the running cells are stopped (not stored: they
        are recomputed by ``--resume``), every finished cell stays stored, and the result says
        ``stop_reason = "time_limit"``. Default: none.

    Returns
    -------
    SweepRun
        Counts of what was found, computed and failed, the wall time and the executor.

    Raises
    ------
    SweepStoreError
        The store belongs to another sweep or another definition of V, is locked by another
        writer, or is damaged.
    ResourceLimitError
        The sweep's cells cannot fit in memory.
    SweepAbortedError
        The executor failed; every cell collected before the failure is stored.
    KeyboardInterrupt
        SIGINT (or SIGTERM through :mod:`rftheory.cli`): the workers are stopped, the run is
        recorded as interrupted, every cell collected before is stored; the exception carries
        a note saying how many.
    """
    start = time.perf_counter()
    deadline = NO_DEADLINE if deadline is None else deadline
    if executor is None:  # refuse a bad choice before the store is touched
        check_executor_choice(workers=workers, dask_scheduler=dask_scheduler,
                              dask_local=dask_local)
        slots = None if dask_scheduler is not None else (workers or dask_local or cpu_count())
    else:
        slots = getattr(executor, "_max_workers", None) or cpu_count()
    total = spec.count_cells()
    check_sweep_size(spec, slots=slots, planned=0, memory_limit=memory_limit, via=via)
    with SweepStore.open_writer(out_dir) as store:
        scan = store.scan()
        _check_resume(store, scan, spec, resume)
        done = _finished(scan, retry_errors, spec)
        already, planned = len(done), total - len(done)
        store.record_spec(spec, total)
        if not scan.cells:
            store.record_v_definition()
        if scan.corrupt:  # their cells are not in `done`, so they are recomputed below
            store.delete_rows(scan.corrupt)
        corrupt = len(scan.corrupt)
        pending = (c for c in spec.cells() if c.key not in done)
        if not planned:
            return SweepRun(str(store.path), total, already, 0, 0, 0, corrupt,
                            time.perf_counter() - start, "none (nothing to do)", None)
        with contextlib.ExitStack() as stack:
            if executor is None:
                handle = stack.enter_context(open_executor(
                    workers=workers, dask_scheduler=dask_scheduler, dask_local=dask_local))
            else:
                handle = ExecutorHandle(executor, type(executor).__name__, slots)
            window = max_in_flight or 2 * handle.slots
            run_id = store.start_run(handle.description, planned)
            bar = None
            if progress:
                from tqdm import tqdm

                bar = stack.enter_context(tqdm(total=total, initial=already, unit="cell",
                                               desc=spec.name or "sweep", file=sys.stderr,
                                               dynamic_ncols=True, smoothing=0.05))
            status = "failed"
            counts = _Counts()
            try:
                _collect(handle.executor, blas_threads, pending, store, run_id, window, bar,
                         counts, deadline)
                status = "finished"
            except _DeadlinePassed:
                status = TIME_LIMIT_REACHED
                if isinstance(handle.executor, cf.ProcessPoolExecutor):
                    from ..processes import stop_pool

                    stop_pool(handle.executor)  # the running cells are not waited for
            except KeyboardInterrupt as exc:
                status = "interrupted"
                exc.add_note(f"{counts.computed} cells of this run and {already} before it are "
                             f"stored in {store.path}; rerun with --resume to compute the rest")
                raise
            finally:
                store.finish_run(run_id, status)
    return SweepRun(str(store.path), total, already, planned, counts.computed, counts.errors,
                    corrupt, time.perf_counter() - start, handle.description, run_id,
                    TIME_LIMIT_REACHED if status == TIME_LIMIT_REACHED else "finished")


class _DeadlinePassed(Exception):
    """The run's deadline passed while cells were in flight (:func:`_collect`)."""


@dataclass
class _Counts:
    computed: int = 0
    errors: int = 0


def _collect(executor: cf.Executor, blas_threads: int | None,
             pending: Iterable[Cell], store: SweepStore, run_id: int, window: int,
             bar: Any, counts: _Counts, deadline: Deadline = NO_DEADLINE) -> None:
    """Keep ``window`` cells in flight; store each result the moment its future completes
    (``counts`` says how many, also when an interrupt stops the loop); raise
    :class:`_DeadlinePassed` once ``deadline`` has passed."""
    queue = iter(pending)
    in_flight: dict[cf.Future, Cell] = {}

    def refill() -> None:
        while len(in_flight) < window:
            cell = next(queue, None)
            if cell is None:
                return
            in_flight[executor.submit(run_cell, cell.kind, dict(cell.params), blas_threads)] = cell

    try:
        refill()
        while in_flight:
            timeout = deadline.remaining() if deadline.finite else None
            finished, _ = cf.wait(in_flight, timeout=timeout, return_when=cf.FIRST_COMPLETED)
            if not finished:
                raise _DeadlinePassed
            for future in finished:
                cell = in_flight.pop(future)
                try:
                    outcome = future.result()
                except Exception as exc:  # noqa: BLE001 - the executor's failure, not the cell's
                    raise SweepAbortedError(
                        f"the executor failed while running a cell ({type(exc).__name__}: "
                        f"{str(exc).splitlines()[0] if str(exc) else 'no message'}); "
                        f"{counts.computed} cells of this run are stored — rerun with "
                        "--resume") from exc
                store.put(cell, outcome, run_id)
                counts.computed += 1
                counts.errors += outcome["status"] == "error"
                if bar is not None:
                    bar.update(1)
                    if counts.errors:
                        bar.set_postfix(errors=counts.errors, refresh=False)
            if deadline.passed():
                raise _DeadlinePassed
            refill()
    finally:
        for future in in_flight:
            future.cancel()
