"""Small, seeded versions of the Theorem 1 and Theorem 2 checks (rftheory.claims.theorem1, theorem2)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rftheory.data import gaussian_labels, sphere_points
from rftheory.errors import RFTheoryError
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.kernel import kernel_series
from rftheory.projection import projection_loss, projection_residuals
from rftheory.claims import theorem1, theorem2
from rftheory.claims import run_claim
from rftheory.collisions import collision_limit, collision_region_minimum, zero_threshold

D, N = 6, 3  # theorem 1: dn = 18, n + d = 9


@pytest.fixture(scope="module")
def data1():
    return sphere_points(N, D, 0), gaussian_labels(N, 0)


def _features(activation, d, p, seed=11):
    return RandomFeatures(activation, d, p, seed=seed, v_cache_bytes=2**24)


def _unit(rng, d):
    x = rng.standard_normal(d)
    return x * (math.sqrt(d) / np.linalg.norm(x))


# ---------------------------------------------------------------------------------------------
# Theorem 1: the span residual r(x̂)
# ---------------------------------------------------------------------------------------------

def test_span_residual_value_gradient_and_floor(data1):
    X, _ = data1
    f = _features("relu+tanh", D, 40)
    rng = np.random.default_rng(0)
    x = _unit(rng, D)
    value, grad = theorem1.span_residual(f, X, x)
    # The Gram-difference formula is accurate to ~1e-16 in r² when r² is O(0.1).
    ref = float(projection_residuals(f, X, x[None, :])[0]) ** 2
    assert value == pytest.approx(ref, rel=1e-10)
    e = rng.standard_normal(D)
    h = 1e-6
    fd = (theorem1.span_residual(f, X, x + h * e, gradient=False)[0]
          - theorem1.span_residual(f, X, x - h * e, gradient=False)[0]) / (2 * h)
    # Central differences with h = 1e-6 on an O(1) smooth-almost-everywhere function: ~1e-9;
    # 1e-6 leaves room for a ReLU kink near x (measured 1e-10).
    assert grad @ e == pytest.approx(fd, rel=1e-6, abs=1e-10)
    # At a training point r is at the direct-residual floor κ(G)·eps, far below the 1e-8 of the
    # Gram difference (measured ~5e-16).
    for i in range(N):
        assert math.sqrt(theorem1.span_residual(f, X, X[i], gradient=False)[0]) < 1e-12


def test_kernel_limit_of_span_residual(data1):
    X, _ = data1
    series = kernel_series("relu+tanh", theorem1.KERNEL_ORDER)
    x = _unit(np.random.default_rng(1), D)
    r2_inf, grad = theorem1.kernel_span_residual(series, X, x)
    r2_p = theorem1.span_residual(_features("relu+tanh", D, 20000), X, x, gradient=False)[0]
    # Monte Carlo over 20000 features: relative fluctuation of r² ~ a few /√p ≈ 2%; 6% is ~3σ
    # (measured 0.4% at this seed).
    assert r2_p == pytest.approx(r2_inf, rel=0.06)
    e = np.random.default_rng(2).standard_normal(D)
    h = 1e-6
    fd = (theorem1.kernel_span_residual(series, X, x + h * e)[0]
          - theorem1.kernel_span_residual(series, X, x - h * e)[0]) / (2 * h)
    assert grad @ e == pytest.approx(fd, rel=1e-6, abs=1e-9)  # smooth series: FD error ~1e-10


def test_gap_zero_below_n_plus_d_and_positive_at_large_p(data1):
    X, _ = data1
    # p = n + d − 3 = 6: the zeros of r away from ±x_i form a 2-dimensional set: g(ε) = 0 up to
    # the floor (measured 2e-15).
    small = theorem1.min_span_residual(_features("relu+tanh", D, N + D - 3), X, 0.5, starts=3)
    assert small["gap"] < theorem1.GAP_ZERO
    assert small["distance"] >= 0.5 - 1e-9
    # p = 4dn = 72 ≫ n + d: the gap is open (measured 0.14; the kernel limit is ≈ 0.20).
    large = theorem1.min_span_residual(_features("relu+tanh", D, 4 * D * N), X, 0.5, starts=3)
    assert large["gap"] > 0.03
    assert large["distance"] >= 0.5 - 1e-9


def test_zero_loss_spurious_below_dn_unique_above(data1):
    X, Y = data1
    # p = dn/2 = 9: the zero set has dimension dn − p = 9, so plain L-BFGS from random starts
    # lands on zeros that are not the training set (ρ measured 0.5–1).
    f = _features("relu+tanh", D, 9)
    runs = theorem1.zero_loss_search(f, X, train_min_norm(f, X, Y).theta, local_starts=2,
                                     reconstruct_starts=0, max_steps=500)
    spurious = [r for r in runs if r["loss"] <= theorem1.ZERO_LOSS and r["rho"] > theorem1.RHO_SAME]
    assert spurious
    # p = 8dn = 144: every zero-loss solution is the training set (ρ measured ~2e-6).
    f = _features("relu+tanh", D, 8 * D * N)
    runs = theorem1.zero_loss_search(f, X, train_min_norm(f, X, Y).theta, local_starts=1,
                                     reconstruct_starts=1, max_steps=1000)
    zeros = [r for r in runs if r["loss"] <= theorem1.ZERO_LOSS]
    assert zeros
    assert all(r["rho"] < theorem1.RHO_SAME for r in zeros)


# ---------------------------------------------------------------------------------------------
# Theorem 2: duplicates, n = 2 (on rftheory.collisions; its own tests check the closed forms)
# ---------------------------------------------------------------------------------------------

D2 = 6


@pytest.fixture(scope="module")
def data2():
    return sphere_points(2, D2, 0), gaussian_labels(2, 0)


def _model2(activation, p, data2):
    X, Y = data2
    f = _features(activation, D2, p)
    return f, np.asarray(train_min_norm(f, X, Y).theta)


def test_duplicate_limit_is_the_small_delta_limit(data2):
    X, _ = data2
    f, theta = _model2("tanh", 48, data2)
    lim = collision_limit(f, X, theta, theorem2.DUPLICATE)
    u = lim.directions[0]["u"]
    assert abs(u @ X[0]) < 1e-10 and np.linalg.norm(u) == pytest.approx(1)
    # Symmetric pairs x₁ ± h u* (on the sphere): the first-order term cancels, loss → L₀ like h²
    # (measured 1.3 h² relative); 20 h² leaves room for another V or data seed.
    for h in (1e-3, 1e-4):
        pair = np.stack([X[0] - h * math.sqrt(D2) * u, X[0] + h * math.sqrt(D2) * u])
        pair *= math.sqrt(D2) / np.linalg.norm(pair, axis=1, keepdims=True)
        loss = projection_loss(f, pair, theta, gradient=False).loss
        assert loss == pytest.approx(lim.loss, rel=20 * h**2)
    # Direct constrained minimisation at a small δ: min_D(δ) ≤ L₀ (the limit is approached
    # inside D(δ)) and within O(δ) of it (measured relative gap 5e-5 at δ = 1e-3).
    out = collision_region_minimum(f, X, theta, theorem2.DUPLICATE, 1e-3, random_starts=1,
                                   limit=lim)
    assert out.max_distance <= 1e-3 * (1 + 1e-9)
    assert lim.loss * (1 - theorem2.LIMIT_RTOL) <= out.loss <= lim.loss * (1 + 1e-9)


def test_duplicate_region_bounded_away_at_large_p_and_zero_at_p_le_d(data2):
    X, _ = data2
    # p = 8dn = 96 with relu+tanh: min over D(0.3) measured 0.18; a duplicate solution would be
    # ≲ 1e-12. The true pair has loss ~1e-30.
    f, theta = _model2("relu+tanh", 8 * 2 * D2, data2)
    lim = collision_limit(f, X, theta, theorem2.DUPLICATE)
    out = collision_region_minimum(f, X, theta, theorem2.DUPLICATE, 0.3, random_starts=2,
                                   limit=lim)
    assert out.loss > 0.05
    assert out.loss <= lim.loss + 1e-12  # the limit pair is a start: never worse than L₀
    assert projection_loss(f, X, theta, gradient=False).loss < 1e-20
    # p = d: span{φ(x₁), JB} is all of R^p, so L₀ = 0 (dimension count of the limit).
    f, theta = _model2("tanh", D2, data2)
    assert collision_limit(f, X, theta, theorem2.DUPLICATE).loss < 1e-20


def test_general_p_grid_and_types():
    # d = 5, n = 3: types 2+1 (p* = 6) and 3 (p* = 9); ratios 1 and 2 give 15 and 30.
    types = theorem2.limit_types(3, 4)
    assert types == [(2, 1), (3,)]
    assert theorem2.general_p_values(3, 5, (1.0, 2.0), types) == [5, 6, 7, 8, 9, 10, 11, 15, 30]
    # Above enumerate_up_to_n: five representatives (deduplicated), regions on three.
    assert theorem2.limit_types(8, 4) == [(2, 1, 1, 1, 1, 1, 1), (2, 2, 1, 1, 1, 1),
                                          (3, 1, 1, 1, 1, 1), (2, 2, 2, 2), (8,)]
    assert theorem2.region_types(5, 4) == [(2, 1, 1, 1), (2, 2, 1), (5,)]


def _fake_cell(limits: dict, n=3, d=5, activation="tanh"):
    """A general-part cell with the given limit per (p, label), and no regions."""
    labels = sorted({lab for _, lab in limits})
    kinds = [tuple(int(v) for v in lab.split("+")) for lab in labels]
    rows = []
    for p in sorted({p for p, _ in limits}):
        rows.append({"p": p, "p_over_dn": p / (d * n), "leave_one_out": 0.1, "types": [
            {"type": list(k), "label": lab, "limit": limits[(p, lab)],
             "threshold": zero_threshold(theorem2._pad(k, n), d), "region": None}
            for k, lab in zip(kinds, labels)]})
    return {"activation": activation, "n": n, "d": d, "seed": 0,
            "limit_types": [list(k) for k in kinds], "rows": rows}


def test_general_verdicts_can_fail():
    # 2+1 at d = 5: p* = 6. Zero exactly up to p* and positive above: the count holds.
    good = {(5, "2+1"): 1e-25, (6, "2+1"): 1e-26, (7, "2+1"): 1e-6, (15, "2+1"): 0.1}
    check = [{"relative_gap": [1e-3, 1e-4]}]
    v = theorem2.general_verdict([_fake_cell(good)], check)
    assert v["pair_thresholds_match_count"] and v["limits_positive_from_dn"]
    # A zero one step above the count, or a zero at p = dn, falsifies the verdicts.
    v = theorem2.general_verdict([_fake_cell({**good, (7, "2+1"): 1e-20})], check)
    assert not v["pair_thresholds_match_count"] and v["pair_cases_matching"] == 0
    v = theorem2.general_verdict([_fake_cell({**good, (15, "2+1"): 1e-20})], check)
    assert not v["limits_positive_from_dn"] and not v["general_n_supported"]
    # A small-δ gap that does not shrink falsifies the limit check.
    assert not theorem2.general_verdict([_fake_cell(good)],
                                        [{"relative_gap": [1e-3, 9e-4]}])["limit_checks_agree"]
    # ReLU cells do not enter the count's verdict.
    v = theorem2.general_verdict([_fake_cell({**good, (7, "2+1"): 1e-20}, activation="relu")],
                                 check)
    assert v["pair_cases"] == 0 and not v["pair_thresholds_match_count"]


# ---------------------------------------------------------------------------------------------
# The protocol: run → JSON → figure → summary, on tiny configurations
# ---------------------------------------------------------------------------------------------

def test_theorem1_protocol_tiny(tmp_path):
    config = theorem1.Config(d=4, n=2, ratios=(0.5, 8.0), local_starts=1, reconstruct_starts=1,
                             max_steps=400, gap_offsets=(-2, 0), gap_ratios=(8.0,),
                             epsilons=(0.5,), gap_starts=2)
    result = run_claim("theorem1", config=config, out_dir=tmp_path)
    saved = json.loads((tmp_path / "theorem1.json").read_text())
    assert saved["claim"] == "theorem1" and saved["config"] == config.as_dict()
    # p = n + d − 2 = 4, n + d = 6 and 8·dn = 64: the gap is closed below n + d − 1 (zeros of r
    # away from ±x_i exist there) and open at 8·dn (measured ≈ 0.1; the floor is ~1e-15).
    assert [g["p"] for g in saved["gaps"]] == [4, 6, 64]
    assert saved["gaps"][0]["gap"][0] < theorem1.GAP_ZERO < saved["gaps"][-1]["gap"][0]
    assert saved["verdict"]["gap_positive_from_n_plus_d"] == (min(saved["gaps"][1]["gap"]) >
                                                               theorem1.GAP_ZERO)
    assert [r["p"] for r in saved["uniqueness"]] == [4, 64]  # max(n, round(ratio·dn))
    assert result["figures"] == [str(tmp_path / "theorem1.png"), str(tmp_path / "theorem1.pdf")]
    lines = theorem1.summary(saved).splitlines()
    assert lines[0] == "relu+tanh, d = 4, n = 2 (dn = 8, n + d = 6)"


def test_theorem2_protocol_tiny(tmp_path):
    config = theorem2.Config(d=4, ratios=(4.0,), deltas=(0.1,), random_starts=1,
                             activations=("tanh",), ns=(3,), general_d=4,
                             general_activations=("tanh",), seeds=1, general_ratios=(2.0,),
                             region_ratios=(2.0,), region_deltas=(0.1,), region_maxiter=100)
    result = run_claim("theorem2", config=config, out_dir=tmp_path)
    saved = json.loads((tmp_path / "theorem2.json").read_text())
    (row,) = saved["curves"][0]["rows"]
    # p = 4dn = 32 ≫ d: the duplicate region stays away from 0 (min measured ≈ 0.1) and below
    # the δ → 0 limit L₀ (the limit pair is a start of the minimisation).
    assert row["p"] == 32 and theorem2.ZERO_LOSS < row["min_loss"][0] <= row["limit_loss"] + 1e-12
    assert saved["verdict"]["satisfied_by"] == ["tanh"] == result["verdict"]["satisfied_by"]
    # General part, n = 3, d = 4: types 2+1 (p* = 5) and 3 (p* = 7); p = 4..9 and 2dn = 24.
    (cell,) = saved["general"]["cells"]
    assert [r["p"] for r in cell["rows"]] == [4, 5, 6, 7, 8, 9, 24]
    pair = {r["p"]: next(e for e in r["types"] if e["label"] == "2+1")["limit"]
            for r in cell["rows"]}
    # The closed form vanishes exactly up to the count and not above (measured ≤ 1e-25, then
    # ≳ 1e-6).
    assert all(pair[p] < theorem2.ZERO_LOSS_LIMIT for p in (4, 5))
    assert all(pair[p] > 1e-9 for p in (6, 7, 8, 9, 24))
    general = saved["verdict"]["general_n"]
    assert general["pair_thresholds_match_count"] and general["limits_positive_from_dn"]
    (region,) = [e["region"] for r in cell["rows"] for e in r["types"] if e["region"]
                 and e["label"] == "2+1" and r["p"] == 24]
    assert region["minima"][0]["loss"] > theorem2.ZERO_LOSS_REGION  # measured ~1e-2
    # Limit checks: the small-δ gap shrinks (pairs ~δ, triples ~δ²; measured 6e-5 → 1e-6).
    assert general["limit_checks_agree"] and general["limit_checks"] == "2/2"
    assert [Path(p).name for p in result["figures"]] == [
        "theorem2.png", "theorem2.pdf", "theorem2_general_n.png", "theorem2_general_n.pdf"]
    assert all(Path(p).exists() for p in result["figures"])
    text = theorem2.summary(saved)
    assert f"{row['limit_loss']:.3e}" in text and "general_n_supported" in text


def test_theorem_configurations_are_checked():
    with pytest.raises(RFTheoryError, match="increasing"):
        theorem1.QUICK.replace(epsilons=(0.5, 0.25))
    with pytest.raises(RFTheoryError, match="deltas"):
        theorem2.QUICK.replace(deltas=(0.1, 2.5))
    with pytest.raises(RFTheoryError, match="ns"):
        theorem2.QUICK.replace(ns=(1, 3))
    with pytest.raises(RFTheoryError, match="activations"):
        theorem2.QUICK.replace(activations=(), ns=())


@pytest.mark.slow
def test_theorem2_quick_run_supports_both_parts(tmp_path):
    # `rftheory verify theorem2 --quick`: n = 2 (d = 6) and general n ∈ {2, 3, 6} (d = 4) with
    # relu+tanh and tanh. Measured: every pair type switches exactly at p* (10/10), the triple
    # types never vanish above their count, every limit and region minimum from dn on is
    # ≥ 3e-6 > 1e-12, and the six small-δ limit checks agree.
    result = run_claim("theorem2", quick=True, out_dir=tmp_path, figures=False)
    v = result["verdict"]
    assert v["supported"] and v["satisfied_by"] == ["relu+tanh", "tanh", "erf", "relu"]
    g = v["general_n"]
    assert g["general_n_supported"] and g["pair_thresholds_match_count"]
    assert g["triples_never_zero_above_count"] and g["pair_cases"] >= 10
