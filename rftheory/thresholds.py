"""Fitted thresholds: a success curve in log p by maximum likelihood, with an honest interval.

A threshold such as p*_data is where the probability that a run succeeds crosses 1/2. Every run
is one Bernoulli outcome at its p, so the estimate uses *every run at every p*: the success
probability is modelled as

    P(success | p) = F((log p − log p*)/σ),

with F the standard normal CDF (``link="probit"``, default) or the logistic function
(``link="logit"``), location log p* and width σ (in log p), fitted by maximum likelihood
(:func:`fit_threshold`). Its interval is the profile-likelihood interval of the location: every
log p* whose likelihood, maximised over σ, is within χ²₁(level)/2 of the maximum (Wilks).

What the grid cannot tell is said, not hidden (:data:`STATUSES`):

* no failing run (``"below_grid"``) or no succeeding run (``"above_grid"``): the threshold is
  *not located*, only bounded by the grid's end;
* every failure below every success (perfect separation, ``"step"``): the likelihood grows
  without bound as σ → 0, so the width is not identified; the location is then the geometric
  midpoint of the gap between the last failing and the first succeeding p (where the crossing
  rule puts it too), and the interval is still the profile-likelihood interval, which contains
  the whole gap — a step anywhere in it fits the data perfectly — and extends beyond it by how
  far a finite width could stretch (never of zero width);
* a likelihood that does not fall by χ²₁(level)/2 within the search range on one side
  (``"open"``): that end of the interval is ±inf.

:func:`followup_points` is a sequential design: given the runs so far, where the next runs
narrow the interval of the location most (or nothing, once it is narrow enough).

:func:`crossing` keeps the older rule (linear interpolation of the success fraction in log p
between the grid points around the 1/2 crossing), as a labelled secondary number.

Across several problem sizes, :func:`power_law_fit` fits log p* = a + b·log d + c·log n to fitted
thresholds and their intervals and compares it with the one-parameter alternatives p* ∝ dn,
p* ∝ n and p* ∝ d.

Examples
--------
>>> import numpy as np
>>> p = np.repeat([80, 90, 100, 110, 120, 130], 4)
>>> ok = np.array([0,0,0,0, 0,0,0,1, 0,1,0,1, 1,0,1,1, 1,1,1,1, 1,1,1,1], dtype=bool)
>>> fit = fit_threshold(p, ok)
>>> fit.status, round(fit.location, 1), fit.interval[0] < fit.location < fit.interval[1]
('ok', 99.4, True)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np

from .errors import RFTheoryError

__all__ = ["STATUSES", "LINKS", "ThresholdFit", "fit_threshold", "crossing", "PowerLawFit",
           "power_law_fit", "label_threshold", "p_values", "interval_sides", "resolved",
           "meets_target", "followup_points", "CRITERIA", "SEQUENTIAL_PROFILE_LEVEL"]

#: Values of :attr:`ThresholdFit.status`; the first two locate the threshold.
STATUSES = ("ok", "step", "open", "below_grid", "above_grid")
#: Links of :func:`fit_threshold` (the CDF F of the success curve).
LINKS = ("probit", "logit")

#: What a sequential design's target can mean (:func:`resolved`): each side of the interval
#: within the resolution, or the whole interval within twice it.
CRITERIA = ("sides", "width")

#: The profile-likelihood level whose interval, after :func:`followup_points` stopped on it,
#: covers the true threshold about 95 % of the time. A rule that stops as soon as the interval
#: looks narrow enough stops more often on samples whose interval is narrow by chance, so the
#: nominal level's interval covers less after it. Measured (probit curves at 1.12·dn, dn = 48,
#: first pass 0.9–2·dn with 2 seeds, then the design; 300 sequential runs per row; ``python
#: benchmarks/threshold_coverage.py`` and ``... --level 0.95 --resolution 0.045``, seed 0):
#:
#: ======  ==========================  ==========================  ====================
#: σ       level 0.95, ±0.045·dn       level 0.98, ±0.049·dn       runs (median, 0.98)
#: ======  ==========================  ==========================  ====================
#: 0.03    91 %                        99 %                        27
#: 0.06    89 %                        94 %                        39.5
#: 0.10    91 %                        96 %                        70.5
#: ======  ==========================  ==========================  ====================
#:
#: The same final runs refitted with fresh outcomes (a fixed design of that size) cover 92–97 %
#: at 0.95 (97–98 % at 0.98), so the loss is the stopping rule's (measured 2026-12-04). Stopping on the 0.98 interval but reporting the
#: 0.95 one does not help (85–86 % in a first measurement): the reported interval must be the
#: one the rule stopped on.
SEQUENTIAL_PROFILE_LEVEL = 0.98

#: Smallest width σ the fit allows, as a fraction of the smallest spacing between distinct
#: log p: a step sharper than that is indistinguishable from a step at any σ below it (no run
#: lies in between), so the likelihood is maximised on this bound exactly when the data are
#: separable, and the status says "step".
_SIGMA_FLOOR = 1e-3


def _log_cdf(eta: np.ndarray, link: str) -> np.ndarray:
    from scipy import special

    return special.log_ndtr(eta) if link == "probit" else special.log_expit(eta)


def _dlog_cdf(eta: np.ndarray, link: str) -> np.ndarray:
    """d/dη log F(η): the inverse Mills ratio (probit), F(−η) (logit)."""
    from scipy import special

    if link == "probit":  # φ(η)/Φ(η), in logs: accurate far in the lower tail
        return np.exp(-0.5 * eta * eta - 0.5 * math.log(2 * math.pi) - special.log_ndtr(eta))
    return special.expit(-eta)


def _loglik(eta: np.ndarray, y: np.ndarray, link: str) -> float:
    """Σ log F(±η): a success contributes log F(η), a failure log F(−η) = log(1 − F(η))."""
    sign = np.where(y, 1.0, -1.0)
    return float(np.sum(_log_cdf(sign * eta, link)))


@dataclasses.dataclass(frozen=True)
class ThresholdFit:
    """A fitted success curve P(success | p) = F((log p − log p*)/σ) (see :func:`fit_threshold`).

    Attributes
    ----------
    location : float
        p*, where the fitted probability is 1/2 (NaN when not located).
    width : float
        σ, the curve's width in log p (NaN when not identified: ``"step"`` or not located).
        P goes from 0.16 to 0.84 (probit) between p*·e^(−σ) and p*·e^σ.
    interval : tuple of float
        The profile-likelihood interval of p* at ``level`` (±inf on an open side, NaN when not
        located).
    status : str
        One of :data:`STATUSES` (module docstring).
    bound : float
        What is known when not located: the smallest p (``"below_grid"``: p* ≤ bound) or the
        largest p (``"above_grid"``: p* > bound); NaN otherwise.
    gap : tuple of float
        (largest failing p, smallest succeeding p); for ``"step"`` every p* in it fits the data
        perfectly. NaN where a side has no run.
    crossing : float
        The secondary number: the crossing rule (:func:`crossing`) on the success fraction per p.
    crossing_status : str
        :func:`crossing`'s status.
    link : str
        One of :data:`LINKS`.
    level : float
        Confidence level of ``interval``.
    loglik : float
        The maximised log-likelihood.
    runs, successes : int
        Number of runs and of successes.
    """

    location: float
    width: float
    interval: tuple[float, float]
    status: str
    bound: float
    gap: tuple[float, float]
    crossing: float
    crossing_status: str
    link: str
    level: float
    loglik: float
    runs: int
    successes: int

    @property
    def located(self) -> bool:
        """Whether the grid locates p* (status ``"ok"``, ``"step"`` or ``"open"``)."""
        return self.status in ("ok", "step", "open")

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (tuples as lists), for JSON results."""
        out = dataclasses.asdict(self)
        out["interval"] = list(self.interval)
        out["gap"] = list(self.gap)
        return out

    def scaled(self, factor: float) -> dict[str, float | list[float]]:
        """The location, interval, gap and crossing divided by ``factor`` (e.g. dn).

        Parameters
        ----------
        factor : float
            Positive divisor.

        Returns
        -------
        dict
            ``location``, ``interval``, ``gap``, ``crossing``, each over ``factor``.
        """
        return {"location": self.location / factor,
                "interval": [x / factor for x in self.interval],
                "gap": [x / factor for x in self.gap], "crossing": self.crossing / factor}


def crossing(p: Sequence[float], success: Sequence[float], level: float = 0.5) -> tuple[float, str]:
    """Where a success-probability curve crosses ``level`` (the older, secondary rule).

    Takes the *last* grid interval where the curve goes from below ``level`` to at or above it
    and interpolates linearly in log p. It reads only the grid points around the crossing, so
    when the success fraction jumps from 0 to 1 between two grid points it returns their
    geometric midpoint whatever the data — a number of the grid, not of the runs; read
    :func:`fit_threshold` first.

    Parameters
    ----------
    p : sequence of float, length m
        Grid (sorted, increasing, positive).
    success : sequence of float, length m
        Success probability at each p.
    level : float
        The crossing level (default 1/2).

    Returns
    -------
    tuple of (float, str)
        (p_star, status): ``"ok"``, ``"below_grid"`` (already ≥ level at the first p; p_star is
        that p, an upper bound) or ``"above_grid"`` (never reaches level after its last dip;
        p_star is NaN).

    Examples
    --------
    >>> p_star, status = crossing([10, 100], [0.0, 1.0])    # halfway in log p: √(10·100)
    >>> round(p_star, 6), status
    (31.622777, 'ok')
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


def _check_runs(p: Any, success: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        p = np.asarray(p, dtype=np.float64).ravel()
        y = np.asarray(success).ravel()
    except (TypeError, ValueError) as exc:
        raise RFTheoryError(f"p must be numbers and success booleans: {exc}") from None
    if p.shape != y.shape or p.size == 0:
        raise RFTheoryError(f"p and success must have the same non-zero length, got {p.size} "
                            f"and {y.size}")
    if not np.all(np.isfinite(p) & (p > 0)):
        raise RFTheoryError("p must be positive and finite")
    if y.dtype != bool:
        if not np.all((y == 0) | (y == 1)):
            raise RFTheoryError("success must be booleans (or 0/1)")
        y = y.astype(bool)
    return p, y


def fit_threshold(p: Any, success: Any, *, link: str = "probit",
                  level: float = 0.95) -> ThresholdFit:
    """Fit P(success | p) = F((log p − log p*)/σ) to binary runs by maximum likelihood.

    Parameters
    ----------
    p : array_like of float, shape (runs,)
        The p of every run (any order; repeated values are the seeds of one grid point).
    success : array_like of bool, shape (runs,)
        Whether each run succeeded.
    link : {"probit", "logit"}
        F: the standard normal CDF (default) or the logistic function.
    level : float
        Confidence level of the interval (default 0.95), in (0, 1).

    Returns
    -------
    ThresholdFit
        Location, width, interval, status (see the module docstring) and the secondary crossing.

    Raises
    ------
    rftheory.errors.RFTheoryError
        For inputs of different lengths, non-positive p, non-boolean outcomes, an unknown link
        or a level outside (0, 1).

    Notes
    -----
    The model is a binomial GLM in x = log p with linear predictor β(x − μ), β = 1/σ; its
    log-likelihood is concave in (α, β) = (−βμ, β), so the bounded quasi-Newton maximisation
    (:func:`scipy.optimize.minimize`, L-BFGS-B, analytic gradient) finds the global maximum.
    β is capped at 1/(10⁻³·smallest spacing of distinct log p): the cap binds exactly when the
    data are (quasi-)separable, and then the width is reported as not identified.

    The interval inverts the likelihood-ratio test: {μ : 2(ℓ̂ − max_σ ℓ(μ, σ)) ≤ χ²₁(level)}.
    For fixed μ the log-likelihood is concave in β, so the profile is a bounded scalar
    maximisation (:func:`scipy.optimize.minimize_scalar`); the ends are roots of the profile
    found by :func:`scipy.optimize.brentq`, searched within one grid range (at least log 2)
    beyond the grid on each side. Accuracy: the ends are exact to ~1e-9 in log p (brentq's
    tolerance; the inner maximisations to ~1e-10 relative), far below their statistical
    uncertainty. Coverage is asymptotic (Wilks); with a few seeds per point and a sharp curve
    it is approximate — measured near the nominal 95 % on synthetic probit data with 3–6 seeds
    per point (tests/test_thresholds.py). The model assumes independent runs and a curve that
    rises monotonically in p; runs of one seed at several p share data in the law's sweep, which
    the fit ignores.

    Examples
    --------
    >>> fit_threshold([10, 10, 20, 20, 40, 40], [0, 0, 0, 1, 1, 1]).status
    'ok'
    >>> step = fit_threshold([10, 10, 20, 20], [0, 0, 1, 1])  # separated: a step in [10, 20]
    >>> step.status, round(step.location, 3), step.gap, math.isnan(step.width)
    ('step', 14.142, (10.0, 20.0), True)
    >>> step.interval[0] < 10 and step.interval[1] > 20
    True
    >>> fit_threshold([10, 20], [1, 1]).status, fit_threshold([10, 20], [1, 1]).bound
    ('below_grid', 10.0)
    """
    from threadpoolctl import threadpool_limits

    # A problem of two unknowns: BLAS threads (L-BFGS-B's) only add synchronisation, and on a
    # loaded machine their spinning costs 10x the fit.
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit_threshold(p, success, link, level)


def _fit_threshold(p: Any, success: Any, link: str, level: float) -> ThresholdFit:
    from scipy import optimize, stats

    if link not in LINKS:
        raise RFTheoryError(f"link must be one of {', '.join(LINKS)}, got {link!r}")
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise RFTheoryError(f"level must be in (0, 1), got {level!r}")
    p, y = _check_runs(p, success)
    x = np.log(p)
    ps = np.unique(p)
    frac = np.array([y[p == q].mean() for q in ps])
    cross, cross_status = crossing(ps, frac)
    fails, succs = p[~y], p[y]
    gap = (float(fails.max()) if fails.size else math.nan,
           float(succs.min()) if succs.size else math.nan)
    nan2 = (math.nan, math.nan)
    common = dict(gap=gap, crossing=cross, crossing_status=cross_status, link=link,
                  level=float(level), runs=int(y.size), successes=int(y.sum()))
    if not fails.size or not succs.size:
        status = "below_grid" if not fails.size else "above_grid"
        bound = float(p.min()) if not fails.size else float(p.max())
        return ThresholdFit(math.nan, math.nan, nan2, status, bound, loglik=0.0, **common)

    # Centre and scale x for conditioning: t = (x − c)/s.
    c, s = float(x.mean()), float(max(x.max() - x.min(), math.log(2.0)))
    t = (x - c) / s
    spacing = np.diff(np.unique(t))
    beta_max = 1.0 / (_SIGMA_FLOOR * (spacing.min() if spacing.size else 1.0))
    sign = np.where(y, 1.0, -1.0)

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        alpha, beta = theta
        eta = alpha + beta * t
        g = sign * _dlog_cdf(sign * eta, link)
        return -_loglik(eta, y, link), -np.array([g.sum(), (g * t).sum()])

    best = optimize.minimize(nll, np.array([0.0, 1.0]), jac=True, method="L-BFGS-B",
                             bounds=[(None, None), (0.0, beta_max)],
                             options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 1000})
    alpha, beta = best.x
    separated = bool(fails.max() < succs.min())
    step = separated or beta >= beta_max * (1 - 1e-6)
    if separated:
        mu = 0.5 * ((math.log(gap[0]) - c) / s + (math.log(gap[1]) - c) / s)
    elif beta > 0:
        mu = -alpha / beta
    else:  # no dependence on p at all: the curve is flat, the data place no threshold
        mu = float(np.median(t))

    def profile(m: float) -> float:
        res = optimize.minimize_scalar(lambda b: -_loglik(b * (t - m), y, link),
                                       bounds=(0.0, beta_max), method="bounded",
                                       options={"xatol": 1e-10 * beta_max})
        # β = 0 (a flat curve, P = 1/2 everywhere) is the bounded search's other candidate
        return max(-float(res.fun), _loglik(np.zeros_like(t), y, link))

    top = max(-float(best.fun), profile(mu))
    cut = stats.chi2.ppf(level, 1) / 2

    def excess(m: float) -> float:
        return top - profile(m) - cut

    reach = 1.0  # one scaled grid range beyond the grid
    ends, open_side = [], False
    # μ outside its own confidence set happens only when the data do not rise with p (e.g. every
    # run succeeds but one at the top: β → 0 and μ = −α/β runs off): no side is bounded then.
    inside = excess(mu) <= 0
    for edge in (float(t.min()) - reach, float(t.max()) + reach):
        if not inside or excess(edge) <= 0:
            ends.append(-math.inf if edge < mu else math.inf)
            open_side = True
        else:
            ends.append(optimize.brentq(excess, min(mu, edge), max(mu, edge), xtol=1e-9 / s))
    lo, hi = (math.exp(c + s * e) if math.isfinite(e) else e for e in ends)
    status = "open" if open_side else ("step" if step else "ok")
    width = math.nan if step or beta == 0 else float(s / beta)
    return ThresholdFit(float(math.exp(c + s * mu)), width, (float(lo), float(hi)), status,
                        math.nan, loglik=top, **common)


@dataclasses.dataclass(frozen=True)
class PowerLawFit:
    """log p* = a + b·log d + c·log n fitted to thresholds with intervals (:func:`power_law_fit`).

    Attributes
    ----------
    points : int
        Thresholds used (located, with a finite interval).
    exponents : dict
        ``{"d": b, "n": c}`` (NaN when the grid cannot identify them).
    intervals : dict
        ``{"d": [lo, hi], "n": [lo, hi]}`` at ``level``.
    prefactor : float
        e^a.
    level : float
        Confidence level of the intervals.
    scale : float
        The factor multiplying the per-threshold errors: √(χ²/dof) of the free fit when above 1
        (scatter beyond the intervals, e.g. a law that holds only roughly), else 1.
    models : dict
        For each of ``"free"`` (a, b, c), ``"dn"`` (b = c = 1), ``"n"`` (b = 0, c = 1),
        ``"d"`` (b = 1, c = 0): ``params`` (number of free parameters), ``prefactor`` (e^a of the
        model), ``chi2``, ``loglik`` and ``aic`` (Gaussian, errors from the intervals times
        ``scale``).
    """

    points: int
    exponents: dict[str, float]
    intervals: dict[str, list[float]]
    prefactor: float
    level: float
    scale: float
    models: dict[str, dict[str, float]]

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict."""
        return dataclasses.asdict(self)


def power_law_fit(d: Any, n: Any, location: Any, interval: Any, *,
                  level: float = 0.95) -> PowerLawFit:
    """Weighted least squares of log p* = a + b·log d + c·log n, with the alternatives compared.

    Parameters
    ----------
    d, n : array_like of float, shape (k,)
        The problem sizes.
    location : array_like of float, shape (k,)
        Fitted thresholds p* (NaN: left out).
    interval : array_like of float, shape (k, 2)
        Their intervals at ``level`` (a non-finite end: left out).
    level : float
        Confidence level of the thresholds' intervals and of the exponents' (default 0.95).

    Returns
    -------
    PowerLawFit
        NaN exponents when fewer than 3 thresholds are usable or d or n takes one value only.

    Notes
    -----
    Each threshold's error in log p* is σ_i = (log hi − log lo)/(2 z), z the normal quantile of
    ``level`` (the intervals of :func:`fit_threshold` are asymmetric; this uses their mean
    half-width). The fit is :func:`scipy.optimize.curve_fit` with ``absolute_sigma=True``; when
    the free fit's χ²/dof exceeds 1 the errors are multiplied by √(χ²/dof) (the Birge ratio) and
    the exponents' intervals use Student's t with dof = k − 3, else the normal quantile. With
    k = 3 (dof 0) the intervals come from the thresholds' own errors only. The alternatives'
    log-likelihoods are Gaussian in log p* with the same (scaled) errors: ℓ = −χ²/2 −
    Σ log(σ_i √(2π)), AIC = 2·params − 2ℓ. Exact up to rounding (a linear least-squares problem
    of 3 unknowns); statistically the errors are only as good as the thresholds' intervals.

    Examples
    --------
    >>> d = [10, 20, 10, 20]; n = [4, 4, 8, 8]
    >>> star = [1.1 * a * b for a, b in zip(d, n)]
    >>> fit = power_law_fit(d, n, star, [[0.9 * s, 1.1 * s] for s in star])
    >>> round(fit.exponents["d"], 6), round(fit.exponents["n"], 6), round(fit.prefactor, 6)
    (1.0, 1.0, 1.1)
    >>> fit.models["dn"]["aic"] < fit.models["n"]["aic"]
    True
    """
    from scipy import optimize, stats

    d = np.asarray(d, dtype=np.float64).ravel()
    n = np.asarray(n, dtype=np.float64).ravel()
    loc = np.asarray(location, dtype=np.float64).ravel()
    iv = np.asarray(interval, dtype=np.float64).reshape(-1, 2)
    if not (d.size == n.size == loc.size == iv.shape[0]):
        raise RFTheoryError("d, n, location and interval must describe the same thresholds")
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise RFTheoryError(f"level must be in (0, 1), got {level!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        keep = (np.isfinite(loc) & (loc > 0) & np.all(np.isfinite(iv) & (iv > 0), axis=1)
                & (iv[:, 1] > iv[:, 0]) & (d > 0) & (n > 0))
    d, n, loc, iv = d[keep], n[keep], loc[keep], iv[keep]
    k = int(keep.sum())
    nan2 = [math.nan, math.nan]
    empty = PowerLawFit(k, {"d": math.nan, "n": math.nan}, {"d": nan2, "n": nan2}, math.nan,
                        float(level), math.nan, {})
    if k < 3 or np.unique(d).size < 2 or np.unique(n).size < 2:
        return empty
    z = stats.norm.ppf(0.5 + level / 2)
    y, ld, ln = np.log(loc), np.log(d), np.log(n)
    sigma = (np.log(iv[:, 1]) - np.log(iv[:, 0])) / (2 * z)

    def line(X: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
        return a + b * X[0] + c * X[1]

    X = np.vstack([ld, ln])
    coef, cov = optimize.curve_fit(line, X, y, p0=[0.0, 1.0, 1.0], sigma=sigma,
                                   absolute_sigma=True)
    chi2_free = float(np.sum(((y - line(X, *coef)) / sigma) ** 2))
    dof = k - 3
    scale = math.sqrt(chi2_free / dof) if dof > 0 and chi2_free > dof else 1.0
    q = stats.t.ppf(0.5 + level / 2, dof) if scale > 1.0 else z
    se = np.sqrt(np.diag(cov)) * scale
    intervals = {name: [float(coef[i] - q * se[i]), float(coef[i] + q * se[i])]
                 for name, i in (("d", 1), ("n", 2))}
    s = sigma * scale
    w = 1.0 / s**2
    norm = float(np.sum(np.log(s * math.sqrt(2 * math.pi))))
    models: dict[str, dict[str, float]] = {}
    for name, fixed in (("free", None), ("dn", (1.0, 1.0)), ("n", (0.0, 1.0)), ("d", (1.0, 0.0))):
        if fixed is None:
            a, params, resid = coef[0], 3, y - line(X, *coef)
        else:
            off = y - fixed[0] * ld - fixed[1] * ln
            a = float(np.sum(w * off) / np.sum(w))  # weighted mean: the model's least squares
            params, resid = 1, off - a
        chi2 = float(np.sum(w * resid**2))
        loglik = -chi2 / 2 - norm
        models[name] = {"params": params, "prefactor": float(math.exp(a)), "chi2": chi2,
                        "loglik": loglik, "aic": 2 * params - 2 * loglik}
    return PowerLawFit(k, {"d": float(coef[1]), "n": float(coef[2])}, intervals,
                       float(math.exp(coef[0])), float(level), float(scale), models)


def label_threshold(p: Sequence[float], residual: Any, tol: float = 1e-6) -> dict[str, Any]:
    """p*_label: the smallest grid p from which every seed's train residual is below ``tol``.

    Parameters
    ----------
    p : sequence of float, length m
        The grid (sorted).
    residual : array_like, shape (seeds, m)
        Train residual ‖Φθ* − Y‖/‖Y‖ of each seed at each p (NaN: a run that is not there,
        left out; a p without any run counts as not fit).
    tol : float
        Residual below which the labels count as fit (default 1e-6, the law claim's
        ``LABEL_TOL``).

    Returns
    -------
    dict
        ``p_star`` (NaN if the largest p does not fit), ``p_below`` (the grid point just
        before, the other end of the bracket; NaN if none) and ``max_residual`` (the largest
        residual per p).

    Notes
    -----
    Exact comparisons: the residual of a least-squares fit jumps by many decades between p = n − 1
    and p = n, so the result does not depend on ``tol`` over that range.

    Examples
    --------
    >>> label_threshold([3, 4, 8], [[0.3, 1e-15, 1e-15], [0.2, 1e-14, 1e-15]])["p_star"]
    4.0
    """
    table = np.asarray(residual, dtype=np.float64)
    present = ~np.all(np.isnan(table), axis=0)
    worst = np.full(table.shape[1], np.nan)
    worst[present] = np.nanmax(table[:, present], axis=0)
    bad = np.flatnonzero(~(worst < tol))
    if bad.size == 0:
        j = 0
    elif bad[-1] == len(p) - 1:
        return {"p_star": math.nan, "p_below": float(p[-1]), "max_residual": worst.tolist()}
    else:
        j = int(bad[-1]) + 1
    return {"p_star": float(p[j]), "p_below": float(p[j - 1]) if j > 0 else math.nan,
            "max_residual": worst.tolist()}


def p_values(d: int, n: int, ratios: Sequence[float]) -> list[int]:
    """The p of a threshold sweep for one (d, n): round(r·dn) for every ratio r, plus n − 1, n
    and n/2.

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


def interval_sides(fit: ThresholdFit, unit: float = 1.0) -> tuple[float, float]:
    """How far the interval of a fitted threshold reaches below and above its location.

    Parameters
    ----------
    fit : ThresholdFit
        A fit of :func:`fit_threshold`.
    unit : float
        Divisor of both sides (e.g. dn, for sides in units of dn).

    Returns
    -------
    (float, float)
        ``(location − lo, hi − location)/unit``; inf for an open side, NaN when not located.

    Examples
    --------
    >>> fit = fit_threshold([10, 10, 20, 20, 40, 40], [0, 0, 0, 1, 1, 1])
    >>> lo, hi = interval_sides(fit)
    >>> 0 < lo < fit.location and 0 < hi
    True
    """
    if not fit.located:
        return math.nan, math.nan
    lo, hi = fit.interval
    return (fit.location - lo) / unit, (hi - fit.location) / unit


def resolved(fit: ThresholdFit, resolution: float, *, unit: float = 1.0,
             criterion: str = "sides") -> bool:
    """Whether a fitted threshold meets a sequential design's target.

    Parameters
    ----------
    fit : ThresholdFit
        A fit of :func:`fit_threshold`.
    resolution : float
        The target, in units of ``unit``: the largest side of the interval (``"sides"``) or half
        the interval's width (``"width"``).
    unit : float
        As :func:`interval_sides`.
    criterion : {"sides", "width"}
        ``"sides"``: ``max(interval_sides(fit, unit)) <= resolution``; ``"width"``:
        ``(hi − lo)/unit <= 2·resolution``. A skewed interval can meet the second and not the
        first; both need a located threshold with a bounded interval.

    Returns
    -------
    bool

    Raises
    ------
    rftheory.errors.RFTheoryError
        For an unknown criterion.

    Examples
    --------
    >>> fit = fit_threshold([10, 10, 11, 11, 12, 12, 13, 13] * 4, [0, 0, 0, 1, 1, 0, 1, 1] * 4)
    >>> [round(x, 3) for x in interval_sides(fit)]
    [0.553, 0.565]
    >>> resolved(fit, 0.56), resolved(fit, 0.56, criterion="width")
    (False, True)
    """
    return meets_target(*interval_sides(fit, unit), resolution, criterion=criterion)


def meets_target(below: float, above: float, resolution: float, *,
                 criterion: str = "sides") -> bool:
    """:func:`resolved`'s rule on the two sides of an interval (as :func:`interval_sides`
    gives them, in the unit of ``resolution``), for intervals kept as numbers.

    Parameters
    ----------
    below, above : float
        How far the interval reaches below and above the location (NaN: not located; inf: an
        open side — never resolved).
    resolution : float
        As :func:`resolved`.
    criterion : {"sides", "width"}
        As :func:`resolved`.

    Returns
    -------
    bool

    Raises
    ------
    rftheory.errors.RFTheoryError
        For an unknown criterion.

    Examples
    --------
    >>> meets_target(0.03, 0.06, 0.049), meets_target(0.03, 0.06, 0.049, criterion="width")
    (False, True)
    """
    if criterion not in CRITERIA:
        raise RFTheoryError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    if criterion == "sides":
        return max(below, above) <= resolution  # False for NaN (not located)
    return below + above <= 2.0 * resolution


def followup_points(p: Any, success: Any, *, resolution: float, unit: float = 1.0,
                    link: str = "probit", level: float = 0.95,
                    band: tuple[float, float] = (0.1, 0.9), step_runs: int = 4,
                    criterion: str = "sides") -> list[int]:
    """The next runs of a sequential design: where one more run narrows the threshold's interval.

    A sweep that runs every p of a fixed grid with the same number of seeds spends most of its
    runs where the outcome is all but certain (far below or above the threshold), and its
    failing runs — the costly ones, which use the whole step budget — on points that tell
    nothing about the location. This rule spends the next runs only where they are informative:

    * nothing, when the interval is resolved — it reaches at most ``resolution·unit`` on each
      side of the location (``criterion="sides"``), or it is at most ``2·resolution·unit`` wide
      (``criterion="width"``) — or when the threshold is not located (no run on one side: more
      runs at the same p would not locate it; the grid must be extended);
    * for a resolved threshold, one run at each of the two grid points that bracket it while
      that point holds fewer than ``step_runs`` runs: with two seeds a step (or a near-step, a
      fitted width far below the grid's spacing) between two adjacent grid points is also what
      a curve as wide as the gap gives one time in a few, and its interval would then be too
      narrow;
    * otherwise, one run at every grid p where the fitted success probability lies within
      ``band`` (the runs that carry the Fisher information on the location: it is largest where
      P = 1/2 and falls off as P(1 − P)·φ²/… in the tails), plus the two grid points that
      bracket the fitted location; when that bracket is wider than ``resolution·unit``, the
      integer p nearest the location inside it replaces the bracket (bisection: a step between
      two distant grid points cannot be located closer than their gap by more seeds).

    Parameters
    ----------
    p : array_like of int, shape (runs,)
        The p of every run so far (integers: numbers of features).
    success : array_like of bool, shape (runs,)
        Whether each run succeeded.
    resolution : float
        The target: the largest side of the interval, in units of ``unit`` (> 0).
    unit : float
        The unit of ``resolution`` (e.g. dn; default 1).
    link, level : str, float
        As :func:`fit_threshold`.
    band : (float, float)
        Fitted success probabilities between which a grid point gets one more run.
    step_runs : int
        Runs each grid point bracketing a resolved threshold must hold before the design stops
        (default 4).
    criterion : {"sides", "width"}
        What "resolved" means: each side of the interval within ``resolution·unit`` (default;
        what a band of a multiple of the wider side, such as the baseline's, needs), or the
        whole interval at most ``2·resolution·unit`` wide (what a target on the interval's
        width needs; profile intervals are skewed, so it stops sooner — Notes).

    Returns
    -------
    list of int
        The p of the next runs (one run each), sorted; empty when the design stops.

    Raises
    ------
    rftheory.errors.RFTheoryError
        For a non-positive resolution, unit or step_runs, a band outside (0, 1), an unknown
        criterion, or bad runs
        (as :func:`fit_threshold`).

    Notes
    -----
    Deterministic: the same runs give the same points, so a run that draws its next seeds in a
    fixed order (the law's seed index at each p) is reproduced exactly by the same base seed.
    Stopping when the interval is narrow enough is a sequential design, and a stopping rule
    that looks at the data costs coverage (the usual sequential-analysis caveat): with
    ``level=0.95`` the final intervals held the truth 89–91 % of the time on synthetic probit
    curves. Run the design, and report its interval, at :data:`SEQUENTIAL_PROFILE_LEVEL` (0.98)
    for a 95 % coverage (measured 94–99 %; table there, test in ``tests/test_thresholds.py``).
    The caller caps the number of rounds. With ``criterion="width"`` the coverage holds too:
    ``python benchmarks/threshold_coverage.py --max-added 100 --criterion width`` (p* = 1.12·dn,
    resolution 0.049, 300 designs per σ) covered 98 / 95 / 97 % at σ = 0.03 / 0.06 / 0.1 with
    6 / 18 / 49 median added runs, against 99 / 95 / 95 % and 6 / 21 / 54 with ``"sides"``;
    on the law's real (12, 12) cell, whose intervals are more skewed, it stopped after 13 added
    runs where ``"sides"`` took 93 (``paper_notes/law.md``).

    Examples
    --------
    >>> runs = [10, 10, 11, 11, 12, 12, 13, 13]
    >>> followup_points(runs, [0, 0, 0, 1, 1, 0, 1, 1], resolution=0.5)  # the mixed points
    [11, 12]
    >>> followup_points(runs * 2, [0, 0, 0, 1, 1, 0, 1, 1] * 2, resolution=10.0)  # resolved
    []
    >>> followup_points([10, 10, 20, 20], [0, 0, 1, 1], resolution=1.0)  # a step: bisect
    [14]
    >>> followup_points([10, 10, 11, 11], [0, 0, 1, 1], resolution=1.0)  # a step: both edges
    [10, 11]
    """
    if not (isinstance(resolution, (int, float)) and resolution > 0 and math.isfinite(resolution)):
        raise RFTheoryError(f"resolution must be a positive number, got {resolution!r}")
    if not (isinstance(unit, (int, float)) and unit > 0 and math.isfinite(unit)):
        raise RFTheoryError(f"unit must be a positive number, got {unit!r}")
    lo_band, hi_band = (float(b) for b in band)
    if not 0 < lo_band < hi_band < 1:
        raise RFTheoryError(f"band must be (lo, hi) with 0 < lo < hi < 1, got {band!r}")
    if isinstance(step_runs, bool) or not isinstance(step_runs, int) or step_runs < 1:
        raise RFTheoryError(f"step_runs must be a positive integer, got {step_runs!r}")
    if criterion not in CRITERIA:
        raise RFTheoryError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    fit = fit_threshold(p, success, link=link, level=level)
    if not fit.located:
        return []
    grid = np.unique(np.asarray(p, dtype=np.float64))
    loc = fit.location
    if resolved(fit, resolution, unit=unit, criterion=criterion):
        # resolved — once the grid points on either side of p* hold step_runs runs each
        runs = np.asarray(p, dtype=np.float64).ravel()
        below, above = grid[grid < loc], grid[grid >= loc]
        edges = ([below[-1]] if below.size else []) + ([above[0]] if above.size else [])
        return sorted(int(e) for e in edges if np.sum(runs == e) < step_runs)
    if math.isfinite(fit.width):
        from scipy import special

        eta = (np.log(grid) - math.log(loc)) / fit.width
        prob = special.ndtr(eta) if link == "probit" else special.expit(eta)
    else:  # a step: certain on either side of the gap
        prob = np.where(grid < loc, 0.0, 1.0)
    chosen = {int(q) for q, f in zip(grid, prob) if lo_band <= f <= hi_band}
    below, above = grid[grid < loc], grid[grid >= loc]
    if below.size and above.size:
        a, b = int(below[-1]), int(above[0])
        if (b - a) / unit > resolution and b - a >= 2:
            chosen.add(int(min(max(round(loc), a + 1), b - 1)))
        else:
            chosen |= {a, b}
    return sorted(chosen)
