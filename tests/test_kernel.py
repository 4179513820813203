"""Tests of rftheory.kernel: Hermite series vs closed forms vs Monte Carlo, bounds, backends, errors.

Most tests feed the series with Hermite coefficients built *here* from textbook formulas
(Gaussian integration by parts, E[f(g) He_k(g)] = E[f^(k)(g)]) or Gauss-Hermite quadrature, so
they check the kernel code independently of rftheory.hermite. Tests through
``kernel_series`` (which calls rftheory.hermite) are at the end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mpmath
import numpy as np
import pytest

from rftheory.activations import get_activation
from rftheory.errors import BackendError, RFTheoryError, ShapeError
from rftheory.kernel import (
    KernelSeries,
    NoClosedFormError,
    OffSphereError,
    closed_form_kernel,
    closed_form_kernel_matrix,
    has_closed_form,
    kernel_matrix,
    rf_kernel_series,
)

U64 = 2.0**-53


# ---------------------------------------------------------------------------------------------
# Coefficients built in this file (stand-ins for rftheory.hermite)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Coefficients:
    values: tuple
    errors: tuple
    second_moment: object
    second_moment_error: float = 0.0

    @property
    def tail_mass(self):
        return self.second_moment - sum(v * v for v in self.values)


def _he0(n: int):
    """He_n(0) = (-1)^(n/2) (n-1)!! for even n, 0 for odd n (exact integer)."""
    if n % 2:
        return 0
    return (-1) ** (n // 2) * math.prod(range(n - 1, 0, -2))


def _exact_mu(name: str, k: int):
    """μ_k at the current mpmath precision, by Gaussian integration by parts."""
    s2pi = mpmath.sqrt(2 * mpmath.pi)
    root = mpmath.sqrt(mpmath.factorial(k))
    if name == "relu":  # relu'' = δ: μ_k = φ(0) He_{k-2}(0)/sqrt(k!) for k >= 2
        if k == 0:
            return 1 / s2pi
        if k == 1:
            return mpmath.mpf(1) / 2
        return _he0(k - 2) / s2pi / root
    if name == "abs":  # |z| = relu(z) + relu(-z)
        return (1 + (-1) ** k) * _exact_mu("relu", k)
    if name == "step":  # H' = δ
        return mpmath.mpf(1) / 2 if k == 0 else _he0(k - 1) / s2pi / root
    if name in ("sin", "cos"):  # E[e^{ig} He_k(g)] = i^k e^{-1/2}
        part = (1j**k).imag if name == "sin" else (1j**k).real
        return int(round(part)) * mpmath.exp(-mpmath.mpf(1) / 2) / root
    if name == "exp(z/2)":  # E[e^{ag} He_k(g)] = a^k e^{a²/2}
        a = mpmath.mpf(1) / 2
        return a**k * mpmath.exp(a * a / 2) / root
    if name == "erf":  # E[erf^(k)(g)] = (2/sqrt(pi)) E[e^{-g²} He_{k-1}(g)]
        if k % 2 == 0:
            return mpmath.mpf(0)
        m = (k - 1) // 2
        return (2 / mpmath.sqrt(3 * mpmath.pi) * math.prod(range(2 * m - 1, 0, -2))
                * (-mpmath.mpf(2) / 3) ** m / root)
    raise KeyError(name)


def _exact_second_moment(name: str):
    e = mpmath.e
    return {"relu": mpmath.mpf(1) / 2, "abs": mpmath.mpf(1), "step": mpmath.mpf(1) / 2,
            "sin": (1 - e**-2) / 2, "cos": (1 + e**-2) / 2, "exp(z/2)": mpmath.exp(0.5),
            "erf": 2 / mpmath.pi * mpmath.asin(mpmath.mpf(2) / 3)}[name]


ACTIVATION_OF = {"relu": "relu", "abs": "abs", "step": "step", "sin": "sin", "cos": "cos",
                 "exp(z/2)": "exp(z/2)", "erf": "erf"}


def exact_series(name: str, order: int, dps: int | None = None) -> KernelSeries:
    """Series from the closed-form coefficients; dps None -> double precision."""
    with mpmath.workdps(40 if dps is None else dps + 10):
        mu = [_exact_mu(name, k) for k in range(order + 1)]
        m2 = _exact_second_moment(name)
        if dps is None:
            # Converting an accurate value to double rounds it by at most u |μ_k|.
            coefficients = Coefficients(tuple(float(v) for v in mu),
                                        tuple(U64 * abs(float(v)) for v in mu), float(m2),
                                        U64 * float(m2))
        else:
            coefficients = Coefficients(tuple(mu), tuple(0.0 for _ in mu), m2)
    return KernelSeries.from_hermite(coefficients, activation=ACTIVATION_OF[name],
                                     method="test-exact", dps=dps)


def polynomial_series(spec: str) -> KernelSeries:
    """Series of a polynomial from its exact Hermite expansion (numpy's HermiteE basis)."""
    import sympy as sp
    from numpy.polynomial import hermite_e

    expr = get_activation(spec).expr
    z = sorted(expr.free_symbols, key=str)[0]
    power = [float(c) for c in reversed(sp.Poly(expr, z).all_coeffs())]
    he = hermite_e.poly2herme(power)
    mu = tuple(float(c) * math.sqrt(math.factorial(k)) for k, c in enumerate(he))
    m2 = math.fsum(m * m for m in mu)  # Parseval is exact for a polynomial
    return KernelSeries.from_hermite(
        Coefficients(mu, tuple(4 * U64 * abs(m) for m in mu), m2), activation=spec,
        method="test-exact")


def _normalised_hermite(x: np.ndarray, order: int) -> np.ndarray:
    h = np.empty((order + 1, x.size))
    h[0] = 1.0
    if order:
        h[1] = x
    for k in range(1, order):
        h[k + 1] = (x * h[k] - math.sqrt(k) * h[k - 1]) / math.sqrt(k + 1)
    return h


def quadrature_series(spec: str, order: int, kink_part: str | None = None) -> KernelSeries:
    """Gauss-Hermite coefficients of the smooth part of ``spec``; ``kink_part`` ("relu") added
    exactly. Error estimate: difference between 120 and 180 nodes plus 1e-15."""
    from scipy.special import roots_hermitenorm

    act = get_activation(spec)
    smooth = (lambda x: act(x) - np.maximum(x, 0.0)) if kink_part == "relu" else act

    def mu(nodes: int) -> np.ndarray:
        x, w = roots_hermitenorm(nodes)
        w = w / math.sqrt(2 * math.pi)
        return _normalised_hermite(x, order) @ (w * smooth(x))

    fine, coarse = mu(180), mu(120)
    values = fine.copy()
    if kink_part == "relu":
        with mpmath.workdps(30):
            values += np.array([float(_exact_mu("relu", k)) for k in range(order + 1)])
    def second_moment(nodes: int) -> float:
        # φ² ϕ is smooth on each half-line (the only kink is at 0); beyond |x| = 14 the
        # Gaussian weight leaves < 1e-40 for these activations of at most linear growth.
        x, w = np.polynomial.legendre.leggauss(nodes)
        x, w = 7.0 * (x + 1.0), 7.0 * w
        x, w = np.concatenate([-x, x]), np.concatenate([w, w])
        return float(np.sum(w * act(x) ** 2 * np.exp(-x * x / 2)) / math.sqrt(2 * math.pi))

    m2 = second_moment(160)
    m2_error = abs(m2 - second_moment(120)) + 1e-15
    errors = np.abs(fine - coarse) + 1e-15
    return KernelSeries.from_hermite(Coefficients(tuple(values), tuple(errors), m2, m2_error),
                                     activation=spec, method="test-quadrature")


def sphere_points(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x * (math.sqrt(d) / np.linalg.norm(x, axis=1, keepdims=True))


# ---------------------------------------------------------------------------------------------
# Series vs closed forms, double precision
# ---------------------------------------------------------------------------------------------

T_GRID = np.linspace(-0.9, 0.9, 37)

# Orders chosen so the Parseval bound T·0.9^{K+1} is below 1e-12: ReLU/abs (μ_k² ~ k^{-5/2})
# need about 200 terms, the step (μ_k² ~ k^{-3/2}) about 300, the rest far fewer.
DOUBLE_CASES = [("relu", 200), ("abs", 200), ("step", 300), ("sin", 30), ("cos", 30),
                ("exp(z/2)", 40), ("erf", 120)]


@pytest.mark.parametrize("name,order", DOUBLE_CASES)
def test_series_matches_closed_form_double(name, order):
    series = exact_series(name, order)
    got = rf_kernel_series(series, T_GRID)
    want = closed_form_kernel(ACTIVATION_OF[name], T_GRID)
    assert np.max(got.error_bound) < 1e-12
    # Closed forms carry their own rounding: a few ulps of an O(1) value (2e-15 allowance).
    assert np.all(np.abs(got.values - want) <= got.error_bound + 2e-15)
    assert np.max(np.abs(got.values - want)) < 1e-12


@pytest.mark.parametrize("spec", ["quadratic", "cubic", "poly3", "h3", "2*z**4 - z + 1"])
def test_polynomial_series_is_finite_and_matches_isserlis(spec):
    series = polynomial_series(spec)
    t = np.linspace(-1.0, 1.0, 41)
    got = rf_kernel_series(series, t)
    want = closed_form_kernel(spec, t)
    # A polynomial's series ends at its degree: the tail bound is only the coefficients'
    # rounding, ε_k ≈ 8u μ_k² plus 4u m₂, so at most 16 u m₂.
    assert float(series.tail_bound) <= 16 * U64 * float(series.second_moment)
    scale = np.max(np.abs(want))
    assert np.max(np.abs(got.values - want)) <= 1e-14 * scale


def test_isserlis_closed_form_known_values():
    # E[u²v²] = 1 + 2t², E[u³v³] = 9t + 6t³ (Wick's theorem by hand).
    t = np.array([-0.7, 0.0, 0.3, 1.0])
    np.testing.assert_allclose(closed_form_kernel("quadratic", t), 1 + 2 * t**2, rtol=1e-15)
    np.testing.assert_allclose(closed_form_kernel("cubic", t), 9 * t + 6 * t**3, rtol=1e-15,
                               atol=1e-15)


def test_relu_at_unit_correlation_meets_stated_bound():
    series = exact_series("relu", 64)
    for t in (1.0, -1.0):
        got = rf_kernel_series(series, t)
        err = abs(got.values - closed_form_kernel("relu", t))
        assert err <= got.error_bound
    # At t = 1 the whole tail is missing, so the bound is nearly attained (not vacuous).
    at_one = rf_kernel_series(series, 1.0)
    assert abs(at_one.values - 0.5) >= 0.9 * at_one.error_bound
    assert 5e-5 < at_one.error_bound < 1e-4  # tail at K = 64 is 8.2e-5 (mpmath reference)


@pytest.mark.parametrize("name,order", [("relu", 16), ("step", 16), ("erf", 8), ("sin", 6),
                                        ("abs", 10)])
def test_truncation_bound_holds_against_higher_order(name, order):
    low = exact_series(name, order)
    high = exact_series(name, 8 * order)
    t = np.linspace(-1.0, 1.0, 81)
    diff = np.abs(rf_kernel_series(low, t).values - rf_kernel_series(high, t).values)
    bound = rf_kernel_series(low, t).error_bound + rf_kernel_series(high, t).error_bound
    assert np.all(diff <= bound)
    # The bound is tight at |t| = 1 up to the part of the tail beyond 8K (not vacuous).
    assert diff[-1] >= 0.3 * bound[-1]


# ---------------------------------------------------------------------------------------------
# mpmath
# ---------------------------------------------------------------------------------------------

# Orders: the Parseval bound T·|t|^{K+1} must be below 1e-26 at the largest |t| tested.
MP_CASES = [("relu", 100, 0.5), ("abs", 100, 0.5), ("step", 100, 0.5), ("erf", 160, 0.9),
            ("sin", 40, 0.9), ("cos", 40, 0.9), ("exp(z/2)", 60, 0.9)]


@pytest.mark.parametrize("name,order,t_max", MP_CASES)
def test_mpmath_series_matches_closed_form_to_25_digits(name, order, t_max):
    series = exact_series(name, order, dps=30)
    with mpmath.workdps(30):
        t = [mpmath.mpf(t_max) * j / 6 for j in range(-6, 7)]
    got = rf_kernel_series(series, np.array(t, dtype=object))
    want = closed_form_kernel(ACTIVATION_OF[name], np.array(t, dtype=object), dps=30)
    assert isinstance(got.values[0], mpmath.mpf)
    for value, exact, bound in zip(got.values, want, got.error_bound):
        assert bound < 1e-26
        # 30 digits of work: the closed forms lose a few ulps (1e-28 allowance).
        assert abs(value - exact) <= bound + 1e-28
        assert abs(value - exact) < 1e-25


def test_mpmath_scalar_and_double_agree():
    series = exact_series("erf", 60, dps=30)
    got = rf_kernel_series(series, mpmath.mpf("0.3"))
    assert isinstance(got.values, mpmath.mpf) and isinstance(got.error_bound, mpmath.mpf)
    double = rf_kernel_series(exact_series("erf", 60), 0.3)
    assert abs(float(got.values) - double.values) < 1e-15  # double rounding of an O(0.2) value


def test_mpmath_kernel_matrix_on_exact_sphere():
    # Rows of ±1 lie exactly on the sqrt(d)-sphere and give exact t = <x, y>/d.
    rng = np.random.default_rng(3)
    X = rng.choice([-1.0, 1.0], size=(7, 8))
    series = exact_series("sin", 40, dps=30)
    result = kernel_matrix(series, X)
    want = closed_form_kernel_matrix("sin", X, dps=30)
    assert result.values.dtype == object and result.dps == 30
    # sin: the tail (~1/41!) is negligible; what remains is the Horner rounding bound
    # γ_82 K(1) ≈ 82 · 2^-103 · 0.43 ≈ 4e-30.
    assert result.error_bound < 1e-29
    for got, exact in zip(result.values.flat, want.flat):
        assert abs(got - exact) < 1e-28  # a few ulps at 30 digits


# ---------------------------------------------------------------------------------------------
# Kernel matrices: numpy, array_api_strict, float32, general norms
# ---------------------------------------------------------------------------------------------

def test_kernel_matrix_relu_matches_arc_cosine():
    X = sphere_points(60, 20, seed=0)
    Y = sphere_points(50, 20, seed=1)
    series = exact_series("relu", 200)
    square = kernel_matrix(series, X)
    want = closed_form_kernel_matrix("relu", X)
    err = np.abs(square.values - want)
    off = ~np.eye(60, dtype=bool)
    # Closed form: arccos loses digits near rho = ±1 (the diagonal); off it, a few ulps.
    assert np.max(err[off]) <= square.error_bound_off_diagonal + 1e-14
    assert np.max(err) <= square.error_bound + 1e-7
    rect = kernel_matrix(series, X, Y)
    assert rect.values.shape == (60, 50) and rect.error_bound_off_diagonal is None
    assert np.max(np.abs(rect.values - closed_form_kernel_matrix("relu", X, Y))) \
        <= rect.error_bound + 1e-14
    assert rect.max_abs_t < 1.0


def test_kernel_matrix_array_api_strict():
    xps = pytest.importorskip("array_api_strict")
    X = sphere_points(30, 10, seed=2)
    series = exact_series("erf", 80)
    ref = kernel_matrix(series, X)
    out = kernel_matrix(series, xps.asarray(X))
    assert type(out.values) is type(xps.asarray(1.0))
    assert out.values.dtype == xps.float64
    # Same arithmetic, possibly another summation order in XXᵀ: agree to a few ulps.
    np.testing.assert_allclose(np.asarray(out.values), ref.values, rtol=0, atol=1e-14)
    closed = closed_form_kernel_matrix("erf", xps.asarray(X))
    np.testing.assert_allclose(np.asarray(closed), ref.values, rtol=0, atol=1e-13)
    assert out.error_bound == pytest.approx(ref.error_bound, rel=1e-6)


def test_kernel_matrix_float32_keeps_dtype():
    X = sphere_points(40, 16, seed=4).astype(np.float32)
    series = exact_series("relu", 64)
    out = kernel_matrix(series, X)
    assert out.values.dtype == np.float32
    # Rounding to float32 moved ||x||²/d by ~1e-7: accept that in the float64 reference.
    ref = kernel_matrix(series, X.astype(np.float64), sphere_rtol=1e-6)
    # float32 rounding of t (d·u32 ~ 1e-6) times K' <= 1 dominates; bound covers the rest.
    assert np.max(np.abs(out.values - ref.values)) < 1e-5


def test_general_norm_closed_forms_reduce_to_sphere_forms():
    X = sphere_points(12, 9, seed=5)
    t = np.clip(X @ X.T / 9, -1, 1)
    for name in ("relu", "step", "abs", "erf", "sin", "cos", "exp(z/2)", "leaky_relu", "cubic"):
        np.testing.assert_allclose(closed_form_kernel_matrix(name, X),
                                   closed_form_kernel(name, t), rtol=1e-12, atol=1e-7)


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "step", "abs", "sign(z)", "erf(2*z)",
                                  "sin(z)", "cos(z)", "exp(z/2)", "3*relu(z)", "h3"])
def test_general_norm_closed_forms_monte_carlo(name):
    # Off the sphere: norms 0.6 sqrt(d) and 1.5 sqrt(d), plus X with itself.
    d = 5
    rng = np.random.default_rng(11)
    X = sphere_points(3, d, seed=6) * np.array([[0.6], [1.0], [1.5]])
    want = closed_form_kernel_matrix(name, X)
    act = get_activation(name)
    N = 200_000
    V = rng.standard_normal((N, d)) / math.sqrt(d)
    F = act(V @ X.T)  # (N, 3)
    prod = F[:, :, None] * F[:, None, :]
    mean, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(N)
    # CLT: |mean - K| <= 5 standard errors fails with probability ~6e-7 per entry (fixed seed).
    assert np.all(np.abs(mean - want) <= 5 * se + 1e-12)


def test_off_sphere_closed_form_scales_homogeneously():
    X = sphere_points(4, 6, seed=7)
    Y = 2.5 * X
    np.testing.assert_allclose(closed_form_kernel_matrix("relu", X, Y),
                               2.5 * closed_form_kernel_matrix("relu", X), rtol=1e-13)


# ---------------------------------------------------------------------------------------------
# Monte Carlo: K(t) = E[φ(u)φ(v)] for activations without a closed form
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec,kink", [("tanh", None), ("gelu", None), ("relu+tanh", "relu")])
def test_series_matches_monte_carlo(spec, kink):
    series = quadrature_series(spec, 40, kink_part=kink)
    act = get_activation(spec)
    rng = np.random.default_rng(2024)
    N = 200_000
    u, w = rng.standard_normal((2, N))
    for t in (-0.8, -0.3, 0.0, 0.5, 0.95):
        v = t * u + math.sqrt(1 - t * t) * w
        prod = act(u) * act(v)
        got = rf_kernel_series(series, t)
        # CLT, 5 standard errors (false alarm ~6e-7 per point), plus the series' own bound.
        assert abs(prod.mean() - got.values) <= 5 * prod.std() / math.sqrt(N) + got.error_bound


def test_quadrature_tail_bound_is_consistent():
    series = quadrature_series("relu+tanh", 40, kink_part="relu")
    # relu+tanh is not smooth: its tail decays like relu's, so order 40 leaves ~1e-4.
    assert 1e-5 < float(series.tail_bound) < 1e-2
    exact = rf_kernel_series(series, 1.0)
    assert abs(exact.values - float(series.second_moment)) <= exact.error_bound


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

def test_off_sphere_rows_are_refused_with_details():
    X = sphere_points(5, 4, seed=8)
    X[3] *= 1.01
    with pytest.raises(OffSphereError, match=r"row 3 of X.*1\.0201.*tolerance 1\.5e-08"
                       r".*closed_form_kernel_matrix"):
        kernel_matrix(exact_series("relu", 8), X)
    with pytest.raises(OffSphereError, match="no general-norm closed form"):
        kernel_matrix(quadrature_series("tanh", 8), X)
    # A looser tolerance accepts it.
    kernel_matrix(exact_series("relu", 8), X, sphere_rtol=0.05)


def test_t_outside_unit_interval_is_refused():
    series = exact_series("relu", 8)
    with pytest.raises(OffSphereError, match=r"\|t\| = 1\.1"):
        rf_kernel_series(series, 1.1)
    with pytest.raises(OffSphereError):
        closed_form_kernel("relu", np.array([0.0, -1.5]))
    # Rounding slack is clipped, not refused.
    assert rf_kernel_series(series, 1 + 1e-14).values == rf_kernel_series(series, 1.0).values


@pytest.mark.parametrize("bad,match", [
    (np.ones(4), "2-D"),
    (np.ones((0, 3)), "at least one row"),
    (np.array([[1.0, np.nan]]), "non-finite"),
    (np.array([[1 + 1j, 1.0]]), "real floating"),
    ([[1.0, 2.0], [3.0]], "rectangular"),
    ([["1.0"]], "real floating"),
    ("1.0", "nested list"),
])
def test_bad_data_is_refused(bad, match):
    with pytest.raises(ShapeError, match=match):
        kernel_matrix(exact_series("relu", 4), bad)


def test_nested_lists_are_accepted():
    X = sphere_points(3, 4, seed=12)
    series = exact_series("relu", 16)
    np.testing.assert_array_equal(kernel_matrix(series, X.tolist()).values,
                                  kernel_matrix(series, X).values)


def test_mismatched_dimensions_and_backends():
    series = exact_series("relu", 4)
    with pytest.raises(ShapeError, match="same dimension"):
        kernel_matrix(series, sphere_points(2, 3, 0), sphere_points(2, 4, 0))
    with pytest.raises(ShapeError, match="non-finite"):
        rf_kernel_series(series, np.array([0.1, np.inf]))
    xps = pytest.importorskip("array_api_strict")
    with pytest.raises(BackendError, match="numpy arrays"):
        kernel_matrix(exact_series("sin", 4, dps=20), xps.asarray(sphere_points(2, 3, 0)))


def test_argument_errors():
    series = exact_series("relu", 4)
    with pytest.raises(RFTheoryError, match="prebuilt"):
        rf_kernel_series(series, 0.1, order=5)
    with pytest.raises(RFTheoryError, match="not available"):
        KernelSeries.from_hermite(Coefficients((0.5, None), (0.0, 0.0), 0.5), activation="x")
    with pytest.raises(NoClosedFormError, match="tanh"):
        closed_form_kernel("tanh", 0.2)
    assert not has_closed_form("gelu") and has_closed_form("2*erf(3*z)")
    with pytest.raises(ShapeError, match="zero norm"):
        closed_form_kernel_matrix("relu", np.array([[0.0, 0.0], [1.0, 1.0]]))
    with pytest.raises(ShapeError, match="real numbers"):
        rf_kernel_series(exact_series("sin", 4, dps=20), np.array(["0.1"]))


# ---------------------------------------------------------------------------------------------
# Through rftheory.hermite (the production coefficient path)
# ---------------------------------------------------------------------------------------------

def test_kernel_series_from_hermite_module_double():
    pytest.importorskip("rftheory.hermite")
    from rftheory.kernel import kernel_series

    series = kernel_series("erf", 120)
    got = rf_kernel_series(series, T_GRID)
    want = closed_form_kernel("erf", T_GRID)
    assert np.max(np.abs(got.values - want)) <= np.max(got.error_bound) + 2e-15
    relu = rf_kernel_series("relu", T_GRID, order=64)
    assert np.all(np.abs(relu.values - closed_form_kernel("relu", T_GRID)) <= relu.error_bound
                  + 2e-15)


def test_hermite_module_series_agrees_with_exact_coefficients():
    pytest.importorskip("rftheory.hermite")
    from rftheory.kernel import kernel_series

    production = kernel_series("relu", 200)
    reference = exact_series("relu", 200)
    diff = np.abs(np.array(production.coefficients) - np.array(reference.coefficients))
    # Each c_k is within ε_k of μ_k² for both series.
    assert np.all(diff <= np.array(production.coefficient_errors)
                  + np.array(reference.coefficient_errors))
    X = sphere_points(40, 12, seed=9)
    got = kernel_matrix("relu", X, order=200)
    want = closed_form_kernel_matrix("relu", X)
    off = ~np.eye(40, dtype=bool)
    assert np.max(np.abs(got.values - want)[off]) <= got.error_bound_off_diagonal + 1e-14


def test_unknown_error_estimates_give_infinite_bounds():
    coefficients = Coefficients((0.5, 0.5), (0.0, math.inf), 0.5)
    series = KernelSeries.from_hermite(coefficients, activation="x")
    assert math.isinf(rf_kernel_series(series, 0.3).error_bound)
    with pytest.raises(RFTheoryError, match=">= 0"):
        KernelSeries.from_hermite(Coefficients((0.5,), (math.nan,), 0.5), activation="x")


def test_kernel_series_from_hermite_module_mpmath():
    pytest.importorskip("rftheory.hermite")
    with mpmath.workdps(30):
        t = np.array([mpmath.mpf(j) / 10 for j in range(-5, 6)], dtype=object)
    # Order 24: the Parseval tail e^{-1}/25! ≈ 2e-26 times 0.5^25 is far below 1e-25.
    got = rf_kernel_series("sin", t, order=24, method="mpmath", dps=30)
    want = closed_form_kernel("sin", t, dps=30)
    assert max(abs(a - b) for a, b in zip(got.values, want)) < 1e-25


@pytest.mark.gpu
def test_kernel_matrix_cupy_matches_numpy():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            pytest.skip("no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("no CUDA device")
    X = sphere_points(200, 32, seed=10)
    series = exact_series("relu", 64)
    out = kernel_matrix(series, cupy.asarray(X))
    assert isinstance(out.values, cupy.ndarray)
    # Different GEMM kernels sum XXᵀ in another order: t differs by ~d ulps, K' <= 1.
    np.testing.assert_allclose(cupy.asnumpy(out.values), kernel_matrix(series, X).values,
                               rtol=0, atol=1e-13)
    closed = closed_form_kernel_matrix("relu", cupy.asarray(X))
    assert isinstance(closed, cupy.ndarray)
