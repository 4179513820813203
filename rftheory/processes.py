"""Worker processes that die with the process that started them.

``concurrent.futures.ProcessPoolExecutor`` workers outlive a parent that is killed: with the
``forkserver`` start method their parent is the fork server, which itself stays alive while any
worker holds its "alive" pipe, and the resource tracker stays alive while any of them holds its
pipe; an idle worker blocks forever on a call queue whose write end it holds itself. So a
``kill -9`` of ``rftheory sweep run`` or ``rftheory demo`` used to leave the workers (one at
full CPU for minutes, the idle ones for ever), the fork server and the resource tracker behind.

:func:`process_pool` returns an executor whose ``submit`` defers SIGINT and SIGTERM until a
worker it starts is listed (so that :func:`stop_pool` can kill it), and whose workers run
``_die_with_parent`` first:

* a daemon thread waits on a pidfd of the starting process (``os.pidfd_open``, Linux ≥ 5.3;
  elsewhere it polls the pid once a second) and SIGKILLs its own worker when that process is
  gone — a worker whose parent is gone has no one to return its result to;
* ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` where the worker's parent *is* the starting process
  (the ``fork`` and ``spawn`` methods; Linux), so the kernel kills it at once, even while a C
  extension holds the GIL;
* SIGINT is ignored (a Ctrl-C at a terminal reaches the whole process group: the parent
  handles it and stops the workers, which should not each print a KeyboardInterrupt) and
  SIGTERM is reset to its default.

Once the workers are gone the fork server reads EOF on its alive pipe and exits, and the
resource tracker reads EOF on its pipe and exits: nothing of the run survives it. dask's
workers already exit when their nanny's pipe closes (``distributed.process.AsyncProcess``), and
a ``LocalCluster``'s nannies live in the starting process, so a dask-local run needs nothing
more. :func:`stop_pool` ends a pool at once (on an interrupt), instead of letting
``shutdown(wait=True)`` finish every running task first.

Notes
-----
The watchdog thread needs the GIL to act, so a worker stuck in a C call that holds the GIL
(numpy releases it in BLAS and large ufunc loops; pure-Python code yields it every 5 ms) dies
when the call returns; with ``fork``/``spawn`` the death signal does not wait even for that.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["available_cpus", "check_workers", "child_context", "cpu_share", "process_pool",
           "stop_pool"]

_PR_SET_PDEATHSIG = 1


def _set_death_signal(parent: int) -> None:
    """PR_SET_PDEATHSIG = SIGKILL when the parent is ``parent`` (Linux only; no-op elsewhere)."""
    if not sys.platform.startswith("linux") or os.getppid() != parent:
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        return
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


def _watch(parent: int) -> None:
    """Block until process ``parent`` exits, then kill this process."""
    try:
        fd = os.pidfd_open(parent)
    except ProcessLookupError:
        fd = None
        gone = True
    except (AttributeError, OSError):  # not Linux >= 5.3: poll the pid
        fd, gone = None, False
    else:
        gone = False
    if fd is not None:
        # a pidfd becomes readable when its process exits; poll, not select: select() cannot
        # watch a descriptor >= FD_SETSIZE (1024), which a worker of a large pool may hold
        watcher = select.poll()
        watcher.register(fd, select.POLLIN)
        while not watcher.poll():
            pass
    elif not gone:
        while True:
            try:
                os.kill(parent, 0)
            except ProcessLookupError:
                break
            except PermissionError:  # pragma: no cover - pid reused by another user's process
                break
            time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGKILL)


#: The signals that stop a run (a handler in the parent raises on them); held while a pool
#: starts a worker (:class:`_Pool`).
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Defer SIGINT and SIGTERM to the end of the block (in the main thread, where Python runs
    signal handlers): they are recorded, and raised again once the handlers are restored.

    A stop signal whose handler raises while the executor starts a worker leaves that worker
    half-started: not yet in the executor's list, so :func:`stop_pool` does not kill it; with
    ``forkserver`` it then fails to reopen the pool's semaphore, which the ending parent has
    unlinked, and prints a traceback (measured: ``sweep run`` killed by SIGTERM 0.7–0.9 s after
    its start printed one in 11 of 40 runs, and in 0 of 40 with the signals held). Masking the
    signals in the main thread is not enough (measured: still 1 in 20): the kernel hands a
    process's signal to any thread that does not mask it (BLAS's, XLA's), and Python then runs
    the handler in the main thread at once.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    before = {s: signal.getsignal(s) for s in _STOP_SIGNALS}
    held = [s for s, handler in before.items() if handler is not None]   # None: set from C

    def record(signum: int, frame: Any) -> None:
        caught.append(signum)

    for s in held:
        signal.signal(s, record)
    try:
        yield
    finally:
        for s in held:
            signal.signal(s, before[s])
        for s in dict.fromkeys(caught):
            signal.raise_signal(s)


class _Pool(cf.ProcessPoolExecutor):
    """A ProcessPoolExecutor whose ``submit`` (which may start a worker) holds the stop
    signals until it returns (:func:`_stop_signals_held`)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> cf.Future:
        with _stop_signals_held():
            return super().submit(fn, *args, **kwargs)


def _die_with_parent(parent: int, share: tuple | None = None) -> None:
    """Initializer of every worker: die with ``parent`` (see the module docstring); with
    ``share`` = (counter, cpus, workers), also keep to this worker's share of the CPUs."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # (a fork inherits _stop_signals_held's record)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _set_death_signal(parent)
    threading.Thread(target=_watch, args=(parent,), name="rftheory-parent-watch",
                     daemon=True).start()
    if share is not None:
        counter, cpus, workers = share
        with counter.get_lock():
            index = counter.value
            counter.value += 1
        os.sched_setaffinity(0, cpu_share(cpus, workers, index))


def cpu_share(cpus: tuple[int, ...], workers: int, index: int) -> tuple[int, ...]:
    """The CPUs of worker ``index`` of ``workers`` when they share ``cpus`` without overlap.

    Every ``workers``-th CPU from the worker's index (its index modulo ``workers``), so each
    worker has ⌊len(cpus)/workers⌋ or one more; with more workers than CPUs they share them
    round-robin.

    Parameters
    ----------
    cpus : tuple of int
        The CPUs to share (e.g. ``sorted(os.sched_getaffinity(0))``).
    workers : int
        Workers sharing them.
    index : int
        This worker's index (taken modulo ``workers``).

    Returns
    -------
    tuple of int
        Non-empty.

    Examples
    --------
    >>> cpu_share((0, 1, 2, 3, 4), 2, 0), cpu_share((0, 1, 2, 3, 4), 2, 1), cpu_share((0,), 2, 1)
    ((0, 2, 4), (1, 3), (0,))
    """
    if not cpus or workers < 1:
        raise ValueError("need at least one CPU and one worker")
    i = index % workers
    return tuple(cpus[i::workers]) or (cpus[i % len(cpus)],)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one).

    Returns
    -------
    int
        At least 1.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def check_workers(workers: object, option: str = "workers") -> int:
    """The one rule for a number of worker processes, in every command and pool: an integer
    from 1 to :func:`available_cpus`.

    More workers than CPUs are refused rather than capped: the tasks are CPU-bound, so extra
    workers only slow each one down (and each holds its memory and its descriptors), and a
    silent cap would run something else than what was asked.

    Parameters
    ----------
    workers : int
        The requested count.
    option : str
        How the message names it (``"--workers"`` on the command line).

    Returns
    -------
    int
        ``workers``.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``workers`` is not an integer >= 1 or exceeds the CPUs.

    Examples
    --------
    >>> check_workers(1)
    1
    >>> check_workers(0)
    Traceback (most recent call last):
    ...
    rftheory.errors.RFTheoryError: workers must be an integer >= 1, got 0
    """
    from .errors import RFTheoryError
    from .inputs import shown

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise RFTheoryError(f"{option} must be an integer >= 1, got {workers!r}"
                            if len(repr(workers)) <= 40 else f"{option} must be an integer >= 1, "
                            f"got {shown(workers)}")
    cpus = available_cpus()
    if workers > cpus:
        count = str(workers) if len(str(workers)) <= 40 else shown(workers)
        raise RFTheoryError(f"{option} {count} is more than the {cpus} CPUs this process may "
                            f"use; give at most {option} {cpus} (the tasks are CPU-bound: more "
                            "workers than CPUs only slow each one down)")
    return workers


#: Warning filter handed to the resource tracker: after a SIGKILL of this process it finds the
#: pool's semaphores still registered and removes them — its job — but says so with a
#: "leaked semaphore objects" UserWarning on the terminal, noise after a kill the sweeps are
#: designed to survive.
_TRACKER_WARNINGS = "ignore::UserWarning:multiprocessing.resource_tracker"


def _start_quiet_resource_tracker() -> None:
    """Start multiprocessing's resource tracker (if not running yet) with
    :data:`_TRACKER_WARNINGS`: it takes its warning filters from ``sys.warnoptions`` when it is
    spawned, which is restored at once. No-op where there is no resource tracker."""
    try:
        from multiprocessing import resource_tracker
    except ImportError:  # pragma: no cover - Windows
        return
    added = _TRACKER_WARNINGS not in sys.warnoptions
    if added:
        sys.warnoptions.append(_TRACKER_WARNINGS)
    try:
        resource_tracker.ensure_running()
    finally:
        if added:
            sys.warnoptions.remove(_TRACKER_WARNINGS)


def child_context(preferred: str | None = None) -> Any:
    """The multiprocessing context to start helper processes with: ``preferred``, unless it would
    fork a process that has imported JAX.

    Parameters
    ----------
    preferred : str, optional
        A start method (``"fork"``, ``"forkserver"``, ``"spawn"``); None: the platform's.

    Returns
    -------
    multiprocessing.context.BaseContext
        ``preferred``'s context; where JAX is loaded and that context would fork, the
        ``forkserver`` one (``spawn`` where forkserver does not exist). XLA's runtime holds
        threads whose locks a fork can leave held, and JAX warns at every fork. A context that
        does not fork has multiprocessing's resource tracker started first, with its "leaked
        semaphore" warnings silenced (after a kill of this process the tracker cleans up, as is
        its job, and has nothing to report).

    Examples
    --------
    >>> child_context("spawn").get_start_method()
    'spawn'
    """
    context = multiprocessing.get_context(preferred)
    if "jax" in sys.modules and context.get_start_method() == "fork":
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if context.get_start_method() != "fork":  # fork children register nothing with the tracker
        _start_quiet_resource_tracker()
    return context


def process_pool(workers: int, *, method: str | None = None,
                 share_cpus: bool = False) -> cf.ProcessPoolExecutor:
    """A ProcessPoolExecutor of ``workers`` processes that die with this process.

    Parameters
    ----------
    workers : int
        Worker processes (the command line allows 1 to the CPUs: :func:`check_workers`).
    method : str, optional
        multiprocessing start method (``"forkserver"``, ``"spawn"``, ``"fork"``). Default: the
        platform's, except that a process which has imported JAX never forks (``"forkserver"``,
        ``"spawn"`` where that does not exist): XLA's runtime holds threads whose locks a fork
        can leave held, and JAX warns at every fork. The platform's ``fork`` is kept otherwise:
        its workers start without importing the package again, and a script that runs a claim
        on several workers needs no ``if __name__ == "__main__":`` guard.
    share_cpus : bool
        Give each worker its own share of this process's CPUs (:func:`cpu_share`, set as its
        affinity where the platform has one). For tasks whose library sizes its thread pool
        from the CPUs it may use and cannot be told otherwise (XLA's CPU runtime: affinity is
        the way JAX documents to limit it): without shares, two workers each run a pool as
        large as the machine, and on 2 cores their threads cost ~20 % of the CPU in contention
        (measured: one deep_law case took 52 s of CPU on 2 cores against 43 s on one).

    Returns
    -------
    concurrent.futures.ProcessPoolExecutor
        The executor; its workers ignore SIGINT and are killed when this process ends.

    Examples
    --------
    >>> with process_pool(1) as pool:
    ...     pool.submit(abs, -3).result()
    3
    """
    if method is None:
        context = child_context()
    else:
        context = multiprocessing.get_context(method)
        if method != "fork":
            _start_quiet_resource_tracker()
    share = None
    if share_cpus and hasattr(os, "sched_setaffinity"):
        share = (context.Value("i", 0), tuple(sorted(os.sched_getaffinity(0))), workers)
    return _Pool(max_workers=workers, mp_context=context,
                 initializer=_die_with_parent, initargs=(os.getpid(), share))


def stop_pool(executor: cf.ProcessPoolExecutor) -> None:
    """End a pool now: cancel what has not started and kill the workers (their tasks are lost).

    For an interrupt: ``shutdown(wait=True)`` would first finish every running task (and,
    without ``cancel_futures``, every queued one).

    Parameters
    ----------
    executor : concurrent.futures.ProcessPoolExecutor
        A pool (from :func:`process_pool`); it is shut down without waiting.
    """
    processes = list((getattr(executor, "_processes", None) or {}).values())
    for process in processes:
        try:
            process.kill()
        except (OSError, ValueError, AttributeError):  # already gone or closed
            pass
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        try:
            process.join(timeout=5)
        except (OSError, ValueError, AttributeError, AssertionError):
            pass
