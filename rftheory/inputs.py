"""One rule for text a user types: activation strings and integers, checked with the standard
library only (no numpy, no sympy), so that a refusal answers at once.

Every activation string — a command-line ``EXPR``, a sweep file's ``activation``, an argument of
:func:`rftheory.get_activation` — goes through :func:`activation_text` before anything else:

* surrounding whitespace is stripped (the stripped text is the activation's name, the string
  echoed in results and figures);
* what remains must be non-empty, at most :data:`MAX_EXPRESSION_LENGTH` characters, one line
  without control characters, and ASCII (look-alikes that Python's parser would silently fold
  with NFKC are named);
* unless it is a registry name (:data:`REGISTRY_NAMES`), it must parse as one Python
  *expression* whose tree uses only numbers, ``z``, ``pi``, ``e``, calls of the allowed
  functions (:data:`FUNCTION_NAMES`), ``+ - * / **`` and unary ``+ -``, nested at most
  :data:`MAX_EXPRESSION_DEPTH` deep, with every numeric literal finite and of magnitude at most
  :data:`MAX_LITERAL`.

The size of exponents, the arity of calls and domains are checked afterwards by
:func:`rftheory.activations.parse_activation`, which builds the sympy expression from the same
tree rules. Integers from the command line go through :func:`integer`: ASCII digits only, at most
:data:`MAX_INTEGER_DIGITS` of them, within the option's bounds. Messages quote what was typed
through :func:`shown`, never more than a few dozen characters of it, so a refusal stays one short
line whatever was pasted.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from typing import Any

from .errors import ActivationError, RFTheoryError

__all__ = ["MAX_EXPRESSION_LENGTH", "MAX_EXPRESSION_DEPTH", "MAX_LITERAL", "MAX_INTEGER_DIGITS",
           "CONSTANT_NAMES", "FUNCTION_NAMES", "REGISTRY_NAMES", "activation_text",
           "check_literal", "integer", "shown", "control_character"]

#: Longest accepted activation string (characters, after stripping surrounding whitespace).
MAX_EXPRESSION_LENGTH = 400
#: Deepest accepted expression tree (AST nodes from root to leaf).
MAX_EXPRESSION_DEPTH = 40
#: Largest accepted magnitude of a numeric literal; keeps sympy's exact arithmetic (e.g.
#: ``10**10**10``) from running away.
MAX_LITERAL = 1e6
#: Most digits of an integer typed on the command line (2**64 has 20; sizes far fewer).
MAX_INTEGER_DIGITS = 30
#: Longest part of a typed value quoted in a message.
SHOWN_LENGTH = 40

#: Hints for characters a theorist may paste (the parser accepts ASCII only).
ASCII_HINTS = {"²": "**2", "³": "**3", "−": "-", "–": "-", "×": "*", "·": "*", "⋅": "*",
               "π": "pi", "√": "sqrt(...)", "φ": "an expression in z", "ℯ": "e"}
#: Names of the functions an activation may call (the sympy builders are
#: ``rftheory.activations``'s; it checks at import that the two lists agree).
FUNCTION_NAMES = frozenset({
    "Abs", "Heaviside", "Max", "Min", "abs", "arcsinh", "arctan", "asinh", "atan", "cos", "cosh",
    "elu", "erf", "erfc", "exp", "exp2", "expm1", "gelu", "h", "heaviside", "hermite",
    "leaky_relu", "ln", "log", "log10", "log1p", "log2", "max", "min", "mish", "relu", "sigmoid",
    "sign", "silu", "sin", "sinh", "softplus", "sqrt", "step", "swish", "tanh"})
#: Names of the constants an expression may use.
CONSTANT_NAMES = frozenset({"pi", "e", "E"})
#: The registry's names (``rftheory.activations.ACTIVATIONS``, checked there at import), matched
#: whole and case-insensitively before any parsing.
REGISTRY_NAMES = frozenset({
    "relu", "leaky_relu", "abs", "tanh", "relu+tanh", "erf", "gelu", "silu", "swish",
    "softplus", "sigmoid", "sin", "cos", "step", "quadratic", "cubic", "poly3", "relu2", "h2",
    "h3", "h4"})
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
_UNARY = (ast.USub, ast.UAdd)
_INTEGER = re.compile(r"[+-]?[0-9]+")


def shown(text: Any, limit: int = SHOWN_LENGTH) -> str:
    """``repr(text)``, shortened to about ``limit`` characters with its length named.

    Parameters
    ----------
    text : any
        What was typed (converted with ``str``).
    limit : int
        Most characters of it quoted.

    Returns
    -------
    str
        The quotation, for a message.

    Examples
    --------
    >>> shown("relu")
    "'relu'"
    >>> shown("9" * 400)
    "'99999999999999999999…99999999999999999999' (400 characters)"
    """
    text = str(text)
    if len(text) <= limit:
        return repr(text)
    half = limit // 2
    return f"{text[:half]!r}"[:-1] + "…" + f"{text[-half:]!r}"[1:] + f" ({len(text)} characters)"


def control_character(text: str) -> tuple[int, str] | None:
    """The position and the code (``U+000A``) of the first control character of ``text``
    (C0, DEL, C1), or None.

    Parameters
    ----------
    text : str
        The text.

    Returns
    -------
    tuple of (int, str) or None
        Where the first control character is and its code point.

    Examples
    --------
    >>> control_character("z" + chr(10) + "+ 1")
    (1, 'U+000A')
    """
    for position, char in enumerate(text):
        if ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0:
            return position, f"U+{ord(char):04X}"
    return None


def _check_ascii(text: str) -> None:
    """Refuse non-ASCII characters, naming the first one (and what to type instead)."""
    for position, char in enumerate(text):
        if char.isascii():
            continue
        code = f"U+{ord(char):04X}"
        name = unicodedata.name(char, code)
        folded = unicodedata.normalize("NFKC", char)
        if char in ASCII_HINTS:
            hint = f"; write {ASCII_HINTS[char]}"
        elif folded.isascii() and folded.strip():
            # Python's parser would silently read it as `folded` (NFKC); say so instead
            hint = f"; it looks like {folded!r}"
            whole = unicodedata.normalize("NFKC", text)
            if whole.isascii():
                try:
                    activation_text(whole)
                    hint += f" (did you mean {whole!r}?)"
                except ActivationError:
                    pass  # no suggestion that would itself be refused
        elif char.isspace():
            hint = "; use an ordinary space"
        else:
            hint = ""
        raise ActivationError(f"activation strings must be ASCII: character {char!r} ({code} "
                              f"{name}) at position {position} is refused{hint}")


def check_literal(value: Any) -> None:
    """Refuse a literal that is not a finite real number of magnitude <= :data:`MAX_LITERAL`
    (a huge integer is compared exactly, never converted to float).

    Parameters
    ----------
    value : any
        The value of a literal of the expression's tree.

    Raises
    ------
    ActivationError
        Not an int or float (bools, strings, complex numbers), NaN, infinite or too large.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ActivationError(f"only real numbers are allowed as literals, got {shown(value)}")
    if isinstance(value, float) and value != value or abs(value) > MAX_LITERAL:
        raise ActivationError(f"numeric literal {shown(value)} is out of range "
                              f"(|x| <= {MAX_LITERAL:g})")


def _walk(node: ast.AST, depth: int) -> None:
    """The structural rules of the module docstring (the same messages as the sympy builder)."""
    if depth > MAX_EXPRESSION_DEPTH:
        raise ActivationError(f"expression is nested too deeply (limit {MAX_EXPRESSION_DEPTH})")
    if isinstance(node, ast.Expression):
        _walk(node.body, depth + 1)
    elif isinstance(node, ast.Constant):
        check_literal(node.value)
    elif isinstance(node, ast.Name):
        if node.id in FUNCTION_NAMES:
            raise ActivationError(f"function {node.id!r} must be called, e.g. {node.id}(z)")
        if node.id != "z" and node.id not in CONSTANT_NAMES:
            raise ActivationError(f"unknown name {shown(node.id)} (the variable is 'z')")
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, _UNARY):
            raise ActivationError(f"operator {type(node.op).__name__} is not allowed")
        _walk(node.operand, depth + 1)
    elif isinstance(node, ast.BinOp):
        if not isinstance(node.op, _OPERATORS):
            raise ActivationError(f"operator {type(node.op).__name__} is not allowed")
        _walk(node.left, depth + 1)
        _walk(node.right, depth + 1)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise ActivationError("only calls of whitelisted function names are allowed "
                                  "(attribute access and computed calls are refused)")
        name = node.func.id
        if name not in FUNCTION_NAMES:
            known = ", ".join(sorted(FUNCTION_NAMES))
            raise ActivationError(f"unknown function {shown(name)}; allowed: {known}")
        if node.keywords:
            raise ActivationError(f"keyword arguments are not allowed in {name}(...)")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ActivationError(f"starred arguments are not allowed in {name}(...)")
        for argument in node.args:
            _walk(argument, depth + 1)
    else:
        raise ActivationError(f"{type(node).__name__} is not allowed in an activation expression")


def activation_text(text: Any) -> str:
    """Check an activation string by the rule of the module docstring; return it stripped.

    Parameters
    ----------
    text : str
        A registry name or an expression in ``z``.

    Returns
    -------
    str
        ``text`` without surrounding whitespace.

    Raises
    ------
    ActivationError
        Naming the first rule broken, in one short line.

    Examples
    --------
    >>> activation_text("  relu(z) + tanh(z)  " + " " * 10_000)
    'relu(z) + tanh(z)'
    >>> activation_text("9" * 399)
    Traceback (most recent call last):
    ...
    rftheory.errors.ActivationError: numeric literal '99999999999999999999…99999999999999999999' (399 characters) is out of range (|x| <= 1e+06)
    """
    if not isinstance(text, str):
        raise ActivationError(f"activation must be a string, got {type(text).__name__}")
    source = text.strip()
    if len(source) > MAX_EXPRESSION_LENGTH:
        raise ActivationError(f"activation string is too long ({len(source)} > "
                              f"{MAX_EXPRESSION_LENGTH} characters)")
    if not source:
        raise ActivationError("activation string is empty")
    control = control_character(source)
    if control is not None:
        raise ActivationError(f"cannot parse activation {shown(source)}: control character "
                              f"{control[1]} at position {control[0]} (one line of text)")
    _check_ascii(source)
    if "__" in source:
        raise ActivationError("dunder names are not allowed")
    if source.lower() in REGISTRY_NAMES:
        return source
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError) as exc:
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise ActivationError(f"cannot parse activation {shown(source)}: {message}") from None
    except (RecursionError, MemoryError):
        raise ActivationError("expression is nested too deeply") from None
    _walk(tree, 0)
    return source


def integer(text: Any, option: str, minimum: int | None = None,
            maximum: int | None = None) -> int:
    """A decimal integer typed for ``option`` (e.g. ``"--n"``), within its bounds.

    Parameters
    ----------
    text : str or int
        What was typed; surrounding whitespace is ignored.
    option : str
        The option's name, for the message.
    minimum, maximum : int, optional
        Inclusive bounds.

    Returns
    -------
    int

    Raises
    ------
    RFTheoryError
        Not ASCII digits (an optional sign allowed), more than :data:`MAX_INTEGER_DIGITS`
        digits, or out of bounds.

    Examples
    --------
    >>> integer(" 12 ", "--n", 1)
    12
    >>> integer("9" * 400, "--n", 1)
    Traceback (most recent call last):
    ...
    rftheory.errors.RFTheoryError: --n must be an integer of at most 30 digits, got '99999999999999999999…99999999999999999999' (400 characters)
    """
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        raw = str(text).strip()
        if not _INTEGER.fullmatch(raw):
            raise RFTheoryError(f"{option} must be an integer, got {shown(text)}")
        if len(raw.lstrip("+-")) > MAX_INTEGER_DIGITS:
            raise RFTheoryError(f"{option} must be an integer of at most {MAX_INTEGER_DIGITS} "
                                f"digits, got {shown(text)}")
        value = int(raw)
    got = str(value) if len(str(value)) <= SHOWN_LENGTH else shown(value)
    if minimum is not None and value < minimum:
        raise RFTheoryError(f"{option} must be >= {minimum}, got {got}")
    if maximum is not None and value > maximum:
        raise RFTheoryError(f"{option} must be <= {maximum}, got {got}")
    return value
