"""Concentration of the empirical feature Gram ΦΦᵀ/p around the RF kernel K, and λ_min(K).

For data X on the sphere of radius √d and V_ij ~ N(0, 1/d), the rows of Φ are φ(Vx_i), so
ΦΦᵀ/p = (1/p) Σ_j φ(Xv_j)φ(Xv_j)ᵀ is an average of p i.i.d. rank-one matrices with mean
K = E_v[φ(Xv)φ(Xv)ᵀ] = Σ_k μ_k² (XXᵀ/d)^{∘k}. Hence (matrix CLT, n fixed)

* ‖ΦΦᵀ/p − K‖_op ≈ C p^{-1/2}: a log–log fit of the error against p has slope −1/2;
* λ_min(ΦΦᵀ)/p → λ_min(K), with first-order fluctuation uᵀ(ΦΦᵀ/p − K)u (u the bottom
  eigenvector of K), whose standard deviation is σ_u/√p, σ_u² = Var_v[(uᵀφ(Xv))²];
* λ_min(K) >= Σ_{k>=k₀} μ_k² λ_min((XXᵀ/d)^{∘k}) for any k₀ (Schur product theorem + Weyl),
  and for n >= d and n << d² the right side with k₀ = 2 is close to Σ_{k>=2} μ_k², because the
  linear term is singular and the Hadamard powers k >= 2 are close to the identity.

:func:`measure_concentration` (one activation on seeded sphere data; behind ``rftheory kernel``),
:func:`concentration` (given data), :func:`lambda_min_vs_d` and :func:`fit_loglog_slope` are the
measurements, :func:`plot_curves` their figure; the claim :mod:`rftheory.claims.kernel_concentration`
runs them for several activations.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .data import sphere_points
from .errors import NumericalError, RFTheoryError
from .deadline import TIME_LIMIT_REACHED, Deadline
from .features import RandomFeatures
from .gram import symmetric_eigh
from .hermite import check_double_precision
from .kernel import (
    DEFAULT_ORDER,
    HadamardPowerBounds,
    KernelSeries,
    closed_form_kernel_matrix,
    hadamard_power_bounds,
    has_closed_form,
    hermite_lower_bound,
    kernel_matrix,
    kernel_series,
)
from .output import save_figure

#: The CLT exponent of the operator-norm error.
EXPECTED_SLOPE = -0.5
#: Accepted |fitted slope − (−1/2)|. In the full run (n = 50, 8 draws of V, p = 2^7..2^15) the
#: per-draw slopes scatter by ~0.03 and the averaged fit's standard error is ~0.01 (measured);
#: 0.1 leaves room for the pre-asymptotic drift at p ~ n (~0.02) and for the quick run's noisier
#: n = 20, while a wrong rate (p^0 or p^-1) is off by 0.5.
SLOPE_TOLERANCE = 0.1
#: Accepted relative error of λ_min(ΦΦᵀ)/p against λ_min(K) at the largest p.
LAMBDA_RTOL = 0.05
#: Number of CLT standard deviations in the first-order λ_min check.
CLT_SIGMAS = 4.0
#: Tag of the seed stream of V in this check (V's seed is a function of (seed, tag, rep, index)).
_V_STREAM = 0x4B434F4E



# ---------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------

def feature_seed(seed: int, rep: int, index: int) -> int:
    """Seed of V for repetition ``rep`` at the ``index``-th value of p (independent draws).

    Parameters
    ----------
    seed : int
        The measurement's base seed.
    rep : int
        The repetition.
    index : int
        The position of p in the list of widths.

    Returns
    -------
    int
        The seed of V.
    """
    state = np.random.SeedSequence([seed, _V_STREAM, rep, index]).generate_state(1, np.uint32)
    return int(state[0])


def fit_loglog_slope(p: Sequence[float], error: Sequence[float]) -> tuple[float, float]:
    """Least-squares fit ``log error = slope · log p + intercept``.

    Parameters
    ----------
    p : sequence of float
        The widths.
    error : sequence of float
        The errors (positive).

    Returns
    -------
    slope, intercept : float
        Of the fitted line.

    Raises
    ------
    RFTheoryError
        With fewer than two distinct p or a non-positive value.
    """
    p = np.asarray(p, dtype=np.float64)
    error = np.asarray(error, dtype=np.float64)
    if p.shape != error.shape or np.unique(p).size < 2:
        raise RFTheoryError("a slope needs at least two distinct values of p")
    if not (np.all(p > 0) and np.all(error > 0) and np.all(np.isfinite(error))):
        raise RFTheoryError("a log-log fit needs positive, finite values")
    slope, intercept = np.polyfit(np.log(p), np.log(error), 1)
    return float(slope), float(intercept)


def kernel_on_sphere(series: KernelSeries, X: np.ndarray) -> tuple[np.ndarray, float]:
    """K = Σ_k μ_k² (XXᵀ/d)^{∘k} from the series, with its exact diagonal ``E[φ(g)²]``.

    Parameters
    ----------
    series : KernelSeries
        The kernel's Hermite series (:func:`rftheory.kernel.rf_kernel_series`).
    X : numpy.ndarray
        Points on the √d-sphere, shape (n, d).

    Returns
    -------
    K : numpy.ndarray
        The n×n kernel matrix.
    error_bound : float
        A bound on ``‖K_true − K‖_op``.

    Notes
    -----
    The bound is ``n`` times the off-diagonal entrywise bound of
    :func:`rftheory.kernel.kernel_matrix`. On the sphere ``K_ii = K(1) = E[φ(g)²]`` exactly,
    whereas the truncated series misses the whole Parseval tail there (8e-5 for ReLU at order
    64), which would shift λ_min(K) by that much.
    """
    km = kernel_matrix(series, X)
    K = np.array(km.values, dtype=np.float64)
    np.fill_diagonal(K, float(series.second_moment))
    n = X.shape[0]
    off = 0.0 if km.error_bound_off_diagonal is None else float(km.error_bound_off_diagonal)
    return K, n * off


def _closed_form_check(activation: str, X: np.ndarray, K: np.ndarray) -> dict:
    """The closed-form kernel matrix's λ_min and its largest entry difference from the series'
    K — or, where the closed form overflows double precision (``sin(1000000*z)``:
    exp(a²) factors), None for both and the reason, so that the cross-check says it could
    not be made instead of failing the measurement."""
    with np.errstate(all="ignore"):
        K_exact = closed_form_kernel_matrix(activation, X)
    try:
        lam = float(symmetric_eigh(K_exact, what="the closed-form kernel matrix",
                                   vectors=False)[0])
    except NumericalError as exc:
        return {"lambda_min": None, "max_entry_difference": None, "failed": str(exc)}
    return {"lambda_min": lam, "max_entry_difference": float(np.max(np.abs(K_exact - K)))}


def concentration(activation: str, X: np.ndarray, p_values: Sequence[int], *, seed: int = 0,
                  reps: int = 4, order: int = DEFAULT_ORDER,
                  powers: HadamardPowerBounds | None = None,
                  progress: Callable[[str], None] | None = None,
                  deadline: Deadline | None = None) -> dict:
    """Concentration of ΦΦᵀ/p around K for one activation on given data.

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z``.
    X : numpy.ndarray, shape (n, d)
        Rows on the sphere of radius √d.
    p_values : sequence of int
        Numbers of features (sorted, distinct, positive).
    seed : int
        Base seed; V for (rep, index of p) has seed :func:`feature_seed` (independent draws for
        every p and repetition, so the points of the log-log fit have independent errors).
    reps : int
        Independent V per p; the error is averaged over them before the fit.
    order : int
        Truncation order of the kernel series and of the Hermite lower bound.
    powers : HadamardPowerBounds, optional
        Precomputed :func:`rftheory.kernel.hadamard_power_bounds` of X (reused across
        activations).
    progress : callable, optional
        Receives one line per value of p.
    deadline : rftheory.deadline.Deadline, optional
        Checked before each draw of V: once it has passed, the measurement stops and the result
        holds the values of p whose draws all finished, with ``stop_reason = "time_limit"`` and
        ``p_not_run`` (the others). Default: none.

    Returns
    -------
    dict
        JSON-serialisable: inputs, seeds, per-(p, rep) errors and λ_min, their averages, the
        fitted slope (of the averaged curve, and per repetition), λ_min(K), the Hermite lower
        bounds with k₀ = 0 and 2, Σ_{k>=2} μ_k², the closed-form cross-check, and the verdicts.

    Notes
    -----
    ΦΦᵀ/p is :meth:`rftheory.features.RandomFeatures.gram` (streamed) divided by p; the CLT
    standard deviation of the first-order term uses w = Φᵀu from
    :meth:`~rftheory.features.RandomFeatures.rmatvec` (a second pass over V):
    σ̂ = std_j(w_j²). For a simple λ_min(K) with gap δ and E = ΦΦᵀ/p − K, the Rayleigh quotient
    and a two-dimensional argument give, whenever δ > 2‖E‖,
    −‖Eu‖²/(δ − 2‖E‖) <= λ_min(ΦΦᵀ/p) − λ_min(K) − uᵀEu <= 0; that allowance is reported
    (``None`` when δ <= 2‖E‖ and the statement is vacuous).
    """
    deadline = Deadline() if deadline is None else deadline  # None: no deadline
    n, d = X.shape
    p_values = [int(p) for p in p_values]
    check_double_precision(activation)  # refused before any work or progress line
    series = kernel_series(activation, order)
    K, kernel_error = kernel_on_sphere(series, X)
    eigenvalues, eigenvectors = symmetric_eigh(K, what="the kernel matrix K")
    lam_k = float(eigenvalues[0])
    u = eigenvectors[:, 0]
    gap = float(eigenvalues[1] - eigenvalues[0]) if n > 1 else math.inf
    bound0 = hermite_lower_bound(series, X if powers is None else powers, k_min=0)
    bound2 = bound0.with_k_min(2)
    closed = None
    if has_closed_form(activation):
        closed = _closed_form_check(activation, X, K)

    error = np.empty((len(p_values), reps))
    lam = np.empty_like(error)
    rayleigh = np.empty_like(error)
    sd = np.empty_like(error)
    allowance: list[list[float | None]] = []
    seeds = [[feature_seed(seed, r, j) for r in range(reps)] for j in range(len(p_values))]
    finished = len(p_values)
    for j, p in enumerate(p_values):
        row = []
        for r in range(reps):
            if deadline.passed():
                break
            rf = RandomFeatures(activation, d, p, seed=seeds[j][r])
            G = rf.gram(X) / p
            E = G - K
            error[j, r] = float(np.max(np.abs(symmetric_eigh(
                E, what=f"PhiPhi^T/p - K (p = {p})", vectors=False))))
            lam[j, r] = float(symmetric_eigh(G, what=f"PhiPhi^T/p (p = {p})", vectors=False)[0])
            w2 = rf.rmatvec(X, u) ** 2
            rayleigh[j, r] = float(np.mean(w2))
            sd[j, r] = float(np.std(w2, ddof=1) / math.sqrt(p)) if p > 1 else math.nan
            room = gap - 2 * error[j, r]
            row.append(float(np.linalg.norm(E @ u) ** 2 / room) if room > 0 else None)
        if len(row) < reps:  # the deadline passed: keep the values of p whose draws all ran
            finished = j
            break
        allowance.append(row)
        if progress:
            progress(f"{activation}: p = {p}: ||PhiPhi^T/p - K|| = {error[j].mean():.3e}, "
                     f"lambda_min/p = {lam[j].mean():.4e} (lambda_min(K) = {lam_k:.4e})")

    not_run = p_values[finished:]
    if not_run:
        p_values, seeds = p_values[:finished], seeds[:finished]
        error, lam, rayleigh, sd = (a[:finished] for a in (error, lam, rayleigh, sd))
    error_mean = error.mean(axis=1)
    lam_mean = lam.mean(axis=1)
    slope = intercept = None
    slope_per_rep: list[float] = []
    if len(set(p_values)) >= 2:
        slope, intercept = fit_loglog_slope(p_values, error_mean)
        slope_per_rep = [fit_loglog_slope(p_values, error[:, r])[0] for r in range(reps)]
    slope_se = (float(np.std(slope_per_rep, ddof=1) / math.sqrt(reps))
                if len(slope_per_rep) > 1 else None)
    # The same fit on the larger half of the p values: closer to the CLT limit, so a drift
    # between the two slopes shows pre-asymptotic (p ~ n) effects.
    half = len(p_values) // 2
    slope_upper = (fit_loglog_slope(p_values[half:], error_mean[half:])[0]
                   if len(set(p_values[half:])) >= 2 else None)
    # CLT z-score of the rep-averaged deviation of λ_min at each p.
    clt_sd_of_mean = np.sqrt(np.mean(sd**2, axis=1) / reps)
    z = (lam_mean - lam_k) / clt_sd_of_mean
    within_clt = []
    for j in range(len(p_values)):
        ok = [a is not None and abs(lam[j, r] - lam_k) <= CLT_SIGMAS * sd[j, r] + a
              for r, a in enumerate(allowance[j])]
        within_clt.append(None if any(a is None for a in allowance[j]) else all(ok))
    rel_last = float(lam_mean[-1] / lam_k - 1) if lam_k > 0 and len(lam_mean) else math.nan
    verdict = {
        "slope_ok": None if slope is None else abs(slope - EXPECTED_SLOPE) <= SLOPE_TOLERANCE,
        "lambda_min_ok": bool(abs(rel_last) <= LAMBDA_RTOL),
        # λ_min(K_true) >= bound; our K is within kernel_error of K_true in operator norm.
        "hermite_bound_ok": bool(lam_k + kernel_error >= bound0.value),
    }
    verdict["all_ok"] = all(v for v in verdict.values() if v is not None)
    stopped = {"stop_reason": TIME_LIMIT_REACHED, "p_not_run": not_run} if not_run else {}
    return {**stopped,
        "activation": series.activation,
        "n": n, "d": d, "order": series.order, "reps": reps, "seed": seed,
        "p": p_values,
        "v_seeds": seeds,
        "op_error": error.tolist(),
        "op_error_mean": error_mean.tolist(),
        "lambda_min_empirical": lam.tolist(),
        "lambda_min_empirical_mean": lam_mean.tolist(),
        "rayleigh_quotient": rayleigh.tolist(),
        "clt_sd": sd.tolist(),
        "lambda_min_z": z.tolist(),
        "second_order_allowance": allowance,
        "lambda_min_within_clt": within_clt,
        "lambda_min_relative_error_at_max_p": rel_last,
        "slope": slope, "intercept": intercept, "slope_per_rep": slope_per_rep,
        "slope_standard_error": slope_se,
        "slope_upper_half": slope_upper,
        "kernel_eigenvalues": eigenvalues.tolist(),
        "lambda_min_kernel": lam_k,
        "kernel_gap": gap if math.isfinite(gap) else None,
        "kernel_error_bound": kernel_error,
        "hermite_bound_k0": bound0.value,
        "hermite_bound_k2": bound2.value,
        "parseval_tail_k2": bound2.parseval_tail,
        "hermite_terms": list(bound0.terms),
        "hadamard_lambda_min_lower": list(bound0.powers.lower),
        "closed_form": closed,
        "verdict": verdict,
    }


def measure_concentration(activation: str, d: int, n: int, p_values: Sequence[int], *,
                          seed: int = 0, reps: int = 4, order: int = DEFAULT_ORDER,
                          progress: Callable[[str], None] | None = None,
                          deadline: Deadline | None = None) -> dict:
    """Sample X (n Gaussian rows normalised to norm √d, seed ``seed``) and run :func:`concentration`.

    Parameters
    ----------
    activation : str
        A registry name or an expression in ``z``.
    d, n : int
        Input dimension and points.
    p_values : sequence of int
        The widths.
    seed : int
        Seed of the data and, through :func:`feature_seed`, of each V.
    reps : int
        Independent draws of V per width.
    order : int
        Truncation order of the kernel's Hermite series.
    progress : callable, optional
        Called with one line of text per width.
    deadline : rftheory.deadline.Deadline, optional
        Where to stop, keeping the finished widths (see :func:`concentration`).

    Returns
    -------
    dict
        The result of :func:`concentration`: per width the operator-norm errors and λ_min of
        every draw, the CLT standard deviations, λ_min(K), its Hermite bounds and the fitted
        slope.

    Raises
    ------
    RFTheoryError
        For d, n, reps, order not positive integers, p values not positive integers, or a
        negative seed.

    Examples
    --------
    >>> from rftheory.concentration import measure_concentration
    >>> c = measure_concentration("relu", d=10, n=8, p_values=[256, 4096], reps=2)
    >>> err = c["op_error_mean"]
    >>> bool(err[1] < err[0]), -1.0 < c["slope"] < 0.0  # the error falls roughly as p^(-1/2)
    (True, True)
    """
    for name, value, low in (("d", d, 1), ("n", n, 1), ("reps", reps, 1), ("order", order, 0),
                             ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise RFTheoryError(f"{name} must be an integer >= {low}, got {value!r}")
    p_values = list(p_values)
    if not p_values:
        raise RFTheoryError("give at least one value of p")
    for p in p_values:
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
            raise RFTheoryError(f"p must be positive integers, got {p!r}")
    p_values = sorted(set(int(p) for p in p_values))
    X = sphere_points(int(n), int(d), int(seed))
    return concentration(activation, X, p_values, seed=int(seed), reps=int(reps),
                         order=int(order), progress=progress, deadline=deadline)


def lambda_min_vs_d(activations: Sequence[str], n: int, d_values: Sequence[int], *,
                    seed: int = 0, order: int = DEFAULT_ORDER,
                    progress: Callable[[str], None] | None = None) -> dict:
    """λ_min(K) against its Hermite lower bounds and Σ_{k>=2} μ_k², as d grows at fixed n.

    For each d, X = ``sphere_points(n, d, seed)``; the Hadamard-power bounds are computed once per
    d and shared by the activations.

    Parameters
    ----------
    activations : sequence of str
        Registry names or expressions in ``z``.
    n : int
        Points.
    d_values : sequence of int
        Input dimensions.
    seed : int
        Seed of the data.
    order : int
        Truncation order of the Hermite series.
    progress : callable, optional
        Called with one line of text per finished d.

    Returns
    -------
    dict
        ``{"n", "d", "seed", "order", "activations": {name: {"lambda_min_kernel": [...],
        "hermite_bound_k0": [...], "hermite_bound_k2": [...], "parseval_tail_k2": float,
        "closed_form_lambda_min": [...] or None, "bound_ok": [...]}}, "hadamard_lambda_min_2":
        [...], "hadamard_lambda_min_3": [...]}``.
    """
    series = {a: kernel_series(a, order) for a in activations}
    out: dict[str, Any] = {"n": n, "d": list(d_values), "seed": seed, "order": order,
                           "hadamard_lambda_min_2": [], "hadamard_lambda_min_3": [],
                           "activations": {}}
    for a, s in series.items():
        out["activations"][s.activation] = {
            "lambda_min_kernel": [], "hermite_bound_k0": [], "hermite_bound_k2": [],
            "closed_form_lambda_min": [] if has_closed_form(a) else None, "bound_ok": [],
            "parseval_tail_k2": None}
    for d in d_values:
        X = sphere_points(n, d, seed)
        powers = hadamard_power_bounds(X, order)
        out["hadamard_lambda_min_2"].append(powers.lower[2] if order >= 2 else None)
        out["hadamard_lambda_min_3"].append(powers.lower[3] if order >= 3 else None)
        for a, s in series.items():
            K, kernel_error = kernel_on_sphere(s, X)
            lam = float(symmetric_eigh(K, what=f"the kernel matrix K (d = {d})",
                                       vectors=False)[0])
            b0 = hermite_lower_bound(s, powers, k_min=0)
            b2 = b0.with_k_min(2)
            entry = out["activations"][s.activation]
            entry["lambda_min_kernel"].append(lam)
            entry["hermite_bound_k0"].append(b0.value)
            entry["hermite_bound_k2"].append(b2.value)
            entry["parseval_tail_k2"] = b2.parseval_tail
            entry["bound_ok"].append(bool(lam + kernel_error >= b0.value))
            if entry["closed_form_lambda_min"] is not None:
                entry["closed_form_lambda_min"].append(
                    _closed_form_check(a, X, K)["lambda_min"])
        if progress:
            progress(f"lambda_min vs d: d = {d} done (n = {n})")
    return out


def plot_curves(curves: Sequence[dict], stem: Path, sweep: dict | None = None) -> list[Path]:
    """Draw the concentration figure: (a) the error against p, (b) λ_min against p, (c) λ_min(K)
    against d.

    (a) ‖ΦΦᵀ/p − K‖_op against p (log–log; the mean over the draws of V, bars from the smallest
    to the largest draw), with a p^{−1/2} reference line and each activation's fitted slope in
    the legend. (b) λ_min(ΦΦᵀ)/p against p (mean over draws, bars ± the CLT standard deviation
    σ̂_u/√p): it converges to λ_min(K) (solid horizontal line), which lies above the Hermite lower
    bound Σ_k μ_k² λ_min((XXᵀ/d)^∘k) (dotted). (c), when ``sweep`` is given: λ_min(K) (solid, dots)
    and its Hermite bound (dashed) against d at fixed n, both divided by Σ_{k≥2} μ_k² — the
    large-d value both approach. Values ≤ 0 (or below the axis' floor), which a log axis cannot
    show, are drawn as open down-triangles on the bottom edge.

    Parameters
    ----------
    curves : sequence of dict
        Results of :func:`concentration` (one per activation).
    stem : path
        Where to write ``stem.png`` and ``stem.pdf``.
    sweep : dict, optional
        A result of :func:`lambda_min_vs_d` (panel (c)).

    Returns
    -------
    list of Path
        The PNG's and the PDF's paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    from .plotting import PALETTE, SYMBOLS, legend_above, log_values, mark_floor, panel_label, \
        paper_figure, paper_style, tidy_log_axis

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    colours = {c["activation"]: PALETTE[i % len(PALETTE)] for i, c in enumerate(curves)}
    if sweep:
        for name in sweep["activations"]:
            colours.setdefault(name, PALETTE[len(colours) % len(PALETTE)])
    panels = 3 if sweep else 2
    with paper_style():
        fig, axes = paper_figure(2, ncols=panels, aspect=0.95 if panels == 3 else 0.75)
        ax = axes[0]
        for c in curves:
            p = np.asarray(c["p"], dtype=float)
            err = np.asarray(c["op_error"], dtype=float)
            mean = err.mean(axis=1)
            label = c["activation"] + ("" if c["slope"] is None else f", slope {c['slope']:.2f}")
            ax.errorbar(p, mean, yerr=[mean - err.min(axis=1), err.max(axis=1) - mean],
                        marker="o", color=colours[c["activation"]], label=label)
        p_all = np.asarray(curves[0]["p"], dtype=float)
        anchor = np.exp(np.mean([np.log(c["op_error_mean"][0]) for c in curves]))
        ax.plot(p_all, anchor * (p_all / p_all[0]) ** EXPECTED_SLOPE, "k--", lw=0.8,
                label=r"$\propto p^{-1/2}$")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(SYMBOLS["p"])
        ax.set_ylabel(SYMBOLS["op_error"])
        panel_label(ax, "a")

        ax = axes[1]
        positive = [v for c in curves for v in (c["lambda_min_kernel"], c["hermite_bound_k0"],
                                                *np.ravel(c["lambda_min_empirical"])) if v > 0]
        low_all = [v for c in curves for v in np.ravel(c["lambda_min_empirical"])]
        floor = (min(positive) / (3.0 if min(low_all) <= 0 else 1.25)) if positive else 1e-16
        marked = 0
        for c in curves:
            colour = colours[c["activation"]]
            p = np.asarray(c["p"], dtype=float)
            lam = np.asarray(c["lambda_min_empirical"], dtype=float).mean(axis=1)
            sd = np.asarray(c["clt_sd"], dtype=float).mean(axis=1)
            shown, below = log_values(lam, floor)
            low = np.where(shown - sd > floor, sd, shown - floor)  # bars stay above the floor
            ax.errorbar(p, shown, yerr=[np.nan_to_num(low), sd], marker="o", color=colour)
            marked += mark_floor(ax, p, lam, floor, color=colour)
            for value, style in ((c["lambda_min_kernel"], "-"), (c["hermite_bound_k0"], ":")):
                if value > floor:
                    ax.axhline(value, color=colour, ls=style, lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(bottom=floor)
        tidy_log_axis(ax, "y")
        ax.set_xlabel(SYMBOLS["p"])
        ax.set_ylabel(r"$\lambda_{\min}(\Phi\Phi^\top)/p$")
        panel_label(ax, "b")

        if sweep:
            ax = axes[2]
            d = np.asarray(sweep["d"], dtype=float)
            ratios = []
            for name, e in sweep["activations"].items():
                s2 = e["parseval_tail_k2"]
                ratios.append((name, np.asarray(e["lambda_min_kernel"]) / s2,
                               np.asarray(e["hermite_bound_k0"]) / s2))
            positive = [v for _, a, b in ratios for v in (*a, *b) if v > 0]
            low_all = [v for _, a, b in ratios for v in (*a, *b)]
            floor = (min(positive) / (3.0 if min(low_all) <= 0 else 1.25)) if positive else 1e-16
            for name, lam, bound in ratios:
                colour = colours[name]
                ax.plot(d, log_values(lam, floor)[0], "o-", color=colour)
                ax.plot(d, log_values(bound, floor)[0], "--", color=colour, lw=0.8)
                marked += mark_floor(ax, d, lam, floor, color=colour)
                marked += mark_floor(ax, d, bound, floor, color=colour)
            ax.axhline(1.0, color="0.5", lw=0.6)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_ylim(bottom=floor)
            ax.set_xlabel(r"$d$" + f"  ($n = {sweep['n']}$)")
            ax.set_ylabel(r"$\lambda_{\min}(K)\,/\sum_{k\geq 2}\mu_k^2$")
            panel_label(ax, "c")
        handles, labels = axes[0].get_legend_handles_labels()
        if marked:
            handles.append(axes[1].plot([], [], "v", mfc="none", mec="k", ms=4)[0])
            labels.append(r"$\leq 0$ (on the axis floor)")
        legend_above(fig, handles, labels, ncol=min(len(handles), 3 if panels == 2 else 6))
        return save_figure(fig, stem)


def measurement_memory(*, d: float, n: float, p_values: Sequence[float],
                       order: float = DEFAULT_ORDER) -> Any:
    """Peak memory of :func:`measure_concentration` (float64), as a
    :class:`rftheory.budget.Memory`: the n × n matrices (K and its eigenvectors, T and its
    Hadamard powers, E = G/p − K), the data, and for the largest p a streamed Gram pass and a
    Φᵀu pass (V never cached) with w = Φᵀu.

    Parameters
    ----------
    d, n : float
        Input dimension and points.
    p_values : sequence of float
        The widths (at least one).
    order : float
        Truncation order (sizes nothing here; accepted for symmetry with the measurement).

    Returns
    -------
    rftheory.budget.Memory

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``p_values`` is empty or not numbers, or a size is not positive.

    Examples
    --------
    >>> measurement_memory(d=10, n=20, p_values=[100, 400]).peak_bytes < 2**22
    True
    """
    from . import budget
    from .features import available_cores, stream_memory

    d, n = budget.size("d", d), budget.size("n", n)
    try:
        ps = [budget.size("p", p) for p in p_values]
    except TypeError:
        raise RFTheoryError(f"p_values must be a list of numbers, got {p_values!r}") from None
    if not ps:
        raise RFTheoryError("give at least one value of p")
    threads = available_cores()
    dense = 6 * n * n * 8.0
    data = n * d * 8.0
    stream = 0.0
    for p in ps:
        gram = stream_memory(n, d, p, 8, threads=threads, gram=True)
        back = stream_memory(n, d, p, 8, threads=threads, outputs=1)
        stream = max(stream, gram, back + 3 * p * 8.0)
    job = (f"kernel (d = {budget.show(d)}, n = {budget.show(n)}, p up to {budget.show(max(ps))})")
    return budget.Memory(job, dense + data + stream + 2.0**19,
                         (("n × n matrices", dense), ("streamed chunks", stream), ("data X", data)))
