"""Claim (Theorem 2): no "duplicate" reconstructions — the paper's n = 2, and n ≥ 3 (issue #16).

Theorem 1 alone allows several candidates of a zero-loss reconstruction to sit near the *same*
training point (a duplicate, or *collision*), leaving other training points unrecovered. For
n = n̂ = 2 the paper proves (Theorem 2) that the projection loss
L(X̂) = ‖P⊥_{Φ̂}θ*‖²/‖θ*‖² stays bounded away from 0 on the duplicate region

    D(δ) = {(x̂₁, x̂₂) on the √d-sphere : ‖x̂_j − x₁‖ ≤ δ√d, j = 1, 2},

whereas the true configuration has loss 0. It stops at n = 2 ("combinatorial explosion"). This
check measures both, on :mod:`rftheory.collisions` (patterns, δ → 0 limits, region minima):

*n = 2, the paper's claim* (:func:`duplicate_curves`; d = :attr:`Config.d`). For several
activations and p/(dn): min over D(δ) of L by multi-start L-BFGS-B on geodesic cap coordinates
for a grid of δ (every value the loss of a feasible pair: an *upper bound* on the minimum; the
starts include the limit pair and the previous δ's minimiser, the regions being nested), its
δ → 0 limit in closed form,

    L₀ = ‖P⊥_{span{φ(x₁), J B}} θ‖²/‖θ‖²,   J = diag φ′(Vx₁)·V, B a basis of x₁⊥

(:func:`rftheory.collisions.collision_limit` of the collision (2, 0)), and their agreement at a
small δ below the kink radius (ReLU-type activations). Verdict ``supported``: for relu+tanh the
minimum over every D(δ) stays above :data:`ZERO_LOSS` at every p/(dn) ≥ :data:`LARGE_RATIO`, and
the limit agrees with the small-δ minimum within :data:`LIMIT_RTOL` for every activation.

*General n, beyond the paper* (:func:`collision_cell`; d = :attr:`Config.general_d`). A collision
assigns the n candidates to training points with multiplicities m_i (a type: a partition of n
with a part ≥ 2; ℓ = Σ(m_i − 1) points left out). For every type (n ≤
:attr:`Config.enumerate_up_to_n`; representatives above: 2+1^{n−2}, 2+2+1^{n−4}, 3+1^{n−3},
2^{n/2}, n), its smallest δ → 0 limit over all placements (closed form for pairs, an exact
optimisation over one tangent direction per triple, an upper bound for multiplicity ≥ 4), the
leave-one-out baseline min_j ‖P⊥_{span{φ(x_i): i≠j}}θ‖²/‖θ‖² (what a collision must beat), and, for
some types and p, the minimum over the finite region D_m(δ). The falsifiable verdicts:

* ``pair_thresholds_match_count``: for the smooth activations (relu+tanh, tanh, erf — not
  ReLU, whose collisions follow its activation cells), every type with multiplicities ≤ 2 has
  L₀ ≤ :data:`ZERO_LOSS_LIMIT` exactly at the p ≤ p* = n + ℓ(d − 2) of the grid and above it at
  every p > p* (the dimension count of :func:`rftheory.collisions.zero_threshold`);
* ``triples_never_zero_above_count``: types with a triple (and no higher multiplicity) are never
  0 above p* (smooth activations; at p* itself real zeros may be absent: the conditions are
  quadratic);
* ``limits_positive_from_dn``: every limit of every type with multiplicities ≤ 3, every
  activation, at every p ≥ dn is > :data:`ZERO_LOSS_LIMIT` (for multiplicity ≥ 4 the value is an
  upper bound, reported but not judged);
* ``regions_positive_from_dn``: every region minimum at p ≥ dn (every δ, type, activation) is
  > :data:`ZERO_LOSS_REGION`;
* ``limit_checks_agree``: at p = 2dn the region minimum at a small δ₁ and at δ₁/10 approaches
  the limit: |(L₀ − min)/L₀| ≤ :data:`LIMIT_RTOL` at δ₁/10 and at most a third of its value at
  δ₁ (or ≤ 1e-9: ReLU types without single candidates are exact).

``general_n_supported`` ("no duplicates for n ≥ 3 at p ≳ dn"): the last three.

Run: ``rftheory verify theorem2 [--quick]`` or ``python -m rftheory.claims.theorem2``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from rftheory.deadline import Deadline
from rftheory.claims._common import ClaimConfig, TaskProgress, check_activations, main_for
from rftheory.runtime import default_workers, run_tasks
from rftheory.collisions import (Collision, collision_limit, collision_region_minimum,
                                 collision_types, kink_radius, max_region_radius,
                                 min_collision_limit, zero_threshold)
from rftheory.data import gaussian_labels, sphere_points
from rftheory.errors import RFTheoryError
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.output import format_table, save_figure, sparse_log_ticks
from rftheory.projection import projection_loss

CLAIM = "theorem2"

#: Activations compared (the paper's relu+tanh, two odd smooth ones and ReLU).
DEFAULT_ACTIVATIONS = ("relu+tanh", "tanh", "erf", "relu")
#: Activations whose collisions follow the dimension count (ReLU's follow its activation cells:
#: a left-out point in the cell of a doubled one lies in the first-order span exactly).
SMOOTH = ("relu+tanh", "tanh", "erf")
#: n = 2: a duplicate-region minimum below this counts as "reaches 0". The true configuration
#: has loss ~1e-30 and L-BFGS-B drives reachable zeros to ≲ 1e-12; the smallest non-zero minima
#: measured at p ≥ 2dn are ≥ 5e-2, four orders above.
ZERO_LOSS = 1e-6
#: General n: a δ → 0 limit below this is 0. Closed-form zeros (pairs) are ≲ 1e-24, the triple
#: direction search reaches 1e-15 – 1e-24 at its zeros; the first non-zero values above the
#: counts are ≳ 1e-12 (1.8e-12 at the least in the survey of issue #16, median 1.7e-6).
ZERO_LOSS_LIMIT = 1e-13
#: General n: a region minimum below this is 0 (L-BFGS-B drives reachable zeros below it; the
#: smallest positive minima at p ≥ dn measured ~5e-4).
ZERO_LOSS_REGION = 1e-12
#: Accepted relative gap (L₀ − min_D(δ) L)/L₀ at the small check δ (below the kink radius): the
#: measured gap there is O(δ) ≲ 1e-3; 1e-2 leaves room for an optimiser that stops a little early.
LIMIT_RTOL = 1e-2
#: The small δ of the limit check (capped at half the kink radius for ReLU-type activations).
DELTA_CHECK = 1e-3
#: Smallest δ the limit check will use: below it the candidates' Gram matrix has condition
#: ≳ 1/δ² ≈ 1e10 and the comparison says more about rounding than about the limit.
DELTA_CHECK_MIN = 1e-5
#: Triples: the check uses 10·DELTA_CHECK and a tenth of it, never below this: a collapsed
#: triple's Gram matrix has condition ~(δ√d)⁻⁴, beyond float64 below 1e-3.
DELTA_CHECK_TRIPLE_MIN = 1e-3
#: Ratios p/(dn) counted as "large" for the n = 2 verdict (the theorem's p ≫ dn regime).
LARGE_RATIO = 2.0
_V_STREAM = 0x54484D32  # "THM2": tag of the seed stream of V (n = 2 part)
_V_STREAM_GENERAL = 0x434F4C4C  # "COLL": V of the general-n part (that of the issue #16 survey)


@dataclass(frozen=True)
class Config(ClaimConfig):
    """The Theorem 2 check (see :func:`run`); checked on creation.

    Attributes
    ----------
    d : int
        n = 2 part: input dimension; data ``sphere_points(2, d, seed)``.
    ratios : tuple of float
        n = 2 part: p/(dn) of the models (V nested in p).
    deltas : tuple of float
        n = 2 part: radii δ of the duplicate regions D(δ), 0 < δ < 2.
    random_starts : int
        n = 2 part: random L-BFGS-B starts per (p, δ), besides the warm and limit starts.
    activations : tuple of str
        n = 2 part (empty: skip it).
    ns : tuple of int
        General part: training-set sizes (empty: skip it).
    general_d : int
        General part: input dimension.
    general_activations : tuple of str
    seeds : int
        General part: data/V seeds ``seed, seed + 1, …`` per (activation, n).
    general_ratios : tuple of float
        General part: p/(dn) of the limits; p* − 1 … p* + 2 of every type with multiplicities
        ≤ 3 are added (the count's switch).
    region_ratios : tuple of float
        General part: p/(dn) of the region minima (with p = n + d − 1).
    region_deltas : tuple of float
        General part: δ of the region minima, increasing, each capped at
        :func:`rftheory.collisions.max_region_radius` (regions holding no other ±x_j).
    region_seeds_large_n : int
        General part: region minima for n > ``enumerate_up_to_n`` on this many seeds only (cost).
    region_random_starts, region_maxiter : int
        General part: random starts and L-BFGS-B iterations per region minimum (plus the two
        limit configurations and the previous δ's minimiser).
    direction_starts : int
        Starts of the triple direction search (:func:`rftheory.collisions.collision_limit`;
        its default, 32: 12 missed zeros at p* − 1 that 24 found).
    enumerate_up_to_n : int
        Every collision type for n up to this; five representatives above.
    """

    d: int = 8
    ratios: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    deltas: tuple[float, ...] = (0.005, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5)
    random_starts: int = 5
    activations: tuple[str, ...] = DEFAULT_ACTIVATIONS
    ns: tuple[int, ...] = (2, 3, 4, 8, 16)
    general_d: int = 5
    general_activations: tuple[str, ...] = DEFAULT_ACTIVATIONS
    seeds: int = 3
    general_ratios: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 4.0, 8.0)
    region_ratios: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    region_deltas: tuple[float, ...] = (0.05, 0.15, 0.3)
    region_seeds_large_n: int = 1
    region_random_starts: int = 1
    region_maxiter: int = 600
    direction_starts: int = 32
    enumerate_up_to_n: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("ratios", "deltas", "activations", "ns", "general_activations",
                     "general_ratios", "region_ratios", "region_deltas"):
            self._set(name, tuple(getattr(self, name)))
        if not self.activations and not self.ns:
            raise RFTheoryError("theorem2 check needs activations (n = 2 part) or ns (general)")
        if self.activations and (self.d < 2 or not self.ratios or not self.deltas
                                 or self.random_starts < 0):
            raise RFTheoryError("theorem2 check (n = 2) needs d >= 2, ratios, deltas and "
                                "random_starts >= 0")
        if any(not 0.0 < dl < 2.0 for dl in self.deltas + self.region_deltas):
            raise RFTheoryError(f"deltas must lie in (0, 2), got {self.deltas + self.region_deltas}")
        if list(self.region_deltas) != sorted(self.region_deltas):
            raise RFTheoryError("region_deltas must be in increasing order")
        if self.ns:
            if any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in self.ns):
                raise RFTheoryError(f"ns must be integers >= 2, got {self.ns}")
            if (self.general_d < 3 or not self.general_activations or not self.general_ratios
                    or self.seeds < 1):
                raise RFTheoryError("theorem2 check (general n) needs general_d >= 3, "
                                    "general_activations, general_ratios and seeds >= 1")
        for name in ("region_seeds_large_n", "region_random_starts"):
            if getattr(self, name) < 0:
                raise RFTheoryError(f"{name} must be >= 0")
        for name in ("region_maxiter", "direction_starts", "enumerate_up_to_n"):
            if getattr(self, name) < 1:
                raise RFTheoryError(f"{name} must be >= 1")


FULL = Config()
QUICK = Config(d=6, ratios=(0.5, 2.0, 8.0), deltas=(0.02, 0.1, 0.3), random_starts=1,
               ns=(2, 3, 6), general_d=4, general_activations=("relu+tanh", "tanh"), seeds=1,
               general_ratios=(0.5, 1.0, 2.0, 4.0), region_ratios=(1.0, 2.0),
               region_deltas=(0.1,), region_maxiter=300)


def feature_seed(seed: int) -> int:
    """Seed of V of the n = 2 part (the same for every p: models are nested in p).

    Parameters
    ----------
    seed : int
        The run's base seed.

    Returns
    -------
    int
        A 32-bit seed for :class:`~rftheory.features.RandomFeatures`, from its own stream of
        ``seed`` (:class:`numpy.random.SeedSequence`).
    """
    return int(np.random.SeedSequence([seed, _V_STREAM]).generate_state(1, np.uint32)[0])


def general_feature_seed(seed: int) -> int:
    """Seed of V of the general-n part (nested in p).

    Parameters
    ----------
    seed : int
        The run's base seed.

    Returns
    -------
    int
        A 32-bit seed, from a stream of ``seed`` independent of :func:`feature_seed`'s.
    """
    return int(np.random.SeedSequence([seed, _V_STREAM_GENERAL]).generate_state(1, np.uint32)[0])


# ---------------------------------------------------------------------------------------------
# n = 2: the paper's claim
# ---------------------------------------------------------------------------------------------

#: Both candidates at x₁, none at x₂: the duplicate of Theorem 2.
DUPLICATE = Collision((2, 0))


def duplicate_curves(activation: str, d: int, ratios: Sequence[float], deltas: Sequence[float], *,
                     seed: int = 0, random_starts: int = 4) -> dict[str, Any]:
    """min_D(δ) L against δ and p/(dn), and its δ → 0 limit, for one activation (n = 2).

    Data: ``sphere_points(2, d, seed)``, labels ``gaussian_labels(2, seed)``, V with seed
    :func:`feature_seed`. δ values above half the distance from x₁ to the nearer of ±x₂ are
    skipped (the region would no longer be a pure duplicate region for odd activations, whose
    features cannot tell x₂ from −x₂). Each p's row holds L₀ (``limit_loss``), the minima per δ
    (``min_loss``, with their pairs, per-start losses and the pairs' separations), and the limit
    check: the minimum over D(δ_check), δ_check = min(:data:`DELTA_CHECK`, kink radius/2),
    started from the limit pair, and (L₀ − min)/L₀.

    Parameters
    ----------
    activation : str
        φ (registry name or expression in ``z``).
    d : int
        Input dimension.
    ratios : sequence of float
        Values of p/(dn); p = max(2, round(ratio·2d)).
    deltas : sequence of float
        Region radii δ (in units of √d).
    seed : int
        Drives the data, the labels, V (:func:`feature_seed`) and the random starts (default 0).
    random_starts : int
        Random starts of each region minimum besides the warm and limit starts (default 4).

    Returns
    -------
    dict
        ``activation``, ``d``, ``n`` (2), ``seed``, ``v_seed``, ``X``, ``separation``,
        ``deltas`` (kept) and ``deltas_skipped``, ``rows`` (one per ratio, described above) and
        ``verdict`` (``bounded_away_at_large_p``, ``smallest_min_at_large_p``,
        ``limit_agrees``).
    """
    n = 2
    X = sphere_points(n, d, seed)
    Y = gaussian_labels(n, seed)
    separation = float(min(np.linalg.norm(X[0] - X[1]), np.linalg.norm(X[0] + X[1])) / math.sqrt(d))
    kept = [float(dl) for dl in sorted(deltas) if dl <= separation / 2]
    skipped = [float(dl) for dl in sorted(deltas) if dl > separation / 2]
    rows = []
    for ratio in ratios:
        p = max(n, int(round(ratio * d * n)))
        t0 = time.perf_counter()
        features = RandomFeatures(activation, d, p, seed=feature_seed(seed), v_cache_bytes=2**26)
        model = train_min_norm(features, X, Y)
        theta = np.asarray(model.theta)
        truth = projection_loss(features, X, theta, gradient=False).loss
        limit = collision_limit(features, X, theta, DUPLICATE)
        radius = kink_radius(features, X[0])
        minima, warm = [], []
        for k, delta in enumerate(kept):
            out = collision_region_minimum(features, X, theta, DUPLICATE, delta,
                                           random_starts=random_starts, seed=seed + k, warm=warm,
                                           limit=limit)
            warm = [out.X_hat]
            minima.append(out)
        delta_check = min(DELTA_CHECK, radius / 2)
        check = None
        if delta_check >= DELTA_CHECK_MIN:
            check = collision_region_minimum(features, X, theta, DUPLICATE, delta_check,
                                             random_starts=1, seed=seed, limit=limit)
        rows.append({
            "ratio": float(ratio), "p": p, "p_over_dn": p / (d * n),
            "train_residual": model.train_residual, "truth_loss": truth,
            "limit_loss": limit.loss, "limit_direction": limit.directions[0]["u"],
            "kink_radius": radius if math.isfinite(radius) else None,
            "deltas": kept,
            "min_loss": [m.loss for m in minima],
            "minimisers": [m.X_hat for m in minima],
            "start_losses": [m.losses for m in minima],
            "iterations": [m.iterations for m in minima],
            "pair_separation": [m.min_separation for m in minima],
            "delta_check": delta_check if check is not None else None,
            "check_loss": None if check is None else check.loss,
            # Relative gap only where L₀ is a genuine positive number (p ≤ d makes it ~1e-30).
            "check_relative_gap": (None if check is None or limit.loss <= ZERO_LOSS else
                                   (limit.loss - check.loss) / limit.loss),
            "seconds": time.perf_counter() - t0,
        })
    large = [r for r in rows if r["ratio"] >= LARGE_RATIO]
    bounded = bool(large) and all(min(r["min_loss"] + [r["limit_loss"]]) > ZERO_LOSS for r in large)
    checks = [r["check_relative_gap"] for r in rows if r["check_relative_gap"] is not None]
    return {
        "activation": activation, "d": d, "n": n, "seed": seed, "v_seed": feature_seed(seed),
        "X": X, "separation": separation, "deltas": kept, "deltas_skipped": skipped,
        "rows": rows,
        "verdict": {
            "bounded_away_at_large_p": bounded,
            "smallest_min_at_large_p": min((min(r["min_loss"] + [r["limit_loss"]]) for r in large),
                                           default=None),
            "limit_agrees": bool(checks) and all(abs(g) <= LIMIT_RTOL for g in checks),
        },
    }


# ---------------------------------------------------------------------------------------------
# General n: every collision pattern
# ---------------------------------------------------------------------------------------------

def _pad(kind: Sequence[int], n: int) -> Collision:
    return Collision(tuple(kind) + (0,) * (n - len(kind)))


def limit_types(n: int, enumerate_up_to_n: int) -> list[tuple[int, ...]]:
    """Collision types whose limits are measured: all for small n, else five representatives
    (one pair, two pairs, one triple, all pairs, all on one point).

    Parameters
    ----------
    n : int
        Number of candidates (and training points).
    enumerate_up_to_n : int
        Up to this n every type is listed (:func:`rftheory.collisions.collision_types`).

    Returns
    -------
    list of tuple of int
        The types, as multiplicities in decreasing order.

    Examples
    --------
    >>> limit_types(6, 4)
    [(2, 1, 1, 1, 1), (2, 2, 1, 1), (3, 1, 1, 1), (2, 2, 2), (6,)]
    """
    if n <= enumerate_up_to_n:
        return collision_types(n)
    reps = [(2,) + (1,) * (n - 2), (2, 2) + (1,) * (n - 4), (3,) + (1,) * (n - 3),
            (2,) * (n // 2) + (1,) * (n % 2), (n,)]
    return list(dict.fromkeys(tuple(t) for t in reps))


def region_types(n: int, enumerate_up_to_n: int) -> list[tuple[int, ...]]:
    """Types whose region minima are measured: all for small n; one pair, all pairs, all on one.

    Parameters
    ----------
    n : int
        Number of candidates.
    enumerate_up_to_n : int
        Up to this n every type is listed.

    Returns
    -------
    list of tuple of int
        The types, as multiplicities.
    """
    if n <= enumerate_up_to_n:
        return collision_types(n)
    return list(dict.fromkeys([(2,) + (1,) * (n - 2), (2,) * (n // 2) + (1,) * (n % 2), (n,)]))


def general_p_values(n: int, d: int, ratios: Sequence[float],
                     types: Sequence[Sequence[int]]) -> list[int]:
    """round(ratio·dn) for every ratio, and p* − 1 … p* + 2 of every type with multiplicities ≤ 3
    (p ≥ n + 1).

    Parameters
    ----------
    n, d : int
        Number of points and input dimension.
    ratios : sequence of float
        Values of p/(dn).
    types : sequence of sequence of int
        Collision types (multiplicities); p* is :func:`rftheory.collisions.zero_threshold`.

    Returns
    -------
    list of int
        The p grid, sorted and distinct, each ≥ n + 1.
    """
    ps = {int(round(r * d * n)) for r in ratios}
    for kind in types:
        if max(kind) <= 3:
            thr = zero_threshold(_pad(kind, n), d)
            ps |= {thr - 1, thr, thr + 1, thr + 2}
    return sorted(p for p in ps if p >= n + 1)


def _label(kind: Sequence[int]) -> str:
    return "+".join(str(m) for m in kind)


def collision_cell(activation: str, n: int, seed: int, config: Config) -> dict[str, Any]:
    """Limits of every type, the leave-one-out baseline and region minima, for one (activation,
    n, seed) of the general part, over its p grid (:func:`general_p_values`).

    Data ``sphere_points(n, d, seed)``, labels ``gaussian_labels(n, seed)``, V with seed
    :func:`general_feature_seed` (nested in p). Per type: the best placement's limit
    (:func:`rftheory.collisions.min_collision_limit`: value, first-order value, lower bound,
    whether the branch and bound closed) and, at the region p values, the minima over D_m(δ) at
    that placement, δ over ``region_deltas`` capped at
    :func:`rftheory.collisions.max_region_radius`, each warm-started from the previous one.

    Parameters
    ----------
    activation : str
        φ (registry name or expression in ``z``).
    n : int
        Number of points.
    seed : int
        Drives the data, the labels and V.
    config : Config
        The run's configuration (``general_d``, ``general_ratios``, ``region_ratios``,
        ``region_deltas``, ``enumerate_up_to_n``, ...).

    Returns
    -------
    dict
        ``activation``, ``n``, ``d``, ``seed``, ``v_seed``, ``limit_types``, ``region_types``
        and ``rows`` (per p: the leave-one-out baseline, the kink radius and one entry per type).
    """
    d = config.general_d
    X = sphere_points(n, d, seed)
    Y = gaussian_labels(n, seed)
    ltypes = limit_types(n, config.enumerate_up_to_n)
    rtypes = region_types(n, config.enumerate_up_to_n)
    ps = general_p_values(n, d, config.general_ratios, ltypes)
    region_ps = sorted({int(round(r * d * n)) for r in config.region_ratios} | {n + d - 1})
    if n > config.enumerate_up_to_n and seed - config.seed >= config.region_seeds_large_n:
        region_ps = []
    options = {"ftol": 1e-13, "gtol": 1e-11, "maxiter": config.region_maxiter}
    rows = []
    for p in ps:
        t0 = time.perf_counter()
        f = RandomFeatures(activation, d, p, seed=general_feature_seed(seed), v_cache_bytes=2**26)
        model = train_min_norm(f, X, Y)
        theta = np.asarray(model.theta)
        loo = min_collision_limit(f, X, theta, (1,) * (n - 1)).best
        kr = kink_radius(f, X)
        entries = []
        for kind in ltypes:
            search = min_collision_limit(f, X, theta, kind,
                                         max_refine=16 if max(kind) <= 3 else 4,
                                         starts=config.direction_starts, seed=seed)
            lim = search.best
            entry = {"type": list(kind), "label": _label(kind), "lost": lim.collision.lost,
                     "threshold": lim.threshold, "placement": list(lim.collision.multiplicities),
                     "limit": lim.loss, "limit_exact": lim.exact,
                     "first_order": lim.first_order_loss, "lower_bound": lim.lower_bound,
                     "screened": search.screened, "refined": search.refined,
                     "certified": search.certified, "region": None}
            if kind in rtypes and p in region_ps:
                cap = max_region_radius(X, lim.collision)
                deltas = [dl for dl in config.region_deltas if dl <= cap] or [0.99 * cap]
                warm, minima = [], []
                for k, delta in enumerate(deltas):
                    out = collision_region_minimum(
                        f, X, theta, lim.collision, delta,
                        random_starts=config.region_random_starts, seed=seed * 100 + k,
                        warm=warm, limit=lim, options=options)
                    warm = [out.X_hat]
                    minima.append({"delta": delta, "loss": out.loss, "losses": out.losses,
                                   "iterations": out.iterations, "hit_maxiter": out.hit_maxiter,
                                   "min_separation": out.min_separation,
                                   "max_distance": out.max_distance})
                entry["region"] = {"cap": cap, "deltas": deltas, "minima": minima}
            entries.append(entry)
        rows.append({"p": p, "p_over_dn": p / (d * n), "p_minus_n_minus_d": p - n - d,
                     "train_residual": model.train_residual,
                     "truth_loss": projection_loss(f, X, theta, gradient=False).loss,
                     "leave_one_out": loo.loss, "leave_one_out_point": loo.collision.left_out[0],
                     "kink_radius": kr if math.isfinite(kr) else None,
                     "types": entries, "seconds": time.perf_counter() - t0})
    return {"activation": activation, "n": n, "d": d, "seed": seed,
            "v_seed": general_feature_seed(seed), "limit_types": [list(t) for t in ltypes],
            "region_types": [list(t) for t in rtypes], "rows": rows}


def limit_check_cell(activation: str, n: int, config: Config) -> list[dict[str, Any]]:
    """Region minimum against the limit at two small δ, for every type with multiplicities ≤ 3.

    p = 2dn, seed ``config.seed``. Pairs: δ₁ = min(:data:`DELTA_CHECK`, kink radius/2) and
    δ₁/10. Triples: δ₁ = min(10·DELTA_CHECK, kink radius/2) and δ₁/10, skipped when
    δ₁/10 < :data:`DELTA_CHECK_TRIPLE_MIN` (a collapsed triple's Gram matrix has condition
    ~(δ√d)⁻⁴, beyond float64 there). Each minimum is started from the limit configurations only;
    the relative gap (L₀ − min)/L₀ should shrink with δ (single candidates move the loss at first
    order in δ).

    Parameters
    ----------
    activation : str
        φ (registry name or expression in ``z``).
    n : int
        Number of points.
    config : Config
        The run's configuration (``general_d``, ``seed``, ``direction_starts``).

    Returns
    -------
    list of dict
        One entry per type: ``type``, ``label``, ``placement``, ``limit``, ``kink_radius``,
        ``deltas``, ``region`` (the minima), ``relative_gap`` and ``note`` (why it was skipped).
    """
    d, seed = config.general_d, config.seed
    X = sphere_points(n, d, seed)
    Y = gaussian_labels(n, seed)
    p = 2 * d * n
    f = RandomFeatures(activation, d, p, seed=general_feature_seed(seed), v_cache_bytes=2**26)
    theta = np.asarray(train_min_norm(f, X, Y).theta)
    kr = kink_radius(f, X)
    out = []
    for kind in collision_types(n):
        if max(kind) > 3:
            continue
        lim = min_collision_limit(f, X, theta, kind, starts=config.direction_starts,
                                  seed=seed).best
        top = DELTA_CHECK * (10 if max(kind) == 3 else 1)
        d1 = min(top, kr / 2)
        entry = {"activation": activation, "n": n, "p": p, "type": list(kind),
                 "label": _label(kind), "placement": list(lim.collision.multiplicities),
                 "limit": lim.loss, "kink_radius": kr if math.isfinite(kr) else None,
                 "deltas": [], "region": [], "relative_gap": [], "note": None}
        if max(kind) == 3 and d1 / 10 < DELTA_CHECK_TRIPLE_MIN:
            entry["note"] = "kink radius below the resolvable triple scale"
        elif d1 / 10 < DELTA_CHECK_MIN:
            entry["note"] = "kink radius below the resolvable pair scale"
        else:
            for delta in (d1, d1 / 10):
                reg = collision_region_minimum(f, X, theta, lim.collision, delta,
                                               random_starts=0, limit=lim)
                entry["deltas"].append(delta)
                entry["region"].append(reg.loss)
                entry["relative_gap"].append((lim.loss - reg.loss) / lim.loss)
        out.append(entry)
    return out


def measured_threshold(rows: Sequence[dict], label: str) -> int | None:
    """Largest p of the grid at which the limit of type ``label`` is 0 (None if never).

    Parameters
    ----------
    rows : sequence of dict
        The rows of a :func:`collision_cell`.
    label : str
        The type's label, e.g. ``"2+1"``.

    Returns
    -------
    int or None
        The last p whose limit is at most :data:`ZERO_LOSS_LIMIT`.
    """
    last = None
    for r in rows:
        e = next(t for t in r["types"] if t["label"] == label)
        if e["limit"] <= ZERO_LOSS_LIMIT:
            last = r["p"]
    return last


def threshold_table(cells: Sequence[dict]) -> list[dict]:
    """Per (activation, n, seed, type): the count p*, the measured last zero, and whether the
    zero pattern over the grid is exactly {p ≤ p*} (``matches``) / has no zero above p*.

    Parameters
    ----------
    cells : sequence of dict
        Results of :func:`collision_cell`.

    Returns
    -------
    list of dict
        One row per (activation, n, seed, type): ``predicted``, ``measured``, ``dn``,
        ``matches``, ``zero_above_count``, ...
    """
    out = []
    for c in cells:
        for kind in c["limit_types"]:
            label = _label(kind)
            pts = [(r["p"], next(t for t in r["types"] if t["label"] == label)) for r in c["rows"]]
            thr = pts[0][1]["threshold"]
            zeros = {p: e["limit"] <= ZERO_LOSS_LIMIT for p, e in pts}
            out.append({"activation": c["activation"], "n": c["n"], "seed": c["seed"],
                        "type": list(kind), "label": label, "max_multiplicity": max(kind),
                        "predicted": thr, "measured": measured_threshold(c["rows"], label),
                        "dn": c["d"] * c["n"],
                        "matches": all(z == (p <= thr) for p, z in zeros.items()),
                        "zero_above_count": any(z for p, z in zeros.items() if p > thr)})
    return out


def region_table(cells: Sequence[dict]) -> list[dict]:
    """Per activation and p class (``n+d-1`` or ``{p/(dn)}dn``, over n and seeds): how many
    region minima at the largest δ are 0, the smallest positive one relative to the row's
    leave-one-out baseline, and the smallest limit (multiplicities ≤ 3) relative to it.

    Parameters
    ----------
    cells : sequence of dict
        Results of :func:`collision_cell`.

    Returns
    -------
    list of dict
        One row per (activation, p class): ``zero``, ``regions``, ``region_over_loo``,
        ``limit_over_loo``.
    """
    acc: dict[tuple[str, str], dict[str, Any]] = {}
    for c in cells:
        n, d = c["n"], c["d"]
        for r in c["rows"]:
            label = "n+d-1" if r["p"] == n + d - 1 else f"{r['p_over_dn']:g}dn"
            loo = max(r["leave_one_out"], 1e-300)
            regions = [e["region"]["minima"][-1]["loss"] for e in r["types"] if e["region"]]
            limits = [e["limit"] / loo for e in r["types"] if max(e["type"]) <= 3]
            if not regions and (label == "n+d-1" or r["p_over_dn"] < 1.0 or not limits
                                or r["p"] != int(round(r["p_over_dn"] * d * n))):
                continue
            t = acc.setdefault((c["activation"], label), {
                "activation": c["activation"], "p": label, "zero": 0, "regions": 0,
                "region_over_loo": None, "limit_over_loo": None, "_key": (
                    -1.0 if label == "n+d-1" else r["p_over_dn"])})
            t["zero"] += sum(v <= ZERO_LOSS_REGION for v in regions)
            t["regions"] += len(regions)
            pos = [v / loo for v in regions if v > ZERO_LOSS_REGION]
            if pos:
                t["region_over_loo"] = min(pos + [t["region_over_loo"] or math.inf])
            if r["p_over_dn"] >= 1.0 and limits:
                t["limit_over_loo"] = min(limits + [t["limit_over_loo"] or math.inf])
    rows = sorted(acc.values(), key=lambda t: (t["activation"], t["_key"]))
    return [{k: v for k, v in t.items() if k != "_key"} for t in rows]


def general_verdict(cells: Sequence[dict], checks: Sequence[dict]) -> dict[str, Any]:
    """The falsifiable verdicts of the general part (module docstring).

    Parameters
    ----------
    cells : sequence of dict
        Results of :func:`collision_cell`.
    checks : sequence of dict
        Entries of :func:`limit_check_cell`.

    Returns
    -------
    dict
        The verdicts (``pair_thresholds_match_count``, ``triples_never_zero_above_count``,
        ``limits_positive_from_dn``, ``regions_positive_from_dn``, ``limit_checks_agree``, ...)
        and ``general_n_supported``.
    """
    table = threshold_table(cells)
    smooth = [t for t in table if t["activation"] in SMOOTH]
    pairs = [t for t in smooth if t["max_multiplicity"] == 2]
    triples = [t for t in smooth if t["max_multiplicity"] == 3]
    relu_pairs = [t for t in table if t["activation"] not in SMOOTH and t["max_multiplicity"] == 2]
    at_dn = [(c, r) for c in cells for r in c["rows"] if r["p_over_dn"] >= 1.0]
    exact = [(c, r, e) for c, r in at_dn for e in r["types"] if max(e["type"]) <= 3]
    regions = [(c, r, e, m) for c, r in at_dn for e in r["types"] if e["region"]
               for m in e["region"]["minima"]]
    smallest_limit = min(exact, key=lambda t: t[2]["limit"], default=None)
    smallest_region = min(regions, key=lambda t: t[3]["loss"], default=None)
    ratio_loo = min((e["limit"] / max(r["leave_one_out"], 1e-300) for _, r, e in exact),
                    default=None)
    judged = [e for e in checks if e["relative_gap"]]
    agree = [abs(e["relative_gap"][1]) <= LIMIT_RTOL
             and abs(e["relative_gap"][1]) <= max(abs(e["relative_gap"][0]) / 3, 1e-9)
             for e in judged]
    verdict = {
        "pair_thresholds_match_count": bool(pairs) and all(t["matches"] for t in pairs),
        "pair_cases": len(pairs), "pair_cases_matching": sum(t["matches"] for t in pairs),
        "triples_never_zero_above_count": bool(triples) and not any(t["zero_above_count"]
                                                                   for t in triples),
        "triple_cases": len(triples), "triple_cases_matching": sum(t["matches"] for t in triples),
        "relu_pair_cases_matching": f"{sum(t['matches'] for t in relu_pairs)}/{len(relu_pairs)}",
        "limits_positive_from_dn": bool(exact) and all(e["limit"] > ZERO_LOSS_LIMIT
                                                       for _, _, e in exact),
        "smallest_limit_from_dn": None if smallest_limit is None else {
            "value": smallest_limit[2]["limit"], "activation": smallest_limit[0]["activation"],
            "n": smallest_limit[0]["n"], "seed": smallest_limit[0]["seed"],
            "p": smallest_limit[1]["p"], "type": smallest_limit[2]["label"]},
        "smallest_limit_over_leave_one_out_from_dn": ratio_loo,
        "regions_positive_from_dn": bool(regions) and all(m["loss"] > ZERO_LOSS_REGION
                                                          for *_, m in regions),
        "smallest_region_from_dn": None if smallest_region is None else {
            "value": smallest_region[3]["loss"], "delta": smallest_region[3]["delta"],
            "activation": smallest_region[0]["activation"], "n": smallest_region[0]["n"],
            "seed": smallest_region[0]["seed"], "p": smallest_region[1]["p"],
            "type": smallest_region[2]["label"]},
        "limit_checks_agree": bool(judged) and all(agree),
        "limit_checks": f"{sum(agree)}/{len(judged)}",
    }
    verdict["general_n_supported"] = bool(verdict["limits_positive_from_dn"]
                                          and verdict["regions_positive_from_dn"]
                                          and verdict["limit_checks_agree"])
    return verdict


# ---------------------------------------------------------------------------------------------
# Protocol: run, plot, summary
# ---------------------------------------------------------------------------------------------

def _describe(kind: str, spec: tuple, result: Any) -> str:
    if kind == "n2":
        v = result["verdict"]
        return (f"n = 2, {spec[0]}: bounded away at large p: {v['bounded_away_at_large_p']} "
                f"(smallest {_fmt(v['smallest_min_at_large_p'])})")
    if kind == "cell":
        rows = result["rows"]
        last = rows[-1]
        best = min(last["types"], key=lambda e: e["limit"])
        return (f"{spec[0]}, n = {spec[1]}, seed {spec[2]}: {len(rows)} p values; at p = "
                f"{last['p']} smallest limit {best['limit']:.2e} ({best['label']})")
    return f"limit checks {spec[0]}, n = {spec[1]}: {len(result)} types"


def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None,
        workers: int | None = None, deadline: Deadline | None = None) -> dict[str, Any]:
    """Both parts of the check (see the module docstring) for ``config`` (:data:`FULL` by
    default, :data:`QUICK` for ``--quick``), ``workers`` processes (results do not depend on
    it).

    Parameters
    ----------
    config : Config
        What to measure (default :data:`FULL`).
    progress : callable, optional
        Receives one line per finished task.
    workers : int, optional
        Worker processes (default min(2, CPUs)).
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops (:func:`rftheory.runtime.run_tasks` raises
        :class:`~rftheory.runtime.TimeLimitReached`, which
        :func:`~rftheory.claims._common.run_claim` saves as a partial result); default none.

    Returns
    -------
    dict
        JSON-serialisable: ``statement``, ``config``, the tolerances, ``curves`` (n = 2, one
        :func:`duplicate_curves` per activation), ``general`` (``cells`` and ``limit_checks``)
        and ``verdict``.
    """
    check_activations(*config.activations, *config.general_activations)
    specs: list[tuple[str, tuple]] = []
    calls: list[Callable[[], Any]] = []
    for a in config.activations:
        specs.append(("n2", (a,)))
        calls.append(partial(duplicate_curves, a, config.d, config.ratios, config.deltas,
                             seed=config.seed, random_starts=config.random_starts))
    for a in config.general_activations if config.ns else ():
        for n in config.ns:
            for j in range(config.seeds):
                specs.append(("cell", (a, n, config.seed + j)))
                calls.append(partial(collision_cell, a, n, config.seed + j, config))
            if n <= config.enumerate_up_to_n:
                specs.append(("check", (a, n)))
                calls.append(partial(limit_check_cell, a, n, config))
    # Largest n first (the longest tasks), so that no long task is left alone at the end.
    order = sorted(range(len(calls)),
                   key=lambda i: -(specs[i][1][1] if specs[i][0] != "n2" else 2))
    tick = TaskProgress(progress, len(calls))
    results = run_tasks(calls, workers=default_workers(workers), order=order, deadline=deadline,
                        on_result=lambda i, r: tick(lambda: _describe(*specs[i], r)))
    curves = [r for (kind, _), r in zip(specs, results) if kind == "n2"]
    cells = [r for (kind, _), r in zip(specs, results) if kind == "cell"]
    checks = [e for (kind, _), r in zip(specs, results) if kind == "check" for e in r]
    verdict: dict[str, Any] = {}
    if curves:
        per_activation = {c["activation"]: c["verdict"] for c in curves}
        main = per_activation.get("relu+tanh", next(iter(per_activation.values())))
        verdict.update({
            "satisfied_by": [a for a, v in per_activation.items() if v["bounded_away_at_large_p"]],
            "violated_by": [a for a, v in per_activation.items()
                            if not v["bounded_away_at_large_p"]],
            "limit_formula_agrees": all(v["limit_agrees"] for v in per_activation.values()),
        })
        verdict["supported"] = bool(main["bounded_away_at_large_p"]
                                    and verdict["limit_formula_agrees"])
    if cells:
        verdict["general_n"] = general_verdict(cells, checks)
    return {
        "claim": CLAIM,
        "statement": ("n = 2: min of the projection loss over the duplicate region "
                      "{||x_hat_j - x_1|| <= delta sqrt(d), j = 1, 2} stays above "
                      f"{ZERO_LOSS:g} for p/(dn) >= {LARGE_RATIO:g}; its delta -> 0 limit equals "
                      "the residual of theta on span{phi(x1), J_x1 B} (closed form). General n: "
                      "no collision pattern's limit or region minimum reaches 0 from p = dn on; "
                      "pair limits vanish exactly up to p* = n + l(d - 2)"),
        "config": config.as_dict(),
        "zero_loss": ZERO_LOSS, "zero_loss_limit": ZERO_LOSS_LIMIT,
        "zero_loss_region": ZERO_LOSS_REGION, "limit_rtol": LIMIT_RTOL,
        "large_ratio": LARGE_RATIO,
        "curves": curves,
        "general": {"d": config.general_d, "cells": cells, "limit_checks": checks},
        "verdict": verdict,
    }


_FLOOR = 1e-20  # display floor of the log axes (zeros of the loss are ~1e-30)


def _log_axes(ax, ratio_ticks=(0.1, 0.25, 0.5, 1, 2, 4, 8, 16)) -> None:
    """Log y with a few decades; log p/(dn) x with plain decimal ticks inside the data range."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    ax.set_xscale("log")
    sparse_log_ticks(ax)
    xs = [x for line in ax.get_lines() for x in np.atleast_1d(line.get_xdata())
          if isinstance(x, (int, float, np.floating)) and x > 0]
    lo, hi = (min(xs), max(xs)) if xs else (0.1, 10.0)
    ax.xaxis.set_major_locator(FixedLocator([t for t in ratio_ticks
                                             if lo * 0.99 <= t <= hi * 1.01]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def _loss_axes(ax, zero: float) -> None:
    """A loss against p/(dn) panel: zero level, p = dn, log axes down to the display floor."""
    from rftheory.plotting import SYMBOLS

    ax.axhline(zero, color="0.5", ls=":", lw=0.8, label=f"zero level {zero:g}")
    ax.axvline(1.0, color="0.7", lw=0.6)
    ax.set_yscale("log")
    ax.set_ylim(_FLOOR / 3, 3)
    _log_axes(ax)
    ax.set_xlabel(SYMBOLS["p_over_dn"])


def _legend(fig, axes, loc: str) -> None:
    """One figure legend with every labelled series of ``axes`` (first occurrence of a label)."""
    handles, labels = {}, []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in handles:
                handles[lab] = h
                labels.append(lab)
    fig.legend([handles[lab] for lab in labels], labels, loc=loc)


def _plot_n2(result: dict[str, Any], stem: Path) -> list[Path]:
    """Top: min_D(δ) L / L₀ against δ (the small-δ check included), one line per p/(dn); bottom:
    L₀ and min_D(δ) L against p/(dn), one line per δ. One activation per column."""
    from rftheory.plotting import PALETTE, SYMBOLS, paper_figure

    curves = result["curves"]
    ratios = sorted({r["ratio"] for c in curves for r in c["rows"]})
    deltas = sorted({dl for c in curves for dl in c["deltas"]})
    fig, axes = paper_figure(2, nrows=2, ncols=len(curves), height=4.4, squeeze=False)
    for col, c in enumerate(curves):
        ax = axes[0, col]
        ax.axhline(1.0, color=PALETTE[7], lw=0.8, label=r"$L_0$ ($\delta\to 0$, closed form)")
        for r in c["rows"]:
            if r["limit_loss"] <= result["zero_loss"]:
                continue  # L₀ = 0 (p ≤ d): the bottom row shows it
            xs = list(r["deltas"])
            ys = [v / r["limit_loss"] for v in r["min_loss"]]
            if r["check_loss"] is not None:
                xs, ys = [r["delta_check"]] + xs, [r["check_loss"] / r["limit_loss"]] + ys
            ax.plot(xs, ys, "o-", ms=2.5, color=PALETTE[ratios.index(r["ratio"]) % 7],
                    label=rf"$p/(dn) = {r['p_over_dn']:g}$")
        ax.set_xscale("log")
        ax.set_ylim(0.0, 1.08)
        ax.set_xlabel(SYMBOLS["delta"])
        if col == 0:
            ax.set_ylabel(r"min over $D(\delta)$ of $L$, $/L_0$")
        ax.set_title(f"{c['activation']}, $d = {c['d']}$, $n = 2$")
        ax = axes[1, col]
        x = [r["p_over_dn"] for r in c["rows"]]
        for dl in deltas:
            if dl in c["deltas"]:
                j = c["deltas"].index(dl)
                ax.plot(x, [max(r["min_loss"][j], _FLOOR) for r in c["rows"]], "o-", ms=2.5,
                        lw=0.9, color=PALETTE[deltas.index(dl) % 7], label=rf"$\delta = {dl:g}$")
        ax.plot(x, [max(r["limit_loss"], _FLOOR) for r in c["rows"]], "s--", ms=3,
                color=PALETTE[7], label=r"$L_0$")
        _loss_axes(ax, result["zero_loss"])
        if col == 0:
            ax.set_ylabel(r"min over $D(\delta)$ of $L$; $L_0$")
    _legend(fig, axes[0], "outside right upper")
    _legend(fig, axes[1], "outside right lower")
    return save_figure(fig, stem)


def _plot_general(result: dict[str, Any], stem: Path) -> list[Path]:
    """Per activation (columns): the measured last zero of L₀ against the count p*; the smallest
    limit over the types against p/(dn), one line per n; the smallest region minimum (largest
    δ) against p/(dn), one line per n."""
    from rftheory.plotting import PALETTE, SYMBOLS, paper_figure

    cells = result["general"]["cells"]
    acts = list(dict.fromkeys(c["activation"] for c in cells))
    ns = sorted({c["n"] for c in cells})
    colour = {n: PALETTE[i % 7] for i, n in enumerate(ns)}
    table = threshold_table(cells)
    fig, axes = paper_figure(2, nrows=3, ncols=len(acts), height=6.0, squeeze=False)
    for col, act in enumerate(acts):
        group = [c for c in cells if c["activation"] == act]
        ax = axes[0, col]
        lo, hi = 0.05, 1.2
        ax.plot([lo, hi], [lo, hi], color=PALETTE[7], lw=0.7, label=r"measured $= p^*$")
        for n in ns:
            pts = [t for t in table if t["activation"] == act and t["n"] == n
                   and t["max_multiplicity"] <= 3 and t["measured"] is not None]
            for mm, marker in ((2, "o"), (3, "^")):
                sel = [t for t in pts if t["max_multiplicity"] == mm]
                if sel:
                    ax.plot([t["predicted"] / t["dn"] for t in sel],
                            [t["measured"] / t["dn"] for t in sel], marker, mfc="none", ms=3.5,
                            mew=0.7, color=colour[n], label=f"$n = {n}$" if mm == 2 else None)
        ax.plot([], [], "o", mfc="none", color="0.4", label="pairs only")
        ax.plot([], [], "^", mfc="none", color="0.4", label="with a triple")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        sparse_log_ticks(ax)
        ax.set_xlabel(r"count $p^*/(dn)$, $p^* = n + \ell(d-2)$")
        if col == 0:
            ax.set_ylabel(r"last $p/(dn)$ with $L_0 = 0$")
        ax.set_title(f"{act}, $d = {group[0]['d']}$")
        for row, what in ((1, "limit"), (2, "region")):
            ax = axes[row, col]
            for n in ns:
                per_p: dict[float, float] = {}
                for c in (c for c in group if c["n"] == n):
                    for r in c["rows"]:
                        if what == "limit":
                            vals = [e["limit"] for e in r["types"] if max(e["type"]) <= 3]
                        else:
                            vals = [e["region"]["minima"][-1]["loss"] for e in r["types"]
                                    if e["region"]]
                        if vals:
                            per_p[r["p_over_dn"]] = min(per_p.get(r["p_over_dn"], math.inf),
                                                        min(vals))
                if per_p:
                    x = sorted(per_p)
                    ax.plot(x, [max(per_p[v], _FLOOR) for v in x], "o-", ms=2, lw=0.9,
                            color=colour[n], label=f"$n = {n}$")
            _loss_axes(ax, result["zero_loss_limit"] if what == "limit"
                       else result["zero_loss_region"])
            if col == 0:
                ax.set_ylabel(r"smallest $L_0$ over types" if what == "limit" else
                              r"smallest min over $D_m(\delta_{\max})$")
    _legend(fig, axes[0], "outside right upper")
    _legend(fig, axes[1:].ravel(), "outside right lower")
    return save_figure(fig, stem)


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """``stem`` (n = 2: δ curves and p curves per activation) and ``stem_general_n`` (general
    n: thresholds against the count, smallest limits and region minima against p/(dn)), PNG +
    PDF each, whichever parts the result has.

    Parameters
    ----------
    result : dict
        A result of :func:`run`.
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
    paths: list[Path] = []
    with paper_style():
        if result["curves"]:
            paths += _plot_n2(result, stem)
        if result["general"]["cells"]:
            paths += _plot_general(result, stem.with_name(stem.name + "_general_n"))
    return paths


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3e}"


def _summary_n2(result: dict[str, Any]) -> list[str]:
    lines = []
    for c in result["curves"]:
        headers = ["p", "p/(dn)", "L0"] + [f"delta={dl:g}" for dl in c["deltas"]] + [
            "check delta", "(L0-min)/L0", "kink radius"]
        rows = []
        for r in c["rows"]:
            rows.append([r["p"], f"{r['p_over_dn']:g}", f"{r['limit_loss']:.3e}"]
                        + [f"{v:.3e}" for v in r["min_loss"]]
                        + ["-" if r["delta_check"] is None else f"{r['delta_check']:.1e}",
                           "-" if r["check_relative_gap"] is None else f"{r['check_relative_gap']:.1e}",
                           "-" if r["kink_radius"] is None else f"{r['kink_radius']:.1e}"])
        v = c["verdict"]
        lines.append(f"{c['activation']} (d = {c['d']}, n = 2; ||x1 -+ x2||/sqrt(d) >= "
                     f"{c['separation']:.3f}): bounded away at p/(dn) >= {result['large_ratio']:g}: "
                     f"{v['bounded_away_at_large_p']} (smallest {_fmt(v['smallest_min_at_large_p'])}); "
                     f"limit agrees: {v['limit_agrees']}")
        lines.append(format_table(headers, rows))
    return lines


def _summary_general(result: dict[str, Any]) -> list[str]:
    cells = result["general"]["cells"]
    table = threshold_table(cells)
    lines = [f"general n (d = {result['general']['d']}): zero of the delta -> 0 limit against "
             "the count p* = n + l(d - 2), per activation and type (cases matching / cases)"]
    rows = []
    for act in dict.fromkeys(c["activation"] for c in cells):
        for mm, what in ((2, "pairs only"), (3, "with a triple")):
            sel = [t for t in table if t["activation"] == act and t["max_multiplicity"] == mm]
            if sel:
                off = [f"{t['label']} n={t['n']} s{t['seed']}: {t['measured']} vs {t['predicted']}"
                       for t in sel if not t["matches"]][:3]
                rows.append([act, what, f"{sum(t['matches'] for t in sel)}/{len(sel)}",
                             sum(t["zero_above_count"] for t in sel), "; ".join(off) or "-"])
    lines.append(format_table(["activation", "types", "match", "zero above p*", "differs (first 3)"],
                              rows))
    rows = []
    for act, n in dict.fromkeys((c["activation"], c["n"]) for c in cells):
        lim, reg, loo = math.inf, math.inf, math.inf
        for c in (c for c in cells if (c["activation"], c["n"]) == (act, n)):
            for r in c["rows"]:
                if r["p_over_dn"] < 1.0:
                    continue
                loo = min(loo, r["leave_one_out"])
                for e in r["types"]:
                    if max(e["type"]) <= 3:
                        lim = min(lim, e["limit"])
                    if e["region"]:
                        reg = min(reg, min(m["loss"] for m in e["region"]["minima"]))
        rows.append([act, n, _fmt(lim if lim < math.inf else None),
                     _fmt(reg if reg < math.inf else None), _fmt(loo)])
    lines.append("smallest at p >= dn (over types with multiplicities <= 3, seeds, p; regions "
                 "over delta):")
    lines.append(format_table(["activation", "n", "limit L0", "region min", "leave-one-out"], rows))
    lines.append("per activation and p: region minima at the largest delta that are 0 (<= "
                 f"{ZERO_LOSS_REGION:g}), the smallest positive one over the leave-one-out "
                 "baseline, and the smallest L0 (multiplicities <= 3) over the baseline")
    lines.append(format_table(["activation", "p", "regions at 0", "min region/loo", "min L0/loo"],
                              [[t["activation"], t["p"], f"{t['zero']}/{t['regions']}" if t["regions"] else "-",
                                _fmt(t["region_over_loo"]), _fmt(t["limit_over_loo"])]
                               for t in region_table(cells)]))
    checks = result["general"]["limit_checks"]
    if checks:
        rows = [[e["activation"], e["n"], e["label"], f"{e['limit']:.3e}",
                 ", ".join(f"{dl:.0e}: {g:.1e}" for dl, g in zip(e["deltas"], e["relative_gap"]))
                 or e["note"]] for e in checks]
        lines.append("limit checks at p = 2dn: relative gap (L0 - min_D(delta))/L0")
        lines.append(format_table(["activation", "n", "type", "L0", "delta: gap"], rows))
    return lines


def summary(result: dict[str, Any]) -> str:
    """n = 2: per activation and p, L₀, the minima per δ and the small-δ check; general n: the
    count's agreement, the smallest limits and region minima from dn on, the limit checks; the
    verdicts.

    Parameters
    ----------
    result : dict
        A result of :func:`run`.

    Returns
    -------
    str
        The tables and verdicts, one line per row.
    """
    lines = _summary_n2(result) if result["curves"] else []
    if result["general"]["cells"]:
        lines += _summary_general(result)
    v = dict(result["verdict"])
    general = v.pop("general_n", None)
    if v:
        lines.append("verdict (n = 2): " + ", ".join(f"{k} = {v[k]}" for k in v))
    if general:
        lines.append("verdict (general n): " + ", ".join(
            f"{k} = {general[k]}" for k in general if not k.startswith("smallest")))
        for k in ("smallest_limit_from_dn", "smallest_region_from_dn"):
            lines.append(f"  {k}: {general[k]}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
