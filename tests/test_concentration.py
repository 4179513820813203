"""Tests of rftheory.concentration, the kernel_concentration claim, and of the Hermite lower bound in rftheory.kernel.

Independent references: the closed-form kernels of ReLU (arc-cosine) and erf (arcsine) instead
of the Hermite series, eigenvalues by numpy's ``eigvalsh`` on explicitly formed matrices, and
the features materialised by ``RandomFeatures.features`` instead of the streamed Gram.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import rftheory.concentration as kc
from rftheory.claims import kernel_concentration as claim
from rftheory.data import sphere_points
from rftheory.errors import RFTheoryError
from rftheory.features import RandomFeatures
from rftheory.kernel import (
    closed_form_kernel_matrix,
    hadamard_power_bounds,
    hermite_lower_bound,
    kernel_series,
)
from rftheory.claims import run_claim


# ---------------------------------------------------------------------------------------------
# The slope of ‖ΦΦᵀ/p − K‖_op against p
# ---------------------------------------------------------------------------------------------

def test_concentration_slope_is_minus_one_half_on_a_small_case():
    p_values = [100 * 2**k for k in range(9)]  # 100 .. 25600
    result = kc.measure_concentration("relu+tanh", 10, 5, p_values, seed=3, reps=4)
    # The CLT gives slope −1/2 exactly in the limit; at n = 5 the operator norm is carried by a
    # few directions, so one draw's curve is noisy; the 4-draw average's slope scatters by ~0.03
    # (measured over data/V seeds 0-9: -0.46 ... -0.55). [-0.7, -0.3] is > 6 of those standard
    # deviations and still excludes the wrong rates p^0 (no concentration) and p^-1.
    assert -0.7 <= result["slope"] <= -0.3
    assert result["verdict"]["slope_ok"] == (abs(result["slope"] + 0.5) <= kc.SLOPE_TOLERANCE)
    # The error must really shrink: a factor 256 in p is a factor 16 in the CLT scale; demand 4.
    assert result["op_error_mean"][-1] < result["op_error_mean"][0] / 4


def test_fit_loglog_slope_recovers_a_power_law_and_refuses_one_point():
    p = np.array([10.0, 100.0, 1000.0])
    slope, intercept = kc.fit_loglog_slope(p, 3.0 * p**-0.5)
    # Exact data: only rounding in log and the 3-point least-squares solve.
    assert slope == pytest.approx(-0.5, abs=1e-12)
    assert math.exp(intercept) == pytest.approx(3.0, rel=1e-12)
    with pytest.raises(RFTheoryError):
        kc.fit_loglog_slope([10.0], [1.0])
    with pytest.raises(RFTheoryError):
        kc.fit_loglog_slope([10.0, 20.0], [1.0, 0.0])


def test_streamed_gram_error_matches_materialised_features():
    X = sphere_points(6, 8, seed=1)
    result = kc.concentration("relu", X, [3000], seed=5, reps=1)
    p = 3000
    rf = RandomFeatures("relu", 8, p, seed=result["v_seeds"][0][0])
    F = rf.features(X)
    K = closed_form_kernel_matrix("relu", X)  # independent of the Hermite series
    error = np.max(np.abs(np.linalg.eigvalsh(F @ F.T / p - K)))
    # Same V, two computations of ΦΦᵀ (streamed blocks vs one product) and two kernels (series
    # at order 64 with exact diagonal vs closed form: 1e-15 off the diagonal for |t| < 0.9):
    # agreement to rounding of a sum of 3000 terms of size ~1.
    assert result["op_error"][0][0] == pytest.approx(error, rel=1e-9, abs=1e-12)
    assert result["lambda_min_kernel"] == pytest.approx(np.linalg.eigvalsh(K)[0], abs=1e-12)


# ---------------------------------------------------------------------------------------------
# λ_min(ΦΦᵀ)/p → λ_min(K)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("activation", ["relu", "erf"])
def test_lambda_min_converges_within_clt_tolerance(activation):
    n, d, p = 5, 10, 25600
    X = sphere_points(n, d, seed=2)
    K = closed_form_kernel_matrix(activation, X)
    evals, evecs = np.linalg.eigh(K)
    lam, u, gap = evals[0], evecs[:, 0], evals[1] - evals[0]
    for seed in (11, 12, 13):
        F = RandomFeatures(activation, d, p, seed=seed).features(X)
        G = F @ F.T / p
        E = G - K
        w2 = (u @ F) ** 2
        sd = np.std(w2, ddof=1) / math.sqrt(p)
        norm_e = np.max(np.abs(np.linalg.eigvalsh(E)))
        assert gap > 2 * norm_e  # the perturbation statement below needs it
        # λ_min(K+E) − λ − uᵀEu ∈ [−‖Eu‖²/(δ − 2‖E‖), 0] (Rayleigh quotient and a 2-D
        # argument, δ the gap); uᵀEu = mean(w²) − λ is an average of p i.i.d. terms with
        # standard deviation σ̂/√p (CLT). Tolerance: 4 CLT sd (two-sided 6e-5 per draw) plus the
        # deterministic second-order term.
        allowance = np.linalg.norm(E @ u) ** 2 / (gap - 2 * norm_e)
        lam_hat = np.linalg.eigvalsh(G)[0]
        assert abs(lam_hat - lam) <= 4 * sd + allowance
        # The Rayleigh upper bound is exact arithmetic up to rounding (1e-12 relative).
        assert lam_hat <= np.mean(w2) + 1e-12 * abs(lam)


def test_module_reports_the_same_clt_quantities():
    X = sphere_points(5, 10, seed=2)
    result = kc.concentration("erf", X, [20000], seed=0, reps=2)
    assert result["lambda_min_within_clt"] == [True]
    lam_k = result["lambda_min_kernel"]
    assert abs(result["lambda_min_relative_error_at_max_p"]) < 0.05  # CLT sd/λ is ~1e-2 here
    # The first-order term is a Rayleigh quotient, which bounds λ_min from above.
    for lam, ray in zip(result["lambda_min_empirical"][0], result["rayleigh_quotient"][0]):
        assert lam <= ray + 1e-12 * lam_k


# ---------------------------------------------------------------------------------------------
# The Hermite lower bound on λ_min(K)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("activation", ["relu", "erf"])
@pytest.mark.parametrize("n, d", [(40, 8), (30, 60), (60, 30)])
def test_hermite_lower_bound_is_below_closed_form_lambda_min(activation, n, d):
    X = sphere_points(n, d, seed=4)
    lam = np.linalg.eigvalsh(closed_form_kernel_matrix(activation, X))[0]
    bound0 = hermite_lower_bound(activation, X, k_min=0)
    bound2 = hermite_lower_bound(activation, X, k_min=2)
    # The closed-form λ_min is exact to ~1e-15·n; the bound is certified, so no slack is needed
    # beyond the eigensolver's rounding of λ_min (1e-13 for these n).
    assert bound0.value <= lam + 1e-13
    assert 0 <= bound2.value <= bound0.value
    assert bound0.with_k_min(2).value == pytest.approx(bound2.value, rel=1e-15)
    assert bound2.parseval_tail == pytest.approx(
        bound2.second_moment - bound2.coefficients[0] - bound2.coefficients[1], rel=1e-14)


def test_hermite_lower_bound_is_tight_when_hadamard_powers_are_near_identity():
    # n = 20, d = 400: off-diagonal t ~ 0.05, so (XXᵀ/d)^{∘k} ≈ I for k >= 2 (deviation
    # ~ sqrt(n)·t^k) and the linear term is estimated by its exact λ_min; the bound must then
    # capture >= 90% of λ_min(K) — a loose or wrong bound (e.g. dropped terms) fails this.
    X = sphere_points(20, 400, seed=0)
    lam = np.linalg.eigvalsh(closed_form_kernel_matrix("relu", X))[0]
    bound = hermite_lower_bound("relu", X).value
    assert 0.9 * lam <= bound <= lam


def test_hadamard_power_bounds_match_direct_eigenvalues(xp_strict):
    X = sphere_points(25, 6, seed=7)
    T = X @ X.T / 6
    bounds = hadamard_power_bounds(X, 12)
    for k in range(13):
        direct = np.linalg.eigvalsh(T**k)[0]
        # Certified lower bound: never above the true value (rounding of eigvalsh ~1e-14), and
        # within the rounding allowance 2n(n+d+2k+2)u < 1e-11 of it (clipped at 0).
        assert bounds.lower[k] <= max(direct, 0.0) + 1e-13
        assert bounds.lower[k] >= max(direct, 0.0) - 1e-11
    strict = hadamard_power_bounds(xp_strict.asarray(X), 12)
    # Same arithmetic in another namespace (eigensolver may differ in the last bits).
    assert np.allclose(strict.lower, bounds.lower, rtol=0, atol=1e-12)


def test_hadamard_power_bounds_refuse_off_sphere_points():
    with pytest.raises(RFTheoryError):
        hadamard_power_bounds(2.0 * sphere_points(5, 4, seed=0), 3)


def test_kernel_on_sphere_has_the_exact_diagonal():
    X = sphere_points(8, 5, seed=3)
    series = kernel_series("relu")
    K, bound = kc.kernel_on_sphere(series, X)
    exact = closed_form_kernel_matrix("relu", X)
    # The truncated series misses the Parseval tail (8e-5) on the diagonal only; with the exact
    # diagonal the whole matrix agrees with the closed form within the reported bound.
    assert np.max(np.abs(K - exact)) <= bound + 1e-14
    assert np.allclose(np.diag(K), 0.5, rtol=0, atol=1e-15)  # E[relu(g)²] = 1/2


# ---------------------------------------------------------------------------------------------
# The protocol: run, plot, summary
# ---------------------------------------------------------------------------------------------

def test_run_plot_summary_on_a_tiny_configuration(tmp_path):
    config = claim.Config(n=4, d=6, p=(64, 256, 1024), reps=2, sweep_n=10, sweep_d=(5, 40))
    result = run_claim("kernel_concentration", config=config, seed=1, out_dir=tmp_path)
    saved = json.loads((tmp_path / "kernel_concentration.json").read_text())
    assert saved["claim"] == "kernel_concentration" and saved["seed"] == 1
    assert saved["config"] == {"n": 4, "d": 6, "p": [64, 256, 1024], "reps": 2, "sweep_n": 10,
                               "sweep_d": [5, 40]}
    assert [c["activation"] for c in saved["curves"]] == list(claim.DEFAULT_ACTIVATIONS)
    # Each curve is the library's measurement on the claim's data (same seeds): the claim adds
    # nothing but the loop over activations.
    X = sphere_points(4, 6, seed=1)
    direct = kc.concentration("erf", X, [64, 256, 1024], seed=1, reps=2)
    assert saved["curves"][3]["op_error"] == direct["op_error"]
    assert saved["curves"][3]["lambda_min_kernel"] == direct["lambda_min_kernel"]
    assert result["figures"] == [str(tmp_path / "kernel_concentration.png"),
                                 str(tmp_path / "kernel_concentration.pdf")]
    assert all(Path(p).exists() for p in result["figures"])
    slopes = [line.split()[1] for line in claim.summary(saved).splitlines()[3:7]]
    assert slopes == [f"{c['slope']:.3f}" for c in saved["curves"]]
    # The Hermite bound is a theorem: it must hold in every configuration.
    assert saved["verdict"]["hermite_bound_holds"] is True


@pytest.mark.slow
def test_quick_run_supports_the_claim(tmp_path):
    result = run_claim("kernel_concentration", quick=True, seed=0, out_dir=tmp_path)
    assert result["verdict"]["supported"] is True
