"""An activation's report card: every check the package has, for one φ, on one page.

:func:`activation_card` runs, for one activation (a registry name or any expression the parser
accepts), at a size chosen from :data:`SIZES` (``"quick"``, ``"default"``, ``"full"``):

* **Hermite spectrum** — μ_0..μ_K with their error estimates, the Parseval tail
  E[φ²] − Σ_{k≤K} μ_k², and which coefficients vanish (:func:`rftheory.verdicts.activation_report`);
* **verdicts** — Lipschitz, non-linearity, parity, the paper's sign criterion (some odd μ_k ≠ 0,
  k ≥ 3), each with the numbers behind it;
* **the sign check** for this φ — what :mod:`rftheory.claims.sign` found decides the sign of a
  recovered sample (the parity of φ, not the Hermite criterion; ``paper_notes/sign.md``): the
  projection loss of the true training set with one sample negated (≈ 0 means −x_i is an exact
  solution), the antipodal slope K'(−1)/K'(1), and how many recovered points of the empirical law
  below come back as −x_i;
* **the RF kernel** — K(t) = Σ_k μ_k² t^k from the series (with its rigorous truncation bound, and
  the closed form where one exists) against a Monte Carlo ΦΦᵀ/p on points of a great circle,
  λ_min(K) against its Hermite lower bound, and the concentration slope of ‖ΦΦᵀ/p − K‖_op in p
  (:func:`rftheory.concentration.measure_concentration`);
* **a small empirical law** — label fit against p/n and reconstruction success against p/(dn) on
  one small (d, n) with a few seeds, through :func:`rftheory.pipeline.run_reconstruction` with
  :func:`rftheory.reconstruct.reconstruct`'s default method (the strongest attack the package has).

It returns a frozen :class:`ActivationCard`; :func:`plot_card` draws it on one page of a
two-column paper's text width (PNG and PDF), :func:`card_table` prints it, and
:func:`rftheory.output.to_jsonable` turns it into the JSON the command writes next to the figure.

Cost. Every size is bounded before any work: the reconstructions have a step budget
(``max_steps``), and :func:`card_estimate` adds up the card's peak memory from what each section
declares, which :func:`activation_card` checks (``memory_limit`` as in
:func:`rftheory.budget.check`); time is not estimated (``deadline`` stops the card instead).
On the 2-core development machine the default card took ~20–40 s of wall time, ``quick`` ~10 s,
``full`` a few minutes (``benchmarks/bench_report.py`` prints this machine's figures).

Examples
--------
>>> card = activation_card("relu+tanh", size="quick")             # doctest: +SKIP
>>> card.verdicts["sign_identifiability"].holds, card.law.label_threshold_over_n  # doctest: +SKIP
(True, 1.0)
>>> QUICK.law_d, QUICK.law_n, QUICK.replace(law_seeds=3).law_seeds
(3, 4, 3)
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import textwrap
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .errors import RFTheoryError
from .metrics import RHO_SUCCESS

__all__ = [
    "CardSize",
    "SIZES",
    "QUICK",
    "DEFAULT",
    "FULL",
    "KernelCurve",
    "LawPoint",
    "EmpiricalLaw",
    "SignFindings",
    "ActivationCard",
    "activation_card",
    "card_estimate",
    "kernel_curve",
    "law_cell",
    "card_table",
    "card_numbers",
    "card_stem",
    "plot_card",
]

#: Tag of the seed stream of the Monte Carlo kernel's V.
_MC_STREAM = 0x4B435256


@dataclasses.dataclass(frozen=True)
class CardSize:
    """How much of each check a card runs; checked on creation.

    Parameters
    ----------
    name : str
        ``"quick"``, ``"default"``, ``"full"`` or ``"custom"`` (after :meth:`replace`).
    order : int
        Hermite order K of the spectrum and of the verdicts.
    time_budget : float
        Work for each sympy stage of the verdicts, in nominal seconds converted to a fixed
        count of steps (:data:`rftheory.hermite.STEPS_PER_SECOND` per second; not a clock).
    kernel_d, kernel_n : int
        Data of the concentration measurement (n points on the √d-sphere).
    kernel_p : tuple of int
        Its numbers of features (increasing).
    kernel_reps : int
        Independent draws of V per p.
    mc_points, mc_p : int
        Points of the great circle where K(t) is estimated by Monte Carlo, and its features.
    law_d, law_n : int
        The empirical law's problem size (d ≥ 1, n ≥ 2).
    law_ratios : tuple of float
        Its values of p/(dn); the label-fit points p = n − 1, n, n/2 are added
        (:func:`rftheory.thresholds.p_values`).
    law_seeds : int
        Seeds per point (the success probability moves in steps of 1/law_seeds).
    max_steps : int
        Step budget of each reconstruction.
    """

    name: str
    order: int
    time_budget: float
    kernel_d: int
    kernel_n: int
    kernel_p: tuple[int, ...]
    kernel_reps: int
    mc_points: int
    mc_p: int
    law_d: int
    law_n: int
    law_ratios: tuple[float, ...]
    law_seeds: int
    max_steps: int

    def __post_init__(self) -> None:
        def positive_int(name: str, low: int = 1) -> None:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise RFTheoryError(f"{name} must be an integer >= {low}, got {value!r}")
            object.__setattr__(self, name, int(value))

        for name, low in (("order", 3), ("kernel_d", 1), ("kernel_n", 2), ("kernel_reps", 1),
                          ("mc_points", 3), ("mc_p", 2), ("law_d", 1), ("law_n", 2),
                          ("law_seeds", 1), ("max_steps", 1)):
            positive_int(name, low)
        if not (math.isfinite(self.time_budget) and self.time_budget >= 0):
            raise RFTheoryError(f"time_budget must be a number of seconds >= 0, got {self.time_budget}")
        try:
            ps = tuple(int(p) for p in self.kernel_p)
            ratios = tuple(sorted(float(r) for r in self.law_ratios))
        except (TypeError, ValueError):
            raise RFTheoryError("kernel_p must be integers and law_ratios numbers") from None
        if len(ps) < 2 or list(ps) != sorted(set(ps)) or ps[0] < 1:
            raise RFTheoryError(f"kernel_p needs at least two increasing positive values, got {ps}")
        if not ratios or ratios[0] <= 0 or not all(math.isfinite(r) for r in ratios):
            raise RFTheoryError(f"law_ratios must be positive and finite, got {self.law_ratios}")
        object.__setattr__(self, "kernel_p", ps)
        object.__setattr__(self, "law_ratios", ratios)

    def replace(self, **changes: Any) -> "CardSize":
        """A copy with some fields changed (checked again; named ``"custom"`` unless given)."""
        changes.setdefault("name", "custom" if changes else self.name)
        return dataclasses.replace(self, **changes)


#: ``--quick``: a smoke test of every section (~10 s).
QUICK = CardSize(name="quick", order=16, time_budget=10.0, kernel_d=8, kernel_n=12,
                 kernel_p=(64, 128, 256, 512, 1024), kernel_reps=2, mc_points=25, mc_p=4096,
                 law_d=3, law_n=4, law_ratios=(0.5, 1.0, 2.0, 4.0, 8.0), law_seeds=2,
                 max_steps=600)
#: The default card (well under a minute on 2 cores).
DEFAULT = CardSize(name="default", order=30, time_budget=15.0, kernel_d=10, kernel_n=20,
                   kernel_p=(128, 256, 512, 1024, 2048, 4096), kernel_reps=4, mc_points=41,
                   mc_p=20000, law_d=4, law_n=5, law_ratios=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
                   law_seeds=3, max_steps=1500)
#: ``--full``: the claims' sizes (minutes).
FULL = CardSize(name="full", order=60, time_budget=30.0, kernel_d=20, kernel_n=50,
                kernel_p=tuple(2**k for k in range(7, 16)), kernel_reps=8, mc_points=61,
                mc_p=2**17, law_d=6, law_n=8,
                law_ratios=(0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0), law_seeds=6,
                max_steps=3000)
#: The sizes by name.
SIZES: dict[str, CardSize] = {"quick": QUICK, "default": DEFAULT, "full": FULL}


# ---------------------------------------------------------------------------------------------
# Result objects
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class KernelCurve:
    """K(t) on a great circle of the √d-sphere: series, closed form, Monte Carlo.

    Parameters
    ----------
    t : tuple of float
        Correlations cos θ_j of the points x_j = √d(cos θ_j e₁ + sin θ_j e₂) with x_0.
    series, series_error : tuple of float
        K_K(t) = Σ_{k≤K} μ_k² t^k and its rigorous bound (:func:`rftheory.kernel.rf_kernel_series`).
    closed_form : tuple of float or None
        E[φ(u)φ(v)] in closed form (:func:`rftheory.kernel.closed_form_kernel`), where known.
    monte_carlo, monte_carlo_se : tuple of float
        (1/p) Σ_j φ(v_jᵀx_0)φ(v_jᵀx_i) and its standard error std/√p.
    p, d, v_seed : int
        Features of the Monte Carlo estimate, dimension of the points, and the seed of its V.
    max_z : float
        max_i |MC − series| / sqrt(se² + bound²): a few units at most when the two agree.
    """

    t: tuple
    series: tuple
    series_error: tuple
    closed_form: tuple | None
    monte_carlo: tuple
    monte_carlo_se: tuple
    p: int
    d: int
    v_seed: int
    max_z: float


@dataclasses.dataclass(frozen=True)
class LawPoint:
    """One p of the empirical law, over the seeds.

    ``success_abs`` / ``success_sign_invariant`` are P(ρ < 0.1) for the official and the
    sign-invariant ρ (``None`` for p < n, where there is nothing to reconstruct: fewer features
    than candidates); ``recovered`` and ``flipped`` count, over the seeds, the training points
    whose matched candidate is within 0.1 up to sign, and those of them at −x_i.

    Parameters
    ----------
    p : int
        Number of features.
    p_over_dn, p_over_n : float
        p/(dn) and p/n.
    max_train_residual : float
        Largest train residual over the seeds.
    median_rho_abs, median_rho_sign_invariant : float or None
        Median over the seeds of the official and the sign-invariant ρ (None for p < n).
    success_abs, success_sign_invariant : float or None
        P(ρ < 0.1) over the seeds for the two ρ (None for p < n).
    recovered, flipped : int
        Recovered training points over the seeds, and how many of them came back as −x_i.
    median_steps : float or None
        Median optimiser steps over the seeds (None for p < n).
    """

    p: int
    p_over_dn: float
    p_over_n: float
    max_train_residual: float
    median_rho_abs: float | None
    median_rho_sign_invariant: float | None
    success_abs: float | None
    success_sign_invariant: float | None
    recovered: int
    flipped: int
    median_steps: float | None


@dataclasses.dataclass(frozen=True)
class EmpiricalLaw:
    """Label fit and reconstruction against p for one small (d, n) (see :func:`activation_card`).

    Parameters
    ----------
    d, n, seeds, max_steps : int
        Problem size, seeds per p, and the step budget of each reconstruction.
    points : tuple of LawPoint
        Every p of the grid, increasing.
    label_threshold_over_n : float
        p*_label/n: the smallest grid p from which every seed's train residual is below 1e-6
        (:func:`rftheory.thresholds.label_threshold`), over n; NaN if none.
    data_threshold_over_dn, data_threshold_sign_invariant_over_dn : float
        p*_data/(dn), the fitted success curve's location (:func:`rftheory.thresholds.fit_threshold`
        on every run), for the official and the sign-invariant ρ; NaN when not located.
    data_threshold_status : str
        :data:`rftheory.thresholds.STATUSES` (official ρ): ``"ok"``, ``"step"`` (width not
        identified), ``"open"``, ``"below_grid"`` or ``"above_grid"``.
    recovered, flipped : int
        Recovered points (within 0.1 up to sign) and how many of them came back as −x_i, over
        the reconstructions with p ≥ dn.
    cells : tuple of dict
        Every run (seed, p, residual, ρ, steps, stop reason, seconds).
    data_threshold_interval_over_dn : tuple of float
        The 95 % profile-likelihood interval of ``data_threshold_over_dn``.
    """

    d: int
    n: int
    seeds: int
    max_steps: int
    points: tuple
    label_threshold_over_n: float
    data_threshold_over_dn: float
    data_threshold_sign_invariant_over_dn: float
    data_threshold_status: str
    recovered: int
    flipped: int
    cells: tuple
    data_threshold_interval_over_dn: tuple = (math.nan, math.nan)


@dataclasses.dataclass(frozen=True)
class SignFindings:
    """The sign of a recovered sample, by the paper's criterion and by what the sign check found.

    Parameters
    ----------
    hermite_criterion : bool or None
        The paper's: some odd μ_k, k ≥ 3, is non-zero (``verdicts["sign_identifiability"]``).
    symmetry : str or None
        ``"even"``, ``"odd"`` or ``"neither"`` (symbolic parity verdict; None if undecided).
    parity_predicts_lost : bool or None
        The sign check's criterion: the signs are lost exactly when φ is even or odd.
    loss_truth, loss_one_flipped, loss_all_flipped : float
        Projection loss of the true training set, with one sample negated (median over which),
        and with all negated, at the empirical law's largest p (seed of the card): ≈ 0 when
        x ↦ −x is an exact symmetry of the problem.
    antipodal_slope : float or None
        K'(−1)/K'(1) = E[φ'(g)φ'(−g)]/E[φ'(g)²] (:func:`rftheory.signs.antipodal_slope`):
        ±1 for a pure parity, near 0 when a candidate at −x_i feels little pull to x_i; None
        when φ' vanishes almost everywhere (a step function).
    recovered, flipped : int
        From the empirical law (reconstructions with p ≥ dn).
    """

    hermite_criterion: bool | None
    symmetry: str | None
    parity_predicts_lost: bool | None
    loss_truth: float
    loss_one_flipped: float
    loss_all_flipped: float
    antipodal_slope: float | None
    recovered: int
    flipped: int


@dataclasses.dataclass(frozen=True)
class ActivationCard:
    """Everything :func:`activation_card` measured for one activation (JSON via ``to_jsonable``).

    Parameters
    ----------
    activation, expression : str
        The name given and φ as sympy prints it.
    seed : int
        Base seed (data, V, labels, optimiser starts; each section its own stream).
    size : CardSize
        The size the card ran at.
    hermite : rftheory.verdicts.ActivationReport
        Coefficients, errors, Parseval tail and the four verdicts with their numbers.
    sign : SignFindings
        What decides the sign of a recovered sample.
    kernel : KernelCurve
        K(t) on a great circle: series, closed form, Monte Carlo.
    concentration : dict
        :func:`rftheory.concentration.measure_concentration`'s result (λ_min(K), its Hermite
        lower bounds, ‖ΦΦᵀ/p − K‖_op per p, the slope).
    law : EmpiricalLaw
        The small empirical law.
    cost : dict
        The estimate checked before the run (``estimate``), and the measured wall seconds per
        section and in total.
    environment : dict
        Package versions, V's definition, the machine; ``sources``: digests of the
        reconstruction code.
    """

    activation: str
    expression: str
    seed: int
    size: CardSize
    hermite: Any
    sign: SignFindings
    kernel: KernelCurve
    concentration: dict
    law: EmpiricalLaw
    cost: dict
    environment: dict

    @property
    def verdicts(self) -> dict:
        """The four verdicts by name (:class:`rftheory.verdicts.Verdict`)."""
        return self.hermite.verdicts


# ---------------------------------------------------------------------------------------------
# The sections
# ---------------------------------------------------------------------------------------------

def _law_tasks(activation: str, size: CardSize, seed: int) -> list[dict[str, Any]]:
    from .thresholds import p_values

    return [{"activation": activation, "d": size.law_d, "n": size.law_n, "p": p,
             "seed": seed + s, "seed_index": s, "max_steps": size.max_steps}
            for p in p_values(size.law_d, size.law_n, size.law_ratios)
            for s in range(size.law_seeds)]


def card_estimate(activation: str, size: CardSize = DEFAULT, *, seed: int = 0,
                  workers: int | None = None) -> Any:
    """The card's peak memory from its sizes alone (:class:`rftheory.budget.Memory`): the
    largest of its sections, as each declares it — the concentration measurement
    (:func:`rftheory.concentration.measurement_memory`), the Monte Carlo features
    (:func:`rftheory.features.features_memory`) and the law's cells
    (:func:`rftheory.cells.cell_memory`, times the workers that run at once).

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z``.
    size : CardSize, default DEFAULT
        The card's size.
    seed : int, default 0
        Base seed of the law's cells (as in :func:`activation_card`).
    workers : int, optional
        Processes that run the law's cells at once (default min(2, CPUs)).

    Returns
    -------
    rftheory.budget.Memory
        Peak bytes of the whole card, with the peak of each section.

    Examples
    --------
    >>> card_estimate("relu", QUICK).peak_bytes < 2**28
    True
    """
    from .budget import Memory
    from .runtime import default_workers
    from .concentration import measurement_memory
    from .features import features_memory
    from .cells import cell_memory

    workers = default_workers(workers)
    kernel = measurement_memory(d=size.kernel_d, n=size.kernel_n, p_values=size.kernel_p)
    mc, _ = features_memory(n=size.mc_points, p=size.mc_p, d=size.kernel_d)
    tasks = _law_tasks(activation, size, seed)
    cells = workers * max(cell_memory("law", t).peak_bytes for t in tasks)
    parts = (("law cells", cells), ("kernel concentration", kernel.peak_bytes),
             ("Monte Carlo K(t)", mc))
    job = (f"report card of {activation} ({size.name}: concentration d = {size.kernel_d}, "
           f"n = {size.kernel_n}, p ≤ {size.kernel_p[-1]}; {len(tasks)} law cells at "
           f"d = {size.law_d}, n = {size.law_n}, ≤ {size.max_steps} steps)")
    return Memory(job, max(kernel.peak_bytes, mc, cells), parts)


def _great_circle(d: int, m: int) -> np.ndarray:
    """m points x_j = √d(cos θ_j e₁ + sin θ_j e₂), θ_j = jπ/(m − 1); ⟨x_0, x_j⟩/d = cos θ_j."""
    theta = np.linspace(0.0, math.pi, m)
    X = np.zeros((m, max(d, 2)))
    X[:, 0], X[:, 1] = np.cos(theta), np.sin(theta)
    X *= math.sqrt(X.shape[1])
    return X


def kernel_curve(activation: str, d: int, *, points: int, p: int, seed: int = 0,
                 order: int = 64) -> KernelCurve:
    """K(t) for t ∈ [−1, 1]: the series and its bound, the closed form, a Monte Carlo ΦΦᵀ/p.

    Notes
    -----
    The Monte Carlo estimate has standard error std_j(φ(v_jᵀx_0)φ(v_jᵀx_i))/√p, estimated from
    the same p features; :attr:`KernelCurve.max_z` compares the two within that error and the
    series' bound. d < 2 is raised to 2 (a great circle needs two dimensions); the kernel on the
    sphere does not depend on d.

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z``.
    d : int
        Dimension of the sphere (at least 2 is used).
    points : int
        Number of points on the great circle, from t = 1 (the point x_0 itself) to t = −1.
    p : int
        Features of the Monte Carlo estimate.
    seed : int, default 0
        Seed from which the Monte Carlo V's seed is derived.
    order : int, default 64
        Order K of the kernel series.

    Returns
    -------
    KernelCurve
        The three curves, the series' bound, the Monte Carlo standard errors and ``max_z``.
    """
    from .features import RandomFeatures
    from .kernel import closed_form_kernel, has_closed_form, kernel_series, rf_kernel_series

    X = _great_circle(d, points)
    t = np.clip(X @ X[0] / X.shape[1], -1.0, 1.0)
    series = kernel_series(activation, order)
    value = rf_kernel_series(series, t)
    closed = tuple(float(v) for v in closed_form_kernel(activation, t)) \
        if has_closed_form(activation) else None
    v_seed = int(np.random.SeedSequence([seed, _MC_STREAM]).generate_state(1, np.uint32)[0])
    F = np.asarray(RandomFeatures(activation, X.shape[1], p, seed=v_seed).features(X))
    products = F[0][None, :] * F
    mc = products.mean(axis=1)
    se = products.std(axis=1, ddof=1) / math.sqrt(p)
    series_values = np.asarray(value.values, dtype=np.float64)
    bound = np.asarray(value.error_bound, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(mc - series_values) / np.sqrt(se**2 + bound**2)
    z = np.where(np.isfinite(z), z, 0.0)
    return KernelCurve(t=tuple(t.tolist()), series=tuple(series_values.tolist()),
                       series_error=tuple(bound.tolist()), closed_form=closed,
                       monte_carlo=tuple(mc.tolist()), monte_carlo_se=tuple(se.tolist()),
                       p=p, d=X.shape[1], v_seed=v_seed, max_z=float(np.max(z)))


def law_cell(task: Mapping[str, Any]) -> dict[str, Any]:
    """One point of the card's empirical law: a reconstruction when p ≥ n, a label fit otherwise.

    The reconstruction is :func:`rftheory.pipeline.run_reconstruction` with the optimiser's
    default method and the task's step budget; BLAS runs on one thread (tiny problems; the last
    bits then do not depend on the core count). Returns plain numbers (picklable, JSON).

    Parameters
    ----------
    task : mapping
        ``activation``, ``d``, ``n``, ``p``, ``seed``, ``seed_index`` and ``max_steps`` of the
        cell.

    Returns
    -------
    dict
        ``p``, ``seed``, ``seed_index``, ``kind`` (``"label_fit"`` or ``"reconstruction"``),
        ``train_residual`` and ``seconds``; a reconstruction adds ``rho_abs``, ``rho_signed``,
        ``rho_sign_invariant``, ``loss``, ``recovered``, ``flipped``, ``steps`` and
        ``stop_reason``.
    """
    from threadpoolctl import threadpool_limits

    from .cells import label_fit_cell
    from .pipeline import run_reconstruction

    start = time.perf_counter()
    d, n, p, seed = task["d"], task["n"], task["p"], task["seed"]
    out: dict[str, Any] = {"p": p, "seed": seed, "seed_index": task["seed_index"]}
    with threadpool_limits(limits=1, user_api="blas"):
        if p < n:
            fit = label_fit_cell(activation=task["activation"], d=d, n=n, p=p, seed=seed)
            out |= {"kind": "label_fit", "train_residual": fit["train_residual"]}
        else:
            run = run_reconstruction(activation=task["activation"], d=d, n=n, p=p, seed=seed,
                                     max_steps=task["max_steps"])
            si = run.matchings["sign_invariant"]
            close = si.per_sample < RHO_SUCCESS
            out |= {"kind": "reconstruction", "train_residual": run.train_residual,
                    "rho_abs": run.rho["abs"], "rho_signed": run.rho["signed"],
                    "rho_sign_invariant": si.rho, "loss": run.loss,
                    "recovered": int(np.sum(close)), "flipped": int(np.sum(close & si.flipped)),
                    "steps": int(run.result.steps), "stop_reason": str(run.result.stop_reason)}
    out["seconds"] = time.perf_counter() - start
    return out


def _median(values: Sequence[float]) -> float | None:
    return float(np.median(values)) if len(values) else None


def _empirical_law(size: CardSize, cells: Sequence[dict[str, Any]]) -> EmpiricalLaw:
    from .thresholds import label_threshold
    from .thresholds import fit_threshold

    d, n, seeds = size.law_d, size.law_n, size.law_seeds
    ps = sorted({c["p"] for c in cells})
    residual = np.full((seeds, len(ps)), np.nan)
    for c in cells:
        residual[c["seed_index"], ps.index(c["p"])] = c["train_residual"]
    label = label_threshold(ps, residual)
    points = []
    for p in ps:
        mine = [c for c in cells if c["p"] == p]
        rec = [c for c in mine if c["kind"] == "reconstruction"]
        points.append(LawPoint(
            p=p, p_over_dn=p / (d * n), p_over_n=p / n,
            max_train_residual=float(max(c["train_residual"] for c in mine)),
            median_rho_abs=_median([c["rho_abs"] for c in rec]),
            median_rho_sign_invariant=_median([c["rho_sign_invariant"] for c in rec]),
            success_abs=(float(np.mean([c["rho_abs"] < RHO_SUCCESS for c in rec]))
                         if rec else None),
            success_sign_invariant=(float(np.mean([c["rho_sign_invariant"] < RHO_SUCCESS
                                                   for c in rec])) if rec else None),
            recovered=sum(c.get("recovered", 0) for c in rec),
            flipped=sum(c.get("flipped", 0) for c in rec),
            median_steps=_median([c["steps"] for c in rec])))
    rec_points = [pt for pt in points if pt.success_abs is not None]
    p_rec = [pt.p for pt in rec_points]
    runs = [c for c in cells if c["kind"] == "reconstruction"]
    fit = fit_threshold([c["p"] for c in runs], [c["rho_abs"] < RHO_SUCCESS for c in runs])
    fit_si = fit_threshold([c["p"] for c in runs],
                           [c["rho_sign_invariant"] < RHO_SUCCESS for c in runs])
    star, status, star_si = fit.location, fit.status, fit_si.location
    above = [pt for pt in rec_points if pt.p_over_dn >= 1.0]
    return EmpiricalLaw(
        d=d, n=n, seeds=seeds, max_steps=size.max_steps, points=tuple(points),
        label_threshold_over_n=label["p_star"] / n,
        data_threshold_over_dn=star / (d * n),
        data_threshold_sign_invariant_over_dn=star_si / (d * n),
        data_threshold_status=status,
        data_threshold_interval_over_dn=tuple(x / (d * n) for x in fit.interval),
        recovered=sum(pt.recovered for pt in above), flipped=sum(pt.flipped for pt in above),
        cells=tuple(sorted(cells, key=lambda c: (c["p"], c["seed_index"]))))


def _antipodal_slope(activation: str) -> float | None:
    from .signs import antipodal_slope

    try:
        value = antipodal_slope(activation)
    except ZeroDivisionError:  # φ' = 0 almost everywhere (a step): no slope to compare
        return None
    return value if math.isfinite(value) else None


def _sign_findings(activation: str, hermite: Any, size: CardSize, seed: int,
                   law: EmpiricalLaw) -> SignFindings:
    from .signs import flipped_truth_losses
    from .pipeline import fit_model

    p = max(pt.p for pt in law.points)
    fitted = fit_model(activation=activation, n=size.law_n, p=p, d=size.law_d, seed=seed)
    losses = flipped_truth_losses(fitted.features, fitted.theta, fitted.X)
    symmetry = hermite.parity.numbers.get("symmetry")
    return SignFindings(
        hermite_criterion=hermite.sign_identifiability.holds, symmetry=symmetry,
        parity_predicts_lost=None if symmetry is None else symmetry in ("even", "odd"),
        loss_truth=float(losses["loss_truth"]), loss_one_flipped=float(losses["loss_one_flipped"]),
        loss_all_flipped=float(losses["loss_all_flipped"]),
        antipodal_slope=_antipodal_slope(activation), recovered=law.recovered,
        flipped=law.flipped)


# ---------------------------------------------------------------------------------------------
# The card
# ---------------------------------------------------------------------------------------------

def activation_card(activation: str, size: "str | CardSize" = "default", *, seed: int = 0,
                    method: str = "fast", workers: int | None = None,
                    progress: Callable[[int, int, str], None] | None = None,
                    memory_limit: float | str | None = None,
                    via: str = "memory_limit=", deadline: Any = None) -> ActivationCard:
    """Run every check of the package for one activation (see the module docstring).

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z`` (refused with :class:`~rftheory.errors.ActivationError`
        before any work when it does not parse).
    size : {"quick", "default", "full"} or CardSize
        How much to run (:data:`SIZES`; ``CardSize.replace`` for a custom one).
    seed : int
        Base seed: the concentration data and V, the Monte Carlo V, and the law's cells
        (seed + s for seed index s: V, data, labels, the optimiser's start).
    method : {"fast", "mpmath", "exact"}
        Hermite method of the spectrum and the verdicts (:func:`rftheory.hermite.hermite_coefficients`).
    workers : int, optional
        Processes for the law's cells (default min(2, CPUs)); the numbers never depend on it.
    progress : callable, optional
        ``progress(done, total, message)`` after each step (a tqdm bar in ``rftheory report``).
    memory_limit : optional
        Limit of the memory check (:func:`rftheory.budget.check`) of :func:`card_estimate`.
    via : str, default "memory_limit="
        How the message names ``memory_limit`` (the CLI: ``"--memory-limit"``).
    deadline : rftheory.deadline.Deadline, optional
        Where the card stops: its law cells are run by
        :func:`rftheory.runtime.run_tasks`, which raises
        :class:`~rftheory.runtime.TimeLimitReached` when it passes (no card is made).

    Returns
    -------
    ActivationCard
        Everything measured, with the cost and the environment.

    Raises
    ------
    RFTheoryError
        Bad activation, seed or size; :class:`~rftheory.errors.ResourceLimitError` when the card
        cannot fit in memory.

    Notes
    -----
    Accuracy is each section's own: Hermite coefficients to their quadrature error estimates
    (``hermite.errors``, ~1e-15 for the registry at ``fast``); the kernel series to its rigorous
    truncation bound; the Monte Carlo K(t) to its standard error; the concentration slope to the
    standard error over the draws of V; the law's success probabilities are fractions of
    ``size.law_seeds`` seeds (steps of 1/seeds), and its thresholds are the optimiser's at its step
    budget — upper bounds on the information-theoretic ones. Same seed, size and machine: the
    same numbers (timings aside); across machines the reconstructions may differ in their last
    bits and, near the threshold, in which seeds succeed (README, "Determinism").
    """
    from . import budget
    from .activations import get_activation
    from .runtime import default_workers, environment, run_tasks, source_digests
    from .deadline import NO_DEADLINE
    from .concentration import measure_concentration
    from .hermite import check_double_precision
    from .verdicts import activation_report

    if isinstance(size, str):
        if size not in SIZES:
            raise RFTheoryError(f"unknown size {size!r}; choose from {', '.join(SIZES)}")
        size = SIZES[size]
    if not isinstance(size, CardSize):
        raise RFTheoryError(f"size must be a name or a CardSize, got {type(size).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise RFTheoryError(f"seed must be a non-negative integer, got {seed!r}")
    seed = int(seed)
    act = get_activation(activation)  # refuse a bad expression before anything runs
    check_double_precision(act)  # ... or one double precision cannot carry (before progress)
    workers = default_workers(workers)
    tasks = _law_tasks(activation, size, seed)
    deadline = NO_DEADLINE if deadline is None else deadline
    estimate = budget.check(card_estimate(activation, size, seed=seed, workers=workers),
                            memory_limit=memory_limit, via=via)
    total = 2 + len(size.kernel_p) + len(tasks) + 1
    done = [0]

    def step(message: str) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total, message)

    sources = source_digests()
    seconds: dict[str, float] = {}
    start = t0 = time.perf_counter()
    hermite = activation_report(act, order=size.order, method=method,
                                time_budget=size.time_budget)
    seconds["hermite_and_verdicts"] = time.perf_counter() - t0
    step("Hermite coefficients and verdicts")

    t0 = time.perf_counter()
    curve = kernel_curve(activation, size.kernel_d, points=size.mc_points, p=size.mc_p, seed=seed)
    seconds["kernel_curve"] = time.perf_counter() - t0
    step(f"K(t): series against Monte Carlo with p = {size.mc_p}")

    t0 = time.perf_counter()
    concentration = measure_concentration(
        activation, size.kernel_d, size.kernel_n, list(size.kernel_p), seed=seed,
        reps=size.kernel_reps, progress=lambda line: step("concentration: " + line.split(": ", 1)[-1]),
        deadline=deadline)
    seconds["concentration"] = time.perf_counter() - t0

    t0 = time.perf_counter()

    def finished(_: int, cell: dict[str, Any]) -> None:
        what = (f"ρ = {cell['rho_abs']:.1e}, {cell['steps']} steps" if cell["kind"] == "reconstruction"
                else f"residual {cell['train_residual']:.1e}")
        step(f"law: p = {cell['p']}, seed {cell['seed']}: {what}")

    # the longest first: reconstructions around p = dn run to their step budget
    def cost_rank(i: int) -> int:
        t = tasks[i]
        if t["p"] < t["n"]:
            return 2
        return 0 if 0.5 <= t["p"] / (t["d"] * t["n"]) <= 4.0 else 1

    order = sorted(range(len(tasks)), key=cost_rank)
    cells = run_tasks([partial(law_cell, t) for t in tasks], workers=workers, order=order,
                      on_result=finished, deadline=deadline)
    law = _empirical_law(size, cells)
    seconds["empirical_law"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    sign = _sign_findings(activation, hermite, size, seed, law)
    seconds["sign_check"] = time.perf_counter() - t0
    step("sign check: flipped-truth losses and K'(-1)/K'(1)")
    seconds["total"] = time.perf_counter() - start

    cost = {"estimate": {"job": estimate.job, "peak_bytes": estimate.peak_bytes,
                         "workers": workers,
                         "reconstructions": sum(t["p"] >= t["n"] for t in tasks),
                         "max_steps": size.max_steps},
            "seconds": {k: round(v, 3) for k, v in seconds.items()}}
    return ActivationCard(activation=str(activation), expression=str(act.expr), seed=seed,
                          size=size, hermite=hermite, sign=sign, kernel=curve,
                          concentration=concentration, law=law, cost=cost,
                          environment=environment() | {"sources": sources})


# ---------------------------------------------------------------------------------------------
# Output: numbers, table, file names, figure
# ---------------------------------------------------------------------------------------------

def card_numbers(card: ActivationCard) -> dict[str, Any]:
    """The card's headline numbers as a flat dict (the table, the figure's text, tests).

    Parameters
    ----------
    card : ActivationCard
        The card.

    Returns
    -------
    dict
        Verdicts, Lipschitz constant, non-linear mass, vanishing orders, Parseval tail, sign
        findings, kernel and concentration numbers, the law's thresholds and the total seconds.
    """
    c = card.concentration
    verdicts = {k: v.holds for k, v in card.verdicts.items()}
    lipschitz = card.verdicts["lipschitz"].numbers.get("constant")
    return {
        "activation": card.activation, "expression": card.expression,
        "verdicts": verdicts,
        "lipschitz_constant": lipschitz,
        "nonlinear_mass": card.verdicts["nonlinearity"].numbers.get(
            "nonlinear_mass", card.verdicts["nonlinearity"].numbers.get("sum_mu_k_squared_2_to_K")),
        "vanishing_orders": sorted(set(card.hermite.parity.numbers.get("proven_zero", []))
                                   | set(card.hermite.parity.numbers.get("numerically_zero", []))
                                   | set(card.hermite.parity.numbers.get("exactly_zero", []))),
        "parseval_tail": card.hermite.tail_mass,
        "symmetry": card.sign.symmetry,
        "loss_one_flipped": card.sign.loss_one_flipped,
        "antipodal_slope": card.sign.antipodal_slope,
        "flipped_among_recovered": [card.sign.flipped, card.sign.recovered],
        "kernel_mc_max_z": card.kernel.max_z,
        "lambda_min_kernel": c["lambda_min_kernel"],
        "hermite_bound_k0": c["hermite_bound_k0"],
        "hermite_bound_k2": c["hermite_bound_k2"],
        "concentration_slope": c["slope"],
        "concentration_slope_se": c["slope_standard_error"],
        "label_threshold_over_n": card.law.label_threshold_over_n,
        "data_threshold_over_dn": card.law.data_threshold_over_dn,
        "data_threshold_interval_over_dn": list(card.law.data_threshold_interval_over_dn),
        "data_threshold_sign_invariant_over_dn": card.law.data_threshold_sign_invariant_over_dn,
        "seconds": card.cost["seconds"]["total"],
    }


def card_stem(activation: str) -> str:
    """A file name for an activation's card: the registry name, or ``expr-<8 hex digits>``.

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z``.

    Returns
    -------
    str
        ``report_<name>`` (lower case) or ``report_expr-`` and 8 hex digits of the expression's
        SHA-256.

    Examples
    --------
    >>> card_stem("relu+tanh"), card_stem("relu(z) + 0.5*tanh(z)")
    ('report_relu+tanh', 'report_expr-30cba3e4')
    """
    from .activations import ACTIVATIONS

    key = activation.strip()
    if key.lower() in ACTIVATIONS:
        return f"report_{key.lower()}"
    return "report_expr-" + hashlib.sha256(key.encode()).hexdigest()[:8]


def _count(k: int, noun: str) -> str:
    return f"{k} {noun}" + ("" if k == 1 else "s")


def _yes(value: bool | None) -> str:
    return {True: "yes", False: "no", None: "undetermined"}[value]


def _g(value: Any, spec: str = ".3g") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return format(value, spec)


def _verdict_lines(card: ActivationCard) -> list[tuple[str, str]]:
    """(label, text) of every verdict and finding, short enough for the page."""
    v, s, c, law = card.verdicts, card.sign, card.concentration, card.law
    num = card_numbers(card)
    lip = v["lipschitz"]
    if lip.holds:
        lip_text = f"yes, sup|φ'| = {_g(lip.numbers.get('constant'), '.6g')} [{lip.basis}]"
    else:
        lip_text = f"{_yes(lip.holds)} [{lip.basis}]: {lip.summary.split(': ', 1)[-1]}"
    nl = v["nonlinearity"]
    mass = num["nonlinear_mass"]
    par = v["parity"]
    rules = par.numbers.get("rules") or []
    zeros = num["vanishing_orders"]
    symmetry = {"even": "even", "odd": "odd", "neither": "neither even nor odd"}.get(
        par.numbers.get("symmetry"), "of undetermined parity")
    zero_text = (", ".join(map(str, zeros[:12])) + (" …" if len(zeros) > 12 else "")) if zeros else "none"
    sign = v["sign_identifiability"]
    witness = sign.numbers.get("witness_order")
    paper = (f"{_yes(sign.holds)}" + (f" (μ_{witness} = {sign.numbers['witness_value']:.4g})"
                                      if witness is not None else "")
             + f" [{sign.basis}]")
    if s.parity_predicts_lost is None:
        found = "undetermined (parity unknown)"
    else:
        found = ("signs LOST: φ is " + s.symmetry + ", so φ(−Vx) = ±φ(Vx)"
                 if s.parity_predicts_lost else "signs kept: φ has both an even and an odd part")
    return [
        ("Lipschitz", lip_text),
        ("non-linear", f"{_yes(nl.holds)}, Σ_k≥2 μ_k² = {_g(mass, '.6g')} [{nl.basis}]"),
        ("parity", f"φ is {symmetry}; zero μ_k (k ≤ {card.hermite.order}): "
                   f"{zero_text}" + (f"; {rules[0]}" if rules else "")),
        ("sign (paper)", f"some odd μ_k ≠ 0, k ≥ 3: {paper}"),
        ("sign (found)", f"{found}; L(one x_i → −x_i) = {_g(s.loss_one_flipped, '.2g')}, "
                           f"K'(−1)/K'(1) = {_g(s.antipodal_slope, '.2f')}, "
                           f"flipped among recovered: {s.flipped}/{s.recovered}"),
        ("kernel", f"λ_min(K) = {_g(c['lambda_min_kernel'], '.4g')} ≥ Hermite bound "
                   f"{_g(c['hermite_bound_k0'], '.4g')} (k ≥ 0), {_g(c['hermite_bound_k2'], '.4g')} "
                   f"(k ≥ 2); slope {_g(c['slope'], '.3f')} ± {_g(c['slope_standard_error'], '.2f')} "
                   f"(−1/2 expected); MC vs series: max z = {card.kernel.max_z:.2f}"),
        ("law", f"d = {law.d}, n = {law.n}, {_count(law.seeds, 'seed')}: p*_label/n = "
                f"{_g(law.label_threshold_over_n, '.2f')}, p*_data/(dn) = "
                f"{_g(law.data_threshold_over_dn, '.2f')} fitted, 95 % ["
                f"{_g(law.data_threshold_interval_over_dn[0], '.2f')}, "
                f"{_g(law.data_threshold_interval_over_dn[1], '.2f')}]"
                + ("" if law.data_threshold_status == "ok" else f" ({law.data_threshold_status})")
                + f" (sign-invariant ρ: {_g(law.data_threshold_sign_invariant_over_dn, '.2f')}),"
                f" budget {law.max_steps} steps"),
    ]


def card_table(card: ActivationCard) -> str:
    """The card as text: the verdicts and findings, the coefficient table, the law's table.

    Parameters
    ----------
    card : ActivationCard
        The card.

    Returns
    -------
    str
        The text, several lines.
    """
    from .output import format_table

    h = card.hermite
    lines = [f"report card: {card.activation}   φ(z) = {card.expression}",
             f"size {card.size.name}, seed {card.seed}, Hermite method {h.method}, "
             f"orders 0..{h.order}"]
    width = max(len(label) for label, _ in _verdict_lines(card))
    lines += [f"{label:>{width}}: {text}" for label, text in _verdict_lines(card)]
    shown = min(h.order, 12)
    lines.append(format_table(["k", "μ_k", "error"],
                              [(k, f"{h.coefficients[k]:.12g}", f"{h.errors[k]:.1e}")
                               for k in range(shown + 1)])
                 + (f"\n(… to k = {h.order}; all in the JSON)" if h.order > shown else ""))
    tail = "unknown" if h.tail_mass is None else f"{h.tail_mass:.3e} ± {h.tail_mass_error:.1e}"
    lines.append(f"Parseval tail E[φ²] − Σ_{{k≤{h.order}}} μ_k² = {tail}")
    rows = [(pt.p, f"{pt.p_over_dn:.2f}", f"{pt.p_over_n:.2f}", f"{pt.max_train_residual:.1e}",
             _g(pt.median_rho_abs, ".2e"), _g(pt.success_abs, ".2f"),
             _g(pt.success_sign_invariant, ".2f"), f"{pt.flipped}/{pt.recovered}")
            for pt in card.law.points]
    lines.append(format_table(["p", "p/(dn)", "p/n", "max residual", "median ρ", "P(ρ<0.1)",
                               "P(ρ_si<0.1)", "flipped/recovered"], rows))
    sec = card.cost["seconds"]
    lines.append(f"cost: {sec['total']:.1f} s wall (Hermite {sec['hermite_and_verdicts']:.1f}, "
                 f"kernel {sec['kernel_curve'] + sec['concentration']:.1f}, law "
                 f"{sec['empirical_law']:.1f}, sign {sec['sign_check']:.1f}); peak memory "
                 f"declared ~{card.cost['estimate']['peak_bytes'] / 2**20:.0f} MiB")
    return "\n".join(lines)


def _spectrum_panel(ax: Any, card: ActivationCard, colours: Sequence[str]) -> None:
    h = card.hermite
    mu = np.abs(np.asarray(h.coefficients, dtype=np.float64))
    err = np.asarray(h.errors, dtype=np.float64)
    ks = np.arange(mu.size)
    zero = set(card_numbers(card)["vanishing_orders"])
    shown = np.array([k not in zero and np.isfinite(mu[k]) and mu[k] > 0 for k in ks])
    positive = np.concatenate([mu[shown], err[np.isfinite(err) & (err > 0)]])
    floor = float(np.min(positive)) / 10 if positive.size else 1e-17
    ax.semilogy(ks[shown], mu[shown], "o", color=colours[0], ms=3, label=r"$|\mu_k|$")
    finite = np.isfinite(err) & (err > 0)
    if finite.any():
        ax.semilogy(ks[finite], err[finite], "--", color="0.55", lw=0.8, label="error estimate")
    if h.second_moment is not None:
        tail = h.second_moment - np.cumsum(np.where(np.isfinite(mu), mu, 0.0) ** 2)
        ok = tail > max(h.tail_mass_error, floor)
        if ok.any():
            ax.semilogy(ks[ok], tail[ok], "-", color=colours[2], lw=0.9,
                        label=r"Parseval tail beyond $k$")
    if zero:
        ax.plot(sorted(zero), [floor] * len(zero), "x", color=colours[1], ms=4,
                label=r"$\mu_k = 0$")
    ax.set_xlabel(r"Hermite order $k$")
    ax.set_ylabel(r"$|\mu_k|$")
    ax.set_title(f"(a) Hermite spectrum ({h.method}"
                 + (f", {h.dps} digits" if h.dps else "") + ")")
    ax.legend(loc="center right", fontsize=6)


def _kernel_panel(ax: Any, card: ActivationCard, colours: Sequence[str]) -> None:
    k = card.kernel
    t = np.asarray(k.t)
    ax.plot(t, k.series, "-", color=colours[0], label=r"series $\sum_k \mu_k^2 t^k$")
    if k.closed_form is not None:
        ax.plot(t, k.closed_form, ":", color="k", lw=1.0, label="closed form")
    ax.errorbar(t, k.monte_carlo, yerr=2 * np.asarray(k.monte_carlo_se), fmt="o", ms=2.2,
                color=colours[1], elinewidth=0.6, label=rf"Monte Carlo $\Phi\Phi^\top/p$, $p={k.p}$")
    ax.set_xlabel(r"$t = \langle x, y\rangle / d$")
    ax.set_ylabel(r"$K(t)$")
    ax.set_title(f"(b) RF kernel (bars: 2 s.e.; max z = {k.max_z:.1f})")
    ax.legend(loc="upper left", fontsize=6)


def _concentration_panels(ax_err: Any, ax_lam: Any, card: ActivationCard,
                          colours: Sequence[str]) -> None:
    c = card.concentration
    p = np.asarray(c["p"], dtype=float)
    err = np.asarray(c["op_error"])
    ax_err.errorbar(p, err.mean(axis=1), yerr=err.std(axis=1) if err.shape[1] > 1 else None,
                    fmt="o-", ms=3, color=colours[0], label="measured")
    ax_err.plot(p, err.mean(axis=1)[0] * (p / p[0]) ** -0.5, "k--", lw=0.8,
                label=r"$\propto p^{-1/2}$")
    ax_err.set_xscale("log")
    ax_err.set_yscale("log")
    ax_err.set_xlabel(r"$p$")
    ax_err.set_ylabel(r"$\|\Phi\Phi^\top/p - K\|_{\mathrm{op}}$")
    slope = "—" if c["slope"] is None else f"{c['slope']:.3f}"
    ax_err.set_title(f"(c) concentration, n = {c['n']}, d = {c['d']}: slope {slope}")
    ax_err.legend(loc="lower left", fontsize=6)
    lam = np.asarray(c["lambda_min_empirical"])
    ax_lam.errorbar(p, lam.mean(axis=1), yerr=np.asarray(c["clt_sd"]).mean(axis=1), fmt="o-",
                    ms=3, color=colours[0], label=r"$\lambda_{\min}(\Phi\Phi^\top)/p$")
    ax_lam.axhline(c["lambda_min_kernel"], color="k", lw=0.9, label=r"$\lambda_{\min}(K)$")
    ax_lam.axhline(c["hermite_bound_k0"], color=colours[2], ls="--", lw=0.9,
                   label=r"Hermite bound, $k\geq 0$")
    ax_lam.axhline(c["hermite_bound_k2"], color=colours[4], ls=":", lw=0.9,
                   label=r"Hermite bound, $k\geq 2$")
    ax_lam.set_xscale("log")
    ax_lam.set_xlabel(r"$p$")
    ax_lam.set_ylabel(r"$\lambda_{\min}$")
    ax_lam.set_title(r"(d) $\lambda_{\min}(K)$ and its lower bound")
    ax_lam.legend(loc="best", fontsize=6)


def _log_ticks_125(ax: Any) -> None:
    """Labelled ticks at 1, 2, 5 × 10^k on a log y axis that spans about a decade."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0), numticks=10))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_locator(NullLocator())


def _ratio_ticks(ax: Any, values: Sequence[float]) -> None:
    """Ticks at the grid's own values of a log axis (a short grid has no decade inside)."""
    from matplotlib.ticker import FixedLocator, NullLocator

    ticks = sorted({float(f"{v:.2g}") for v in values})
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{v:g}" for v in ticks])


def _law_panels(ax_rec: Any, ax_fit: Any, card: ActivationCard, colours: Sequence[str]) -> None:
    from .plotting import SYMBOLS

    law = card.law
    rec = [pt for pt in law.points if pt.success_abs is not None]
    x = [pt.p_over_dn for pt in rec]
    ax_rec.plot(x, [pt.success_abs for pt in rec], "o-", color=colours[0], ms=3,
                label=rf"$P(\rho < {RHO_SUCCESS:g})$, official $\rho$")
    ax_rec.plot(x, [pt.success_sign_invariant for pt in rec], "s--", color=colours[1], ms=2.5,
                label=rf"$P(\rho < {RHO_SUCCESS:g})$, up to sign")
    flips = [pt.flipped / pt.recovered if pt.recovered else np.nan for pt in rec]
    ax_rec.plot(x, flips, "^:", color=colours[3], ms=3, label="flipped / recovered points")
    ax_rec.axhline(0.5, color="0.6", lw=0.6, ls="--")
    ax_rec.axvline(1.0, color="0.6", lw=0.6, ls=":")
    ax_rec.set_xscale("log")
    ax_rec.set_ylim(-0.05, 1.05)
    ax_rec.set_xlabel(SYMBOLS["p_over_dn"])
    ax_rec.set_ylabel("fraction of seeds / points")
    star = law.data_threshold_over_dn
    ax_rec.set_title(f"(e) reconstruction, d = {law.d}, n = {law.n}, {_count(law.seeds, 'seed')}: "
                     + (rf"fitted $p^*/(dn)$ = {star:.2f}" if math.isfinite(star)
                        else "threshold not located"))
    ax_rec.legend(loc="upper left", fontsize=6)
    floor = 1e-17
    for c in law.cells:
        ax_fit.scatter([c["p"] / law.n], [max(c["train_residual"], floor)], s=6, alpha=0.45,
                       color=colours[0], linewidths=0)
    ax_fit.plot([pt.p_over_n for pt in law.points],
                [max(pt.max_train_residual, floor) for pt in law.points], "-", color=colours[0],
                lw=0.9, label="largest over seeds")
    ax_fit.axvline(1.0, color="0.6", lw=0.6, ls=":")
    ax_fit.axhline(1e-6, color="0.6", lw=0.6, ls="--")
    ax_fit.set_xscale("log")
    ax_fit.set_yscale("log")
    ax_fit.set_xlabel(SYMBOLS["p_over_n"])
    ax_fit.set_ylabel(SYMBOLS["train_residual"])
    ax_fit.set_title(f"(f) label fit: " + (rf"$p^*_{{\rm label}}/n$ = {law.label_threshold_over_n:.2f}"
                                             if math.isfinite(law.label_threshold_over_n)
                                             else "labels never fit"))
    ax_fit.legend(loc="lower left", fontsize=6)


def plot_card(card: ActivationCard, stem: str | Path) -> list[Path]:
    """Draw the card on one page (6.9 in wide: a two-column paper's text width); PNG + PDF.

    Top: the activation, the verdicts and findings with their numbers. Then (a) the Hermite
    spectrum (log scale, error estimates, vanishing coefficients as crosses on the bottom edge,
    the Parseval tail), (b) K(t): series, closed form, Monte Carlo, (c) ‖ΦΦᵀ/p − K‖_op against p
    with the p^{-1/2} line, (d) λ_min(ΦΦᵀ)/p against λ_min(K) and its Hermite lower bounds,
    (e) success probability and flipped fraction against p/(dn), (f) train residual against p/n.
    Drawn inside :func:`rftheory.plotting.paper_style`; returns the paths written.

    Parameters
    ----------
    card : ActivationCard
        The card.
    stem : str or Path
        Path of the figure without its suffix.

    Returns
    -------
    list of Path
        The files written (PNG and PDF).
    """
    import matplotlib

    matplotlib.use("Agg")
    from .output import save_figure, sparse_log_ticks
    from .plotting import PALETTE, paper_figure, paper_style

    import matplotlib.pyplot as plt

    # Fixed margins instead of the style's constrained layout and tight bounding box: on a
    # page of six panels and a text block those re-measure every label several times (most of
    # the drawing time).
    fixed = {"figure.constrained_layout.use": False, "savefig.bbox": "standard"}
    with paper_style(), plt.rc_context(fixed):
        fig, axes = paper_figure(2, height=9.2, nrows=4, ncols=2, gridspec_kw={
            "height_ratios": [0.8, 1, 1, 1], "left": 0.085, "right": 0.985, "top": 0.985,
            "bottom": 0.045, "hspace": 0.42, "wspace": 0.26})
        gs = axes[0, 0].get_gridspec()
        for ax in axes[0]:
            ax.remove()
        text_ax = fig.add_subplot(gs[0, :])
        text_ax.axis("off")
        env = card.environment
        text_ax.text(0.0, 1.0, rf"Report card: $\varphi(z)$ = {card.expression}"
                     + (f"   [{card.activation}]" if card.activation != card.expression else ""),
                     fontsize=9.5, weight="bold", va="top", transform=text_ax.transAxes)
        text_ax.text(0.0, 0.89, f"size {card.size.name}, seed {card.seed}; rftheory "
                     f"{env.get('rftheory')}, numpy {env.get('numpy')}, V {env.get('v_definition')}; "
                     f"{card.cost['seconds']['total']:.0f} s", fontsize=6.5, color="0.35",
                     va="top", transform=text_ax.transAxes)
        y, step = 0.78, 0.082
        for label, text in _verdict_lines(card):
            wrapped = textwrap.wrap(text, width=104)
            text_ax.text(0.0, y, label, fontsize=6.8, weight="bold", va="top",
                         transform=text_ax.transAxes)
            text_ax.text(0.13, y, "\n".join(wrapped), fontsize=6.8, va="top", linespacing=1.25,
                         transform=text_ax.transAxes)
            y -= step * len(wrapped)
        _spectrum_panel(axes[1, 0], card, PALETTE)
        _kernel_panel(axes[1, 1], card, PALETTE)
        _concentration_panels(axes[2, 0], axes[2, 1], card, PALETTE)
        _law_panels(axes[3, 0], axes[3, 1], card, PALETTE)
        for ax in axes[1:].ravel():
            sparse_log_ticks(ax)
        _log_ticks_125(axes[2, 0])
        _ratio_ticks(axes[3, 0], [pt.p_over_dn for pt in card.law.points
                                  if pt.success_abs is not None])
        return save_figure(fig, stem, dpi=200)
