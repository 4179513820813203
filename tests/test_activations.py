"""Activations: safe parsing (hostile strings never run), numeric forms, derivatives, backends."""

from __future__ import annotations

import builtins

import mpmath
import numpy as np
import pytest
import sympy as sp

from rftheory.activations import ACTIVATIONS, Activation, Z, get_activation, parse_activation
from rftheory.errors import ActivationError, BackendError

#: Expressions a theorist types with the elementary functions beyond the registry (issue #11):
#: each new function, the stable forms (log(c + exp(u)), log1p(exp(u))) and compositions whose
#: arguments are only provably inside their domain by interval bounds. All are finite for
#: |z| <= 1000 in float32, so the harness below can check them at its large arguments too.
TYPED_EXPRESSIONS = [
    "log(1 + exp(z))", "log1p(exp(-z))", "log(2 + exp(3*z))", "log(exp(z) + exp(-z))",
    "z*(1 + erf(z/sqrt(2)))/2", "sqrt(1 + z**2)", "exp(-z**2/2)*pi", "E*tanh(z)",
    "log(1 + z**2)", "log10(1 + z**2)", "log(2 + z**2, 2)", "log1p(z**2)", "expm1(-z**2)",
    "expm1(tanh(z))", "erfc(z)", "erfc(-z/2) - 1", "asinh(z)", "arcsinh(3*z)", "exp2(-z**2)",
    "2**sin(z)", "log(1 + tanh(z)/2)", "sqrt(2 + sin(z))", "log(cosh(z/4))", "elu(z)",
    "elu(z - 1, 0.5)", "mish(z)", "sqrt(abs(z) + 1)", "log(1 + sigmoid(z))", "ln(3 + cos(z))",
]
#: Points where the implementations of the new functions switch regime (fdlibm/cephes, as used
#: by NumPy and SciPy): expm1 and log1p near ln2/2 and 2^-28, erf/erfc at 0.84375, 1.25,
#: 1/0.35 and 6, asinh at 2^-28 and 2^28 (beyond |z| = 30 only in the far-out test), erfc's
#: underflow near 26.5, exp's overflow at 709.78.
SWITCH_POINTS = [1e-8, 2.0**-28, 0.25, 0.34657359, 0.5, 0.84375, 1.25, 2.857142857, 6.0, 8.0,
                 26.5, 27.3]

# (hostile string, fragment the error message must contain: it names what was refused)
HOSTILE = [
    ("__import__('os').system('touch SENTINEL')", "dunder"),
    ("().__class__.__bases__[0].__subclasses__()", "dunder"),
    ("__builtins__", "dunder"),
    ("z.__class__", "dunder"),
    # Python's NFKC would read these look-alikes as eval / __import__: refused as non-ASCII
    ("\uff45\uff56\uff41\uff4c('z')", "must be ASCII: character '\uff45' (U+FF45"),
    ("\uff3f\uff3fimport\uff3f\uff3f('os')", "must be ASCII"),
    ("\U0001d41e\U0001d431\U0001d429(z)", "must be ASCII"),  # mathematical bold e, x, p
    ("z.real", "Attribute"),
    ("pi.real*z", "Attribute"),
    ("lambda z: z", "Lambda"),
    ("(lambda: z)()", "computed calls"),
    ("relu(z)(z)", "computed calls"),
    ("import os", "cannot parse"),
    ("z; open('SENTINEL', 'w')", "cannot parse"),
    ("f'{z}'", "JoinedStr"),
    ("[z for z in range(3)]", "ListComp"),
    ("{z: z for z in [1]}", "DictComp"),
    ("(y := z)", "NamedExpr"),
    ("z**1000", "exponent"),
    ("10**10**10", "exponent"),
    ("2**(2**(2**(2**5)))*z", "exponent"),
    ("z**-1e7", "out of range"),
    ("1e400*z", "out of range"),
    ("9" * 500, "too long"),
    ("-" * 100 + "z", "nested too deeply"),
    ("tanh(" * 50 + "z" + ")" * 50, "nested too deeply"),
    ("foo(z)", "unknown function 'foo'"),
    ("open('SENTINEL', 'w')", "unknown function 'open'"),
    ("eval('z')", "unknown function 'eval'"),
    ("exec('1')", "unknown function 'exec'"),
    ("getattr(z, 'x')", "unknown function 'getattr'"),
    ("globals()", "unknown function 'globals'"),
    ("tanh(z=1)", "keyword arguments"),
    ("tanh(*z)", "starred arguments"),
    ("b'z'", "only real numbers"),
    ("1j*z", "only real numbers"),
    ("True*z", "only real numbers"),
    ("'z'", "only real numbers"),
    ("None", "only real numbers"),
    ("...", "only real numbers"),
    ("x", "unknown name 'x'"),
    ("z if z > 0 else 0", "IfExp"),
    ("z > 0", "Compare"),
    ("z[0]", "Subscript"),
    ("{z}", "Set"),
    ("(z, z)", "Tuple"),
    ("{**z}", "Dict"),
    ("z @ z", "MatMult"),
    ("z // 2", "FloorDiv"),
    ("z % 2", "Mod"),
    ("~z", "Invert"),
    ("not z", "Not"),
    ("z and z", "BoolOp"),
    ("await z", "Await"),
    ("\x00", "cannot parse"),
    ("z**z", "exponents must be numeric"),
    ("hermite(z, z)", "must be a numeric constant"),
    ("hermite(1000, z)", "degree"),
    ("tanh(z, z)", "takes 1 argument"),
    ("", "empty"),
    ("5", "must depend on z"),
]


@pytest.mark.parametrize("text, fragment", HOSTILE)
def test_hostile_strings_are_refused_without_running_code(text, fragment, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)

    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec must never be reached by activation parsing")

    # sympify/parse_expr on strings end in eval/exec too, so this also proves they are not used.
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    with pytest.raises(ActivationError) as info:
        get_activation(text)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value).strip()  # one-line messages
    assert not (tmp_path / "SENTINEL").exists()


def test_parser_accepts_the_whole_registry_without_eval(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec used")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    for name, text in ACTIVATIONS.items():
        act = get_activation(name)
        assert act.expr.has(Z)
        assert act.expr == parse_activation(text)


def test_parser_keeps_decimals_exact_and_builds_the_documented_forms():
    assert parse_activation("0.1*z") == sp.Rational(1, 10) * Z
    assert parse_activation("relu(z)") == sp.Max(Z, 0)
    assert parse_activation("leaky_relu(z, 0.1)") == sp.Max(Z, 0) + sp.Min(Z, 0) / 10
    assert sp.expand(parse_activation("hermite(3, z)") - (Z**3 - 3 * Z) / sp.sqrt(6)) == 0


def test_non_string_spec_is_refused():
    with pytest.raises(ActivationError, match="must be a string"):
        get_activation(3.0)


def _away_from_kinks(act: Activation, x: np.ndarray, gap: float = 1e-3) -> np.ndarray:
    for kink in act.kinks:
        x = x[np.abs(x - kink) > gap]
    return x


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_numeric_form_matches_mpmath(name):
    act = get_activation(name)
    x = _away_from_kinks(act, np.linspace(-6.0, 6.0, 241))
    with mpmath.workdps(30):
        reference = np.array([float(act.mp(v)) for v in x])
    # float64 evaluation of at most ~10 operations; h4 at |z| = 6 has terms ~6^4/sqrt(24) ≈ 260,
    # so rounding is below ~260 * 1e-16 ≈ 3e-14 absolute.
    np.testing.assert_allclose(act(x), reference, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("name", list(ACTIVATIONS) + TYPED_EXPRESSIONS)
def test_derivative_matches_finite_differences_away_from_kinks(name):
    act = get_activation(name)
    x = _away_from_kinks(act, np.linspace(-5.0, 5.0, 101) + 0.0123, gap=1e-2)
    # High-precision central difference: step 1e-15 at 50 digits has truncation error ~1e-30 and
    # rounding ~1e-35, so it is the exact derivative to double precision.
    with mpmath.workdps(50):
        h = mpmath.mpf("1e-15")
        central = np.array([float((act.mp(mpmath.mpf(v) + h) - act.mp(mpmath.mpf(v) - h)) / (2 * h))
                            for v in x])
    np.testing.assert_allclose(act.derivative(x), central, rtol=1e-12, atol=1e-12)
    # Plain double-precision central difference, step 1e-5: truncation ~1e-10 |φ'''|, rounding
    # ~1e-16 |φ| / 1e-5 ~ 1e-11 |φ|; |φ|, |φ'''| <= ~1e3 on [-5, 5] for the polynomials.
    h = 1e-5
    np.testing.assert_allclose(act.derivative(x), (act(x + h) - act(x - h)) / (2 * h),
                               rtol=1e-6, atol=1e-6)


def test_derivative_convention_at_kinks():
    assert float(get_activation("relu").derivative(np.array([0.0]))[0]) == 0.5
    assert float(get_activation("abs").derivative(np.array([0.0]))[0]) == 0.0


@pytest.mark.parametrize("name, kinks", [("relu", (0.0,)), ("abs", (0.0,)), ("step", (0.0,)),
                                         ("tanh", ()), ("relu(z - 1) + relu(-z - 2)", (-2.0, 1.0))])
def test_kinks(name, kinks):
    assert get_activation(name).kinks == kinks


def test_overflow_inside_sigmoid_terms_gives_the_limit_not_nan():
    # silu'(z) = σ(z) + z σ(z)(1 − σ(z)) tends to 0 as z -> -inf and to 1 as z -> +inf; the
    # naive formula evaluates inf/inf for z < -709.
    act = get_activation("silu")
    x = np.array([-1e8, -1e3, -800.0, 800.0, 1e3, 1e8])
    np.testing.assert_array_equal(np.abs(act.derivative(x)), [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(act(x[:3]), [0, 0, 0])
    assert np.all(np.isfinite(get_activation("sigmoid").derivative(x)))


def test_non_real_values_raise_instead_of_returning_nan():
    # the parser refuses z**0.5 (see the domain tests); built directly, its evaluation raises
    with pytest.raises(FloatingPointError, match="not real"):
        Activation("sqrt", sp.sqrt(Z))(np.array([1.0, -1.0]))
    with pytest.raises(FloatingPointError, match="undefined at z = 0.0"):
        Activation("pole", 1 / Z)(np.array([1.0, 0.0]))


NO_ERF = [n for n in ACTIVATIONS if not get_activation(n).expr.has(sp.erf)]
#: The typed expressions array_api_strict can evaluate (it has no erf/erfc).
TYPED_NO_ERF = [n for n in TYPED_EXPRESSIONS if not get_activation(n).expr.has(sp.erf, sp.erfc)]


@pytest.mark.parametrize("name", NO_ERF)
def test_array_api_strict_evaluation(name):
    xps = pytest.importorskip("array_api_strict")
    act = get_activation(name)
    grid = np.linspace(-4.0, 4.0, 33)
    x = xps.asarray(grid, dtype=xps.float64)
    value, slope = act(x), act.derivative(x)
    assert type(value) is type(x) and type(slope) is type(x)
    # Same operations in the same order on both backends: results agree to rounding.
    np.testing.assert_allclose(np.from_dlpack(value), act(grid), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(np.from_dlpack(slope), act.derivative(grid), rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("name", [n for n in ACTIVATIONS if n not in NO_ERF])
def test_array_api_strict_without_erf_is_a_clear_error(name):
    xps = pytest.importorskip("array_api_strict")
    with pytest.raises(BackendError, match="erf"):
        get_activation(name)(xps.asarray([0.5], dtype=xps.float64))


def test_float32_stays_float32():
    act = get_activation("relu+tanh")
    assert act(np.linspace(-1, 1, 5, dtype=np.float32)).dtype == np.float32


# ---------------------------------------------------------------------------------------------
# Compiled array evaluation: accuracy against mpmath, shared φ/φ' work, backends, edge inputs
# ---------------------------------------------------------------------------------------------

_W = sp.Dummy("w", real=True)


def _error_scale(expr: sp.Expr) -> sp.Expr:
    """First-order forward-error scale M(z) of evaluating ``expr`` in floating point.

    Every rounding is relative to the quantity rounded, so a sum carries the sum of its terms'
    scales (cancellation: 1 - tanh(z)**2 has absolute, not relative, error), a product the
    product of its factors' scales, and f(u) its own rounding |f(u)| plus |f'(u)| times the error
    carried by u (e.g. exp(-z**2) inherits z**2's rounding, times z**2). Kink functions are
    exact. The computed value is then within a small multiple of eps * (|φ| + M) of φ.
    """
    if expr == Z or expr.is_number:
        return sp.Abs(expr)
    if expr.is_Add:
        return sp.Add(*[_error_scale(a) for a in expr.args])
    if expr.is_Mul:
        return sp.Mul(*[_error_scale(a) for a in expr.args])
    if expr.is_Pow:
        base, e = expr.args
        return sp.Abs(expr) + sp.Abs(e) * sp.Abs(base) ** (e - 1) * _error_scale(base)
    if isinstance(expr, (sp.Max, sp.Min)):
        return sp.Max(*[_error_scale(a) for a in expr.args])
    if isinstance(expr, sp.Abs):
        return _error_scale(expr.args[0])
    if isinstance(expr, (sp.Heaviside, sp.sign)):
        return sp.Integer(1)
    if isinstance(expr, sp.DiracDelta):
        return sp.Integer(0)
    if isinstance(expr, sp.Piecewise):
        return sp.Piecewise(*[(_error_scale(p), c) for p, c in expr.args])
    (u,) = expr.args
    slope = sp.diff(expr.func(_W), _W).subs(_W, u)
    return sp.Abs(expr) + sp.Abs(slope) * _error_scale(u)


#: User expressions beyond the registry: shifted kinks, constants, Hermite, compositions.
EXTRA_EXPRESSIONS = [
    "0.5*tanh(z) + z**2", "hermite(3, z)", "hermite(6, z)", "heaviside(z)", "abs(z)",
    "relu(z - 1) + relu(-z - 2)", "sigmoid(3*z - 1)", "max(z, 1) + min(z**2, 2)",
    "(1 + z**2)**0.5", "1/(1 + z**2)", "z**5 - 3*z", "softplus(2*z) - softplus(-z)",
    *TYPED_EXPRESSIONS,
]
#: Built directly (the parser has no conditionals): a Piecewise with an And condition, and
#: Heaviside with H(0) = 0 and H(0) = 1 (φ' then holds DiracDelta terms).
DIRECT_ACTIVATIONS = {
    "piecewise": sp.Piecewise((Z**2, Z > 1), (sp.tanh(Z), (Z < 1) & (Z > -1)), (sp.sin(Z), True)),
    "heaviside_h0": sp.Heaviside(Z, 0) + Z * sp.Heaviside(Z - 1, 1),
}
ALL_EXPRESSIONS = list(ACTIVATIONS) + EXTRA_EXPRESSIONS + list(DIRECT_ACTIVATIONS)


def _activation(name: str) -> Activation:
    if name in DIRECT_ACTIVATIONS:
        return Activation(name, DIRECT_ACTIVATIONS[name])
    return get_activation(name)


def _test_points(act: Activation, dtype) -> np.ndarray:
    kinks = np.array(act.kinks)
    grid = np.linspace(-8.0, 8.0, 97) + 0.013
    large = [20.0, 40.0, 100.0, 700.0, 705.0, 800.0, 1e3]  # exp overflows past 709 (float64)
    special = [0.0, 1.0, -1.0, *large, *(-v for v in large), *SWITCH_POINTS,
               *(-v for v in SWITCH_POINTS)]
    x = np.concatenate([grid, special, kinks, np.nextafter(kinks, np.inf),
                        np.nextafter(kinks, -np.inf)]).astype(dtype)
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ALL_EXPRESSIONS)
def test_compiled_evaluation_matches_mpmath_at_kinks_and_large_arguments(name, dtype):
    act = _activation(name)
    x = _test_points(act, dtype)
    value, slope = act.value_and_derivative(x)
    for got, expr, exact in ((value, act.expr, act.mp), (slope, act.derivative_expr,
                                                        act.mp_derivative)):
        assert got.dtype == dtype
        scale = Activation("M", _error_scale(expr))
        with mpmath.workdps(40):  # 40 digits: the reference is exact to double precision
            reference = np.array([float(exact(float(v))) for v in x])
            m = np.array([float(scale.mp(float(v))) for v in x])
        assert np.all(np.isfinite(reference)) and np.all(np.isfinite(got))
        # At most ~10 roundings and library calls (NumPy/SciPy elementwise functions are within
        # 1-4 ulp, float32 SIMD paths included), each bounded by eps times the error scale; the
        # largest ratio observed is 2, so 16 leaves room for other platforms' libm. For
        # float64 this is ~3.6e-15 relative where there is no cancellation, ~2e-6 for float32.
        # The tiny term covers results in the subnormal range (e.g. exp(-z**2) at z = 10).
        eps, tiny = np.finfo(dtype).eps, np.finfo(dtype).tiny
        bound = 16 * eps * (np.abs(reference) + m) + tiny
        err = np.abs(got.astype(np.float64) - reference)
        worst = int(np.argmax(err / bound))
        assert err[worst] <= bound[worst], (
            f"z={x[worst]!r}: got {got[worst]!r}, exact {reference[worst]!r}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ALL_EXPRESSIONS)
def test_value_and_derivative_is_bitwise_the_separate_calls(name, dtype):
    act = _activation(name)
    x = _test_points(act, dtype)
    value, slope = act.value_and_derivative(x)
    bits = np.uint64 if dtype == np.float64 else np.uint32
    # One CSE program serves all three methods, so even -0.0 versus 0.0 must agree.
    np.testing.assert_array_equal(value.view(bits), act(x).view(bits))
    np.testing.assert_array_equal(slope.view(bits), act.derivative(x).view(bits))


def _random_expression(rng: np.random.Generator, depth: int) -> str:
    """A random activation string: compositions, powers, quotients, repeated subterms."""
    unary = ["tanh", "sin", "cos", "atan", "sigmoid", "relu", "abs", "erf", "softplus",
             "heaviside", "sign"]
    if depth == 0 or rng.random() < 0.2:
        return "z" if rng.random() < 0.7 else str(int(rng.integers(1, 4)))
    kind = int(rng.integers(0, 4))
    a = _random_expression(rng, depth - 1)
    if kind == 0:
        return f"{unary[int(rng.integers(len(unary)))]}({a})"
    if kind == 1:
        return f"({a})**{int(rng.integers(2, 6))}"
    b = _random_expression(rng, depth - 1)
    if kind == 2:
        return f"({a}) {'+-*'[int(rng.integers(3))]} ({b})"
    return f"({a}) / (2 + tanh({b})**2)"


def test_random_expressions_compile_to_the_same_function():
    # Compositions the registry does not contain exercise CSE sharing, in-place reuse of
    # temporaries and the product/quotient ordering; seeded, so any failure reproduces.
    rng = np.random.default_rng(20250917)
    x = np.linspace(-3.0, 3.0, 31) + 0.01
    checked = 0
    while checked < 30:
        text = _random_expression(rng, 4)
        try:
            act = get_activation(text)
        except ActivationError:  # constant expressions are refused; draw again
            continue
        checked += 1
        value, slope = act.value_and_derivative(x)
        for got, expr, exact in ((value, act.expr, act.mp),
                                 (slope, act.derivative_expr, act.mp_derivative)):
            scale = Activation("M", _error_scale(expr))
            with mpmath.workdps(40):
                reference = np.array([float(exact(v)) for v in x])
                m = np.array([float(scale.mp(v)) for v in x])
            # Same error model as above; deeper trees have up to ~30 roundings, hence 64.
            np.testing.assert_array_less(np.abs(got - reference),
                                         64 * np.finfo(float).eps * (np.abs(reference) + m)
                                         + 1e-300, err_msg=text)
        np.testing.assert_array_equal(value, act(x), err_msg=text)
        np.testing.assert_array_equal(slope, act.derivative(x), err_msg=text)


def test_overflow_fallback_and_stable_forms_far_out():
    silu, softplus = get_activation("silu"), get_activation("softplus")
    x = np.array([-1e8, -800.0, -705.0, -700.0, 700.0, 800.0])
    with mpmath.workdps(30):
        want_slope = np.array([float(silu.mp_derivative(v)) for v in x])
    # silu'(-800) is inf/inf in double (recomputed in mpmath); at -705 the alternating
    # numerator/denominator order keeps exp(705) * 705 / (1 + exp(705))**2 finite. Relative
    # tolerance: a few roundings of exp and division (values down to 1e-300 stay normal).
    np.testing.assert_allclose(silu.value_and_derivative(x)[1], want_slope, rtol=1e-13, atol=0)
    np.testing.assert_allclose(silu.derivative(x), want_slope, rtol=1e-13, atol=0)
    # softplus is logaddexp(0, z): exact z for large z, exp(z) for very negative z.
    big = np.array([-800.0, -40.0, 40.0, 800.0, 1e5])
    with mpmath.workdps(400):  # log(1 + exp(-800)) needs ~350 digits to resolve the 1e-348
        want = np.array([float(softplus.mp(v)) for v in big])
    np.testing.assert_allclose(softplus(big), want, rtol=1e-15, atol=0)  # correctly rounded


def test_compilation_and_evaluation_never_evaluate_strings(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("eval/exec used while compiling or evaluating an activation")

    act = get_activation("relu(z) + 0.5*tanh(z)**2 - softplus(z)/3")  # fresh: not compiled yet
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    value, slope = act.value_and_derivative(np.linspace(-2.0, 2.0, 9))
    assert value.shape == slope.shape == (9,)


@pytest.mark.parametrize("name", NO_ERF + TYPED_NO_ERF)
@pytest.mark.parametrize("dtype_name", ["float64", "float32"])
def test_array_api_strict_value_and_derivative(name, dtype_name):
    xps = pytest.importorskip("array_api_strict")
    act = get_activation(name)
    grid = np.linspace(-4.0, 4.0, 33, dtype=dtype_name)
    x = xps.asarray(grid, dtype=getattr(xps, dtype_name))
    value, slope = act.value_and_derivative(x)
    assert type(value) is type(x) and type(slope) is type(x)
    assert value.dtype == slope.dtype == x.dtype
    # array_api_strict wraps NumPy: the same operations in the same order give the same bits.
    np.testing.assert_array_equal(np.from_dlpack(value), act(grid))
    np.testing.assert_array_equal(np.from_dlpack(slope), act.derivative(grid))


def test_array_api_strict_zero_d_and_erf_error():
    xps = pytest.importorskip("array_api_strict")
    value, slope = get_activation("relu+tanh").value_and_derivative(xps.asarray(0.0))
    assert value.shape == slope.shape == ()
    assert float(value) == 0.0 and float(slope) == 1.5  # tanh'(0) + relu'(0) = 1 + 1/2
    with pytest.raises(BackendError, match="erf"):
        get_activation("gelu").value_and_derivative(xps.asarray([0.5]))


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_dtype_and_shape_are_kept_including_zero_d_and_empty(name):
    act = get_activation(name)
    for dtype in (np.float32, np.float64):
        for x in (np.linspace(-2, 2, 6, dtype=dtype).reshape(2, 3), np.asarray(0.25, dtype),
                  np.zeros((0,), dtype), np.zeros((3, 0), dtype)):
            for out in (act(x), act.derivative(x), *act.value_and_derivative(x)):
                assert isinstance(out, np.ndarray)  # 0-d in, 0-d array out (not a scalar)
                assert out.dtype == dtype and out.shape == x.shape
        # A 0-d input gives the same number as a one-element array.
        one = np.asarray(0.25, dtype)
        assert act(one) == act(one[None])[0]
        assert act.derivative(one) == act.derivative(one[None])[0]


def test_integer_input_is_evaluated_in_float64_and_complex_is_refused():
    act = get_activation("relu+tanh")
    value, slope = act.value_and_derivative(np.arange(-1, 2))
    assert value.dtype == slope.dtype == np.float64
    np.testing.assert_array_equal(slope, act.derivative(np.array([-1.0, 0.0, 1.0])))
    assert slope[1] == 1.5  # the kink convention, not a truncated integer
    with pytest.raises(BackendError, match="real"):
        act(np.array([1j]))


@pytest.mark.parametrize("name", ["z", "exp(z)", "relu+tanh", "quadratic", "2*z + 1"])
def test_inputs_are_not_modified_and_outputs_are_fresh_arrays(name):
    act = get_activation(name)
    x = np.linspace(-2.0, 2.0, 7)
    before = x.copy()
    outs = [act(x), act.derivative(x), *act.value_and_derivative(x)]
    np.testing.assert_array_equal(x, before)  # temporaries are reused in place, never x
    for i, out in enumerate(outs):
        assert not np.shares_memory(out, x)
        for other in outs[i + 1:]:
            assert not np.shares_memory(out, other)  # exp(z): φ and φ' are separate arrays


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["relu+tanh", "gelu", "softplus", "silu", "abs", "step"])
def test_cupy_evaluation_matches_numpy(name):
    from tests.conftest import cupy_or_skip

    cp = cupy_or_skip()
    act = get_activation(name)
    z = np.concatenate([np.linspace(-30.0, 30.0, 2001), [0.0, -0.0, 1e-300, -1e-300]])
    f_np, d_np = act.value_and_derivative(z)
    f_cp, d_cp = act.value_and_derivative(cp.asarray(z))
    assert isinstance(f_cp, cp.ndarray) and isinstance(d_cp, cp.ndarray)
    # Same program, different transcendental implementations (CUDA's libdevice vs the host's
    # libm/SIMD): a few ulps of the value's scale.
    np.testing.assert_allclose(cp.asnumpy(f_cp), f_np, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(cp.asnumpy(d_cp), d_np, rtol=1e-13, atol=1e-14)
