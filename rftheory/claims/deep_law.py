"""Claim "and beyond", deep part: the law for the official ResNet (p^(L) = 49·width) and a small
ViT (p^(L) = tokens·width) against dn.

For the paper's bias-free ResNet (:class:`rftheory.deep.resnet.ResNet`: stem conv to 7×7, 4
residual blocks, scalar head; p^(L) = 49w) trained by small-step full-batch gradient descent on
the mean squared error with ±1 labels, finished by Gauss–Newton steps once the loss is below
1e-3 (:func:`rftheory.deep.train.train_gd`), θ = head − head(0)
lies nearly in the span of the trained features body(X) — checked per run, and the run refused
with "θ not in the span" when the projection loss at the true X is above a tolerance
(:func:`rftheory.deep.train.check_span`). The training set is then attacked through the body
(:func:`rftheory.deep.attack.reconstruct`, Levenberg–Marquardt on JVPs/VJPs) and ρ measured
(official and sign-invariant, :mod:`rftheory.metrics`).

The sweep: p^(L)/(dn) by width, n ∈ {2, 4}, seeds, on uniform points of the √d-sphere, the 8×8
digits (both d = 64, one channel, H = 8: stem kernel 4) and scikit-image's photograph patches
average-pooled to 8×8×3 = 192 (:func:`rftheory.data.pooled_patches_data`), for the ResNet and, as
a variant, the ViT (:class:`rftheory.deep.vit.ViT`: 2×2 patches, 16 tokens, 2 blocks). Per run it
also records the label fit, the feature drift, the span residual and the numerical rank r of θ
(1 here: one output; :func:`rftheory.rank.numerical_rank`).

Verdict (falsifiable, per data set and n): the law holds when the success rate over seeds is
below one half at every p^(L)/(dn) ≤ 1 (refused runs count as failures: nothing is recovered) and
at least one half at the largest ratio. The threshold reported is the fitted one
(:func:`rftheory.thresholds.fit_threshold`: a probit success curve in log p^(L)/(dn) fitted by
maximum likelihood to every run, with its 95 % profile-likelihood interval); the crossing rule is
kept as a labelled secondary number.

The attack (LM, 2 random starts of ≤ 200 steps) starts up to 8 in all while its best loss is
above the span tolerance: an attacked run's loss at the truth is below it, so a round ending above
has stalled in a spurious basin (measured: the ViT on digits at 16·dn, paper_notes/deep_law.md).

:data:`QUICK` (n = 2, d = 64, ratios 0.5–16, 3 seeds, sphere and digits, ResNet and ViT: 48 runs)
measured 157 s of CPU, 1 min 28 s on 2 cores (paper_notes/deep_law.md). :data:`FULL` is the
issue's grid: ratios {0.5, 1, 2, 4, 8, 16}, n ∈ {2, 4}, 3 seeds, sphere, digits and 8×8×3 patches,
both architectures (216 runs): 4 220 s of CPU, 35 min 29 s on 2 cores; a run stopped by
``--time-limit`` keeps its finished cells in ``deep_law.cells.jsonl`` (:func:`result_from_cases`).

Needs JAX: ``pip install 'rftheory[deep]'``. Run: ``rftheory verify deep_law --quick`` (by name;
not part of ``verify all``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rftheory.claims._common import (ClaimConfig, TaskProgress, default_workers, fit_text, main_for,
                                     number_text, run_tasks)
import rftheory.metrics as _metrics
from rftheory.errors import RFTheoryError
from rftheory.output import format_table, save_figure

CLAIM = "deep_law"

#: A reconstruction succeeds when ρ (official) is below this. Higher than the random-features
#: claims' 0.05: the body moves during training, θ is only nearly in the span (span residuals
#: 1e-3 – 3e-2 measured), and the attack's optimum sits off the true X by about that much
#: (ρ 0.01 – 0.06 at p^(L) ≈ 10–16·dn); failed runs sit at ρ ≈ 0.4 – 0.7.
RHO_SUCCESS = _metrics.RHO_SUCCESS

#: Data sets: (C, H, H) of the network's input; d = 64, 64 and 192.
DATASETS: dict[str, tuple[int, int, int]] = {"sphere": (1, 8, 8), "digits": (1, 8, 8),
                                             "patches": (3, 8, 8)}

#: Architectures: the official ResNet and the ViT variant (2×2 patches, 2 blocks).
ARCHS = ("resnet", "vit")

#: The training's switch to the Gauss–Newton finish (:func:`rftheory.deep.train.train_gd`'s
#: ``newton_below``) and the precision of the attack's Krylov products (``reconstruct``'s
#: ``product_dtype``): the library's defaults, named here so that a result records them. Measured
#: against GD to the end and float64 products in paper_notes/deep_law.md.
NEWTON_BELOW = 1e-3
PRODUCT_DTYPE = "float32"

_STREAM_LABELS = 2**42 + 31


def case_data(dataset: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The training set of one run: points on the √d-sphere and ±1 labels.

    Parameters
    ----------
    dataset : str
        One of :data:`DATASETS`.
    n : int
        Training points.
    seed : int
        The run's seed.

    Returns
    -------
    X : numpy.ndarray, shape (n, d)
        The points (norm √d).
    y : numpy.ndarray, shape (n,)
        ±1: random for sphere and patches, the digit's parity for digits.

    Examples
    --------
    >>> X, y = case_data("sphere", 2, 0)
    >>> X.shape, bool(np.allclose(np.linalg.norm(X, axis=1) ** 2, 64)), set(np.abs(y).tolist())
    ((2, 64), True, {1.0})
    """
    from rftheory.data import digits_data, pooled_patches_data, sphere_points

    if dataset == "digits":
        ds = digits_data(n, seed)
        return ds.X, np.where(ds.classes % 2 == 0, 1.0, -1.0)
    c, h, w = DATASETS[dataset]
    y = np.where(np.random.default_rng([seed, _STREAM_LABELS]).random(n) < 0.5, 1.0, -1.0)
    if dataset == "patches":
        return pooled_patches_data(n, seed).X, y
    return sphere_points(n, c * h * w, seed), y


def make_net(arch: str, dataset: str, n: int, ratio: float) -> Any:
    """The network of one run: width = max(1, round(ratio·dn / (p^(L) per unit width))).

    Parameters
    ----------
    arch : str
        One of :data:`ARCHS`.
    dataset : str
        One of :data:`DATASETS` (sets the input shape).
    n : int
        Training points.
    ratio : float
        Target p^(L)/(dn).

    Returns
    -------
    ResNet or ViT
    """
    from rftheory.deep import ResNet, ViT

    shape = DATASETS[dataset]
    cls = {"resnet": ResNet, "vit": ViT}[arch]
    d = shape[0] * shape[1] * shape[2]
    per_width = cls(1, shape).p_last
    return cls(max(1, round(ratio * d * n / per_width)), shape)


def run_case(dataset: str, n: int, ratio: float, seed: int, *, fraction: float, span_tol: float,
             method: str, max_steps: int, rounds: int, arch: str = "resnet",
             max_rounds: int | None = None) -> dict[str, Any]:
    """Train one network at p^(L) ≈ ratio·dn, check the span, attack, measure ρ.

    Parameters
    ----------
    dataset : str
        One of :data:`DATASETS`.
    n : int
        Training points.
    ratio : float
        Target p^(L)/(dn) (:func:`make_net`).
    seed : int
        Seed of the data, labels, initialisation and the attack's starts.
    fraction, span_tol, method, max_steps, rounds, max_rounds
        As :class:`Config`.
    arch : str
        One of :data:`ARCHS`.

    Returns
    -------
    dict
        JSON-serialisable: sizes, training diagnostics, span residual, rank of θ, status
        (``"attacked"`` or ``"refused"`` with the message), ρ (None when refused).
    """
    from rftheory.deep import ThetaNotInSpanError, check_span, reconstruct, train_gd
    from rftheory.metrics import rho
    from rftheory.rank import numerical_rank

    t0, c0 = time.perf_counter(), time.process_time()
    X, y = case_data(dataset, n, seed)
    d = X.shape[1]
    net = make_net(arch, dataset, n, ratio)
    width = net.width
    trained = train_gd(net, X, y, rng=seed, fraction=fraction, newton_below=NEWTON_BELOW)
    case: dict[str, Any] = {
        "arch": arch, "dataset": dataset, "d": d, "n": n, "width": width, "p_last": net.p_last,
        "ratio": net.p_last / (d * n), "ratio_nominal": ratio, "seed": seed,
        "train_steps": trained.steps, "train_newton_steps": trained.newton_steps,
        "train_loss": trained.train_loss,
        "label_fit": trained.label_fit, "train_stop": trained.stop_reason,
        "step_size": trained.step_size, "lambda_max": trained.lambda_max,
        "feature_change": trained.feature_change, "span_residual": trained.span_residual,
        "theta_rank": numerical_rank(trained.theta), "theta_rank_rtol": "max(p, k)·eps", "k": 1,
        "train_seconds": trained.seconds}
    try:
        check_span(trained, span_tol)
    except ThetaNotInSpanError as exc:
        case.update(status="refused", message=str(exc), rho=None, rho_sign_invariant=None,
                    success=False, recon_loss=None, recon_steps=0, recon_stop=None, recon_rounds=0,
                    recon_bases=0, recon_products=0)
    else:
        rec = reconstruct(net, trained.params, trained.theta, n, rng=seed, method=method,
                          max_steps=max_steps, rounds=rounds, restart_above=span_tol,
                          max_rounds=max_rounds, product_dtype=PRODUCT_DTYPE)
        r_abs = rho(X, rec.X_hat, "abs")
        case.update(status="attacked", message="", rho=r_abs,
                    rho_sign_invariant=rho(X, rec.X_hat, "sign_invariant"),
                    success=r_abs < RHO_SUCCESS, recon_loss=rec.loss, recon_steps=rec.steps,
                    recon_stop=rec.stop_reason, recon_rounds=rec.rounds,
                    recon_bases=rec.bases, recon_products=rec.products)
    case["seconds"] = time.perf_counter() - t0
    case["cpu_seconds"] = time.process_time() - c0
    return case


def run_cell(dataset_names: tuple[str, ...], n: int, ratio: float, seeds: tuple[int, ...],
             arch: str = "resnet", **options: Any) -> list[dict[str, Any]]:
    """Every data set and seed at one (n, ratio), in one process: one width, so JAX compiles the
    network's functions once (about 10–20 s of CPU each width) for all of them.

    Parameters
    ----------
    dataset_names : tuple of str
        The data sets, as :func:`run_case` takes them.
    n : int
        Training points.
    ratio : float
        p^(L)/(dn), which sets the width.
    seeds : tuple of int
        The seeds.
    arch : str
        One of :data:`ARCHS`.
    **options
        Passed on to :func:`run_case`.

    Returns
    -------
    list of dict
        One :func:`run_case` result per data set and seed.
    """
    return [run_case(ds, n, ratio, s, arch=arch, **options) for ds in dataset_names for s in seeds]


@dataclasses.dataclass(frozen=True)
class Config(ClaimConfig):
    """The deep sweep (see :func:`run`); checked on creation.

    Attributes
    ----------
    ratios : tuple of float
        Target values of p^(L)/(dn) (realised by an integer width: the result records both).
    ns : tuple of int
        Training-set sizes n.
    seeds : int
        Runs per point, seeds ``seed, seed+1, ...``.
    datasets : tuple of str
        Keys of :data:`DATASETS`.
    archs : tuple of str
        Architectures (:data:`ARCHS`), each run on every data set.
    fraction : float
        GD step as a fraction of 2/λ_max.
    span_tol : float
        Refuse the attack above this projection loss at the true X.
    method : str
        The attack (``"lm"`` or ``"adam"``).
    max_steps : int
        Attack steps per round.
    rounds : int
        Random starts of the attack (the best loss is kept).
    max_rounds : int
        Further starts while the best loss is above ``span_tol`` (which bounds the loss at the
        truth of every attacked run), up to this many rounds in all.
    """

    ratios: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    ns: tuple[int, ...] = (2, 4)
    seeds: int = 3
    datasets: tuple[str, ...] = tuple(DATASETS)
    archs: tuple[str, ...] = ARCHS
    # 0.1, not 0.5: η = 1/λ_max took 5× fewer GD steps but moved the trained body — the loss at the
    # true X (the attack's floor) 3× higher on QUICK's ResNet on digits, 7 of its 48 runs refused
    # instead of 2, 16 successes instead of 19 (benchmarks/bench_deep_fraction.py; deep_law.md)
    fraction: float = 0.1
    span_tol: float = 0.05  # rftheory.deep.train.SPAN_TOL (not imported: the claim module loads without JAX)
    method: str = "lm"
    max_steps: int = 200
    rounds: int = 2
    max_rounds: int = 8

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set("ratios", tuple(float(r) for r in self.ratios))
        self._set("ns", tuple(int(v) for v in self.ns))
        self._set("datasets", tuple(self.datasets))
        self._set("archs", tuple(self.archs))
        if not self.archs or any(a not in ARCHS for a in self.archs):
            raise RFTheoryError(f"archs must be among {', '.join(ARCHS)}, got {self.archs!r}")
        for name in self.datasets:
            if name not in DATASETS:
                raise RFTheoryError(f"unknown data set {name!r}; choose from {', '.join(DATASETS)}")
        if not self.ratios or min(self.ratios) <= 0:
            raise RFTheoryError("ratios must be positive")
        if (not self.ns or min(self.ns) < 1 or self.seeds < 1 or self.max_steps < 1
                or self.rounds < 1 or self.max_rounds < self.rounds):
            raise RFTheoryError("ns, seeds, max_steps and rounds must be at least 1, max_rounds "
                                "at least rounds")
        if not 0 < self.fraction < 1 or not self.span_tol > 0:
            raise RFTheoryError("fraction must be in (0, 1) and span_tol positive")
        if self.method not in ("lm", "adam"):
            raise RFTheoryError(f"unknown method {self.method!r}; choose lm or adam")

    def size_jobs(self) -> list[tuple[str, dict[str, Any]]]:
        """None: the size guard models random-features reconstructions, not a ResNet's (the
        deep runs here take < 100 MB)."""
        return []


FULL = Config()
QUICK = Config(ratios=(0.5, 1.0, 4.0, 16.0), ns=(2,), datasets=("sphere", "digits"))


def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None,
        workers: int | None = None, deadline: Any = None,
        out_dir: str | Path | None = None) -> dict[str, Any]:
    """Sweep ρ against p^(L)/(dn) for the official ResNet trained by small-step GD.

    Parameters
    ----------
    config : Config
        Sizes and seeds (:data:`FULL` by default, :data:`QUICK` for ``--quick``).
    progress : callable, optional
        One line per finished task (a network: architecture, n, ratio, input shape).
    workers : int, optional
        Processes (default min(2, cores)); results do not depend on it.
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops (:func:`rftheory.claims._common.run_tasks` raises ``TimeLimitReached``,
        which :func:`~rftheory.claims._common.run_claim` saves as a partial result).
    out_dir : path, optional
        If given, every finished cell's runs are appended to ``out_dir/deep_law.cells.jsonl`` as
        they finish (one JSON line per run), so that a run stopped at its deadline keeps its
        numbers; :func:`result_from_cases` rebuilds the summary from them.

    Returns
    -------
    dict
        JSON-serialisable: every run (``cases``), per (data set, n) rows and thresholds
        (``summary``) and the verdict.

    Examples
    --------
    >>> from rftheory.claims import deep_law
    >>> deep_law.QUICK.ratios, deep_law.QUICK.ns, deep_law.QUICK.seeds
    ((0.5, 1.0, 4.0, 16.0), (2,), 3)
    """
    import importlib.util
    import sys

    if importlib.util.find_spec("jax") is None:  # one clear error before any worker starts
        raise RFTheoryError("deep_law needs JAX: pip install 'rftheory[deep]'")
    workers = default_workers(workers)
    if "jax" in sys.modules:
        # this process has JAX loaded (and maybe its runtime threads started): a forked worker
        # could deadlock, so the cells run here (results do not depend on the workers)
        workers = 1
    seeds = tuple(config.seed + s for s in range(config.seeds))
    options = {"fraction": config.fraction, "span_tol": config.span_tol, "method": config.method,
               "max_steps": config.max_steps, "rounds": config.rounds,
               "max_rounds": config.max_rounds}
    # one task per network: (architecture, n, ratio) and the data sets of one input shape, whose
    # runs share the network's compiled functions (splitting them repeats XLA's compilation:
    # QUICK took 223 s of CPU so, against 162 s). The largest task (ResNet, patches, n = 4,
    # 16·dn: ~1 400 s of CPU here) then no longer carries the 8×8 data sets' runs too (one
    # 29 min task when it did, the end of FULL's critical path).
    shapes: dict[tuple[int, ...], tuple[str, ...]] = {}
    for ds in config.datasets:
        shapes[DATASETS[ds]] = shapes.get(DATASETS[ds], ()) + (ds,)
    cells = [(a, n, r, group) for n in config.ns for a in config.archs for r in config.ratios
             for group in shapes.values()]
    tick = TaskProgress(progress, len(cells))

    def describe(cell: list[dict[str, Any]]) -> str:
        c = cell[0]
        rhos = ["refused" if x["rho"] is None else f"{x['rho']:.2g}" for x in cell]
        names = "+".join(dict.fromkeys(x["dataset"] for x in cell))
        return (f"{c['arch']} n={c['n']} {names} p^(L)/(dn)={c['ratio']:.2f} "
                f"(w={c['width']}) ρ: {' '.join(rhos)} ({sum(x['seconds'] for x in cell):.0f} s)")

    t0 = time.perf_counter()
    # the longest tasks first (LPT), so that no long task is left alone at the end: a task's
    # cost grows as its data sets × n × width² (width ∝ ratio·d·n; one product is n̂ passes
    # through w² weights), which orders FULL's measured task times (10 s … 1 400 s of CPU)
    order = sorted(range(len(cells)), key=lambda i: -_task_size(*cells[i]))
    sink = None if out_dir is None else Path(out_dir) / f"{CLAIM}.cells.jsonl"
    if sink is not None:
        sink.parent.mkdir(parents=True, exist_ok=True)
        sink.write_text("")

    def on_result(i: int, cell: list[dict[str, Any]]) -> None:
        if sink is not None:
            import json

            with sink.open("a") as fh:
                for case in cell:
                    fh.write(json.dumps(case) + "\n")
        tick(lambda: describe(cell))

    results = run_tasks([partial(run_cell, group, n, r, seeds, arch=a, **options)
                         for a, n, r, group in cells], workers=workers, order=order,
                        deadline=deadline, on_result=on_result, share_cpus=True)
    cases = [c for cell in results for c in cell]
    out = result_from_cases(cases, config)
    out["workers"] = workers
    out["sweep_seconds"] = round(time.perf_counter() - t0, 1)
    return out


def _task_size(arch: str, n: int, ratio: float, group: tuple[str, ...]) -> float:
    """A task's relative cost, only to order the tasks: data sets × n·(ratio·d·n)²."""
    return len(group) * n * (ratio * math.prod(DATASETS[group[0]]) * n) ** 2


def result_from_cases(cases: list[dict[str, Any]], config: Config) -> dict[str, Any]:
    """The claim's result (summary, thresholds, verdict) from a list of runs.

    Parameters
    ----------
    cases : list of dict
        Runs of :func:`run_case` (all of a run, or the lines of a ``deep_law.cells.jsonl`` left
        by a run stopped at its deadline: the verdict then covers the cells that finished).
    config : Config
        The configuration they were run with.

    Returns
    -------
    dict
        As :func:`run`, without ``workers`` and ``sweep_seconds``.
    """
    summary_ = _aggregate(cases, config.ratios)
    top = max(config.ratios)
    per_key = judge(summary_, top)
    return {
        "claim": CLAIM,
        "statement": ("The official ResNet (and a small ViT) trained by small-step GD obeys the law "
                      "of data reconstruction with p = p^(L), the head's parameters (49·width; "
                      "tokens·width): the training set is recovered from (body, head − head(0)) "
                      "once p^(L) ≳ dn, not below."),
        "ratios": list(config.ratios), "ns": list(config.ns), "seeds": config.seeds,
        "base_seed": config.seed, "datasets": {k: list(DATASETS[k]) for k in config.datasets},
        "archs": list(config.archs),
        "rho_success": RHO_SUCCESS, "fraction": config.fraction, "newton_below": NEWTON_BELOW,
        "product_dtype": PRODUCT_DTYPE, "span_tol": config.span_tol,
        "method": config.method, "max_steps": config.max_steps, "rounds": config.rounds,
        "max_rounds": config.max_rounds, "cases": cases, "summary": summary_,
        "cpu_seconds": round(sum(c["cpu_seconds"] for c in cases), 1),
        "verdict": {
            "supported": all(v["law_holds"] for v in per_key.values()),
            "per_dataset_n": per_key, "largest_ratio": top,
            "criterion": (f"for every architecture, data set and n: success rate (ρ < {RHO_SUCCESS}; refused "
                          f"runs fail) < 1/2 at every p^(L)/(dn) ≤ 1 and ≥ 1/2 at p^(L)/(dn) = {top:g}"),
        },
    }


def judge(summary_: dict[str, Any], top: float) -> dict[str, dict[str, Any]]:
    """The verdict per (data set, n) from the aggregated rows (see the module docstring).

    Parameters
    ----------
    summary_ : dict
        ``result["summary"]``: per key, ``rows`` with ``ratio_nominal`` and ``success_rate``,
        and the ``threshold``.
    top : float
        The largest ratio of the grid.

    Returns
    -------
    dict
        Per key: ``fails_at_or_below_dn``, ``succeeds_at_largest_ratio``, ``law_holds``,
        ``threshold``. A grid without ratios ≤ 1 (or without ``top``) cannot confirm the law.

    Examples
    --------
    >>> rows = [{"ratio_nominal": 0.5, "success_rate": 1.0}, {"ratio_nominal": 16.0, "success_rate": 1.0}]
    >>> judge({"sphere/n=2": {"rows": rows, "threshold": 0.5}}, 16.0)["sphere/n=2"]["law_holds"]
    False
    """
    out = {}
    for key, entry in summary_.items():
        below = [row for row in entry["rows"] if row["ratio_nominal"] <= 1.0]
        at_top = [row for row in entry["rows"] if row["ratio_nominal"] == top]
        fails_below = bool(below) and all(row["success_rate"] < 0.5 for row in below)
        succeeds_top = bool(at_top) and all(row["success_rate"] >= 0.5 for row in at_top)
        out[key] = {"fails_at_or_below_dn": fails_below, "succeeds_at_largest_ratio": succeeds_top,
                    "law_holds": fails_below and succeeds_top, "threshold": entry["threshold"],
                    "fitted_threshold": entry.get("fitted_threshold")}
    return out


def fitted_threshold(ratios: Any, success: Any) -> dict[str, Any]:
    """The fitted threshold in p^(L)/(dn) of a set of runs, and the crossing as secondary number.

    Parameters
    ----------
    ratios : array_like of float
        p^(L)/(dn) of every run (realised, not nominal).
    success : array_like of bool
        Whether each run succeeded (refused runs: False).

    Returns
    -------
    dict
        :meth:`rftheory.thresholds.ThresholdFit.as_dict` (``location`` and ``interval`` in
        p^(L)/(dn), ``status``, ``crossing`` the secondary rule on the success fraction per
        distinct ratio). If the fit raises ``ValueError`` (measured: scipy's brentq in the
        profile interval, on runs that all succeed but one at the top ratio), ``status`` is
        ``"fit_failed"`` with the message in ``error``, and only the crossing is given.

    Examples
    --------
    >>> fit = fitted_threshold([0.5, 0.5, 1, 1, 4, 4, 16, 16], [0, 0, 0, 0, 1, 1, 1, 1])
    >>> fit["status"], round(fit["location"], 3), round(fit["crossing"], 3)
    ('step', 2.0, 2.0)
    """
    from rftheory.thresholds import crossing, fit_threshold

    x = np.asarray(ratios, dtype=np.float64)
    ok = np.asarray(success, dtype=bool)
    try:
        return fit_threshold(x, ok).as_dict()
    except ValueError as exc:
        grid = np.unique(x)
        cross, cross_status = crossing(grid, [ok[x == g].mean() for g in grid])
        nan = float("nan")
        return {"location": nan, "width": nan, "interval": [nan, nan], "status": "fit_failed",
                "bound": nan, "gap": [nan, nan], "crossing": cross,
                "crossing_status": cross_status, "error": str(exc), "runs": int(x.size),
                "successes": int(ok.sum())}


def _aggregate(cases: list[dict[str, Any]], ratios: tuple[float, ...]) -> dict[str, Any]:
    """Per (arch, data set, n): per ratio, the medians over seeds and the success rate; the
    fitted threshold and the crossing."""
    out: dict[str, Any] = {}
    for arch, dataset, n in sorted({(c.get("arch", "resnet"), c["dataset"], c["n"]) for c in cases}):
        rows = []
        mine = [c for c in cases if c.get("arch", "resnet") == arch and c["dataset"] == dataset
                and c["n"] == n]
        for r in ratios:
            sel = [c for c in mine if c["ratio_nominal"] == r]
            if not sel:
                continue
            attacked = [c for c in sel if c["rho"] is not None]
            rows.append({
                "ratio": statistics.median(c["ratio"] for c in sel), "ratio_nominal": r,
                "width": sel[0]["width"],
                "median_rho": statistics.median(c["rho"] for c in attacked) if attacked else None,
                "median_rho_sign_invariant": (statistics.median(c["rho_sign_invariant"] for c in attacked)
                                              if attacked else None),
                "success_rate": sum(c["success"] for c in sel) / len(sel),
                "refused": len(sel) - len(attacked),
                "median_span_residual": statistics.median(c["span_residual"] for c in sel),
                "median_feature_change": statistics.median(c["feature_change"] for c in sel),
                "max_label_fit": max(c["label_fit"] for c in sel),
                "theta_rank": max(c["theta_rank"] for c in sel), "seeds": len(sel)})
        threshold = None
        for i in range(len(rows)):
            if all(row["success_rate"] >= 0.5 for row in rows[i:]):
                threshold = rows[i]["ratio_nominal"]
                break
        out[f"{arch}/{dataset}/n={n}"] = {
            "arch": arch, "dataset": dataset, "n": n, "rows": rows, "threshold": threshold,
            "fitted_threshold": fitted_threshold([c["ratio"] for c in mine],
                                                 [c["success"] for c in mine])}
    return out


def summary(result: dict[str, Any]) -> str:
    """Median ρ and success rate per (data set, n) and ratio, thresholds and the verdict.

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
    verdicts = result["verdict"]["per_dataset_n"]
    headers = (["net", "data", "n"] + [f"{r:g}" for r in ratios]
               + ["fitted p*/(dn) [95 %]", "crossing", "law"])
    rows = []
    for key, entry in result["summary"].items():
        by_ratio = {row["ratio_nominal"]: row for row in entry["rows"]}

        def cell(r: float) -> str:
            row = by_ratio.get(r)
            if row is None:
                return "-"
            rho_ = ("refused" if row["median_rho"] is None else
                    f"{row['median_rho']:.2g}|{row['median_rho_sign_invariant']:.2g}")
            return f"{rho_} ({round(row['success_rate'] * row['seeds'])}/{row['seeds']})"

        fit = entry.get("fitted_threshold") or {}
        rows.append([entry.get("arch", "resnet"), entry["dataset"], entry["n"]]
                    + [cell(r) for r in ratios] + [fit_text(fit),
                       number_text(fit.get("crossing")) + f" ({fit.get('crossing_status', '-')})",
                       "holds" if verdicts[key]["law_holds"] else "fails"])
    v = result["verdict"]
    refused = sum(c["status"] == "refused" for c in result["cases"])
    fits = max(c["label_fit"] for c in result["cases"])
    return "\n".join([
        f"median ρ official|sign-invariant (successes/seeds) against p^(L)/(dn) (ResNet 49w, ViT 16w); "
        f"success = official ρ < "
        f"{result['rho_success']}; GD step {result['fraction']}·2/λ_max"
        + (f", Gauss–Newton below L = {result['newton_below']:g}" if result.get("newton_below") else "")
        + f"; attack {result['method']}"
        + (f" ({result['product_dtype']} products)" if result.get("product_dtype") else ""),
        format_table(headers, rows),
        f"label fit max|f(x_i) − y_i| ≤ {fits:.1e}; θ rank r = "
        f"{max(c['theta_rank'] for c in result['cases'])} (one output); refused (θ not in the span, "
        f"loss at X > {result['span_tol']}): {refused} of {len(result['cases'])} runs",
        f"criterion: {v['criterion']}",
        f"verdict: {'SUPPORTED' if v['supported'] else 'NOT SUPPORTED'}"])


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """Draw the deep figure: ρ (top) and the span residual (bottom) against p^(L)/(dn).

    One column per data set, one colour per n; faint points are single runs (refused runs are
    drawn at ρ = 1 as crosses), lines the medians of the attacked runs; dashed: the success
    threshold; dotted vertical: p^(L) = dn. Bottom: ‖P⊥_{body(X)}θ‖²/‖θ‖², the least loss an
    attack can reach, and the refusal tolerance (dashed).

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
    from rftheory.plotting import (PALETTE, SYMBOLS, legend_above, log_ticks, panel_label,
                                   paper_figure, paper_style, tidy_log_axis)

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    cases = result["cases"]
    datasets = list(dict.fromkeys((c.get("arch", "resnet"), c["dataset"]) for c in cases))
    ns = sorted({c["n"] for c in cases})
    colours = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(ns)}
    with paper_style():
        fig, axes = paper_figure(2, nrows=2, ncols=len(datasets), aspect=0.8, squeeze=False)
        handles = []
        for j, (arch, dataset) in enumerate(datasets):
            ax_rho, ax_span = axes[0, j], axes[1, j]
            xs_all = set()
            for n in ns:
                sel = [c for c in cases if c["dataset"] == dataset and c["n"] == n
                       and c.get("arch", "resnet") == arch]
                if not sel:
                    continue
                colour = colours[n]
                att = [c for c in sel if c["rho"] is not None]
                ref = [c for c in sel if c["rho"] is None]
                ax_rho.plot([c["ratio"] for c in att], [max(c["rho"], 1e-4) for c in att], "o",
                            ms=2.5, alpha=0.4, color=colour)
                ax_rho.plot([c["ratio"] for c in ref], [1.0] * len(ref), "x", ms=3, color=colour)
                rows = result["summary"][f"{arch}/{dataset}/n={n}"]["rows"]
                med = [(row["ratio"], row["median_rho"]) for row in rows if row["median_rho"] is not None]
                xs_all.update(row["ratio"] for row in rows)
                (line,) = ax_rho.plot([x for x, _ in med], [max(v, 1e-4) for _, v in med], "-o",
                                      color=colour, label=f"$n = {n}$")
                if j == 0:
                    handles.append(line)
                ax_span.plot([c["ratio"] for c in sel], [max(c["span_residual"], 1e-12) for c in sel],
                             "o", ms=2.5, alpha=0.4, color=colour)
                ax_span.plot([row["ratio"] for row in rows],
                             [max(row["median_span_residual"], 1e-12) for row in rows], "-o", color=colour)
            d_ = next(c["d"] for c in cases if c["dataset"] == dataset)
            ax_rho.set_title(f"{dataset}: $d = {d_}$, {'ResNet' if arch == 'resnet' else 'ViT'}")
            for ax in (ax_rho, ax_span):
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.axvline(1.0, color="0.5", lw=0.6, ls=":")
                log_ticks(ax, xs_all, "x", fmt="{:.2g}")
                tidy_log_axis(ax, "y")
                ax.set_xlabel(SYMBOLS["width_ratio"])
            ax_rho.axhline(result["rho_success"], color="k", lw=0.6, ls="--")
            ax_span.axhline(result["span_tol"], color="k", lw=0.6, ls="--")
            ax_rho.set_ylabel(SYMBOLS["rho"])
            ax_span.set_ylabel(r"$\|P^\perp_{\Phi(X)}\theta\|^2/\|\theta\|^2$")
        for k, ax in enumerate(axes.flat):
            panel_label(ax, "abcdefgh"[k])
        legend_above(fig, handles, [h.get_label() for h in handles], ncol=len(handles))
        return save_figure(fig, stem)


if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
