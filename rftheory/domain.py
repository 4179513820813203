"""Where a real expression in ``z`` is defined: sound range bounds and domain checks.

The activation parser (:mod:`rftheory.activations`) calls :func:`require` for every argument of a
function that is not defined on the whole real line — ``log(u)`` needs ``u > 0``, ``sqrt(u)``
``u >= 0``, a division by ``u`` needs ``u != 0`` — so an expression that leaves its domain for some
real ``z`` is refused when it is typed, with a message saying where, instead of producing NaN,
complex numbers or poles later.

A requirement is accepted only when it is *proved* for every real ``z``:

1. by sympy's assumptions on the real symbol (``(1 + z**2).is_positive``);
2. exactly, when the argument is a polynomial in ``z``: its real roots are isolated in rational
   intervals and its sign is evaluated, in exact arithmetic, between them;
3. by :func:`expression_range`, a sound interval bound of the argument over the real line that
   knows the ranges of the elementary functions (``tanh`` in (-1, 1), ``sin`` in [-1, 1],
   ``exp`` in (0, oo), ...), so ``log(1 + tanh(z))`` and ``sqrt(2 + sin(z))`` are accepted.

Anything else is refused, conservatively: the message says whether the requirement was
disproved (the set where it fails, exactly for polynomials, or a point where it fails, checked in
30-digit arithmetic) or merely not proved.

Examples
--------
>>> from sympy import tanh
>>> from rftheory.activations import Z
>>> require(1 + tanh(Z), "positive", "log(1 + tanh(z))")  # proved by the interval (0, 2)
>>> require(Z - 1, "nonnegative", "sqrt(z - 1)")
Traceback (most recent call last):
...
rftheory.errors.ActivationError: sqrt(z - 1) is not defined for z < 1 (it needs z - 1 ≥ 0)

Notes
-----
Interval endpoints are exact rationals or ``±oo``; where an endpoint is a transcendental number
(``tanh(1/2)``) it is replaced by a rational 1e-20 (relative) outside it, computed from sympy's
30-digit evaluation, so every bound is sound. Interval arithmetic ignores correlations
(``z - z`` has the bound (-oo, oo)), so it may fail to prove a true requirement — then the
expression is refused, never wrongly accepted.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import sympy as sp
from sympy.codegen.cfunctions import expm1, log1p

from .errors import ActivationError

__all__ = ["Range", "expression_range", "proves", "require", "REQUIREMENTS"]

#: What :func:`require` can check, and how it is written in messages.
REQUIREMENTS = {"positive": "> 0", "nonnegative": "≥ 0", "nonzero": "≠ 0"}


class Range(NamedTuple):
    """A sound bound ``lo <= u(z) <= hi`` over all real z; ``*_open`` means strict inequality.

    Attributes
    ----------
    lo, hi : sympy.Expr
        The bounds (``-oo``/``oo`` when unbounded).
    lo_open, hi_open : bool
        Whether the bound is strict.
    """

    lo: sp.Expr
    hi: sp.Expr
    lo_open: bool
    hi_open: bool


_ALL = Range(-sp.oo, sp.oo, True, True)
_MARGIN = sp.Rational(1, 10**20)


def _outward(value: sp.Expr, up: bool) -> sp.Expr:
    """``value`` itself if rational or infinite, else a rational just beyond it (sound bound)."""
    if value in (sp.oo, -sp.oo) or value.is_Rational:
        return value
    if value is sp.zoo or value is sp.nan or value.has(sp.zoo, sp.nan):
        return sp.oo if up else -sp.oo
    approx = sp.N(value, 30)
    if not approx.is_real or not approx.is_finite:
        return sp.oo if up else -sp.oo
    r = sp.Rational(approx)
    step = abs(r) * _MARGIN
    return r + step if up else r - step


def _closed(value: sp.Expr) -> Range:
    return Range(_outward(value, False), _outward(value, True), False, False)


def _add(a: Range, b: Range) -> Range:
    return Range(a.lo + b.lo, a.hi + b.hi, a.lo_open or b.lo_open, a.hi_open or b.hi_open)


def _product_end(x: sp.Expr, x_open: bool, y: sp.Expr, y_open: bool) -> tuple[sp.Expr, bool]:
    """One endpoint product and whether it is only approached (0·oo counts as 0, attained)."""
    if x == 0 or y == 0:
        # 0 is reached when the zero factor is attained; 0·(approached) stays open otherwise
        return sp.S.Zero, (x_open if x == 0 else True) and (y_open if y == 0 else True)
    value = x * y
    return value, x_open or y_open or value in (sp.oo, -sp.oo)


def _mul(a: Range, b: Range) -> Range:
    ends = [_product_end(x, xo, y, yo) for x, xo in ((a.lo, a.lo_open), (a.hi, a.hi_open))
            for y, yo in ((b.lo, b.lo_open), (b.hi, b.hi_open))]
    lo = min(v for v, _ in ends)
    hi = max(v for v, _ in ends)
    # an extreme value is attained if any endpoint product achieving it is attained
    return Range(lo, hi, all(o for v, o in ends if v == lo), all(o for v, o in ends if v == hi))


def _reciprocal(a: Range) -> Range:
    if a.lo > 0 or (a.lo == 0 and a.lo_open):
        lo = sp.S.Zero if a.hi == sp.oo else _outward(1 / a.hi, False)
        hi = sp.oo if a.lo == 0 else _outward(1 / a.lo, True)
        return Range(lo, hi, a.hi_open or a.hi == sp.oo, a.lo_open or a.lo == 0)
    if a.hi < 0 or (a.hi == 0 and a.hi_open):
        neg = _reciprocal(Range(-a.hi, -a.lo, a.hi_open, a.lo_open))
        return Range(-neg.hi, -neg.lo, neg.hi_open, neg.lo_open)
    return _ALL


def _contains_zero(a: Range) -> tuple[bool, bool]:
    """(0 lies in the closure of the range, 0 is attained)."""
    inside = a.lo <= 0 <= a.hi
    attained = inside and (a.lo < 0 or not a.lo_open) and (a.hi > 0 or not a.hi_open)
    return inside, attained


def _even(a: Range, f) -> Range:
    """f even and increasing in |x| (|x|, x**2k, cosh): range from the endpoints' magnitudes."""
    inside, attained = _contains_zero(a)
    if a.lo >= 0:
        return _increasing(a, f)
    if a.hi <= 0:
        return _increasing(Range(-a.hi, -a.lo, a.hi_open, a.lo_open), f)
    far, far_open = max(((-a.lo, a.lo_open), (a.hi, a.hi_open)), key=lambda t: t[0])
    if -a.lo == a.hi:
        far_open = a.lo_open and a.hi_open
    top = _increasing(Range(sp.S.Zero, far, False, far_open), f)
    return Range(top.lo, top.hi, not attained, top.hi_open)


def _increasing(a: Range, f, lo_limit: sp.Expr | None = None, hi_limit: sp.Expr | None = None) -> Range:
    """Image of ``a`` under an increasing f; f(±oo) is sympy's limit (``lo_limit``/``hi_limit``)."""
    lo = lo_limit if (a.lo == -sp.oo and lo_limit is not None) else f(a.lo)
    hi = hi_limit if (a.hi == sp.oo and hi_limit is not None) else f(a.hi)
    return Range(_outward(lo, False), _outward(hi, True), a.lo_open or a.lo == -sp.oo,
                 a.hi_open or a.hi == sp.oo)


def _decreasing(a: Range, f) -> Range:
    """Image under a decreasing f: x ↦ f(−x) is increasing on the mirrored range."""
    return _increasing(Range(-a.hi, -a.lo, a.hi_open, a.lo_open), lambda x: f(-x))


def _hull(parts: list[Range]) -> Range:
    lo = min(p.lo for p in parts)
    hi = max(p.hi for p in parts)
    return Range(lo, hi, all(p.lo_open for p in parts if p.lo == lo),
                 all(p.hi_open for p in parts if p.hi == hi))


def _extremum(parts: list[Range], pick_max: bool) -> Range:
    if pick_max:
        lo = max(p.lo for p in parts)
        hi = max(p.hi for p in parts)
        # max(a, b) >= a.lo and >= b.lo; strict where the largest lower bound is strict
        lo_open = any(p.lo_open for p in parts if p.lo == lo)
        hi_open = all(p.hi_open for p in parts if p.hi == hi)
    else:
        lo = min(p.lo for p in parts)
        hi = min(p.hi for p in parts)
        lo_open = all(p.lo_open for p in parts if p.lo == lo)
        hi_open = any(p.hi_open for p in parts if p.hi == hi)
    return Range(lo, hi, lo_open, hi_open)


def _power(base: Range, exponent: sp.Expr) -> Range:
    if exponent.is_Integer:
        n = int(exponent)
        if n == 0:
            return Range(sp.S.One, sp.S.One, False, False)
        positive = _even(base, lambda x: x**abs(n)) if n % 2 == 0 else \
            _increasing(base, lambda x: x**abs(n))
        return positive if n > 0 else _reciprocal(positive)
    if not exponent.is_real:
        return _ALL
    # fractional power: defined for base >= 0 only (the parser has checked that)
    nonneg = Range(max(base.lo, sp.S.Zero), base.hi, base.lo_open if base.lo >= 0 else False,
                   base.hi_open)
    if nonneg.lo > nonneg.hi:
        return _ALL
    if exponent > 0:
        return _increasing(nonneg, lambda x: x**exponent)
    return _reciprocal(_increasing(nonneg, lambda x: x**(-exponent)))


# Elementary functions: monotone ones with their limits at ±oo, and fixed ranges.
_INCREASING = {
    sp.exp: (sp.S.Zero, sp.oo), sp.tanh: (-sp.S.One, sp.S.One), sp.atan: (-sp.pi / 2, sp.pi / 2),
    sp.erf: (-sp.S.One, sp.S.One), sp.sinh: (-sp.oo, sp.oo), sp.asinh: (-sp.oo, sp.oo),
    expm1: (-sp.S.One, sp.oo),
}
_FIXED = {sp.sin: (-1, 1), sp.cos: (-1, 1), sp.Heaviside: (0, 1), sp.sign: (-1, 1)}


def expression_range(expr: sp.Expr) -> Range:
    """A sound bound on the values of ``expr`` over all real ``z`` (see the module Notes).

    Parameters
    ----------
    expr : sympy.Expr
        An expression in the real symbol ``z`` (any other symbol is treated as unbounded).

    Returns
    -------
    Range
        ``lo <= expr(z) <= hi`` for every real z, strict where ``lo_open``/``hi_open``.

    Examples
    --------
    >>> import sympy as sp
    >>> from rftheory.activations import Z
    >>> expression_range(2 + sp.sin(Z))
    Range(lo=1, hi=3, lo_open=False, hi_open=False)
    >>> expression_range(sp.cosh(Z) - 1)
    Range(lo=0, hi=oo, lo_open=False, hi_open=True)
    """
    if isinstance(expr, str):  # never parse a string here (sympify would eval it)
        raise ActivationError("expression_range takes a sympy expression, not a string; parse "
                              "user input with rftheory.activations.parse_activation first")
    return _range(sp.sympify(expr, strict=True), {})  # strict: numbers only, no string parsing


def _range(e: sp.Expr, memo: dict) -> Range:
    if e in memo:
        return memo[e]
    out = _range_node(e, memo)
    memo[e] = out
    return out


def _range_node(e: sp.Expr, memo: dict) -> Range:
    if e.is_number:
        if e.is_extended_real is False or e.has(sp.zoo, sp.nan):
            return _ALL
        if e in (sp.oo, -sp.oo):
            return _ALL
        return _closed(e)
    if e.is_Symbol:
        return _ALL
    if e.is_Add or e.is_Mul:
        combine = _add if e.is_Add else _mul
        ranges = [_range(a, memo) for a in e.args]
        out = ranges[0]
        for r in ranges[1:]:
            out = combine(out, r)
        return out
    if e.is_Pow:
        base, exponent = e.args
        if not exponent.is_number:
            if base.is_number and base.is_positive:  # c**u = exp(u log c)
                return _range(sp.exp(exponent * sp.log(base)), memo)
            return _ALL
        return _power(_range(base, memo), exponent)
    f = e.func
    if f in _INCREASING:
        lo, hi = _INCREASING[f]
        return _increasing(_range(e.args[0], memo), f, lo, hi)
    if f is sp.erfc:
        return _decreasing(_range(e.args[0], memo), sp.erfc)
    if f is sp.log or f is log1p:
        arg = _range(e.args[0], memo)
        floor = 0 if f is sp.log else -1
        if arg.lo < floor or (arg.lo == floor and not arg.lo_open):
            return _ALL  # not provably inside the domain: no bound
        low_end = -sp.oo if arg.lo == floor else f(arg.lo)
        return Range(_outward(low_end, False),
                     sp.oo if arg.hi == sp.oo else _outward(f(arg.hi), True),
                     True if arg.lo == floor else arg.lo_open, arg.hi_open or arg.hi == sp.oo)
    if f is sp.Abs:
        return _even(_range(e.args[0], memo), lambda x: abs(x))
    if f is sp.cosh:
        return _even(_range(e.args[0], memo), sp.cosh)
    if f in _FIXED:
        lo, hi = _FIXED[f]
        return Range(sp.Integer(lo), sp.Integer(hi), False, False)
    if f in (sp.Max, sp.Min):
        return _extremum([_range(a, memo) for a in e.args], f is sp.Max)
    if isinstance(e, sp.Piecewise):
        return _hull([_range(piece, memo) for piece, _ in e.args])
    return _ALL


# ---------------------------------------------------------------------------------------------
# Requirements
# ---------------------------------------------------------------------------------------------

def _by_assumptions(u: sp.Expr, kind: str) -> bool:
    return {"positive": u.is_positive, "nonnegative": u.is_nonnegative,
            "nonzero": u.is_nonzero if u.is_extended_real else None}[kind] is True


def _proved_by_range(u: sp.Expr, kind: str) -> bool:
    r = expression_range(u)
    above = bool(r.lo > 0 or (r.lo == 0 and r.lo_open))
    if kind == "positive":
        return above
    if kind == "nonnegative":
        return bool(r.lo >= 0)
    return above or bool(r.hi < 0 or (r.hi == 0 and r.hi_open))


def _fails(value: sp.Expr, kind: str) -> bool:
    """Whether the real number ``value`` violates the requirement."""
    if kind == "positive":
        return bool(value <= 0)
    if kind == "nonnegative":
        return bool(value < 0)
    return bool(value == 0)


def _show(point: sp.Expr) -> str:
    text = str(point)
    if point.is_Rational or (len(text) <= 12 and "CRootOf" not in text):
        return text
    return f"{float(point):.6g}"


def _polynomial_failures(u: sp.Expr, kind: str) -> list[tuple] | None:
    """Exact set where the requirement fails, for a polynomial u with rational coefficients.

    Returns runs ``(lo, hi, lo_included, hi_included)`` (``lo == hi`` for a single point), or
    None if ``u`` is not a polynomial with rational coefficients. The sign of u is evaluated exactly at rational points
    strictly between its distinct real roots.
    """
    (z,) = u.free_symbols
    try:
        poly = sp.Poly(u, z)
    except sp.PolynomialError:
        return None
    if not (poly.domain.is_ZZ or poly.domain.is_QQ):
        return None  # sympy isolates real roots exactly over the rationals only
    roots = sp.Poly(sp.sqf_part(poly.as_expr()), z).real_roots()  # distinct, increasing
    samples = []
    for i in range(len(roots) + 1):
        if not roots:
            samples.append(sp.S.Zero)
        elif i == 0:
            samples.append(sp.floor(roots[0]) - 1)
        elif i == len(roots):
            samples.append(sp.ceiling(roots[-1]) + 1)
        else:
            mid = sp.Rational(sp.N((roots[i - 1] + roots[i]) / 2, 60))
            assert roots[i - 1] < mid < roots[i]  # distinct roots: 60 digits separate them
            samples.append(mid)
    pieces = []  # (lo, hi, fails), alternating open intervals and roots
    for i, sample in enumerate(samples):
        lo = -sp.oo if i == 0 else roots[i - 1]
        hi = sp.oo if i == len(roots) else roots[i]
        pieces.append((lo, hi, kind != "nonzero" and _fails(poly.eval(sample), kind)))
        if i < len(roots):
            pieces.append((roots[i], roots[i], kind != "nonnegative"))
    runs: list[tuple] = []
    for lo, hi, bad in pieces:
        if not bad:
            continue
        point = lo == hi
        if runs and runs[-1][1] == lo:  # continues the previous run through a shared root
            runs[-1] = (runs[-1][0], hi, runs[-1][2], point)
        else:
            runs.append((lo, hi, point, point))
    return runs


def _describe(runs: list[tuple]) -> str:
    parts = []
    for lo, hi, lo_in, hi_in in runs:
        if lo == -sp.oo and hi == sp.oo:
            return "every real z"
        if lo == hi:
            parts.append(f"z = {_show(lo)}")
        elif lo == -sp.oo:
            parts.append(f"z {'≤' if hi_in else '<'} {_show(hi)}")
        elif hi == sp.oo:
            parts.append(f"z {'≥' if lo_in else '>'} {_show(lo)}")
        else:
            parts.append(f"{_show(lo)} {'≤' if lo_in else '<'} z {'≤' if hi_in else '<'} {_show(hi)}")
    return " or ".join(parts)


def _numeric_witness(u: sp.Expr, kind: str,
                     evaluate: Callable[[sp.Expr, float], sp.Expr | None]) -> float | None:
    """A grid point in [-50, 50] (or far out) where the requirement fails, per ``evaluate``.

    ``evaluate(u, x)`` returns u at z = x as an exact-enough real number (30 digits) or None.
    For ``nonzero`` a sign change between neighbours counts (a zero, or a jump through 0).
    """
    grid = [x / 8 for x in range(-400, 401)] + [s * 10.0**k for k in range(2, 7) for s in (-1, 1)]
    grid.sort()
    values = [evaluate(u, x) for x in grid]
    failing = []
    for i, (x, value) in enumerate(zip(grid, values)):
        if value is None:
            continue
        if kind != "nonzero":
            bad = _fails(value, kind)
        else:
            right = next((v for v in values[i + 1:] if v is not None), None)
            bad = value == 0 or (right is not None and right != 0 and (value < 0) != (right < 0))
        if bad:
            failing.append(x)
    return min(failing, key=abs) if failing else None  # the failing point nearest 0


def proves(u: sp.Expr, kind: str) -> bool:
    """True if ``u`` meets ``kind`` for every real z, proved as :func:`require` proves it.

    Parameters
    ----------
    u : sympy.Expr
        An expression in ``z``.
    kind : str
        The requirement: ``"positive"``, ``"nonnegative"`` or another kind of :func:`require`.

    Returns
    -------
    bool
        True only when proved; False when false or not proved.

    Examples
    --------
    >>> import sympy as sp
    >>> from rftheory.activations import Z
    >>> proves(1 + sp.tanh(Z), "positive"), proves(Z**2, "positive")
    (True, False)
    """
    if not u.free_symbols:
        value = sp.N(u, 30)
        return bool(value.is_real) and not (u.is_zero and kind != "nonnegative") \
            and not _fails(value, kind)
    if _by_assumptions(u, kind):
        return True
    runs = _polynomial_failures(u, kind) if len(u.free_symbols) == 1 else None
    if runs is not None:
        return not runs
    return _proved_by_range(u, kind)


def require(u: sp.Expr, kind: str, node: str, *,
            evaluate: Callable[[sp.Expr, float], sp.Expr | None] | None = None) -> None:
    """Refuse ``node`` unless ``u(z)`` meets ``kind`` (positive, nonnegative, nonzero) for all real z.

    Parameters
    ----------
    u : sympy.Expr
        The argument, in one real symbol (or a number).
    kind : {"positive", "nonnegative", "nonzero"}
        The requirement ``u > 0``, ``u >= 0`` or ``u != 0``.
    node : str
        The subexpression as the user wrote it, for the message (``"log(z)"``).
    evaluate : callable, optional
        ``evaluate(u, x)``: u at z = x to ~30 digits, or None where it cannot be evaluated; used
        to find a point where an unproved requirement fails, for the message.

    Raises
    ------
    ActivationError
        One line: where the requirement fails (exact set for polynomials, a checked point
        otherwise), or that it could not be proved and the expression is refused conservatively.
    """
    need = f"{u} {REQUIREMENTS[kind]}"
    if not u.free_symbols:
        value = sp.N(u, 30)
        if value.is_real and not (u.is_zero and kind != "nonnegative") and not _fails(value, kind):
            return
        if kind == "nonzero":
            raise ActivationError(f"{node} divides by zero")
        raise ActivationError(f"{node} is not a real number (it needs {need})")
    if _by_assumptions(u, kind):
        return
    single = len(u.free_symbols) == 1
    runs = _polynomial_failures(u, kind) if single else None
    if runs is not None:
        if not runs:
            return
        where = _describe(runs)
        if kind == "nonzero":
            raise ActivationError(f"{node} has a pole at {where} ({u} vanishes there)")
        raise ActivationError(f"{node} is not defined for {where} (it needs {need})")
    if _proved_by_range(u, kind):
        return
    point = _numeric_witness(u, kind, evaluate) if single and evaluate else None
    if point is not None:
        if kind == "nonzero":
            raise ActivationError(f"{node} has a pole: {u} vanishes or changes sign near "
                                  f"z = {point:g}")
        raise ActivationError(f"{node} is not defined for every real z: it needs {need}, which "
                              f"fails at z = {point:g}")
    raise ActivationError(
        f"{node} is refused conservatively: it needs {need} for every real z, which neither "
        "sympy's assumptions nor interval bounds prove (write the argument so that its sign is "
        "evident, e.g. 1 + z**2, exp(u), 2 + sin(u))")
