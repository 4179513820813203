"""The random-features kernel on the sphere, from Hermite coefficients, with rigorous error bounds.

For ``v ~ N(0, I_d/d)`` and ``x, y`` on the sphere of radius ``sqrt(d)``, the pre-activations
``vᵀx, vᵀy`` are standard normal with correlation ``t = <x, y>/d`` and (Mehler's formula)

    K(t) = E_v[φ(vᵀx) φ(vᵀy)] = Σ_k μ_k² t^k,      μ_k = E[φ(g) He_k(g)] / sqrt(k!).

:func:`kernel_series` builds the truncated series ``K_K(t) = Σ_{k<=K} μ_k² t^k`` from
:func:`rftheory.hermite.hermite_coefficients` together with the data for an error bound;
:func:`rf_kernel_series` evaluates it at given ``t`` and :func:`kernel_matrix` at ``t = XYᵀ/d``
for data rows ``X, Y`` (Horner's rule, in double on any array-API namespace, or in mpmath at a
chosen precision).

Independent closed forms (:func:`closed_form_kernel`, :func:`closed_form_kernel_matrix`) cover
ReLU and leaky ReLU (arc-cosine kernel of degree 1), the step (degree 0), ``|z|``, ``sign``,
``erf(a z)`` (arcsine kernel), ``sin(a z)``, ``cos(a z)``, ``exp(a z)``, constant multiples of
these, and every polynomial (Isserlis' theorem, exact in sympy). They hold for points of *any*
norm, which the series does not.

:func:`hermite_lower_bound` bounds ``λ_min`` of the kernel matrix from below by
``Σ_{k>=k₀} μ_k² λ_min((XXᵀ/d)^{∘k})`` (Schur product theorem), with certified eigenvalue bounds
of the Hadamard powers from :func:`hadamard_power_bounds`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import mpmath
import numpy as np
import sympy as sp

from .activations import Activation, Z, get_activation
from .errors import BackendError, InvalidValueError, RFTheoryError, ShapeError
from .hermite import coefficient_to_float, hermite_coefficients

__all__ = [
    "DEFAULT_ORDER",
    "DEFAULT_DPS",
    "T_SLACK",
    "OffSphereError",
    "NoClosedFormError",
    "KernelSeries",
    "KernelValue",
    "KernelMatrix",
    "kernel_series",
    "rf_kernel_series",
    "kernel_matrix",
    "has_closed_form",
    "closed_form_kernel",
    "closed_form_kernel_matrix",
    "HadamardPowerBounds",
    "hadamard_power_bounds",
    "HermiteLowerBound",
    "hermite_lower_bound",
]

#: Default truncation order K of the series.
DEFAULT_ORDER = 64
#: Default decimal precision of the mpmath paths.
DEFAULT_DPS = 30
#: How far a user-supplied ``|t|`` may exceed 1 (rounding in ``<x, y>/d``); such values are
#: clipped to ±1, larger ones are refused.
T_SLACK = 1e-12
_METHODS = ("fast", "mpmath", "exact")


class OffSphereError(InvalidValueError):
    """Points are not on the sphere of radius sqrt(d) (or ``|t| > 1``) where the series needs it."""


class NoClosedFormError(InvalidValueError):
    """The activation has no closed-form kernel in this module."""


# ---------------------------------------------------------------------------------------------
# The truncated series and its error bound
# ---------------------------------------------------------------------------------------------

def _horner(coefficients: tuple, t: Any) -> Any:
    """Σ_k c_k t^k by Horner's rule; ``t`` a scalar (float/mpf) or an array of any namespace."""
    if isinstance(t, (int, float, mpmath.mpf)):
        acc = coefficients[-1]
        for c in coefficients[-2::-1]:
            acc = acc * t + c
        return acc
    from array_api_compat import array_namespace

    xp = array_namespace(t)
    acc = xp.full_like(t, coefficients[-1])
    # In place: two passes over an n×m array per order, no temporaries.
    for c in coefficients[-2::-1]:
        acc *= t
        acc += c
    return acc


@dataclass(frozen=True)
class KernelSeries:
    """The truncated kernel series ``K_K(t) = Σ_{k<=K} c_k t^k``, ``c_k ≈ μ_k²``, with its bound.

    Build it with :func:`kernel_series` (or :meth:`from_hermite`); evaluate it with
    :meth:`evaluate`, :func:`rf_kernel_series` or :func:`kernel_matrix`.

    Attributes
    ----------
    activation : str
        Name of the activation.
    order : int
        Truncation order K.
    method : str
        How the Hermite coefficients were computed (``"fast"``, ``"mpmath"``, ``"exact"``).
    dps : int or None
        Decimal digits of the mpmath evaluation; ``None`` for double precision.
    coefficients : tuple
        ``c_0 .. c_K`` (floats in double, ``mpmath.mpf`` otherwise).
    coefficient_errors : tuple
        ``ε_k``, upper bounds on ``|c_k - μ_k²|``.
    second_moment : float or mpmath.mpf
        ``E[φ(g)²] = K(1)``.
    tail_bound : float or mpmath.mpf
        Upper bound on the Parseval tail ``Σ_{k>K} μ_k²``.

    Notes
    -----
    For ``|t| <= 1`` the evaluated series obeys ``|K(t) - fl(K_K(t))| <= B(|t|)`` with

        B(s) = Σ_k ε_k s^k + T s^{K+1} + γ_{2K+4} Σ_k c_k s^k,

    where ``T = tail_bound`` bounds ``Σ_{k>K} μ_k²`` (so ``Σ_{k>K} μ_k² |t|^k <= T |t|^{K+1}``),
    ``ε_k = e_k (2|μ̂_k| + e_k)`` from the Hermite module's error estimates ``e_k``, and
    ``γ_m = m u / (1 - m u)`` is the classical Horner rounding bound for unit roundoff ``u``
    (2K roundings, plus up to 4 for storing and squaring each coefficient).
    ``T = max(m₂ - Σ c_k, 0) + Σ ε_k + e(m₂) + 4 u m₂``: the tail is recomputed here from the
    second moment ``m₂`` (error estimate ``e(m₂)``) with an exactly rounded sum. ``B`` is
    increasing in ``s``, so its value at the largest ``|t|`` bounds a whole matrix.

    The bound is rigorous given the Hermite module's error estimates ``e_k`` and ``e(m₂)``,
    which are taken as stated (they are quadrature estimates, not interval enclosures, for the
    ``"fast"`` and ``"mpmath"`` methods; zero for exact values). At ``|t| = 1`` the bound is
    essentially attained (the whole tail contributes), so it is sharp there; for ReLU, whose
    ``μ_k²`` decay only like ``k^{-5/2}``, the tail is 2.3e-4, 8.2e-5, 1.5e-5 at K = 32, 64,
    200, while off the diagonal (``|t| <~ 0.5``) the same K give ~1e-15. The bound does not
    include the propagation of rounding errors already present in ``t``.
    """

    activation: str
    order: int
    method: str
    dps: int | None
    coefficients: tuple
    coefficient_errors: tuple
    second_moment: Any
    tail_bound: Any

    @classmethod
    def from_hermite(cls, hermite: Any, *, activation: str, method: str = "given",
                     dps: int | None = None) -> "KernelSeries":
        """Build the series from a :class:`rftheory.hermite.HermiteCoefficients`-like object.

        Parameters
        ----------
        hermite : HermiteCoefficients
            Anything with ``values`` (μ_0..μ_K), ``errors`` (absolute error estimates),
            ``second_moment`` (E[φ(g)²]) and ``second_moment_error``; values may be floats,
            mpmath numbers or sympy numbers; an ``inf`` error makes the bound ``inf``.
        activation : str
            Name recorded in the result.
        method : str
            Provenance label recorded in the result.
        dps : int or None
            ``None``: evaluate in double precision. An integer: evaluate in mpmath with that many
            decimal digits (coefficients are converted at that precision).

        Raises
        ------
        RFTheoryError
            If a coefficient is missing (``None``, e.g. an exact form that ran out of time) or
            not finite, or ``dps`` is not a positive integer.
        """
        values = tuple(hermite.values)
        errors = tuple(hermite.errors)
        if len(values) == 0 or len(errors) != len(values):
            raise RFTheoryError(
                f"need as many error estimates as coefficients, got {len(values)} values "
                f"and {len(errors)} errors"
            )
        missing = [k for k, v in enumerate(values) if v is None]
        if missing or hermite.second_moment is None:
            which = f"mu_{missing[0]}" if missing else "the second moment"
            raise RFTheoryError(
                f"{which} of {activation} is not available (exact form not found in time); "
                "use method='mpmath'"
            )
        order = len(values) - 1
        # Error estimates may be inf ("unknown"): the bound then is inf, honestly.
        e = [float(x) for x in errors]
        m2_error = float(hermite.second_moment_error)
        if any(math.isnan(x) or x < 0 for x in e + [m2_error]):
            raise RFTheoryError(f"error estimates of {activation} must be >= 0 (or inf)")
        if dps is None:
            mu = [float(coefficient_to_float(v)) for v in values]
            m2 = float(coefficient_to_float(hermite.second_moment))
            if not all(math.isfinite(x) for x in mu + [m2]):
                raise RFTheoryError(f"Hermite coefficients of {activation} are not finite")
            u = 2.0**-53
            coefficients = tuple(m * m for m in mu)
            eps = tuple(ek * (2 * abs(mk) + ek) for mk, ek in zip(mu, e))
            tail = (max(m2 - math.fsum(coefficients), 0.0) + math.fsum(eps) + m2_error
                    + 4 * u * m2)
            # Round the bound's own pieces up by a relative 1e-12 (far above their rounding error).
            eps = tuple(x * (1 + 1e-12) for x in eps)
            return cls(activation, order, method, None, coefficients, eps, m2,
                       tail * (1 + 1e-12))
        dps = _check_dps(dps)
        with mpmath.workdps(dps):
            u = mpmath.ldexp(1, -mpmath.mp.prec)
            mu = [_to_mpf(v, dps) for v in values]
            e = [mpmath.mpf(x) for x in e]
            m2 = _to_mpf(hermite.second_moment, dps)
            if not all(mpmath.isfinite(x) for x in mu + [m2]):
                raise RFTheoryError(f"Hermite coefficients of {activation} are not finite")
            coefficients = tuple(m * m for m in mu)
            eps = tuple(ek * (2 * abs(mk) + ek) for mk, ek in zip(mu, e))
            tail = (max(m2 - mpmath.fsum(coefficients), 0) + mpmath.fsum(eps)
                    + mpmath.mpf(m2_error) + 4 * u * m2)
            grow = 1 + mpmath.mpf(10) ** (-(dps // 2))
            return cls(activation, order, method, dps, coefficients,
                       tuple(x * grow for x in eps), m2, tail * grow)

    @property
    def unit_roundoff(self) -> Any:
        """Unit roundoff of this series' evaluation (2^-53 in double, 2^-prec in mpmath)."""
        if self.dps is None:
            return 2.0**-53
        with mpmath.workdps(self.dps):
            return mpmath.ldexp(1, -mpmath.mp.prec)

    def evaluate(self, t: Any) -> Any:
        """``K_K(t)`` by Horner's rule (no validation of ``t``; see :func:`rf_kernel_series`).

        ``t``: a float or an array of any array-API namespace (double), or an mpf or a numpy
        object array of mpf (mpmath; evaluated at ``self.dps`` digits).
        """
        if self.dps is None:
            return _horner(self.coefficients, t)
        with mpmath.workdps(self.dps):
            return _horner(self.coefficients, t)

    def error_bound(self, abs_t: Any, *, unit_roundoff: float | None = None) -> Any:
        """The bound ``B(|t|)`` of the class Notes at ``abs_t = |t| <= 1`` (scalar or array).

        ``unit_roundoff`` is that of the arithmetic that evaluated the series (default: the
        series' own; pass ``2**-24`` for float32 data).
        """
        u = self.unit_roundoff if unit_roundoff is None else unit_roundoff
        m = 2 * self.order + 4
        gamma = m * u / (1 - m * u)

        def bound(s: Any) -> Any:
            power = s ** (self.order + 1)
            rounding = _horner(self.coefficients, s)
            total = (_horner(self.coefficient_errors, s) + self.tail_bound * power
                     + gamma * rounding)
            return total * (1 + gamma)  # covers the rounding of this very evaluation

        if self.dps is None:
            return bound(abs_t)
        with mpmath.workdps(self.dps):
            return bound(abs_t)


def _to_mpf(value: Any, dps: int) -> Any:
    if isinstance(value, sp.Basic):
        return mpmath.mpf(sp.N(value, dps + 10))
    return mpmath.mpf(value)


def _check_dps(dps: Any) -> int:
    if isinstance(dps, bool) or not isinstance(dps, int) or not 1 <= dps <= 10_000:
        raise RFTheoryError(f"dps must be an integer in [1, 10000], got {dps!r}")
    return dps


def kernel_series(activation: "str | Activation", order: int = DEFAULT_ORDER, *,
                  method: str = "fast", dps: int = DEFAULT_DPS,
                  time_budget: float = 10.0) -> KernelSeries:
    """The kernel series of ``activation`` truncated at ``order``, with its error data.

    Parameters
    ----------
    activation : str or Activation
        Registry name or expression in ``z`` (see :func:`rftheory.activations.get_activation`).
    order : int
        Truncation order K (the series uses μ_0..μ_K).
    method : {"fast", "mpmath", "exact"}
        How :func:`rftheory.hermite.hermite_coefficients` computes the coefficients. ``"fast"``
        evaluates in double precision; ``"mpmath"`` and ``"exact"`` in mpmath at ``dps`` digits.
    dps : int
        Decimal digits for ``"mpmath"`` / ``"exact"`` (ignored by ``"fast"``).
    time_budget : float
        Seconds allowed to the exact symbolic integration (``"exact"`` only).

    Returns
    -------
    KernelSeries

    Notes
    -----
    Accuracy: see :class:`KernelSeries` for the bound ``B(|t|)``. It is only as rigorous as the
    coefficient error estimates of the Hermite module.
    """
    if method not in _METHODS:
        raise RFTheoryError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
    if isinstance(order, bool) or not isinstance(order, int) or order < 0:
        raise RFTheoryError(f"order must be a non-negative integer, got {order!r}")
    act = get_activation(activation)
    hermite = hermite_coefficients(act, order, method=method, dps=dps, time_budget=time_budget)
    return KernelSeries.from_hermite(hermite, activation=act.name, method=method,
                                     dps=None if method == "fast" else _check_dps(dps))


def _resolve_series(activation: Any, order: int | None, method: str | None,
                    dps: int | None) -> KernelSeries:
    if isinstance(activation, KernelSeries):
        if order is not None or method is not None or dps is not None:
            raise RFTheoryError("order, method and dps belong to kernel_series(); do not pass "
                                "them with a prebuilt KernelSeries")
        return activation
    method = "fast" if method is None else method
    if method == "fast" and dps is not None:
        raise RFTheoryError("dps applies to method='mpmath' or 'exact', not 'fast'")
    return kernel_series(activation, DEFAULT_ORDER if order is None else order, method=method,
                         dps=DEFAULT_DPS if dps is None else dps)


# ---------------------------------------------------------------------------------------------
# Input handling shared by the series and the closed forms
# ---------------------------------------------------------------------------------------------

def _mp_array(values: Any, what: str) -> np.ndarray:
    """A numpy object array of mpf (current precision) from numbers or a numeric numpy array."""
    if hasattr(values, "__array_namespace__") and not isinstance(values, np.ndarray):
        raise BackendError(f"the mpmath path needs numpy arrays, got {type(values).__name__} "
                           f"for {what}")
    arr = np.asarray(values, dtype=object if isinstance(values, mpmath.mpf) else None)
    if arr.dtype.kind not in "fiuO":
        raise ShapeError(f"{what} must be real numbers, got dtype {arr.dtype}")
    if arr.dtype.kind == "O":
        for v in arr.flat:
            if isinstance(v, bool) or not isinstance(v, (int, float, mpmath.mpf, np.floating,
                                                         np.integer)):
                raise ShapeError(f"{what} must hold real numbers, found {type(v).__name__}")
    out = np.frompyfunc(mpmath.mpf, 1, 1)(arr)
    out = np.asarray(out, dtype=object)
    if not all(mpmath.isfinite(v) for v in out.flat):
        raise ShapeError(f"{what} has non-finite entries")
    return out


def _clip_unit_mp(t: np.ndarray) -> np.ndarray:
    one = mpmath.mpf(1)
    return np.asarray(np.frompyfunc(lambda v: max(min(v, one), -one), 1, 1)(t), dtype=object)


def _check_t_range(max_abs_t: float, what: str) -> None:
    if not max_abs_t <= 1 + T_SLACK:
        raise OffSphereError(
            f"{what} has |t| = {max_abs_t:.6g} > 1 (slack {T_SLACK:.0e}); t = <x, y>/d exceeds 1 "
            "only for points off the sphere of radius sqrt(d)"
        )


def _float_t(t: Any) -> tuple[Any, Any, bool]:
    """Validated double-precision t: (array, namespace, was_scalar)."""
    from array_api_compat import array_namespace, is_array_api_obj

    scalar = not is_array_api_obj(t)
    if scalar:
        if isinstance(t, (bool, str)) or not isinstance(t, (int, float, np.floating, np.integer,
                                                            mpmath.mpf, list, tuple)):
            raise ShapeError(f"t must be a real number or an array, got {type(t).__name__}")
        scalar = not isinstance(t, (list, tuple))
        t = np.asarray(t, dtype=np.float64)
    xp = array_namespace(t)
    if not xp.isdtype(t.dtype, "real floating"):
        if xp.isdtype(t.dtype, "integral"):
            t = xp.astype(t, xp.float64)
        else:
            raise ShapeError(f"t must be real floating point, got dtype {t.dtype}")
    if not bool(xp.all(xp.isfinite(t))):
        raise ShapeError("t has non-finite entries")
    if t.size:
        _check_t_range(float(xp.max(xp.abs(t))), "t")
    return xp.clip(t, -1.0, 1.0), xp, scalar


def _mp_t(t: Any) -> tuple[np.ndarray, bool]:
    scalar = np.ndim(t) == 0 and not isinstance(t, np.ndarray)
    arr = _mp_array(t, "t")
    if arr.size:
        _check_t_range(float(max(abs(v) for v in arr.flat)), "t")
    return _clip_unit_mp(arr), scalar


def _as_array(A: Any, name: str) -> Any:
    """Array-API arrays pass through; nested lists / numbers become numpy arrays."""
    from array_api_compat import is_array_api_obj

    if A is None or is_array_api_obj(A):
        return A
    if not isinstance(A, (list, tuple)):
        raise ShapeError(f"{name} must be an array or nested list, got {type(A).__name__}")
    try:
        return np.asarray(A)
    except ValueError as exc:  # ragged nested lists
        raise ShapeError(f"{name} is not a rectangular array: {exc}") from None


def _rows(X: Any, Y: Any, xp: Any) -> tuple[Any, Any]:
    """Validate data matrices (2-D, same d, real, finite); integers are promoted to float64."""
    out = []
    for name, A in (("X", X), ("Y", Y)):
        if A is None:
            out.append(None)
            continue
        if A.ndim != 2:
            raise ShapeError(f"{name} must be 2-D (rows are points), got shape {tuple(A.shape)}")
        if A.shape[0] == 0 or A.shape[1] == 0:
            raise ShapeError(f"{name} must have at least one row and one column, "
                             f"got shape {tuple(A.shape)}")
        if xp.isdtype(A.dtype, "integral"):
            A = xp.astype(A, xp.float64)
        elif not xp.isdtype(A.dtype, "real floating"):
            raise ShapeError(f"{name} must be real floating point, got dtype {A.dtype}")
        if not bool(xp.all(xp.isfinite(A))):
            raise ShapeError(f"{name} has non-finite entries")
        out.append(A)
    X, Y = out
    if Y is not None and Y.shape[1] != X.shape[1]:
        raise ShapeError(f"X and Y must have the same dimension d, got {X.shape[1]} and "
                         f"{Y.shape[1]}")
    if Y is not None and Y.dtype != X.dtype:
        raise ShapeError(f"X and Y must have the same dtype, got {X.dtype} and {Y.dtype}")
    return X, Y


def _mp_rows(X: Any, Y: Any) -> tuple[np.ndarray, np.ndarray | None]:
    out = []
    for name, A in (("X", X), ("Y", Y)):
        A = _as_array(A, name)
        if A is None:
            out.append(None)
            continue
        if not isinstance(A, np.ndarray):
            raise BackendError(f"the mpmath path needs numpy arrays, got {type(A).__name__} "
                               f"for {name}")
        if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] == 0:
            raise ShapeError(f"{name} must be 2-D with at least one row and column, "
                             f"got shape {A.shape}")
        out.append(_mp_array(A, name))
    X, Y = out
    if Y is not None and Y.shape[1] != X.shape[1]:
        raise ShapeError(f"X and Y must have the same dimension d, got {X.shape[1]} and "
                         f"{Y.shape[1]}")
    return X, Y


def _sphere_rtol(sphere_rtol: float | None, dtype_eps: float) -> float:
    if sphere_rtol is None:
        return math.sqrt(dtype_eps)
    if isinstance(sphere_rtol, bool) or not isinstance(sphere_rtol, (int, float)) \
            or not 0 <= sphere_rtol < 1:
        raise RFTheoryError(f"sphere_rtol must be a number in [0, 1), got {sphere_rtol!r}")
    return float(sphere_rtol)


def _check_sphere(sq_norms: list[tuple[str, Any]], rtol: float, name: str, xp: Any) -> None:
    """Refuse rows with |‖x‖²/d − 1| > rtol, naming the worst one."""
    for which, r in sq_norms:
        if xp is None:
            dev = [abs(float(v) - 1.0) for v in r]
            i = int(np.argmax(dev))
            worst, value = dev[i], float(r[i])
        else:
            dev = xp.abs(r - 1.0)
            i = int(xp.argmax(dev))
            worst, value = float(dev[i]), float(r[i])
        if not worst <= rtol:
            try:
                known = has_closed_form(name)
            except RFTheoryError:  # a series built by hand may carry any label
                known = False
            hint = (f"closed_form_kernel_matrix({name!r}, ...) handles general norms"
                    if known else f"no general-norm closed form is known here for {name!r}")
            raise OffSphereError(
                f"row {i} of {which} has ||x||^2/d = {value:.10g}, off the sphere of radius "
                f"sqrt(d) beyond the relative tolerance {rtol:.1e}; the series needs "
                f"||x|| = sqrt(d) ({hint})"
            )


# ---------------------------------------------------------------------------------------------
# Public evaluation of the series
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KernelValue:
    """``K(t)`` from the series, with an upper bound on ``|K(t) - values|`` per entry.

    Attributes
    ----------
    values : float, mpf or array
        ``K_K(t)`` (same kind as the input ``t``).
    error_bound : float, mpf or array
        ``B(|t|)`` of :class:`KernelSeries`, entrywise.
    order : int
    method : str
    dps : int or None
    """

    values: Any
    error_bound: Any
    order: int
    method: str
    dps: int | None


@dataclass(frozen=True)
class KernelMatrix:
    """A kernel matrix ``K(XYᵀ/d)`` from the series, with bounds on its entrywise error.

    Attributes
    ----------
    values : array
        The ``n × m`` matrix (namespace of the input in double; numpy object array of mpf in
        mpmath).
    error_bound : float or mpf
        Bound on ``max |K - values|`` over all entries: ``B(max |t|)``.
    error_bound_off_diagonal : float, mpf or None
        ``B`` at the largest off-diagonal ``|t|`` when ``Y`` is omitted (diagonal entries have
        ``t = 1`` and carry the whole Parseval tail; ``K(1) = E[φ(g)²]`` exactly); ``None`` when
        ``Y`` is given.
    max_abs_t : float or mpf
        Largest ``|<x, y>|/d`` in the matrix.
    order : int
    method : str
    dps : int or None
    """

    values: Any
    error_bound: Any
    error_bound_off_diagonal: Any
    max_abs_t: Any
    order: int
    method: str
    dps: int | None


def rf_kernel_series(activation: "str | Activation | KernelSeries", t: Any, *,
                     order: int | None = None, method: str | None = None,
                     dps: int | None = None) -> KernelValue:
    """Evaluate ``K(t) = Σ_k μ_k² t^k`` for ``|t| <= 1`` with a rigorous error bound.

    Parameters
    ----------
    activation : str, Activation or KernelSeries
        The activation, or a series prebuilt by :func:`kernel_series` (reuse it to avoid
        recomputing coefficients; then leave ``order``, ``method`` and ``dps`` unset).
    t : float, mpf or array
        Correlations ``<x, y>/d`` of points on the sphere of radius ``sqrt(d)``. Any array-API
        array in double precision; mpf or numpy arrays (float or object) in mpmath.
    order : int, optional
        Truncation order K (default :data:`DEFAULT_ORDER`).
    method : {"fast", "mpmath", "exact"}, optional
        Coefficient method (default ``"fast"``: double precision). ``"mpmath"``/``"exact"``
        evaluate everything in mpmath at ``dps`` digits.
    dps : int, optional
        Decimal digits for the mpmath methods (default :data:`DEFAULT_DPS`).

    Returns
    -------
    KernelValue
        ``values`` and ``error_bound`` entrywise, same shape and kind as ``t``.

    Raises
    ------
    OffSphereError
        If ``|t| > 1 + T_SLACK`` (values within the slack are clipped to ±1).
    ShapeError
        If ``t`` is not real or has non-finite entries.

    Notes
    -----
    The bound (see :class:`KernelSeries`) is ``Σ ε_k |t|^k + T |t|^{K+1} + γ Σ c_k |t|^k``,
    with ``T`` the Parseval tail bound; it does not cover errors already present in ``t``.
    Against the closed forms of :func:`closed_form_kernel` the series agrees to 1e-12 for
    |t| ≤ 0.9 once the order makes ``T·0.9^{K+1}`` < 1e-12; near |t| = 1 the bound is dominated
    by the Parseval tail (8e-5 for ReLU at order 64), which decays only like a power of K for a
    kinked φ.

    Examples
    --------
    The ReLU kernel at cosine t = 0.5, from its Hermite series and in closed form:

    >>> from rftheory.kernel import rf_kernel_series, closed_form_kernel
    >>> k = rf_kernel_series("relu", 0.5)
    >>> round(float(k.values), 12), bool(k.error_bound < 1e-13)
    (0.304498890522, True)
    >>> bool(abs(k.values - closed_form_kernel("relu", 0.5)) <= k.error_bound)
    True
    """
    series = _resolve_series(activation, order, method, dps)
    if series.dps is None:
        tt, xp, scalar = _float_t(t)
        values = series.evaluate(tt)
        bound = series.error_bound(xp.abs(tt))
        if scalar:
            return KernelValue(float(values), float(bound), series.order, series.method, None)
        return KernelValue(values, bound, series.order, series.method, None)
    with mpmath.workdps(series.dps):
        tt, scalar = _mp_t(t)
        values = series.evaluate(tt)
        bound = series.error_bound(np.abs(tt))
    if scalar:
        values, bound = values.item() if isinstance(values, np.ndarray) else values, \
            bound.item() if isinstance(bound, np.ndarray) else bound
    return KernelValue(values, bound, series.order, series.method, series.dps)


def kernel_matrix(activation: "str | Activation | KernelSeries", X: Any, Y: Any = None, *,
                  order: int | None = None, method: str | None = None, dps: int | None = None,
                  sphere_rtol: float | None = None) -> KernelMatrix:
    """The RF kernel matrix ``K(<x_i, y_j>/d)`` of data on the sphere, by the Hermite series.

    Parameters
    ----------
    activation : str, Activation or KernelSeries
        As in :func:`rf_kernel_series`.
    X : array, shape (n, d)
        Data rows on the sphere of radius ``sqrt(d)``; any array-API namespace in double
        (numpy, CuPy, ``array_api_strict``; the result stays in it). The mpmath methods need
        numpy arrays (float, or object arrays of mpf) and return numpy object arrays of mpf.
    Y : array, shape (m, d), optional
        Second set of rows; default ``X`` (the Gram-type kernel matrix).
    order, method, dps
        As in :func:`rf_kernel_series`.
    sphere_rtol : float, optional
        Accepted relative deviation of ``||x||²/d`` from 1. Default: ``sqrt(eps)`` of the data
        dtype (1.5e-8 for float64 and mpmath, 3.5e-4 for float32).

    Returns
    -------
    KernelMatrix

    Raises
    ------
    OffSphereError
        If a row is off the sphere beyond ``sphere_rtol``; the message names the row, its
        ``||x||²/d``, the tolerance, and whether :func:`closed_form_kernel_matrix` (general
        norms) covers the activation.
    ShapeError
        For non-2-D or empty inputs, different ``d`` or dtypes, non-real or non-finite entries.

    Notes
    -----
    The series is only the kernel on the sphere: for general norms it is *not* a function of
    ``<x, y>/d`` alone, so off-sphere data are refused rather than silently mis-evaluated.
    Within the tolerance, ``t = <x, y>/d`` is computed from the given rows and clipped to
    [-1, 1]; a norm deviation δ changes the true kernel by O(δ), which the bound does not cover.
    Cost: the product ``XYᵀ`` plus ``2K`` in-place passes over the ``n × m`` matrix (double);
    the mpmath path costs ``n m (d + 2K)`` mpf operations (about 3 s for n = m = 100,
    d = 10, K = 64 at 30 digits, plus ~3 s for the mpmath coefficients).

    Examples
    --------
    >>> import numpy as np
    >>> from rftheory.data import sphere_points
    >>> from rftheory.kernel import kernel_matrix
    >>> K = kernel_matrix("relu", sphere_points(4, 10, seed=0))
    >>> K.values.shape, bool(np.allclose(K.values, K.values.T))
    ((4, 4), True)
    >>> bool(np.all(np.abs(np.diag(K.values) - 0.5) <= K.error_bound))  # K(1) = E[relu(g)²]
    True
    """
    series = _resolve_series(activation, order, method, dps)
    if series.dps is not None:
        return _kernel_matrix_mp(series, X, Y, sphere_rtol)
    from array_api_compat import array_namespace

    X, Y = _as_array(X, "X"), _as_array(Y, "Y")
    xp = array_namespace(X) if Y is None else array_namespace(X, Y)
    X, Y = _rows(X, Y, xp)
    n, d = X.shape
    eps = float(xp.finfo(X.dtype).eps)
    rtol = _sphere_rtol(sphere_rtol, eps)
    norms = [("X", xp.sum(X * X, axis=1) / d)]
    if Y is not None:
        norms.append(("Y", xp.sum(Y * Y, axis=1) / d))
    _check_sphere(norms, rtol, series.activation, xp)
    t = X @ xp.matrix_transpose(X if Y is None else Y)
    t /= d
    t = xp.clip(t, -1.0, 1.0)  # |t| <= 1 + rtol holds by Cauchy-Schwarz; the excess is rounding
    abs_t = xp.abs(t)
    max_abs_t = float(xp.max(abs_t))
    off_diagonal = None
    if Y is None:
        # Zero the diagonal (every (n+1)-th entry of the flattened fresh copy) and take the max;
        # correct whether reshape returns a view or a copy, and needs no n×n mask.
        flat = xp.reshape(abs_t, (n * n,))
        flat[::n + 1] = 0.0
        off_diagonal = float(xp.max(flat))
        del flat
    del abs_t
    values = series.evaluate(t)
    u = eps / 2
    bound = float(series.error_bound(max_abs_t, unit_roundoff=u))
    bound_off = None if off_diagonal is None else float(
        series.error_bound(off_diagonal, unit_roundoff=u))
    return KernelMatrix(values, bound, bound_off, max_abs_t, series.order, series.method, None)


def _kernel_matrix_mp(series: KernelSeries, X: Any, Y: Any,
                      sphere_rtol: float | None) -> KernelMatrix:
    rtol = _sphere_rtol(sphere_rtol, float(np.finfo(np.float64).eps))
    with mpmath.workdps(series.dps):
        X, Y = _mp_rows(X, Y)
        n, d = X.shape
        norms = [("X", (X * X).sum(axis=1) / d)]
        if Y is not None:
            norms.append(("Y", (Y * Y).sum(axis=1) / d))
        _check_sphere(norms, rtol, series.activation, None)
        t = _clip_unit_mp((X @ (X if Y is None else Y).T) / d)
        abs_t = np.abs(t)
        max_abs_t = max(abs_t.flat)
        off_diagonal = None
        if Y is None:
            off_diagonal = mpmath.mpf(0) if n == 1 else max(
                abs_t[~np.eye(n, dtype=bool)].flat)
        values = series.evaluate(t)
        bound = series.error_bound(max_abs_t)
        bound_off = None if off_diagonal is None else series.error_bound(off_diagonal)
    return KernelMatrix(values, bound, bound_off, max_abs_t, series.order, series.method,
                        series.dps)


# ---------------------------------------------------------------------------------------------
# Closed forms (independent of the Hermite series)
# ---------------------------------------------------------------------------------------------

class _Ops(NamedTuple):
    sqrt: Callable[[Any], Any]
    acos: Callable[[Any], Any]
    asin: Callable[[Any], Any]
    sinh: Callable[[Any], Any]
    cosh: Callable[[Any], Any]
    exp: Callable[[Any], Any]
    clip_unit: Callable[[Any], Any]
    pi: Any
    number: Callable[[sp.Expr], Any]


def _array_ops(xp: Any) -> _Ops:
    return _Ops(xp.sqrt, xp.acos, xp.asin, xp.sinh, xp.cosh, xp.exp,
                lambda v: xp.clip(v, -1.0, 1.0), math.pi, lambda e: float(sp.N(e, 20)))


def _mp_ops() -> _Ops:
    def f(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return np.frompyfunc(fn, 1, 1)

    dps = mpmath.mp.dps
    return _Ops(f(mpmath.sqrt), f(mpmath.acos), f(mpmath.asin), f(mpmath.sinh), f(mpmath.cosh),
                f(mpmath.exp), _clip_unit_mp, mpmath.pi,
                lambda e: mpmath.mpf(sp.N(e, dps + 10)))


def _gaussian_moment_pairs(i: int, j: int) -> dict[tuple[int, int, int], int]:
    """E[X^i Y^j] for centred jointly Gaussian (X, Y) with Var X = a, Var Y = b, Cov = c.

    Isserlis: choose l cross pairs (C(i,l) C(j,l) l! ways), pair the rest within X and within Y
    ((i-l-1)!! and (j-l-1)!! ways). Returns {(power of a, power of b, power of c): count}.
    """
    out: dict[tuple[int, int, int], int] = {}
    for cross in range(min(i, j) + 1):
        if (i - cross) % 2 or (j - cross) % 2:
            continue
        count = (math.comb(i, cross) * math.comb(j, cross) * math.factorial(cross)
                 * _double_factorial(i - cross - 1) * _double_factorial(j - cross - 1))
        key = ((i - cross) // 2, (j - cross) // 2, cross)
        out[key] = out.get(key, 0) + count
    return out


def _double_factorial(n: int) -> int:
    return 1 if n <= 0 else math.prod(range(n, 0, -2))


@dataclass(frozen=True)
class _ClosedForm:
    """φ = scale · core(alpha z), or a polynomial given by its monomial terms."""

    kind: str
    scale: sp.Expr = sp.S.One
    alpha: sp.Expr = sp.S.One
    poly_terms: tuple = ()

    def evaluate(self, c: Any, a: Any, b: Any, ops: _Ops) -> Any:
        """E[φ(X)φ(Y)] for Var X = a, Var Y = b, Cov(X, Y) = c (entrywise, broadcasting)."""
        if self.kind == "polynomial":
            total = c * 0  # keeps the shape and kind of c when a term has no c
            for (pa, pb, pc), coefficient in self.poly_terms:
                total = total + ops.number(coefficient) * (a**pa) * (b**pb) * (c**pc)
            return total
        s2 = ops.number(self.scale**2)
        al2 = ops.number(self.alpha**2)
        if self.kind in ("relu", "leaky_relu", "step", "abs", "sign"):
            ab = ops.sqrt(a * b)
            rho = ops.clip_unit(c / ab)
            if self.kind == "relu":
                return s2 * ab * _arccos1(rho, ops)
            if self.kind == "leaky_relu":
                leak = ops.number(self.alpha)
                return s2 * ab * ((1 + leak * leak) * _arccos1(rho, ops)
                                  - 2 * leak * _arccos1(-rho, ops))
            if self.kind == "step":
                return s2 * (ops.pi - ops.acos(rho)) / (2 * ops.pi)
            if self.kind == "abs":
                return s2 * ab * (2 / ops.pi) * (ops.sqrt(1 - rho * rho) + rho * ops.asin(rho))
            return s2 * (2 / ops.pi) * ops.asin(rho)  # sign
        if self.kind == "erf":
            inner = 2 * al2 * c / ops.sqrt((1 + 2 * al2 * a) * (1 + 2 * al2 * b))
            return s2 * (2 / ops.pi) * ops.asin(ops.clip_unit(inner))
        if self.kind == "sin":
            return s2 * ops.exp(-al2 * (a + b) / 2) * ops.sinh(al2 * c)
        if self.kind == "cos":
            return s2 * ops.exp(-al2 * (a + b) / 2) * ops.cosh(al2 * c)
        if self.kind == "exp":
            return s2 * ops.exp(al2 * (a + b + 2 * c) / 2)
        raise AssertionError(self.kind)  # unreachable: _recognise only builds the kinds above

    @property
    def homogeneous(self) -> bool:
        return self.kind in ("relu", "leaky_relu", "step", "abs", "sign")


def _arccos1(rho: Any, ops: _Ops) -> Any:
    """Arc-cosine kernel of degree 1 at correlation rho: (sqrt(1-ρ²) + (π - arccos ρ) ρ)/(2π)."""
    return (ops.sqrt(1 - rho * rho) + (ops.pi - ops.acos(rho)) * rho) / (2 * ops.pi)


def _recognise(expr: sp.Expr) -> _ClosedForm | None:
    if expr.is_polynomial(Z):
        poly = sp.Poly(expr, Z)
        coefficients = {m[0]: c for m, c in zip(poly.monoms(), poly.coeffs())}
        if not all(c.is_real for c in coefficients.values()):
            return None
        terms: dict[tuple[int, int, int], sp.Expr] = {}
        for i, ci in coefficients.items():
            for j, cj in coefficients.items():
                for key, count in _gaussian_moment_pairs(i, j).items():
                    terms[key] = terms.get(key, sp.S.Zero) + count * ci * cj
        return _ClosedForm("polynomial", poly_terms=tuple(sorted(
            (k, v) for k, v in terms.items() if v != 0)))
    scale, core = expr.as_independent(Z, as_Add=False)
    if not scale.is_real or scale == 0:
        return None
    if core == sp.Max(Z, 0):
        return _ClosedForm("relu", scale)
    if isinstance(core, sp.Heaviside) and core.args[0] == Z:
        return _ClosedForm("step", scale)
    if core == sp.Abs(Z):
        return _ClosedForm("abs", scale)
    if core == sp.sign(Z):
        return _ClosedForm("sign", scale)
    if core.is_Add and len(core.args) == 2 and sp.Max(Z, 0) in core.args:
        other = core.args[0] if core.args[1] == sp.Max(Z, 0) else core.args[1]
        leak, rest = other.as_independent(Z, as_Add=False)
        if rest == sp.Min(Z, 0) and leak.is_real:
            return _ClosedForm("leaky_relu", scale, leak)
    for kind, head in (("erf", sp.erf), ("sin", sp.sin), ("cos", sp.cos), ("exp", sp.exp)):
        if isinstance(core, head):
            alpha, rest = core.args[0].as_independent(Z, as_Add=False)
            if rest == Z and alpha.is_real:
                return _ClosedForm(kind, scale, alpha)
    return None


def has_closed_form(activation: "str | Activation") -> bool:
    """Whether :func:`closed_form_kernel` knows ``activation``'s kernel exactly.

    Parameters
    ----------
    activation : str or Activation
        A registry name, an expression in ``z`` or an activation.

    Returns
    -------
    bool
        True for the activations with a closed-form kernel (ReLU, erf, …).

    Examples
    --------
    >>> has_closed_form("relu"), has_closed_form("tanh")
    (True, False)
    """
    return _recognise(get_activation(activation).expr) is not None


def _closed_form_of(activation: "str | Activation") -> tuple[Activation, _ClosedForm]:
    act = get_activation(activation)
    form = _recognise(act.expr)
    if form is None:
        raise NoClosedFormError(
            f"no closed-form kernel for {act.name!r} ({act.expr}); known: c*relu, leaky relu, "
            "step, abs, sign, erf(a z), sin(a z), cos(a z), exp(a z), polynomials"
        )
    return act, form


def closed_form_kernel(activation: "str | Activation", t: Any, *,
                       dps: int | None = None) -> Any:
    """The exact kernel ``K(t) = E[φ(u)φ(v)]`` on the sphere (u, v standard, correlation t).

    Parameters
    ----------
    activation : str or Activation
        One of the closed-form families (see :func:`closed_form_kernel_matrix`).
    t : float, mpf or array
        Correlations in [-1, 1] (``|t| <= 1 + T_SLACK`` accepted and clipped).
    dps : int, optional
        ``None``: double precision on any array-API namespace. An integer: mpmath with that many
        digits (input numbers or numpy arrays; output mpf or numpy object arrays of mpf).

    Returns
    -------
    float, mpf or array
        Same shape and kind as ``t``.

    Raises
    ------
    NoClosedFormError
        If the activation is not one of the known families.

    Notes
    -----
    The formulas (ReLU's arc-cosine kernel, erf's arcsine kernel, polynomials, sin/cos, …) are
    evaluated in double precision, or with mpmath at ``dps`` digits. Checked against the
    independent Hermite series of :func:`rf_kernel_series` (``tests/test_kernel.py``): agreement
    to 1e-12 for |t| ≤ 0.9 in double precision (at orders where the series' Parseval bound is
    below 1e-12), and to 25 digits with ``dps=30``.

    Examples
    --------
    >>> import numpy as np
    >>> from rftheory.kernel import closed_form_kernel
    >>> closed_form_kernel("relu", np.array([0.0, 1.0])).round(12).tolist()  # 1/(2π), E[relu(g)²]
    [0.159154943092, 0.5]
    """
    _, form = _closed_form_of(activation)
    if dps is None:
        tt, xp, scalar = _float_t(t)
        ones = xp.ones_like(tt)
        out = form.evaluate(tt, ones, ones, _array_ops(xp))
        return float(out) if scalar else out
    with mpmath.workdps(_check_dps(dps)):
        tt, scalar = _mp_t(t)
        one = mpmath.mpf(1)
        out = form.evaluate(tt, one, one, _mp_ops())
        return out.item() if isinstance(out, np.ndarray) and out.ndim == 0 else out


def closed_form_kernel_matrix(activation: "str | Activation", X: Any, Y: Any = None, *,
                              dps: int | None = None) -> Any:
    """The exact RF kernel matrix ``E_v[φ(vᵀx_i) φ(vᵀy_j)]``, ``v ~ N(0, I/d)``, for any norms.

    Parameters
    ----------
    activation : str or Activation
        ``s·relu``; leaky ReLU ``max(z,0) + a·min(z,0)``; ``s·step``; ``s·|z|``; ``s·sign``;
        ``s·erf(a z)``; ``s·sin(a z)``; ``s·cos(a z)``; ``s·exp(a z)``; any polynomial.
    X : array, shape (n, d)
        Rows of any nonzero norm (the angle-based forms need nonzero rows).
    Y : array, shape (m, d), optional
        Default ``X``.
    dps : int, optional
        ``None``: double precision in the input's array-API namespace. An integer: mpmath with
        that many digits (numpy inputs; returns a numpy object array of mpf).

    Returns
    -------
    array, shape (n, m)

    Notes
    -----
    With ``a = ||x||²/d``, ``b = ||y||²/d``, ``c = <x, y>/d`` (the variances and covariance of
    the pre-activations) and ``ρ = c/sqrt(ab)``:

    - ReLU: ``sqrt(ab) (sqrt(1-ρ²) + (π - arccos ρ) ρ) / (2π)`` (arc-cosine kernel, degree 1);
      leaky ReLU ``relu(z) - a relu(-z)``: ``sqrt(ab) [(1+a²) κ₁(ρ) - 2a κ₁(-ρ)]``;
    - step: ``(π - arccos ρ) / (2π)`` (degree 0); ``|z|``: ``(2/π) sqrt(ab) (sqrt(1-ρ²) +
      ρ arcsin ρ)``; ``sign``: ``(2/π) arcsin ρ``;
    - ``erf(αz)``: ``(2/π) arcsin(2α²c / sqrt((1+2α²a)(1+2α²b)))`` (on the sphere with α = 1:
      ``(2/π) arcsin(2t/3)``);
    - ``sin(αz)``, ``cos(αz)``: ``exp(-α²(a+b)/2) sinh(α²c)``, ``... cosh(α²c)``;
      ``exp(αz)``: ``exp(α²(a + b + 2c)/2)``;
    - polynomials: Isserlis' theorem, ``E[X^i Y^j] = Σ_l C(i,l) C(j,l) l! c^l (i-l-1)!!
      a^{(i-l)/2} (j-l-1)!! b^{(j-l)/2}``, with exact sympy coefficients.

    These are exact; the only errors are floating-point rounding (in double, ``arccos`` near
    ``ρ = ±1`` loses up to half the digits of ``ρ`` because of its square-root singularity).
    """
    act, form = _closed_form_of(activation)
    if dps is None:
        from array_api_compat import array_namespace

        X, Y = _as_array(X, "X"), _as_array(Y, "Y")
        xp = array_namespace(X) if Y is None else array_namespace(X, Y)
        X, Y = _rows(X, Y, xp)
        Yr = X if Y is None else Y
        d = X.shape[1]
        a = xp.sum(X * X, axis=1) / d
        b = a if Y is None else xp.sum(Y * Y, axis=1) / d
        _check_nonzero(form, act, [float(xp.min(a)), float(xp.min(b))])
        c = (X @ xp.matrix_transpose(Yr)) / d
        return form.evaluate(c, a[:, None], b[None, :], _array_ops(xp))
    with mpmath.workdps(_check_dps(dps)):
        X, Y = _mp_rows(X, Y)
        Yr = X if Y is None else Y
        d = X.shape[1]
        a = (X * X).sum(axis=1) / d
        b = a if Y is None else (Y * Y).sum(axis=1) / d
        _check_nonzero(form, act, [min(a), min(b)])
        c = (X @ Yr.T) / d
        out = form.evaluate(c, a[:, None], b[None, :], _mp_ops())
        return np.asarray(out, dtype=object)


def _check_nonzero(form: _ClosedForm, act: Activation, smallest: list[Any]) -> None:
    if form.homogeneous and min(smallest) == 0:
        raise ShapeError(f"the {act.name!r} kernel depends on the angle between points; "
                         "rows of zero norm have none")


# ---------------------------------------------------------------------------------------------
# Lower bound on λ_min of the kernel matrix from the Hermite series (Schur product theorem)
# ---------------------------------------------------------------------------------------------

#: Gershgorin shortcut in :func:`hadamard_power_bounds`: once the Gershgorin disc bound on
#: λ_min(T^{∘k}) is within this of the smallest diagonal entry (an upper bound on λ_min), no
#: eigenvalue computation could improve it by more.
_GERSHGORIN_SLACK = 1e-12


@dataclass(frozen=True)
class HadamardPowerBounds:
    """Certified lower bounds on ``λ_min(T^{∘k})``, ``T = XXᵀ/d``, for ``k = 0..order``.

    Build with :func:`hadamard_power_bounds`; combine with an activation's coefficients by
    :func:`hermite_lower_bound`. Depends on the data only, so one object serves every activation.

    Attributes
    ----------
    n, d, order : int
    lower : tuple of float
        ``ℓ_k <= λ_min(T^{∘k})`` (``>= 0``: every Hadamard power of a PSD matrix is PSD).
    computed : tuple of float
        The raw smallest eigenvalue from ``eigvalsh`` (or the Gershgorin bound where it sufficed).
    gershgorin : tuple of bool
        Whether term k was settled by Gershgorin's theorem without an eigenvalue computation.
    max_off_diagonal : float
        ``max_{i≠j} |t_ij|`` (0 for n = 1).
    """

    n: int
    d: int
    order: int
    lower: tuple
    computed: tuple
    gershgorin: tuple
    max_off_diagonal: float


def hadamard_power_bounds(X: Any, order: int = DEFAULT_ORDER, *,
                          sphere_rtol: float | None = None) -> HadamardPowerBounds:
    """Lower bounds on the smallest eigenvalues of the Hadamard powers of ``T = XXᵀ/d``.

    Parameters
    ----------
    X : array, shape (n, d)
        Rows on the sphere of radius ``sqrt(d)``, float64, any array-API namespace (the
        eigenvalue routine is the namespace's ``linalg.eigvalsh``).
    order : int
        Highest power K.
    sphere_rtol : float, optional
        As in :func:`kernel_matrix`.

    Returns
    -------
    HadamardPowerBounds

    Notes
    -----
    ``T`` is formed exactly as in :func:`kernel_matrix` (``XXᵀ/d`` clipped to [-1, 1]) and its
    powers by repeated entrywise products. For each k, ``ℓ_k = max(0, g_k, λ̂_k − δ_k)`` with

    * ``g_k = min_i (T^{∘k}_ii − Σ_{j≠i} |t_ij|^k)`` (Gershgorin; when ``g_k`` is within 1e-12 of
      the smallest diagonal entry, an upper bound on λ_min, ``eigvalsh`` is skipped);
    * ``λ̂_k`` the computed smallest eigenvalue and ``δ_k = 2 n (n + d + 2k + 2) u`` a rounding
      allowance: entries of ``T^{∘k}`` carry at most ``(d + 2k + 2) u`` absolute error (``|t| <= 1``;
      ``d`` roundings in the inner product, ``k`` in the powers), which moves eigenvalues by at most
      ``n`` times that, and a backward-stable symmetric eigensolver adds ``O(n u ‖T^{∘k}‖) <= n² u``;
      the factor 2 covers the modest constants of LAPACK's bound, which are taken as stated, not
      proved here;
    * the clip at 0 is the Schur product theorem (``T`` is a Gram matrix, so is ``T^{∘k}``).

    Points off the sphere within ``sphere_rtol`` are used as given (their diagonal ``t_ii`` is
    not 1); the bound is for the matrix built from the computed ``T``, as :func:`kernel_matrix`
    evaluates it. Cost: ``order`` entrywise passes and at most ``order + 1`` symmetric eigenvalue
    problems of size n.
    """
    from array_api_compat import array_namespace

    if isinstance(order, bool) or not isinstance(order, int) or order < 0:
        raise RFTheoryError(f"order must be a non-negative integer, got {order!r}")
    X = _as_array(X, "X")
    xp = array_namespace(X)
    X, _ = _rows(X, None, xp)
    if X.dtype != xp.float64:
        raise ShapeError(f"X must be float64 for certified eigenvalue bounds, got {X.dtype}")
    n, d = X.shape
    rtol = _sphere_rtol(sphere_rtol, float(xp.finfo(X.dtype).eps))
    _check_sphere([("X", xp.sum(X * X, axis=1) / d)], rtol, "the data", xp)
    T = xp.clip((X @ xp.matrix_transpose(X)) / d, -1.0, 1.0)
    u = 2.0**-53
    abs_off = xp.abs(T)
    flat = xp.reshape(abs_off, (n * n,))
    flat[::n + 1] = 0.0  # abs_off is a fresh array; zero its diagonal (see kernel_matrix)
    abs_off = xp.reshape(flat, (n, n))
    max_off = float(xp.max(abs_off))
    diag = xp.linalg.diagonal(T)
    power = xp.ones_like(T)
    off_power = xp.ones_like(abs_off) if n > 1 else abs_off
    lower, computed, used_gershgorin = [], [], []
    for k in range(order + 1):
        if k > 0:
            power = power * T
            off_power = off_power * abs_off
        diag_k = diag**k
        # k = 0: off_power is the all-ones matrix with a 1 on the diagonal; use the true zeros.
        radius = xp.sum(off_power, axis=1) - (xp.linalg.diagonal(off_power) if k == 0 else 0.0)
        g = float(xp.min(diag_k - radius))
        smallest_diag = float(xp.min(diag_k))
        delta = 2.0 * n * (n + d + 2 * k + 2) * u
        if g >= smallest_diag - _GERSHGORIN_SLACK:
            lam, settled, low = g, True, g - delta
        else:
            lam = float(xp.min(xp.linalg.eigvalsh(power)))
            settled, low = False, max(g, lam - delta)
        lower.append(max(low, 0.0))
        computed.append(lam)
        used_gershgorin.append(settled)
    return HadamardPowerBounds(n, d, order, tuple(lower), tuple(computed),
                               tuple(used_gershgorin), max_off)


@dataclass(frozen=True)
class HermiteLowerBound:
    """``λ_min(K) >= Σ_{k_min <= k <= K} μ_k² λ_min(T^{∘k})`` for the RF kernel matrix K.

    Attributes
    ----------
    activation : str
    k_min, order : int
        The terms kept: ``k_min <= k <= order``.
    value : float
        The lower bound ``Σ_{k_min<=k<=K} max(c_k − ε_k, 0) ℓ_k`` (see
        :func:`hermite_lower_bound`).
    terms : tuple of float
        ``max(c_k − ε_k, 0) ℓ_k`` for k = 0..K (all of them, whatever ``k_min``).
    coefficients : tuple of float
        ``c_k ≈ μ_k²``, k = 0..K.
    second_moment : float
        ``E[φ(g)²] = Σ_k μ_k²``.
    powers : HadamardPowerBounds
        The data side, ``ℓ_k <= λ_min(T^{∘k})``.
    """

    activation: str
    k_min: int
    order: int
    value: float
    terms: tuple
    coefficients: tuple
    second_moment: float
    powers: HadamardPowerBounds

    @property
    def parseval_tail(self) -> float:
        """``Σ_{k>=k_min} μ_k² = E[φ(g)²] − Σ_{k<k_min} μ_k²`` (all orders, nothing truncated).

        What the bound tends to when every ``T^{∘k}``, ``k >= k_min``, is close to the identity
        (``d`` large, ``k_min >= 2``): the usual large-d approximation of ``λ_min(K)``.
        """
        return self.second_moment - math.fsum(self.coefficients[:self.k_min])

    def with_k_min(self, k_min: int) -> "HermiteLowerBound":
        """The same bound keeping only the terms ``k >= k_min`` (no recomputation)."""
        k_min = _check_k_min(k_min)
        return HermiteLowerBound(self.activation, k_min, self.order,
                                 math.fsum(self.terms[k_min:]), self.terms, self.coefficients,
                                 self.second_moment, self.powers)


def _check_k_min(k_min: Any) -> int:
    if isinstance(k_min, bool) or not isinstance(k_min, int) or k_min < 0:
        raise RFTheoryError(f"k_min must be a non-negative integer, got {k_min!r}")
    return k_min


def hermite_lower_bound(activation: "str | Activation | KernelSeries", X: Any, *,
                        k_min: int = 0, order: int | None = None, method: str | None = None,
                        dps: int | None = None,
                        sphere_rtol: float | None = None) -> HermiteLowerBound:
    """Lower bound on ``λ_min`` of the RF kernel matrix from its Hermite series.

    On the sphere ``K = Σ_k μ_k² T^{∘k}`` with ``T = XXᵀ/d``. Every ``T^{∘k}`` is PSD (Schur
    product theorem), so by Weyl's inequality ``λ_min(K) >= Σ_{k∈S} μ_k² λ_min(T^{∘k})`` for any
    set S of orders; here ``S = {k_min, ..., K}``.

    Parameters
    ----------
    activation : str, Activation or KernelSeries
        As in :func:`rf_kernel_series` (an mpmath series is used through its double values).
    X : array or HadamardPowerBounds
        Data rows on the sphere of radius ``sqrt(d)`` (float64), or the result of
        :func:`hadamard_power_bounds` for them (reuse it across activations: the eigenvalue
        problems depend on the data only).
    k_min : int
        Lowest order kept. ``0`` gives the tightest bound; ``2`` drops the constant and linear
        terms, which are singular once ``n > 1`` and ``n > d``.
    order, method, dps
        As in :func:`kernel_series` (default order :data:`DEFAULT_ORDER`).
    sphere_rtol : float, optional
        As in :func:`kernel_matrix`.

    Returns
    -------
    HermiteLowerBound

    Notes
    -----
    Terms beyond the truncation order K are PSD and dropped, which keeps the bound valid. The
    bound uses ``max(c_k − ε_k, 0)``, the coefficient error estimates ``ε_k`` of
    :class:`KernelSeries` (so it is as rigorous as those estimates), and the certified
    ``ℓ_k <= λ_min(T^{∘k})`` of :func:`hadamard_power_bounds`. If the power bounds were computed
    to a lower order than the series, only their orders are used (still a valid bound). The
    rounding of the final sum of non-negative terms (relative ``(K+1) u``) is not subtracted.

    Examples
    --------
    The bound lies below λ_min of the kernel matrix it bounds:

    >>> import numpy as np
    >>> from rftheory.data import sphere_points
    >>> from rftheory.kernel import hermite_lower_bound, kernel_matrix
    >>> X = sphere_points(4, 10, seed=0)
    >>> bound = hermite_lower_bound("relu", X)
    >>> K = kernel_matrix("relu", X)
    >>> lam_min = np.linalg.eigvalsh(K.values)[0]
    >>> bool(0 < bound.value <= lam_min + 4 * K.error_bound)  # ‖K − values‖_op ≤ n·error_bound
    True
    """
    k_min = _check_k_min(k_min)
    series = _resolve_series(activation, order, method, dps)
    powers = X if isinstance(X, HadamardPowerBounds) else hadamard_power_bounds(
        X, series.order, sphere_rtol=sphere_rtol)
    top = min(series.order, powers.order)
    c = tuple(float(v) for v in series.coefficients[:top + 1])
    eps = tuple(float(v) for v in series.coefficient_errors[:top + 1])
    terms = tuple(max(ck - ek, 0.0) * lk for ck, ek, lk in zip(c, eps, powers.lower))
    return HermiteLowerBound(series.activation, k_min, top, math.fsum(terms[k_min:]), terms, c,
                             float(series.second_moment), powers)
