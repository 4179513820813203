"""The task runner and the provenance of results: general tools of the claims and the report card.

* :func:`run_tasks` runs zero-argument calls in worker processes (:mod:`rftheory.processes`), in
  a fixed result order, with an optional deadline (:class:`TimeLimitReached` says what finished);
  :func:`run_stages` runs independent groups of calls in stages, each group's next stage chosen
  from its own results as soon as they are in (an adaptive design per group, no group waiting
  for another's stage);
  :func:`default_workers` is the count a run uses unless told;
* :func:`source_digests` and :func:`environment` describe the code and the packages that produced
  a number (stored with every result, so that numbers from different code are never silently
  compared).

Memory: O(number of tasks) here; each task declares its own.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import platform
import time
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from rftheory.deadline import NO_DEADLINE, Deadline
from rftheory.processes import process_pool, stop_pool

__all__ = ["SOURCE_MODULES", "TimeLimitReached", "code_version", "default_workers",
           "describe_task", "environment", "run_stages", "run_tasks", "source_digests"]

T = TypeVar("T")

#: Modules whose code decides a reconstruction's numbers (the optimiser is still being tuned).
SOURCE_MODULES = ("pipeline", "cells", "reconstruct", "varpro", "projection", "features", "fit",
                  "blocksum", "gram", "activations", "philox", "metrics", "data")


def default_workers(workers: int | None = None) -> int:
    """Worker processes of a claim's run: ``workers`` (at least 1), or min(2, CPUs).

    Two by default: the claims' tasks are small, and results never depend on the count.

    Parameters
    ----------
    workers : int, optional
        The requested count (values below 1 give 1); default None: min(2, CPUs).

    Returns
    -------
    int
        The number of worker processes, at least 1.

    Examples
    --------
    >>> default_workers(4), default_workers(0)
    (4, 1)
    """
    return min(2, os.cpu_count() or 1) if workers is None else max(1, int(workers))


class TimeLimitReached(Exception):
    """A claim's tasks stopped at the deadline (:func:`run_tasks`); :func:`run_claim` turns it
    into a partial result.

    Attributes
    ----------
    finished : list of str
        The tasks that finished, described.
    not_run : list of str
        The tasks that did not run (or did not finish), described.
    """

    def __init__(self, finished: list[str], not_run: list[str]) -> None:
        super().__init__(f"time limit reached: {len(finished)} tasks finished, "
                         f"{len(not_run)} did not run")
        self.finished, self.not_run = finished, not_run


def describe_task(call: Callable[[], Any]) -> str:
    """A task in a partial result: a ``functools.partial``'s arguments, else its repr.

    Parameters
    ----------
    call : callable
        One of :func:`run_tasks`'s calls.

    Returns
    -------
    str
        Its arguments, e.g. ``"{'d': 5, 'n': 10, 'p': 50}"``.

    Examples
    --------
    >>> from functools import partial
    >>> describe_task(partial(print, 1, sep="-"))
    "1, sep='-'"
    """
    args = getattr(call, "args", ())
    keywords = getattr(call, "keywords", {})
    if args or keywords:
        parts = [str(a) for a in args] + [f"{k}={v!r}" for k, v in keywords.items()]
        return ", ".join(parts)
    return repr(call)


def run_tasks(calls: Sequence[Callable[[], T]], *, workers: int,
              order: Sequence[int] | None = None,
              on_result: Callable[[int, T], None] | None = None,
              deadline: Deadline | None = None, share_cpus: bool = False) -> list[T]:
    """Run every call, ``workers`` processes at a time (in this process when 1); results in call order.

    Parameters
    ----------
    calls : sequence of zero-argument callables
        Picklable for ``workers > 1`` (e.g. ``functools.partial`` of a module-level function).
    workers : int
        Processes; results do not depend on it (every call is a function of its arguments).
    order : sequence of int, optional
        The order in which calls are started (default: as given) — e.g. the longest first, so
        that no long call is left alone at the end while the other workers idle.
    on_result : callable, optional
        ``on_result(index, result)``, in this process as each call finishes (progress lines).
    deadline : rftheory.deadline.Deadline, optional
        When it passes, no further call starts and the running ones are stopped (their worker
        processes ended; with ``workers == 1`` the running call finishes first), and
        :class:`TimeLimitReached` says which calls finished and which did not.
    share_cpus : bool
        Each worker process keeps to its own share of the CPUs
        (:func:`rftheory.processes.process_pool`); for calls whose threads cannot be limited
        otherwise (JAX). Results do not depend on it.

    Returns
    -------
    list
        The calls' results, in the order of ``calls`` (whatever ``order`` and ``workers``).

    Raises
    ------
    TimeLimitReached
        If the deadline passed before every call finished.

    Examples
    --------
    >>> run_tasks([lambda: 1, lambda: 2], workers=1, order=[1, 0])
    [1, 2]
    """
    order = list(range(len(calls))) if order is None else list(order)
    results: list[Any] = [None] * len(calls)

    def finished(g: int, stage: int, result: T) -> None:
        results[order[g]] = result
        if on_result is not None:
            on_result(order[g], result)

    # every call a group of one stage, started in ``order``: run_stages' pool and deadline
    run_stages([[calls[i]] for i in order], lambda g, done: [], workers=workers,
               on_result=finished, deadline=deadline, share_cpus=share_cpus)
    return results


def run_stages(first: Sequence[Sequence[Callable[[], T]]],
               next_stage: Callable[[int, list[T]], Sequence[Callable[[], T]]], *,
               workers: int, on_result: Callable[[int, int, T], None] | None = None,
               deadline: Deadline | None = None,
               share_cpus: bool = False) -> list[list[list[T]]]:
    """Run groups of calls in stages, each group's next stage decided by its own results.

    Group g runs ``first[g]``; when every call of its current stage has finished,
    ``next_stage(g, results)`` (``results``: all of the group's results so far, stage by stage,
    each stage in call order) gives its next stage, and an empty one ends the group. A group
    never waits for another's stage, so with several workers no worker idles while some group
    still has work. What each group runs is a function of its own results alone, so the stages
    and their results do not depend on ``workers`` or on timing (only the order in which
    ``next_stage`` and ``on_result`` are called does).

    Parameters
    ----------
    first : sequence of sequences of zero-argument callables
        Each group's first stage (picklable calls for ``workers > 1``).
    next_stage : callable
        ``next_stage(group, results)`` → the group's next calls (empty: the group is done).
    workers : int
        Processes (in this process when 1).
    on_result : callable, optional
        ``on_result(group, stage, result)`` as each call finishes (progress lines).
    deadline : rftheory.deadline.Deadline, optional
        When it passes, no further call starts and the running ones are stopped (their worker
        processes ended; with ``workers == 1`` the running call finishes first), and
        :class:`TimeLimitReached` says which calls finished and which did not.
    share_cpus : bool
        As in :func:`run_tasks`.

    Returns
    -------
    list
        Per group, its stages' results (a list per stage, in call order).

    Examples
    --------
    >>> def more(g, results):  # double until the sum exceeds 5
    ...     return [] if sum(results) > 5 else [lambda: 2 * results[-1]]
    >>> run_stages([[lambda: 1], [lambda: 4, lambda: 3]], more, workers=1)
    [[[1], [2], [4]], [[4, 3]]]
    """
    deadline = NO_DEADLINE if deadline is None else deadline
    stages: list[list[list[Any]]] = [[] for _ in first]
    done_calls: list[Callable[[], Any]] = []

    def flat(g: int) -> list[Any]:
        return [r for stage in stages[g] for r in stage]

    if workers == 1:
        for g, calls in enumerate(first):
            while calls:
                stage: list[Any] = []
                for call in calls:
                    if deadline.passed():
                        later = [c for group in first[g + 1:] for c in group]
                        raise TimeLimitReached([describe_task(c) for c in done_calls],
                                               [describe_task(c) for c in
                                                list(calls[len(stage):]) + later])
                    stage.append(call())
                    done_calls.append(call)
                    if on_result is not None:
                        on_result(g, len(stages[g]), stage[-1])
                stages[g].append(stage)
                calls = list(next_stage(g, flat(g)))
        return stages
    # workers die with this process, and an interrupt, a failed task or the deadline stops
    # them at once (rftheory.processes) instead of waiting for every queued task
    pool = process_pool(workers, share_cpus=share_cpus)
    try:
        pending: dict[Any, tuple[int, int, int, Callable[[], Any]]] = {}
        current: dict[int, list[Any]] = {}
        left: dict[int, int] = {}

        def submit(g: int, calls: Sequence[Callable[[], Any]]) -> None:
            if not calls:
                return
            current[g] = [None] * len(calls)
            left[g] = len(calls)
            for i, call in enumerate(calls):
                pending[pool.submit(call)] = (g, len(stages[g]), i, call)

        for g, calls in enumerate(first):
            submit(g, list(calls))
        while pending:
            timeout = deadline.remaining() if deadline.finite else None
            finished, _ = wait(list(pending), timeout=timeout, return_when=FIRST_COMPLETED)
            if not finished:
                raise TimeLimitReached([describe_task(c) for c in done_calls],
                                       [describe_task(v[3]) for v in pending.values()])
            for future in finished:
                g, stage_index, i, call = pending.pop(future)
                result = future.result()
                current[g][i] = result
                left[g] -= 1
                done_calls.append(call)
                if on_result is not None:
                    on_result(g, stage_index, result)
                if left[g] == 0:
                    stages[g].append(current.pop(g))
                    submit(g, list(next_stage(g, flat(g))))
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return stages


def source_digests(modules: Sequence[str] = SOURCE_MODULES) -> dict[str, str]:
    """First 12 hex digits of the SHA-256 of each rftheory module's source file.

    Stored with every reconstruction result so that numbers obtained with different versions of
    the optimiser are never silently compared (package versions alone do not change when the code
    does). Take them before any work: they describe the code the workers run.

    Parameters
    ----------
    modules : sequence of str
        Names of modules of ``rftheory`` (default :data:`SOURCE_MODULES`).

    Returns
    -------
    dict of str to str
        ``{module: 12 hex digits}``.
    """
    out = {}
    for name in modules:
        path = Path(importlib.import_module(f"rftheory.{name}").__file__)
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return out


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The package version and a digest of the package's code: ``"<version>+src.<12 hex>"``.

    What a sweep store records with every cell it computes, so that cells computed before and
    after a change of the code are told apart even where the package version did not change (an
    editable checkout): ``rftheory sweep report`` and the law's sweep-backed run name the code
    versions of a store that holds more than one.

    Returns
    -------
    str
        E.g. ``"0.4.0+src.1a2b3c4d5e6f"``: the SHA-256, first 12 hex digits, of every ``.py``
        and ``.cu`` file of the installed ``rftheory`` package, each preceded by its path
        relative to the package, in sorted order.

    Notes
    -----
    Any change of those files changes the digest, including one that cannot change a number
    (a docstring); a digest is conservative, it never misses a change. Cost: reading the
    package once per process (~1.5 MB, a few ms); the result is cached.

    Examples
    --------
    >>> v = code_version()
    >>> v.split("+src.")[1].isalnum() and len(v.split("+src.")[1]) == 12
    True
    """
    import rftheory

    root = Path(rftheory.__file__).parent
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".cu") and p.is_file())
    for path in files:
        h.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
        h.update(path.read_bytes() + b"\0")
    return f"{rftheory.__version__}+src.{h.hexdigest()[:12]}"


def environment() -> dict:
    """Versions of the packages a result depends on, for provenance.

    Returns
    -------
    dict
        Versions of rftheory, numpy, scipy, sympy and Python, the definition of V
        (:data:`rftheory.philox.V_DEFINITION`), the machine's architecture and the local date.
    """
    import numpy
    import scipy
    import sympy

    import rftheory
    from rftheory.features import V_DEFINITION

    return {"rftheory": rftheory.__version__, "v_definition": V_DEFINITION,
            "numpy": numpy.__version__, "scipy": scipy.__version__,
            "sympy": sympy.__version__, "python": platform.python_version(),
            "machine": platform.machine(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
