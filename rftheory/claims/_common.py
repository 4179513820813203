"""The claims' protocol and the helpers every claim module shares.

A claim module defines ``CLAIM`` (its name), a frozen ``Config`` dataclass (a subclass of
:class:`ClaimConfig`) with two instances ``QUICK`` and ``FULL``, ``run(config, *, progress=None,
...) -> dict``, ``plot(result, stem) -> list[Path]`` and ``summary(result) -> str``. This module
runs, saves and plots any of them (:func:`run_claim`, :func:`main_for`) and holds what their runs
share: the default worker count, the one way to run tasks in parallel (:func:`run_tasks`) with
its progress line (:class:`TaskProgress`), and the provenance of results (:func:`environment`,
:func:`source_digests`).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from rftheory.errors import RFTheoryError
from rftheory.output import write_json_atomic

__all__ = ["CLAIMS", "ClaimConfig", "TaskProgress", "claim_module", "default_workers",
           "check_activations", "run_tasks", "source_digests", "environment", "run_claim",
           "main_for", "SOURCE_MODULES"]

T = TypeVar("T")

#: Claims in the order ``rftheory verify all`` runs them.
CLAIMS = ("kernel_concentration", "law", "theorem1", "theorem2", "sign", "nhat", "twolayer_law")
_ALIASES = {"twolayer": "twolayer_law", "kernel": "kernel_concentration"}

#: Modules whose code decides a reconstruction's numbers (the optimiser is still being tuned).
SOURCE_MODULES = ("pipeline", "reconstruct", "projection", "features", "gram", "metrics", "data")


@dataclasses.dataclass(frozen=True)
class ClaimConfig:
    """Base of the claims' configurations: frozen, checked on creation, with a seed.

    ``seed`` is the base seed of a run (each claim documents which streams it drives). Subclasses
    check their fields in ``__post_init__`` (bad values raise
    :class:`~rftheory.errors.RFTheoryError`) and normalise sequences to tuples.

    Attributes
    ----------
    seed : int
        The base seed (non-negative).
    """

    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise RFTheoryError(f"seed must be a non-negative integer, got {self.seed!r}")

    def replace(self, **changes: Any) -> "ClaimConfig":
        """A copy with some fields changed (checked again)."""
        return dataclasses.replace(self, **changes)

    def as_dict(self, *, exclude: Sequence[str] = ()) -> dict[str, Any]:
        """The fields but ``seed`` (and ``exclude``), in order, tuples as lists: how a result
        records its configuration."""
        out = {}
        for field in dataclasses.fields(self):
            if field.name != "seed" and field.name not in exclude:
                value = getattr(self, field.name)
                out[field.name] = list(value) if isinstance(value, tuple) else value
        return out

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # normalising a field of a frozen instance


def claim_module(name: str) -> Any:
    """Import ``rftheory.claims.<name>``; unknown names raise a clear RFTheoryError.

    Parameters
    ----------
    name : str
        A claim of :data:`CLAIMS` or an alias (``kernel``, ``twolayer``).

    Returns
    -------
    module
        The claim's module (``Config``, ``QUICK``, ``FULL``, ``run``, ``plot``, ``summary``).
    """
    name = _ALIASES.get(name, name)
    if name not in CLAIMS:
        raise RFTheoryError(f"unknown claim {name!r}; choose from: {', '.join(CLAIMS)}, all")
    return importlib.import_module(f"rftheory.claims.{name}")


def default_workers(workers: int | None = None) -> int:
    """Worker processes of a claim's run: ``workers`` (at least 1), or min(2, CPUs).

    Two by default: the claims' tasks are small, and results never depend on the count.

    Parameters
    ----------
    workers : int, optional
        The count asked for.

    Returns
    -------
    int
        The count to use.
    """
    return min(2, os.cpu_count() or 1) if workers is None else max(1, int(workers))


def check_activations(*names: str) -> None:
    """Refuse a bad activation before any worker starts (one clear error, not one per task).

    Parameters
    ----------
    *names : str
        Registry names or expressions in ``z``.

    Raises
    ------
    ActivationError
        For the first name that is refused.
    """
    from rftheory.activations import get_activation

    for name in names:
        get_activation(name)


def run_tasks(calls: Sequence[Callable[[], T]], *, workers: int,
              order: Sequence[int] | None = None,
              on_result: Callable[[int, T], None] | None = None) -> list[T]:
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

    Returns
    -------
    list
        The calls' results, in call order.
    """
    order = list(range(len(calls))) if order is None else list(order)
    results: list[Any] = [None] * len(calls)

    def finished(i: int, result: T) -> None:
        results[i] = result
        if on_result is not None:
            on_result(i, result)

    if workers == 1:
        for i in order:
            finished(i, calls[i]())
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(calls[i]): i for i in order}
            for future in as_completed(futures):
                finished(futures[future], future.result())
    return results


class TaskProgress:
    """The progress line of a claim's run: ``[k/total] <what finished>``, one per finished task.

    Parameters
    ----------
    progress : callable or None
        Receives each line (None: lines are dropped).
    total : int
        The number of tasks.
    """

    def __init__(self, progress: Callable[[str], None] | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def __call__(self, describe: Callable[[], str]) -> None:
        """Count one finished task; ``describe()`` (called only when someone listens) says which."""
        self.done += 1
        if self.progress is not None:
            self.progress(f"[{self.done}/{self.total}] {describe()}")


def source_digests(modules: Sequence[str] = SOURCE_MODULES) -> dict[str, str]:
    """First 12 hex digits of the SHA-256 of each rftheory module's source file.

    Stored with every reconstruction result so that numbers obtained with different versions of
    the optimiser are never silently compared (package versions alone do not change when the code
    does). Take them before any work: they describe the code the workers run.

    Parameters
    ----------
    modules : sequence of str
        Module names under ``rftheory`` (default :data:`SOURCE_MODULES`).

    Returns
    -------
    dict
        Module name → 12 hex digits.
    """
    out = {}
    for name in modules:
        path = Path(importlib.import_module(f"rftheory.{name}").__file__)
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    return out


def environment() -> dict:
    """Versions of the packages a result depends on, for provenance.

    Returns
    -------
    dict
        rftheory's version and V's definition, numpy, scipy, sympy, Python, the machine type
        and the date.
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


def run_claim(name: str, *, quick: bool = False, seed: int | None = None,
              config: ClaimConfig | None = None, out_dir: str | Path = "results",
              figures: bool = True, progress: Callable[[str], None] | None = None) -> dict:
    """Run one claim's check, save ``<out_dir>/<claim>.json`` and its figures; return the result.

    Parameters
    ----------
    name : str
        A claim of :data:`CLAIMS` (or an alias: ``kernel``, ``twolayer``).
    quick : bool
        Run the module's ``QUICK`` configuration instead of ``FULL``.
    seed : int, optional
        Base seed (default: the configuration's own, 0).
    config : ClaimConfig, optional
        Run this configuration instead (e.g. a small one in a test); ``seed`` still applies.
    out_dir : path
        Directory of the JSON result (written atomically, with package versions) and figures.
    figures : bool
        Draw the figures (PNG + PDF) from the result.
    progress : callable, optional
        Receives the run's progress lines.

    Returns
    -------
    dict
        The claim's result (as saved), with ``wall_seconds``, ``environment`` and ``figures``.
    """
    module = claim_module(name)
    if config is None:
        config = module.QUICK if quick else module.FULL
    if seed is not None:
        config = config.replace(seed=seed)
    start = time.perf_counter()
    result = dict(module.run(config, progress=progress))
    result.setdefault("claim", module.CLAIM)
    result["quick"] = bool(quick)
    result["seed"] = config.seed
    result["wall_seconds"] = round(time.perf_counter() - start, 2)
    result["environment"] = environment()
    out = Path(out_dir)
    if figures:
        paths = module.plot(result, out / module.CLAIM)
        result["figures"] = [str(p) for p in paths]
    write_json_atomic(out / f"{module.CLAIM}.json", result)
    return result


def main_for(claim: str, argv: list[str] | None = None, *, prog: str | None = None) -> int:
    """``python -m rftheory.claims.<claim> [--quick] [--seed S] [--out DIR]``.

    Parameters
    ----------
    claim : str
        The claim.
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).
    prog : str, optional
        The program's name in the usage line.

    Returns
    -------
    int
        The exit status.
    """
    parser = argparse.ArgumentParser(prog=prog or f"python -m rftheory.claims.{claim}")
    parser.add_argument("--quick", action="store_true", help="small, fast version of the check")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results", help="directory for JSON and figures")
    args = parser.parse_args(argv)
    result = run_claim(claim, quick=args.quick, seed=args.seed, out_dir=args.out,
                       progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(claim_module(claim).summary(result))
    print(f"results: {Path(args.out) / (claim + '.json')}; figures: {', '.join(result.get('figures', []))}")
    return 0
