"""Does an activation satisfy the conditions of the paper's theorems? Verdicts with their numbers.

:func:`activation_report` checks, for one activation φ:

* **Lipschitz** — φ is Lipschitz, with the constant sup|φ'| where it can be established;
* **non-linearity** — Σ_{k>=2} μ_k² = E[φ²] − μ_0² − μ_1² > 0 (φ is not affine in L²);
* **parity** — which Hermite coefficients vanish, and why;
* **sign identifiability** — the paper's criterion: some odd μ_k with k >= 3 is non-zero. ReLU
  fails it (its odd part is z/2, so every odd coefficient of order >= 3 vanishes); relu + tanh
  passes. Our sign check (:mod:`rftheory.claims.sign`) finds that failing it does not by itself make
  x and −x interchangeable — successful ReLU reconstructions keep every sign — while an odd or
  even φ (the parity verdict) loses the sign exactly, since then φ(−Vx) = ±φ(Vx).

Each verdict says whether it rests on a symbolic argument (sympy, exact for all orders), on exact
coefficients, or on numerics (and then to which precision, from the coefficients' error
estimates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np
import scipy.optimize
import sympy as sp

from .activations import Activation, Z, get_activation
from .deprecation import keyword_only_after
from .hermite import (
    HermiteCoefficients,
    evaluate_within_budget,
    hermite_coefficients,
    piecewise_regions,
)

__all__ = ["Verdict", "ActivationReport", "activation_report"]

#: A coefficient counts as numerically non-zero when it exceeds this many error estimates.
NONZERO_MARGIN = 10.0
#: A coefficient counts as numerically zero when it is within this many error estimates.
ZERO_MARGIN = 3.0


@dataclass(frozen=True)
class Verdict:
    """One condition checked on an activation.

    Attributes
    ----------
    holds : bool or None
        ``True`` / ``False``; ``None`` when neither could be established.
    basis : str
        ``"symbolic"`` (sympy argument valid for all orders), ``"exact coefficients"``,
        ``"numeric"`` (floating point, to the precision in ``numbers``), or a combination.
    summary : str
        One line saying what was found.
    numbers : dict
        The numbers behind the verdict.
    """

    holds: bool | None
    basis: str
    summary: str
    numbers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ActivationReport:
    """Hermite coefficients of an activation and the theorem-condition verdicts.

    JSON-serialisable with :func:`rftheory.output.to_jsonable`. Floating-point fields
    hold float64 roundings; ``coefficient_text`` holds the values in the method's own precision
    (exact sympy form, mpmath digits, or 17 significant digits).

    Attributes
    ----------
    activation, expression : str
        The name given and the expression of φ in ``z``.
    method : str
        How the coefficients were computed (``"exact"``, ``"mpmath"``, ``"fast"``).
    order : int
        The highest k.
    dps : int or None
        mpmath's decimal digits (None for the other methods).
    coefficients, coefficient_text, errors : tuple
        μ_0 … μ_order as floats, as text in the method's precision, and their error bounds.
    second_moment, second_moment_text, second_moment_error
        E[φ(g)²] = Σ_k μ_k², as a float and as text, and its error bound.
    tail_mass, tail_mass_error : float
        Σ_{k > order} μ_k² and its error bound.
    notes : str
        What the computation could not decide, in words.
    lipschitz, nonlinearity, parity, sign_identifiability : Verdict
        The theorem-condition verdicts.
    """

    activation: str
    expression: str
    method: str
    order: int
    dps: int | None
    coefficients: tuple
    coefficient_text: tuple
    errors: tuple
    second_moment: float | None
    second_moment_text: str | None
    second_moment_error: float
    tail_mass: float | None
    tail_mass_error: float
    notes: str
    lipschitz: Verdict
    nonlinearity: Verdict
    parity: Verdict
    sign_identifiability: Verdict

    @property
    def verdicts(self) -> dict[str, Verdict]:
        """The four verdicts by name."""
        return {"lipschitz": self.lipschitz, "nonlinearity": self.nonlinearity,
                "parity": self.parity, "sign_identifiability": self.sign_identifiability}


# ---------------------------------------------------------------------------------------------
# Symbolic facts (run in a child process under a step bound: simplify, limit and solveset can hang)
# ---------------------------------------------------------------------------------------------

def _symbolic_parity(expr: sp.Expr) -> dict:
    """Odd and even parts of φ, simplified; their polynomial degree if they are polynomials."""
    mirrored = expr.subs(Z, -Z)
    out = {}
    for name, part in (("odd", (expr - mirrored) / 2), ("even", (expr + mirrored) / 2)):
        simple = sp.simplify(sp.piecewise_fold(part.rewrite(sp.Piecewise)))
        degree = sp.Poly(simple, Z).degree() if simple.is_polynomial(Z) else None
        if simple == 0:
            degree = -1
        out[name] = (simple, degree)
    return out


def _symbolic_affine(expr: sp.Expr) -> bool:
    simple = sp.simplify(sp.piecewise_fold(expr.rewrite(sp.Piecewise)))
    return bool(simple.is_polynomial(Z) and sp.Poly(simple, Z).degree() <= 1)


def _is_infinite(value: sp.Expr) -> bool:
    return value in (sp.oo, -sp.oo, sp.zoo) or (value.is_infinite is True)


def _symbolic_lipschitz(expr: sp.Expr) -> dict | None:
    """Exact sup|φ'| (or proof that φ is not Lipschitz) from the smooth pieces of φ.

    On each piece: sup|p'| over its interval is the largest of |p'| at the zeros of p'' inside it
    and the one-sided limits of p' at its ends. Between pieces, φ must not jump.
    """
    regions = piecewise_regions(expr)
    if regions is None:
        return None
    spans = sorted(((a, b, piece) for piece, intervals in regions for a, b in intervals),
                   key=lambda t: float(t[0]) if t[0].is_finite else -math.inf)
    for (a1, b1, left), (a2, b2, right) in zip(spans[:-1], spans[1:]):
        if b1 == a2 and b1.is_finite:
            jump = sp.simplify(sp.limit(right, Z, b1, "+") - sp.limit(left, Z, b1, "-"))
            if jump != 0:
                return {"lipschitz": False, "constant": None,
                        "reason": f"φ jumps by {jump} at z = {b1}"}
    candidates: list[sp.Expr] = []
    for a, b, piece in spans:
        d1 = sp.diff(piece, Z)
        d2 = sp.diff(d1, Z)
        for end, direction in ((a, "+"), (b, "-")):
            value = sp.limit(d1, Z, end, direction)
            if isinstance(value, sp.AccumBounds):
                value = sp.Max(abs(value.min), abs(value.max))
            if _is_infinite(value):
                return {"lipschitz": False, "constant": None,
                        "reason": f"φ'(z) is unbounded as z -> {end}"}
            if value.has(sp.nan, sp.Limit):
                return None
            candidates.append(value)
        if sp.simplify(d2) != 0:
            critical = sp.solveset(d2, Z, sp.Interval(a, b))
            if not isinstance(critical, sp.FiniteSet):
                return None
            candidates.extend(d1.subs(Z, c) for c in critical)
    constant = sp.simplify(sp.Max(*[sp.Abs(c) for c in candidates]))
    return {"lipschitz": True, "constant": constant, "reason": "sup|φ'| over the smooth pieces"}


def _symbolic_job(kind: str, expr: sp.Expr) -> Any:
    if kind == "parity":
        return _symbolic_parity(expr)
    if kind == "affine":
        return _symbolic_affine(expr)
    return _symbolic_lipschitz(expr)


# ---------------------------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------------------------

def _numeric_lipschitz(act: Activation) -> Verdict:
    radius, count = 40.0, 400_001
    grid = np.linspace(-radius, radius, count)
    kinks = np.asarray(act.kinks, dtype=np.float64)
    delta = 1e-9
    with np.errstate(all="ignore"):
        slope = np.abs(np.asarray(act.derivative(grid), dtype=np.float64))
        near = np.concatenate([kinks - delta, kinks + delta]) if kinks.size else np.zeros(0)
        near_slope = np.abs(np.asarray(act.derivative(near), dtype=np.float64)) if near.size else near
        far = np.concatenate([-(10.0 ** np.arange(2, 9)), 10.0 ** np.arange(2, 9)])
        far_slope = np.abs(np.asarray(act.derivative(far), dtype=np.float64))
        jumps = (np.abs(np.asarray(act(kinks + delta), dtype=np.float64)
                        - np.asarray(act(kinks - delta), dtype=np.float64)) if kinks.size else kinks)
    sup_grid = float(max(np.max(slope), np.max(near_slope) if near_slope.size else 0.0))
    # Polish the best grid point with a bounded scalar search within one grid step (skipped
    # next to a kink, where |φ'| need not be smooth).
    i = int(np.argmax(slope))
    step = grid[1] - grid[0]
    if 0 < i < count - 1 and not np.any(np.abs(kinks - grid[i]) <= step):
        with np.errstate(all="ignore"):
            best = scipy.optimize.minimize_scalar(
                lambda t: -abs(float(act.derivative(np.array([t]))[0])),
                bounds=(grid[i] - step, grid[i] + step), method="bounded",
                options={"xatol": 1e-12})
        sup_grid = max(sup_grid, float(-best.fun))
    numbers = {"sup_abs_derivative_on_grid": sup_grid,
               "grid": f"{count} points on [-{radius:g}, {radius:g}] plus kinks ± {delta:g}",
               "abs_derivative_far": {f"{z:g}": float(s) for z, s in zip(far, far_slope)}}
    # A jump at a kink: |φ(c+δ) − φ(c−δ)| far above what the largest slope allows over 2δ.
    if jumps.size and np.max(jumps) > 1e3 * (2 * delta) * max(sup_grid, 1.0) + 1e-12:
        c = float(kinks[int(np.argmax(jumps))])
        numbers["jump"] = float(np.max(jumps))
        return Verdict(False, "numeric", f"not Lipschitz: φ jumps by {np.max(jumps):.6g} at z = {c:g}",
                       numbers)
    if not np.all(np.isfinite(far_slope)) or np.max(far_slope) > 1.01 * sup_grid + 1e-12:
        return Verdict(False, "numeric",
                       f"not Lipschitz: |φ'| grows beyond the grid (|φ'(z)| up to {np.max(far_slope):.3g} "
                       f"at |z| <= 1e8, vs {sup_grid:.6g} on [-{radius:g}, {radius:g}])", numbers)
    return Verdict(True, "numeric",
                   f"Lipschitz with constant ≈ {sup_grid:.12g} (max |φ'| on a grid; no growth up to |z| = 1e8)",
                   numbers | {"constant": sup_grid})


def _lipschitz_verdict(act: Activation, symbolic: dict | None) -> Verdict:
    if symbolic is None:
        return _numeric_lipschitz(act)
    if not symbolic["lipschitz"]:
        return Verdict(False, "symbolic", f"not Lipschitz: {symbolic['reason']}",
                       {"constant": None, "reason": symbolic["reason"]})
    constant = symbolic["constant"]
    value = float(sp.N(constant, 20))
    return Verdict(True, "symbolic", f"Lipschitz with constant sup|φ'| = {constant} ≈ {value:.12g}",
                   {"constant": value, "constant_exact": str(constant), "reason": symbolic["reason"]})


def _float_or_nan(value: Any) -> float:
    if value is None:
        return math.nan
    if isinstance(value, sp.Basic):
        return float(sp.N(value, 30))
    return float(value)


def _nonlinearity_verdict(coeffs: HermiteCoefficients, affine: bool | None) -> Verdict:
    mu = coeffs.as_float()
    err = np.asarray(coeffs.errors, dtype=np.float64)
    numbers: dict[str, Any] = {
        "second_moment": _float_or_nan(coeffs.second_moment),
        "second_moment_error": coeffs.second_moment_error,
        "mu_0": float(mu[0]), "mu_1": float(mu[1]) if mu.size > 1 else None,
    }
    # Lower bound without cancellation: the computed part of the non-linear mass.
    partial = partial_err = None
    if mu.size > 2:
        known = np.isfinite(mu[2:])
        partial = float(np.sum(mu[2:][known] ** 2))
        partial_err = float(np.sum(2 * np.abs(mu[2:][known]) * err[2:][known] + err[2:][known] ** 2))
        numbers |= {"sum_mu_k_squared_2_to_K": partial, "sum_error": partial_err}
    # The whole non-linear mass by Parseval: E[φ²] − μ_0² − μ_1².
    rest = rest_err = None
    if coeffs.second_moment is not None and mu.size > 1:
        rest = float(numbers["second_moment"] - mu[0] ** 2 - mu[1] ** 2)
        rest_err = float(coeffs.second_moment_error + 2 * abs(mu[0]) * err[0] + 2 * abs(mu[1]) * err[1]
                         + 4 * np.finfo(np.float64).eps * numbers["second_moment"])
        numbers |= {"nonlinear_mass": rest, "nonlinear_mass_error": rest_err}
    if affine:
        return Verdict(False, "symbolic", "φ is affine: Σ_{k≥2} μ_k² = 0", numbers)
    if coeffs.method == "exact" and any(v is not None and v != 0 for v in coeffs.values[2:]):
        return Verdict(True, "exact coefficients",
                       f"non-linear: Σ_{{k=2..K}} μ_k² = {partial:.12g} > 0 (exact values)", numbers)
    if partial is not None and partial > NONZERO_MARGIN * partial_err and partial > 0:
        return Verdict(True, "numeric",
                       f"non-linear: Σ_{{k=2..K}} μ_k² = {partial:.12g} ± {partial_err:.2g} > 0", numbers)
    if rest is not None and rest > NONZERO_MARGIN * rest_err:
        return Verdict(True, "numeric",
                       f"non-linear: E[φ²] − μ_0² − μ_1² = {rest:.12g} ± {rest_err:.2g} > 0", numbers)
    return Verdict(None, "numeric",
                   "undetermined: Σ_{k≥2} μ_k² is not distinguishable from 0 at this precision", numbers)


def _vanishing_rules(parity: dict | None) -> tuple[list[str], Any]:
    """Human rules and a predicate k -> bool for coefficients proven to vanish."""
    if parity is None:
        return [], lambda k: False
    rules = []
    odd, odd_degree = parity["odd"]
    even, even_degree = parity["even"]
    if odd_degree is not None:
        if odd_degree < 0:
            rules.append("μ_k = 0 for every odd k (φ is even)")
        else:
            rules.append(f"μ_k = 0 for odd k > {odd_degree} (odd part of φ is {odd}, "
                         f"a polynomial of degree {odd_degree})")
    if even_degree is not None:
        if even_degree < 0:
            rules.append("μ_k = 0 for every even k (φ is odd)")
        else:
            rules.append(f"μ_k = 0 for even k > {even_degree} (even part of φ is {even}, "
                         f"a polynomial of degree {even_degree})")

    def vanishes(k: int) -> bool:
        degree = odd_degree if k % 2 else even_degree
        return degree is not None and k > degree

    return rules, vanishes


def _is_zero(coeffs: HermiteCoefficients, k: int) -> bool | None:
    """Exactly / numerically zero (True), clearly non-zero (False), undecided or unknown (None)."""
    value = coeffs.values[k]
    if value is None:
        return None
    if coeffs.method == "exact":
        return bool(value == 0)
    size, err = abs(float(value)), coeffs.errors[k]
    if size <= ZERO_MARGIN * err:
        return True
    if size > NONZERO_MARGIN * err:
        return False
    return None


def _parity_verdict(coeffs: HermiteCoefficients, parity: dict | None) -> Verdict:
    rules, vanishes = _vanishing_rules(parity)
    order = coeffs.order
    proven = [k for k in range(order + 1) if vanishes(k)]
    zeros = [k for k in range(order + 1) if _is_zero(coeffs, k) is True]
    consistent = all(_is_zero(coeffs, k) in (True, None) for k in proven)
    precision = None if coeffs.method == "exact" else float(ZERO_MARGIN * max(coeffs.errors))
    numbers = {
        "proven_zero": proven,
        "numerically_zero" if coeffs.method != "exact" else "exactly_zero": zeros,
        "zero_but_not_proven": [k for k in zeros if k not in proven],
        "zero_test": (f"|μ_k| <= {ZERO_MARGIN:g} × error estimate (largest: {precision:.2g})"
                      if precision is not None else "exact value == 0"),
        "consistent_with_symbolic": consistent,
        "rules": rules,
    }
    if parity is None:
        return Verdict(None, "numeric",
                       f"symbolic parity check did not finish; coefficients zero within their error: {zeros}",
                       numbers)
    symmetry = ("even" if parity["odd"][1] == -1 else "odd" if parity["even"][1] == -1 else "neither")
    numbers["symmetry"] = symmetry
    text = "; ".join(rules) if rules else "no coefficient is forced to vanish by symmetry"
    check = "numbers agree" if consistent else "NUMBERS DISAGREE with the symbolic rule"
    if symmetry != "neither":
        # φ(−Vx) = ±φ(Vx): −x_i spans the same feature line as x_i, so no reconstruction can
        # recover the signs (rftheory.claims.sign).
        text += "; so −x has the same features as x up to sign: signs are not recoverable"
    return Verdict(symmetry != "neither", "symbolic", f"φ is {symmetry}: {text} ({check})", numbers)


def _sign_verdict(coeffs: HermiteCoefficients, parity: dict | None,
                  exact_odd: dict[int, str] | None) -> Verdict:
    order = coeffs.order
    odd_orders = list(range(3, order + 1, 2))
    numbers: dict[str, Any] = {"odd_orders_checked": odd_orders}
    if exact_odd is not None:
        numbers["exact_odd_coefficients"] = exact_odd
    if parity is not None:
        odd, odd_degree = parity["odd"]
        if odd_degree is not None and odd_degree <= 1:
            numbers["odd_part"] = str(odd)
            basis = "symbolic + exact coefficients" if exact_odd is not None else "symbolic"
            return Verdict(False, basis,
                           f"fails the paper's criterion: the odd part of φ is {odd}, so μ_k = 0 "
                           "for every odd k ≥ 3 (in our runs this alone does not swap x and −x; "
                           "an odd or even φ does: see the parity verdict and paper_notes/sign.md)",
                           numbers)
    for k in odd_orders:
        zero = _is_zero(coeffs, k)
        if zero is False:
            value = coeffs.values[k]
            numbers |= {"witness_order": k, "witness_value": _float_or_nan(value),
                        "witness_error": coeffs.errors[k]}
            basis = "exact coefficients" if coeffs.method == "exact" else "numeric"
            return Verdict(True, basis,
                           f"passes: μ_{k} = {_float_or_nan(value):.6g} ≠ 0"
                           + ("" if coeffs.method == "exact" else f" (error ≤ {coeffs.errors[k]:.2g})"),
                           numbers)
    if not odd_orders:
        return Verdict(None, "numeric", "undetermined: order K < 3, no odd coefficient of order ≥ 3 computed",
                       numbers)
    return Verdict(None, "numeric",
                   f"undetermined: no odd μ_k (3 ≤ k ≤ {order}) is distinguishable from 0 and no symbolic "
                   "argument proves they all vanish", numbers)


def _text(value: Any, method: str, dps: int | None) -> str:
    if value is None:
        return "unknown"
    if method == "exact":
        return str(value)
    if method == "mpmath":
        return mpmath.nstr(value, dps, min_fixed=-3, max_fixed=3)
    return f"{float(value):.17g}"


@keyword_only_after(2, ("method", "dps"))
def activation_report(
    activation: "str | Activation",
    order: int = 20,
    *,
    method: str = "fast",
    dps: int = 30,
    time_budget: float = 10.0,
) -> ActivationReport:
    """Hermite coefficients of an activation and whether it meets the theorems' conditions.

    Parameters
    ----------
    activation : str or Activation
        Registry name or expression in ``z``.
    order : int
        Highest Hermite order K computed.
    method : {"fast", "mpmath", "exact"}
        How the coefficients are computed (see :func:`rftheory.hermite.hermite_coefficients`).
    dps : int
        mpmath digits for ``method="mpmath"``.
    time_budget : float, keyword-only
        Work allowed to each sympy stage (the exact method's ``sympy.integrate`` fallback, and
        the symbolic parity/affinity/Lipschitz analysis), in nominal seconds converted to a
        deterministic count of steps (:data:`rftheory.hermite.STEPS_PER_SECOND` per second), so
        the verdicts do not depend on the machine's load.

    Returns
    -------
    ActivationReport

    Notes
    -----
    *Lipschitz*: symbolic when φ splits into pieces whose p'' has finitely many real zeros that
    sympy's ``solveset`` finds (sup|φ'| is then the largest |p'| at those zeros and at one-sided
    limits at the pieces' ends; a jump between pieces means not Lipschitz). Otherwise numeric:
    max |φ'| on 400001 points of [−40, 40] plus the kinks ± 1e-9, the best grid point polished by
    a bounded scalar search, and a growth check of |φ'| at |z| = 1e2..1e8 (a larger value there
    means not Lipschitz). The numeric constant is a lower bound on sup|φ'|; it misses maxima
    narrower than the grid spacing 2e-4 or outside [−40, 40].

    *Zero tests*: a numeric coefficient is "zero" when |μ_k| <= 3 × its error estimate and
    "non-zero" when |μ_k| > 10 × it; in between it is undecided.

    *Parity*: the odd and even parts (φ(z) ∓ φ(−z))/2 are simplified with sympy; if one is a
    polynomial of degree d, every coefficient of that parity with k > d vanishes, for all k
    (the other part only feeds the other parity). This is what proves ReLU's odd coefficients of
    order >= 3 vanish (its odd part is z/2). For piecewise-polynomial φ the exact closed-form odd
    coefficients are also reported.

    Examples
    --------
    >>> from rftheory.verdicts import activation_report
    >>> report = activation_report("relu", order=8)
    >>> report.lipschitz.holds, report.nonlinearity.holds, report.sign_identifiability.holds
    (True, True, False)
    >>> report.parity.numbers["symmetry"]
    'neither'
    """
    act = get_activation(activation)
    coeffs = hermite_coefficients(act, order, method=method, dps=dps, time_budget=time_budget)
    parity, affine, lipschitz = evaluate_within_budget(
        _symbolic_job, [("parity", act.expr), ("affine", act.expr), ("lipschitz", act.expr)],
        time_budget)
    exact_odd = None
    if act.is_piecewise_polynomial and order >= 3:
        exact = coeffs if method == "exact" else hermite_coefficients(act, order, method="exact",
                                                                       time_budget=0)
        exact_odd = {k: str(exact.values[k]) for k in range(3, order + 1, 2)}
    tail = coeffs.tail_mass
    return ActivationReport(
        activation=act.name,
        expression=str(act.expr),
        method=method,
        order=coeffs.order,
        dps=coeffs.dps,
        coefficients=tuple(float(v) for v in coeffs.as_float()),
        coefficient_text=tuple(_text(v, method, coeffs.dps) for v in coeffs.values),
        errors=tuple(float(e) for e in coeffs.errors),
        second_moment=None if coeffs.second_moment is None else _float_or_nan(coeffs.second_moment),
        second_moment_text=None if coeffs.second_moment is None else _text(coeffs.second_moment, method, coeffs.dps),
        second_moment_error=float(coeffs.second_moment_error),
        tail_mass=None if tail is None else _float_or_nan(tail),
        tail_mass_error=float(coeffs.tail_mass_error),
        notes=coeffs.notes,
        lipschitz=_lipschitz_verdict(act, lipschitz),
        nonlinearity=_nonlinearity_verdict(coeffs, affine),
        parity=_parity_verdict(coeffs, parity),
        sign_identifiability=_sign_verdict(coeffs, parity, exact_odd),
    )
