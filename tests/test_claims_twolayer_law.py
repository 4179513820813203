"""The two-layer claim (rftheory.claims.twolayer_law) on a tiny grid."""

from __future__ import annotations

import json

import pytest

from rftheory.claims import twolayer_law
from rftheory.errors import RFTheoryError
from rftheory.output import to_jsonable


def test_tiny_sweep_result_summary_and_figure(tmp_path):
    config = twolayer_law.Config(ratios=(1.0, 4.0), seeds=1, setups=("rf_gd",),
                                 datasets=("sphere",), max_steps=300)
    result = twolayer_law.run(config, workers=1)
    saved = json.loads(json.dumps(to_jsonable(result)))  # the result must be plain JSON
    cases = {c["ratio_nominal"]: c for c in saved["cases"]}
    assert cases[4.0]["p_last"] == 4 * 8 * 8 and cases[4.0]["k"] == 1
    # First layer frozen: ΔW₂ in the span up to rounding (measured ≈ 1e-30).
    assert cases[4.0]["span_residual"] < 1e-20
    # At p = dn the unknowns outnumber the equations: far from the data (measured ρ ≈ 0.6).
    # At p = 4dn the RF control is recovered (measured ρ ≈ 4e-5).
    assert cases[1.0]["rho"] > 0.1 and cases[4.0]["rho"] < 0.01
    verdict = saved["verdict"]["per_setup"]["sphere/rf_gd"]
    assert verdict["law_holds"] and verdict["threshold"] == 4.0
    # the fitted threshold: one failure at 1, one success at 4 — a step somewhere in (1, 4), its
    # interval open (two runs cannot bound a 95 % interval)
    fit = verdict["fitted_threshold"]
    assert fit["status"] in ("step", "open") and fit["gap"] == [1.0, 4.0]
    assert fit["location"] == pytest.approx(2.0) and fit["crossing"] == pytest.approx(2.0)
    lo, hi = result["verdict"]["per_setup"]["sphere/rf_gd"]["fitted_threshold"]["interval"]
    assert lo < 1.0 and hi > 4.0  # may be ±inf (JSON null once saved)
    # r = 1 (one output): the three abscissae coincide, so the collapse test names none
    assert all(c["theta_rank"] == 1 for c in saved["cases"])
    assert saved["verdict"]["rank_collapse"]["sphere"]["best"] is None
    assert saved["verdict"]["counted_by_rank"] is False  # k·width/(dn) is not rejected
    text = twolayer_law.summary(saved)
    row = text.splitlines()[3].split()
    assert row[:4] == ["sphere", "rf_gd", "1", "1"] and row[4] == f"{cases[1.0]['rho']:.1e}"
    assert row[-1] == "holds" and f"({fit['status']})" in text and "collapse in no single abscissa" in text
    paths = twolayer_law.plot(saved, tmp_path / "twolayer_law")
    assert paths == [tmp_path / "twolayer_law.png", tmp_path / "twolayer_law.pdf"]
    assert all(p.exists() for p in paths)


def test_refuses_unknown_setup():
    with pytest.raises(RFTheoryError, match="unknown setup"):
        twolayer_law.Config(setups=("hinge",))
    with pytest.raises(RFTheoryError, match="unknown data set"):
        twolayer_law.QUICK.replace(datasets=("mnist",))


def test_rank_growth_is_one_continuous_run_and_respects_r_le_k_minus_1():
    """Checkpoints continue one GD run (θ at 12 steps equals a single 12-step run's); with
    W₂(0) = 0 the cross-entropy θ has rank ≤ k − 1 = 9 (its rows sum to zero over the classes)."""
    import numpy as np

    from rftheory.data import digits_data
    from rftheory.twolayer import train_two_layer

    rows = twolayer_law.rank_growth(ns=(3,), checkpoints=(4, 12), ratio=2.0)
    assert [r["steps"] for r in rows] == [4, 12] and rows[0]["width"] == round(2.0 * 64 * 3 / 10)
    assert all(1 <= r["rank_span"] <= r["rank_eps"] <= 9 for r in rows)
    ds = digits_data(3, 0)
    one = train_two_layer(ds.X, ds.classes, width=rows[0]["width"], activation="relu+tanh",
                          loss="cross_entropy", steps=12, tol=0.0, seed=0,
                          last_layer_init="zero", n_classes=10)
    sv = np.linalg.svd(np.asarray(one.theta), compute_uv=False)
    # the same float operations in the same order: equal up to the SVD's rounding
    np.testing.assert_allclose(rows[1]["singular_values"], sv, rtol=1e-10, atol=1e-14 * sv[0])


def test_a_failing_threshold_fit_is_reported_not_raised(monkeypatch):
    """Runs that all succeed but one at the top ratio made fit_threshold's brentq raise (measured
    on the deep sweep); the claims report status "fit_failed" with the crossing rule instead."""
    import math

    import rftheory.thresholds as thresholds
    from rftheory.claims._common import fit_text
    from rftheory.claims.deep_law import fitted_threshold

    ratios = [8.04] * 3 + [3.83] * 3 + [16.08] * 3
    ok = [True] * 7 + [False, True]
    fit = fitted_threshold(ratios, ok)
    assert fit["status"] in thresholds.STATUSES + ("fit_failed",)

    def broken(*args, **kwargs):
        raise ValueError("f(a) and f(b) must have different signs")

    monkeypatch.setattr(thresholds, "fit_threshold", broken)
    fit = fitted_threshold(ratios, ok)
    assert fit["status"] == "fit_failed" and "different signs" in fit["error"]
    assert math.isnan(fit["location"]) and fit["crossing_status"] == "below_grid"
    assert fit["crossing"] == 3.83 and (fit["runs"], fit["successes"]) == (9, 8)
    assert fit_text(fit) == "fit failed"
