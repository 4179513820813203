"""Expressions a theorist types (issue #11): domains on the real line, ranges, refusals, overflow.

The accuracy of the new functions against mpmath at their regime switch points, and their
derivatives, run through the harness of ``test_activations.py`` (``TYPED_EXPRESSIONS``); this
file checks what is accepted and refused, the interval bounds behind it, far-out evaluation and
the three Hermite methods on the new functions.
"""

from __future__ import annotations

import builtins

import mpmath
import numpy as np
import pytest
import sympy as sp

from rftheory.activations import Activation, Z, get_activation, parse_activation
from rftheory.domain import expression_range, proves
from rftheory.errors import ActivationError
from rftheory.hermite import hermite_coefficients

# (typed string, fragment of the one-line message: where the domain fails, or why refused)
REFUSED = [
    ("log(z)", "log(z) is not defined for z ≤ 0 (it needs z > 0)"),
    ("sqrt(z-1)", "sqrt(z-1) is not defined for z < 1"),
    ("sqrt(1 - z**2)", "not defined for z < -1 or z > 1"),
    ("log(z**2)", "not defined for z = 0"),
    ("log((z - 1)**2*(z + 2))", "not defined for z ≤ -2 or z = 1"),
    ("log1p(z)", "log1p(z) is not defined for z ≤ -1"),
    ("log2(z - 3)", "not defined for z ≤ 3"),
    ("z**0.5", "z**0.5 is not defined for z < 0"),
    ("z**(-1/2)", "not defined for z ≤ 0"),
    ("sqrt(z)**2", "sqrt(z) is not defined for z < 0"),  # checked as typed: sympy would say z
    ("exp(log(z))", "log(z) is not defined"),
    ("1/z", "1/z has a pole at z = 0"),
    ("tanh(z)/(z**2 - 2)", "has a pole at z = -sqrt(2) or z = sqrt(2)"),
    ("z**-3 + 1", "has a pole at z = 0"),
    ("1/tanh(z)", "has a pole: tanh(z) vanishes or changes sign near z = 0"),
    ("log(sin(z))", "it needs sin(z) > 0, which fails at z = 0"),
    ("sqrt(z - sqrt(2))", "it needs z - sqrt(2) ≥ 0, which fails at z = 0"),  # not over QQ
    ("log(z**2 - pi)", "fails at z = 0"),
    ("1/(z**7 - 3*z + 1)", "pole at z = -1.24922 or z = 0.333486 or z = 1.1332"),
    ("sqrt(tanh(z))", "fails at z = -0.125"),
    ("log(exp(z) - z)", "refused conservatively"),  # true (e^z > z) but not provable here
    ("log(-1)*z", "log(-1) is not a real number"),
    ("(-8)**(1/3)*z", "is not a real number"),
    ("z/0", "z/0 divides by zero"),
    ("z + 1/(1 - 1)", "divides by zero"),
    ("log(z, 1)", "constant base > 0 other than 1"),
    ("log(z + 5, -2)", "constant base > 0 other than 1"),
    ("log(1 + z**2, z)", "argument 2 of log() must be a numeric constant"),
    ("z**z", "exponents must be numeric constants, or the base a positive constant"),
    ("(-2)**z", "exponents must be numeric constants"),
    ("tan(z)", "unknown function 'tan'"),
    ("acosh(z)", "unknown function 'acosh'"),
    ("z**\u00b2", "character '\u00b2' (U+00B2 SUPERSCRIPT TWO) at position 3 is refused; write **2"),
    ("\u03c0*z", "write pi"),
    ("z\u2212 1", "write -"),
    ("tanh(z)\u00a0+ z", "use an ordinary space"),
    ("\uff45\uff58\uff50(z)", "it looks like 'e' (did you mean 'exp(z)'?)"),
    ("\U0001d41e\U0001d431\U0001d429(z)", "MATHEMATICAL BOLD SMALL E) at position 0"),
]


@pytest.mark.parametrize("text, fragment", REFUSED)
def test_expressions_leaving_their_domain_are_refused_saying_where(text, fragment, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec reached while checking a domain")

    # a first run lets sympy finish its lazy imports (importlib runs module code with exec)
    with pytest.raises(ActivationError):
        get_activation(text)

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    with pytest.raises(ActivationError) as info:
        get_activation(text)
    message = str(info.value)
    assert fragment in message, message
    assert "\n" not in message


# Accepted: each argument is proved inside its domain (by sympy's assumptions, exactly for a
# polynomial, or by interval bounds), and the value is real and finite on a wide grid.
ACCEPTED = [
    "log(1 + z**2)", "log(z**2 - 2*z + 2)", "sqrt((z - 1)**2)", "sqrt(z**4 + z**2)",
    "log(1 + tanh(z))", "log(1 - tanh(z)**2)", "log(erfc(z))", "log(sigmoid(z))",
    "sqrt(2 + sin(z))", "1/(2 + sin(z))", "log(cosh(z))", "sqrt(cosh(z) - 1)",
    "log(1 + exp(z))", "log(atan(z) + 2)", "log1p(tanh(z))", "(1 + z**2)**-0.25",
    "log(abs(z) + 1)", "sqrt(relu(z))", "log(elu(z) + 1.5)", "1/(1 + exp(-z))",
    "log(z**2 + pi)", "sqrt(z**64 + 1)", "log(1.5*z**2 + 0.1)",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_expressions_inside_their_domain_are_accepted_and_real(text):
    act = get_activation(text)
    x = np.concatenate([np.linspace(-30.0, 30.0, 601), [-1e3, 1e3]])
    with np.errstate(all="ignore"):
        value = act(x)
    assert np.all(np.isfinite(value)), text


def test_domain_checks_see_the_typed_form_and_keep_simplifications():
    # sympy simplifies sqrt((z - 1)**2) to |z - 1| for real z: accepted, and a kink at 1
    act = get_activation("sqrt((z-1)**2)")
    assert act.expr == sp.Abs(Z - 1) and act.kinks == (1.0,)
    # c**u with a constant c > 0 is exp(u log c); exp2 is the same function
    assert parse_activation("2**z") == parse_activation("exp2(z)") == sp.exp(Z * sp.log(2))
    assert parse_activation("log(z**2 + 1, 10)") == parse_activation("log10(1 + z**2)")
    assert parse_activation("E*z") == parse_activation("e*z") == sp.E * Z


# -- interval bounds --------------------------------------------------------------------------

@pytest.mark.parametrize("expr, lo, hi, lo_open, hi_open", [
    (1 + sp.tanh(Z), 0, 2, True, True),
    (2 + sp.sin(Z), 1, 3, False, False),
    (sp.cosh(Z) - 1, 0, sp.oo, False, True),
    (sp.erfc(Z), 0, 2, True, True),
    (1 - sp.tanh(Z)**2, 0, 1, True, False),
    (Z**2, 0, sp.oo, False, True),
    (-Z**2, -sp.oo, 0, True, False),
    (1 / (1 + sp.exp(-Z)), 0, 1, True, True),
    (sp.Abs(Z) - 1, -1, sp.oo, False, True),
    (sp.Max(Z, 0) + 1, 1, sp.oo, False, True),
    (1 / sp.sqrt(1 + Z**2), 0, 1, True, False),
    (sp.exp(Z) - Z, -sp.oo, sp.oo, True, True),  # interval arithmetic forgets correlations
])
def test_expression_range_examples(expr, lo, hi, lo_open, hi_open):
    r = expression_range(expr)
    assert (r.lo, r.hi, r.lo_open, r.hi_open) == (lo, hi, lo_open, hi_open)


def _random_expression(rng: np.random.Generator, depth: int) -> sp.Expr:
    unary = [sp.tanh, sp.sin, sp.cos, sp.atan, sp.erf, sp.erfc, sp.exp, sp.asinh, sp.sinh,
             sp.cosh, sp.Abs, lambda u: sp.Max(u, 0), lambda u: sp.log(1 + u**2),
             lambda u: sp.sqrt(1 + u**2), lambda u: 1 / (1 + sp.exp(-u))]
    if depth == 0 or rng.random() < 0.2:
        return Z if rng.random() < 0.7 else sp.Rational(int(rng.integers(-3, 4)), 2)
    kind = int(rng.integers(0, 4))
    a = _random_expression(rng, depth - 1)
    if kind == 0:
        return unary[int(rng.integers(len(unary)))](a)
    if kind == 1:
        return a ** int(rng.integers(-2, 4))
    b = _random_expression(rng, depth - 1)
    return a + b if kind == 2 else a * b


def test_expression_range_is_sound_on_random_expressions():
    # Every value computed at 30 digits lies in the bound, strictly where the bound says so.
    rng = np.random.default_rng(11)
    points = [sp.Rational(k, 4) for k in range(-40, 41)] + [sp.Integer(s * 10**k)
                                                            for k in (2, 3) for s in (-1, 1)]
    checked = 0
    while checked < 60:
        expr = _random_expression(rng, 3)
        if expr.is_number or expr.has(sp.zoo, sp.nan):
            continue
        r = expression_range(expr)
        for x in points:
            value = expr.subs(Z, x)
            if not (value.is_extended_real and value.is_finite):
                continue  # a pole of a random quotient: outside what the bound describes
            for end, is_open, sign in ((r.lo, r.lo_open, 1), (r.hi, r.hi_open, -1)):
                if end in (sp.oo, -sp.oo):
                    continue
                # evalf gives 50 correct digits of the difference itself (2 - erfc(-10) ≈ 2e-45)
                gap = sign * sp.N(value - end, 50)
                assert gap > 0 or (gap == 0 and not is_open), (expr, x, value, r)
        checked += 1


def test_proves_decides_polynomials_exactly():
    assert proves(Z**2 - 2 * Z + 2, "positive")  # (z - 1)² + 1, which assumptions cannot see
    assert proves((Z - 1)**2, "nonnegative") and not proves((Z - 1)**2, "positive")
    assert proves(Z**2 + sp.Rational(1, 10**30), "positive")
    assert not proves(Z**2 - sp.Rational(1, 10**30), "nonnegative")  # roots at ±1e-15
    assert proves(sp.Integer(3), "nonzero") and not proves(sp.Integer(0), "nonzero")


# -- far out: overflow, underflow and cancellation ----------------------------------------------

def _reference(f, x: float) -> float:
    """f(x) in mpmath to double precision: digits doubled until two results agree."""
    previous = None
    for dps in (400, 800, 1600, 3200):  # 1 + exp(-710) needs 309 digits, tanh(1000) 869
        with mpmath.workdps(dps):
            try:
                value = f(mpmath.mpf(x))
            except ZeroDivisionError:
                continue
            if mpmath.isinf(value):
                continue
            value = float(value)
        if previous is not None and (value == previous or abs(value - previous) <= 1e-20 * abs(value)):
            return value
        previous = value
    raise AssertionError(f"no reference at z = {x}")


FAR = [
    ("log(1 + exp(z))", [-1e300, -1e5, -800.0, -710.0, -700.0, 700.0, 709.78, 710.0, 800.0, 1e5]),
    ("log(1 - tanh(z)**2)", [-300.0, 19.5, 25.0, 100.0, 1000.0]),
    ("log(erfc(z))", [26.0, 30.0, 100.0, 1000.0]),
    ("log(sigmoid(z))", [-1e5, -800.0, 800.0]),
    ("sqrt(1 + z**2)", [1e154, 1e200, -1e300]),  # hypot: z/sqrt(1 + z**2) is 1, not z/inf = 0
    ("log(cosh(z))", [710.0, -1e4]),
    ("asinh(z)", [2.0**28, 1e300, -1e300]),
    ("expm1(z)", [-800.0, 709.0, 710.0]),
    ("exp2(z)", [-1075.0, 1023.0, 1024.0]),  # pow(2, z): exact, and 2**1024 overflows
    ("mish(z)", [-800.0, 800.0]),
    ("log(2 + exp(3*z))", [-300.0, 300.0]),
]


@pytest.mark.parametrize("text, points", FAR)
def test_far_out_values_and_derivatives_are_the_true_ones(text, points):
    # Stable forms (logaddexp, log1p, expm1, asinh) and the mpmath recomputation of every
    # non-finite value give the correctly rounded result or within a few ulp of it; values that
    # overflow double (expm1(710), 2**1024) stay inf, and are checked to overflow truly.
    act = get_activation(text)
    x = np.array(points)
    value, slope = act.value_and_derivative(x)
    for got, exact in ((value, act.mp), (slope, act.mp_derivative)):
        want = np.array([_reference(exact, v) for v in points])
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        finite = np.isfinite(want)
        # a few roundings of the stable forms: 1e-15 is 4.5 ulp
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-15, atol=0, err_msg=text)


def test_softplus_at_700_and_beyond_does_not_overflow():
    act = get_activation("log(1+exp(z))")
    value, slope = act.value_and_derivative(np.array([-700.0, 700.0, -800.0, 800.0]))
    assert value[1] == 700.0 and value[3] == 800.0 and value[2] == 0.0  # exp(-800) underflows
    assert value[0] == pytest.approx(9.85967654375977e-305, rel=1e-15)
    assert np.all(np.isfinite(slope)) and slope[3] == 1.0 and slope[2] == 0.0


def test_mpmath_never_runs_away_on_towers_of_exponentials():
    # exp(exp(exp(80))) has ~1e34 digits in its exponent; the cap returns the limit instead
    act = get_activation("exp(exp(exp(z)))")
    assert np.isinf(act(np.array([80.0]))[0])
    assert get_activation("1/(1 + exp(exp(exp(z))))")(np.array([80.0]))[0] == 0.0


# -- kinks of fractional powers, and the three Hermite methods ----------------------------------

@pytest.mark.parametrize("text, kinks", [
    ("sqrt(abs(z))", (0.0,)), ("sqrt(relu(z - 1))", (1.0,)), ("abs(z)**1.5 + tanh(z)", (0.0,)),
    ("sqrt(1 + z**2)", ()), ("(z**2)**(1/3)", (0.0,)), ("elu(z)", (0.0,)),
])
def test_fractional_powers_are_not_smooth_where_their_base_vanishes(text, kinks):
    assert get_activation(text).kinks == kinks


def test_kinks_of_a_transcendental_base_that_may_vanish_are_refused():
    with pytest.raises(ActivationError, match="cannot locate where cosh"):
        get_activation("sqrt(cosh(z) - 1)").kinks


HERMITE_CASES = ["log(1 + exp(z))", "erfc(z)", "expm1(z/2)", "sqrt(1 + z**2)", "elu(z)"]


@pytest.mark.parametrize("text", HERMITE_CASES)
def test_three_hermite_methods_agree_on_the_new_functions(text):
    fast = hermite_coefficients(text, 6, method="fast")
    precise = hermite_coefficients(text, 6, method="mpmath", dps=25)
    exact = hermite_coefficients(text, 6, method="exact", time_budget=2.0)
    reference = precise.as_float()
    # fast against mpmath within fast's own error estimate (mpmath's is ~1e-25)
    assert np.all(np.abs(fast.as_float() - reference) <= np.asarray(fast.errors) + 1e-24)
    found = ~np.isnan(exact.as_float())
    # closed forms where the rules apply (erfc = 1 - erf, expm1 = exp - 1); otherwise the usual
    # fallback, which says which orders it did not find
    assert np.allclose(exact.as_float()[found], reference[found], rtol=0, atol=1e-20)
    if text in ("erfc(z)", "expm1(z/2)"):
        assert found.all() and exact.second_moment is not None
    if not found.all():
        assert "no closed form within" in exact.notes


def test_softplus_typed_is_the_registry_softplus():
    typed, named = get_activation("log(1+exp(z))"), get_activation("softplus")
    assert typed.expr == named.expr
    np.testing.assert_array_equal(hermite_coefficients(typed, 8).as_float(),
                                  hermite_coefficients(named, 8).as_float())


@pytest.mark.parametrize("method", ["fast", "mpmath"])
def test_hermite_refuses_a_directly_built_expression_leaving_its_domain(method):
    with pytest.raises(ActivationError, match="not finite and real"):
        hermite_coefficients(Activation("sqrt", sp.sqrt(Z)), 3, method=method, dps=15)


@pytest.mark.slow  # ~10 s: thousands of quadrature nodes recomputed in mpmath
def test_underflow_then_log_is_computed_not_refused_by_the_quadrature():
    # log(1 - tanh(z)²) = log(4) - 2|z| - 2 log(1 + e^{-2|z|}): tanh rounds to 1 past |z| ≈ 19
    # and the double program gives -inf there, recomputed in mpmath. Its Gaussian moments
    # exist; compare with the same function written stably.
    typed = hermite_coefficients("log(1 - tanh(z)**2)", 4, method="fast")
    stable = hermite_coefficients("log(4) - 2*abs(z) - 2*log1p(exp(-2*abs(z)))", 4, method="fast")
    assert np.all(np.abs(typed.as_float() - stable.as_float())
                  <= np.asarray(typed.errors) + np.asarray(stable.errors))


def test_expression_range_never_parses_a_string():
    import sympy as sp

    from rftheory.domain import expression_range
    from rftheory.errors import ActivationError

    with pytest.raises(ActivationError, match="not a string"):
        expression_range("__import__('os').getcwd()")
    assert expression_range(sp.Integer(2)).lo == 2  # plain numbers still work
