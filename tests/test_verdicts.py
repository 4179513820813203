"""Theorem-condition verdicts checked against independently known facts about each activation."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.optimize
import scipy.special

from rftheory.activations import ACTIVATIONS
from rftheory.output import to_jsonable
from rftheory.verdicts import ActivationReport, Verdict, activation_report

# name: (Lipschitz, sign-identifiable), from the functions themselves: growth of φ' and whether
# the odd part (φ(z) − φ(−z))/2 is a polynomial of degree <= 1 (gelu, silu and softplus all have
# odd part z/2, exactly like ReLU).
EXPECTED = {
    "relu": (True, False), "leaky_relu": (True, False), "abs": (True, False), "tanh": (True, True),
    "relu+tanh": (True, True), "erf": (True, True), "gelu": (True, False), "silu": (True, False),
    "swish": (True, False), "softplus": (True, False), "sigmoid": (True, True), "sin": (True, True),
    "cos": (True, False), "step": (False, True), "quadratic": (False, False), "cubic": (False, True),
    "poly3": (False, True), "relu2": (False, True), "h2": (False, False), "h3": (False, True),
    "h4": (False, False),
}


@pytest.fixture(scope="module")
def relu_report() -> ActivationReport:
    return activation_report("relu", order=15)


@pytest.fixture(scope="module")
def relu_tanh_report() -> ActivationReport:
    return activation_report("relu+tanh", order=15)


def test_relu_fails_sign_identifiability_symbolically_and_exactly(relu_report):
    sign = relu_report.sign_identifiability
    assert sign.holds is False
    assert "symbolic" in sign.basis and "exact" in sign.basis
    assert sign.numbers["odd_part"] == "z/2"
    assert set(sign.numbers["exact_odd_coefficients"].values()) == {"0"}
    # The numbers agree: every odd coefficient of order >= 3 is zero within its error estimate.
    values, errors = np.array(relu_report.coefficients), np.array(relu_report.errors)
    assert np.all(np.abs(values[3::2]) <= errors[3::2])


def test_relu_parity_lists_the_vanishing_coefficients(relu_report):
    parity = relu_report.parity
    assert parity.holds is False  # relu is neither even nor odd
    assert parity.numbers["proven_zero"] == list(range(3, 16, 2))
    assert parity.numbers["consistent_with_symbolic"] is True
    assert set(parity.numbers["numerically_zero"]) == set(range(3, 16, 2))


def test_relu_lipschitz_and_nonlinear(relu_report):
    assert relu_report.lipschitz.holds is True and relu_report.lipschitz.basis == "symbolic"
    assert relu_report.lipschitz.numbers["constant"] == 1.0
    nonlinear = relu_report.nonlinearity
    assert nonlinear.holds is True
    # E[relu²] − μ_0² − μ_1² = 1/2 − 1/(2π) − 1/4 exactly.
    assert abs(nonlinear.numbers["nonlinear_mass"] - (0.25 - 1 / (2 * math.pi))) <= 1e-14


def test_relu_plus_tanh_passes_with_tanh_third_coefficient(relu_tanh_report):
    sign = relu_tanh_report.sign_identifiability
    assert sign.holds is True and sign.numbers["witness_order"] == 3
    # relu's μ_3 is 0, so the witness is tanh's μ_3 (mpmath.quad reference, 36 digits).
    assert abs(sign.numbers["witness_value"] - (-0.148437190787272704045251)) <= 1e-14
    lipschitz = relu_tanh_report.lipschitz
    # sup (relu + tanh)' = 1 + sech²(0⁺) = 2, reached at z -> 0⁺.
    assert lipschitz.holds is True and lipschitz.numbers["constant"] == 2.0


def test_step_is_not_lipschitz():
    verdict = activation_report("step", order=5).lipschitz
    assert verdict.holds is False and verdict.basis == "symbolic" and "jumps" in verdict.summary


def test_cubic_is_not_lipschitz_and_is_sign_identifiable():
    report = activation_report("cubic", order=5)
    assert report.lipschitz.holds is False and "unbounded" in report.lipschitz.summary
    assert report.sign_identifiability.holds is True
    # z³ = He_3 + 3 He_1, so μ_3 = sqrt(3!) = sqrt(6).
    assert abs(report.sign_identifiability.numbers["witness_value"] - math.sqrt(6)) <= 1e-13


def test_silu_numeric_lipschitz_constant_matches_the_critical_point():
    verdict = activation_report("silu", order=4).lipschitz
    assert verdict.holds is True and verdict.basis == "numeric"

    def sigma(z):
        return scipy.special.expit(z)

    # silu''(z) = σ(1−σ)(2 + z(1 − 2σ)) vanishes where 2 + z(1 − 2σ(z)) = 0 (z ≈ 2.3994).
    z_star = scipy.optimize.brentq(lambda z: 2 + z * (1 - 2 * sigma(z)), 1.0, 4.0, xtol=1e-14)
    expected = sigma(z_star) * (1 + z_star * (1 - sigma(z_star)))
    # The grid maximum is polished by a bounded scalar search (xatol 1e-12); at a smooth maximum
    # the value error is quadratic in the location error.
    assert abs(verdict.numbers["constant"] - expected) <= 1e-10


def test_affine_functions_are_linear_even_when_written_with_relus():
    for text in ("2*z + 1", "relu(z) - relu(-z)"):
        verdict = activation_report(text, order=5).nonlinearity
        assert verdict.holds is False and verdict.basis == "symbolic", text


def test_even_and_odd_activations():
    abs_parity = activation_report("abs", order=8).parity
    assert abs_parity.numbers["symmetry"] == "even" and abs_parity.numbers["proven_zero"] == [1, 3, 5, 7]
    sigmoid = activation_report("sigmoid", order=8)
    # σ(z) − 1/2 is odd: the even coefficients of order >= 2 vanish.
    assert sigmoid.parity.numbers["proven_zero"] == [2, 4, 6, 8]
    assert sigmoid.parity.numbers["consistent_with_symbolic"] is True
    assert sigmoid.sign_identifiability.holds is True


def test_exact_method_report_uses_exact_values():
    report = activation_report("relu", order=7, method="exact")
    assert report.coefficient_text[0] == "sqrt(2)/(2*sqrt(pi))"
    assert report.nonlinearity.basis == "exact coefficients"
    assert report.parity.numbers["exactly_zero"] == [3, 5, 7]
    assert report.tail_mass is not None and report.tail_mass > 0


def test_mpmath_method_report_carries_digits():
    report = activation_report("tanh", order=5, method="mpmath", dps=25)
    assert report.dps == 25
    assert report.coefficient_text[3].startswith("-0.14843719078727270404525")
    assert max(report.errors) < 1e-24


def test_report_is_json_serialisable(relu_tanh_report):
    payload = json.loads(json.dumps(to_jsonable(relu_tanh_report)))
    assert payload["activation"] == "relu+tanh"
    assert payload["sign_identifiability"]["holds"] is True
    assert len(payload["coefficients"]) == 16
    assert isinstance(relu_tanh_report.lipschitz, Verdict)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_registry_verdicts(name):
    report = activation_report(name, order=12)
    lipschitz, sign = EXPECTED[name]
    assert report.lipschitz.holds is lipschitz
    assert report.sign_identifiability.holds is sign
    assert report.nonlinearity.holds is True
    assert report.parity.numbers["consistent_with_symbolic"] is True


@pytest.mark.parametrize("name, lost", [("tanh", True), ("abs", True), ("relu", False),
                                        ("relu+tanh", False)])
def test_parity_verdict_says_when_signs_are_lost(name, lost):
    # Odd or even φ: φ(−Vx) = ±φ(Vx), so −x fits θ* exactly as x does (paper_notes/sign.md).
    report = activation_report(name, order=8)
    assert ("signs are not recoverable" in report.parity.summary) is lost


def test_relu_fails_only_the_papers_sign_criterion():
    detail = activation_report("relu", order=8).sign_identifiability.summary
    assert "paper's criterion" in detail and "parity" in detail
