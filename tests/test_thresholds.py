"""Fitted thresholds (rftheory.thresholds): the MLE, its interval, separation, the power-law fit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rftheory.errors import RFTheoryError
from rftheory.thresholds import (crossing, fit_threshold, followup_points, interval_sides,
                                 power_law_fit)

#: The law's grid of p/(dn) near the transition (claims/law.py).
RATIOS = np.array([0.9, 1.0, 1.05, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5, 2.0])


def _draw(rng, mu, sigma, seeds, ratios=RATIOS):
    p = np.repeat(ratios, seeds)
    success = rng.random(p.size) < stats.norm.cdf((np.log(p) - mu) / sigma)
    return p, success


def test_the_mle_is_the_maximum_of_the_likelihood():
    # A brute-force grid over (μ, σ) must not find a higher likelihood than the optimiser:
    # the grid's own resolution (1e-3 in μ, σ steps of 1 %) bounds how close it gets.
    rng = np.random.default_rng(3)
    p, y = _draw(rng, math.log(1.12), 0.06, 5)
    fit = fit_threshold(p, y)
    assert fit.status == "ok"
    x, sign = np.log(p), np.where(y, 1.0, -1.0)
    mus = np.linspace(math.log(1.0), math.log(1.3), 301)
    sigmas = np.exp(np.linspace(math.log(0.005), math.log(1.0), 500))
    ll = stats.norm.logcdf(sign * (x[None, None] - mus[:, None, None]) / sigmas[None, :, None]).sum(-1)
    assert ll.max() <= fit.loglik + 1e-9
    i, j = np.unravel_index(ll.argmax(), ll.shape)
    assert abs(math.log(fit.location) - mus[i]) < 5e-3
    # the interval's ends are where the profile falls by χ²₁(0.95)/2
    profile = ll.max(axis=1)
    inside = mus[profile >= fit.loglik - stats.chi2.ppf(0.95, 1) / 2]
    assert math.log(fit.interval[0]) == pytest.approx(inside[0], abs=2e-3)
    assert math.log(fit.interval[1]) == pytest.approx(inside[-1], abs=2e-3)


@pytest.mark.parametrize("link, seeds, sigma", [
    ("probit", 4, 0.05), ("logit", 3, 0.05),
    *[pytest.param(link, seeds, sigma, marks=pytest.mark.slow) for link in ("probit", "logit")
      for seeds, sigma in ((3, 0.03), (5, 0.08), (6, 0.03))],
])
def test_the_interval_covers_the_true_location_at_about_the_nominal_rate(link, seeds, sigma):
    # 300 seeded synthetic sweeps of a probit curve at 1.12·dn (the measured transition) on the
    # law's grid: the 95 % interval must hold the truth in about 95 % of them. The binomial
    # spread of a 95 % rate over 300 draws is ±1.3 %; profile intervals on few runs are
    # approximate, so 0.88 and 0.995 leave room for that without passing a broken interval
    # (the crossing rule's zero-width "intervals" would cover far less often).
    rng = np.random.default_rng([seeds, int(sigma * 1000)])
    mu = math.log(1.12)
    covered = located = 0
    for _ in range(300):
        p, y = _draw(rng, mu, sigma, seeds)
        fit = fit_threshold(p, y, link=link)
        if not fit.located:
            continue
        located += 1
        lo, hi = fit.interval
        assert lo < hi  # never a zero-width interval
        covered += lo <= math.exp(mu) <= hi
    assert located >= 290
    assert 0.88 <= covered / located <= 0.995


def test_separated_runs_give_a_step_with_the_gap_inside_the_interval():
    grid = [1.0, 1.05, 1.1, 1.15, 1.2, 1.5]
    p = np.repeat(grid, 3)
    fit = fit_threshold(p, p >= 1.15)
    assert fit.status == "step" and math.isnan(fit.width)
    assert fit.gap == (1.1, 1.15)
    assert fit.location == pytest.approx(math.sqrt(1.1 * 1.15), rel=1e-12)  # the gap's midpoint
    # the crossing rule says the same midpoint, and nothing about its uncertainty
    assert fit.crossing == pytest.approx(fit.location, rel=1e-12)
    # Three failures at 1.1 each have P(fail) <= 1/2 for any threshold below 1.1, so the
    # likelihood ratio (<= 2^-3, beyond chi2_1(0.95)/2 = 1.92 in logs) rejects it: the interval
    # is the gap itself, its ends to the root finder's and the width cap's precision (1e-5)
    lo, hi = fit.interval
    assert lo == pytest.approx(1.1, rel=1e-4) and hi == pytest.approx(1.15, rel=1e-4)
    assert lo < hi
    # Two seeds (2^-2 is not rejected) cannot exclude a threshold a little outside the gap
    p2 = np.repeat(grid, 2)
    wide = fit_threshold(p2, p2 >= 1.15)
    assert wide.status == "step"
    assert wide.interval[0] < 1.1 * (1 - 1e-3) and wide.interval[1] > 1.15 * (1 + 1e-3)


def test_grids_without_one_side_do_not_locate_the_threshold():
    all_ok = fit_threshold([1.0, 1.5, 2.0], [True, True, True])
    assert all_ok.status == "below_grid" and not all_ok.located and all_ok.bound == 1.0
    assert math.isnan(all_ok.location) and all(math.isnan(v) for v in all_ok.interval)
    none_ok = fit_threshold([1.0, 1.5, 2.0], [False, False, False])
    assert none_ok.status == "above_grid" and none_ok.bound == 2.0


def test_a_single_success_far_from_the_rest_leaves_the_interval_open():
    # one success among many failures at the top: the likelihood cannot exclude a threshold
    # far above the grid, so the upper end is open
    p = np.repeat([1.0, 1.2, 1.5], 2)
    y = np.array([0, 0, 0, 0, 0, 1], dtype=bool)
    fit = fit_threshold(p, y)
    assert fit.status in ("open", "step")
    assert fit.interval[1] == math.inf or fit.interval[1] > 1.5


def test_bad_input_is_refused():
    with pytest.raises(RFTheoryError, match="same"):
        fit_threshold([1, 2], [True])
    with pytest.raises(RFTheoryError, match="positive"):
        fit_threshold([0, 2], [True, False])
    with pytest.raises(RFTheoryError, match="booleans"):
        fit_threshold([1, 2], [0.5, 1])
    with pytest.raises(RFTheoryError, match="link"):
        fit_threshold([1, 2], [0, 1], link="cauchy")
    with pytest.raises(RFTheoryError, match="level"):
        fit_threshold([1, 2], [0, 1], level=1.0)


def test_crossing_is_the_secondary_rule():
    assert crossing([10, 1000], [0.0, 1.0]) == (pytest.approx(100.0, rel=1e-12), "ok")
    assert crossing([1, 10], [0.75, 1.0]) == (1.0, "below_grid")


# ---------------------------------------------------------------------------------------------
# power_law_fit
# ---------------------------------------------------------------------------------------------

DS, NS = (10, 20, 40, 80), (4, 8, 16)


def _cells(p_star, rng, seeds=5, sigma=0.06):
    """Fitted thresholds of synthetic sweeps at p*(d, n) on a grid of p around it."""
    out = []
    for d in DS:
        for n in NS:
            star = p_star(d, n)
            p = np.repeat(star * RATIOS / 1.12, seeds)
            y = rng.random(p.size) < stats.norm.cdf(np.log(p / star) / sigma)
            out.append((d, n, fit_threshold(p, y)))
    return out


def _fit(cells):
    return power_law_fit([c[0] for c in cells], [c[1] for c in cells],
                         [c[2].location for c in cells], [c[2].interval for c in cells])


def test_power_law_fit_recovers_dn_and_tells_it_from_the_alternatives():
    rng = np.random.default_rng(11)
    dn = _fit(_cells(lambda d, n: 1.12 * d * n, rng))
    assert dn.points == 12
    for name in ("d", "n"):
        lo, hi = dn.intervals[name]
        assert lo < 1.0 < hi and not lo < 0.5 < hi
    assert min(dn.models, key=lambda m: dn.models[m]["aic"]) in ("dn", "free")
    assert dn.models["dn"]["aic"] < dn.models["n"]["aic"] and dn.models["dn"]["aic"] < dn.models["d"]["aic"]
    only_n = _fit(_cells(lambda d, n: 30.0 * n, rng))
    lo, hi = only_n.intervals["d"]
    assert hi < 0.5  # the exponent of d is ~0, its interval far from 1
    assert only_n.models["n"]["aic"] < only_n.models["dn"]["aic"]


def test_power_law_fit_needs_both_d_and_n_to_vary():
    fit = power_law_fit([10, 10, 10], [4, 8, 16], [40, 80, 160], [[30, 50], [70, 90], [150, 170]])
    assert math.isnan(fit.exponents["d"]) and fit.points == 3
    with pytest.raises(RFTheoryError, match="same"):
        power_law_fit([10], [4, 8], [40], [[30, 50]])


# -- the sequential design ---------------------------------------------------------------------

def test_followup_points_stop_when_resolved_or_not_located():
    p = np.repeat([10, 11, 12, 13], 2)
    y = np.array([0, 0, 0, 1, 1, 0, 1, 1], dtype=bool)
    assert followup_points(p, y, resolution=0.5) == [11, 12]  # the mixed points
    # resolved, but the points bracketing p* (11, 12) hold 2 runs each: 4 are needed
    assert followup_points(p, y, resolution=100.0) == [11, 12]
    assert followup_points(np.tile(p, 2), np.tile(y, 2), resolution=100.0) == []
    assert followup_points(p, np.zeros(8, bool), resolution=0.01) == []  # not located: no use
    # a step between distant grid points is bisected (more seeds cannot narrow its gap) ...
    assert followup_points([10, 10, 20, 20], [0, 0, 1, 1], resolution=1.0) == [14]
    # ... and a resolved step still needs step_runs runs at each edge of its gap
    assert followup_points([10, 10, 11, 11], [0, 0, 1, 1], resolution=1.0) == [10, 11]
    assert followup_points([10] * 4 + [11] * 4, [0] * 4 + [1] * 4, resolution=1.0) == []
    with pytest.raises(RFTheoryError, match="resolution"):
        followup_points(p, y, resolution=0.0)
    with pytest.raises(RFTheoryError, match="band"):
        followup_points(p, y, resolution=1.0, band=(0.9, 0.1))
    with pytest.raises(RFTheoryError, match="criterion"):
        followup_points(p, y, resolution=1.0, criterion="both")


def test_resolved_reads_the_sides_or_the_width_of_a_skewed_interval():
    from rftheory.thresholds import resolved

    # a profile interval is skewed: here sides 0.553 below and 0.565 above p*
    fit = fit_threshold([10, 10, 11, 11, 12, 12, 13, 13] * 4, [0, 0, 0, 1, 1, 0, 1, 1] * 4)
    below, above = interval_sides(fit)
    assert below < above
    r = (above + below) / 2  # between the two sides: the width is 2r exactly
    assert not resolved(fit, r) and resolved(fit, r, criterion="width")
    assert resolved(fit, above) and not resolved(fit, 0.99 * r, criterion="width")
    # so the design stops on the width where it goes on for the sides
    p = [10, 10, 11, 11, 12, 12, 13, 13] * 4
    y = [0, 0, 0, 1, 1, 0, 1, 1] * 4
    assert followup_points(p, y, resolution=r, criterion="width") == []
    assert followup_points(p, y, resolution=r) != []
    # not located, or an open side: never resolved
    assert not resolved(fit_threshold([10, 20], [1, 1]), 1e9, criterion="width")
    with pytest.raises(RFTheoryError, match="criterion"):
        resolved(fit, 1.0, criterion="max")


@pytest.mark.parametrize("criterion", ["sides", "width"])
def test_the_sequential_design_reaches_its_target_and_keeps_its_coverage(criterion):
    # 40 synthetic sequential runs of a probit curve at 1.12·dn (dn = 48, the law's first pass
    # of 2 seeds, then followup_points until ±0.049·dn or an interval 0.098·dn wide, at most 200
    # added runs), at the design's
    # calibrated level SEQUENTIAL_PROFILE_LEVEL. Every run must end resolved, and the final
    # interval must hold the truth ~95 % of the time: ≥ 34 of 40 (a 95 % interval fails that
    # with probability 0.3 %; an interval that covers 90 %, as the nominal 0.95 level does after
    # the stopping rule (benchmarks/threshold_coverage.py), fails it 10 % of the time, one of
    # 80 % almost always, and the crossing rule's zero-width interval always).
    from rftheory.thresholds import SEQUENTIAL_PROFILE_LEVEL

    rng = np.random.default_rng(25)
    dn, mu, sigma = 48, math.log(1.12 * 48), 0.06
    covered = 0
    for _ in range(40):
        p = list(np.repeat(np.round(RATIOS * dn).astype(int), 2))
        y = list(rng.random(len(p)) < stats.norm.cdf((np.log(p) - mu) / sigma))
        for _ in range(200):
            nxt = followup_points(p, y, resolution=0.049, unit=dn, level=SEQUENTIAL_PROFILE_LEVEL,
                                  criterion=criterion)
            if not nxt:
                break
            p += nxt
            y += list(rng.random(len(nxt)) < stats.norm.cdf((np.log(nxt) - mu) / sigma))
        fit = fit_threshold(p, y, level=SEQUENTIAL_PROFILE_LEVEL)
        lo, hi = interval_sides(fit, dn)
        assert (max(lo, hi) <= 0.049) if criterion == "sides" else (lo + hi <= 0.098)
        covered += fit.interval[0] <= math.exp(mu) <= fit.interval[1]
    assert covered >= 34


def test_a_curve_that_does_not_rise_is_not_located_instead_of_raising():
    # Found by the deep sweep: every run succeeds but one at the top ratio. The MLE's slope runs
    # to 0 and its location off the grid; brentq then had no sign change and raised. The data
    # bound no side of the threshold, so the fit must say so (status "open", infinite ends).
    fit = fit_threshold([8.04] * 3 + [3.83] * 3 + [16.08] * 3, [1] * 7 + [0, 1])
    assert fit.status == "open" and fit.interval == (-math.inf, math.inf)
