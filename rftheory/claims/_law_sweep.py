"""The law claim's sweep driver (private to :mod:`rftheory.claims.law`): its points, the
sequential design's extra rounds, and the sweep-backed run's stores and exports.

Memory: one point holds one reconstruction cell (:func:`rftheory.cells.law_cell`, a few MB
at the law's sizes); the driver keeps every finished cell's dict (a few kB each).
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

from rftheory.claims._common import TaskProgress, run_tasks
from rftheory.runtime import run_stages
from rftheory.deadline import Deadline


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """One point of the sweep: :func:`rftheory.cells.law_cell` (a reconstruction cell when
    p ≥ n, a label-fitting cell otherwise), the same function the sweep cell kind ``law`` runs.

    BLAS is limited to one thread while it runs: these problems are tiny (n·d ≤ a few hundred
    unknowns), where threads only add synchronisation, and the last bits of reductions then do
    not depend on the machine's core count (sweep workers pin it the same way).

    Parameters
    ----------
    task : dict
        ``activation``, ``d``, ``n``, ``p``, ``seed``, ``max_steps`` (the keywords of
        :func:`~rftheory.cells.law_cell`) and ``seed_index`` (the seed's index in the run).

    Returns
    -------
    dict
        The cell of :func:`~rftheory.cells.law_cell` with ``seed_index`` and ``seconds``
        (wall time of the point) added.
    """
    from threadpoolctl import threadpool_limits

    from rftheory.cells import law_cell

    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        cell = law_cell(activation=task["activation"], d=task["d"], n=task["n"], p=task["p"],
                        seed=task["seed"], max_steps=task["max_steps"])
    cell["seed_index"] = task["seed_index"]
    cell["seconds"] = time.perf_counter() - start
    return cell


def _cost(task: dict[str, Any]) -> float:
    """A point's rough cost: reconstructions near the threshold, where the optimiser runs to its
    budget, are the longest; label fits are nearly free."""
    if task["p"] < task["n"]:
        return 0.0
    ratio = task["p"] / (task["d"] * task["n"])
    return task["d"] * task["n"] * (10.0 if 0.7 <= ratio <= 3.0 else 1.0 + ratio / 10)


def run_points(tasks: list[dict[str, Any]], workers: int,
                progress: Callable[[str], None] | None,
                deadline: Deadline | None = None) -> list[dict[str, Any]]:
    """Run the points, ``workers`` processes at a time, the expensive ones first.

    Parameters
    ----------
    tasks : list of dict
        The points (:func:`run_point`'s argument).
    workers : int
        Worker processes.
    progress : callable or None
        Receives one line per finished point.
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops (:func:`rftheory.claims._common.run_tasks`).

    Returns
    -------
    list of dict
        The cells, in task order.
    """
    tick = TaskProgress(progress, len(tasks))
    return run_tasks([partial(run_point, t) for t in tasks], workers=workers,
                     order=sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i])),
                     on_result=lambda i, cell: tick(lambda: _describe(cell)), deadline=deadline)


def _describe(cell: dict[str, Any]) -> str:
    """A finished point's progress line."""
    what = (f"ρ={cell['rho_abs']:.1e} loss={cell['final_loss']:.1e} {cell['stop_reason']}"
            if cell["kind"] == "reconstruction" else "label fit only")
    return (f"d={cell['d']} n={cell['n']} p={cell['p']} (p/dn={cell['p_over_dn']:.3g}) "
            f"seed={cell['seed']}: residual={cell['train_residual']:.1e} {what} "
            f"({cell['seconds']:.1f} s)")


def target_text(resolution: float, criterion: str) -> str:
    """The sequential design's target in words (the progress lines and the summary):
    ``"each interval within ±0.049·dn of p*"`` (each side) or ``"each interval at most
    0.098·dn wide"`` (the width)."""
    return (f"each interval within ±{resolution:g}·dn of p*" if criterion == "sides"
            else f"each interval at most {2 * resolution:g}·dn wide")


def follow_up(cells: list[dict[str, Any]], config: Any, *, rho_success: float, level: float,
              variants: Sequence[str], workers: int,
              progress: Callable[[str], None] | None,
              deadline: Deadline | None = None) -> list[dict[str, Any]]:
    """The sequential design's rounds (:attr:`rftheory.claims.law.Config.resolution`).

    Each round of a (d, n) of ``config.activation`` asks :func:`rftheory.thresholds.followup_points`
    for its points while it is above the target and under its cap, and runs one more seed at
    each point named, each with a fresh seed index — one more than the largest this (d, n) has
    used at any p (seed ``config.seed + index``). A seed's runs at neighbouring p are near
    copies of one problem (the same data, labels and start, V one row longer), so a reused
    index would add little information; fresh ones make the added runs independent, as the
    fit assumes.
    Each (d, n) starts its next round as soon as its own round is in
    (:func:`rftheory.runtime.run_stages`), not when every (d, n)'s round is: its rounds depend
    on its own runs alone, so the cells and their ``design_round`` are those of rounds run in
    lockstep, and the run is a function of the base seed alone, whatever the number of workers
    (tests/test_claims_law.py). Measured on the default run (2 workers, 2026-12-05): with rounds
    in lockstep the workers idled 5–11 % of the run (seven runs: its slowest run, a whole step
    budget, held up every other (d, n)'s next round), 2–7 % with them apart (three runs; 7 %
    where one (d, n) went on alone for 19 rounds of one or two runs).

    Parameters
    ----------
    cells : list of dict
        The first pass's cells.
    config : rftheory.claims.law.Config
        The run's configuration (``grid``, ``activation``, ``seed``, ``max_steps``,
        ``resolution``, ``criterion``, ``max_added``).
    rho_success : float
        ρ below which a run succeeded.
    level : float
        Confidence level of the intervals.
    variants : sequence of str
        The ρ variants whose thresholds must be resolved.
    workers : int
        Worker processes.
    progress : callable or None
        Receives one line per (d, n) and round and one per finished point.
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops.

    Returns
    -------
    list of dict
        The added cells, each with ``design_round`` (1, 2, ...), ordered by round, then by
        (d, n) in grid order, then by point (the order of rounds run in lockstep).
    """
    from rftheory.thresholds import followup_points

    name = config.activation
    grid = list(config.grid)
    runs = {(d, n): [c for c in cells if c["activation"] == name and c["d"] == d
                     and c["n"] == n and c.get("kind") == "reconstruction"]
            for d, n in grid}
    extra = dict.fromkeys(grid, 0)
    rounds = dict.fromkeys(grid, 0)

    def tasks_of(d: int, n: int) -> list[dict[str, Any]]:
        """The next round of (d, n): a function of its own runs alone."""
        mine = runs[(d, n)]
        room = config.max_added - extra[(d, n)]
        if room <= 0:
            return []
        points: set[int] = set()
        for v in variants:
            points |= set(followup_points([c["p"] for c in mine],
                                          [c[f"rho_{v}"] < rho_success for c in mine],
                                          resolution=config.resolution, unit=d * n,
                                          level=level, criterion=config.criterion))
        tasks = []
        # a fresh seed index for every added run, unused at every p of this (d, n)
        fresh = 1 + max((c["seed_index"] for c in mine), default=-1)
        for index, p in enumerate(sorted(points)[:room], start=fresh):
            tasks.append({"activation": name, "d": d, "n": n, "p": p,
                          "seed": config.seed + index, "seed_index": index,
                          "max_steps": config.max_steps})
        extra[(d, n)] += len(tasks)
        if tasks:
            rounds[(d, n)] += 1
            if progress is not None:
                progress(f"sequential design, (d, n) = ({d}, {n}), round {rounds[(d, n)]}: "
                         f"{len(tasks)} more runs (p*_data not yet resolved; the target: "
                         f"{target_text(config.resolution, config.criterion)})")
        return tasks

    def stage(tasks: list[dict[str, Any]]) -> list[Callable[[], dict[str, Any]]]:
        return [partial(run_point, t) for t in tasks]

    def next_stage(g: int, results: list[dict[str, Any]]) -> list[Callable[[], dict[str, Any]]]:
        d, n = grid[g]
        new = results[len(runs[(d, n)]) - base[g]:]
        for cell in new:
            cell["design_round"] = rounds[(d, n)]
        runs[(d, n)].extend(new)
        return stage(tasks_of(d, n))

    def line(g: int, round_index: int, cell: dict[str, Any]) -> None:
        if progress is not None:
            progress(f"(round {round_index + 1}) {_describe(cell)}")

    base = [len(runs[dn]) for dn in grid]
    first = [stage(tasks_of(d, n)) for d, n in grid]
    run_stages(first, next_stage, workers=workers, on_result=line, deadline=deadline)
    # The added cells in the order of the rounds, then of the grid, then of each round's points
    # (what running the rounds in lockstep gives; each (d, n)'s k-th round is the run's k-th).
    added = [c for g, dn in enumerate(grid) for c in runs[dn][base[g]:]]
    return sorted(added, key=lambda c: (c["design_round"], grid.index((c["d"], c["n"]))))


def sweep_cells(documents: Sequence[tuple[str, dict[str, Any], Path]], workers: int,
                progress: Callable[[str], None] | None,
                deadline: Deadline | None = None) -> tuple[list[dict[str, Any]], float]:
    """Run (or resume) each activation's sweep into its store; their cells as dicts.

    At the deadline the stored cells stay (a rerun resumes) and
    :class:`~rftheory.claims._common.TimeLimitReached` says what is left: no verdict is drawn
    from part of a grid.

    Parameters
    ----------
    documents : sequence of (str, dict, Path)
        Per activation, in order: its name, its sweep document
        (:func:`rftheory.claims.law.sweep_document`) and its store directory.
    workers : int
        Worker processes.
    progress : callable or None
        Receives the sweep's lines.
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops.

    Returns
    -------
    (list of dict, float)
        Every stored cell (:func:`cells_from_store`) and the seconds the sweeps took.
    """
    from rftheory.claims._common import TimeLimitReached
    from rftheory.sweep import parse_spec, run_sweep


    cells, seconds = [], 0.0
    names = [name for name, _, _ in documents]
    for activation, document, store in documents:
        spec = parse_spec(document, source="law claim")
        done = run_sweep(spec, store, resume=True, workers=workers,
                         progress=progress is not None, deadline=deadline)
        if progress is not None:
            progress(f"sweep store {done.store}: {done.already_done} cells already stored, "
                     f"{done.computed} computed in {done.seconds:.0f} s on {done.executor}")
        if done.stop_reason == "time_limit":
            later = names[names.index(activation) + 1:]
            raise TimeLimitReached(
                [f"{activation}: {done.already_done + done.computed} cells stored in "
                 f"{done.store}"],
                [f"{activation}: {done.planned - done.computed} cells (rerun to resume)"]
                + [f"{a}: its sweep" for a in later])
        cells += cells_from_store(store)
        seconds += done.seconds
    return cells, seconds


def cells_from_store(directory: str | Path) -> list[dict[str, Any]]:
    """The ``law`` cells of a sweep store as the claim's cell dicts (results plus ``seconds``).

    Parameters
    ----------
    directory : str or Path
        The sweep store (opened read-only).

    Returns
    -------
    list of dict
        One dict per stored ``law`` cell: its result and ``seconds``, or its parameters and
        ``error`` for a failed cell, each with the ``code_version`` that stored it.
    """
    from rftheory.sweep import SweepStore

    with SweepStore.open_reader(directory) as store:
        scan = store.scan()
    return [_cell_row(c.params, c.status, c.result, c.seconds, c.version)
            for c in scan.cells.values() if c.kind == "law"]


def cells_from_export(path: str | Path) -> list[dict[str, Any]]:
    """The ``law`` cells of a store's export (``rftheory sweep export``), as from a store.

    Parameters
    ----------
    path : str or Path
        The export file (JSON lines, optionally gzipped).

    Returns
    -------
    list of dict
        As :func:`cells_from_store`.
    """
    from rftheory.sweep import read_export

    return [_cell_row(r["params"], r["status"], r["result"], r["seconds"], r.get("version"))
            for r in read_export(path) if r["kind"] == "law"]


def _cell_row(params: dict, status: str, result: dict, seconds: float | None,
              version: str | None) -> dict[str, Any]:
    row = ({**params, "error": result.get("error", "failed")} if status != "ok"
           else {**result, "seconds": float(seconds or 0.0)})
    if version is not None:
        row["code_version"] = version  # the code that stored it (runtime.code_version)
    return row
