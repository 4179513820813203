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
p ≥ n is one :func:`rftheory.cells.reconstruction_cell` (labels fit, reconstruction, all
three ρ), every point with p < n a label-fitting cell (:func:`rftheory.cells.label_fit_cell`;
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

The default and quick runs use a **sequential design** (:attr:`Config.resolution`): after a
first pass over the ratios with two seeds, rounds of further runs are spent only where they
narrow p*_data's interval — one more seed at each p whose fitted success probability is
uncertain, or a new p that bisects the bracket of the threshold
(:func:`rftheory.thresholds.followup_points`) — until every (d, n)'s interval is at most
2·``resolution``·dn wide (the default), or reaches at most ±``resolution``·dn on each side (the
quick run, whose baseline bands need it; :attr:`Config.criterion`), or a cap of added runs is
hit. Its intervals are the profile
likelihood's at :data:`rftheory.thresholds.SEQUENTIAL_PROFILE_LEVEL` (0.98), which cover the
threshold ~95 % of the time after the design's stopping rule (the 0.95 profile interval covered
89–91 %: a rule that stops when the interval looks narrow picks lucky samples). Deterministic
given the base seed: every added run takes a fresh seed index, one used at no other p of its
(d, n) — a seed's runs at neighbouring p share data, labels, nested V and start, so a reused
seed would repeat nearly the same problem.

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

Run: ``python -m rftheory.claims.law [--quick]``, ``rftheory verify law`` or ``rftheory demo``;
``python -m rftheory.claims.law --from-export FILE ... [--partial | --steps-curve D]`` redraws the
large grid from sweep exports (``--partial``: of stores still being filled; ``--steps-curve``:
the success fraction at 1.25·dn and 1.5·dn against the step budget at dimension D).

The claim's pieces: this module (configuration, run, analysis, verdict), its sweep driver
(:mod:`rftheory.claims._law_sweep`), figures (:mod:`rftheory.claims._law_figures`) and tables
(:mod:`rftheory.claims._law_tables`); the statistics are the library's (:mod:`rftheory.thresholds`).
Memory: the run keeps every cell's dict (a few kB each, ~100–1000 cells); one reconstruction
at a time per worker (:func:`rftheory.cells.law_cell`).

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
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from rftheory.deadline import Deadline
from rftheory.claims._common import (ClaimConfig, check_activations, default_workers, main_for,
                                     source_digests)
from rftheory.claims._law_figures import plot  # noqa: F401 - the claim's figures (protocol)
from rftheory.claims._law_sweep import (cells_from_export, cells_from_store, follow_up,  # noqa: F401
                                        run_point, run_points, sweep_cells)
from rftheory.claims._law_tables import finite, kind_totals, kinds, steps_table, summary  # noqa: F401
from rftheory import metrics as _metrics
from rftheory.errors import RFTheoryError
# the library's sweep grid, label threshold and crossing rule (once here: kept importable from the claim)
from rftheory.thresholds import crossing, label_threshold, p_values  # noqa: F401
from rftheory.thresholds import CRITERIA, SEQUENTIAL_PROFILE_LEVEL, meets_target

# The claim's API, those of its private modules included (the docs list __all__).
__all__ = ["CLAIM", "RHO_SUCCESS", "LABEL_TOL", "LAW_EXPONENT", "REJECTED_EXPONENT", "LEVEL",
           "profile_level", "VARIANTS", "DESIGN_VARIANTS", "TRANSITION_RATIOS", "FULL", "QUICK",
           "LARGE",
           "LARGE_EXPORTED", "SWEEP_DIR", "Config", "run", "analyse", "summary", "plot", "main",
           "run_point", "data_threshold", "pooled_threshold", "scaling_fit", "collapse_in_dn",
           "success_against_steps", "sweep_dir", "sweep_document", "cells_from_store",
           "cells_from_export", "result_from_export"]

CLAIM = "law"

#: ρ below this counts as a successful reconstruction. Measured (default run): runs that fail sit
#: at ρ_abs ≈ 0.17–0.65, successful ones at 1e-5–1e-3; only budget-limited runs next to the
#: threshold fall in between (0.02–0.25), so the choice moves p*_data by at most a grid step.
RHO_SUCCESS = _metrics.RHO_SUCCESS
#: Train residual ‖Φθ* − Y‖/‖Y‖ below this counts as "labels fit". Measured (default run):
#: 1e-16–5e-11 for p ≥ n (largest at p = n, where ΦΦᵀ is worst conditioned), ≥ 2e-2 for p < n,
#: so the threshold does not depend on this choice over many decades.
LABEL_TOL = 1e-6
#: (iv) of the verdict: the law's exponents of d and n (p* ∝ dn), which each exponent's interval
#: must contain, and the alternative each interval must exclude (halfway to p* ∝ n or ∝ d).
LAW_EXPONENT = 1.0
REJECTED_EXPONENT = 0.5
#: Confidence level of every interval of the claim (thresholds and exponents). A sequential
#: design's thresholds reach it with the profile level :func:`profile_level` gives.
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
    resolution : float, optional
        The sequential design's target (in memory only, ``activation`` only): after the first
        pass (every ratio, ``seeds`` seeds), rounds of further runs
        (:func:`rftheory.thresholds.followup_points`, one run at each p where the fitted success
        probability is uncertain, or a new p that bisects the bracket of the threshold) are
        added for each (d, n) until the interval of p*_data (:func:`profile_level`) meets the
        target of ``criterion`` — at most 2·``resolution``·dn wide, or at most
        ``resolution``·dn on either side of p* (official and sign-invariant ρ) — or until
        ``max_added`` runs were added to that (d, n). None: the fixed grid only (what a sweep
        needs). Default 0.049 (:data:`FULL`): intervals narrower than 0.1·dn; with
        ``criterion="sides"`` (:data:`QUICK`) also the baseline's band (2.03× the wider side)
        within ±0.1·dn.
    max_added : int
        The cap on the runs the sequential design adds to one (d, n) (default 100).
    criterion : {"width", "sides"}
        What ``resolution`` targets (:func:`rftheory.thresholds.resolved`): each interval at most
        2·``resolution``·dn wide (default: the issue's "intervals narrower than 0.1·dn"), or
        each side of it within ``resolution``·dn (what the baseline's bands need, :data:`QUICK`).
        Profile intervals are skewed, so ``"width"`` stops sooner.
    """

    grid: tuple[tuple[int, int], ...] = ((3, 3), (12, 3), (12, 12))
    ratios: tuple[float, ...] = (0.9, 1.0, 1.05, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5, 2.0)
    seeds: int = 2
    max_steps: int = 3000
    activation: str = "relu+tanh"
    success_variant: str = "abs"
    compare: tuple[str, ...] = ()
    compare_seeds: int | None = None
    compare_grid: tuple[tuple[int, int], ...] | None = None
    sweep: bool = False
    resolution: float | None = 0.049
    max_added: int = 100
    criterion: str = "width"

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
        if self.resolution is not None:
            try:
                resolution = float(self.resolution)
            except (TypeError, ValueError):
                resolution = math.nan
            if not (resolution > 0 and math.isfinite(resolution)) or self.sweep:
                raise RFTheoryError(f"resolution must be a positive number (and the run in "
                                    f"memory, not sweep-backed), got {self.resolution!r}")
            self._set("resolution", resolution)
        if isinstance(self.max_added, bool) or not isinstance(self.max_added, int) \
                or self.max_added < 0:
            raise RFTheoryError(f"max_added must be an integer >= 0, got {self.max_added!r}")
        if not isinstance(self.criterion, str) or self.criterion not in CRITERIA:
            raise RFTheoryError(f"criterion must be one of {', '.join(CRITERIA)}, "
                                f"got {self.criterion!r}")
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
    success = np.asarray(success, dtype=bool)
    grid = np.broadcast_to(np.asarray(p, dtype=np.float64), success.shape)
    out = _fitted(grid.ravel(), success.ravel(), level)
    out["success_probability"] = success.mean(axis=0).tolist()
    return out


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
#: (3, 3) vs (12, 3) varies d by 4× at fixed n, (12, 3) vs (12, 12) varies n by 4× at fixed d (so
#: p* ∝ n, ∝ d and ∝ dn give exponents 0 or 1 far apart); first pass p/(dn) in
#: :data:`TRANSITION_RATIOS` with 2 seeds, then the sequential design (``resolution`` 0.049,
#: ``criterion`` "width": each interval, at the profile level of :func:`profile_level`, at most
#: 0.098·dn wide, i.e. narrower than 0.1·dn — the target on each side, ±0.049·dn, spent more
#: runs on the skewed intervals for nothing the default reports; at most 100 added runs per
#: (d, n): with independent added runs (fresh seeds) the
#: (12, 3) curve is wide, σ ≈ 0.06–0.12 in log p, and needed 84 and 97 added runs on base seeds
#: 0 and 3 — paper_notes/law.md).
#: Why these cells (measured, paper_notes/law.md): the attack's transition is sharp where n ≤ d
#: and d ≤ 12 — (16, 3), (4, 12), (3, 12) and (8, 8) have unfinished descents over 1.0–1.4·dn at
#: the 3000-step budget, a curve so wide that ±0.045·dn needs ~100 runs of ~1.4 s each — and
#: the failing runs, which spend the whole budget, are the cost.
FULL = Config()
assert FULL.ratios == TRANSITION_RATIOS  # the default's first pass is the transition grid
#: ``--quick``: the same cells, the target on each side (``criterion="sides"``, so that the
#: baseline's bands, 2.03× the intervals' wider side, stay under ±0.1·dn), a coarser first pass
#: (p/(dn) in 0.9, 1, 1.1, 1.2, 1.3, 1.5, 2) and a higher cap (100): the baseline needs every
#: threshold resolved; measured, (12, 3) ended at ±0.047·dn after 60 added runs.
QUICK = Config(grid=((3, 3), (12, 3), (12, 12)), ratios=(0.9, 1.0, 1.1, 1.2, 1.3, 1.5, 2.0),
               seeds=2, max_steps=3000, resolution=0.049, max_added=100, criterion="sides")
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
              compare_grid=tuple((d, n) for d in (10, 20, 40, 80) for n in (4, 8)), sweep=True,
              resolution=None)
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

    Cell kind ``law`` (:func:`rftheory.cells.law_cell`); axes activation, d, n, p (the
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
        documents = [(a, sweep_document(config, a), Path(out_dir) / sweep_dir(config, a))
                     for a in config.activations]
        cells, _ = sweep_cells(documents, workers, progress, deadline)
    else:
        tasks = [{"activation": a, "d": d, "n": n, "p": p, "seed": config.seed + s,
                  "seed_index": s, "max_steps": config.max_steps}
                 for a in config.activations for d, n in config.grid_of(a)
                 for p in p_values(d, n, config.ratios) for s in range(config.seeds_of(a))]
        if workers > 1:  # the workers fork from here: import the cells' code once, not per round
            import rftheory.pipeline  # noqa: F401
        cells = run_points(tasks, workers, progress, deadline)
        if config.resolution is not None:
            cells += follow_up(cells, config, rho_success=RHO_SUCCESS,
                               level=profile_level(config),
                               variants=DESIGN_VARIANTS, workers=workers, progress=progress,
                               deadline=deadline)
    result = analyse(cells, config)
    result.update(workers=workers, sweep_seconds=time.perf_counter() - start, sources=sources)
    return result


#: The ρ variants whose thresholds the sequential design resolves: the official one and the
#: sign-invariant one (both are held by the baseline).
DESIGN_VARIANTS = ("abs", "sign_invariant")


def analyse(cells: Sequence[dict[str, Any]], config: Config, *,
            partial: bool = False) -> dict[str, Any]:
    """The claim's result from its cells (in memory, from a sweep store or from an export).

    Every cell of ``config``'s grid must be there and have succeeded (a missing or failed cell
    raises :class:`RFTheoryError`: resume the run first), unless ``partial``. Cells outside the
    grid are ignored (but for the sequential design's runs, :attr:`Config.resolution`). Every
    fit is deterministic, so the same cells give the same result.

    Parameters
    ----------
    cells : sequence of dict
        Cells as :func:`run_point` returns them (or :func:`cells_from_store` reads them).
    config : Config
        The configuration whose grid the cells cover.
    partial : bool
        Analyse what is there (e.g. the export of a sweep store still being filled): every
        statistic is over the runs present, a (d, n) without a reconstruction is left out, the
        result's ``missing`` says how many cells of each (d, n) are not there, and the verdict is
        never SUPPORTED (``supported`` False, ``complete`` False). Default False.

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
        elif (config.resolution is not None and "error" not in cell
              and cell["activation"] == config.activation
              and (cell["d"], cell["n"]) in config.grid and cell["p"] >= cell["n"]
              and cell["seed"] >= seed):
            by_key[key] = cell  # a run of the sequential design
    absent = sorted(k for k in wanted if k not in by_key)
    missing = len(absent)
    if missing and not partial:
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
    extra: dict[str, Any] = {}
    if partial:
        counts: dict[str, int] = {}
        for a, d, n, _, _ in absent:
            counts[f"{a} d={d} n={n}"] = counts.get(f"{a} d={d} n={n}", 0) + 1
        extra = {"complete": not missing,
                 "missing": {"cells": missing, "of": len(wanted), "failed": len(failed),
                             "by_grid": counts}}
        if missing:  # no verdict from part of a grid
            for entry in by_activation.values():
                entry["verdict"]["supported"] = False
    return extra | {
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
        "sweep": config.sweep, "resolution": config.resolution, "max_added": config.max_added,
        "criterion": config.criterion,
        "rho_success": RHO_SUCCESS, "label_tol": LABEL_TOL,
        "success_variant": config.success_variant, "level": LEVEL,
        "profile_level": profile_level(config),
        "law_exponent": LAW_EXPONENT, "rejected_exponent": REJECTED_EXPONENT,
        "per_grid": primary["per_grid"], "pooled": primary["pooled"],
        "failure_kinds": {v: kind_totals(primary["per_grid"], v) for v in VARIANTS},
        "fits": primary["fits"], "verdict": primary["verdict"],
        "by_activation": {k: v for k, v in by_activation.items() if k != config.activation},
        # the code versions that stored the cells (cells from a sweep store or an export)
        "code_versions": sorted({c["code_version"] for c in kept if "code_version" in c}),
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
    """Thresholds per (d, n) of one activation's cells (see the module docstring). The
    sequential design's runs make the seeds per p uneven: every statistic is over the runs at
    that p, and each row says how many there are."""
    seeds, per_grid = config.seeds_of(activation), []
    for d, n in config.grid_of(activation):
        here = [c for c in mine if c["d"] == d and c["n"] == n]
        ps_all = sorted({c["p"] for c in here})
        recs = [c for c in here if c["kind"] == "reconstruction"]
        if not recs:  # only in a partial analysis: nothing to fit at this (d, n)
            continue
        ps_rec = sorted({c["p"] for c in recs})
        # the label threshold from the first pass (its p, its seeds: a full table)
        first_ps = set(_grid_ps(config, d, n))
        ps_label = sorted({c["p"] for c in here if c["seed_index"] < seeds and c["p"] in first_ps})
        residual = np.full((seeds, len(ps_label)), np.nan)
        for c in here:
            if c["seed_index"] < seeds and c["p"] in ps_label:
                residual[c["seed_index"], ps_label.index(c["p"])] = c["train_residual"]
        label = label_threshold(ps_label, residual)
        at = {p: [c for c in recs if c["p"] == p] for p in ps_rec}

        def values(p: int, key: str) -> np.ndarray:
            return np.array([c[key] for c in at[p]], dtype=np.float64)

        rows = [{"p": p, "p_over_dn": p / (d * n), "p_over_n": p / n, "runs": len(at[p]),
                 **{f"median_rho_{v}": float(np.median(values(p, f"rho_{v}"))) for v in VARIANTS},
                 **{f"success_{v}": float(np.mean(values(p, f"rho_{v}") < RHO_SUCCESS))
                    for v in VARIANTS},
                 **{f"kinds_{v}": kinds(at[p], v, RHO_SUCCESS) for v in VARIANTS},
                 "median_final_loss": float(np.median(values(p, "final_loss"))),
                 "median_steps": float(np.median(values(p, "steps")))}
                for p in ps_rec]
        thresholds = {}
        for v in VARIANTS:
            th = _fitted([c["p"] for c in recs], [c[f"rho_{v}"] < RHO_SUCCESS for c in recs],
                         profile_level(config) if activation == config.activation else LEVEL)
            th["success_probability"] = [row[f"success_{v}"] for row in rows]
            th["p_star_over_dn"] = th["p_star"] / (d * n)
            th["p_star_over_n"] = th["p_star"] / n
            th["interval_over_dn"] = [x / (d * n) for x in th["interval"]]
            th["gap_over_dn"] = [x / (d * n) for x in th["gap"]]
            th["crossing_over_dn"] = th["crossing"] / (d * n)
            thresholds[v] = th
        first = sum(c["seed_index"] < seeds and c["p"] in first_ps for c in recs)
        design = [(th["p_star_over_dn"] - th["interval_over_dn"][0],
                   th["interval_over_dn"][1] - th["p_star_over_dn"])
                  for v, th in thresholds.items() if v in DESIGN_VARIANTS]  # (below, above)
        per_grid.append({
            "d": d, "n": n, "dn": d * n, "p_grid": ps_all, "p_reconstruction": ps_rec,
            "label": label | {"p_star_over_n": label["p_star"] / n},
            "data": thresholds, "rows": rows,
            "design": {"runs": len(recs), "added": len(recs) - first,
                       "rounds": max((c.get("design_round", 0) for c in recs), default=0),
                       "largest_side_over_dn": max((max(s) for s in design),
                                                   default=math.nan),
                       "widest_interval_over_dn": max((sum(s) for s in design),
                                                      default=math.nan),
                       "resolved": (all(meets_target(*s, config.resolution,
                                                     criterion=config.criterion)
                                        for s in design)
                                    if config.resolution is not None else None)},
            "seconds": float(sum(c["seconds"] for c in here)),
        })
    return per_grid


def profile_level(config: Config) -> float:
    """The profile-likelihood level of the per-(d, n) thresholds' intervals: :data:`LEVEL` for a
    fixed grid, :data:`rftheory.thresholds.SEQUENTIAL_PROFILE_LEVEL` for a sequential design
    (``config.resolution`` set), whose stopping rule costs the nominal level's interval its
    coverage.

    Parameters
    ----------
    config : Config
        The run's configuration.

    Returns
    -------
    float
        The level passed to :func:`rftheory.thresholds.fit_threshold`.

    Examples
    --------
    >>> profile_level(FULL), profile_level(LARGE)
    (0.98, 0.95)
    """
    return LEVEL if config.resolution is None else SEQUENTIAL_PROFILE_LEVEL


def _fitted(p: Sequence[int], success: Sequence[bool], level: float = LEVEL) -> dict[str, Any]:
    """:func:`rftheory.thresholds.fit_threshold` of the runs, as :func:`data_threshold` returns
    it (without ``success_probability``)."""
    from rftheory.thresholds import fit_threshold

    fit = fit_threshold(p, success, level=level)
    return fit.as_dict() | {"p_star": fit.location, "located": fit.located}


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
                       config: Config | None = None, *, partial: bool = False) -> dict[str, Any]:
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
    partial : bool
        The exports of stores still being filled: analyse the cells there are against
        ``config`` (default :data:`LARGE`, the whole grid) and say which are missing
        (:func:`analyse`'s ``partial``). Default False.

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
    if partial:
        config = LARGE if config is None else config
        present = {c.get("activation") for c in cells}
        if config.compare and not present & set(config.compare):  # one activation's store
            config = config.replace(compare=(), compare_grid=None, compare_seeds=None)
        result = analyse(cells, config, partial=True)
        result["from_export"] = shown
        return result
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


def success_against_steps(cells: Sequence[dict[str, Any]], d: int,
                          ratios: Sequence[float] = (1.25, 1.5), variant: str = "abs",
                          budgets: Sequence[int] | None = None) -> dict[str, Any]:
    """How the success fraction at fixed p/(dn) grows with the step budget, from the runs' own
    step counts (no run is repeated).

    A run that succeeded after s steps would have succeeded under any budget B ≥ s and failed
    under B < s; a run that failed (at its budget, or at the tolerance with ρ large) fails under
    every budget up to its own. So the fraction of the runs at one p/(dn) that succeeded within
    B steps is the success fraction a sweep with budget B would have measured — for B up to the
    budget the runs had (their ``max_steps``): the budget only stops the optimiser, it does not
    steer it (:mod:`rftheory.reconstruct`, :mod:`rftheory.varpro`).

    Parameters
    ----------
    cells : sequence of dict
        Reconstruction cells (e.g. :func:`cells_from_export` of the large grid).
    d : int
        The input dimension whose runs are read (every n of the cells).
    ratios : sequence of float
        The values of p/(dn) (matched to 1e-9 relative; default 1.25 and 1.5).
    variant : str
        The ρ that decides success (default the official one).
    budgets : sequence of int, optional
        Budgets at which to read the fraction (default 30 points log-spaced from 10 to the
        runs' budget).

    Returns
    -------
    dict
        ``d``, ``budget`` (the runs' largest step budget), ``budgets``, and per ratio
        (``"<r>"``): ``runs``, ``ns`` (the n that contribute), ``success`` (the fraction within
        each budget), ``successes`` (count at the runs' own budget), ``steps_of_successes``
        (sorted) and ``unfinished`` (failed runs stopped by the budget).

    Raises
    ------
    rftheory.errors.RFTheoryError
        If no reconstruction of dimension ``d`` is at one of the ratios.

    Examples
    --------
    >>> cells = [{"kind": "reconstruction", "d": 2, "n": 5, "p": 15, "rho_abs": r, "steps": s,
    ...           "stop_reason": why, "max_steps": 100}
    ...          for r, s, why in ((1e-6, 20, "tolerance"), (1e-6, 60, "tolerance"),
    ...                            (0.4, 100, "budget"))]
    >>> out = success_against_steps(cells, 2, ratios=(1.5,), budgets=(10, 50, 100))
    >>> out["1.5"]["success"], out["1.5"]["unfinished"]
    ([0.0, 0.3333333333333333, 0.6666666666666666], 1)
    """
    recs = [c for c in cells if c.get("kind") == "reconstruction" and c.get("d") == d
            and "error" not in c]
    budget = max((int(c.get("max_steps") or c["steps"]) for c in recs), default=0)
    if budgets is None:
        budgets = sorted({int(round(b)) for b in np.geomspace(10, max(budget, 10), 30)})
    budgets = [int(b) for b in budgets]
    out: dict[str, Any] = {"d": d, "variant": variant, "budget": budget, "budgets": budgets}
    for r in ratios:
        mine = [c for c in recs if abs(c["p"] / (c["d"] * c["n"]) - r) <= 1e-9 * r]
        if not mine:
            raise RFTheoryError(f"no reconstruction at d = {d}, p/(dn) = {r:g} among the cells")
        ok = [c for c in mine if c[f"rho_{variant}"] < RHO_SUCCESS]
        steps = sorted(int(c["steps"]) for c in ok)
        out[f"{r:g}"] = {
            "runs": len(mine), "ns": sorted({c["n"] for c in mine}),
            "success": [sum(s <= b for s in steps) / len(mine) for b in budgets],
            "successes": len(ok), "steps_of_successes": steps,
            "unfinished": sum(c[f"rho_{variant}"] >= RHO_SUCCESS and c.get("stop_reason") == "budget"
                              for c in mine)}
    return out


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
        return (finite(lo) and finite(hi) and lo <= LAW_EXPONENT <= hi
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
        The exit status: 0, or 2 after a one-line error for bad input (an unreadable export,
        cells that do not hold what was asked).
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m rftheory.claims.law")
    parser.add_argument("--from-export", metavar="FILE", nargs="+",
                        help="analyse the cells of sweep exports (.jsonl.gz, one per store) of "
                             "the --large grid (or of the part of its (d, n) they hold)")
    parser.add_argument("--partial", action="store_true",
                        help="with --from-export: exports of stores still being filled; analyse "
                             "the cells there are against the whole --large grid and say which "
                             "are missing (never a verdict)")
    parser.add_argument("--steps-curve", type=int, metavar="D", default=None,
                        help="with --from-export: instead of the law, the success fraction at "
                             "--steps-ratios against the step budget for input dimension D, "
                             "from the runs' step counts (law_steps_d<D>.json and the figure)")
    parser.add_argument("--steps-ratios", default="1.25,1.5", metavar="R1,R2,...",
                        help="the p/(dn) of --steps-curve, comma-separated (default 1.25,1.5, "
                             "the exported earlier grid's; today's grid has 1.2, 1.3, 1.4, 1.5)")
    parser.add_argument("--out", default="results", help="directory for JSON and figures")
    args, rest = parser.parse_known_args(argv)
    if args.from_export is None:
        return main_for(CLAIM, rest + ["--out", args.out])
    try:
        return _from_export(args)
    except (RFTheoryError, OSError) as exc:  # bad input: one line, the CLI's usage status
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


def _from_export(args: Any) -> int:
    """``main``'s ``--from-export`` paths (``args``: its parsed options)."""
    from rftheory.claims._common import environment
    from rftheory.output import write_json_atomic

    out = Path(args.out)
    if args.steps_curve is not None:
        from rftheory.claims._law_figures import plot_steps

        try:
            ratios = tuple(float(r) for r in args.steps_ratios.split(","))
        except ValueError:
            ratios = ()
        if not ratios or not all(math.isfinite(r) and r > 0 for r in ratios):
            raise RFTheoryError(f"--steps-ratios must be positive numbers separated by commas, "
                                f"got {args.steps_ratios!r}")
        curve = success_against_steps([c for p in args.from_export for c in cells_from_export(p)],
                                      args.steps_curve, ratios=ratios)
        stem = out / f"{CLAIM}_steps_d{args.steps_curve}"
        curve["figures"] = [str(p) for p in plot_steps(curve, stem)]
        curve["from_export"] = ", ".join(args.from_export)
        write_json_atomic(stem.with_suffix(".json"), curve)
        print(steps_table(curve))
        print(f"results: {stem.with_suffix('.json')}; figures: {', '.join(curve['figures'])}")
        return 0
    result = result_from_export(args.from_export, partial=args.partial)
    result["figures"] = [str(p) for p in plot(result, out / CLAIM)]
    result["environment"] = environment()
    write_json_atomic(out / f"{CLAIM}.json", result)
    print(summary(result))
    print(f"results: {out / (CLAIM + '.json')}; figures: {', '.join(result['figures'])}",
          file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
