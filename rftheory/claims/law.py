"""Claim (the law of data reconstruction): labels are fit once p ≳ n, training data are recoverable
from (θ*, V) once p ≳ dn.

For the RF model f(x) = φ(Vx)ᵀθ trained by the min-norm interpolator θ* = Φ⁺Y on n points of the
√d-sphere, the paper states two thresholds in the number of features p:

* **label fitting** at p ≈ n: ΦΦᵀ has full rank n once p ≥ n, so θ* interpolates (train residual
  ‖Φθ* − Y‖/‖Y‖ = 0 up to rounding) — and cannot below;
* **data reconstruction** at p ≈ dn: minimising the projection loss L(X̂) = ‖P⊥_{Φ̂}θ*‖²/‖θ*‖²
  over n candidates on the sphere recovers the training set (ρ → 0) once the p equations
  "θ* ∈ span φ(X̂Vᵀ)" outnumber the dn unknowns, and not before.

The check sweeps p over multiples of n and of dn for several (d, n) and seeds; every point with
p ≥ n is one :func:`rftheory.pipeline.reconstruction_cell` (labels fit, reconstruction, all
three ρ), every point with p < n a label-fitting cell (:func:`rftheory.pipeline.label_fit_cell`;
with fewer features than candidates there is no reconstruction to try). From the seeds it reads

* p*_label — the smallest p of the grid from which every seed's train residual is below
  :data:`LABEL_TOL` (the grid holds p = n − 1 and p = n, so this brackets the threshold exactly);
* p*_data — where the success probability P(ρ < :data:`RHO_SUCCESS`) crosses 1/2, interpolated
  linearly in log p between the grid points around the crossing, with a percentile bootstrap
  interval over seeds (seeds resampled jointly across p: the cells of one seed share their data,
  labels and nested V).

If the law holds, p*_label/n ≈ 1 and p*_data/(dn) is the same O(1) constant for every (d, n): the
curves of ρ against p/(dn) collapse.

Verdict (falsifiable), for every (d, n) of the grid: (i) p*_label = n exactly; (ii) the
reconstruction fails at p = n (success probability < 1/2) and succeeds at the largest ratio
(≥ 1/2); (iii) the collapse: max/min of p*_data/(dn) over the grid is at most
:data:`COLLAPSE_FACTOR`.

Run: ``python -m rftheory.claims.law [--quick]``, ``rftheory verify law`` or ``rftheory demo``.

Notes
-----
p*_data is the threshold *of the optimiser at its step budget* (``max_steps``): near p ≈ dn the
landscape is hard and a budget-limited run may stop before it finds the training set, so the
measured p*_data is an upper bound on the information-theoretic threshold; it moves left with a
larger budget. The success probability at each p is an average over few seeds (4 by default), so
it is coarse (steps of 1/4) and the bootstrap interval is wide; the interpolation in log p is a
convention, not a model.
"""

from __future__ import annotations

import dataclasses
import math
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from rftheory.claims._common import (ClaimConfig, TaskProgress, check_activations, default_workers,
                                     main_for, run_tasks, source_digests)
from rftheory.errors import RFTheoryError
from rftheory.output import format_table, save_figure

CLAIM = "law"

#: ρ below this counts as a successful reconstruction. Measured (default run): runs that fail sit
#: at ρ_abs ≈ 0.17–0.65, successful ones at 1e-5–1e-3; only budget-limited runs next to the
#: threshold fall in between (0.02–0.25), so the choice moves p*_data by at most a grid step.
RHO_SUCCESS = 0.1
#: Train residual ‖Φθ* − Y‖/‖Y‖ below this counts as "labels fit". Measured (default run):
#: 1e-16–5e-11 for p ≥ n (largest at p = n, where ΦΦᵀ is worst conditioned), ≥ 2e-2 for p < n,
#: so the threshold does not depend on this choice over many decades.
LABEL_TOL = 1e-6
#: (iii) of the verdict: the largest allowed max/min of p*_data/(dn) over the grid. A threshold
#: scaling as n instead would differ by the ratio of the d's of the grid (2 by default) — so the
#: default grid also reports the spread of p*_data/n to compare.
COLLAPSE_FACTOR = 2.0
#: ρ variants, the paper's official one first (see :mod:`rftheory.metrics`).
VARIANTS = ("abs", "signed", "sign_invariant")
#: Bootstrap resamples for the interval of p*_data.
BOOTSTRAP = 2000
#: Tag of the bootstrap's random stream (its generator is seeded by (seed, tag)).
_BOOTSTRAP_STREAM = 0x4C4157


@dataclasses.dataclass(frozen=True)
class Config(ClaimConfig):
    """What the law's sweep covers (see :func:`run`); checked on creation.

    Attributes
    ----------
    grid : tuple of (d, n)
        The problem sizes (d ≥ 1, n ≥ 2).
    ratios : tuple of float
        Values of p/(dn) (sorted on creation); p = round(ratio·dn), plus p = n − 1, n, n/2 (see
        :func:`p_values`).
    seeds : int
        Seeds per point (≥ 2: a success probability needs several); seed index s uses cell seed
        ``seed + s`` (V, data, labels, initial candidates).
    max_steps : int
        Optimiser budget per reconstruction.
    activation : str
        φ (default ``"relu+tanh"``; e.g. ``"relu"``, whose successes are then up to the sign of
        each sample — read ``success_variant="sign_invariant"``).
    success_variant : {"abs", "signed", "sign_invariant"}
        The ρ that defines success for the verdict (default the official one); thresholds of all
        three are reported.
    resamples : int
        Bootstrap resamples of the interval of p*_data (its stream is seeded by ``seed``).
    """

    grid: tuple[tuple[int, int], ...] = ((5, 10), (10, 10), (5, 20))
    ratios: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
    seeds: int = 4
    max_steps: int = 3000
    activation: str = "relu+tanh"
    success_variant: str = "abs"
    resamples: int = BOOTSTRAP

    def __post_init__(self) -> None:
        super().__post_init__()
        grid, ratios = _check_grid(self.grid, self.ratios, self.seeds, self.max_steps)
        self._set("grid", grid)
        self._set("ratios", ratios)
        self._set("seeds", int(self.seeds))
        self._set("max_steps", int(self.max_steps))
        self._set("activation", str(self.activation))
        if self.success_variant not in VARIANTS:
            raise RFTheoryError(f"success_variant must be one of {', '.join(VARIANTS)}, "
                                f"got {self.success_variant!r}")
        if isinstance(self.resamples, bool) or int(self.resamples) != self.resamples \
                or self.resamples < 1:
            raise RFTheoryError(f"resamples must be a positive integer, got {self.resamples!r}")
        self._set("resamples", int(self.resamples))


# ---------------------------------------------------------------------------------------------
# Cells
# ---------------------------------------------------------------------------------------------

def p_values(d: int, n: int, ratios: Sequence[float]) -> list[int]:
    """The p of the sweep for one (d, n): round(r·dn) for every ratio r, plus n − 1, n and n/2.

    n − 1 and n pin the label-fitting threshold; n/2 shows the residual of an under-parametrised
    fit. Sorted, distinct, ≥ 1.
    """
    ps = {max(1, int(round(r * d * n))) for r in ratios}
    ps |= {n, max(1, n - 1), max(1, n // 2)}
    return sorted(ps)


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """One point of the sweep: a reconstruction cell when p ≥ n, a label-fitting cell otherwise.

    BLAS is limited to one thread while it runs: these problems are tiny (n·d ≤ a few hundred
    unknowns), where threads only add synchronisation, and the last bits of reductions then do
    not depend on the machine's core count.
    """
    from threadpoolctl import threadpool_limits

    from rftheory.pipeline import reconstruction_cell
    from rftheory.pipeline import label_fit_cell

    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        if task["p"] >= task["n"]:
            cell = reconstruction_cell(activation=task["activation"], d=task["d"], n=task["n"],
                                       p=task["p"], seed=task["seed"], max_steps=task["max_steps"])
            cell["kind"] = "reconstruction"
        else:
            fit = label_fit_cell(activation=task["activation"], d=task["d"], n=task["n"],
                                 p=task["p"], seed=task["seed"])
            cell = {"activation": task["activation"], "d": task["d"], "n": task["n"],
                    "p": task["p"], "seed": task["seed"], "data": "sphere",
                    "p_over_dn": task["p"] / (task["d"] * task["n"]),
                    "p_over_n": task["p"] / task["n"], "kind": "label_fit",
                    "train_residual": fit["train_residual"], "gram_rank": fit["gram_rank"]}
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


def _run_points(tasks: list[dict[str, Any]], workers: int,
                progress: Callable[[str], None] | None) -> list[dict[str, Any]]:
    """Run the points, ``workers`` processes at a time, the expensive ones first; results in
    task order."""
    tick = TaskProgress(progress, len(tasks))

    def line(cell: dict[str, Any]) -> str:
        what = (f"ρ={cell['rho_abs']:.1e} loss={cell['final_loss']:.1e} {cell['stop_reason']}"
                if cell["kind"] == "reconstruction" else "label fit only")
        return (f"d={cell['d']} n={cell['n']} p={cell['p']} (p/dn={cell['p_over_dn']:.3g}) "
                f"seed={cell['seed']}: residual={cell['train_residual']:.1e} {what} "
                f"({cell['seconds']:.1f} s)")

    return run_tasks([partial(run_point, t) for t in tasks], workers=workers,
                     order=sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i])),
                     on_result=lambda i, cell: tick(lambda: line(cell)))


# ---------------------------------------------------------------------------------------------
# Thresholds
# ---------------------------------------------------------------------------------------------

def crossing(p: Sequence[float], success: Sequence[float], level: float = 0.5) -> tuple[float, str]:
    """Where a success-probability curve crosses ``level``, interpolated linearly in log p.

    The crossing is taken after the *last* grid point below ``level`` (so a curve that dips again
    at large p is not credited with an early threshold).

    Returns
    -------
    (p_star, status)
        ``status`` is ``"ok"``, ``"below_grid"`` (already ≥ level at the smallest p; p_star is then
        that p, an upper bound) or ``"above_grid"`` (never reaches level after its last dip;
        p_star is NaN).
    """
    p = np.asarray(p, dtype=np.float64)
    s = np.asarray(success, dtype=np.float64)
    below = np.flatnonzero(s < level)
    if below.size == 0:
        return float(p[0]), "below_grid"
    j = int(below[-1])
    if j == len(p) - 1:
        return math.nan, "above_grid"
    s_a, s_b = s[j], s[j + 1]
    t = (level - s_a) / (s_b - s_a)
    return float(math.exp(math.log(p[j]) + t * (math.log(p[j + 1]) - math.log(p[j])))), "ok"


def data_threshold(p: Sequence[int], success: np.ndarray, *, rng: np.random.Generator,
                   resamples: int = BOOTSTRAP) -> dict[str, Any]:
    """p*_data of one (d, n) and its percentile bootstrap interval over seeds.

    Parameters
    ----------
    p : sequence of int, length m
        Reconstruction grid (sorted).
    success : numpy.ndarray of bool, shape (seeds, m)
        Success of each seed at each p.
    rng : numpy.random.Generator
        Drives the resampling.
    resamples : int

    Returns
    -------
    dict
        ``p_star``, ``status`` (see :func:`crossing`), ``success_probability`` (per p),
        ``interval`` (2.5 % and 97.5 % percentiles of the resampled p*, over the resamples where
        it is defined), ``undefined_fraction`` (resamples whose curve never crosses).
    """
    success = np.asarray(success, dtype=np.float64)
    prob = success.mean(axis=0)
    p_star, status = crossing(p, prob)
    seeds = success.shape[0]
    draws = rng.integers(0, seeds, size=(resamples, seeds))
    stars = np.array([crossing(p, success[idx].mean(axis=0))[0] for idx in draws])
    finite = stars[np.isfinite(stars)]
    interval = ([float(np.percentile(finite, 2.5)), float(np.percentile(finite, 97.5))]
                if finite.size else [math.nan, math.nan])
    return {"p_star": p_star, "status": status, "success_probability": prob.tolist(),
            "interval": interval, "undefined_fraction": float(1 - finite.size / resamples)}


def label_threshold(p: Sequence[int], residual: np.ndarray, tol: float = LABEL_TOL) -> dict[str, Any]:
    """p*_label: the smallest grid p from which every seed's train residual is below ``tol``.

    ``residual`` has shape (seeds, m). Returns ``p_star`` (NaN if the largest p does not fit),
    ``p_below`` (the grid point just before, the other end of the bracket; NaN if none) and the
    largest residual per p.
    """
    worst = np.max(np.asarray(residual, dtype=np.float64), axis=0)
    bad = np.flatnonzero(~(worst < tol))
    if bad.size == 0:
        j = 0
    elif bad[-1] == len(p) - 1:
        return {"p_star": math.nan, "p_below": float(p[-1]), "max_residual": worst.tolist()}
    else:
        j = int(bad[-1]) + 1
    return {"p_star": float(p[j]), "p_below": float(p[j - 1]) if j > 0 else math.nan,
            "max_residual": worst.tolist()}


# ---------------------------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------------------------

def _check_grid(grid: Sequence[Sequence[int]], ratios: Sequence[float], seeds: int,
                max_steps: int) -> tuple[tuple[tuple[int, int], ...], tuple[float, ...]]:
    try:
        grid = tuple((int(d), int(n)) for d, n in grid)
        ratios = tuple(sorted(float(r) for r in ratios))
    except (TypeError, ValueError) as exc:
        raise RFTheoryError(f"grid must be (d, n) pairs and ratios numbers: {exc}") from None
    if not grid or any(d < 1 or n < 2 for d, n in grid):
        raise RFTheoryError("grid needs at least one (d, n) with d >= 1 and n >= 2")
    if not ratios or ratios[0] <= 0 or not all(math.isfinite(r) for r in ratios):
        raise RFTheoryError("ratios p/(dn) must be positive and finite")
    if isinstance(seeds, bool) or int(seeds) != seeds or seeds < 2:
        raise RFTheoryError(f"seeds must be an integer >= 2 (a success probability needs "
                            f"several), got {seeds!r}")
    if isinstance(max_steps, bool) or int(max_steps) != max_steps or max_steps < 1:
        raise RFTheoryError(f"max_steps must be a positive integer, got {max_steps!r}")
    return grid, ratios


#: The default sweep (the package's main job, ``rftheory demo``): (5, 10) vs (10, 10) varies d
#: at fixed n, (5, 10) vs (5, 20) varies n at fixed d, and two of them share dn = 100. Measured
#: 71–94 s of CPU in total (2 workers: wall 1.5 min on a 2-core machine at load ≈ 4); the cells at
#: p/(dn) = 1–2, where the optimiser runs to its budget, take two thirds of it.
FULL = Config()
#: ``--quick``: two (d, n) differing in d, three seeds, a coarser grid.
QUICK = Config(grid=((4, 8), (8, 8)), ratios=(0.1, 0.5, 1.0, 2.0, 4.0, 10.0), seeds=3,
               max_steps=2000)


def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None,
        workers: int | None = None) -> dict[str, Any]:
    """Sweep p over multiples of n and dn, locate p*_label and p*_data, give the verdict.

    ``config``, ``progress`` and ``workers`` as in the protocol (:mod:`rftheory.claims`).

    Returns
    -------
    dict
        JSON-serialisable: parameters, every cell, per (d, n) the thresholds (all variants), and
        the verdict.
    """
    check_activations(config.activation)  # refuse a bad activation before starting workers
    workers = default_workers(workers)
    seed, seeds, grid, ratios = config.seed, config.seeds, config.grid, config.ratios
    max_steps, activation = config.max_steps, config.activation
    success_variant, resamples = config.success_variant, config.resamples

    sources = source_digests()  # before any work: the code the workers will run
    tasks = [{"activation": activation, "d": d, "n": n, "p": p, "seed": seed + s, "seed_index": s,
              "max_steps": max_steps}
             for d, n in grid for p in p_values(d, n, ratios) for s in range(seeds)]
    start = time.perf_counter()
    cells = _run_points(tasks, workers, progress)
    sweep_seconds = time.perf_counter() - start

    rng = np.random.default_rng([seed, _BOOTSTRAP_STREAM])
    per_grid = []
    for d, n in grid:
        mine = [c for c in cells if c["d"] == d and c["n"] == n]
        ps_all = sorted({c["p"] for c in mine})
        ps_rec = sorted({c["p"] for c in mine if c["kind"] == "reconstruction"})

        def table(key: str, ps: list[int]) -> np.ndarray:
            out = np.full((seeds, len(ps)), np.nan)
            for c in mine:
                if c["p"] in ps and key in c:
                    out[c["seed_index"], ps.index(c["p"])] = c[key]
            return out

        residual = table("train_residual", ps_all)
        label = label_threshold(ps_all, residual)
        rows = []
        rho = {v: table(f"rho_{v}", ps_rec) for v in VARIANTS}
        loss = table("final_loss", ps_rec)
        steps = table("steps", ps_rec)
        for j, p in enumerate(ps_rec):
            rows.append({"p": p, "p_over_dn": p / (d * n), "p_over_n": p / n,
                         **{f"median_rho_{v}": float(np.median(rho[v][:, j])) for v in VARIANTS},
                         **{f"success_{v}": float(np.mean(rho[v][:, j] < RHO_SUCCESS))
                            for v in VARIANTS},
                         "median_final_loss": float(np.median(loss[:, j])),
                         "median_steps": float(np.median(steps[:, j]))})
        thresholds = {}
        for v in VARIANTS:
            th = data_threshold(ps_rec, rho[v] < RHO_SUCCESS, rng=rng, resamples=resamples)
            th["p_star_over_dn"] = th["p_star"] / (d * n)
            th["p_star_over_n"] = th["p_star"] / n
            th["interval_over_dn"] = [x / (d * n) for x in th["interval"]]
            thresholds[v] = th
        per_grid.append({
            "d": d, "n": n, "dn": d * n, "p_grid": ps_all, "p_reconstruction": ps_rec,
            "label": label | {"p_star_over_n": label["p_star"] / n},
            "data": thresholds, "rows": rows,
            "seconds": float(sum(c["seconds"] for c in mine)),
        })

    verdict = _verdict(per_grid, success_variant)
    return {
        "claim": CLAIM,
        "statement": ("The min-norm RF interpolator fits generic labels once p ≳ n, and its training "
                      "set can be recovered from (θ*, V) once p ≳ dn: p*_label/n ≈ 1, "
                      "p*_data/(dn) = O(1) and the same for every (d, n)."),
        "activation": activation, "grid": [list(g) for g in grid], "ratios": list(ratios),
        "seeds": seeds, "base_seed": seed, "max_steps": max_steps, "workers": workers,
        "rho_success": RHO_SUCCESS, "label_tol": LABEL_TOL, "success_variant": success_variant,
        "collapse_factor": COLLAPSE_FACTOR, "bootstrap_resamples": resamples,
        "sweep_seconds": sweep_seconds, "sources": sources, "per_grid": per_grid,
        "verdict": verdict, "cells": cells,
    }


def _verdict(per_grid: list[dict[str, Any]], variant: str) -> dict[str, Any]:
    label_exact = all(g["label"]["p_star"] == g["n"] and g["label"]["p_below"] == g["n"] - 1
                      for g in per_grid)
    fails_at_n = all(row[f"success_{variant}"] < 0.5
                     for g in per_grid for row in g["rows"] if row["p"] == g["n"])
    succeeds_top = all(g["rows"][-1][f"success_{variant}"] >= 0.5 for g in per_grid)
    over_dn = [g["data"][variant]["p_star_over_dn"] for g in per_grid]
    over_n = [g["data"][variant]["p_star_over_n"] for g in per_grid]
    defined = all(g["data"][variant]["status"] == "ok" for g in per_grid)
    spread_dn = max(over_dn) / min(over_dn) if defined else math.nan
    spread_n = max(over_n) / min(over_n) if defined else math.nan
    collapse = defined and spread_dn <= COLLAPSE_FACTOR
    return {
        "supported": bool(label_exact and fails_at_n and succeeds_top and collapse),
        "label_threshold_is_n": bool(label_exact),
        "fails_at_p_equal_n": bool(fails_at_n),
        "succeeds_at_largest_ratio": bool(succeeds_top),
        "data_thresholds_defined": bool(defined),
        "collapse_in_dn": bool(collapse),
        "spread_p_star_over_dn": spread_dn,
        "spread_p_star_over_n": spread_n,
        "criterion": (f"for every (d, n): residual ≥ {LABEL_TOL:g} at p = n − 1 and < {LABEL_TOL:g} "
                      f"from p = n; P(ρ_{variant} < {RHO_SUCCESS}) < 1/2 at p = n and ≥ 1/2 at the "
                      f"largest ratio; max/min of p*_data/(dn) ≤ {COLLAPSE_FACTOR:g}"),
    }


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------

def _fmt(x: float, spec: str = ".2f") -> str:
    return "—" if x is None or not math.isfinite(x) else format(x, spec)


def summary(result: dict[str, Any]) -> str:
    """Thresholds per (d, n) and the verdict, as a table."""
    variant = result["success_variant"]
    rows = []
    for g in result["per_grid"]:
        th = g["data"][variant]
        lo, hi = th["interval_over_dn"]
        status = "" if th["status"] == "ok" else f" ({th['status']})"
        si = g["data"]["sign_invariant"]
        rows.append([g["d"], g["n"], _fmt(g["label"]["p_star_over_n"]),
                     _fmt(th["p_star_over_dn"]) + status, f"[{_fmt(lo)}, {_fmt(hi)}]",
                     _fmt(si["p_star_over_dn"]),
                     f"{g['rows'][0]['median_rho_abs']:.2g}", f"{g['rows'][-1]['median_rho_abs']:.1e}",
                     f"{g['seconds']:.0f}"])
    headers = ["d", "n", "p*_label/n", "p*_data/(dn)", "95% bootstrap", "(sign-inv ρ)",
               "ρ at p=n", "ρ at top", "Σ cell s"]
    v = result["verdict"]
    lines = [
        f"law of data reconstruction — {result['activation']}, {result['seeds']} seeds, "
        f"p/(dn) in {min(result['ratios']):g}..{max(result['ratios']):g}, "
        f"success = ρ_{variant} < {result['rho_success']} (median ρ_abs shown), "
        f"optimiser budget {result['max_steps']} steps",
        format_table(headers, rows),
        f"spread of p*_data over the grid: max/min of p*/(dn) = {_fmt(v['spread_p_star_over_dn'])}, "
        f"of p*/n = {_fmt(v['spread_p_star_over_n'])}",
        f"verdict: {'SUPPORTED' if v['supported'] else 'NOT SUPPORTED'} — label threshold at n: "
        f"{v['label_threshold_is_n']}; fails at p = n: {v['fails_at_p_equal_n']}; succeeds at the "
        f"top: {v['succeeds_at_largest_ratio']}; collapse in dn: {v['collapse_in_dn']}",
    ]
    return "\n".join(lines)


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """ρ and P(success) against p/(dn) for every (d, n) on shared axes; train residual against p/n."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    variant = result["success_variant"]
    fig, (ax_rho, ax_succ, ax_res) = plt.subplots(1, 3, figsize=(15, 4.4))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    floor = 1e-17  # exact zeros on log axes
    markers, styles = "os^vDP", ("-", "--", "-.", ":")
    for k, g in enumerate(result["per_grid"]):
        colour = colours[k % len(colours)]
        # distinct markers and dashes: collapsed curves lie on top of each other
        fmt = dict(marker=markers[k % len(markers)], ls=styles[k % len(styles)], ms=4, color=colour)
        d, n = g["d"], g["n"]
        label = f"d = {d}, n = {n}"
        mine = [c for c in result["cells"] if c["d"] == d and c["n"] == n]
        rec = [c for c in mine if c["kind"] == "reconstruction"]
        ax_rho.scatter([c["p_over_dn"] for c in rec], [max(c[f"rho_{variant}"], 1e-7) for c in rec],
                       s=10, alpha=0.35, color=colour)
        ax_rho.plot([r["p_over_dn"] for r in g["rows"]],
                    [max(r[f"median_rho_{variant}"], 1e-7) for r in g["rows"]], label=label, **fmt)
        th = g["data"][variant]
        ax_succ.plot([r["p_over_dn"] for r in g["rows"]], th["success_probability"], label=label,
                     **fmt)
        if th["status"] == "ok":
            lo, hi = th["interval_over_dn"]
            ax_succ.errorbar([th["p_star_over_dn"]], [0.5],
                             xerr=[[th["p_star_over_dn"] - lo], [hi - th["p_star_over_dn"]]],
                             fmt="D", color=colour, ms=6, capsize=3)
        ax_res.scatter([c["p_over_n"] for c in mine], [max(c["train_residual"], floor) for c in mine],
                       s=10, alpha=0.35, color=colour)
        med = {}
        for c in mine:
            med.setdefault(c["p"], []).append(max(c["train_residual"], floor))
        ps = sorted(med)
        ax_res.plot([p / n for p in ps], [float(np.median(med[p])) for p in ps], label=label, **fmt)
    for ax in (ax_rho, ax_succ):
        ax.set_xscale("log")
        ax.axvline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel(r"$p/(dn)$")
        ax.grid(alpha=0.3, which="both")
    ax_rho.set_yscale("log")
    ax_rho.axhline(result["rho_success"], color="k", lw=0.8, ls="--")
    ax_rho.set_ylabel(r"$\rho$" + (" (official, Hungarian on $|x|$)" if variant == "abs"
                                   else f" ({variant})"))
    ax_rho.set_title(r"reconstruction error (median over seeds)")
    ax_succ.axhline(0.5, color="k", lw=0.8, ls="--")
    ax_succ.set_ylim(-0.05, 1.05)
    ax_succ.set_ylabel(rf"$P(\rho < {result['rho_success']:g})$")
    ax_succ.set_title(r"success probability; diamond: $p^*_{\rm data}$ ± 95% bootstrap")
    ax_res.set_xscale("log")
    ax_res.set_yscale("log")
    ax_res.axvline(1.0, color="grey", lw=0.8, ls=":")
    ax_res.axhline(result["label_tol"], color="k", lw=0.8, ls="--")
    ax_res.set_xlabel(r"$p/n$")
    ax_res.set_ylabel(r"train residual $\|\Phi\theta^* - Y\|/\|Y\|$")
    ax_res.set_title("label fitting")
    ax_res.grid(alpha=0.3, which="both")
    ax_rho.legend(fontsize=8, loc="lower left")
    fig.suptitle(f"Law of data reconstruction, φ = {result['activation']}, {result['seeds']} seeds"
                 f"{' (quick)' if result.get('quick') else ''}")
    fig.tight_layout()
    return save_figure(fig, stem)


if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
