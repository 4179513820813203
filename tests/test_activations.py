"""Activations: safe parsing (hostile strings never run), numeric forms, derivatives, backends."""

from __future__ import annotations

import builtins

import mpmath
import numpy as np
import pytest
import sympy as sp

from rftheory.activations import ACTIVATIONS, Activation, Z, get_activation, parse_activation
from rftheory.errors import ActivationError, BackendError

# (hostile string, fragment the error message must contain: it names what was refused)
HOSTILE = [
    ("__import__('os').system('touch SENTINEL')", "dunder"),
    ("().__class__.__bases__[0].__subclasses__()", "dunder"),
    ("__builtins__", "dunder"),
    ("z.__class__", "dunder"),
    ("\uff45\uff56\uff41\uff4c('z')", "unknown function 'eval'"),  # fullwidth letters, NFKC -> eval
    ("\uff3f\uff3fimport\uff3f\uff3f('os')", "cannot parse"),  # fullwidth low lines
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


@pytest.mark.parametrize("name", list(ACTIVATIONS))
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
    with pytest.raises(FloatingPointError, match="not real"):
        get_activation("z**0.5")(np.array([1.0, -1.0]))


NO_ERF = [n for n in ACTIVATIONS if not get_activation(n).expr.has(sp.erf)]


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
