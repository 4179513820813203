"""Hermite coefficients: fast vs mpmath vs exact vs closed forms vs the stored mpmath reference."""

from __future__ import annotations

import json
import math
import pathlib

import mpmath
import numpy as np
import pytest
import sympy as sp

from rftheory import hermite
from rftheory.activations import ACTIVATIONS
from rftheory.errors import ActivationError, RFTheoryError
from rftheory.hermite import (
    MAX_ORDER,
    HermiteCoefficients,
    HermiteOptionError,
    evaluate_within_budget,
    hermite_coefficients,
)
from rftheory.processes import child_context

REFERENCE_PATH = pathlib.Path(__file__).with_name("reference") / "hermite_reference.json"


@pytest.fixture(scope="module")
def reference() -> dict:
    """mpmath.quad (tanh-sinh) values written by tests/reference/make_hermite_reference.py."""
    return json.loads(REFERENCE_PATH.read_text())


def _mp(text: str):
    return mpmath.mpf(text)


# ---------------------------------------------------------------------------------------------
# Closed forms derived independently of the library (Stein's lemma on each activation)
# ---------------------------------------------------------------------------------------------

def _double_factorial(n: int) -> int:
    return 1 if n <= 0 else math.prod(range(n, 0, -2))


def _he_at_zero(n: int) -> int:
    """He_n(0): 0 for odd n, (−1)^(n/2) (n−1)!! for even n."""
    return 0 if n % 2 else (-1) ** (n // 2) * _double_factorial(n - 1)


def relu_closed_form(k: int) -> float:
    """relu'' = δ, so for k >= 2: E[relu(g) He_k(g)] = E[δ^(k−2)(g)] = He_{k−2}(0) ϕ(0)."""
    if k == 0:
        return 1 / math.sqrt(2 * math.pi)
    if k == 1:
        return 0.5
    # Work in logs: (k−3)!!/sqrt(k!) underflows nothing but overflows its parts for k ~ 300.
    he = _he_at_zero(k - 2)
    if he == 0:
        return 0.0
    log_size = math.log(abs(he)) - 0.5 * math.lgamma(k + 1) - 0.5 * math.log(2 * math.pi)
    return math.copysign(math.exp(log_size), he)


def step_closed_form(k: int) -> float:
    """Heaviside' = δ: E[H(g) He_k(g)] = He_{k−1}(0) ϕ(0) for k >= 1, and 1/2 for k = 0."""
    if k == 0:
        return 0.5
    he = _he_at_zero(k - 1)
    if he == 0:
        return 0.0
    log_size = math.log(abs(he)) - 0.5 * math.lgamma(k + 1) - 0.5 * math.log(2 * math.pi)
    return math.copysign(math.exp(log_size), he)


def exp_closed_form(a: float, k: int) -> float:
    """E[e^{ag} He_k(g)] = e^{a²/2} a^k (generating function of He_k)."""
    return math.exp(a * a / 2) * a**k / math.sqrt(math.factorial(k))


def sin_closed_form(a: float, k: int) -> float:
    """E[e^{iag} He_k(g)] = (ia)^k e^{−a²/2}; sin takes the imaginary part (odd k only)."""
    if k % 2 == 0:
        return 0.0
    return (-1) ** ((k - 1) // 2) * a**k * math.exp(-a * a / 2) / math.sqrt(math.factorial(k))


# ---------------------------------------------------------------------------------------------
# Fast method
# ---------------------------------------------------------------------------------------------

def test_fast_matches_the_mpmath_reference_over_the_registry(reference):
    for name in ACTIVATIONS:
        stored = reference["activations"][name]
        result = hermite_coefficients(name, 100, method="fast")
        values = result.as_float()
        for k, text in zip(stored["orders"], stored["values"]):
            diff = abs(values[k] - float(_mp(text)))
            # The brief's bar: 1e-12 for every k <= 100; the estimate must also bound the error.
            assert diff <= 1e-12, (name, k, diff)
            assert diff <= result.errors[k], (name, k, diff, result.errors[k])
        assert abs(result.second_moment - float(_mp(stored["second_moment"]))) <= 1e-12


@pytest.mark.parametrize("name, closed_form", [("relu", relu_closed_form), ("step", step_closed_form)])
def test_fast_matches_stein_closed_forms_to_order_300(name, closed_form):
    result = hermite_coefficients(name, 300, method="fast")
    expected = np.array([closed_form(k) for k in range(301)])
    diff = np.abs(result.as_float() - expected)
    # Double-precision quadrature: rounding grows like k ε Σ|integrand| <= 300 · 2.2e-16 ≈ 7e-14.
    assert np.max(diff) <= 1e-13
    assert np.all(diff <= np.asarray(result.errors))


@pytest.mark.parametrize("a", [0.5, -1.0, 1.5])
def test_fast_exponential_matches_generating_function(a):
    result = hermite_coefficients(f"exp({a}*z)", 40, method="fast")
    expected = np.array([exp_closed_form(a, k) for k in range(41)])
    # E[e^{2ag}] = e^{2a²} sets the scale (up to e^4.5 ≈ 90); 1e-13 relative to it.
    np.testing.assert_allclose(result.as_float(), expected, rtol=0, atol=1e-13 * math.exp(a * a))


def test_fast_sine_matches_closed_form():
    result = hermite_coefficients("sin(2*z)", 60, method="fast")
    expected = np.array([sin_closed_form(2.0, k) for k in range(61)])
    # Values are O(1); 1e-13 is ~500 ε, the quadrature's rounding level at k = 60.
    np.testing.assert_allclose(result.as_float(), expected, rtol=0, atol=1e-13)


def test_fast_high_order_has_no_overflow_and_obeys_bessel():
    result = hermite_coefficients("tanh", 1000, method="fast")
    values = result.as_float()
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(result.errors))
    # Bessel's inequality: Σ μ_k² <= E[φ²]; equality up to the tiny tail for smooth tanh.
    assert result.tail_mass >= -result.tail_mass_error
    assert result.tail_mass < 1e-9
    # tanh is odd: even coefficients vanish to within their error estimates.
    assert np.all(np.abs(values[0::2]) <= np.asarray(result.errors)[0::2])


def test_fast_parseval_tail_is_zero_for_polynomials_and_positive_otherwise():
    poly = hermite_coefficients("z + z**2/2 + z**3/6", 6, method="fast")
    assert abs(poly.tail_mass) <= poly.tail_mass_error
    relu = hermite_coefficients("relu", 20, method="fast")
    expected_tail = 0.5 - sum(relu_closed_form(k) ** 2 for k in range(21))
    assert abs(relu.tail_mass - expected_tail) <= relu.tail_mass_error


def test_relu_plus_tanh_second_moment_is_three_halves():
    # Stein: E[g tanh g] = E[tanh'(g)] = 1 − E[tanh²], so E[(relu + tanh)²] = 1/2 + E[g tanh g]
    # + E[tanh²] = 3/2 exactly; a check of E[φ²] independent of any quadrature.
    fast = hermite_coefficients("relu+tanh", 2, method="fast")
    assert abs(fast.second_moment - 1.5) <= max(fast.second_moment_error, 4e-16)
    precise = hermite_coefficients("relu+tanh", 2, method="mpmath", dps=20)
    assert abs(precise.second_moment - mpmath.mpf(3) / 2) <= 1e-20


def test_fast_types():
    result = hermite_coefficients("relu+tanh", 5)
    assert result.method == "fast" and result.dps is None and result.order == 5
    assert all(type(v) is float for v in result.values) and type(result.second_moment) is float
    assert all(type(e) is float and e > 0 for e in result.errors)
    assert "Gauss-Legendre" in result.notes


def test_fast_kink_away_from_zero_matches_exact():
    for text in ("relu(z - 0.7)", "abs(z**2 - 1)", "heaviside(z + 1.3)", "max(z, z**2)"):
        fast = hermite_coefficients(text, 30, method="fast")
        exact = hermite_coefficients(text, 30, method="exact", time_budget=0)
        assert not np.any(np.isnan(exact.as_float())), text
        diff = np.abs(fast.as_float() - exact.as_float())
        # Double-precision quadrature against exact values: rounding level of O(1) integrands.
        assert np.max(diff) <= 1e-13, (text, np.max(diff))
        assert np.all(diff <= np.asarray(fast.errors)), text


# ---------------------------------------------------------------------------------------------
# mpmath method
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tanh", "relu+tanh", "gelu", "softplus"])
def test_mpmath_matches_the_reference_to_30_digits(name, reference):
    stored = reference["activations"][name]
    result = hermite_coefficients(name, 12, method="mpmath", dps=30)
    assert result.dps == 30 and all(isinstance(v, mpmath.mpf) for v in result.values)
    with mpmath.workdps(50):
        for k, text, quad_error in zip(stored["orders"], stored["values"], stored["quad_error"]):
            if k > 12:
                break
            diff = abs(result.values[k] - _mp(text))
            # 30 digits absolute (E[φ²] <= 1.5 here); the reference carries 36 digits and its
            # own quadrature error, both added to the estimate that must bound the difference.
            assert diff <= 1e-30, (name, k, diff)
            assert diff <= result.errors[k] + quad_error + 1e-35, (name, k)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_mpmath_matches_the_reference_to_order_100(name, reference):
    stored = reference["activations"][name]
    result = hermite_coefficients(name, 100, method="mpmath", dps=30)
    with mpmath.workdps(50):
        for k, text, quad_error in zip(stored["orders"], stored["values"], stored["quad_error"]):
            diff = abs(result.values[k] - _mp(text))
            # 30 digits times the scale sqrt(E[φ²]) (up to sqrt(15) for z³).
            assert diff <= 1e-30 * 4, (name, k, diff)
            assert diff <= result.errors[k] + quad_error + 1e-35, (name, k)
        second = abs(result.second_moment - _mp(stored["second_moment"]))
        assert second <= 1e-29


def test_mpmath_and_fast_agree_on_a_shifted_step():
    # A jump away from 0: the mpmath method must split at the exact kink 7/10 (a kink rounded
    # to double would cost ~1e-17 here).
    mp_result = hermite_coefficients("heaviside(z - 0.7)", 6, method="mpmath", dps=35)
    exact = hermite_coefficients("heaviside(z - 0.7)", 6, method="exact", time_budget=0)
    with mpmath.workdps(60):
        for value, closed in zip(mp_result.values, exact.values):
            assert abs(value - mpmath.mpf(sp.N(closed, 60))) <= 1e-34


# ---------------------------------------------------------------------------------------------
# Exact method
# ---------------------------------------------------------------------------------------------

CLOSED_FORM_ACTIVATIONS = ["relu", "leaky_relu", "abs", "step", "quadratic", "cubic", "poly3", "relu2",
                           "h2", "h3", "h4", "sin", "cos", "erf", "gelu"]


@pytest.mark.parametrize("name", CLOSED_FORM_ACTIVATIONS)
def test_exact_matches_the_reference(name, reference):
    stored = reference["activations"][name]
    exact = hermite_coefficients(name, 12, method="exact", time_budget=0)
    with mpmath.workdps(50):
        for k, text, quad_error in zip(stored["orders"], stored["values"], stored["quad_error"]):
            if k > 12:
                break
            assert exact.values[k] is not None and exact.errors[k] == 0.0
            diff = abs(mpmath.mpf(sp.N(exact.values[k], 50)) - _mp(text))
            # Reference: 36 significant digits plus its quadrature error.
            assert diff <= 1e-35 * max(1, abs(_mp(text))) + quad_error, (name, k, diff)


@pytest.mark.parametrize("name", ["relu", "erf", "relu(z - 0.7)",
                                  pytest.param("step", marks=pytest.mark.slow),
                                  pytest.param("sin", marks=pytest.mark.slow),
                                  pytest.param("exp(z/2)", marks=pytest.mark.slow),
                                  pytest.param("gelu", marks=pytest.mark.slow),
                                  pytest.param("relu2", marks=pytest.mark.slow)])
def test_exact_agrees_with_mpmath_to_30_digits(name):
    exact = hermite_coefficients(name, 8, method="exact", time_budget=0)
    numeric = hermite_coefficients(name, 8, method="mpmath", dps=40)
    with mpmath.workdps(60):
        for k, (closed, value) in enumerate(zip(exact.values, numeric.values)):
            diff = abs(mpmath.mpf(sp.N(closed, 60)) - value)
            # dps=40 quadrature: the brief asks for 30+ digits of agreement.
            assert diff <= 1e-32, (name, k, diff)
            assert diff <= numeric.errors[k] + 1e-45


def test_exact_relu_is_the_stein_closed_form_exactly():
    result = hermite_coefficients("relu", 40, method="exact", time_budget=0)
    for k, value in enumerate(result.values):
        if k == 0:
            expected = 1 / sp.sqrt(2 * sp.pi)
        elif k == 1:
            expected = sp.Rational(1, 2)
        else:
            expected = _he_at_zero(k - 2) / sp.sqrt(2 * sp.pi) / sp.sqrt(sp.factorial(k))
        assert sp.simplify(value - expected) == 0, k
    # The odd coefficients of order >= 3 are exactly zero: ReLU's sign ambiguity.
    assert all(result.values[k] == 0 for k in range(3, 41, 2))
    assert result.second_moment == sp.Rational(1, 2)
    assert all(e == 0.0 for e in result.errors)


def test_exact_rules_for_exp_trig_erf():
    expo = hermite_coefficients("exp(z/2)", 6, method="exact", time_budget=0)
    for k, v in enumerate(expo.values):
        assert sp.simplify(v - sp.exp(sp.Rational(1, 8)) * sp.Rational(1, 2) ** k / sp.sqrt(sp.factorial(k))) == 0
    # erf: μ_1 = E[g erf(g)] = E[erf'(g)] = (2/sqrt(π)) E[e^{-g²}] = 2/sqrt(3π).
    erf = hermite_coefficients("erf", 3, method="exact", time_budget=0)
    assert sp.simplify(erf.values[1] - 2 / sp.sqrt(3 * sp.pi)) == 0
    assert erf.values[0] == 0 and erf.values[2] == 0
    # E[erf(g)²] = (2/π) asin(2/3).
    assert sp.simplify(erf.second_moment - 2 / sp.pi * sp.asin(sp.Rational(2, 3))) == 0
    cosine = hermite_coefficients("cos(z)", 4, method="exact", time_budget=0)
    assert sp.simplify(cosine.values[2] + sp.exp(sp.Rational(-1, 2)) / sp.sqrt(2)) == 0
    assert sp.simplify(cosine.second_moment - (1 + sp.exp(-2)) / 2) == 0
    cosh = hermite_coefficients("cosh(z)", 2, method="exact", time_budget=0)
    assert sp.simplify(cosh.values[0] - sp.exp(sp.Rational(1, 2))) == 0


def test_exact_hermite_polynomial_is_a_unit_vector():
    result = hermite_coefficients("hermite(5, z)", 8, method="exact", time_budget=0)
    assert list(result.values) == [0, 0, 0, 0, 0, 1, 0, 0, 0]
    assert result.tail_mass == 0


def test_exact_without_closed_form_reports_none_within_budget():
    result = hermite_coefficients("tanh", 4, method="exact", time_budget=0.5)
    # Even orders follow from tanh being odd; odd orders have no closed form.
    assert result.values[0] == 0 and result.values[2] == 0 and result.values[4] == 0
    assert result.values[1] is None and result.values[3] is None
    assert result.errors[1] == math.inf and result.errors[0] == 0.0
    assert np.isnan(result.as_float()[1])
    assert result.second_moment is None and result.tail_mass is None
    assert "no closed form" in result.notes and "250,000 sympy steps" in result.notes


def _calls(n: int) -> int:
    """Makes exactly n Python calls (of _leaf) besides its own."""
    for _ in range(n):
        _leaf()
    return n


def _leaf() -> None:
    return None


def _forever() -> None:
    while True:
        _leaf()


def test_evaluate_within_budget_counts_steps_not_seconds():
    # The bound is a count of Python calls: a job of N calls costs exactly N + 1 steps, every
    # time; a job that never ends is stopped by the count, and the jobs after it get no steps.
    steps = hermite.STEPS_PER_SECOND
    counts: list = []
    results = evaluate_within_budget(_calls, [(1000,), (20_000,)], 1.0, steps_used=counts)
    assert results == [1000, 20_000] and counts == [1001, 20_001]
    again: list = []
    evaluate_within_budget(_calls, [(1000,), (20_000,)], 1.0, steps_used=again)
    assert again == counts  # deterministic
    # Exactly at the bound: N + 1 steps fit in a budget of N + 1, not in N.
    n = steps // 10 - 1
    assert evaluate_within_budget(_calls, [(n,)], 0.1) == [n]
    assert evaluate_within_budget(_calls, [(n + 1,)], 0.1) == [None]
    counts = []
    assert evaluate_within_budget(_forever, [(), ()], 0.2, steps_used=counts) == [None, None]
    assert counts == [int(0.2 * steps), 0]
    assert evaluate_within_budget(_calls, [(5,)], 0) == [None]  # no budget: nothing runs


def _sympy_random_calls() -> int:
    # Work that depends on sympy's random generator, as its assumptions' shuffle does.
    from sympy.core import random as sympy_random

    n = sympy_random.randint(1, 5000)
    _calls(n)
    return n


def test_a_job_that_draws_from_sympys_generator_does_the_same_work_every_run():
    # sympy's generator is seeded per job (unseeded, each run would draw its own n and make
    # 1..5000 calls); so a job's count does not depend on the job before it either.
    from sympy.core import random as sympy_random

    sympy_random.seed(0)
    want = sympy_random.randint(1, 5000)
    first: list = []
    results = evaluate_within_budget(_sympy_random_calls, [(), ()], 1.0, steps_used=first)
    again: list = []
    assert evaluate_within_budget(_sympy_random_calls, [()], 1.0, steps_used=again) == [want]
    assert results == [want, want] and first[0] == first[1] == again[0]


def test_the_work_bound_does_not_fork_a_process_that_has_loaded_jax():
    # XLA's runtime holds threads and JAX warns at every fork (a RuntimeWarning of its at-fork
    # hook, in this process): the child must then start without a fork and count as before.
    import warnings

    jax = pytest.importorskip("jax")
    jax.numpy.ones(3).sum().block_until_ready()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts: list = []
        assert evaluate_within_budget(_calls, [(1000,)], 1.0, steps_used=counts) == [1000]
    assert counts == [1001]
    assert not [w for w in caught if "os.fork()" in str(w.message)], [str(w.message) for w in caught]


def _hog() -> None:
    while True:
        pass


def test_verdicts_do_not_depend_on_load():
    # The same work bound on a machine with every core busy: the same results and step counts
    # (a wall-clock budget of the same size would have cut the jobs short under the hog).
    import multiprocessing
    import os

    jobs = [(200_000,), (200_000,)]
    idle: list = []
    idle_results = evaluate_within_budget(_calls, jobs, 0.75, steps_used=idle)
    idle_tanh = hermite_coefficients("tanh", 4, method="exact", time_budget=0.5)
    ctx = child_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    hogs = [ctx.Process(target=_hog, daemon=True) for _ in range(2 * (os.cpu_count() or 1))]
    for h in hogs:
        h.start()
    try:
        busy: list = []
        busy_results = evaluate_within_budget(_calls, jobs, 0.75, steps_used=busy)
        busy_tanh = hermite_coefficients("tanh", 4, method="exact", time_budget=0.5)
    finally:
        for h in hogs:
            h.kill()
            h.join()
    assert idle_results == busy_results == [200_000, None]  # 2 · 200 001 > 375 000 steps
    assert idle == busy == [200_001, 174_999]
    assert busy_tanh.values == idle_tanh.values and busy_tanh.notes == idle_tanh.notes


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, fragment", [
    ({"order": -1}, "order"), ({"order": MAX_ORDER + 1}, "order"), ({"order": 2.5}, "integer"),
    ({"order": True}, "integer"), ({"order": 3, "method": "quad"}, "unknown method"),
    ({"order": 3, "method": "mpmath", "dps": 2}, "dps"), ({"order": 3, "method": "mpmath", "dps": 10**4}, "dps"),
    ({"order": 3, "method": "exact", "time_budget": -1}, "time_budget"),
    ({"order": 3, "method": "exact", "time_budget": float("nan")}, "time_budget"),
])
def test_bad_options_raise_one_line_errors(kwargs, fragment):
    with pytest.raises(HermiteOptionError, match=fragment) as info:
        hermite_coefficients("relu", **kwargs)
    assert isinstance(info.value, RFTheoryError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("text, fragment", [
    ("1/z", "pole"), ("tanh(z)**-1", "pole"), ("1/(z**2 - 2)", "pole"),
    ("exp(z**2)", "grows too fast"), ("exp(exp(exp(z)))", "grows too fast"),
    ("z**0.5", "not defined for z < 0"),
])
@pytest.mark.parametrize("method", ["fast", "mpmath"])
def test_activations_without_gaussian_coefficients_are_refused(text, fragment, method):
    with pytest.raises(ActivationError, match=fragment):
        hermite_coefficients(text, 4, method=method, dps=15)


def test_result_is_frozen():
    result = hermite_coefficients("relu", 2)
    assert isinstance(result, HermiteCoefficients)
    with pytest.raises(AttributeError):
        result.method = "exact"
