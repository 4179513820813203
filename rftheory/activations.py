"""Activation functions: exact sympy forms, safe parsing, numeric forms and derivatives.

An :class:`Activation` holds one sympy expression in the real variable ``z``. Everything else —
array evaluation on any array-API namespace (numpy, CuPy, ``array_api_strict``), mpmath
evaluation, the derivative and the kink locations — is derived from that expression, so the exact,
high-precision and fast code paths can never disagree about *which* function they use.

User strings are parsed by :func:`parse_activation`, which walks Python's AST and builds the
sympy expression node by node from a whitelist. No user string ever reaches ``eval``, ``exec``,
``sympify`` or ``parse_expr``.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable

import mpmath
import sympy as sp

from .errors import ActivationError, BackendError

__all__ = [
    "Activation",
    "Z",
    "ACTIVATIONS",
    "get_activation",
    "parse_activation",
    "MAX_EXPRESSION_LENGTH",
    "MAX_EXPRESSION_DEPTH",
]

#: The variable of every activation expression.
Z = sp.Symbol("z", real=True)

#: Longest accepted activation string (characters).
MAX_EXPRESSION_LENGTH = 400
#: Deepest accepted expression tree (AST nodes from root to leaf).
MAX_EXPRESSION_DEPTH = 40
#: Largest accepted magnitude of a numeric literal or exponent; keeps sympy's exact arithmetic
#: (e.g. ``10**10**10``) from running away.
MAX_LITERAL = 1e6
MAX_EXPONENT = 64
MAX_HERMITE_DEGREE = 400


# ---------------------------------------------------------------------------------------------
# Safe parser
# ---------------------------------------------------------------------------------------------

def _hermite_normalised(k: sp.Expr, x: sp.Expr) -> sp.Expr:
    if not (k.is_Integer and 0 <= int(k) <= MAX_HERMITE_DEGREE):
        raise ActivationError(
            f"hermite(k, z) needs an integer degree 0 <= k <= {MAX_HERMITE_DEGREE}, got {k}"
        )
    k = int(k)
    return sp.expand(sp.hermite_prob(k, x)) / sp.sqrt(sp.factorial(k))


def _leaky_relu(x: sp.Expr, a: sp.Expr = sp.Rational(1, 100)) -> sp.Expr:
    return sp.Max(x, 0) + a * sp.Min(x, 0)


def _sigmoid(x: sp.Expr) -> sp.Expr:
    return 1 / (1 + sp.exp(-x))


#: Whitelisted functions: name -> (builder, number of argument expressions, indices of arguments
#: that must be numeric constants).
_FUNCTIONS: dict[str, tuple[Callable[..., sp.Expr], tuple[int, ...], tuple[int, ...]]] = {
    "relu": (lambda x: sp.Max(x, 0), (1,), ()),
    "leaky_relu": (_leaky_relu, (1, 2), (1,)),
    "abs": (sp.Abs, (1,), ()),
    "max": (sp.Max, (2,), ()),
    "min": (sp.Min, (2,), ()),
    "heaviside": (lambda x: sp.Heaviside(x), (1,), ()),
    "step": (lambda x: sp.Heaviside(x), (1,), ()),
    "sign": (sp.sign, (1,), ()),
    "tanh": (sp.tanh, (1,), ()),
    "sinh": (sp.sinh, (1,), ()),
    "cosh": (sp.cosh, (1,), ()),
    "exp": (sp.exp, (1,), ()),
    "sin": (sp.sin, (1,), ()),
    "cos": (sp.cos, (1,), ()),
    "atan": (sp.atan, (1,), ()),
    "arctan": (sp.atan, (1,), ()),
    "erf": (sp.erf, (1,), ()),
    "sigmoid": (_sigmoid, (1,), ()),
    "silu": (lambda x: x * _sigmoid(x), (1,), ()),
    "swish": (lambda x: x * _sigmoid(x), (1,), ()),
    "softplus": (lambda x: sp.log(1 + sp.exp(x)), (1,), ()),
    "gelu": (lambda x: x * (1 + sp.erf(x / sp.sqrt(2))) / 2, (1,), ()),
    "hermite": (_hermite_normalised, (2,), (0,)),
    "h": (_hermite_normalised, (2,), (0,)),
}
_CONSTANTS = {"pi": sp.pi, "e": sp.E}
_BINOPS: dict[type, Callable[[sp.Expr, sp.Expr], sp.Expr]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}


def _number(value: Any) -> sp.Expr:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ActivationError(f"only real numbers are allowed as literals, got {value!r}")
    if not math.isfinite(value) or abs(value) > MAX_LITERAL:
        raise ActivationError(f"numeric literal {value!r} is out of range (|x| <= {MAX_LITERAL:g})")
    if isinstance(value, int):
        return sp.Integer(value)
    # Keep decimal literals exact (0.5 -> 1/2, 0.1 -> 1/10) so exact Hermite forms stay exact.
    return sp.Rational(repr(value))


class _Builder:
    """Translate a whitelisted Python AST into a sympy expression (never evaluating Python)."""

    def build(self, node: ast.AST, depth: int = 0) -> sp.Expr:
        if depth > MAX_EXPRESSION_DEPTH:
            raise ActivationError(f"expression is nested too deeply (limit {MAX_EXPRESSION_DEPTH})")
        if isinstance(node, ast.Expression):
            return self.build(node.body, depth + 1)
        if isinstance(node, ast.Constant):
            return _number(node.value)
        if isinstance(node, ast.Name):
            if node.id == "z":
                return Z
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            if node.id in _FUNCTIONS:
                raise ActivationError(f"function {node.id!r} must be called, e.g. {node.id}(z)")
            raise ActivationError(f"unknown name {node.id!r} (the variable is 'z')")
        if isinstance(node, ast.UnaryOp):
            operand = self.build(node.operand, depth + 1)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            raise ActivationError(f"operator {type(node.op).__name__} is not allowed")
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise ActivationError(f"operator {type(node.op).__name__} is not allowed")
            left = self.build(node.left, depth + 1)
            right = self.build(node.right, depth + 1)
            if isinstance(node.op, ast.Pow):
                if not right.is_number:
                    raise ActivationError("exponents must be numeric constants (z**z is refused)")
                if abs(float(right)) > MAX_EXPONENT:
                    raise ActivationError(f"exponent {right} is too large (|exponent| <= {MAX_EXPONENT})")
                if left.is_number and abs(float(left)) > MAX_LITERAL:
                    raise ActivationError("power of a large constant refused")
            return op(left, right)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        raise ActivationError(f"{type(node).__name__} is not allowed in an activation expression")

    def _call(self, node: ast.Call, depth: int) -> sp.Expr:
        if not isinstance(node.func, ast.Name):
            raise ActivationError("only calls of whitelisted function names are allowed "
                                  "(attribute access and computed calls are refused)")
        name = node.func.id
        if name not in _FUNCTIONS:
            known = ", ".join(sorted(_FUNCTIONS))
            raise ActivationError(f"unknown function {name!r}; allowed: {known}")
        if node.keywords:
            raise ActivationError(f"keyword arguments are not allowed in {name}(...)")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ActivationError(f"starred arguments are not allowed in {name}(...)")
        builder, arities, constant_args = _FUNCTIONS[name]
        if len(node.args) not in arities:
            want = " or ".join(str(a) for a in arities)
            raise ActivationError(f"{name}() takes {want} argument(s), got {len(node.args)}")
        args = [self.build(a, depth + 1) for a in node.args]
        for i in constant_args:
            if i < len(args) and not args[i].is_number:
                raise ActivationError(f"argument {i + 1} of {name}() must be a numeric constant")
        return builder(*args)


def parse_activation(text: str) -> sp.Expr:
    """Parse an activation string in the variable ``z`` into a sympy expression, safely.

    Parameters
    ----------
    text : str
        Arithmetic (``+ - * / **``), real numeric literals, the variable ``z``, the constants
        ``pi`` and ``e``, and calls of whitelisted functions (``relu``, ``tanh``, ``erf``, ...,
        ``hermite(k, z)`` for the normalised Hermite polynomial ``He_k(z)/sqrt(k!)``).

    Returns
    -------
    sympy.Expr
        The expression in the real symbol :data:`Z`.

    Raises
    ------
    ActivationError
        For anything outside the whitelist, naming what was refused. No part of ``text`` is ever
        evaluated as Python.
    """
    if not isinstance(text, str):
        raise ActivationError(f"activation must be a string, got {type(text).__name__}")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ActivationError(
            f"activation string is too long ({len(text)} > {MAX_EXPRESSION_LENGTH} characters)"
        )
    if not text.strip():
        raise ActivationError("activation string is empty")
    if "__" in text:
        raise ActivationError("dunder names are not allowed")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise ActivationError(f"cannot parse activation {text!r}: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    except (RecursionError, MemoryError):
        raise ActivationError("expression is nested too deeply") from None
    expr = _Builder().build(tree)
    if not expr.has(Z):
        raise ActivationError("activation must depend on z (a constant is not an activation)")
    return expr


# ---------------------------------------------------------------------------------------------
# Numeric evaluation (array API and mpmath), compiled from the sympy tree
# ---------------------------------------------------------------------------------------------

def _special_erf(xp: Any) -> Callable[[Any], Any]:
    name = getattr(xp, "__name__", "")
    if "numpy" in name:
        import scipy.special

        return scipy.special.erf
    if "cupy" in name:
        import cupyx.scipy.special

        return cupyx.scipy.special.erf
    raise BackendError(f"erf is not available for array namespace {name!r} (numpy or CuPy only)")


class _ArrayOps:
    """Evaluation rules for array-API namespaces."""

    def __init__(self, xp: Any, x: Any):
        self.xp = xp
        self.x = x

    def const(self, value: float) -> Any:
        return self.xp.asarray(value, dtype=self.x.dtype, device=_device(self.x))

    def lift(self, v: Any) -> Any:
        return v if not isinstance(v, float) else self.const(v)

    def apply(self, head: Any, args: list[Any], expr: sp.Expr) -> Any:
        xp = self.xp
        if head is sp.Add:
            out = args[0]
            for a in args[1:]:
                out = out + a
            return out
        if head is sp.Mul:
            out = args[0]
            for a in args[1:]:
                out = out * a
            return out
        if head is sp.Pow:
            base, exponent = args
            e = float(expr.exp)
            if e == 0.5:
                return xp.sqrt(self.lift(base))
            if e == int(e):
                n = int(e)
                if n >= 0:
                    return base**n
                return 1.0 / (base ** (-n))
            return self.lift(base) ** e
        if head is sp.Max or head is sp.Min:
            out = self.lift(args[0])
            pick = xp.maximum if head is sp.Max else xp.minimum
            for a in args[1:]:
                out = pick(out, self.lift(a))
            return out
        if head is sp.Abs:
            return xp.abs(self.lift(args[0]))
        if head is sp.sign:
            return xp.sign(self.lift(args[0]))
        if head is sp.Heaviside:
            a = self.lift(args[0])
            h0 = float(expr.args[1]) if len(expr.args) > 1 else 0.5
            return xp.where(a > 0, self.const(1.0), xp.where(a < 0, self.const(0.0), self.const(h0)))
        if head is sp.DiracDelta:
            # Derivative of a jump: zero almost everywhere (kinks have Gaussian measure zero).
            return xp.zeros_like(self.x)
        if head is sp.log:
            inner = expr.args[0]
            # log(1 + exp(u)) overflows for large u; logaddexp(0, u) is the same function, stably.
            if inner.is_Add and len(inner.args) == 2 and sp.S.One in inner.args:
                other = inner.args[1] if inner.args[0] == 1 else inner.args[0]
                if isinstance(other, sp.exp):
                    u = self.lift(_compile_array(other.args[0], self))
                    return xp.logaddexp(xp.zeros_like(u), u)
            return xp.log(self.lift(args[0]))
        if head is sp.erf:
            return _special_erf(xp)(self.lift(args[0]))
        simple = {sp.tanh: "tanh", sp.sinh: "sinh", sp.cosh: "cosh", sp.exp: "exp",
                  sp.sin: "sin", sp.cos: "cos", sp.atan: "atan"}
        if head in simple:
            return getattr(xp, simple[head])(self.lift(args[0]))
        raise BackendError(f"no numeric rule for {head.__name__} in activation {expr}")


def _device(x: Any) -> Any:
    from array_api_compat import device

    return device(x)


def _compile_array(expr: sp.Expr, ops: _ArrayOps) -> Any:
    """Evaluate ``expr`` at ``ops.x``; numbers stay Python floats so they broadcast."""
    if expr == Z:
        return ops.x
    if expr.is_number:
        value = complex(expr.evalf(30))
        if value.imag != 0:
            raise BackendError(f"activation has a non-real constant {expr}")
        return float(value.real)
    if isinstance(expr, sp.Piecewise):
        xp = ops.xp
        out = None
        for piece, cond in reversed(expr.args):
            value = ops.lift(_compile_array(piece, ops)) + xp.zeros_like(ops.x)
            if cond is sp.true:
                out = value
            else:
                mask = _compile_condition(cond, ops)
                out = xp.where(mask, value, out if out is not None else xp.zeros_like(ops.x))
        return out
    if expr.func is sp.log:
        return ops.apply(sp.log, [], expr)
    args = [_compile_array(a, ops) for a in expr.args]
    if expr.func is sp.Heaviside:
        args = args[:1]
    return ops.apply(expr.func, args, expr)


def _compile_condition(cond: Any, ops: _ArrayOps) -> Any:
    xp = ops.xp
    if isinstance(cond, sp.And):
        out = _compile_condition(cond.args[0], ops)
        for c in cond.args[1:]:
            out = xp.logical_and(out, _compile_condition(c, ops))
        return out
    if isinstance(cond, sp.Or):
        out = _compile_condition(cond.args[0], ops)
        for c in cond.args[1:]:
            out = xp.logical_or(out, _compile_condition(c, ops))
        return out
    lhs = ops.lift(_compile_array(cond.lhs, ops))
    rhs = ops.lift(_compile_array(cond.rhs, ops))
    table = {sp.StrictLessThan: xp.less, sp.LessThan: xp.less_equal,
             sp.StrictGreaterThan: xp.greater, sp.GreaterThan: xp.greater_equal,
             sp.Equality: xp.equal, sp.Unequality: xp.not_equal}
    for kind, fn in table.items():
        if isinstance(cond, kind):
            return fn(lhs, rhs)
    raise BackendError(f"unsupported condition {cond}")


_MP_FUNCS: dict[Any, Callable[..., Any]] = {
    sp.tanh: mpmath.tanh, sp.sinh: mpmath.sinh, sp.cosh: mpmath.cosh, sp.exp: mpmath.exp,
    sp.sin: mpmath.sin, sp.cos: mpmath.cos, sp.atan: mpmath.atan, sp.erf: mpmath.erf,
    sp.log: mpmath.log, sp.Abs: abs,
}


def _mp_eval(expr: sp.Expr, x: Any) -> Any:
    """Evaluate ``expr`` at the mpmath number ``x`` in the current mpmath precision."""
    if expr == Z:
        return x
    if expr.is_number:
        if expr.is_Rational:
            return mpmath.mpf(int(expr.p)) / int(expr.q)
        return mpmath.mpf(sp.N(expr, mpmath.mp.dps + 10))
    f = expr.func
    if isinstance(expr, sp.Piecewise):
        for piece, cond in expr.args:
            if cond is sp.true or _mp_condition(cond, x):
                return _mp_eval(piece, x)
        return mpmath.mpf(0)
    if f is sp.Heaviside:
        a = _mp_eval(expr.args[0], x)
        h0 = _mp_eval(expr.args[1], x) if len(expr.args) > 1 else mpmath.mpf(1) / 2
        return mpmath.mpf(1) if a > 0 else (mpmath.mpf(0) if a < 0 else h0)
    if f is sp.DiracDelta:
        return mpmath.mpf(0)
    args = [_mp_eval(a, x) for a in expr.args]
    if f is sp.Add:
        return mpmath.fsum(args)
    if f is sp.Mul:
        out = args[0]
        for a in args[1:]:
            out = out * a
        return out
    if f is sp.Pow:
        base, e = args
        if expr.exp.is_Integer:
            return base ** int(expr.exp)
        return base**e
    if f is sp.Max:
        return max(args)
    if f is sp.Min:
        return min(args)
    if f is sp.sign:
        return mpmath.sign(args[0])
    if f in _MP_FUNCS:
        return _MP_FUNCS[f](*args)
    raise BackendError(f"no mpmath rule for {f.__name__}")


def _mp_real(expr: sp.Expr, x: float) -> float:
    """``expr`` at the float ``x`` via mpmath (30 digits); FloatingPointError if not real."""
    with mpmath.workdps(30):
        try:
            value = _mp_eval(expr, mpmath.mpf(x))
        except (ValueError, ZeroDivisionError) as exc:
            raise FloatingPointError(f"activation is undefined at z = {x!r}: {exc}") from None
    if isinstance(value, mpmath.mpc):
        if value.imag != 0:
            raise FloatingPointError(f"activation is not real at z = {x!r}")
        value = value.real
    return float(value)


def _mp_condition(cond: Any, x: Any) -> bool:
    if isinstance(cond, sp.And):
        return all(_mp_condition(c, x) for c in cond.args)
    if isinstance(cond, sp.Or):
        return any(_mp_condition(c, x) for c in cond.args)
    lhs, rhs = _mp_eval(cond.lhs, x), _mp_eval(cond.rhs, x)
    ops = {sp.StrictLessThan: lhs < rhs, sp.LessThan: lhs <= rhs,
           sp.StrictGreaterThan: lhs > rhs, sp.GreaterThan: lhs >= rhs,
           sp.Equality: lhs == rhs, sp.Unequality: lhs != rhs}
    for kind, value in ops.items():
        if isinstance(cond, kind):
            return bool(value)
    raise BackendError(f"unsupported condition {cond}")


# ---------------------------------------------------------------------------------------------
# Kinks
# ---------------------------------------------------------------------------------------------

_KINK_HEADS = (sp.Max, sp.Min, sp.Abs, sp.Heaviside, sp.sign, sp.DiracDelta)


def _real_zeros(arg: sp.Expr) -> list[sp.Expr]:
    """Exact real zeros (rationals, radicals or ``CRootOf``) of a polynomial argument."""
    if not arg.has(Z):
        return []
    try:
        poly = sp.Poly(arg, Z)
    except sp.PolynomialError:
        raise ActivationError(
            f"cannot locate the kinks of a non-polynomial argument {arg}; "
            "kink arguments must be polynomial in z"
        ) from None
    return list(sp.real_roots(poly))


def _find_kinks(expr: sp.Expr) -> tuple[sp.Expr, ...]:
    # Keyed by a 30-digit value so that one point reached through two forms is kept once.
    points: dict[str, sp.Expr] = {}

    def add(roots: list[sp.Expr]) -> None:
        for r in roots:
            points.setdefault(str(sp.N(r, 30)), r)

    for node in sp.preorder_traversal(expr):
        if isinstance(node, _KINK_HEADS):
            if isinstance(node, (sp.Max, sp.Min)):
                args = node.args
                for i in range(len(args)):
                    for j in range(i + 1, len(args)):
                        add(_real_zeros(args[i] - args[j]))
            else:
                add(_real_zeros(node.args[0]))
        elif isinstance(node, sp.Piecewise):
            for _, cond in node.args:
                for rel in cond.atoms(sp.core.relational.Relational):
                    add(_real_zeros(rel.lhs - rel.rhs))
    return tuple(sorted(points.values(), key=lambda r: float(r)))


# ---------------------------------------------------------------------------------------------
# The Activation object and the registry
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Activation:
    """A scalar activation φ(z) with its exact form, numeric forms and derivative.

    Parameters
    ----------
    name : str
        Display name (the registry key, or the user's string).
    expr : sympy.Expr
        The exact form in the real symbol :data:`Z`.

    Notes
    -----
    The derivative is ``sympy.diff(expr, z)``. At a kink it takes the mean of the one-sided
    derivatives (sympy's ``Heaviside(0) = 1/2``, ``sign(0) = 0``), so ``relu'(0) = 1/2`` and
    ``abs'(0) = 0``. Kinks have probability zero under Gaussian pre-activations, so this choice
    does not change any expectation; it only fixes what finite-difference tests see at a kink.
    """

    name: str
    expr: sp.Expr

    @cached_property
    def derivative_expr(self) -> sp.Expr:
        """The exact derivative dφ/dz."""
        return sp.diff(self.expr, Z)

    @cached_property
    def kinks(self) -> tuple[float, ...]:
        """Sorted real points where φ or φ' is not smooth (quadrature splits there)."""
        return tuple(float(k) for k in self.exact_kinks)

    @cached_property
    def exact_kinks(self) -> tuple[sp.Expr, ...]:
        """:attr:`kinks` as exact sympy numbers (for splitting integrals beyond double precision)."""
        return _find_kinks(self.expr)

    @cached_property
    def is_piecewise_polynomial(self) -> bool:
        """True if φ is a polynomial between consecutive kinks."""
        pw = sp.piecewise_fold(self.expr.rewrite(sp.Piecewise))
        pieces = pw.args if isinstance(pw, sp.Piecewise) else ((pw, sp.true),)
        return all(p.is_polynomial(Z) for p, _ in pieces)

    def __call__(self, x: Any) -> Any:
        """φ(x) elementwise, for any array-API array ``x`` (result in the same namespace)."""
        return self._evaluate(self.expr, x)

    def derivative(self, x: Any) -> Any:
        """φ'(x) elementwise (kink convention in the class Notes)."""
        return self._evaluate(self.derivative_expr, x)

    def mp(self, x: Any) -> Any:
        """φ(x) at an mpmath number, in the current ``mpmath.mp`` precision."""
        return _mp_eval(self.expr, mpmath.mpf(x))

    def mp_derivative(self, x: Any) -> Any:
        """φ'(x) at an mpmath number."""
        return _mp_eval(self.derivative_expr, mpmath.mpf(x))

    def _evaluate(self, expr: sp.Expr, x: Any) -> Any:
        from array_api_compat import array_namespace, is_numpy_namespace

        xp = array_namespace(x)
        ops = _ArrayOps(xp, x)
        if is_numpy_namespace(xp):
            import numpy as np

            # exp overflow inside sigmoid-like terms usually rounds to the right limit
            # (1/inf = 0); where it produces inf*0 or inf/inf instead (e.g. silu'(z) for
            # z < -709), the NaNs are recomputed below in mpmath.
            with np.errstate(over="ignore", invalid="ignore", divide="raise"):
                out = _compile_array(expr, ops)
            if not isinstance(out, float):
                bad = np.isnan(out) & np.isfinite(x)
                if np.any(bad):
                    out = np.array(out, copy=True)
                    out[bad] = [_mp_real(expr, float(v)) for v in np.asarray(x)[bad]]
        else:
            out = _compile_array(expr, ops)
        if isinstance(out, float):
            return xp.full_like(x, out)
        return out

    def __str__(self) -> str:
        return self.name


#: Named activations: name -> expression string in z (parsed by the same safe parser).
ACTIVATIONS: dict[str, str] = {
    "relu": "relu(z)",
    "leaky_relu": "leaky_relu(z, 0.1)",
    "abs": "abs(z)",
    "tanh": "tanh(z)",
    "relu+tanh": "relu(z) + tanh(z)",
    "erf": "erf(z)",
    "gelu": "gelu(z)",
    "silu": "silu(z)",
    "swish": "swish(z)",
    "softplus": "softplus(z)",
    "sigmoid": "sigmoid(z)",
    "sin": "sin(z)",
    "cos": "cos(z)",
    "step": "heaviside(z)",
    "quadratic": "z**2",
    "cubic": "z**3",
    "poly3": "z + z**2/2 + z**3/6",
    "relu2": "relu(z)**2",
    "h2": "hermite(2, z)",
    "h3": "hermite(3, z)",
    "h4": "hermite(4, z)",
}


def get_activation(spec: "str | Activation") -> Activation:
    """Return the activation named ``spec`` in :data:`ACTIVATIONS`, or parse it as an expression.

    Parameters
    ----------
    spec : str or Activation
        A registry name (``"relu+tanh"``), or an expression in ``z`` such as
        ``"relu(z) + 0.5*tanh(z)"``. An :class:`Activation` is returned unchanged.

    Raises
    ------
    ActivationError
        If the string is neither a registered name nor a safe, valid expression.
    """
    if isinstance(spec, Activation):
        return spec
    if not isinstance(spec, str):
        raise ActivationError(f"activation must be a string, got {type(spec).__name__}")
    key = spec.strip()
    text = ACTIVATIONS.get(key.lower(), key)
    return Activation(name=key, expr=parse_activation(text))
