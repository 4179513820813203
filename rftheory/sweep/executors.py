"""Where cells run: any :class:`concurrent.futures.Executor` — local processes or dask — and
the BLAS thread count of the workers (pinned, for speed and for bit-identical cells)."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
from dataclasses import dataclass
from typing import Iterator

from ..errors import RFTheoryError
from ..processes import available_cpus, check_workers

__all__ = ["ExecutorHandle", "check_executor_choice", "open_executor", "limit_blas_threads"]


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

    Parameters
    ----------
    threads : int
        Threads per BLAS/OpenMP pool.
    """
    for name in _BLAS_ENV:
        os.environ[name] = str(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn depends on threadpoolctl
        return
    threadpool_limits(limits=threads)


@dataclass(frozen=True)
class ExecutorHandle:
    """An open executor, a one-line description of it, and how many cells it runs at once.

    Attributes
    ----------
    executor : concurrent.futures.Executor
        The executor cells are submitted to.
    description : str
        E.g. ``"dask LocalCluster (4 workers)"``.
    slots : int
        Cells it runs at once.
    """

    executor: cf.Executor
    description: str
    slots: int


def cpu_count() -> int:
    """CPUs this process may use (:func:`rftheory.budget.available_cpus`): the default count of
    local workers.

    Returns
    -------
    int
        At least 1.
    """
    return available_cpus()


def check_executor_choice(*, workers: int | None = None, dask_scheduler: str | None = None,
                          dask_local: int | None = None) -> None:
    """Refuse a bad executor choice (conflicting options, counts < 1 or above the CPUs this
    process may use, dask not installed).

    More local workers than CPUs are refused rather than capped: cells are CPU-bound, so extra
    workers only slow every cell down (and each holds its memory), and a silent cap would run
    something else than what was asked.

    Parameters
    ----------
    workers : int, optional
        Processes of a local ProcessPoolExecutor (at most the CPUs this process may use).
    dask_scheduler : str, optional
        Address of a running ``dask.distributed`` scheduler.
    dask_local : int, optional
        Worker processes of a ``LocalCluster`` started here.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If more than one is given, a count is below 1 or above the CPUs, or dask is missing.
    """
    for name, value in (("--workers", workers), ("--dask-local", dask_local)):
        if value is not None:
            check_workers(value, name)  # the package's one rule (rftheory.processes)
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

    Parameters
    ----------
    workers : int, optional
        Processes of a local ProcessPoolExecutor (at most the CPUs this process may use).
    dask_scheduler : str, optional
        Address of a running ``dask.distributed`` scheduler.
    dask_local : int, optional
        Worker processes of a ``LocalCluster`` started here.

    Yields
    ------
    ExecutorHandle
        The open executor, its description and its slots.
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
    workers = cpu_count() if workers is None else workers
    import multiprocessing

    from ..processes import process_pool, stop_pool

    # forkserver: workers start from a clean process, not a fork of one holding threads (tqdm's
    # monitor, BLAS pools), which can deadlock; spawn where forkserver does not exist. The
    # workers die with this process (rftheory.processes).
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    executor = process_pool(workers, method=method)
    try:
        yield ExecutorHandle(executor, f"{workers} local processes", workers)
    except BaseException:
        stop_pool(executor)  # an interrupt or a failure: do not finish the running cells first
        raise
    else:
        executor.shutdown(wait=True, cancel_futures=True)
