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
* p*_data — fitted by maximum likelihood from every run at every p
  (:func:`rftheory.thresholds.fit_threshold`: P(ρ < :data:`RHO_SUCCESS`) = Φ((log p − log p*)/σ)),
  with its 95 % profile-likelihood interval; when every failure lies below every success the
  width is not identified (status ``"step"``) and the interval is that of a step anywhere in the
  gap; with no run on one side the threshold is *not located*. The older crossing rule (linear
  interpolation of the success fraction in log p) is kept as a labelled secondary number. The
  same fit on every run of every (d, n) in x = p/(dn) gives the pooled constant p*/(dn).

Each failed run is classified (:func:`rftheory.metrics.run_kind`): a *spurious interpolant* (loss
at the optimiser's tolerance, ρ large: a second zero of the loss) or an *unfinished descent* (loss
above the tolerance at the budget); both are counted per p.

If the law holds, p*_label/n ≈ 1 and p*_data/(dn) is the same O(1) constant for every (d, n).

Verdict (falsifiable), for every (d, n) of the grid: (i) p*_label = n exactly; (ii) the
reconstruction fails at p = n (success fraction < 1/2) and succeeds at the largest ratio
(≥ 1/2); (iii) every p*_data is located; (iv) the collapse in dn, decided by comparing models:
log p*_data = a + b·log d + c·log n is fitted to the thresholds and their intervals
(:func:`rftheory.thresholds.power_law_fit`), and the 95 % intervals of b and of c must each
contain 1 and exclude 1/2. The log-likelihoods (AIC) of p* ∝ n, p* ∝ d and p* ∝ dn are reported
next to it. Every shipped grid varies d and n each by at least 4×, so that p* ∝ n or ∝ d would
give exponents far from 1.

Run: ``python -m rftheory.claims.law [--quick]``, ``rftheory verify law`` or ``rftheory demo``.

Notes
-----
p*_data is the threshold *of the optimiser at its step budget* (``max_steps``): near p ≈ dn the
landscape is hard and a budget-limited run may stop before it finds the training set (an
unfinished descent), so the measured p*_data is an upper bound on the information-theoretic
threshold; it moves left with a larger budget. The fit assumes independent runs, while the runs
of one seed at several p share data, labels and nested V; the interval's coverage is that of the
profile likelihood on few runs (near nominal on synthetic data, tests/test_thresholds.py).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from rftheory.deadline import Deadline
from rftheory.claims._common import (ClaimConfig, TaskProgress, check_activations, default_workers,
                                     main_for, run_tasks, source_digests)
from rftheory.errors import RFTheoryError
from rftheory.metrics import FAILURE_KINDS, run_kind
from rftheory.output import format_table, save_figure
from rftheory.thresholds import crossing  # noqa: F401 - the secondary rule, kept importable here

CLAIM = "law"

#: ρ below this counts as a successful reconstruction. Measured (default run): runs that fail sit
#: at ρ_abs ≈ 0.17–0.65, successful ones at 1e-5–1e-3; only budget-limited runs next to the
#: threshold fall in between (0.02–0.25), so the choice moves p*_data by at most a grid step.
RHO_SUCCESS = 0.1
#: Train residual ‖Φθ* − Y‖/‖Y‖ below this counts as "labels fit". Measured (default run):
#: 1e-16–5e-11 for p ≥ n (largest at p = n, where ΦΦᵀ is worst conditioned), ≥ 2e-2 for p < n,
#: so the threshold does not depend on this choice over many decades.
LABEL_TOL = 1e-6
#: (iv) of the verdict: the law's exponents of d and n (p* ∝ dn), which each exponent's interval
#: must contain, and the alternative each interval must exclude (halfway to p* ∝ n or ∝ d).
LAW_EXPONENT = 1.0
REJECTED_EXPONENT = 0.5
#: Confidence level of every interval of the claim (thresholds and exponents).
LEVEL = 0.95
#: ρ variants, the paper's official one first (see :mod:`rftheory.metrics`).
VARIANTS = ("abs", "signed", "sign_invariant")


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
    compare : tuple of str
        Further activations run on the same grid and analysed the same way (thresholds, collapse,
        scaling fit), reported next to ``activation`` but not part of the verdict — e.g.
        ``("relu",)``, whose successes are read in the sign-invariant ρ too.
    compare_seeds : int, optional
        Seeds per point of the ``compare`` activations (default ``seeds``).
    compare_grid : tuple of (d, n), optional
        The (d, n) of the ``compare`` activations (default ``grid``; a subset of it).
    sweep : bool
        Run the cells through :mod:`rftheory.sweep` into a resumable store
        (``<out_dir>/law_sweep/sweep.sqlite``) instead of in memory: a run that is interrupted
        continues where it stopped. Needs a grid that is a full product of its d's and n's
        (:func:`sweep_document` writes it as a sweep file's axes).
    """

    grid: tuple[tuple[int, int], ...] = ((4, 3), (16, 3), (4, 12))
    ratios: tuple[float, ...] = (0.5, 0.9, 1.0, 1.05, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5, 2.0, 3.0)
    seeds: int = 2
    max_steps: int = 3000
    activation: str = "relu+tanh"
    success_variant: str = "abs"
    compare: tuple[str, ...] = ()
    compare_seeds: int | None = None
    compare_grid: tuple[tuple[int, int], ...] | None = None
    sweep: bool = False

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
        compare = (self.compare,) if isinstance(self.compare, str) else self.compare
        compare = tuple(str(a) for a in compare)
        if self.activation in compare or len(set(compare)) != len(compare):
            raise RFTheoryError(f"compare must list activations other than {self.activation!r}, "
                                f"each once, got {compare!r}")
        self._set("compare", compare)
        if self.compare_seeds is not None:
            _check_grid(self.grid, self.ratios, self.compare_seeds, self.max_steps)
            self._set("compare_seeds", int(self.compare_seeds))
        if self.compare_grid is not None:
            sub, _ = _check_grid(self.compare_grid, self.ratios, self.seeds, self.max_steps)
            if not set(sub) <= set(self.grid):
                raise RFTheoryError(f"compare_grid must be a subset of grid, got {sub!r}")
            self._set("compare_grid", tuple(sorted(set(sub), key=self.grid.index)))
        self._set("sweep", bool(self.sweep))
        if self.sweep:
            for name in self.activations:
                grid = self.grid_of(name)
                ds, ns = sorted({d for d, _ in grid}), sorted({n for _, n in grid})
                if sorted(grid) != [(d, n) for d in ds for n in ns]:
                    raise RFTheoryError("a sweep-backed law run needs grids that hold every "
                                        "(d, n) of their d's and n's (a sweep file's axes are a "
                                        "product)")

    @property
    def activations(self) -> tuple[str, ...]:
        """``activation`` first, then ``compare``."""
        return (self.activation,) + self.compare

    def grid_of(self, activation: str) -> tuple[tuple[int, int], ...]:
        """The (d, n) run for ``activation``: ``grid``, or ``compare_grid`` for a compared one.

        Parameters
        ----------
        activation : str
            One of :attr:`activations`.

        Returns
        -------
        tuple of (d, n)
            The activation's grid.

        Examples
        --------
        >>> LARGE.grid_of("relu") == tuple(p for p in LARGE.grid if p[1] <= 8)
        True
        """
        if activation != self.activation and self.compare_grid is not None:
            return self.compare_grid
        return self.grid

    def seeds_of(self, activation: str) -> int:
        """Seeds per point for ``activation``: ``seeds``, or ``compare_seeds`` for a compared one.

        Parameters
        ----------
        activation : str
            One of :attr:`activations`.

        Returns
        -------
        int
            The activation's seeds per point.

        Examples
        --------
        >>> LARGE.seeds_of("relu+tanh"), LARGE.seeds_of("relu")
        (5, 3)
        """
        if activation != self.activation and self.compare_seeds is not None:
            return self.compare_seeds
        return self.seeds


# ---------------------------------------------------------------------------------------------
# Cells
# ---------------------------------------------------------------------------------------------

def p_values(d: int, n: int, ratios: Sequence[float]) -> list[int]:
    """The p of the sweep for one (d, n): round(r·dn) for every ratio r, plus n − 1, n and n/2.

    n − 1 and n pin the label-fitting threshold; n/2 shows the residual of an under-parametrised
    fit. Sorted, distinct, ≥ 1.

    Parameters
    ----------
    d, n : int
        Input dimension and training-set size.
    ratios : sequence of float
        Values of p/(dn).

    Returns
    -------
    list of int
        The numbers of features, sorted and distinct.

    Examples
    --------
    >>> p_values(4, 8, [0.5, 1.0, 2.0])
    [4, 7, 8, 16, 32, 64]
    """
    ps = {max(1, int(round(r * d * n))) for r in ratios}
    ps |= {n, max(1, n - 1), max(1, n // 2)}
    return sorted(ps)


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """One point of the sweep: :func:`rftheory.pipeline.law_cell` (a reconstruction cell when
    p ≥ n, a label-fitting cell otherwise), the same function the sweep cell kind ``law`` runs.

    BLAS is limited to one thread while it runs: these problems are tiny (n·d ≤ a few hundred
    unknowns), where threads only add synchronisation, and the last bits of reductions then do
    not depend on the machine's core count (sweep workers pin it the same way).

    Parameters
    ----------
    task : dict
        ``activation``, ``d``, ``n``, ``p``, ``seed``, ``max_steps`` (the keywords of
        :func:`~rftheory.pipeline.law_cell`) and ``seed_index`` (the seed's index in the run).

    Returns
    -------
    dict
        The cell of :func:`~rftheory.pipeline.law_cell` with ``seed_index`` and ``seconds``
        (wall time of the point) added.
    """
    from threadpoolctl import threadpool_limits

    from rftheory.pipeline import law_cell

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


def _run_points(tasks: list[dict[str, Any]], workers: int,
                progress: Callable[[str], None] | None,
                deadline: Deadline | None = None) -> list[dict[str, Any]]:
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
                     on_result=lambda i, cell: tick(lambda: line(cell)), deadline=deadline)


# ---------------------------------------------------------------------------------------------
# Thresholds
# ---------------------------------------------------------------------------------------------

def data_threshold(p: Sequence[int], success: np.ndarray, *,
                   level: float = LEVEL) -> dict[str, Any]:
    """p*_data of one (d, n): the fitted success curve of every seed at every p.

    Parameters
    ----------
    p : sequence of int, length m
        Reconstruction grid (sorted).
    success : numpy.ndarray of bool, shape (seeds, m)
        Success of each seed at each p.
    level : float
        Confidence level of the interval (default :data:`LEVEL`).

    Returns
    -------
    dict
        :meth:`rftheory.thresholds.ThresholdFit.as_dict` with ``p_star`` (the fitted location),
        ``success_probability`` (the fraction per p) and ``located``.

    Examples
    --------
    >>> th = data_threshold([10, 20, 40], np.array([[0, 0, 1], [0, 1, 1], [0, 0, 1]], bool))
    >>> th["status"], 10 < th["p_star"] < 40, th["interval"][0] < th["p_star"] < th["interval"][1]
    ('ok', True, True)
    """
    from rftheory.thresholds import fit_threshold

    success = np.asarray(success, dtype=bool)
    grid = np.broadcast_to(np.asarray(p, dtype=np.float64), success.shape)
    fit = fit_threshold(grid.ravel(), success.ravel(), level=level)
    out = fit.as_dict()
    out.update(p_star=fit.location, located=fit.located,
               success_probability=success.mean(axis=0).tolist())
    return out


def label_threshold(p: Sequence[int], residual: np.ndarray, tol: float = LABEL_TOL) -> dict[str, Any]:
    """p*_label: the smallest grid p from which every seed's train residual is below ``tol``.

    Parameters
    ----------
    p : sequence of int, length m
        The grid (sorted).
    residual : numpy.ndarray, shape (seeds, m)
        Train residual ‖Φθ* − Y‖/‖Y‖ of each seed at each p.
    tol : float
        Residual below which the labels count as fit (default :data:`LABEL_TOL`, 1e-6).

    Returns
    -------
    dict
        ``p_star`` (NaN if the largest p does not fit), ``p_below`` (the grid point just
        before, the other end of the bracket; NaN if none) and ``max_residual`` (the largest
        residual per p).

    Examples
    --------
    >>> label_threshold([3, 4, 8], [[0.3, 1e-15, 1e-15], [0.2, 1e-14, 1e-15]])["p_star"]
    4.0
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


#: The ratios p/(dn) of the shipped grids near the transition: the measured transition of the
#: attack sits near 1.1·dn, so steps of 0.05 there and coarser further out.
TRANSITION_RATIOS = (0.9, 1.0, 1.05, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5, 2.0)
#: The default sweep (the package's main job, ``rftheory demo``, ``rftheory verify law``):
#: (4, 3) vs (16, 3) varies d by 4× at fixed n, (4, 3) vs (4, 12) varies n by 4× at fixed d (so
#: p* ∝ n, ∝ d and ∝ dn give exponents 0 or 1 far apart), p/(dn) in
#: :data:`TRANSITION_RATIOS` plus 0.5 and 3, 2 seeds: 3 seeds measured 174 s of CPU (2 workers),
#: over the demo's minute on 2 cores; 2 seeds cost 2/3 of it. Cost and intervals in
#: ``paper_notes/law.md``.
FULL = Config()
#: ``--quick``: the same shape smaller — (3, 3), (12, 3), (3, 12) — a coarser transition grid,
#: a smaller budget.
QUICK = Config(grid=((3, 3), (12, 3), (3, 12)),
               ratios=(0.5, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 2.0, 4.0),
               seeds=3, max_steps=2000)
#: ``--large``: the law over a real grid — d ∈ {10, 20, 40, 80} × n ∈ {4, 8, 16} (d over 8×, n
#: over 4×, dn from 40 to 1280), p/(dn) in :data:`TRANSITION_RATIOS` plus 0.5, 3 and 5, plus
#: p = n/2, n − 1, n, relu + tanh with 5 seeds (the verdict's), relu compared with 3 seeds at
#: n ∈ {4, 8}, run through the sweep machinery (resumable), one store per activation. The same
#: cells as ``examples/law_grid.toml`` and ``examples/law_grid_relu.toml`` (a test keeps them
#: equal), so stores made by ``rftheory sweep run`` on those files are analysed by this run
#: without recomputing anything. ``max_steps`` is the one budget of every cell: the failing
#: cells (p ≈ dn) all spend it, so it sets most of the run's time.
LARGE = Config(grid=tuple((d, n) for d in (10, 20, 40, 80) for n in (4, 8, 16)),
              ratios=(0.5,) + TRANSITION_RATIOS + (3.0, 5.0), seeds=5,
              max_steps=3000, compare=("relu",), compare_seeds=3,
              compare_grid=tuple((d, n) for d in (10, 20, 40, 80) for n in (4, 8)), sweep=True)
#: The grid of the shipped exports (``examples/law_grid_cells.jsonl.gz``,
#: ``examples/law_grid_relu_cells.jsonl.gz``): :data:`LARGE` as it was when they were run, with
#: p/(dn) ∈ {0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 5, 10} — before the resolving ratios. They were
#: not rerun on the new grid (80 minutes on 2 free cores); :func:`result_from_export` reads them
#: with this configuration.
LARGE_EXPORTED = LARGE.replace(ratios=(0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0))

#: Directory of the sweep store of a sweep-backed run, under the run's output directory (that of
#: ``activation``; each compared activation's is ``law_sweep_<name>``, see :func:`sweep_dir`).
SWEEP_DIR = "law_sweep"


def sweep_dir(config: Config, activation: str) -> str:
    """The store directory of ``activation``'s cells under a sweep-backed run's output directory.

    Parameters
    ----------
    config : Config
        The run's configuration.
    activation : str
        One of ``config.activations``.

    Returns
    -------
    str
        :data:`SWEEP_DIR` for ``config.activation``, ``law_sweep_<name>`` for a compared one
        (``<name>``: the activation with every run of other characters than letters and digits
        replaced by ``-``).

    Examples
    --------
    >>> sweep_dir(LARGE, "relu+tanh"), sweep_dir(LARGE, "relu")
    ('law_sweep', 'law_sweep_relu')
    """
    if activation == config.activation:
        return SWEEP_DIR
    return SWEEP_DIR + "_" + re.sub(r"[^A-Za-z0-9]+", "-", activation).strip("-")


def sweep_document(config: Config, activation: str | None = None) -> dict[str, Any]:
    """The sweep file of one activation's grid, as the dict :func:`rftheory.sweep.parse_spec`
    takes.

    Cell kind ``law`` (:func:`rftheory.pipeline.law_cell`); axes activation, d, n, p (the
    label points ``"0.5n"``, ``"n-1"``, ``"n"`` and ``"<r>dn"`` for every ratio) and seed
    (``seed + s``); ``max_steps`` fixed. Each activation has its own file, since a compared one
    may run fewer seeds on fewer (d, n) (:meth:`Config.grid_of`, :meth:`Config.seeds_of`):
    ``examples/law_grid.toml`` and ``examples/law_grid_relu.toml`` are these documents for
    :data:`LARGE`.

    Parameters
    ----------
    config : Config
        The claim's configuration.
    activation : str, optional
        One of ``config.activations`` (default ``config.activation``).

    Returns
    -------
    dict
        ``{"sweep": ..., "grid": ..., "fixed": ...}``, the sections of a sweep file.

    Examples
    --------
    >>> doc = sweep_document(LARGE, "relu")
    >>> doc["sweep"]["name"], doc["grid"]["n"], doc["grid"]["seed"]
    ('law-grid-relu', [4, 8], [0, 1, 2])
    """
    activation = config.activation if activation is None else activation
    if activation not in config.activations:
        raise RFTheoryError(f"{activation!r} is not one of the run's activations "
                            f"{', '.join(config.activations)}")
    grid = config.grid_of(activation)
    ds, ns = sorted({d for d, _ in grid}), sorted({n for _, n in grid})
    name = "law-grid" if config in (LARGE, LARGE_EXPORTED) else "law"
    if activation != config.activation:
        name += "-" + sweep_dir(config, activation).removeprefix(SWEEP_DIR + "_")
    return {
        "sweep": {"cell": "law", "name": name},
        "grid": {"activation": [activation], "d": ds, "n": ns,
                 "p": ["0.5n", "n-1", "n"] + [f"{r:g}dn" for r in config.ratios],
                 "seed": [config.seed + s for s in range(config.seeds_of(activation))]},
        "fixed": {"max_steps": config.max_steps},
    }


def _sweep_cells(config: Config, out_dir: Path, workers: int,
                 progress: Callable[[str], None] | None,
                 deadline: Deadline | None = None) -> tuple[list[dict[str, Any]], float]:
    """Run (or resume) the sweep of each of ``config``'s activations into its store under
    ``out_dir`` (:func:`sweep_dir`); their cells as dicts. At the deadline the stored cells stay
    (a rerun resumes) and :class:`~rftheory.claims._common.TimeLimitReached` says what is left:
    no verdict is drawn from part of a grid."""
    from rftheory.claims._common import TimeLimitReached
    from rftheory.sweep import parse_spec, run_sweep

    cells, seconds = [], 0.0
    for activation in config.activations:
        spec = parse_spec(sweep_document(config, activation), source="law claim")
        store = out_dir / sweep_dir(config, activation)
        done = run_sweep(spec, store, resume=True, workers=workers,
                         progress=progress is not None, deadline=deadline)
        if progress is not None:
            progress(f"sweep store {done.store}: {done.already_done} cells already stored, "
                     f"{done.computed} computed in {done.seconds:.0f} s on {done.executor}")
        if done.stop_reason == "time_limit":
            later = config.activations[config.activations.index(activation) + 1:]
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
        ``error`` for a failed cell.
    """
    from rftheory.sweep import SweepStore

    with SweepStore.open_reader(directory) as store:
        scan = store.scan()
    return [_cell_row(c.params, c.status, c.result, c.seconds) for c in scan.cells.values()
            if c.kind == "law"]


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

    return [_cell_row(r["params"], r["status"], r["result"], r["seconds"])
            for r in read_export(path) if r["kind"] == "law"]


def _cell_row(params: dict, status: str, result: dict, seconds: float | None) -> dict[str, Any]:
    if status != "ok":
        return {**params, "error": result.get("error", "failed")}
    return {**result, "seconds": float(seconds or 0.0)}


def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None,
        workers: int | None = None, out_dir: str | Path = "results",
        deadline: Deadline | None = None) -> dict[str, Any]:
    """Sweep p over multiples of n and dn, locate p*_label and p*_data, give the verdict.

    ``config``, ``progress`` and ``workers`` as in the protocol (:mod:`rftheory.claims`);
    ``out_dir`` holds the sweep store of a sweep-backed configuration (``config.sweep``, e.g.
    :data:`LARGE`), which a second call resumes.

    Parameters
    ----------
    config : Config
        What to sweep (default :data:`FULL`).
    progress : callable, optional
        Receives one line per finished point.
    workers : int, optional
        Worker processes (default min(2, CPUs)); results do not depend on it.
    out_dir : str or Path
        Directory of the sweep store of a sweep-backed configuration (default ``"results"``).
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops (:func:`rftheory.claims._common.run_tasks` raises
        :class:`~rftheory.claims._common.TimeLimitReached`, which
        :func:`~rftheory.claims._common.run_claim` saves as a partial result); default none.

    Returns
    -------
    dict
        JSON-serialisable: parameters, every cell, per (d, n) the thresholds (all variants), the
        scaling fit, the same for every compared activation, and the verdict.
    """
    for name in config.activations:  # refuse a bad activation before starting workers
        check_activations(name)
    workers = default_workers(workers)
    sources = source_digests()  # before any work: the code the workers will run
    start = time.perf_counter()
    if config.sweep:
        cells, _ = _sweep_cells(config, Path(out_dir), workers, progress, deadline)
    else:
        tasks = [{"activation": a, "d": d, "n": n, "p": p, "seed": config.seed + s,
                  "seed_index": s, "max_steps": config.max_steps}
                 for a in config.activations for d, n in config.grid_of(a)
                 for p in p_values(d, n, config.ratios) for s in range(config.seeds_of(a))]
        cells = _run_points(tasks, workers, progress, deadline)
    result = analyse(cells, config)
    result.update(workers=workers, sweep_seconds=time.perf_counter() - start, sources=sources)
    return result


def analyse(cells: Sequence[dict[str, Any]], config: Config) -> dict[str, Any]:
    """The claim's result from its cells (in memory, from a sweep store or from an export).

    Every cell of ``config``'s grid must be there and have succeeded (a missing or failed cell
    raises :class:`RFTheoryError`: resume the run first). Cells outside the grid are ignored.
    Every fit is deterministic, so the same cells give the same result.

    Parameters
    ----------
    cells : sequence of dict
        Cells as :func:`run_point` returns them (or :func:`cells_from_store` reads them).
    config : Config
        The configuration whose grid the cells cover.

    Returns
    -------
    dict
        As :func:`run` (without ``workers``, ``sweep_seconds`` and ``sources``).

    Raises
    ------
    rftheory.errors.RFTheoryError
        If a cell of the grid is missing or failed.
    """
    seed, seeds = config.seed, config.seeds
    wanted = {(a, d, n, p, seed + s) for a in config.activations for d, n in config.grid_of(a)
              for p in _grid_ps(config, d, n) for s in range(config.seeds_of(a))}
    by_key: dict[tuple, dict[str, Any]] = {}
    failed = []
    for cell in cells:
        key = (cell["activation"], cell["d"], cell["n"], cell["p"], cell["seed"])
        if key in wanted:
            (failed.append(cell) if "error" in cell else by_key.__setitem__(key, cell))
    missing = len(wanted) - len(by_key)
    if missing:
        example = failed[0]["error"] if failed else "not computed yet"
        raise RFTheoryError(f"{missing} of the {len(wanted)} cells of the law's grid are missing "
                            f"or failed ({len(failed)} failed, e.g. {example}); run it again to "
                            "resume (a sweep-backed run recomputes only those)")
    kept = [dict(by_key[k], seed_index=k[4] - seed) for k in sorted(by_key)]
    by_activation = {}
    for name in config.activations:
        mine = [c for c in kept if c["activation"] == name]
        per_grid = _per_grid(mine, config, name)
        fits = {v: scaling_fit(per_grid, v) for v in VARIANTS}
        by_activation[name] = {"per_grid": per_grid, "seeds": config.seeds_of(name),
                               "pooled": {v: pooled_threshold(mine, v) for v in VARIANTS},
                               "verdict": _verdict(per_grid, config.success_variant,
                                                   fits[config.success_variant]),
                               "fits": fits}
    primary = by_activation[config.activation]
    return {
        "claim": CLAIM,
        "statement": ("The min-norm RF interpolator fits generic labels once p ≳ n, and its training "
                      "set can be recovered from (θ*, V) once p ≳ dn: p*_label/n ≈ 1, "
                      "p*_data/(dn) = O(1) and the same for every (d, n)."),
        "activation": config.activation, "compare": list(config.compare),
        "grid": [list(g) for g in config.grid], "ratios": list(config.ratios),
        "seeds": seeds, "base_seed": seed, "max_steps": config.max_steps,
        "compare_seeds": config.seeds_of(config.compare[0]) if config.compare else None,
        "compare_grid": ([list(g) for g in config.grid_of(config.compare[0])]
                         if config.compare else None),
        "sweep": config.sweep, "rho_success": RHO_SUCCESS, "label_tol": LABEL_TOL,
        "success_variant": config.success_variant, "level": LEVEL,
        "law_exponent": LAW_EXPONENT, "rejected_exponent": REJECTED_EXPONENT,
        "per_grid": primary["per_grid"], "pooled": primary["pooled"],
        "failure_kinds": {v: _kind_totals(primary["per_grid"], v) for v in VARIANTS},
        "fits": primary["fits"], "verdict": primary["verdict"],
        "by_activation": {k: v for k, v in by_activation.items() if k != config.activation},
        "cells": kept,
    }


def _grid_ps(config: Config, d: int, n: int) -> list[int]:
    """The p of one (d, n): the in-memory sweep's :func:`p_values`; a sweep-backed run's from
    its sweep file (the same set but for odd n, where round(n/2) and n // 2 may differ)."""
    if not config.sweep:
        return p_values(d, n, config.ratios)
    from rftheory.sweep.spec import p_from_expression

    return sorted({p_from_expression(t, d=d, n=n) for t in sweep_document(config)["grid"]["p"]})


def _per_grid(mine: list[dict[str, Any]], config: Config,
              activation: str) -> list[dict[str, Any]]:
    """Thresholds per (d, n) of one activation's cells (see the module docstring)."""
    seeds, per_grid = config.seeds_of(activation), []
    for d, n in config.grid_of(activation):
        here = [c for c in mine if c["d"] == d and c["n"] == n]
        ps_all = sorted({c["p"] for c in here})
        ps_rec = sorted({c["p"] for c in here if c["kind"] == "reconstruction"})

        def table(key: str, ps: list[int]) -> np.ndarray:
            out = np.full((seeds, len(ps)), np.nan)
            for c in here:
                if c["p"] in ps and key in c:
                    out[c["seed_index"], ps.index(c["p"])] = c[key]
            return out

        label = label_threshold(ps_all, table("train_residual", ps_all))
        rho = {v: table(f"rho_{v}", ps_rec) for v in VARIANTS}
        loss, steps = table("final_loss", ps_rec), table("steps", ps_rec)
        recs = [c for c in here if c["kind"] == "reconstruction"]
        rows = [{"p": p, "p_over_dn": p / (d * n), "p_over_n": p / n,
                 **{f"median_rho_{v}": float(np.median(rho[v][:, j])) for v in VARIANTS},
                 **{f"success_{v}": float(np.mean(rho[v][:, j] < RHO_SUCCESS)) for v in VARIANTS},
                 **{f"kinds_{v}": _kinds([c for c in recs if c["p"] == p], v) for v in VARIANTS},
                 "median_final_loss": float(np.median(loss[:, j])),
                 "median_steps": float(np.median(steps[:, j]))}
                for j, p in enumerate(ps_rec)]
        thresholds = {}
        for v in VARIANTS:
            th = data_threshold(ps_rec, rho[v] < RHO_SUCCESS)
            th["p_star_over_dn"] = th["p_star"] / (d * n)
            th["p_star_over_n"] = th["p_star"] / n
            th["interval_over_dn"] = [x / (d * n) for x in th["interval"]]
            th["gap_over_dn"] = [x / (d * n) for x in th["gap"]]
            th["crossing_over_dn"] = th["crossing"] / (d * n)
            thresholds[v] = th
        per_grid.append({
            "d": d, "n": n, "dn": d * n, "p_grid": ps_all, "p_reconstruction": ps_rec,
            "label": label | {"p_star_over_n": label["p_star"] / n},
            "data": thresholds, "rows": rows,
            "seconds": float(sum(c["seconds"] for c in here)),
        })
    return per_grid


def _kinds(cells: Sequence[dict[str, Any]], variant: str) -> dict[str, int]:
    """Counts of :data:`rftheory.metrics.FAILURE_KINDS` among reconstruction cells."""
    out = dict.fromkeys(FAILURE_KINDS, 0)
    for c in cells:
        out[run_kind(c, variant, rho_success=RHO_SUCCESS)] += 1
    return out


def _kind_totals(per_grid: Sequence[dict[str, Any]], variant: str) -> dict[str, int]:
    """The failure kinds of every reconstruction of the grid, summed."""
    out = dict.fromkeys(FAILURE_KINDS, 0)
    for g in per_grid:
        for row in g["rows"]:
            for k, v in row[f"kinds_{variant}"].items():
                out[k] += v
    return out


def pooled_threshold(cells: Sequence[dict[str, Any]], variant: str = "abs") -> dict[str, Any]:
    """The law's constant: one success curve fitted to every run of every (d, n) in p/(dn).

    If p*_data ∝ dn, every (d, n)'s curve is the same function of p/(dn), and this fit of all
    runs at once (:func:`rftheory.thresholds.fit_threshold` on x = p/(dn)) estimates the common
    p*/(dn) with the interval of all the runs; when the thresholds differ between (d, n) its
    width absorbs the spread (read it with the per-(d, n) thresholds and the scaling fit).

    Parameters
    ----------
    cells : sequence of dict
        Cells of one activation (label-fit cells are skipped).
    variant : str
        The ρ that decides success.

    Returns
    -------
    dict
        :meth:`~rftheory.thresholds.ThresholdFit.as_dict` in units of dn, with
        ``p_star_over_dn`` (the location) and ``interval_over_dn``.

    Examples
    --------
    >>> cells = [{"kind": "reconstruction", "p": p, "d": 2, "n": 5, "rho_abs": r}
    ...          for p, r in ((9, 0.5), (10, 0.4), (11, 1e-6), (12, 1e-6), (10, 1e-6), (9, 0.3))]
    >>> th = pooled_threshold(cells)
    >>> th["status"], 0.9 < th["p_star_over_dn"] < 1.1
    ('ok', True)
    """
    from rftheory.thresholds import fit_threshold

    recs = [c for c in cells if c.get("kind") == "reconstruction"]
    x = [c["p"] / (c["d"] * c["n"]) for c in recs]
    fit = fit_threshold(x, [c[f"rho_{variant}"] < RHO_SUCCESS for c in recs], level=LEVEL)
    out = fit.as_dict()
    out.update(p_star_over_dn=fit.location, interval_over_dn=list(fit.interval),
               located=fit.located)
    return out


def scaling_fit(per_grid: Sequence[dict[str, Any]], variant: str = "abs") -> dict[str, Any]:
    """log p*_data = a + b·log d + c·log n over the grid, with intervals and the alternatives.

    The law predicts b = c = 1 (p* ∝ dn); a threshold set by n alone would give b = 0, by d
    alone c = 0. The fit is :func:`rftheory.thresholds.power_law_fit` on every located (d, n)'s
    fitted p*_data and its interval (an open interval leaves that (d, n) out).

    Parameters
    ----------
    per_grid : sequence of dict
        Per (d, n): ``d``, ``n``, ``data`` (per ρ variant, :func:`data_threshold`'s result) and
        ``label`` (:func:`label_threshold`'s result).
    variant : str
        The ρ variant whose p*_data is fit (default ``"abs"``).

    Returns
    -------
    dict
        :meth:`~rftheory.thresholds.PowerLawFit.as_dict` (``exponents``, ``intervals``,
        ``prefactor``, ``scale``, ``models`` with each alternative's log-likelihood and AIC,
        ``points``) with ``variant``, ``best_model`` (lowest AIC; None without a fit) and
        ``label_exponents`` (the same least squares of log p*_label, the law predicts d⁰ n¹).
    """
    from rftheory.thresholds import power_law_fit

    fit = power_law_fit([g["d"] for g in per_grid], [g["n"] for g in per_grid],
                        [g["data"][variant]["p_star"] for g in per_grid],
                        [g["data"][variant]["interval"] for g in per_grid], level=LEVEL)
    out = {"variant": variant, **fit.as_dict(),
           "best_model": min(fit.models, key=lambda m: fit.models[m]["aic"]) if fit.models else None,
           "label_exponents": {"d": math.nan, "n": math.nan}}
    labels = [g for g in per_grid if math.isfinite(g["label"]["p_star"])]
    if len(labels) >= 3 and len({g["d"] for g in labels}) > 1 and len({g["n"] for g in labels}) > 1:
        B = np.column_stack([np.ones(len(labels)), np.log([g["d"] for g in labels]),
                             np.log([g["n"] for g in labels])])
        lc, *_ = np.linalg.lstsq(B, np.log([g["label"]["p_star"] for g in labels]), rcond=None)
        out["label_exponents"] = {"d": float(lc[1]), "n": float(lc[2])}
    return out


def result_from_export(path: str | Path | Sequence[str | Path],
                       config: Config | None = None) -> dict[str, Any]:
    """The claim's result recomputed from the exports of finished sweep stores (no cell is run):
    the tables, fits and figures of a run, redrawn from the few hundred kB kept in the
    repository (``examples/law_grid_cells.jsonl.gz`` for relu + tanh and
    ``examples/law_grid_relu_cells.jsonl.gz`` for relu, one export per store).

    ``config`` defaults to :data:`LARGE` (or, if the exports do not hold its cells,
    :data:`LARGE_EXPORTED`, the grid the shipped exports were run on) restricted to what the
    exports hold: the (d, n) of
    its activation's cells, and, if there are cells of its compared activation, their (d, n)
    (else no comparison). So the export of a part of the grid (e.g. d ∈ {10, 20}, n ∈ {4, 8},
    run first to check the machinery) is analysed the same way; every other setting (ratios,
    seeds, budget) must be :data:`LARGE`'s, or :func:`analyse` reports the missing cells.

    Parameters
    ----------
    path : str or Path, or a sequence of them
        The export(s) (``rftheory sweep export``).
    config : Config, optional
        The configuration the exports cover (default: :data:`LARGE` on the exports' (d, n)).

    Returns
    -------
    dict
        As :func:`analyse`, with ``from_export`` (the path, or the paths joined by ``", "``)
        added.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If the exports hold no cell of the law, or miss cells of the grid.
    """
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    cells = [c for p in paths for c in cells_from_export(p)]
    shown = ", ".join(str(p) for p in paths)
    if config is None:
        def pairs(names: Sequence[str]) -> tuple[tuple[int, int], ...]:
            return tuple(sorted({(int(c["d"]), int(c["n"])) for c in cells
                                 if c.get("activation") in names}))

        grid = pairs([LARGE.activation])
        if not grid:
            raise RFTheoryError(f"{shown} holds no cell of the law for {LARGE.activation}")
        compared = pairs(LARGE.compare)
        configs = [base.replace(grid=grid, compare_grid=compared) if compared and
                   set(compared) <= set(grid) else base.replace(grid=grid, compare=(),
                                                                compare_grid=None)
                   for base in (LARGE, LARGE_EXPORTED)]
        try:  # the current grid; else the grid the shipped exports were run on
            result = analyse(cells, configs[0])
        except RFTheoryError as first:
            try:
                result = analyse(cells, configs[1])
            except RFTheoryError:
                raise first from None
        result["from_export"] = shown
        return result
    result = analyse(cells, config)
    result["from_export"] = shown
    return result


def collapse_in_dn(fit: dict[str, Any]) -> bool:
    """(iv) of the verdict: the intervals of b and of c each contain 1 and exclude 1/2.

    Parameters
    ----------
    fit : dict
        A :func:`scaling_fit` result.

    Returns
    -------
    bool
        False when the grid gave no fit.

    Examples
    --------
    >>> collapse_in_dn({"intervals": {"d": [0.8, 1.2], "n": [0.7, 1.1]}})
    True
    >>> collapse_in_dn({"intervals": {"d": [0.4, 1.2], "n": [0.7, 1.1]}})  # 1/2 not excluded
    False
    """
    def holds(lo: float, hi: float) -> bool:
        return (_finite(lo) and _finite(hi) and lo <= LAW_EXPONENT <= hi
                and not lo <= REJECTED_EXPONENT <= hi)

    return all(holds(*fit["intervals"][k]) for k in ("d", "n"))


def _verdict(per_grid: list[dict[str, Any]], variant: str, fit: dict[str, Any]) -> dict[str, Any]:
    label_exact = all(g["label"]["p_star"] == g["n"] and g["label"]["p_below"] == g["n"] - 1
                      for g in per_grid)
    fails_at_n = all(row[f"success_{variant}"] < 0.5
                     for g in per_grid for row in g["rows"] if row["p"] == g["n"])
    succeeds_top = all(g["rows"][-1][f"success_{variant}"] >= 0.5 for g in per_grid)
    over_dn = [g["data"][variant]["p_star_over_dn"] for g in per_grid]
    over_n = [g["data"][variant]["p_star_over_n"] for g in per_grid]
    located = all(g["data"][variant]["located"] for g in per_grid)
    spread_dn = max(over_dn) / min(over_dn) if located else math.nan
    spread_n = max(over_n) / min(over_n) if located else math.nan
    collapse = located and collapse_in_dn(fit)
    return {
        "supported": bool(label_exact and fails_at_n and succeeds_top and collapse),
        "label_threshold_is_n": bool(label_exact),
        "fails_at_p_equal_n": bool(fails_at_n),
        "succeeds_at_largest_ratio": bool(succeeds_top),
        "data_thresholds_located": bool(located),
        "collapse_in_dn": bool(collapse),
        "exponent_d": fit["exponents"]["d"], "exponent_d_interval": fit["intervals"]["d"],
        "exponent_n": fit["exponents"]["n"], "exponent_n_interval": fit["intervals"]["n"],
        "best_model": fit["best_model"],
        "spread_p_star_over_dn": spread_dn,
        "spread_p_star_over_n": spread_n,
        "criterion": (f"for every (d, n): residual ≥ {LABEL_TOL:g} at p = n − 1 and < {LABEL_TOL:g} "
                      f"from p = n; P(ρ_{variant} < {RHO_SUCCESS}) < 1/2 at p = n and ≥ 1/2 at the "
                      f"largest ratio; p*_data located; in log p* = a + b log d + c log n the "
                      f"{LEVEL:.0%} intervals of b and c each contain {LAW_EXPONENT:g} and exclude "
                      f"{REJECTED_EXPONENT:g}"),
    }


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------

def _finite(x: Any) -> bool:
    """A finite number (saved JSON writes NaN as a string or null)."""
    return isinstance(x, (int, float)) and math.isfinite(x)


def _fmt(x: Any, spec: str = ".2f") -> str:
    return format(x, spec) if _finite(x) else "—"


def _threshold_table(name: str, per_grid: list[dict[str, Any]], variant: str) -> str:
    rows = []
    for g in per_grid:
        th = g["data"][variant]
        lo, hi = th["interval_over_dn"]
        status = "" if th["status"] == "ok" else f" ({th['status']})"
        kinds = _kind_totals([g], variant)
        rows.append([g["d"], g["n"], _fmt(g["label"]["p_star_over_n"]),
                     _fmt(th["p_star_over_dn"], ".3f") + status,
                     f"[{_fmt(lo, '.3f')}, {_fmt(hi, '.3f')}]", _fmt(th["width"], ".3f"),
                     _fmt(th["crossing_over_dn"], ".3f"),
                     _fmt(g["data"]["sign_invariant"]["p_star_over_dn"], ".3f"),
                     f"{kinds['spurious']}/{kinds['unfinished']}",
                     f"{g['seconds']:.0f}"])
    headers = ["d", "n", "p*_label/n", "p*_data/(dn) fit", f"{LEVEL:.0%} profile", "width σ",
               "crossing", "(sign-inv ρ)", "spurious/unfinished", "Σ cell s"]
    return f"φ = {name}\n" + format_table(headers, rows)


def _kinds_table(per_grid: list[dict[str, Any]], variant: str) -> str:
    """Per (d, n), the failure kinds at each p/(dn): ``s`` spurious, ``u`` unfinished."""
    ratios = sorted({round(r["p_over_dn"], 3) for g in per_grid for r in g["rows"]})
    rows = []
    for g in per_grid:
        cells = {round(r["p_over_dn"], 3): r[f"kinds_{variant}"] for r in g["rows"]}
        rows.append([f"({g['d']}, {g['n']})"] + [
            (f"{k['success']}✓ {k['spurious']}s {k['unfinished']}u" if (k := cells.get(x)) else "")
            for x in ratios])
    return ("runs per p/(dn): ✓ success, s spurious interpolant (loss ≤ tol, ρ large), "
            "u unfinished descent (loss > tol)\n"
            + format_table(["(d, n)"] + [f"{x:g}" for x in ratios], rows))


def _fit_line(fit: dict[str, Any]) -> str:
    if not _finite(fit["exponents"]["d"]):
        return f"fit of log p*_data (ρ_{fit['variant']}): not enough located (d, n)"
    e, iv, m = fit["exponents"], fit["intervals"], fit["models"]
    aic = ", ".join(f"p* ∝ {k}: {m[k]['aic']:.1f}" for k in ("dn", "n", "d") if k in m)
    return (f"fit p*_data ∝ d^b n^c (ρ_{fit['variant']}, {fit['points']} points): "
            f"b = {e['d']:.2f} [{_fmt(iv['d'][0])}, {_fmt(iv['d'][1])}], "
            f"c = {e['n']:.2f} [{_fmt(iv['n'][0])}, {_fmt(iv['n'][1])}] ({fit['level']:.0%}, "
            f"errors ×{fit['scale']:.2f}); AIC {aic} (free fit {m['free']['aic']:.1f}; lowest: "
            f"{fit['best_model']}); the law predicts b = c = 1")


def _pooled_line(pooled: dict[str, Any], variant: str) -> str:
    th = pooled[variant]
    lo, hi = th["interval_over_dn"]
    return (f"pooled over every (d, n): p*/(dn) = {_fmt(th['p_star_over_dn'], '.3f')} "
            f"[{_fmt(lo, '.3f')}, {_fmt(hi, '.3f')}] ({th['status']}, width σ = "
            f"{_fmt(th['width'], '.3f')}; crossing rule {_fmt(th['crossing'], '.3f')})")


def summary(result: dict[str, Any]) -> str:
    """Thresholds per (d, n), failure kinds, the scaling fit and the verdict, as tables.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or :func:`analyse`).

    Returns
    -------
    str
        The tables, one line per row.
    """
    variant = result["success_variant"]
    v = result["verdict"]
    lines = [
        f"law of data reconstruction — {result['seeds']} seeds, "
        f"p/(dn) in {min(result['ratios']):g}..{max(result['ratios']):g}, "
        f"success = ρ_{variant} < {result['rho_success']} (p*_data: probit fit of every run, "
        f"profile-likelihood interval; crossing: the interpolation rule, secondary), "
        f"optimiser budget {result['max_steps']} steps"
        + (f" (from {result['from_export']})" if result.get("from_export") else ""),
        _threshold_table(result["activation"], result["per_grid"], variant),
        _pooled_line(result["pooled"], variant),
        _kinds_table(result["per_grid"], variant),
        f"spread of p*_data over the grid: max/min of p*/(dn) = {_fmt(v['spread_p_star_over_dn'])}, "
        f"of p*/n = {_fmt(v['spread_p_star_over_n'])}",
        _fit_line(result["fits"][variant]),
    ]
    for name, other in result.get("by_activation", {}).items():
        lines += [f"compared: φ = {name}, {other.get('seeds', result['seeds'])} seeds",
                  _threshold_table(name, other["per_grid"], variant),
                  _pooled_line(other["pooled"], "sign_invariant") + " (sign-invariant ρ)",
                  _fit_line(other["fits"][variant]), _fit_line(other["fits"]["sign_invariant"]),
                  "compared, not part of the verdict"]
    lines.append(
        f"verdict ({result['activation']}): {'SUPPORTED' if v['supported'] else 'NOT SUPPORTED'} "
        f"— label threshold at n: {v['label_threshold_is_n']}; fails at p = n: "
        f"{v['fails_at_p_equal_n']}; succeeds at the top: {v['succeeds_at_largest_ratio']}; "
        f"thresholds located: {v['data_thresholds_located']}; collapse in dn (b, c ∋ 1, ∌ 1/2): "
        f"{v['collapse_in_dn']}")
    return "\n".join(lines)


def _spread(per_grid: list[dict[str, Any]], variant: str) -> float:
    values = [g["data"][variant]["p_star_over_dn"] for g in per_grid
              if g["data"][variant]["located"]]
    return max(values) / min(values) if len(values) == len(per_grid) and values else math.nan


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------

#: Markers by n (up to 6 distinct n); colours (rftheory.plotting.PALETTE) by d.
_MARKERS = "osD^vP"
_RHO_FLOOR = 1e-7  # ρ of exact reconstructions on log axes


def _styles(per_grid: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """Colour by d, marker and dash by n: a product grid reads as two legends, not twelve."""
    from rftheory.plotting import PALETTE

    ds = sorted({g["d"] for g in per_grid})
    ns = sorted({g["n"] for g in per_grid})
    dashes = ("-", "--", ":", "-.")
    return {(g["d"], g["n"]): dict(color=PALETTE[ds.index(g["d"]) % len(PALETTE)],
                                   marker=_MARKERS[ns.index(g["n"]) % len(_MARKERS)],
                                   ls=dashes[ns.index(g["n"]) % len(dashes)], ms=3, lw=0.9)
            for g in per_grid}


def _legend(ax: Any, per_grid: list[dict[str, Any]], **kwargs: Any) -> None:
    """One legend entry per (d, n) for small grids; for products, colour = d and marker = n."""
    from matplotlib.lines import Line2D

    styles = _styles(per_grid)
    ds = sorted({g["d"] for g in per_grid})
    ns = sorted({g["n"] for g in per_grid})
    if len(per_grid) <= 4:
        handles = [Line2D([], [], **styles[(g["d"], g["n"])]) for g in per_grid]
        labels = [f"d = {g['d']}, n = {g['n']}" for g in per_grid]
    else:
        by_d = {g["d"]: styles[(g["d"], g["n"])]["color"] for g in per_grid}
        by_n = {g["n"]: styles[(g["d"], g["n"])] for g in per_grid}
        handles = [Line2D([], [], color=by_d[d], lw=2) for d in ds] + \
                  [Line2D([], [], color="0.3", marker=by_n[n]["marker"], ls=by_n[n]["ls"], ms=3,
                          lw=0.9) for n in ns]
        labels = [f"d = {d}" for d in ds] + [f"n = {n}" for n in ns]
    ax.legend(handles, labels, **kwargs)


def _median_rho(g: dict[str, Any], variant: str, x: str) -> tuple[list[float], list[float]]:
    return ([r[x] for r in g["rows"]], [max(r[f"median_rho_{variant}"], _RHO_FLOOR) for r in g["rows"]])


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """The claim's figures (PNG + PDF each), drawn in the package's style.

    ``<stem>``: three panels — median ρ against p/(dn) (seeds: dots succeed, × spurious
    interpolants, open circles unfinished descents), P(ρ < 0.1) against p/(dn) with the fitted
    p*_data and its 95 % profile-likelihood interval (a square: a step, width not identified),
    train residual against p/n.
    ``<stem>_collapse``: the data collapse — median ρ of every (d, n) against p/(dn) (left, the
    curves fall on one another if the threshold scales as dn) and against p/n (right, where they
    spread by the range of d). For a compared activation, ``<stem>_<name>`` and
    ``<stem>_<name>_collapse`` in the sign-invariant ρ. Log axes.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or read back from its JSON).
    stem : str or Path
        Path of the figures without suffix.

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    from rftheory.plotting import paper_style

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    variant = result["success_variant"]
    panels = [(result["activation"], result["per_grid"], variant, stem, result["seeds"])]
    for name, other in result.get("by_activation", {}).items():
        safe = "".join(ch if ch.isalnum() else "_" for ch in name)
        panels.append((name, other["per_grid"], "sign_invariant",
                       stem.with_name(f"{stem.name}_{safe}"), other.get("seeds", result["seeds"])))
    written: list[Path] = []
    with paper_style():
        for name, per_grid, v, base, seeds in panels:
            cells = [c for c in result["cells"] if c["activation"] == name]
            written += _plot_thresholds(result, name, per_grid, cells, v, base, seeds)
            written += _plot_collapse(result, name, per_grid, v,
                                      base.with_name(base.name + "_collapse"), seeds)
    return written


def _plain_ticks(axis: Any) -> None:
    """Log-axis ticks written 0.1, 1, 10 (not 10⁻¹, 10⁰, 10¹): p/(dn) and p/n read as ratios."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def _rho_label(variant: str) -> str:
    return {"abs": r"$\rho$ (official)", "signed": r"$\rho$ (signed)",
            "sign_invariant": r"$\rho$ (up to sign)"}[variant]


def _plot_thresholds(result: dict[str, Any], name: str, per_grid: list[dict[str, Any]],
                     cells: list[dict[str, Any]], variant: str, stem: Path,
                     seeds: int) -> list[Path]:
    from rftheory.plotting import SYMBOLS, paper_figure

    fig, (ax_rho, ax_succ, ax_res) = paper_figure(2, ncols=3, aspect=1.0)
    styles = _styles(per_grid)
    floor = 1e-17  # exact zeros of the residual on log axes
    for g in per_grid:
        st = styles[(g["d"], g["n"])]
        mine = [c for c in cells if c["d"] == g["d"] and c["n"] == g["n"]]
        rec = [c for c in mine if c["kind"] == "reconstruction"]
        # seeds by kind: dots succeed, × spurious interpolants (a second zero), ○ unfinished
        for kind, marker, face in (("success", "o", st["color"]), ("spurious", "x", st["color"]),
                                   ("unfinished", "o", "none")):
            mine_k = [c for c in rec if run_kind(c, variant, rho_success=RHO_SUCCESS) == kind]
            ax_rho.scatter([c["p_over_dn"] for c in mine_k],
                           [max(c[f"rho_{variant}"], _RHO_FLOOR) for c in mine_k],
                           s=3 if kind == "success" else 9, alpha=0.25 if kind == "success" else 0.6,
                           marker=marker, facecolors=face if marker == "o" else None,
                           edgecolors=st["color"] if marker == "o" else None,
                           color=st["color"] if marker == "x" else None, lw=0.6)
        ax_rho.plot(*_median_rho(g, variant, "p_over_dn"), **st)
        th = g["data"][variant]
        ax_succ.plot([r["p_over_dn"] for r in g["rows"]], th["success_probability"], **st)
        if th["located"]:
            lo, hi = th["interval_over_dn"]
            centre = th["p_star_over_dn"]
            span = ax_succ.get_xlim()
            lo = lo if math.isfinite(lo) else min(span[0], centre)
            hi = hi if math.isfinite(hi) else max(span[1], centre)
            ax_succ.errorbar([centre], [0.5], xerr=[[centre - lo], [hi - centre]],
                             fmt="o" if th["status"] == "ok" else "s", ms=2.5,
                             color=st["color"], elinewidth=0.8, capsize=1.5)
        med: dict[int, list[float]] = {}
        for c in mine:
            med.setdefault(c["p"], []).append(max(c["train_residual"], floor))
        ps = sorted(med)
        ax_res.plot([p / g["n"] for p in ps], [float(np.median(med[p])) for p in ps], **st)
    for ax in (ax_rho, ax_succ):
        ax.set_xscale("log")
        ax.axvline(1.0, color="0.6", lw=0.6, ls=":")
        ax.set_xlabel(SYMBOLS["p_over_dn"])
    ax_rho.set_yscale("log")
    ax_rho.axhline(result["rho_success"], color="k", lw=0.6, ls="--")
    ax_rho.set_ylabel(_rho_label(variant))
    ax_rho.set_title("median; seeds: · success, × spurious, ○ unfinished")
    ax_succ.axhline(0.5, color="k", lw=0.6, ls="--")
    ax_succ.set_ylim(-0.03, 1.03)
    ax_succ.set_ylabel(rf"$P(\rho < {result['rho_success']:g})$")
    ax_succ.set_title(r"bar: fitted $p^*_{\rm data}$, 95% profile (■: step)")
    ax_res.set_xscale("log")
    ax_res.set_yscale("log")
    ax_res.axvline(1.0, color="0.6", lw=0.6, ls=":")
    ax_res.axhline(result["label_tol"], color="k", lw=0.6, ls="--")
    ax_res.set_xlabel(SYMBOLS["p_over_n"])
    ax_res.set_ylabel(SYMBOLS["train_residual"])
    ax_res.set_title("label fitting (median)")
    _legend(ax_rho, per_grid, loc="lower left", fontsize=6, ncol=2 if len(per_grid) > 4 else 1)
    for ax in (ax_rho, ax_succ, ax_res):
        _plain_ticks(ax.xaxis)
    fig.suptitle(f"Law of data reconstruction, φ = {name}, {seeds} seeds, "
                 f"budget {result['max_steps']} steps")
    return save_figure(fig, stem)


def _plot_collapse(result: dict[str, Any], name: str, per_grid: list[dict[str, Any]],
                   variant: str, stem: Path, seeds: int) -> list[Path]:
    from rftheory.plotting import SYMBOLS, paper_figure

    fig, (ax_dn, ax_n) = paper_figure(2, ncols=2, aspect=0.75, sharey=True)
    styles = _styles(per_grid)
    for g in per_grid:
        ax_dn.plot(*_median_rho(g, variant, "p_over_dn"), **styles[(g["d"], g["n"])])
        ax_n.plot(*_median_rho(g, variant, "p_over_n"), **styles[(g["d"], g["n"])])
    for ax, x in ((ax_dn, "p_over_dn"), (ax_n, "p_over_n")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(result["rho_success"], color="k", lw=0.6, ls="--")
        ax.set_xlabel(SYMBOLS[x])
    ax_dn.axvline(1.0, color="0.6", lw=0.6, ls=":")
    ax_dn.set_ylabel(_rho_label(variant) + ", median over seeds")
    ax_dn.set_title(r"against $p/(dn)$: one curve if $p^*_{\rm data} \propto dn$")
    ax_n.set_title(r"against $p/n$: the same runs spread by $d$")
    _legend(ax_dn, per_grid, loc="lower left", fontsize=6, ncol=2 if len(per_grid) > 4 else 1)
    for ax in (ax_dn, ax_n):
        _plain_ticks(ax.xaxis)
    fig.suptitle(f"Data collapse, φ = {name}, {seeds} seeds")
    return save_figure(fig, stem)


def main(argv: list[str] | None = None) -> int:
    """``python -m rftheory.claims.law [--quick | --large] [--from-export FILE ...] [--out DIR]``.

    ``--from-export FILE ...`` recomputes the full run's tables, fits and figures from the
    exports of its sweep stores (``rftheory sweep export``) without running a cell.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status, 0.
    """
    import argparse
    import sys

    from rftheory.output import write_json_atomic

    parser = argparse.ArgumentParser(prog="python -m rftheory.claims.law")
    parser.add_argument("--from-export", metavar="FILE", nargs="+",
                        help="analyse the cells of sweep exports (.jsonl.gz, one per store) of "
                             "the --large grid (or of the part of its (d, n) they hold)")
    parser.add_argument("--out", default="results", help="directory for JSON and figures")
    args, rest = parser.parse_known_args(argv)
    if args.from_export is None:
        return main_for(CLAIM, rest + ["--out", args.out])
    from rftheory.claims._common import environment

    result = result_from_export(args.from_export)
    out = Path(args.out)
    result["figures"] = [str(p) for p in plot(result, out / CLAIM)]
    result["environment"] = environment()
    write_json_atomic(out / f"{CLAIM}.json", result)
    print(summary(result))
    print(f"results: {out / (CLAIM + '.json')}; figures: {', '.join(result['figures'])}",
          file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
