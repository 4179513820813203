"""The claims' protocol and the helpers every claim module shares.

A claim module defines ``CLAIM`` (its name), a frozen ``Config`` dataclass (a subclass of
:class:`ClaimConfig`) with two instances ``QUICK`` and ``FULL`` (the default run) and, where the
claim has a larger run, ``LARGE``; ``run(config, *, progress=None, ...) -> dict``, ``plot(result, stem) -> list[Path]`` and ``summary(result) -> str``. This module
runs, saves and plots any of them (:func:`run_claim`, :func:`main_for`) and holds what their runs
share: the progress line (:class:`TaskProgress`) and, re-exported from the library module
:mod:`rftheory.runtime`, the default worker count, the one way to run tasks in parallel
(:func:`~rftheory.runtime.run_tasks`) and the provenance of results
(:func:`~rftheory.runtime.environment`, :func:`~rftheory.runtime.source_digests`).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from rftheory.deadline import NO_DEADLINE, TIME_LIMIT_REACHED, Deadline
from rftheory.errors import RFTheoryError
from rftheory.output import write_json_atomic
from rftheory.runtime import (SOURCE_MODULES, TimeLimitReached, default_workers, describe_task,
                              environment, run_tasks, source_digests)

__all__ = ["CLAIMS", "ALL", "ClaimConfig", "TaskProgress", "TimeLimitReached", "claim_module",
           "default_workers", "check_activations", "check_claim_size", "claim_memory", "run_tasks",
           "source_digests", "environment", "run_claim", "result_path", "main_for", "SOURCE_MODULES",
           "describe_task", "partial_summary", "number_text", "fit_text"]

T = TypeVar("T")

#: Claims in the order ``rftheory verify all`` runs them.
CLAIMS = ("kernel_concentration", "law", "theorem1", "theorem2", "single_sample", "sign", "nhat",
          "twolayer_law", "headline", "deep_law")
#: Claims ``rftheory verify all`` runs: every claim but ``headline``, the paper's headline table at
#: d = 3072, a demonstration of scale rather than a check (its default n = 10 takes hours on a
#: CPU, its ``--quick`` minutes; run it by name).
#: ``deep_law`` (the ResNet, needs the optional JAX extra ``rftheory[deep]``) also runs by name.
ALL = tuple(c for c in CLAIMS if c not in ("headline", "deep_law"))
_ALIASES = {"twolayer": "twolayer_law", "kernel": "kernel_concentration", "deep": "deep_law"}


@dataclasses.dataclass(frozen=True)
class ClaimConfig:
    """Base of the claims' configurations: frozen, checked on creation, with a seed.

    ``seed`` is the base seed of a run (each claim documents which streams it drives). Subclasses
    check their fields in ``__post_init__`` (bad values raise
    :class:`~rftheory.errors.RFTheoryError`) and normalise sequences to tuples.

    Attributes
    ----------
    seed : int
        Base seed of the run, a non-negative integer (default 0).

    Examples
    --------
    >>> ClaimConfig().replace(seed=3).seed
    3
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

    def size_jobs(self) -> list[tuple[str, dict[str, Any]]]:
        """The largest single jobs of a run with this configuration, for the memory guard
        (:func:`check_claim_size`): ``("reconstruct", sizes)`` or ``("kernel", sizes)``, the
        keywords of :func:`rftheory.pipeline.reconstruction_memory` /
        :func:`rftheory.concentration.measurement_memory`.

        The default reads the fields the claims share: ``grid`` (pairs (d, n)) or ``d`` and
        ``n`` (n = 2 without one), p from ``p`` or from the largest of ``ratios``,
        ``gap_ratios``, ``ratio`` times dn, ``n_hat_factors``, ``max_steps``, ``method``; a kernel
        measurement when ``p`` is a tuple with ``reps``. A claim whose runs have another shape
        overrides it (none found: the run is not checked).
        """
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        p_attr = getattr(self, "p", None)
        if isinstance(p_attr, tuple) and "reps" in fields and "d" in fields and "n" in fields:
            return [("kernel", {"d": self.d, "n": self.n, "p_values": p_attr})]  # type: ignore[attr-defined]
        if "grid" in fields:
            pairs = [tuple(pair) for pair in fields["grid"]]
        elif "d" in fields:
            pairs = [(fields["d"], fields.get("n", 2))]
        else:
            return []
        multiples = [*fields.get("ratios", ()), *fields.get("gap_ratios", ())]
        if isinstance(fields.get("ratio"), (int, float)):
            multiples.append(fields["ratio"])
        jobs = []
        for d, n in pairs:
            ps = [m * d * n for m in multiples]
            if isinstance(p_attr, (int, float)) and not isinstance(p_attr, bool):
                ps.append(p_attr)
            if not ps:
                continue
            sizes: dict[str, Any] = {"d": d, "n": n, "p": max(max(ps), 1)}
            if fields.get("n_hat_factors"):
                sizes["n_hat"] = max(1, round(max(fields["n_hat_factors"]) * n))
            if isinstance(fields.get("method"), str):  # else reconstruct's default, as run
                sizes["method"] = fields["method"]
            jobs.append(("reconstruct", sizes))
        return jobs


def claim_memory(config: ClaimConfig) -> list[Any]:
    """The declared peak memory (:class:`rftheory.budget.Memory`) of the largest jobs of a run
    with ``config`` (:meth:`ClaimConfig.size_jobs`).

    Parameters
    ----------
    config : ClaimConfig
        The configuration.

    Returns
    -------
    list of rftheory.budget.Memory
        One per job of :meth:`ClaimConfig.size_jobs`.
    """
    from rftheory.concentration import measurement_memory
    from rftheory.pipeline import reconstruction_memory

    return [(measurement_memory if kind == "kernel" else reconstruction_memory)(**sizes)
            for kind, sizes in config.size_jobs()]


def check_claim_size(config: ClaimConfig, *, workers: int,
                     memory_limit: float | str | None = None,
                     via: str = "memory_limit=") -> None:
    """Refuse a configuration whose largest job (:meth:`ClaimConfig.size_jobs`) cannot fit in
    memory: alone, and ``workers`` of them at once, with the one-line
    :class:`~rftheory.errors.ResourceLimitError` of :func:`rftheory.budget.check`. Nothing is
    started before. Time is not checked (a deadline stops the run instead).

    Parameters
    ----------
    config : ClaimConfig
        The configuration about to run.
    workers : int
        Worker processes that will run jobs at once (their peak memory adds up).
    memory_limit : float or str, optional
        The limit of :func:`rftheory.budget.check` (bytes or a size string).
    via : str
        How messages name the limit (the CLI passes its option name).

    Raises
    ------
    rftheory.errors.ResourceLimitError
        If a job, or ``workers`` of them together, cannot fit.
    """
    from rftheory.budget import check

    for need in claim_memory(config):
        check(need, memory_limit=memory_limit, via=via)
        if workers > 1:
            check(need.times(workers, f"{workers} workers each running a job like {need.job}"),
                  memory_limit=memory_limit, via=via)


def claim_module(name: str) -> Any:
    """Import ``rftheory.claims.<name>``; unknown names raise a clear RFTheoryError.

    Parameters
    ----------
    name : str
        A claim of :data:`CLAIMS` or an alias (``kernel``, ``twolayer``).

    Returns
    -------
    module
        The claim's module (``CLAIM``, ``Config``, ``FULL``, ``QUICK``, ``run``, ``plot``,
        ``summary``).

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``name`` is not a claim.

    Examples
    --------
    >>> claim_module("kernel").CLAIM
    'kernel_concentration'
    """
    name = _ALIASES.get(name, name)
    if name not in CLAIMS:
        raise RFTheoryError(f"unknown claim {name!r}; choose from: {', '.join(CLAIMS)}, all")
    return importlib.import_module(f"rftheory.claims.{name}")


def check_activations(*names: str) -> None:
    """Refuse a bad activation before any worker starts (one clear error, not one per task).

    Parameters
    ----------
    *names : str
        Activations (registry names or safe expressions in ``z``).

    Raises
    ------
    rftheory.errors.ActivationError
        From :func:`rftheory.activations.get_activation`, for the first bad name.
    """
    from rftheory.activations import get_activation

    for name in names:
        get_activation(name)


class TaskProgress:
    """The progress line of a claim's run: ``[k/total] <what finished>``, one per finished task.

    Parameters
    ----------
    progress : callable or None
        Receives each line (``progress(line)``); None: nothing is said (and ``describe`` is
        never called).
    total : int
        The number of tasks of the run.

    Examples
    --------
    >>> tick = TaskProgress(print, 2)
    >>> tick(lambda: "cell 1")
    [1/2] cell 1
    """

    def __init__(self, progress: Callable[[str], None] | None, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def __call__(self, describe: Callable[[], str]) -> None:
        """Count one finished task; ``describe()`` (called only when someone listens) says which."""
        self.done += 1
        if self.progress is not None:
            self.progress(f"[{self.done}/{self.total}] {describe()}")


def run_claim(name: str, *, quick: bool = False, large: bool = False, seed: int | None = None,
              config: ClaimConfig | None = None, out_dir: str | Path = "results",
              figures: bool = True, progress: Callable[[str], None] | None = None,
              memory_limit: float | str | None = None, via: str = "memory_limit=",
              deadline: Deadline = NO_DEADLINE) -> dict:
    """Run one claim's check, save ``<out_dir>/<claim>.json`` and its figures; return the result.

    Parameters
    ----------
    name : str
        A claim of :data:`CLAIMS` (or an alias: ``kernel``, ``twolayer``).
    quick : bool
        Run the module's ``QUICK`` configuration instead of ``FULL``.
    large : bool
        Run the module's ``LARGE`` configuration (its larger run, e.g. the law over a real grid;
        claims without one run ``FULL``, and the result's ``size`` says so). Not with ``quick``.
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
    memory_limit, via
        The memory guard's limit (:func:`check_claim_size`, :mod:`rftheory.budget`), checked
        before anything runs.
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops (passed to the claim's ``run`` where it takes one, and through it
        to :func:`run_tasks`): a run stopped by it is saved as ``<claim>.partial.json`` (the
        complete result's file is left alone) with ``stop_reason = "time_limit"``,
        ``tasks_finished`` and ``tasks_not_run``, and no figures.

    Returns
    -------
    dict
        The claim's result (JSON-serialisable) with ``claim``, ``quick``, ``size``, ``seed``,
        ``wall_seconds``, ``environment`` and, when drawn, ``figures`` (the paths) added.

    Raises
    ------
    rftheory.errors.RFTheoryError
        For an unknown claim, ``quick`` with ``large``, or a bad configuration.
    rftheory.errors.ResourceLimitError
        If the run would not fit the limits.
    """
    module = claim_module(name)
    deadline = NO_DEADLINE if deadline is None else deadline
    if quick and large:
        raise RFTheoryError("give --quick or --large, not both")
    size = "quick" if quick else "large" if large and hasattr(module, "LARGE") else "full"
    if config is None:
        config = {"quick": module.QUICK, "large": getattr(module, "LARGE", None),
                  "full": module.FULL}[size]
    if seed is not None:
        config = config.replace(seed=seed)
    check_claim_size(config, workers=default_workers(), memory_limit=memory_limit, via=via)
    out = Path(out_dir)
    accepted = inspect.signature(module.run).parameters
    offered = {"out_dir": out, "deadline": deadline, "memory_limit": memory_limit}
    options = {k: v for k, v in offered.items() if k in accepted}
    start = time.perf_counter()
    try:
        result = dict(module.run(config, progress=progress, **options))
    except TimeLimitReached as stopped:
        result = {"claim": module.CLAIM, "stop_reason": TIME_LIMIT_REACHED,
                  "time_limit_seconds": deadline.seconds,
                  "tasks_finished": stopped.finished, "tasks_not_run": stopped.not_run,
                  "verdict": {"supported": False, "complete": False}}
    result.setdefault("claim", module.CLAIM)
    result["quick"] = bool(quick)
    result["size"] = size
    result["seed"] = config.seed
    result["wall_seconds"] = round(time.perf_counter() - start, 2)
    result["environment"] = environment()
    partial = "tasks_not_run" in result
    if figures and not partial:
        paths = module.plot(result, out / module.CLAIM)
        result["figures"] = [str(p) for p in paths]
    write_json_atomic(result_path(out, module.CLAIM, partial), result)
    return result


def partial_summary(result: dict) -> str:
    """The summary of a run that its deadline stopped before its tasks were done
    (:func:`run_claim`): which tasks finished, which did not run.

    Parameters
    ----------
    result : dict
        A partial result of :func:`run_claim` (with ``tasks_finished`` and ``tasks_not_run``).

    Returns
    -------
    str
        A line saying so, then up to 20 tasks not run, one per line.
    """
    lines = [f"{result['claim']}: stopped at the time limit "
             f"({result.get('time_limit_seconds', float('nan')):g} s) — "
             f"{len(result['tasks_finished'])} tasks finished, {len(result['tasks_not_run'])} "
             "did not run (verdict: not reached)"]
    lines += [f"  not run: {t}" for t in result["tasks_not_run"][:20]]
    if len(result["tasks_not_run"]) > 20:
        lines.append(f"  ... and {len(result['tasks_not_run']) - 20} more")
    return "\n".join(lines)


def result_path(out_dir: str | Path, claim: str, partial: bool = False) -> Path:
    """Where :func:`run_claim` saves a claim's result (``<claim>.json``, or
    ``<claim>.partial.json`` for a run stopped at its deadline).

    Parameters
    ----------
    out_dir : path
        The results directory.
    claim : str
        The claim's name.
    partial : bool
        A run stopped at its deadline.

    Returns
    -------
    pathlib.Path
        The file.

    Examples
    --------
    >>> result_path("results", "law", partial=True).name
    'law.partial.json'
    """
    return Path(out_dir) / f"{claim}{'.partial' if partial else ''}.json"


def main_for(claim: str, argv: list[str] | None = None, *, prog: str | None = None) -> int:
    """``python -m rftheory.claims.<claim> [--quick | --large] [--seed S] [--out DIR]``.

    Runs :func:`run_claim`, progress lines on stderr, then prints the claim's summary and where
    the results went.

    Parameters
    ----------
    claim : str
        The claim's name.
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).
    prog : str, optional
        Program name for the usage line (default ``python -m rftheory.claims.<claim>``).

    Returns
    -------
    int
        The exit status: 0, or 2 after a one-line error for bad input (e.g. a negative seed).
    """
    parser = argparse.ArgumentParser(prog=prog or f"python -m rftheory.claims.{claim}")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small, fast version of the check")
    size.add_argument("--large", action="store_true", help="the claim's larger run, where it has one")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results", help="directory for JSON and figures")
    args = parser.parse_args(argv)
    try:
        result = run_claim(claim, quick=args.quick, large=args.large, seed=args.seed,
                           out_dir=args.out,
                           progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    except RFTheoryError as exc:  # bad input: one line, the CLI's usage status
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    print(claim_module(claim).summary(result))
    print(f"results: {Path(args.out) / (claim + '.json')}; figures: {', '.join(result.get('figures', []))}")
    return 0


def number_text(x: Any) -> str:
    """A number of a claim's table to 3 significant digits ("-" for None or NaN).

    Parameters
    ----------
    x : float or None
        The number.

    Returns
    -------
    str
        Its text.

    Examples
    --------
    >>> number_text(3.14159), number_text(None), number_text(float("inf"))
    ('3.14', '-', 'inf')
    """
    if x is None:
        return "-"
    return f"{x:.3g}" if math.isfinite(x) else ("inf" if x > 0 else "-inf" if x < 0 else "-")


def fit_text(fit: dict[str, Any]) -> str:
    """A fitted threshold (a :class:`rftheory.thresholds.ThresholdFit` as a dict) as text.

    Parameters
    ----------
    fit : dict
        ``status``, ``location``, ``interval`` and ``bound`` of the fit (empty: no fit).

    Returns
    -------
    str
        'location [lo, hi] (status)', or the grid bound when the threshold is not located.

    Examples
    --------
    >>> fit_text({"status": "ok", "location": 1.1, "interval": [1.0, 1.2], "bound": None})
    '1.1 [1, 1.2] (ok)'
    >>> fit_text({"status": "above_grid", "bound": 16.0})
    '> 16 (above grid)'
    """
    if not fit:
        return "-"
    if fit["status"] == "below_grid":
        return f"≤ {number_text(fit['bound'])} (below grid)"
    if fit["status"] == "above_grid":
        return f"> {number_text(fit['bound'])} (above grid)"
    if fit["status"] == "fit_failed":
        return "fit failed"
    lo, hi = fit["interval"]
    return f"{number_text(fit['location'])} [{number_text(lo)}, {number_text(hi)}] ({fit['status']})"
