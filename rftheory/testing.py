"""Assertions on the theory for your own test suite: pytest-friendly, seeded, cheap by default.

Each ``assert_*`` function computes one of the package's results for an activation and raises
:class:`TheoryAssertionError` (an :class:`AssertionError`, so pytest reports it as a failed test)
with a message that says what was expected, what was found, the tolerance and why it is what it
is. Bad arguments raise :class:`~rftheory.errors.RFTheoryError` instead (a mistake in the test,
not a failure of the theory). Every assertion is a deterministic function of its arguments (the
seeds are explicit) and costs well under a second at its defaults — reconstructions a second or
so per seed at small (d, n).

======================================  ===============================================================
:func:`assert_hermite_coefficients`     μ_k match expected values to a tolerance
:func:`assert_verdict`                  a theorem condition (Lipschitz, non-linear, parity, sign) holds
:func:`assert_kernel_concentrates`      ‖ΦΦᵀ/p − K‖_op decays as p^slope (−1/2)
:func:`assert_reconstruction_succeeds`  the training set is recovered at a given p/(dn)
:func:`assert_reconstruction_fails`     ... and is not: a second zero of the loss (or any failure)
======================================  ===============================================================

The default tolerances are in one table, :data:`TOLERANCES` (by precision: float64, float32,
mpmath, and the statistical ones), each with its reason; :func:`tolerance` reads it.

Examples
--------
In a test module of your own (``pytest`` collects it as usual)::

    from rftheory.testing import assert_verdict, assert_reconstruction_succeeds

    def test_my_activation_meets_theorem_1():
        assert_verdict("relu(z) + 0.3*sin(2*z)", "lipschitz")
        assert_verdict("relu(z) + 0.3*sin(2*z)", "nonlinearity")
        assert_reconstruction_succeeds("relu(z) + 0.3*sin(2*z)", d=4, n=4, p_over_dn=10)

>>> assert_hermite_coefficients("relu", [0.3989422804014327, 0.5, 0.28209479177387814, 0.0])
>>> assert_hermite_coefficients("relu", {1: 0.49})
Traceback (most recent call last):
...
rftheory.testing.TheoryAssertionError: Hermite coefficients of relu (fast, orders 0..1) differ from the expected values:
...
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Sequence

from .errors import InvalidTypeError, RFTheoryError
from .metrics import RHO_SUCCESS

__all__ = [
    "TheoryAssertionError",
    "Tolerance",
    "TOLERANCES",
    "tolerance",
    "dtype_name",
    "VERDICTS",
    "assert_hermite_coefficients",
    "assert_verdict",
    "assert_kernel_concentrates",
    "assert_reconstruction_succeeds",
    "assert_reconstruction_fails",
]


class TheoryAssertionError(AssertionError):
    """A theory result did not come out as asserted (pytest shows it as a test failure)."""


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """A default tolerance and the reason for its size.

    Parameters
    ----------
    value : float
        The tolerance.
    reason : str
        Why it has that size.
    """

    value: float
    reason: str


#: The default tolerances of every assertion, in one table: by the precision of the comparison
#: (``"float64"``, ``"float32"`` — expected values held in float32 —, ``"mpmath"``) and, for the
#: statistical ones that no precision changes, ``"statistical"``. Each entry states its reason.
TOLERANCES: dict[str, dict[str, Tolerance]] = {
    "float64": {
        "quadrature_atol": Tolerance(
            1e-13, "fast quadrature: its error estimates are <= ~7e-15 for mu_0..mu_60 of the "
                   "registry (tanh agrees with mpmath to 4e-16 up to k = 1000); 1e-13 leaves a "
                   "decade"),
        "quadrature_rtol": Tolerance(
            1e-12, "relative room for large |mu_k| (polynomials with big coefficients)"),
        "rounding_atol": Tolerance(
            1e-15, "exact and mpmath values rounded once to float64 (<= 1.1e-16 relative) before "
                   "a float comparison; 1e-15 absolute covers |mu_k| <= ~5"),
        "rounding_rtol": Tolerance(1e-15, "a few float64 ulps"),
    },
    "float32": {
        "quadrature_atol": Tolerance(
            1e-6, "expected values held in float32 carry 6e-8 relative rounding, and a float32 "
                  "computation of them a few dozen times that; the quadrature's own error is "
                  "far below"),
        "quadrature_rtol": Tolerance(1e-5, "about 80 float32 ulps"),
        "rounding_atol": Tolerance(1e-6, "as quadrature_atol: float32 rounding dominates"),
        "rounding_rtol": Tolerance(1e-5, "as quadrature_rtol"),
    },
    "mpmath": {
        "digits_lost": Tolerance(
            5, "an mpmath comparison allows 10^-(dps - 5): the quadrature loses a few digits to "
               "cancellation at high order"),
    },
    "statistical": {
        "kernel_slope": Tolerance(
            0.1, "as rftheory.concentration.SLOPE_TOLERANCE: per-draw slopes scatter by ~0.03 "
                 "and the pre-asymptotic drift at p ~ n is ~0.02, while a wrong rate (p^0, p^-1) "
                 "is off by 0.5"),
        "rho": Tolerance(
            RHO_SUCCESS, "rftheory.metrics.RHO_SUCCESS, the one success level: failed runs sit at "
                         "rho ~ 0.17-0.65, successful ones at 1e-5-1e-3 (measured), so success "
                         "does not hinge on this choice"),
    },
}


def dtype_name(dtype: Any) -> str:
    """The name of a precision group from a dtype given any way numpy users give one.

    Parameters
    ----------
    dtype : str, numpy.dtype or type
        ``"float32"``, ``np.float32``, ``np.dtype("float32")``, an array's ``.dtype``, or a group
        name that is not a dtype (``"mpmath"``, ``"statistical"``).

    Returns
    -------
    str
        ``"float32"``, ``"float64"``, ... (numpy's name of the dtype), or the string itself when
        it names no dtype.

    Raises
    ------
    rftheory.errors.InvalidTypeError
        For something that is neither a string nor a dtype.

    Examples
    --------
    >>> import numpy as np
    >>> dtype_name(np.float32), dtype_name(np.dtype("float64")), dtype_name("mpmath")
    ('float32', 'float64', 'mpmath')
    """
    if isinstance(dtype, str) and dtype in TOLERANCES:
        return dtype
    import numpy as np

    try:
        return np.dtype(dtype).name
    except TypeError:
        if isinstance(dtype, str):
            return dtype
        raise InvalidTypeError(f"dtype must be a dtype or a dtype's name, got {dtype!r}") from None


def tolerance(name: str, dtype: str = "float64") -> float:
    """A default tolerance from :data:`TOLERANCES` (``dtype``: its precision group).

    Parameters
    ----------
    name : str
        Name of the tolerance in its group (e.g. ``"quadrature_atol"``, ``"rho"``).
    dtype : {"float64", "float32", "mpmath", "statistical"} or numpy dtype, default "float64"
        Precision group of :data:`TOLERANCES`.

    Returns
    -------
    float
        The tolerance's value.

    Raises
    ------
    RFTheoryError
        When the group holds no tolerance of that name.

    Examples
    --------
    >>> tolerance("quadrature_atol"), tolerance("quadrature_atol", "float32")
    (1e-13, 1e-06)
    >>> tolerance("rho", "statistical")
    0.1
    """
    group = TOLERANCES.get(dtype_name(dtype))
    if group is None or name not in group:
        raise RFTheoryError(f"no tolerance {name!r} for {dtype!r}; the table has "
                            + "; ".join(f"{g}: {', '.join(t)}" for g, t in TOLERANCES.items()))
    return group[name].value


#: Verdict names accepted by :func:`assert_verdict` (aliases on the right).
VERDICTS = {"lipschitz": "lipschitz", "nonlinearity": "nonlinearity", "nonlinear": "nonlinearity",
            "non-linear": "nonlinearity", "parity": "parity", "pure_parity": "parity",
            "sign_identifiability": "sign_identifiability", "sign": "sign_identifiability"}


def _fail(message: str) -> None:
    __tracebackhide__ = True
    raise TheoryAssertionError(message)


def _check_tolerance(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0:
        raise RFTheoryError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _expected_map(expected: Any) -> dict[int, Any]:
    if isinstance(expected, Mapping):
        items = list(expected.items())
    elif isinstance(expected, (str, bytes)) or not hasattr(expected, "__iter__"):
        raise RFTheoryError("expected must be a sequence μ_0, μ_1, ... or a mapping {k: μ_k}")
    else:
        items = list(enumerate(expected))
    out = {}
    for k, value in items:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise RFTheoryError(f"orders must be non-negative integers, got {k!r}")
        if value is not None:
            out[k] = value
    if not out:
        raise RFTheoryError("expected holds no value to compare")
    return out


def _as_mpf(value: Any) -> Any:
    import mpmath
    import sympy as sp

    if isinstance(value, sp.Basic):
        return mpmath.mpf(str(sp.N(value, mpmath.mp.dps + 5)))
    if hasattr(value, "dtype") and hasattr(value, "item"):  # a numpy scalar
        value = value.item()
    try:
        return mpmath.mpf(value)
    except (TypeError, ValueError):
        raise RFTheoryError(f"expected value {value!r} is not a real number") from None


def assert_hermite_coefficients(activation: str, expected: Any, *, rtol: float | None = None,
                                atol: float | None = None, method: str = "fast",
                                dps: int = 30, dtype: str | None = None) -> None:
    """Assert that μ_k of ``activation`` match ``expected`` within ``atol + rtol·|expected|``.

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z``.
    expected : sequence or mapping
        μ_0, μ_1, ... (``None`` skips an order), or ``{k: μ_k}`` for some orders only. Numbers,
        sympy numbers (``1/sqrt(2*pi)``) or decimal strings (compared at ``dps`` digits with
        ``method="mpmath"``).
    rtol, atol : float, optional
        Defaults from :data:`TOLERANCES`: float64 ``fast`` 1e-12 / 1e-13, ``exact`` 1e-15 /
        1e-15 (float comparison); float32 1e-5 / 1e-6; ``mpmath`` 0 / 10^-(dps − 5), compared
        in mpmath.
    method : {"fast", "mpmath", "exact"}
        How the coefficients are computed (:func:`rftheory.hermite.hermite_coefficients`).
    dps : int
        Digits of the mpmath method.
    dtype : {"float64", "float32"}, numpy dtype or type, optional
        Precision of the expected values, which picks the default tolerances (default: float32
        when ``expected`` is a float32 array, else float64; ignored by ``method="mpmath"``).

    Raises
    ------
    TheoryAssertionError
        Listing every order that is off, with the computed value, the expected one, the
        difference, the allowed difference and the coefficient's own error estimate.

    Examples
    --------
    >>> import sympy as sp
    >>> assert_hermite_coefficients("relu", {0: 1 / sp.sqrt(2 * sp.pi), 3: 0}, method="exact")
    >>> assert_hermite_coefficients("tanh", {2: 0.0, 4: 0.0})          # tanh is odd
    """
    __tracebackhide__ = True
    import mpmath

    from .hermite import hermite_coefficients

    if dtype is None:
        dtype = "float32" if str(getattr(expected, "dtype", "")) == "float32" else "float64"
    dtype = dtype_name(dtype)
    if dtype not in ("float64", "float32"):
        raise RFTheoryError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
    want = _expected_map(expected)
    order = max(want)
    if method == "mpmath":
        defaults = (0.0, 10.0 ** -(dps - tolerance("digits_lost", "mpmath")))
    else:
        kind = "quadrature" if method == "fast" else "rounding"
        defaults = (tolerance(f"{kind}_rtol", dtype), tolerance(f"{kind}_atol", dtype))
    rtol = defaults[0] if rtol is None else _check_tolerance("rtol", rtol)
    atol = defaults[1] if atol is None else _check_tolerance("atol", atol)
    coeffs = hermite_coefficients(activation, order, method=method, dps=dps)
    rows = []
    with mpmath.workdps(max(dps, 20) + 10):
        for k, value in sorted(want.items()):
            got = coeffs.values[k]
            if got is None:
                rows.append((k, "unknown", value, "—", "—", "no closed form found"))
                continue
            if method == "mpmath":
                a, b = _as_mpf(got), _as_mpf(value)
                diff, allowed = abs(a - b), atol + rtol * abs(b)
                shown = mpmath.nstr(a, min(dps, 25))
            else:
                a, b = float(_as_mpf(got)), float(_as_mpf(value))
                diff, allowed = abs(a - b), atol + rtol * abs(b)
                shown = f"{a:.17g}"
            if not diff <= allowed:
                rows.append((k, shown, value, f"{float(diff):.2e}", f"{float(allowed):.1e}",
                             f"{coeffs.errors[k]:.1e}"))
    if rows:
        from .output import format_table

        name = getattr(coeffs.activation, "name", activation)
        table = format_table(["k", "computed", "expected", "|diff|", "allowed", "error estimate"],
                             [(k, c, str(e), d, al, er) for k, c, e, d, al, er in rows])
        _fail(f"Hermite coefficients of {name} ({method}, orders 0..{order}) differ from the "
              f"expected values:\n{table}\ntolerance |μ_k − expected| ≤ atol + rtol·|expected|, "
              f"atol = {atol:g}, rtol = {rtol:g}"
              + ("" if method == "mpmath" else f" ({dtype} expected values)"))


def assert_verdict(activation: str, name: str, holds: bool | None = True, *, order: int = 20,
                   method: str = "fast", time_budget: float = 10.0) -> Any:
    """Assert that a verdict of :func:`rftheory.verdicts.activation_report` comes out ``holds``.

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z``.
    name : str
        ``"lipschitz"``, ``"nonlinearity"`` (``"nonlinear"``), ``"parity"`` (holds when φ is
        even or odd: the signs of the samples are then not recoverable) or
        ``"sign_identifiability"`` (``"sign"``: the paper's criterion, some odd μ_k ≠ 0, k ≥ 3).
    holds : bool or None
        The expected outcome (``None``: undetermined).
    order, method, time_budget
        As in :func:`~rftheory.verdicts.activation_report`.

    Returns
    -------
    rftheory.verdicts.Verdict
        The verdict (for further checks on its numbers).

    Examples
    --------
    >>> assert_verdict("relu+tanh", "sign").basis
    'numeric'
    >>> assert_verdict("step", "lipschitz", holds=False).holds
    False
    """
    __tracebackhide__ = True
    from .verdicts import activation_report

    if not isinstance(name, str) or name.lower() not in VERDICTS:
        raise RFTheoryError(f"unknown verdict {name!r}; choose from {', '.join(sorted(set(VERDICTS.values())))}")
    if holds not in (True, False, None):
        raise RFTheoryError(f"holds must be True, False or None, got {holds!r}")
    key = VERDICTS[name.lower()]
    report = activation_report(activation, order=order, method=method, time_budget=time_budget)
    verdict = report.verdicts[key]
    if verdict.holds is not holds:
        got = {True: "holds", False: "does not hold", None: "is undetermined"}[verdict.holds]
        want = {True: "to hold", False: "not to hold", None: "to be undetermined"}[holds]
        numbers = ", ".join(f"{k} = {v}" for k, v in verdict.numbers.items()
                            if not isinstance(v, (dict, list)) or len(str(v)) < 80)
        _fail(f"verdict {key!r} of {report.activation} (φ = {report.expression}) {got}, "
              f"expected it {want}\n  [{verdict.basis}] {verdict.summary}\n  numbers: {numbers}")
    return verdict


def assert_kernel_concentrates(activation: str, *, slope: float = -0.5,
                               tol: float | None = None, d: int = 10, n: int = 20,
                               p: Sequence[int] = (128, 256, 512, 1024, 2048), reps: int = 4,
                               seed: int = 0) -> dict:
    """Assert that ‖ΦΦᵀ/p − K‖_op decays as p^slope (log–log fit within ``tol``).

    Runs :func:`rftheory.concentration.measure_concentration` (n points on the √d-sphere, ``reps``
    independent draws of V per p, seeded) and fits the averaged error.

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z``.
    slope : float
        Expected exponent (−1/2: the matrix CLT).
    tol : float, optional
        Allowed |fitted − slope| (default :data:`TOLERANCES` ``["statistical"]["kernel_slope"]``, 0.1).
    d, n, p, reps, seed
        The measurement (defaults: ~0.5 s).

    Returns
    -------
    dict
        The measurement (λ_min(K), its Hermite bounds, the errors per p, the slope).

    Examples
    --------
    >>> round(assert_kernel_concentrates("erf")["slope"], 1)
    -0.5
    """
    __tracebackhide__ = True
    from .concentration import measure_concentration

    if isinstance(slope, bool) or not isinstance(slope, (int, float)) or not math.isfinite(slope):
        raise RFTheoryError(f"slope must be a finite number, got {slope!r}")
    tol = tolerance("kernel_slope", "statistical") if tol is None else _check_tolerance("tol", tol)
    result = measure_concentration(activation, d, n, list(p), seed=seed, reps=reps)
    fitted = result["slope"]
    if fitted is None or not abs(fitted - slope) <= tol:
        se = result["slope_standard_error"]
        errors = ", ".join(f"p = {pp}: {e:.3e}" for pp, e in zip(result["p"], result["op_error_mean"]))
        _fail(f"‖ΦΦᵀ/p − K‖_op of {result['activation']} does not decay as p^{slope:g}: fitted "
              f"slope {fitted if fitted is None else f'{fitted:.4f}'}"
              + ("" if se is None else f" ± {se:.3f} (s.e. over {reps} draws of V)")
              + f", allowed |slope − {slope:g}| ≤ {tol:g}\n  n = {n}, d = {d}, seed = {seed}; "
              f"errors: {errors}")
    return result


def _seeds(seeds: Any) -> list[int]:
    if isinstance(seeds, bool):
        raise RFTheoryError(f"seeds must be a count or a sequence of seeds, got {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 1:
            raise RFTheoryError(f"seeds must be >= 1, got {seeds}")
        return list(range(seeds))
    try:
        out = [int(s) for s in seeds]
    except (TypeError, ValueError):
        raise RFTheoryError(f"seeds must be a count or a sequence of seeds, got {seeds!r}") from None
    if not out or any(s < 0 for s in out) or len(set(out)) != len(out):
        raise RFTheoryError(f"seeds must be distinct non-negative integers, got {seeds!r}")
    return out


def _reconstructions(activation: str, d: int, n: int, p_over_dn: float, seeds: Any,
                     max_steps: int | None, variant: str, rho: float | None) -> tuple:
    from .metrics import VARIANTS
    from .cells import reconstruction_cell
    from .pipeline import feature_count

    for name, value, low in (("d", d, 1), ("n", n, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise RFTheoryError(f"{name} must be an integer >= {low}, got {value!r}")
    if variant not in VARIANTS:
        raise RFTheoryError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    rho = tolerance("rho", "statistical") if rho is None else _check_tolerance("rho", rho)
    p = feature_count(p_mult=p_over_dn, d=d, n=n)
    if p < n:
        raise RFTheoryError(f"p = round({p_over_dn:g}·dn) = {p} is below n = {n}: there is nothing "
                            "to reconstruct with fewer features than candidates")
    cells = [reconstruction_cell(activation=activation, d=d, n=n, p=p, seed=s,
                                 max_steps=max_steps) for s in _seeds(seeds)]
    success = [c[f"rho_{variant}"] < rho for c in cells]
    return p, rho, cells, success


def _runs_table(cells: Sequence[dict], variant: str, rho: float) -> str:
    from .metrics import run_kind
    from .output import format_table

    return format_table(
        ["seed", f"ρ_{variant}", "ρ_abs", "ρ_sign-inv", "loss", "steps", "stop", f"ρ < {rho:g}",
         "kind"],
        [(c["seed"], f"{c[f'rho_{variant}']:.2e}", f"{c['rho_abs']:.2e}",
          f"{c['rho_sign_invariant']:.2e}", f"{c['final_loss']:.1e}", c["steps"],
          c["stop_reason"], "yes" if c[f"rho_{variant}"] < rho else "no",
          run_kind(c, variant, rho_success=rho)) for c in cells])


def assert_reconstruction_succeeds(activation: str, *, d: int, n: int, p_over_dn: float,
                                   seeds: Any = (0, 1, 2), rho: float | None = None,
                                   variant: str = "abs", min_successes: int | None = None,
                                   max_steps: int | None = None) -> list[dict]:
    """Assert that the training set is recovered from (θ*, V) at p = round(p_over_dn·dn).

    Each seed is one :func:`rftheory.cells.reconstruction_cell` (data, V, labels and the
    optimiser's start from the seed; the optimiser's default method); it succeeds when its ρ
    (``variant``: ``"abs"`` the paper's official one, ``"signed"``, ``"sign_invariant"``) is
    below ``rho``.

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z``.
    d, n : int
        Dimension of the samples and their number.
    p_over_dn : float
        p/(dn); the law predicts success from about 2 (measured) and well above.
    seeds : int or sequence of int
        A count (seeds 0..k−1) or the seeds themselves (default 0, 1, 2).
    rho : float, optional
        Success threshold (default :data:`TOLERANCES` ``["statistical"]["rho"]``, 0.1).
    variant : {"abs", "signed", "sign_invariant"}, default "abs"
        Which ρ decides success.
    min_successes : int, optional
        Successes required (default: every seed).
    max_steps : int, optional
        Optimiser budget (default: the optimiser's).

    Returns
    -------
    list of dict
        The cells (ρ in every variant, loss, steps, stop reason per seed).

    Examples
    --------
    >>> cells = assert_reconstruction_succeeds("relu+tanh", d=3, n=3, p_over_dn=10, seeds=2)
    >>> [c["rho_abs"] < 1e-3 for c in cells]
    [True, True]
    """
    __tracebackhide__ = True
    p, rho, cells, success = _reconstructions(activation, d, n, p_over_dn, seeds, max_steps,
                                              variant, rho)
    need = len(cells) if min_successes is None else int(min_successes)
    if not 0 <= need <= len(cells):
        raise RFTheoryError(f"min_successes must be between 0 and {len(cells)}, got {min_successes}")
    if sum(success) < need:
        _fail(f"reconstruction of {activation} at p/(dn) = {p_over_dn:g} (d = {d}, n = {n}, "
              f"p = {p}) succeeded for {sum(success)} of {len(cells)} seeds, expected at least "
              f"{need} (success: ρ_{variant} < {rho:g}):\n{_runs_table(cells, variant, rho)}")
    return cells


#: Values of ``kind`` in :func:`assert_reconstruction_fails`.
FAIL_KINDS = ("spurious", "unfinished", "any")


def assert_reconstruction_fails(activation: str, *, d: int, n: int, p_over_dn: float,
                                seeds: Any = (0, 1, 2), rho: float | None = None,
                                variant: str = "abs", max_successes: int = 0,
                                kind: str = "spurious",
                                max_steps: int | None = None) -> list[dict]:
    """Assert that the training set is *not* recovered at p = round(p_over_dn·dn), and how.

    A failure is classified (:func:`rftheory.metrics.run_kind`): a **spurious interpolant**
    (the loss reached the optimiser's tolerance with ρ ≥ ``rho``: a second zero of the loss)
    or an **unfinished descent** (the loss is still above the tolerance when the run stopped:
    a failure of the optimiser, which says nothing about the zeros). With the default
    ``kind="spurious"`` the assertion passes only when every failed run found a second zero, so
    an attack that does nothing (or stops early) cannot pass it. Below the count (p < dn) the
    projection loss has zero-loss solutions far from the training set, and the optimiser finds
    them. Arguments as in :func:`assert_reconstruction_succeeds`; at most ``max_successes``
    seeds may succeed.

    Parameters
    ----------
    activation : str
        Registry name or expression in ``z``.
    d, n : int
        Dimension of the samples and their number.
    p_over_dn : float
        p/(dn), below 1 for a failure the count predicts.
    seeds : int or sequence of int
        A count (seeds 0..k−1) or the seeds themselves (default 0, 1, 2).
    rho : float, optional
        Success threshold (default :data:`TOLERANCES` ``["statistical"]["rho"]``, 0.1).
    variant : {"abs", "signed", "sign_invariant"}, default "abs"
        Which ρ decides success.
    max_successes : int, default 0
        Successes allowed.
    kind : {"spurious", "unfinished", "any"}, default "spurious"
        What every failed run must be: a second zero of the loss, an unfinished descent, or
        either.
    max_steps : int, optional
        Optimiser budget (default: the optimiser's).

    Returns
    -------
    list of dict
        The cells (ρ in every variant, loss, steps, stop reason per seed).

    Raises
    ------
    TheoryAssertionError
        When more than ``max_successes`` seeds succeed, or a failed run is not of ``kind``,
        with a table of the runs (their kinds included).

    Examples
    --------
    >>> cells = assert_reconstruction_fails("relu+tanh", d=3, n=3, p_over_dn=0.5, seeds=2)
    >>> [(c["rho_abs"] > 0.1, c["final_loss"] <= 1e-10) for c in cells]
    [(True, True), (True, True)]
    """
    __tracebackhide__ = True
    from .metrics import run_kind

    if kind not in FAIL_KINDS:
        raise RFTheoryError(f"kind must be one of {', '.join(FAIL_KINDS)}, got {kind!r}")
    if isinstance(max_successes, bool) or not isinstance(max_successes, int) or max_successes < 0:
        raise RFTheoryError(f"max_successes must be an integer >= 0, got {max_successes!r}")
    p, rho, cells, success = _reconstructions(activation, d, n, p_over_dn, seeds, max_steps,
                                              variant, rho)
    where = f"reconstruction of {activation} at p/(dn) = {p_over_dn:g} (d = {d}, n = {n}, p = {p})"
    if sum(success) > max_successes:
        _fail(f"{where} succeeded for {sum(success)} of {len(cells)} seeds, expected at most "
              f"{max_successes} (success: ρ_{variant} < {rho:g}):\n{_runs_table(cells, variant, rho)}")
    kinds = [run_kind(c, variant, rho_success=rho) for c in cells]
    wrong = [k for k in kinds if k != "success" and kind != "any" and k != kind]
    if wrong:
        what = ("a second zero of the loss (loss at the optimiser's tolerance, ρ large)"
                if kind == "spurious" else "an unfinished descent (loss above the tolerance)")
        _fail(f"{where}: {len(wrong)} of {len(cells)} failed runs are not {what}; a "
              f"{'failure of the optimiser is no evidence of a spurious zero' if kind == 'spurious' else 'run that reached a zero is not unfinished'} "
              f"(kind={kind!r}; pass kind='any' to accept either):\n{_runs_table(cells, variant, rho)}")
    return cells
