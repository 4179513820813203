"""Claim "and beyond": the law of data reconstruction holds for two-layer networks trained by GD.

For f(x) = W₂φ(W₁x) trained by full-batch gradient descent, the change of the last layer
ΔW₂ = W₂ − W₂(0) lies (exactly when W₁ is frozen, approximately when W₁ also trains) in the span
of the per-sample last-layer gradients φ(W₁x_i). So the training set can be recovered from
(W₁, ΔW₂) by the projection loss, and the law is p^(L) ≳ dn with p^(L) = k·width the number of
last-layer parameters.

The check sweeps p^(L)/(dn) for several training setups (losses, frozen or trained first layer,
k = 1 or several outputs), seeds, and two data sets — uniform points on the √d-sphere and the 8×8
digits images shipped with scikit-learn — trains each network (:mod:`rftheory.twolayer`),
reconstructs with :func:`rftheory.reconstruct.reconstruct` from θ = ΔW₂ᵀ and the features at the
trained W₁, and measures the official ρ (:mod:`rftheory.metrics`).

Outputs are counted by the rank r of θ = ΔW₂ᵀ ∈ R^{width×k} (:func:`rftheory.rank.numerical_rank`):
θ gives r(width − n) equations, not k(width − n), and r ≤ min(n, k) (≤ k − 1 for the
cross-entropy from W₂(0) = 0). Whether the successes collapse in r·width/(dn) rather than in
k·width/(dn) or width/(dn) is tested per data set over every run (:func:`rank_collapse`).

Verdict (falsifiable, per setup and data set): the law holds when (i) reconstruction fails
(median ρ over seeds ≥ :data:`RHO_SUCCESS`) at every grid point where r·width/(dn) ≤ 1 for
every seed (for k = 1: p^(L)/(dn) ≤ 1), where the unknowns outnumber the equations, and (ii) it
succeeds at the largest ratio of the grid. Separately, ``counted_by_rank`` holds when on every
data set r·width/(dn) fits the runs within ΔAIC 2 of the best abscissa and k·width/(dn) does not.
The claim is supported when the law holds for every setup; the result also reports it for the
single-output (k = 1) setups alone and, per setup, the measured threshold: the smallest grid
ratio from which every larger ratio succeeds, to compare with the random-features control
``rf_gd`` (first layer frozen).

Run: ``python -m rftheory.claims.twolayer_law [--quick]`` or ``rftheory verify twolayer``.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rftheory.deadline import Deadline
from rftheory.claims._common import (ClaimConfig, fit_text, number_text, TaskProgress, check_activations, default_workers,
                                     main_for, run_tasks)
import rftheory.metrics as _metrics
from rftheory.errors import RFTheoryError
from rftheory.output import format_table, save_figure

CLAIM = "twolayer_law"

#: A reconstruction succeeds when ρ (official, Hungarian on |x|) is below this. Failed runs sit at
#: ρ ≈ 0.3–0.7 (ρ of random points on the sphere ≈ 0.6); successful ones at 1e-4–1e-2, the
#: residual error coming from how far ΔW₂ is from the span at the trained W₁.
RHO_SUCCESS = _metrics.RHO_SUCCESS_TWOLAYER

#: Training setups: (loss, train the first layer, W₂(0), stop when the training loss ≤ this).
#: W₂(0) = 0 unless stated: the first layer then only starts to move once W₂ has grown, which
#: keeps ΔW₂ closest to the span of the final features; ``square_w2_normal`` uses the paper's
#: initialisation W₂(0) ~ N(0, 1/width) instead. The square loss is trained to interpolation; the
#: logistic and cross-entropy losses have no finite minimiser and stop at a mean loss of 1e-2
#: (every sample classified with margin).
SETUPS: dict[str, dict[str, Any]] = {
    "rf_gd": {"loss": "square", "train_first_layer": False, "last_layer_init": "zero",
              "tol": 1e-16, "label": "W₁ frozen (RF by GD), square"},
    "square": {"loss": "square", "train_first_layer": True, "last_layer_init": "zero",
               "tol": 1e-16, "label": "both layers, square, k = 1"},
    "square_w2_normal": {"loss": "square", "train_first_layer": True,
                         "last_layer_init": "normal", "tol": 1e-16,
                         "label": "both layers, square, k = 1, W₂(0) ~ N(0, 1/width)"},
    "logistic": {"loss": "logistic", "train_first_layer": True, "last_layer_init": "zero",
                 "tol": 1e-2, "label": "both layers, logistic, k = 1"},
    "square_onehot": {"loss": "square", "train_first_layer": True, "last_layer_init": "zero",
                      "tol": 1e-16, "label": "both layers, square on one-hot, k classes"},
    "cross_entropy": {"loss": "cross_entropy", "train_first_layer": True,
                      "last_layer_init": "zero", "tol": 1e-2,
                      "label": "both layers, cross-entropy, k classes"},
    # Control for the k-class runs: same loss and width, W₁ frozen (ΔW₂ exactly in the span), so
    # a failure here is the optimiser's, not the moving first layer's.
    "rf_gd_cross_entropy": {"loss": "cross_entropy", "train_first_layer": False,
                            "last_layer_init": "zero", "tol": 1e-2,
                            "label": "W₁ frozen, cross-entropy, k classes"},
}

#: Data sets: synthetic sphere data (d, n small) and the digits images (d = 64 fixed).
DATASETS: dict[str, dict[str, int]] = {
    "sphere": {"d": 8, "n": 8, "classes": 3},
    "digits": {"d": 64, "n": 5, "classes": 10},
}

#: Over-complete rounds of the reconstruction. With a trained first layer the loss cannot reach
#: the 1e-10 tolerance (ΔW₂ is only nearly in the span), so every run ends by stalling or by the
#: budget; measured on 8 successful cases, rounds 4–10 never changed ρ and cost ~40% of the time.
MAX_ROUNDS = 3

#: Most GD steps per training run (the tolerances above are normally reached far earlier).
TRAIN_STEPS = 20000
_STREAM_CLASSES = 2**41 + 2


def _labels(dataset: str, setup: str, n: int, seed: int, ds: Any) -> tuple[np.ndarray, int]:
    """Training labels for one run and the number of outputs k."""
    from rftheory.data import gaussian_labels, sign_labels

    loss = SETUPS[setup]["loss"]
    k_classes = DATASETS[dataset]["classes"]
    if dataset == "digits":
        classes = np.asarray(ds.classes, dtype=np.int64)
    else:  # random classes for synthetic data, from their own seeded stream
        classes = np.random.default_rng([seed, _STREAM_CLASSES]).integers(0, k_classes, n)
    if setup == "square_onehot":
        return np.eye(k_classes)[classes], k_classes
    if loss == "square":
        return gaussian_labels(n, seed), 1
    if loss == "logistic":
        if dataset == "digits":  # parity of the digit: a real binary task
            return np.where(classes % 2 == 0, 1.0, -1.0), 1
        return sign_labels(n, seed), 1
    return classes, k_classes


def run_case(dataset: str, setup: str, ratio: float, seed: int, *, activation: str,
             max_steps: int, max_rounds: int = MAX_ROUNDS) -> dict[str, Any]:
    """Train one network at p^(L) ≈ ratio·dn, reconstruct its training set, measure ρ.

    Parameters
    ----------
    dataset : str
        One of :data:`DATASETS`.
    setup : str
        One of :data:`SETUPS` (which layers train, how many outputs k).
    ratio : float
        The target p^(L)/(dn), p^(L) = k·width.
    seed : int
        Seed of the data, the initialisation and the reconstruction's starts.
    activation : str
        The network's activation.
    max_steps : int
        Steps of the reconstruction per round.
    max_rounds : int
        Restarts of the reconstruction from new starts while it has not succeeded.

    Returns
    -------
    dict
        JSON-serialisable: the sizes, ρ, the training loss and the span residual of ΔW₂ at the
        training data.
    """
    from threadpoolctl import threadpool_limits

    from rftheory.data import load_dataset
    from rftheory.metrics import rho
    from rftheory.projection import projection_loss
    from rftheory.rank import numerical_rank, singular_values
    from rftheory.reconstruct import reconstruct
    from rftheory.twolayer import train_two_layer

    spec = DATASETS[dataset]
    cfg = SETUPS[setup]
    t0 = time.perf_counter()
    # These problems are tiny (n̂·d ≤ a few hundred unknowns): multi-threaded BLAS only adds
    # synchronisation (measured ~10× slower per optimiser step on 2 busy cores).
    with threadpool_limits(limits=1, user_api="blas"):
        ds = load_dataset(dataset, spec["n"], d=spec["d"] if dataset == "sphere" else None,
                          rng=seed)
        X = ds.X
        n, d = X.shape
        Y, k = _labels(dataset, setup, n, seed, ds)
        width = max(1, round(ratio * d * n / k))
        trained = train_two_layer(
            X, Y, width=width, activation=activation, loss=cfg["loss"],
            train_first_layer=cfg["train_first_layer"], steps=TRAIN_STEPS, tol=cfg["tol"],
            seed=seed, last_layer_init=cfg["last_layer_init"],
            n_classes=k if cfg["loss"] == "cross_entropy" else None)
        features, theta = trained.features(), trained.theta
        # r = numerical rank of θ ∈ R^{width×k} (singular values above max(width, k)·eps·σ_max,
        # the SVD's rounding level): the count gives r(p − n) equations, not k(p − n)
        theta_sv = singular_values(np.asarray(theta))
        theta_rank = numerical_rank(np.asarray(theta))
        # How far ΔW₂ is from the span at the true data: the loss the attack can reach at best.
        span_residual = projection_loss(features, X, theta, gradient=False).loss
        rec = reconstruct(features, theta, n, seed=seed, max_steps=max_steps,
                          max_rounds=max_rounds)
        X_hat = np.asarray(rec.X_hat)
        rho_abs = rho(X, X_hat, "abs")
        rho_sign = rho(X, X_hat, "sign_invariant")
    p_last = k * width
    return {
        "dataset": dataset, "setup": setup, "loss": cfg["loss"],
        "train_first_layer": cfg["train_first_layer"], "activation": activation,
        "d": d, "n": n, "k": k, "width": width, "p_last": p_last,
        "ratio": p_last / (d * n), "ratio_nominal": ratio, "seed": seed,
        "theta_rank": theta_rank, "theta_singular_values": [float(v) for v in theta_sv],
        "rank_ratio": theta_rank * width / (d * n),
        "train_steps": trained.steps, "train_loss": trained.train_loss,
        "train_accuracy": trained.train_accuracy, "train_stop": trained.stop_reason,
        "first_layer_change": trained.first_layer_change, "span_residual": span_residual,
        "recon_loss": rec.loss, "recon_steps": rec.steps, "recon_rounds": rec.rounds,
        "recon_stop": rec.stop_reason,
        "rho": rho_abs, "rho_sign_invariant": rho_sign, "success": rho_abs < RHO_SUCCESS,
        "seconds": time.perf_counter() - t0,
    }


def _aggregate(cases: list[dict[str, Any]], ratios: tuple[float, ...]) -> dict[str, Any]:
    """Per (data set, setup): medians over seeds per ratio and the measured threshold."""
    out: dict[str, Any] = {}
    keys = sorted({(c["dataset"], c["setup"]) for c in cases})
    for dataset, setup in keys:
        rows = []
        for r in ratios:
            sel = [c for c in cases if c["dataset"] == dataset and c["setup"] == setup
                   and c["ratio_nominal"] == r]
            if not sel:
                continue
            rows.append({
                "ratio": statistics.median(c["ratio"] for c in sel), "ratio_nominal": r,
                "median_rho": statistics.median(c["rho"] for c in sel),
                "success_rate": sum(c["success"] for c in sel) / len(sel),
                "median_span_residual": statistics.median(c["span_residual"] for c in sel),
                "median_first_layer_change": statistics.median(c["first_layer_change"] for c in sel),
                "theta_rank": sorted({c["theta_rank"] for c in sel}),
                "max_rank_ratio": max(c["rank_ratio"] for c in sel),
                "seeds": len(sel)})
        ok = [row["median_rho"] < RHO_SUCCESS for row in rows]
        threshold = None
        for i in range(len(rows)):
            if all(ok[i:]):
                threshold = rows[i]["ratio_nominal"]
                break
        mine = [c for c in cases if c["dataset"] == dataset and c["setup"] == setup]
        out[f"{dataset}/{setup}"] = {"dataset": dataset, "setup": setup, "rows": rows,
                                     "threshold": threshold,
                                     "fitted_threshold": fitted_threshold(mine)}
    return out


def fitted_threshold(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The fitted threshold in p^(L)/(dn) of some runs (each a Bernoulli outcome at its ratio).

    Parameters
    ----------
    cases : list of dict
        Runs of :func:`run_case` (``ratio`` and ``success`` are read).

    Returns
    -------
    dict
        :meth:`rftheory.thresholds.ThresholdFit.as_dict`: ``location`` and its 95 %
        profile-likelihood ``interval`` in p^(L)/(dn), ``status``, and ``crossing`` (the
        crossing rule, a secondary number); status ``"fit_failed"`` when the fit raised
        (:func:`rftheory.claims.deep_law.fitted_threshold`).
    """
    from rftheory.claims.deep_law import fitted_threshold as fit_runs

    return fit_runs([c["ratio"] for c in cases], [bool(c["success"]) for c in cases])


def rank_collapse(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Do the runs' successes collapse in r·width/(dn), k·width/(dn) or width/(dn)?

    One fitted threshold per abscissa across all the given runs (every setup, k = 1 and k
    classes), compared by AIC (:func:`rftheory.rank.compare_abscissae`). r is the numerical rank
    of θ (singular values above max(width, k)·eps·σ_max).

    Parameters
    ----------
    cases : list of dict
        Runs of :func:`run_case`.

    Returns
    -------
    dict
        :func:`~rftheory.rank.compare_abscissae`'s result; ``best`` is None when no abscissa
        beats the others by ΔAIC ≥ 2.
    """
    from rftheory.rank import compare_abscissae

    dn = [c["d"] * c["n"] for c in cases]
    return compare_abscissae(
        {"width/(dn)": [c["width"] / m for c, m in zip(cases, dn)],
         "k·width/(dn)": [c["k"] * c["width"] / m for c, m in zip(cases, dn)],
         "r·width/(dn)": [c["theta_rank"] * c["width"] / m for c, m in zip(cases, dn)]},
        [bool(c["success"]) for c in cases])


def rank_growth(ns: tuple[int, ...] = (5, 10, 20), checkpoints: tuple[int, ...] = (
        10, 30, 100, 300, 1000, 3000, 10000, 20000), *, ratio: float = 16.0, seed: int = 0,
        activation: str = "relu+tanh", train_first_layer: bool = True) -> list[dict[str, Any]]:
    """How the rank of θ grows with training time and with n: cross-entropy on digits (k = 10).

    For each n, one network of width ratio·dn/k (so p^(L) = k·width = ratio·dn) is trained by
    full-batch GD on the cross-entropy (W₂(0) = 0, the claim's ``cross_entropy`` setup, or its
    frozen-W₁ control), without a loss tolerance, and θ = ΔW₂ᵀ ∈ R^{width×10} is read at each
    checkpoint (one continuous run: each stretch continues the last with the same step η).

    Parameters
    ----------
    ns : tuple of int
        Training-set sizes (digits, d = 64).
    checkpoints : tuple of int
        GD step counts at which θ is read (increasing).
    ratio : float
        k·width/(dn).
    seed : int
        Seed of the data subset and the initialisation.
    activation : str
        φ (the claim's default).
    train_first_layer : bool
        False for the control (θ exactly in the span of the fixed features).

    Returns
    -------
    list of dict
        Per (n, checkpoint): ``steps``, ``train_loss``, ``train_accuracy``, ``width``,
        ``singular_values`` (of θ, descending), ``rank_eps`` (above max(width, k)·eps·σ₁: exact
        rank), ``rank_span`` (singular values whose share σᵢ²/Σσⱼ² of ‖θ‖² exceeds the span
        residual s = ‖P⊥_{Φ(X)}θ‖²/‖θ‖²: directions of θ above the level at which θ is not in
        the span, the ones an attack can use), ``span_residual``, ``first_layer_change``,
        ``rank_ratio_span`` = rank_span·width/(dn).
    """
    from rftheory.data import digits_data
    from rftheory.projection import projection_loss
    from rftheory.rank import numerical_rank, singular_values
    from rftheory.twolayer import train_two_layer

    rows: list[dict[str, Any]] = []
    for n in ns:
        ds = digits_data(n, seed)
        X, classes = ds.X, np.asarray(ds.classes, dtype=np.int64)
        d, k = X.shape[1], 10
        width = max(1, round(ratio * d * n / k))
        first = None
        net, eta, done = None, None, 0
        for target in checkpoints:
            out = train_two_layer(X, classes, width=width, activation=activation,
                                  loss="cross_entropy", train_first_layer=train_first_layer,
                                  steps=target - done, tol=0.0, seed=seed, last_layer_init="zero",
                                  n_classes=k, initial=net, learning_rate=eta)
            first = out if first is None else first
            net, eta, done = out.network, out.learning_rate, target
            theta = np.asarray(net.W2 - first.initial.W2).T
            sv = singular_values(theta)
            span = projection_loss(net.features(), X, theta, gradient=False).loss
            share = sv ** 2 / np.sum(sv ** 2)
            r_span = int(np.sum(share > span))
            w1_change = float(np.linalg.norm(np.asarray(net.W1 - first.initial.W1))
                              / np.linalg.norm(np.asarray(first.initial.W1)))
            rows.append({"n": n, "d": d, "k": k, "width": width, "steps": target,
                         "train_loss": out.train_loss, "train_accuracy": out.train_accuracy,
                         "singular_values": [float(v) for v in sv],
                         "rank_eps": numerical_rank(theta), "rank_span": r_span,
                         "span_residual": float(span), "first_layer_change": w1_change,
                         "rank_ratio_span": r_span * width / (d * n),
                         "train_first_layer": bool(train_first_layer)})
    return rows


@dataclasses.dataclass(frozen=True)
class Config(ClaimConfig):
    """The two-layer sweep (see :func:`run`); checked on creation.

    The full grid is 6 ratios × 3 seeds × 7 setups × 2 data sets (252 runs; measured 405–706 s
    wall at load 16–27 on 2 shared cores); :data:`QUICK` is 4 ratios, 1 seed, 3 setups, 2 data
    sets (24 runs; measured 19–34 s wall on 2 cores).

    Attributes
    ----------
    ratios : tuple of float
        Values of p^(L)/(dn), p^(L) = k·width.
    seeds : int
        Runs per point; they use seeds ``seed, seed+1, ...`` (each drives W₁(0), W₂(0), the data,
        the labels and the reconstruction's start through separate streams).
    setups : tuple of str
        Keys of :data:`SETUPS`.
    max_steps : int
        The reconstruction's budget.
    activation : str
        φ. Default ReLU + tanh: ReLU's odd Hermite coefficients of order ≥ 3 vanish, which
        leaves a sign ambiguity x ↔ −x that the reconstruction optimiser trips on; adding tanh
        removes it (see the paper note).
    datasets : tuple of str
        Keys of :data:`DATASETS`.
    """

    ratios: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    seeds: int = 3
    setups: tuple[str, ...] = tuple(SETUPS)
    max_steps: int = 3000
    activation: str = "relu+tanh"
    datasets: tuple[str, ...] = tuple(DATASETS)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set("ratios", tuple(float(r) for r in self.ratios))
        self._set("setups", tuple(self.setups))
        self._set("datasets", tuple(self.datasets))
        self._set("seeds", int(self.seeds))
        self._set("max_steps", int(self.max_steps))
        for s in self.setups:
            if s not in SETUPS:
                raise RFTheoryError(f"unknown setup {s!r}; choose from {', '.join(SETUPS)}")
        for name in self.datasets:
            if name not in DATASETS:
                raise RFTheoryError(f"unknown data set {name!r}; choose from {', '.join(DATASETS)}")
        if not self.ratios or min(self.ratios) <= 0 or self.seeds < 1:
            raise RFTheoryError("ratios must be positive and seeds >= 1")


FULL = Config()
QUICK = Config(ratios=(1.0, 2.0, 4.0, 8.0), seeds=1, setups=("rf_gd", "square", "cross_entropy"),
               max_steps=2000)


def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None,
        workers: int | None = None, deadline: Deadline | None = None) -> dict[str, Any]:
    """Sweep ρ against p^(L)/(dn) for two-layer networks trained by gradient descent.

    Parameters
    ----------
    config : Config
        The sizes and seeds (:data:`FULL` by default, :data:`QUICK` for ``--quick``).
    progress : callable, optional
        Called with one line of text per finished step.
    workers : int, optional
        Processes for the independent runs (default: one per core, at most the runs).
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops (:func:`rftheory.claims._common.run_tasks` raises
        :class:`~rftheory.claims._common.TimeLimitReached`, which
        :func:`~rftheory.claims._common.run_claim` saves as a partial result); default none.

    Returns
    -------
    dict
        JSON-serialisable: the grid, every run (``cases``), per-setup medians and
        thresholds (``summary``) and the verdict.

    Examples
    --------
    The setups and data sets of the quick run (``rftheory verify twolayer_law --quick``):

    >>> from rftheory.claims import twolayer_law
    >>> twolayer_law.QUICK.setups, twolayer_law.QUICK.datasets
    (('rf_gd', 'square', 'cross_entropy'), ('sphere', 'digits'))
    >>> sorted(twolayer_law.DATASETS) == sorted(twolayer_law.FULL.datasets)
    True
    """
    check_activations(config.activation)
    ratios, seeds, setups, datasets = config.ratios, config.seeds, config.setups, config.datasets
    max_steps, activation, seed = config.max_steps, config.activation, config.seed
    workers = default_workers(workers)
    tasks = [{"dataset": ds, "setup": st, "ratio": r, "seed": seed + s, "activation": activation,
              "max_steps": max_steps}
             for ds in datasets for st in setups for r in ratios for s in range(seeds)]
    t0 = time.perf_counter()
    tick = TaskProgress(progress, len(tasks))
    cases = run_tasks([partial(run_case, **t) for t in tasks], workers=workers, deadline=deadline,
                      on_result=lambda i, case: tick(lambda: (
                          f"{case['dataset']:6s} {case['setup']:13s} "
                          f"p^(L)/(dn)={case['ratio']:5.2f} seed={case['seed']} ρ={case['rho']:.2e} "
                          f"span residual={case['span_residual']:.1e} ({case['seconds']:.1f} s)")))
    summary_ = _aggregate(cases, ratios)
    top = max(ratios)
    per_setup = {}
    for key, entry in summary_.items():
        # below the count: every seed's r·width/(dn) ≤ 1 (r = rank of θ; for k = 1 this is
        # p^(L)/(dn) ≤ 1, and since r ≤ k it includes every row with k·width/(dn) ≤ 1)
        below = [row for row in entry["rows"]
                 if row["ratio_nominal"] <= 1.0 or row.get("max_rank_ratio", 2.0) <= 1.0]
        at_top = [row for row in entry["rows"] if row["ratio_nominal"] == top]
        # A grid without ratios ≤ 1 (or without the top ratio) cannot confirm the law.
        fails_below = bool(below) and all(row["median_rho"] >= RHO_SUCCESS for row in below)
        succeeds_top = bool(at_top) and all(row["median_rho"] < RHO_SUCCESS for row in at_top)
        per_setup[key] = {"fails_at_or_below_dn": fails_below,
                          "succeeds_at_largest_ratio": succeeds_top,
                          "law_holds": fails_below and succeeds_top,
                          "threshold": entry["threshold"],
                          "fitted_threshold": entry["fitted_threshold"],
                          "k": next(c["k"] for c in cases
                                    if f"{c['dataset']}/{c['setup']}" == key)}
    collapse = {ds: rank_collapse([c for c in cases if c["dataset"] == ds])
                for ds in dict.fromkeys(c["dataset"] for c in cases)}
    rf_thresholds = {key: v["threshold"] for key, v in per_setup.items()
                     if key.split("/")[1].startswith("rf_gd")}
    return {
        "claim": CLAIM,
        "statement": ("Two-layer networks trained by gradient descent obey the law of data "
                      "reconstruction with p = p^(L) = k·width (last-layer parameters): the training "
                      "set is recovered from (W₁, W₂ − W₂(0)) once p^(L) ≳ dn, not below."),
        "activation": activation, "ratios": list(ratios), "seeds": seeds, "base_seed": seed,
        "setups": {s: SETUPS[s] for s in setups}, "datasets": {d: DATASETS[d] for d in datasets},
        "rho_success": RHO_SUCCESS, "reconstruct_max_steps": max_steps,
        "reconstruct_max_rounds": MAX_ROUNDS, "train_max_steps": TRAIN_STEPS, "workers": workers,
        "cases": cases, "summary": summary_,
        "verdict": {
            "supported": all(v["law_holds"] for v in per_setup.values()),
            "supported_single_output": all(v["law_holds"] for v in per_setup.values()
                                           if v["k"] == 1),
            "per_setup": per_setup,
            "rf_control_thresholds": rf_thresholds,
            "rank_collapse": collapse,
            "counted_by_rank": all(
                rc["fits"]["r·width/(dn)"]["delta_aic"] < rc["margin"]
                and rc["fits"]["k·width/(dn)"]["delta_aic"] >= rc["margin"]
                for rc in collapse.values()),
            "largest_ratio": top,
            "criterion": (f"for every setup: median ρ ≥ {RHO_SUCCESS} at every grid point where "
                          f"r·width/(dn) ≤ 1 for every seed (r = rank of θ; k = 1: p^(L)/(dn) ≤ 1) and "
                          f"< {RHO_SUCCESS} at p^(L)/(dn) = {top:g}"),
        },
        "sweep_seconds": round(time.perf_counter() - t0, 1),
    }


def summary(result: dict[str, Any]) -> str:
    """Median ρ per setup and ratio, the measured thresholds and the verdict, as a table.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or its JSON).

    Returns
    -------
    str
        The table, ready to print.
    """
    ratios = result["ratios"]
    verdicts = result["verdict"]["per_setup"]
    headers = (["data", "setup", "k", "r"] + [f"{r:g}" for r in ratios]
               + ["fitted p*/(dn) [95 %]", "crossing", "law"])
    rows = []
    for key, entry in result["summary"].items():
        by_ratio = {row["ratio_nominal"]: row for row in entry["rows"]}
        v = verdicts[key]
        fit = entry.get("fitted_threshold") or {}
        ranks = sorted({r for row in entry["rows"] for r in row.get("theta_rank", [])})
        rows.append([entry["dataset"], entry["setup"], v["k"],
                     f"{ranks[0]}–{ranks[-1]}" if len(ranks) > 1 else (ranks or ["-"])[0]]
                    + [f"{by_ratio[r]['median_rho']:.1e}" if r in by_ratio else "-" for r in ratios]
                    + [fit_text(fit), number_text(fit.get("crossing")),
                       "holds" if v["law_holds"] else "fails"])
    v = result["verdict"]
    lines = [f"median ρ (official, over {result['seeds']} seed(s)) against p^(L)/(dn); "
             f"activation {result['activation']}; success = ρ < {result['rho_success']}",
             format_table(headers, rows),
             f"criterion: {v['criterion']}",
             f"verdict: {'SUPPORTED' if v['supported'] else 'NOT SUPPORTED'} for all setups; "
             f"single-output (k = 1) setups: "
             f"{'supported' if v['supported_single_output'] else 'not supported'}"]
    for ds, rc in v.get("rank_collapse", {}).items():
        aics = ", ".join(f"{name} ΔAIC {f['delta_aic']:.1f}" for name, f in rc["fits"].items())
        lines.append(f"{ds}: successes collapse in "
                     f"{rc['best'] or 'no single abscissa (ΔAIC < 2)'} ({aics}; {rc['runs']} runs, "
                     f"r = numerical rank of θ)")
    if "counted_by_rank" in v:
        lines.append(f"outputs counted by the rank of θ (r·width/(dn) within ΔAIC 2 of the best, "
                     f"k·width/(dn) not, on every data set): {'yes' if v['counted_by_rank'] else 'no'}")
    return "\n".join(lines)


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """Draw the two-layer figure: per data set, ρ and the span residual against p^(L)/(dn); last
    column, what decides success once the count p^(L) > dn is met.

    Networks f(x) = c·W₂φ(W₁x) trained by gradient descent, reconstructed from (W₁, W₂ − W₂(0));
    p^(L) = k·width, one colour per training setup (legend). Top row, one panel per data set:
    ρ (official, Hungarian on |x|) of each run (faint) and the median per ratio (line); dashed:
    the success threshold; dotted vertical: p^(L) = dn. Bottom row: the span residual of ΔW₂ at
    the training data, ‖P⊥_{Φ(X)}ΔW₂ᵀ‖²/‖ΔW₂‖² (median per ratio; residuals at rounding level,
    as for a frozen W₁, are drawn at 10⁻¹⁴). Last column: ρ against the span residual for the
    runs with p^(L) > dn (top) and the span residual against the width (bottom); circles:
    sphere data, squares: digits. Once the count is met, a small span residual decides success.
    Third row: ρ of every run against r·width/(dn), outputs counted by the rank r of θ; dashed
    vertical: the threshold fitted in that abscissa over all runs of the data set.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or its JSON).
    stem : path
        Where to write ``stem.png`` and ``stem.pdf``.

    Returns
    -------
    list of Path
        The PNG's and the PDF's paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogLocator

    from rftheory.plotting import (PALETTE, SYMBOLS, legend_above, log_ticks, panel_label,
                                   paper_figure, paper_style, tidy_log_axis)

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    cases = result["cases"]
    datasets = list(dict.fromkeys(c["dataset"] for c in cases))
    setups = list(dict.fromkeys(c["setup"] for c in cases))
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(setups)}
    markers = dict(zip(DATASETS, ("o", "s", "^", "D")))
    ncol = len(datasets) + 1
    floor = 1e-14  # for log axes: residuals at rounding level (frozen W₁) are drawn here
    span_label = r"$\|P^\perp_{\Phi(X)}\Delta W_2^\top\|^2/\|\Delta W_2\|^2$"
    with paper_style():
        fig, axes = paper_figure(2, nrows=3, ncols=ncol, aspect=0.8, squeeze=False)
        for j, dataset in enumerate(datasets):
            ax_rho, ax_span = axes[0, j], axes[1, j]
            ratios = set()
            for setup in setups:
                sel = [c for c in cases if c["dataset"] == dataset and c["setup"] == setup]
                if not sel:
                    continue
                entry = result["summary"][f"{dataset}/{setup}"]
                xs = [row["ratio"] for row in entry["rows"]]
                ratios.update(xs)
                colour = colours.get(setup)
                ax_rho.plot([c["ratio"] for c in sel], [max(c["rho"], 1e-6) for c in sel], "o",
                            ms=2.5, alpha=0.4, color=colour)
                ax_rho.plot(xs, [max(row["median_rho"], 1e-6) for row in entry["rows"]], "-o",
                            color=colour)
                ax_span.plot(xs, [max(row["median_span_residual"], floor)
                                  for row in entry["rows"]], "-o", color=colour)
            spec = next(c for c in cases if c["dataset"] == dataset)
            ax_rho.set_title(f"{dataset}: $d = {spec['d']}$, $n = {spec['n']}$")
            for ax in (ax_rho, ax_span):
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.axvline(1.0, color="0.5", lw=0.6, ls=":")
                log_ticks(ax, ratios, "x", fmt="{:.2g}")
                tidy_log_axis(ax, "y")
            ax_rho.axhline(result["rho_success"], color="k", lw=0.6, ls="--")
            ax_rho.set_ylabel(SYMBOLS["rho"])
            ax_span.set_ylabel(span_label)
            ax_span.set_xlabel(SYMBOLS["width_ratio"])
            ax_r = axes[2, j]
            for setup in setups:
                sel = [c for c in cases if c["dataset"] == dataset and c["setup"] == setup]
                ax_r.plot([c["rank_ratio"] for c in sel], [max(c["rho"], 1e-6) for c in sel], "o",
                          ms=2.5, alpha=0.6, color=colours.get(setup))
            rc = result["verdict"].get("rank_collapse", {}).get(dataset)
            if rc and rc["fits"]["r·width/(dn)"]["status"] in ("ok", "step", "open"):
                ax_r.axvline(rc["fits"]["r·width/(dn)"]["location"], color="k", lw=0.6, ls="--")
            ax_r.axhline(result["rho_success"], color="k", lw=0.6, ls="--")
            ax_r.axvline(1.0, color="0.5", lw=0.6, ls=":")
            ax_r.set_xscale("log")
            ax_r.set_yscale("log")
            tidy_log_axis(ax_r, "y")
            ax_r.set_xlabel(r"$r\cdot\mathrm{width}/(dn)$")
            ax_r.set_ylabel(SYMBOLS["rho"])
        ax_rs, ax_sw = axes[0, -1], axes[1, -1]
        for c in cases:
            kw = dict(color=colours.get(c["setup"]), marker=markers.get(c["dataset"], "o"),
                      ls="", ms=3, alpha=0.7)
            if c["ratio"] > 1.0:
                ax_rs.plot(max(c["span_residual"], floor), max(c["rho"], 1e-6), **kw)
            ax_sw.plot(c["width"], max(c["span_residual"], floor), **kw)
        ax_rs.axhline(result["rho_success"], color="k", lw=0.6, ls="--")
        ax_rs.set_title(r"runs with $p^{(L)} > dn$")
        ax_rs.set_xlabel(span_label)
        ax_rs.set_ylabel(SYMBOLS["rho"])
        ax_sw.set_xlabel("width")
        ax_sw.set_ylabel(span_label)
        for ax in (ax_rs, ax_sw):
            ax.set_xscale("log")
            ax.set_yscale("log")
            tidy_log_axis(ax, "x")
            tidy_log_axis(ax, "y")
        ax_rs.xaxis.set_major_locator(LogLocator(base=10, numticks=5))  # 12 decades: labels fit
        axes[2, -1].axis("off")
        for k, ax in enumerate(a for a in axes.flat if a.axison):  # row by row: (a), (b), …
            panel_label(ax, "abcdefghijklmnop"[k])
        key = [Line2D([], [], marker="o", color=colours.get(setup),
                      label=result["setups"][setup]["label"]) for setup in setups]
        key += [Line2D([], [], ls="", marker=markers.get(dataset, "o"), color="0.4",
                       label=dataset) for dataset in datasets]
        legend_above(fig, key, [k.get_label() for k in key], ncol=min(len(key), 3))
        return save_figure(fig, stem)


if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
