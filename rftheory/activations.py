"""Activation functions: exact sympy forms, safe parsing, numeric forms and derivatives.

An :class:`Activation` holds one sympy expression in the real variable ``z``. Everything else —
array evaluation on any array-API namespace (numpy, CuPy, ``array_api_strict``), mpmath
evaluation, the derivative and the kink locations — is derived from that expression, so the exact,
high-precision and fast code paths can never disagree about *which* function they use.

User strings are parsed by :func:`parse_activation`, which walks Python's AST and builds the
sympy expression node by node from a whitelist. No user string ever reaches ``eval``, ``exec``,
``sympify`` or ``parse_expr``. Strings are ASCII only, and every argument of a function that is not
defined on the whole real line (log, sqrt, division, ...) is proved inside its domain for every
real z (:mod:`rftheory.domain`) or the expression is refused, saying where it fails.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, NamedTuple

import mpmath
import numpy as np
import sympy as sp
from array_api_compat import device, is_numpy_namespace
from sympy.codegen.cfunctions import expm1, log1p

from .backend import namespace_of
from .domain import proves, require
from .errors import ActivationError, BackendError
from .inputs import (CONSTANT_NAMES, FUNCTION_NAMES, MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LENGTH,
                     MAX_LITERAL, REGISTRY_NAMES, activation_text, check_literal, shown)

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

#: Largest accepted magnitude of an exponent (literals: :data:`rftheory.inputs.MAX_LITERAL`);
#: the text rule itself (length, depth, literals) is :func:`rftheory.inputs.activation_text`.
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


def _log(x: sp.Expr, base: sp.Expr | None = None) -> sp.Expr:
    if base is None:
        return sp.log(x)
    if not (base.is_positive and base != 1):
        raise ActivationError(f"log(u, base) needs a constant base > 0 other than 1, got {base}")
    return sp.log(x) / sp.log(base)


def _elu(x: sp.Expr, a: sp.Expr = sp.S.One) -> sp.Expr:
    return sp.Max(x, 0) + a * expm1(sp.Min(x, 0))


#: Whitelisted functions: name -> (builder, number of argument expressions, indices of arguments
#: that must be numeric constants). The docstring of :func:`parse_activation` lists them.
_FUNCTIONS: dict[str, tuple[Callable[..., sp.Expr], tuple[int, ...], tuple[int, ...]]] = {
    # piecewise linear and jumps
    "relu": (lambda x: sp.Max(x, 0), (1,), ()),
    "leaky_relu": (_leaky_relu, (1, 2), (1,)),
    "abs": (sp.Abs, (1,), ()),
    "Abs": (sp.Abs, (1,), ()),
    "max": (sp.Max, (2,), ()),
    "Max": (sp.Max, (2,), ()),
    "min": (sp.Min, (2,), ()),
    "Min": (sp.Min, (2,), ()),
    "heaviside": (lambda x: sp.Heaviside(x), (1,), ()),
    "Heaviside": (lambda x: sp.Heaviside(x), (1,), ()),
    "step": (lambda x: sp.Heaviside(x), (1,), ()),
    "sign": (sp.sign, (1,), ()),
    # elementary functions (sympy's names, numpy's arc- aliases)
    "exp": (sp.exp, (1,), ()),
    "exp2": (lambda x: sp.exp(sp.log(2) * x), (1,), ()),
    "expm1": (expm1, (1,), ()),
    "log": (_log, (1, 2), (1,)),
    "ln": (sp.log, (1,), ()),
    "log2": (lambda x: _log(x, sp.Integer(2)), (1,), ()),
    "log10": (lambda x: _log(x, sp.Integer(10)), (1,), ()),
    "log1p": (log1p, (1,), ()),
    "sqrt": (sp.sqrt, (1,), ()),
    "tanh": (sp.tanh, (1,), ()),
    "sinh": (sp.sinh, (1,), ()),
    "cosh": (sp.cosh, (1,), ()),
    "asinh": (sp.asinh, (1,), ()),
    "arcsinh": (sp.asinh, (1,), ()),
    "sin": (sp.sin, (1,), ()),
    "cos": (sp.cos, (1,), ()),
    "atan": (sp.atan, (1,), ()),
    "arctan": (sp.atan, (1,), ()),
    "erf": (sp.erf, (1,), ()),
    "erfc": (sp.erfc, (1,), ()),
    # activations of the ML literature
    "sigmoid": (_sigmoid, (1,), ()),
    "silu": (lambda x: x * _sigmoid(x), (1,), ()),
    "swish": (lambda x: x * _sigmoid(x), (1,), ()),
    "softplus": (lambda x: sp.log(1 + sp.exp(x)), (1,), ()),
    "gelu": (lambda x: x * (1 + sp.erf(x / sp.sqrt(2))) / 2, (1,), ()),
    "elu": (_elu, (1, 2), (1,)),
    "mish": (lambda x: x * sp.tanh(sp.log(1 + sp.exp(x))), (1,), ()),
    "hermite": (_hermite_normalised, (2,), (0,)),
    "h": (_hermite_normalised, (2,), (0,)),
}
if set(_FUNCTIONS) != FUNCTION_NAMES:  # the text rule (rftheory.inputs) lists the same names
    raise ImportError("rftheory.inputs.FUNCTION_NAMES and rftheory.activations disagree: "
                      f"{sorted(set(_FUNCTIONS) ^ FUNCTION_NAMES)}")
#: Domain of the functions that are not defined on the whole real line: name -> (requirement on
#: the first argument u, the quantity it applies to). Checked by :func:`rftheory.domain.require`.
_DOMAINS: dict[str, tuple[str, Callable[[sp.Expr], sp.Expr]]] = {
    "log": ("positive", lambda u: u), "ln": ("positive", lambda u: u),
    "log2": ("positive", lambda u: u), "log10": ("positive", lambda u: u),
    "log1p": ("positive", lambda u: 1 + u), "sqrt": ("nonnegative", lambda u: u),
}
_CONSTANTS = {"pi": sp.pi, "e": sp.E, "E": sp.E}
_BINOPS: dict[type, Callable[[sp.Expr, sp.Expr], sp.Expr]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}


def _number(value: Any) -> sp.Expr:
    check_literal(value)  # finite, |x| <= MAX_LITERAL (huge integers compared exactly)
    if isinstance(value, int):
        return sp.Integer(value)
    # Keep decimal literals exact (0.5 -> 1/2, 0.1 -> 1/10) so exact Hermite forms stay exact.
    return sp.Rational(repr(value))


class _Builder:
    """Translate a whitelisted Python AST into a sympy expression (never evaluating Python)."""

    def __init__(self, source: str) -> None:
        self.source = source  # the parsed text, for quoting subexpressions in messages

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
            if isinstance(node.op, ast.Div):
                self._require(right, "nonzero", node)
            if isinstance(node.op, ast.Pow):
                return self._power(left, right, node)
            return op(left, right)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        raise ActivationError(f"{type(node).__name__} is not allowed in an activation expression")

    def _power(self, base: sp.Expr, exponent: sp.Expr, node: ast.AST) -> sp.Expr:
        if base.is_number and abs(float(sp.Abs(base))) > MAX_LITERAL:
            raise ActivationError("power of a large constant refused")
        if not exponent.is_number:
            if base.is_number and base.is_positive:
                return sp.exp(sp.log(base) * exponent)  # c**u = exp(u log c), c > 0
            raise ActivationError("exponents must be numeric constants, or the base a positive "
                                  "constant (z**z is refused)")
        if abs(float(exponent)) > MAX_EXPONENT:
            raise ActivationError(f"exponent {shown(exponent)} is too large "
                                  f"(|exponent| <= {MAX_EXPONENT})")
        if not exponent.is_integer:
            self._require(base, "nonnegative" if exponent > 0 else "positive", node)
        elif exponent < 0:
            self._require(base, "nonzero", node)
        return base**exponent

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
        value = builder(*args)
        if name in _DOMAINS:
            kind, quantity = _DOMAINS[name]
            self._require(quantity(args[0]), kind, node)
        return value

    def _require(self, u: sp.Expr, kind: str, node: ast.AST) -> None:
        """Refuse ``node`` unless u meets ``kind`` for every real z (see rftheory.domain)."""
        typed = ast.get_source_segment(self.source, node) or ast.unparse(node)
        require(u, kind, typed, evaluate=_witness_value)


def _witness_value(u: sp.Expr, x: float) -> Any:
    """u at z = x in 30-digit mpmath, or None where it is not a real number (domain messages)."""
    with mpmath.workdps(30):
        try:
            value = _mp_eval(u, mpmath.mpf(x))
        except (ValueError, ZeroDivisionError, BackendError, OverflowError):
            return None
    return value if isinstance(value, mpmath.mpf) and mpmath.isfinite(value) else None



def parse_activation(text: str) -> sp.Expr:
    """Parse an activation string in the variable ``z`` into a sympy expression, safely.

    Parameters
    ----------
    text : str
        ASCII text: arithmetic (``+ - * / **``), real numeric literals, the variable ``z``, the
        constants ``pi``, ``e`` (also ``E``), and calls of the whitelisted functions:

        * elementary, by sympy's names: ``exp``, ``exp2``, ``expm1``, ``log`` (also
          ``log(u, base)``, ``ln``, ``log2``, ``log10``), ``log1p``, ``sqrt``, ``sin``, ``cos``,
          ``tanh``, ``sinh``, ``cosh``, ``asinh`` (``arcsinh``), ``atan`` (``arctan``), ``erf``,
          ``erfc``; a power ``c**u`` with a positive constant base is ``exp(u*log(c))``;
        * piecewise: ``relu``, ``leaky_relu(u[, a])`` (a = 0.01), ``abs`` (``Abs``), ``max``,
          ``min`` (``Max``, ``Min``, two arguments), ``heaviside`` (``Heaviside``, ``step``),
          ``sign``;
        * activations of the ML literature: ``sigmoid``, ``silu`` (``swish``), ``softplus``
          (``log(1 + exp(u))``), ``gelu`` (exact, with erf), ``elu(u[, a])`` (a = 1, built with
          ``expm1``), ``mish``;
        * ``hermite(k, u)`` (``h``): the normalised Hermite polynomial ``He_k(u)/sqrt(k!)``.

        Not offered: ``tan`` (poles on the real line), ``asin``, ``acos``, ``acosh``, ``atanh``
        (bounded domains, infinite slope at their ends), ``cbrt`` (infinite slope at 0; write
        ``sign(u)*abs(u)**(1/3)`` if that is meant).

    Returns
    -------
    sympy.Expr
        The expression in the real symbol :data:`Z`.

    Raises
    ------
    ActivationError
        For anything outside the whitelist, naming what was refused. No part of ``text`` is ever
        evaluated as Python.

    Notes
    -----
    *Domains.* Every activation must be real and finite on the whole real line, so each argument
    of ``log``/``log2``/``log10`` (> 0), ``log1p`` (> -1), ``sqrt`` and fractional powers
    (>= 0; > 0 for negative exponents) and each divisor or base of a negative integer power
    (≠ 0) is checked for every real z as typed, before sympy simplifies anything
    (``sqrt(z)**2`` is refused although sympy would write it ``z``). The check is
    :func:`rftheory.domain.require`: sympy's assumptions on the real symbol, exact root
    isolation for polynomial arguments, and interval bounds of the elementary functions; what
    none of them proves is refused conservatively, and the message says which case it is:
    ``log(z)`` "is not defined for z ≤ 0", ``1/(z**2 - 2)`` "has a pole at z = -sqrt(2) or
    z = sqrt(2)", ``log(exp(z) - z)`` "is refused conservatively".

    *Unicode.* Only ASCII is accepted. Python's parser normalises identifiers with NFKC, so it
    would silently read look-alikes such as fullwidth ``ｅｘｐ`` or mathematical bold ``𝐞𝐱𝐩`` as
    ``exp``; refusing them keeps the string a user sees, the name stored with results and the
    function computed the same. The message names the character and, where NFKC maps it to ASCII,
    what it looks like.

    Examples
    --------
    >>> parse_activation("log(1 + exp(z))")
    log(exp(z) + 1)
    >>> parse_activation("z*(1 + erf(z/sqrt(2)))/2")
    z*(erf(sqrt(2)*z/2) + 1)/2
    >>> parse_activation("sqrt(1 + z**2)")
    sqrt(z**2 + 1)
    >>> parse_activation("log(z)")
    Traceback (most recent call last):
    ...
    rftheory.errors.ActivationError: log(z) is not defined for z ≤ 0 (it needs z > 0)
    """
    source = activation_text(text)  # the one text rule: strip, length, ASCII, tree shape
    tree = ast.parse(source, mode="eval")
    expr = _Builder(source).build(tree)
    if not expr.has(Z):
        raise ActivationError("activation must depend on z (a constant is not an activation)")
    if expr.has(sp.I, sp.zoo, sp.nan, sp.oo, -sp.oo):  # unreachable after the domain checks
        raise ActivationError(f"activation {expr} is not a finite real function")
    return expr


# ---------------------------------------------------------------------------------------------
# Numeric evaluation (array API and mpmath), compiled from the sympy tree
# ---------------------------------------------------------------------------------------------

def _special(xp: Any, name: str) -> Callable[[Any], Any]:
    """``erf`` or ``erfc`` for the namespace (SciPy for NumPy, cupyx for CuPy)."""
    module = getattr(xp, "__name__", "")
    if "numpy" in module:
        import scipy.special

        return getattr(scipy.special, name)
    if "cupy" in module:
        import cupyx.scipy.special

        return getattr(cupyx.scipy.special, name)
    raise BackendError(f"{name} is not available for array namespace {module!r} (numpy or CuPy only)")


# The array path compiles each Activation once into a small straight-line program: a tuple of
# steps over numbered slots (slot 0 holds the input), with every numeric constant folded to a
# Python float at compile time. Programs hold only strings, ints and floats, so they are
# namespace-agnostic (the namespace is chosen per call) and pickle with the Activation. They are
# built from ``sympy.cse`` of [φ, φ'] so that one program computes both with shared work, and are
# interpreted by :func:`_run_program`; no string is ever evaluated.

class _LogAddExp(sp.Function):
    """``log(exp(a) + exp(b))`` kept whole through CSE; evaluated as the stable ``logaddexp``."""

    nargs = 2


class _Hypot(sp.Function):
    """``sqrt(a**2 + b**2)`` evaluated as ``hypot`` (no overflow of the squares)."""

    nargs = 2


class _PowConst(sp.Function):
    """``c**u`` for a constant c > 0 (``exp(u log c)``), evaluated as ``pow(c, u)``: exact
    powers of 2 for exp2, and no amplified rounding of ``u log c`` for large u."""

    nargs = 2


#: sympy heads evaluated by one array-API function of the same meaning (name in the namespace).
_ARRAY_FUNCS: dict[Any, str] = {
    sp.tanh: "tanh", sp.sinh: "sinh", sp.cosh: "cosh", sp.exp: "exp", sp.sin: "sin",
    sp.cos: "cos", sp.atan: "atan", sp.log: "log", sp.Abs: "abs", sp.sign: "sign",
    sp.erf: "erf", sp.erfc: "erfc", sp.asinh: "asinh", log1p: "log1p", expm1: "expm1",
}
#: Heads computed by :func:`_special` rather than the array namespace.
_SPECIAL = ("erf", "erfc")
#: sympy relations -> names of the Python comparison operators (array API operators).
_RELATIONS: dict[Any, str] = {
    sp.StrictLessThan: "lt", sp.LessThan: "le", sp.StrictGreaterThan: "gt",
    sp.GreaterThan: "ge", sp.Equality: "eq", sp.Unequality: "ne",
}
#: Integer powers up to this degree are repeated products: at most 3 roundings against
#: ``pow``'s ~1 ulp, and ~100x faster than NumPy's ``x**3``. Higher powers use ``**``.
_MAX_PRODUCT_POWER = 4


class _Step(NamedTuple):
    """One instruction: ``slots[out] = op(args; param)``.

    ``args`` are slot numbers (ints) or folded constants (Python floats). ``consume`` says the
    first argument is a temporary that dies here and is not read again after the first
    operation, so the step may overwrite it in place; ``free`` lists slots whose last use is
    this step (dropped at once to keep peak memory low).
    """

    op: str
    out: int
    args: tuple
    param: Any = None
    consume: bool = False
    free: tuple[int, ...] = ()


class _Program(NamedTuple):
    """Straight-line steps computing ``outputs`` from slot 0 (the input)."""

    steps: tuple[_Step, ...]
    outputs: tuple  # slot numbers, or Python floats for constant outputs
    n_slots: int


def _real_float(expr: sp.Expr) -> float:
    value = complex(expr.evalf(30))
    if value.imag != 0:
        raise BackendError(f"activation has a non-real constant {expr}")
    return float(value.real)


def _prepare(expr: sp.Expr) -> sp.Expr:
    """Rewrite ``expr`` into the forms the compiler evaluates, before CSE can split them."""
    # Derivative of a jump: zero almost everywhere (kinks have Gaussian measure zero).
    expr = expr.replace(lambda e: isinstance(e, sp.DiracDelta), lambda e: sp.S.Zero)

    def exponent_of(term: sp.Expr) -> sp.Expr | None:
        """u if term = exp(u), log(c) if term is a constant c > 0, else None."""
        if isinstance(term, sp.exp):
            return term.args[0]
        if term.is_number and term.is_positive:
            return sp.log(term)
        return None

    def is_log_sum_exp(e: sp.Expr) -> bool:
        if e.is_number:  # folded to a constant by the compiler
            return False
        if isinstance(e, log1p):
            return isinstance(e.args[0], sp.exp)
        if not isinstance(e, sp.log) or not e.args[0].is_Add or len(e.args[0].args) != 2:
            return False
        parts = [exponent_of(t) for t in e.args[0].args]
        return all(p is not None for p in parts) and any(isinstance(t, sp.exp) for t in e.args[0].args)

    def log_sum_exp(e: sp.Expr) -> sp.Expr:
        if isinstance(e, log1p):
            return _LogAddExp(sp.S.Zero, e.args[0].args[0])
        return _LogAddExp(*[exponent_of(t) for t in e.args[0].args])

    def power_of_constant(e: sp.Expr) -> tuple[sp.Expr, sp.Expr] | None:
        """(c, u) if e is c**u or exp(u log c) with a rational c > 0 and u depending on z."""
        if e.is_Pow and e.base.is_Rational and e.base.is_positive and not e.exp.is_number:
            return e.base, e.exp
        if isinstance(e, sp.exp) and not e.is_number:
            const, rest = e.args[0].as_independent(Z, as_Add=False)
            if isinstance(const, sp.log) and const.args[0].is_Rational and const.args[0] > 0:
                return const.args[0], rest
        return None

    def hypot_form(e: sp.Expr) -> sp.Expr | None:
        """hypot(sqrt(c), u)**(2q) for (c + u**2)**q with c > 0 and q not an integer."""
        if not (e.is_Pow and e.exp.is_number and not e.exp.is_integer and e.base.is_Add
                and len(e.base.args) == 2):
            return None
        consts = [a for a in e.base.args if a.is_number]
        squares = [a for a in e.base.args if a.is_Pow and a.exp == 2 and not a.is_number]
        if len(consts) != 1 or len(squares) != 1 or not consts[0].is_positive:
            return None
        return _Hypot(sp.sqrt(consts[0]), squares[0].base) ** (2 * e.exp)

    # log(c + exp(u)) (softplus: c = 1) and log(exp(u) + exp(v)) overflow once exp does;
    # logaddexp(log c, u) is the same function, stably. sqrt(c + u**2) overflows u**2 for
    # |u| > 1.3e154 (and z/sqrt(1 + z**2) would give 0 instead of 1 there): hypot does not.
    expr = expr.replace(lambda e: power_of_constant(e) is not None,
                        lambda e: _PowConst(*power_of_constant(e)))
    expr = expr.replace(lambda e: hypot_form(e) is not None, hypot_form)
    return expr.replace(is_log_sum_exp, log_sum_exp)


class _Compiler:
    """Translate sympy expressions (after CSE) into :class:`_Step` s over slots."""

    def __init__(self) -> None:
        self.steps: list[_Step] = []
        self.refs: dict[Any, Any] = {Z: 0}  # expression or CSE symbol -> slot or float
        self.n_slots = 1

    def emit(self, op: str, args: tuple, param: Any = None) -> int:
        slot = self.n_slots
        self.n_slots += 1
        self.steps.append(_Step(op, slot, args, param))
        return slot

    def ref(self, expr: Any) -> Any:
        if expr in self.refs:
            return self.refs[expr]
        if isinstance(expr, sp.Expr) and expr.is_number:
            out = _real_float(expr)
        else:
            out = self._node(expr)
        self.refs[expr] = out
        return out

    def _node(self, e: Any) -> Any:
        if isinstance(e, sp.Add):
            return self._add(e)
        if isinstance(e, sp.Mul):
            return self._mul(e)
        if isinstance(e, sp.Pow):
            return self._pow(e)
        if isinstance(e, (sp.Max, sp.Min)):
            consts = [a for a in e.args if a.is_number]
            slots = [self.ref(a) for a in e.args if not a.is_number]
            pick = sp.Max if isinstance(e, sp.Max) else sp.Min
            const = _real_float(pick(*consts)) if consts else None
            name = "maximum" if isinstance(e, sp.Max) else "minimum"
            return self.emit("extremum", tuple(slots), (name, const))
        if isinstance(e, sp.Heaviside):
            h0 = _real_float(e.args[1]) if len(e.args) > 1 else 0.5
            return self.emit("heaviside", (self.ref(e.args[0]),), h0)
        if e.func in _ARRAY_FUNCS:
            return self.emit("fn", (self.ref(e.args[0]),), _ARRAY_FUNCS[e.func])
        if isinstance(e, (_LogAddExp, _Hypot, _PowConst)):
            name = {_LogAddExp: "logaddexp", _Hypot: "hypot", _PowConst: "pow"}[e.func]
            return self.emit("binary", tuple(self.ref(a) for a in e.args), name)
        if isinstance(e, sp.Piecewise):
            args: list[Any] = []
            default: Any = 0.0  # no condition holds: zero, as in the mpmath evaluator
            for piece, cond in e.args:
                if cond == sp.true:
                    default = self.ref(piece)
                    break
                args += [self.ref(cond), self.ref(piece)]
            return self.emit("where", (*args, default))
        if isinstance(e, (sp.And, sp.Or)):
            name = "logical_and" if isinstance(e, sp.And) else "logical_or"
            return self.emit("logical", tuple(self.ref(c) for c in e.args), name)
        if isinstance(e, sp.Not):
            return self.emit("fn", (self.ref(e.args[0]),), "logical_not")
        for kind, fn in _RELATIONS.items():
            if isinstance(e, kind):
                return self.emit("compare", (self.ref(e.lhs), self.ref(e.rhs)), fn)
        name = getattr(e.func, "__name__", type(e).__name__)
        raise BackendError(f"no numeric rule for {name} in activation {e}")

    def _add(self, e: sp.Add) -> Any:
        const = _real_float(sp.Add(*[a for a in e.args if a.is_number]))
        terms: list[tuple[int, int]] = []  # (sign, slot)
        for a in e.args:
            if a.is_number:
                continue
            coeff, rest = a.as_coeff_Mul()
            sign, r = (-1, self.ref(rest)) if coeff == -1 else (1, self.ref(a))
            if isinstance(r, float):
                const += sign * r
            else:
                terms.append((sign, r))
        if not terms:
            return const
        terms.sort(key=lambda t: t[0] < 0)  # a positive term first: no negation (stable sort)
        if len(terms) == 1 and terms[0][0] == 1 and const == 0.0:
            return terms[0][1]
        return self.emit("lincomb", tuple(s for _, s in terms),
                         (const, tuple(sign for sign, _ in terms)))

    def _mul(self, e: sp.Mul) -> Any:
        const = _real_float(sp.Mul(*[a for a in e.args if a.is_number]))
        num: list[int] = []
        den: list[int] = []
        for a in e.args:
            if a.is_number:
                continue
            into, factor, times = num, a, 1
            if isinstance(a, sp.Pow) and a.exp.is_number and a.exp.is_negative:
                into, factor = den, sp.Pow(a.base, -a.exp)
            if (isinstance(factor, sp.Pow) and factor.exp.is_Integer
                    and 0 < factor.exp <= _MAX_PRODUCT_POWER):
                factor, times = factor.base, int(factor.exp)  # u**n inline: n factors of u
            r = self.ref(factor)
            if isinstance(r, float):
                const = const * r**times if into is num else const / r**times
            else:
                into += [r] * times
        return self._product(const, num, den)

    def _product(self, const: float, num: list[int], den: list[int]) -> Any:
        if const == 0.0 or not (num or den):
            return const
        if len(num) == 1 and not den and const == 1.0:
            return num[0]
        return self.emit("product", (*num, *den), (const, len(num)))

    def _pow(self, e: sp.Pow) -> Any:
        base, exponent = e.args
        if not exponent.is_number:
            raise BackendError(f"no numeric rule for a non-constant exponent in activation {e}")
        b = self.ref(base)
        if exponent.is_Integer:
            n = int(exponent)
            if abs(n) <= _MAX_PRODUCT_POWER:
                factors = [b] * abs(n)
            else:
                factors = [self.emit("pow", (b,), abs(n))]
            return self._product(1.0, factors, []) if n > 0 else self._product(1.0, [], factors)
        if exponent == sp.S.Half:
            return self.emit("fn", (b,), "sqrt")
        if exponent == -sp.S.Half:
            return self._product(1.0, [], [self.emit("fn", (b,), "sqrt")])
        return self.emit("pow", (b,), _real_float(exponent))


def _slots(args: tuple) -> list[int]:
    return [a for a in args if isinstance(a, int)]


def _select(steps: list[_Step], outputs: tuple, n_slots: int) -> _Program:
    """The steps ``outputs`` need, with in-place and freeing decisions for that subset."""
    needed = set(_slots(outputs))
    kept: list[_Step] = []
    for step in reversed(steps):
        if step.out in needed:
            kept.append(step)
            needed.update(_slots(step.args))
    kept.reverse()
    keep_alive = {0, *_slots(outputs)}  # never overwrite the input or free an output
    last_use: dict[int, int] = {}
    for i, step in enumerate(kept):
        for s in _slots(step.args):
            last_use[s] = i
    final = []
    for i, step in enumerate(kept):
        arg_slots = _slots(step.args)
        dying = tuple(sorted({s for s in arg_slots if last_use[s] == i and s not in keep_alive}))

        def consumable(k: int) -> bool:
            a = step.args[k]
            if a not in dying:
                return False
            if arg_slots.count(a) == 1:
                return True
            # u*u or u+u in place is safe (each element is read before it is written); a later
            # read of u (u*u*u, or u in a denominator) would see the overwritten value.
            pair_in_place = step.op == "lincomb" or step.param[1] == len(step.args) >= 2
            return k == 0 and arg_slots.count(a) == 2 and step.args[1] == a and pair_in_place

        if step.op == "lincomb" or (step.op == "product" and step.param[1] >= 1):
            swappable = (step.param[1][:2] == (1, 1) if step.op == "lincomb"
                         else step.param[1] == len(step.args) >= 2)
            if swappable and not consumable(0) and consumable(1):
                # The first operation is then a + b or a * b, and a + b == b + a exactly, so
                # putting the dying temporary first (to be overwritten in place) changes no bit.
                args = (step.args[1], step.args[0], *step.args[2:])
                step = step._replace(args=args)
            step = step._replace(consume=consumable(0))
        final.append(step._replace(free=dying))
    return _Program(tuple(final), outputs, n_slots)


def _compile_programs(exprs: list[sp.Expr]) -> tuple[list[_Step], tuple, int]:
    """CSE over all of ``exprs`` and compile; returns (steps, output refs, number of slots)."""
    replacements, reduced = sp.cse([_prepare(e) for e in exprs])
    compiler = _Compiler()
    numeric: dict[sp.Symbol, sp.Expr] = {}
    for symbol, sub in replacements:
        sub = sub.xreplace(numeric)
        if isinstance(sub, sp.Expr) and sub.is_number:
            numeric[symbol] = sub  # keep constants exact so products of them fold exactly
        else:
            compiler.refs[symbol] = compiler.ref(sub)
    outputs = tuple(compiler.ref(e.xreplace(numeric)) for e in reduced)
    return compiler.steps, outputs, compiler.n_slots


def _run_program(program: _Program, x: Any, xp: Any) -> list[Any]:
    """Run ``program`` on the array ``x`` of namespace ``xp``; one fresh array per output.

    For a numpy ``x`` the two wrapped calls of the array-API path (``asarray`` of a constant,
    ``sign``) are made as the numpy calls they wrap — the same arrays, without the wrappers'
    overhead (the program runs at every loss evaluation of the attack).
    """
    slots: list[Any] = [None] * program.n_slots
    slots[0] = x
    zero_d: dict[float, Any] = {}
    host = type(x) is np.ndarray

    def array(ref: Any) -> Any:  # a slot, or a constant as a 0-d array of x's dtype and device
        if isinstance(ref, int):
            return slots[ref]
        if ref not in zero_d:
            zero_d[ref] = (np.asarray(ref, dtype=x.dtype) if host
                           else xp.asarray(ref, dtype=x.dtype, device=device(x)))
        return zero_d[ref]

    for step in program.steps:
        op, args = step.op, step.args
        if op == "lincomb":
            const, signs = step.param
            acc, owned, const_used = slots[args[0]], step.consume, False
            if signs[0] < 0:
                acc, owned, const_used = (const - acc if const else -acc), True, True
            for sign, s in zip(signs[1:], args[1:]):
                if owned:
                    if sign > 0:
                        acc += slots[s]
                    else:
                        acc -= slots[s]
                else:
                    acc, owned = (acc + slots[s] if sign > 0 else acc - slots[s]), True
            if const and not const_used:
                if owned:
                    acc += const
                else:
                    acc = acc + const
            value = acc
        elif op == "product":
            # Numerator and denominator factors alternate (n1 / d1 * n2 / d2 ...) so that ratios
            # like exp(-z) / (1 + exp(-z))**2 stay finite where either side alone overflows.
            const, n_num = step.param
            num, den = args[:n_num], args[n_num:]
            if num:
                acc, owned = slots[num[0]], step.consume
                order = [(True, s) for s in num[1:]]
            else:
                acc, owned = const / slots[den[0]], True
                den = den[1:]
                order = []
            for i, s in enumerate(den):
                order.insert(2 * i, (False, s))
            for is_num, s in order:
                if owned:
                    if is_num:
                        acc *= slots[s]
                    else:
                        acc /= slots[s]
                else:
                    acc, owned = (acc * slots[s] if is_num else acc / slots[s]), True
            if num and const != 1.0:
                if owned:
                    acc *= const
                else:
                    acc = acc * const
            value = acc
        elif op == "fn":
            name, u = step.param, slots[args[0]]
            if name in _SPECIAL:
                value = _special(xp, name)(u)
            else:
                value = getattr(xp, name)(u)
        elif op == "binary":
            value = getattr(xp, step.param)(array(args[0]), array(args[1]))
        elif op == "heaviside":
            u, h0 = slots[args[0]], step.param
            # All exact for non-NaN u: sign(u) is -1, 0 or 1, and the 0/1 masks are exact.
            if h0 == 0.5:
                value = np.sign(u) if host else xp.sign(u)
                value += 1.0
                value *= 0.5
            elif h0 == 1.0:
                value = xp.astype(u >= 0.0, x.dtype)
            else:
                value = xp.astype(u > 0.0, x.dtype)
                if h0 != 0.0:
                    value += h0 * xp.astype(u == 0.0, x.dtype)
        elif op == "extremum":
            name, const = step.param
            pick = getattr(xp, name)
            value = slots[args[0]]
            for s in args[1:]:
                value = pick(value, slots[s])
            if const is not None:
                value = pick(value, array(const))
        elif op == "pow":
            value = slots[args[0]] ** step.param
        elif op == "where":
            value = array(args[-1])
            for i in range(len(args) - 3, -1, -2):  # later pieces first: earlier ones win
                value = xp.where(slots[args[i]], array(args[i + 1]), value)
        elif op == "compare":
            lhs, rhs = (slots[a] if isinstance(a, int) else a for a in args)
            value = getattr(operator, step.param)(lhs, rhs)
        elif op == "logical":
            pick = getattr(xp, step.param)
            value = slots[args[0]]
            for s in args[1:]:
                value = pick(value, slots[s])
        else:  # the compiler emits only the ops above
            raise AssertionError(f"unknown step {op!r}")
        slots[step.out] = value
        for s in step.free:
            slots[s] = None

    results: list[Any] = []
    for ref in program.outputs:
        if isinstance(ref, float):
            out = xp.full_like(x, ref)
        elif ref == 0 or any(isinstance(r, int) and r == ref for r in program.outputs[:len(results)]):
            out = xp.asarray(slots[ref], copy=True)  # never hand out the input or one array twice
        else:
            out = slots[ref]
        results.append(out)
    return results


_MP_FUNCS: dict[Any, Callable[..., Any]] = {
    sp.tanh: mpmath.tanh, sp.sin: mpmath.sin, sp.cos: mpmath.cos, sp.atan: mpmath.atan,
    sp.erf: mpmath.erf, sp.erfc: mpmath.erfc, sp.log: mpmath.log, sp.Abs: abs,
    sp.asinh: mpmath.asinh, log1p: mpmath.log1p,
}
#: Exponential-type heads, guarded by :data:`_MP_EXP_CAP`: name -> (function, value at +inf,
#: value at -inf).
_HUGE = mpmath.mpf(2) ** (2**64)  # finite: mpmath's exponents are Python integers
_MP_EXPONENTIAL: dict[Any, tuple[Callable[..., Any], Any, Any]] = {
    sp.exp: (mpmath.exp, _HUGE, 1 / _HUGE),
    expm1: (mpmath.expm1, _HUGE, mpmath.mpf(-1)),
    sp.sinh: (mpmath.sinh, _HUGE, -_HUGE),
    sp.cosh: (mpmath.cosh, _HUGE, _HUGE),
}
#: |u| beyond which exp(u) and its kin are replaced by ±2^(2^64) (or 2^-(2^64), -1) in mpmath:
#: exact evaluation would need a 2^64-bit-precise log 2 (exp(exp(exp(80))) would never finish),
#: and nothing that large or small reaches a double anyway.
_MP_EXP_CAP = mpmath.mpf(2) ** 64


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
    if f in _MP_EXPONENTIAL:
        function, at_plus_inf, at_minus_inf = _MP_EXPONENTIAL[f]
        (u,) = args
        if isinstance(u, mpmath.mpf) and u > _MP_EXP_CAP:
            return at_plus_inf
        if isinstance(u, mpmath.mpf) and u < -_MP_EXP_CAP:
            return at_minus_inf
        return function(u)
    raise BackendError(f"no mpmath rule for {f.__name__}")


#: Digits tried in turn by :func:`_mp_real` until two consecutive results agree.
_MP_LEVELS = (30, 60, 120, 240, 480, 960)


def _mp_real(expr: sp.Expr, x: float) -> float:
    """``expr`` at the float ``x`` via mpmath, to double precision; FloatingPointError if not real.

    The digits grow (30, 60, ... 960) until two consecutive results agree to 2^-53 relative, so
    cancellation that 30 digits cannot resolve (``1 - tanh(100)**2`` ≈ 5.5e-87) is resolved; an
    infinite mpmath value (``log(0)`` after such a cancellation) is retried at more digits and
    accepted only at the last level.
    """
    previous: float | None = None
    failure: Exception | None = None
    for dps in _MP_LEVELS:
        with mpmath.workdps(dps):
            try:
                value = _mp_eval(expr, mpmath.mpf(x))
            except (ValueError, ZeroDivisionError) as exc:
                failure = exc  # perhaps cancellation to exactly 0 at this precision: go on
                continue
        if isinstance(value, mpmath.mpc):
            if abs(value.imag) > abs(value.real) * 2.0**-60 or value.real == 0:
                failure = FloatingPointError(f"activation is not real at z = {x!r}")
                continue
            value = value.real
        if mpmath.isnan(value):  # inf - inf or 0 * inf beyond mpmath's exponential cap
            failure = FloatingPointError(f"activation cannot be evaluated at z = {x!r}: an "
                                         "intermediate value is beyond exp(2^64) even in mpmath")
            continue
        if mpmath.isinf(value) and dps != _MP_LEVELS[-1]:
            continue  # log(0) after cancellation (1 - tanh(100)**2 at 60 digits): more digits
        result = float(value)
        if math.isinf(result):
            return result  # a finite mpmath value beyond the double range: true overflow
        if previous is not None and (result == previous or
                                     abs(result - previous) <= 2.0**-53 * abs(result)):
            return result
        previous, failure = result, None
    if previous is not None and failure is None:
        return previous  # the highest precision's value (no two levels agreed)
    if isinstance(failure, FloatingPointError):
        raise failure
    raise FloatingPointError(f"activation is undefined at z = {x!r}: {failure}") from None


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


def _base_zeros(base: sp.Expr) -> list[sp.Expr]:
    """Real zeros of a fractional power's base: polynomial, or piecewise polynomial (the zeros of
    every piece, a superset that only adds harmless split points)."""
    pw = sp.piecewise_fold(base.rewrite(sp.Piecewise))
    pieces = pw.args if isinstance(pw, sp.Piecewise) else ((pw, sp.true),)
    if not all(piece.is_polynomial(Z) for piece, _ in pieces):
        raise ActivationError(
            f"cannot locate where {base} vanishes (φ is not smooth there); the base of a "
            "fractional power must be positive or piecewise polynomial in z")
    return [r for piece, _ in pieces if piece.has(Z) for r in _real_zeros(piece)]


def _find_kinks(expr: sp.Expr) -> tuple[sp.Expr, ...]:
    # Keyed by a 30-digit value so that one point reached through two forms is kept once.
    points: dict[str, sp.Expr] = {}

    def add(roots: list[sp.Expr]) -> None:
        for r in roots:
            points.setdefault(str(sp.N(r, 30)), r)

    for node in sp.preorder_traversal(expr):
        if node.is_Pow and node.exp.is_number and not node.exp.is_integer and node.base.has(Z):
            # |u|**q, sqrt(u): not smooth where the base vanishes (a base proved > 0 never does)
            if not proves(node.base, "positive"):
                add(_base_zeros(node.base))
        elif isinstance(node, _KINK_HEADS):
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

    Array evaluation runs a program compiled once per activation from ``sympy.cse`` of
    [φ, φ'] (:meth:`value_and_derivative` shares the common work; ``__call__`` and
    :meth:`derivative` run the parts they need, with bitwise the same results). It works in the
    input's floating dtype (integer input is promoted to float64): constants are rounded once to
    double and then to that dtype, integer powers up to 4 are repeated products (at most 3
    roundings), ``Heaviside`` and ``DiracDelta`` are exact, ``log(c + exp(u))`` (c > 0, so
    softplus ``log(1 + exp(u))`` and ``log1p(exp(u))``) and ``log(exp(u) + exp(v))`` are the
    stable ``logaddexp(log c, u)``, ``(c + u**2)**q`` (q not an integer, so ``sqrt(1 + z**2)``
    and the derivative of ``asinh``) is ``hypot(sqrt(c), u)**(2q)``, ``c**u`` and ``exp2(u)`` are
    ``pow(c, u)`` (exact powers of 2), ``log1p``, ``expm1``, ``asinh`` are the namespace's own, and
    the rest is the namespace's elementwise functions (SciPy/CuPy for ``erf``, ``erfc``). So φ is
    accurate to a few ulp of the dtype times the conditioning of the expression (e.g.
    ``1 - tanh(z)**2`` has absolute error ~ulp(1), not relative).

    *Overflow.* With NumPy, every non-finite value at a finite input is recomputed in 30-digit
    mpmath: NaNs from ``inf/inf`` (silu'(z) for z < -709), and ±inf where the true value is
    finite (``log(1 - tanh(z)**2)`` for |z| > 19, where ``tanh`` rounds to 1; ``log(erfc(z))``
    for z > 27; ``sqrt(1 + z**2)`` for |z| > 1.3e154). A value beyond the dtype's range stays
    ±inf (exp(800)), now checked to be the true overflow; a non-real value raises
    ``FloatingPointError``. So softplus ``log(1 + exp(z))`` at z = ±700 is 700 and 9.86e-305
    (logaddexp, no overflow), and at ±1e5 it is 1e5 and 0.0 (the true value underflows); its
    derivative ``exp(z)/(exp(z) + 1)`` is inf/inf past z = 709.78 and recomputed (= 1.0). In
    mpmath, ``exp``, ``expm1``, ``sinh``, ``cosh`` of |u| > 2^64 are taken as their limits
    (no double can tell the difference, and exact evaluation would not terminate); the digits
    grow to at most 960, so a cancellation beyond that (``log(1 - tanh(z)**2)`` for
    |z| > ~1100) stays -inf. An intermediate overflow that yields a *finite* wrong value is not
    caught: the stable forms above remove the common ones. Other array namespaces (CuPy,
    ``array_api_strict``) return the raw IEEE results.
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

    @cached_property
    def _programs(self) -> tuple[_Program, _Program, _Program]:
        """Compiled array programs for (φ, φ', both), all cut from one CSE of [φ, φ'].

        Sharing one instruction list makes ``value_and_derivative`` bitwise equal to
        ``__call__`` and ``derivative``: each output is computed by the same operations.
        """
        steps, (value, slope), n_slots = _compile_programs([self.expr, self.derivative_expr])
        return (_select(steps, (value,), n_slots), _select(steps, (slope,), n_slots),
                _select(steps, (value, slope), n_slots))

    def __call__(self, x: Any) -> Any:
        """φ(x) elementwise, for any array-API array ``x`` (result in the same namespace)."""
        return self._evaluate(self._programs[0], (self.expr,), x)[0]

    def derivative(self, x: Any) -> Any:
        """φ'(x) elementwise (kink convention in the class Notes)."""
        return self._evaluate(self._programs[1], (self.derivative_expr,), x)[0]

    def value_and_derivative(self, x: Any) -> tuple[Any, Any]:
        """``(φ(x), φ'(x))`` elementwise, sharing their common subexpressions.

        Bitwise equal to ``(self(x), self.derivative(x))`` but cheaper: e.g. for ``relu+tanh``
        ``tanh(x)`` is computed once instead of twice.
        """
        value, slope = self._evaluate(self._programs[2], (self.expr, self.derivative_expr), x)
        return value, slope

    def mp(self, x: Any) -> Any:
        """φ(x) at an mpmath number, in the current ``mpmath.mp`` precision."""
        return _mp_eval(self.expr, mpmath.mpf(x))

    def mp_derivative(self, x: Any) -> Any:
        """φ'(x) at an mpmath number."""
        return _mp_eval(self.derivative_expr, mpmath.mpf(x))

    @staticmethod
    def _evaluate(program: _Program, exprs: tuple[sp.Expr, ...], x: Any) -> list[Any]:
        xp = namespace_of(x)
        # A numpy float array passes both tests below (dtype kind "f" is numpy's real floating).
        if not (type(x) is np.ndarray and x.dtype.kind == "f"):
            if not xp.isdtype(x.dtype, "real floating"):
                if xp.isdtype(x.dtype, "complex floating"):
                    raise BackendError(f"activations are real functions; got a {x.dtype} array")
                x = xp.astype(x, xp.float64)  # integers and booleans: evaluate in float64
            if not is_numpy_namespace(xp):
                return _run_program(program, x, xp)

        # Overflow and underflow are left to run their course (exp(800) = inf, 1/inf = 0);
        # every non-finite result at a finite input (inf/inf, inf - inf, log(0) after an
        # underflow, sqrt(inf) of a finite function) is recomputed below in mpmath.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            outs = _run_program(program, x, xp)
        results = []
        for out, expr in zip(outs, exprs):
            out = np.asarray(out)  # NumPy returns scalars for 0-d inputs
            if not np.isfinite(out).all():  # one cheap pass; the mask only when needed
                bad = ~np.isfinite(out) & np.isfinite(x)
                if bad.any():
                    out[bad] = [_mp_real(expr, float(v)) for v in x[bad]]
            results.append(out)
        return results

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


if set(ACTIVATIONS) != REGISTRY_NAMES or set(_CONSTANTS) != CONSTANT_NAMES:  # rftheory.inputs
    raise ImportError("rftheory.inputs.REGISTRY_NAMES/CONSTANT_NAMES and rftheory.activations "
                      "disagree")


def get_activation(spec: "str | Activation") -> Activation:
    """Return the activation named ``spec`` in :data:`ACTIVATIONS`, or parse it as an expression.

    Parameters
    ----------
    spec : str or Activation
        A registry name (``"relu+tanh"``), or an expression in ``z`` such as
        ``"relu(z) + 0.5*tanh(z)"``. An :class:`Activation` is returned unchanged.

    Returns
    -------
    Activation
        The activation: its name, its numpy, sympy and derivative forms.

    Raises
    ------
    ActivationError
        If the string is neither a registered name nor a safe, valid expression.

    Examples
    --------
    >>> get_activation("relu+tanh").expr
    tanh(z) + Max(0, z)
    >>> get_activation("log(1+exp(z))").expr  # an expression a theorist types
    log(exp(z) + 1)
    """
    if isinstance(spec, Activation):
        return spec
    if not isinstance(spec, str):
        raise ActivationError(f"activation must be a string, got {type(spec).__name__}")
    key = spec.strip()
    text = ACTIVATIONS.get(key.lower(), key)
    return Activation(name=key, expr=parse_activation(text))
