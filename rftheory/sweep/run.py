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
from typing import Any, Iterable, Mapping

from ..output import to_jsonable
from .cells import CELL_KINDS
from .executors import ExecutorHandle, _cpu_count, check_executor_choice, limit_blas_threads, open_executor
from .spec import Cell, SweepSpec, canonical_json
from .store import STORE_FILE, StoreScan, SweepStore, SweepStoreError

__all__ = ["SweepRun", "SweepAbortedError", "run_cell", "run_sweep", "plan_sweep"]


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
                computed, errors = _collect(handle.executor, blas_threads, pending,
                                            store, run_id, window, bar)
                status = "finished"
            except KeyboardInterrupt:
                status = "interrupted"
                raise
            finally:
                store.finish_run(run_id, status)
    return SweepRun(str(store.path), len(keys), already, planned, computed, errors,
                    corrupt, time.perf_counter() - start, handle.description, run_id)


def _collect(executor: cf.Executor, blas_threads: int | None,
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
            in_flight[executor.submit(run_cell, cell.kind, dict(cell.params), blas_threads)] = cell

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
