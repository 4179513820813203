"""Baselines of the claim checks: a claim's key numbers, stored with their tolerances and reasons.

``rftheory verify CLAIM --update-baseline FILE`` records the key numbers of a run — thresholds,
slopes, success counts, verdicts — and ``rftheory verify CLAIM --baseline FILE`` compares a new
run with them and names every number that moved beyond its tolerance (exit status
:data:`EXIT_MOVED`). This module is that mechanism; the command is a thin layer over
:func:`check_baseline` and :func:`update_baseline`.

The package keeps one of its own, ``tests/baselines/verify_quick.json``; regenerate it after a
change that moves a claim's numbers (about 12 minutes on 2 cores) and commit it with the change::

    rftheory verify all --quick --no-figures --out /tmp/verify_quick \\
        --update-baseline tests/baselines/verify_quick.json

Key numbers. Each claim's are declared in one table, :data:`CLAIM_KEYS` (at the end of this
module), as a tuple of :class:`Key`, e.g. ::

    "law": (
        Key("per_grid[d,n].data.abs.p_star_over_dn", interval="interval_over_dn", reason="..."),
        Key("verdict.supported", reason="the verdict: any change is a finding"),
    ),

A :class:`Key`'s path walks the result dict: ``a.b`` takes a field, ``a.*`` every entry of a dict
(named by its key), ``a[*]`` every element of a list (named by its index), ``a[d,n]`` every
element of a list of dicts, named by those fields (``per_grid[d=4,n=8]``). A claim not in the
table is compared on :data:`DEFAULT_KEYS` (every entry of its ``verdict``), so a new claim
(``headline``, ``single_sample``, …) is covered with no line at all, and each number it adds is
one line; a claim module may instead declare its own ``KEY_NUMBERS`` tuple.

Tolerances. A key's value is split at every dict, at any depth, into its leaves (a verdict
``{"general_n": {"smallest": {"value": 3.2e-06, "n": 3}}}`` gives the key numbers
``verdict.general_n.smallest.value`` and ``verdict.general_n.smallest.n``), and each leaf gets a
tolerance by what it is: booleans, strings and ``None`` always compare exactly; integers
(counts) exactly unless the key gives a count tolerance (``atol=1``: one seed of an optimiser);
floats within the key's tolerance, or, when it gives none, within :data:`ROUNDING_RTOL`
(relative 1e-10 times a condition up to 10: what rounding on another CPU can move). A later key
of a claim's tuple overrides an earlier one for the same leaf, so one float of a verdict can
get its own tolerance. Each entry records its value's type, and ``--baseline`` prints which
key numbers it compared exactly and which within a tolerance. A number passes when
``|new − old| ≤ atol + rtol·|old|`` (numpy's ``isclose``, the rule of pytest-regressions'
``num_regression``), or, with ``factor``, when ``old/factor ≤ new ≤ old·factor`` (thresholds on a
geometric grid of p, where one seed flipping moves the crossing by up to a grid step), or, with
``interval`` (fitted thresholds and exponents), when ``lo ≤ new ≤ hi`` for the confidence
interval [lo, hi] the recorded run gave with the number (stored in the file as the tolerance,
``{"interval": [lo, hi]}``). Lists compare elementwise. NaN equals NaN. The tolerance and its
reason are written into the baseline file next to each value and the comparison reads them from
the file, so a reviewer sees why a number may move, and loosening one is a reviewed change of
the file (``--update-baseline`` writes the declared ones again).

What may differ across machines (README, "Determinism"): the package's numbers are deterministic
functions of the seed, but BLAS kernels (the CPU's vector width, the library and its version),
libm's last bits and the thread count change floating-point sums in their last bits. Closed
forms, quadratures and Monte Carlo averages over the fixed V then move by ~1e-15 relative; the
reconstruction optimiser, a chaotic iteration, can take a different path — other step counts,
and near the threshold another seed may succeed or fail. The declared tolerances are sized for
that (each says so); step counts and timings are never key numbers. The check warns when the
baseline was recorded with other package versions, another V definition, other reconstruction
sources or on another machine (CPU model, BLAS library and kernel architecture).

Examples
--------
>>> result = {"verdict": {"supported": True, "slope": -0.51}, "rows": [{"p": 10, "rho": 1e-5}]}
>>> keys = (Key("verdict.supported"), Key("rows[p].rho", atol=1e-3, reason="optimiser"))
>>> numbers = key_numbers(result, keys)
>>> sorted(numbers)
['rows[p=10].rho', 'verdict.supported']
>>> moved = compare_numbers({k: v.as_json() for k, v in numbers.items()},
...                         {"verdict": {"supported": False}, "rows": [{"p": 10, "rho": 2e-3}]}, keys)
>>> [m.name for m in moved]
['rows[p=10].rho', 'verdict.supported']
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import re
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .errors import RFTheoryError

__all__ = [
    "FORMAT",
    "EXIT_MOVED",
    "ROUNDING_RTOL",
    "validate_baseline",
    "Key",
    "KeyNumber",
    "Difference",
    "ClaimComparison",
    "DEFAULT_KEYS",
    "CLAIM_KEYS",
    "claim_keys",
    "key_numbers",
    "compare_numbers",
    "compare_entries",
    "machine",
    "record_claim",
    "read_baseline",
    "check_ready",
    "compare_claim",
    "check_baseline",
    "update_baseline",
]

#: The baseline file's format tag.
FORMAT = "rftheory-baseline/2"
#: Earlier formats: read as "regenerate this file" (version 1 had no value types and was
#: recorded with V philox4x64-10+box-muller/1, whose numbers no longer come out).
_OLD_FORMATS = ("rftheory-baseline/1",)
#: The relative tolerance of a float a key declares none for: what rounding can move it, 1e-10
#: times its condition, for a condition up to 10 (a closed form, a quadrature, a ratio of
#: those). Floats an optimiser decides need their own key, with a tolerance in counts or
#: ratios (see CLAIM_KEYS).
ROUNDING_RTOL = 1e-9
_ROUNDING_REASON = ("its floats within relative 1e-10·condition (condition <= 10): rounding, "
                    "which another CPU's BLAS or libm moves")
#: How deep a value's lists may nest in a baseline file.
_MAX_DEPTH = 8
#: Exit status of ``rftheory verify --baseline`` when a key number moved beyond its tolerance
#: or went missing (2 means bad input, 0 that every number held).
EXIT_MOVED = 3


@dataclasses.dataclass(frozen=True)
class Key:
    """A key number of a claim's result: where it is, how far it may move, and why.

    Parameters
    ----------
    path : str
        Where in the result (see the module docstring): ``"verdict.supported"``,
        ``"curves[activation].slope"``, ``"per_grid[d,n].data.abs.p_star_over_dn"``, ``"a.*"``.
    atol, rtol : float
        Absolute and relative tolerance of numbers (``|new − old| ≤ atol + rtol·|old|``).
    factor : float, optional
        Multiplicative tolerance (``old/factor ≤ new ≤ old·factor``), > 1; replaces atol/rtol.
    interval : str, optional
        The name of a sibling field (in the same dict as the number) holding the number's
        confidence interval ``[lo, hi]``: the recorded run's interval becomes the tolerance
        (``lo ≤ new ≤ hi``), so a fitted threshold may move as far as its own uncertainty and
        no further; replaces atol/rtol/factor.
    reason : str
        Why the number may move that much (written into the baseline file).
    """

    path: str
    atol: float = 0.0
    rtol: float = 0.0
    factor: float | None = None
    reason: str = ""
    interval: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path:
            raise RFTheoryError(f"a key's path must be a non-empty string, got {self.path!r}")
        _parse_path(self.path)
        if not (self.atol >= 0 and self.rtol >= 0 and math.isfinite(self.atol + self.rtol)):
            raise RFTheoryError(f"{self.path}: atol and rtol must be finite and >= 0")
        if self.factor is not None and not (self.factor > 1 and math.isfinite(self.factor)):
            raise RFTheoryError(f"{self.path}: factor must be a finite number > 1, got {self.factor}")

    def tolerance(self) -> dict[str, float] | str:
        """The tolerance as the baseline file stores it (``"exact"`` when none is given)."""
        if self.factor is not None:
            return {"factor": self.factor}
        if self.atol == 0 and self.rtol == 0:
            return "exact"
        return {"atol": self.atol, "rtol": self.rtol}


@dataclasses.dataclass(frozen=True)
class KeyNumber:
    """A key number found in a result: its value, tolerance and reason.

    Parameters
    ----------
    name : str
        Its concrete name (``per_grid[d=4,n=8].data.abs.p_star_over_dn``).
    value : object
        The value as plain Python (lists, dicts, floats; NaN and ±inf kept as floats).
    tolerance : dict or str
        As :meth:`Key.tolerance` gives it (``"exact"`` for values without numbers).
    reason : str
        Why the number may move that much.
    """

    name: str
    value: Any
    tolerance: Any
    reason: str

    @property
    def type(self) -> str:
        """The value's type as the file records it: bool, int, float, str, null or list."""
        return _type_of(self.value)

    def as_json(self) -> dict[str, Any]:
        """The baseline file's entry for this number."""
        return {"value": _encode(self.value), "type": self.type, "tolerance": self.tolerance,
                "reason": self.reason}


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


@dataclasses.dataclass(frozen=True)
class Difference:
    """A key number that moved beyond its tolerance (or is missing on one side).

    Parameters
    ----------
    claim : str
        The claim's name.
    name : str
        The key number's concrete name (``"(result)"`` when the result lacks a key's path).
    baseline : object
        Its value in the baseline (a missing marker when it is not there).
    obtained : object
        Its value in this run (a missing marker when it is not there).
    tolerance : dict or str
        The tolerance applied (``"exact"``, ``{"atol": ..., "rtol": ...}`` or
        ``{"factor": ...}``).
    reason : str
        The tolerance's reason.
    problem : str
        What is wrong: ``"moved beyond its tolerance"``, ``"not in the baseline"``,
        ``"missing from this run"``, or the error of a result that changed shape.
    """

    claim: str
    name: str
    baseline: Any
    obtained: Any
    tolerance: Any
    reason: str
    problem: str

    def describe(self) -> str:
        """One line naming the number, both values, the tolerance and its reason."""
        tol = self.tolerance if isinstance(self.tolerance, str) else \
            ", ".join(f"{k} {_show(_restore(v))}" if isinstance(v, list) else f"{k} {v:g}"
                      for k, v in self.tolerance.items())
        why = f" — {self.reason}" if self.reason else ""
        return (f"{self.claim}: {self.name}: {self.problem}: baseline {_show(self.baseline)}, "
                f"this run {_show(self.obtained)} (tolerance {tol}){why}")


@dataclasses.dataclass(frozen=True)
class ClaimComparison:
    """A run of one claim against its baseline entry.

    Parameters
    ----------
    claim : str
        The claim's name.
    checked : int
        Key numbers in the baseline entry.
    moved : tuple of Difference
        The numbers that moved beyond their tolerances or are missing on one side.
    warnings : tuple of str
        Provenance differences (versions, machine, source digests) and what they mean.
    exact : tuple of str
        The key numbers compared exactly (booleans, strings, None, counts without a tolerance).
    within : tuple of str
        The key numbers compared within a tolerance (floats, counts with one).
    """

    claim: str
    checked: int
    moved: tuple
    warnings: tuple
    exact: tuple = ()
    within: tuple = ()

    @property
    def ok(self) -> bool:
        return not self.moved


# ---------------------------------------------------------------------------------------------
# Paths and values
# ---------------------------------------------------------------------------------------------

_SEGMENT = re.compile(r"^(?P<name>[^.\[\]]+|\*)(?:\[(?P<select>[^\]]*)\])?$")


def _split(path: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in path:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "." and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def _parse_path(path: str) -> list[tuple[str, str | None]]:
    out = []
    for part in _split(path):
        m = _SEGMENT.match(part)
        if m is None:
            raise RFTheoryError(f"bad key path {path!r} at {part!r}")
        out.append((m["name"], m["select"]))
    return out


def _label(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def _walk(node: Any, segments: Sequence[tuple[str, str | None]], name: str,
          out: dict[str, Any]) -> None:
    if not segments:
        out[name] = node
        return
    (field, select), rest = segments[0], segments[1:]
    if field == "*":
        if not isinstance(node, Mapping):
            raise KeyError(f"{name or 'result'} is not a dict")
        for key, value in node.items():
            _walk(value, rest, f"{name}.{key}" if name else str(key), out)
        return
    if not isinstance(node, Mapping) or field not in node:
        raise KeyError(f"{name + '.' if name else ''}{field}")
    node, name = node[field], f"{name}.{field}" if name else field
    if select is None:
        _walk(node, rest, name, out)
        return
    if not isinstance(node, (list, tuple)):
        raise KeyError(f"{name} is not a list")
    fields = [f.strip() for f in select.split(",") if f.strip()]
    for i, element in enumerate(node):
        if fields == ["*"] or not fields:
            label = str(i)
        else:
            if not isinstance(element, Mapping) or any(f not in element for f in fields):
                raise KeyError(f"{name}[{i}] has no field {', '.join(fields)}")
            label = ",".join(f"{f}={_label(element[f])}" for f in fields)
        _walk(element, rest, f"{name}[{label}]", out)


def _jsonable(value: Any) -> Any:
    from .output import to_jsonable

    return to_jsonable(value)


def _plain(value: Any) -> Any:
    """A key number as plain Python (lists, dicts, floats), NaN and ±inf kept as floats."""
    from .output import to_jsonable

    return to_jsonable(value, finite_only=False)


def _encode(value: Any) -> Any:
    """The baseline file's form of a value: NaN and ±inf as the strings "nan", "inf", "-inf"
    (strict JSON that still tells NaN — no crossing — from inf), recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def _restore(value: Any) -> Any:
    """The file's "nan"/"inf" strings back to floats, recursively (inverse of :func:`_encode`)."""
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    if isinstance(value, list):
        return [_restore(v) for v in value]
    if isinstance(value, dict):
        return {k: _restore(v) for k, v in value.items()}
    return value


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list) and len(value) > 8:
        return "[" + ", ".join(_show(v) for v in value[:8]) + ", …]"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return "missing" if value is _MISSING else repr(value)


_MISSING = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _within(old: Any, new: Any, tolerance: Any) -> bool:
    old, new = _restore(old), _restore(new)
    if isinstance(old, list) or isinstance(new, list):
        return (isinstance(old, list) and isinstance(new, list) and len(old) == len(new)
                and all(_within(a, b, tolerance) for a, b in zip(old, new)))
    if isinstance(old, dict) or isinstance(new, dict):
        return (isinstance(old, dict) and isinstance(new, dict) and old.keys() == new.keys()
                and all(_within(old[k], new[k], tolerance) for k in old))
    if not (_is_number(old) and _is_number(new)):
        return type(old) is type(new) and old == new
    old, new = float(old), float(new)
    if math.isnan(old) or math.isnan(new):
        return math.isnan(old) and math.isnan(new)
    if math.isinf(old) or math.isinf(new):
        return old == new
    if tolerance == "exact":
        return old == new
    if "interval" in tolerance:  # the recorded run's confidence interval, widened (see below)
        lo, hi = (float(x) if x is not None else math.nan for x in _restore(tolerance["interval"]))
        lo, hi = interval_band(old, lo, hi)
        return lo <= new <= hi
    if "factor" in tolerance:
        if old == 0 or new == 0:
            return old == new
        return (old > 0) == (new > 0) and max(old / new, new / old) <= tolerance["factor"]
    return abs(new - old) <= tolerance.get("atol", 0.0) + tolerance.get("rtol", 0.0) * abs(old)


#: How far beyond its recorded 95 % interval a fitted number may land in another run before it
#: counts as moved: the wider side of [lo, hi] is stretched by this factor, both ways about the
#: recorded value (:func:`interval_band`).
#: A rerun on another machine is a second, independent estimate (another BLAS kernel sends the
#: chaotic optimiser down other paths: measured, the quick law's (d, n) = (3, 12) threshold moved
#: from 1.508 to 1.426 under OPENBLAS_CORETYPE=Haswell, outside [1.448, 1.849]). The difference of
#: two estimates of equal precision has √2 times the spread of one, and a baseline holds some ten
#: such numbers at once, so each is tested at the two-sided 99.5 % level (Bonferroni: about a 5 %
#: chance of any false alarm per run): √2 · z(0.9975) / z(0.975) ≈ 2.03.
INTERVAL_WIDENING = math.sqrt(2.0) * 2.807033768343811 / 1.959963984540054


def interval_band(value: float, lo: float, hi: float) -> tuple[float, float]:
    """The band a rerun of a fitted number must land in: ``value`` ± the wider finite side of
    ``[lo, hi]``, times :data:`INTERVAL_WIDENING`.

    Both directions use the wider side: a second estimate lands below the recorded one by the
    spread of both, and the recorded interval's short side says nothing about the second
    estimate's own spread. Measured: the quick law's (3, 3) threshold was 1.010 [1.000, 1.052]
    (its lower end at the grid point p = 9 = dn, where 3 of 13 runs succeeded); the same run
    with base seed 1000 gave 0.943 [0.900, 0.986] — far outside 1.010 − 2.03·0.010, within
    1.010 − 2.03·0.042. For a symmetric interval this is the interval widened by
    :data:`INTERVAL_WIDENING`; an open side (±inf) stays open.

    Parameters
    ----------
    value : float
        The recorded number.
    lo, hi : float
        Its recorded 95 % interval (an open side is ±inf).

    Returns
    -------
    (float, float)
        ``value ∓ w·max(value − lo, hi − value)`` with ``w =`` :data:`INTERVAL_WIDENING` (an
        infinite side stays infinite and is left out of the max).

    Examples
    --------
    >>> [round(x, 3) for x in interval_band(1.0, 0.9, 1.1)]
    [0.797, 1.203]
    >>> [round(x, 3) for x in interval_band(1.0, 0.99, 1.04)]  # the wider side, both ways
    [0.919, 1.081]
    """
    w = INTERVAL_WIDENING
    sides = [x for x in (value - lo, hi - value) if math.isfinite(x)]
    side = max(sides) if sides else math.inf
    return (value - w * side if math.isfinite(lo) else lo,
            value + w * side if math.isfinite(hi) else hi)


# ---------------------------------------------------------------------------------------------
# Key numbers of a result
# ---------------------------------------------------------------------------------------------

#: The key numbers of a claim that declares none: every entry of its verdict — booleans and
#: strings exactly, numbers to 1e-9 relative.
DEFAULT_KEYS = (Key("verdict.*", rtol=1e-9,
                    reason="the claim's verdict (no key numbers declared): booleans and lists "
                           "exactly; numbers to 1e-9 relative, room for last-bit differences"),)


def claim_keys(module: Any) -> tuple[Key, ...]:
    """A claim's key numbers: the module's ``KEY_NUMBERS``, else its :data:`CLAIM_KEYS` entry,
    else :data:`DEFAULT_KEYS`.

    Parameters
    ----------
    module : module
        The claim's module (its ``CLAIM`` name, optionally ``KEY_NUMBERS``).

    Returns
    -------
    tuple of Key
        The keys, never empty.

    Raises
    ------
    RFTheoryError
        When ``KEY_NUMBERS`` is empty or holds something other than :class:`Key`.
    """
    keys = getattr(module, "KEY_NUMBERS", None)
    if keys is None:
        keys = CLAIM_KEYS.get(getattr(module, "CLAIM", None))
    if keys is None:
        return DEFAULT_KEYS
    keys = tuple(keys)
    if not keys or not all(isinstance(k, Key) for k in keys):
        raise RFTheoryError(f"{getattr(module, 'CLAIM', module)}: KEY_NUMBERS must be a "
                            "non-empty tuple of rftheory.baseline.Key")
    return keys


def key_numbers(result: Mapping[str, Any], keys: Iterable[Key]) -> dict[str, KeyNumber]:
    """Every key number of ``result``, by its concrete name (``per_grid[d=4,n=8]...``).

    Parameters
    ----------
    result : mapping
        A claim's result dict.
    keys : iterable of Key
        Where its key numbers are and their tolerances.

    Returns
    -------
    dict of str to KeyNumber
        Each key number found, by its concrete name.

    Raises
    ------
    RFTheoryError
        When a key's path is not in the result (the claim's result changed shape: update its
        entry of :data:`CLAIM_KEYS`).
    """
    out: dict[str, KeyNumber] = {}
    for key in keys:
        found: dict[str, Any] = {}
        try:
            _walk(result, _parse_path(key.path), "", found)
        except KeyError as exc:
            raise RFTheoryError(f"key number {key.path!r}: {exc.args[0]} is not in the result") \
                from None
        bounds: dict[str, Any] = {}
        if key.interval is not None:  # the sibling field holding each number's interval
            try:
                _walk(result, _parse_path(key.path)[:-1] + [(key.interval, None)], "", bounds)
            except KeyError as exc:
                raise RFTheoryError(f"key number {key.path!r}: interval {exc.args[0]} is not in "
                                    "the result") from None
        for name, value in found.items():
            for leaf_name, leaf in _leaves(name, _plain(value)):
                number = _key_number(key, leaf_name, leaf)
                if key.interval is not None and leaf_name == name and _has_numbers(leaf):
                    sibling = (name.rpartition(".")[0] + "." + key.interval if "." in name
                               else key.interval)
                    number = KeyNumber(leaf_name, leaf,
                                       {"interval": _encode(_plain(bounds[sibling]))}, key.reason)
                out[leaf_name] = number
    return out


def _leaves(name: str, value: Any) -> list[tuple[str, Any]]:
    """A value split at every dict (at any depth) into its leaves, named ``name.field``; lists
    of dicts split by index (``name[0].field``); other lists stay one value (elementwise)."""
    out, stack = [], [(name, value)]
    while stack:
        label, node = stack.pop()
        if isinstance(node, dict) and node:
            stack.extend((f"{label}.{k}", v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list) and any(isinstance(v, dict) for v in node):
            stack.extend((f"{label}[{i}]", v) for i, v in reversed(list(enumerate(node))))
        else:
            out.append((label, node))
    return out


def _has_floats(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_floats(v) for v in value)
    return isinstance(value, float)


def _key_number(key: Key, name: str, value: Any) -> KeyNumber:
    """The tolerance a leaf gets: booleans, strings and None exactly; integers (counts) exactly
    unless the key gives a tolerance (counts of seeds an optimiser decides); floats within the
    key's tolerance, or within :data:`ROUNDING_RTOL` when it gives none."""
    if not _has_numbers(value):
        return KeyNumber(name, value, "exact", key.reason)
    declared = key.tolerance()
    if declared != "exact":
        return KeyNumber(name, value, declared, key.reason)
    if _has_floats(value):
        return KeyNumber(name, value, {"atol": 0.0, "rtol": ROUNDING_RTOL},
                         f"{key.reason}; {_ROUNDING_REASON}" if key.reason else _ROUNDING_REASON)
    return KeyNumber(name, value, "exact", key.reason)


def _has_numbers(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_numbers(v) for v in value)
    if isinstance(value, dict):
        return any(_has_numbers(v) for v in value.values())
    return _is_number(value)


def compare_numbers(baseline: Mapping[str, Mapping[str, Any]], result: Mapping[str, Any],
                    keys: Iterable[Key], *, claim: str = "") -> list[Difference]:
    """The key numbers of ``result`` that moved beyond the tolerances stored in ``baseline``.

    ``baseline`` maps names to the file's entries (``value``, ``tolerance``, ``reason``). A
    number in the baseline but not in the run, or in the run but not in the baseline, is a
    difference too (a claim's result changed shape).

    Parameters
    ----------
    baseline : mapping
        The baseline entry's numbers: name to ``{"value", "tolerance", "reason"}``.
    result : mapping
        This run's result dict.
    keys : iterable of Key
        The claim's key numbers.
    claim : str, default ""
        The claim's name, for the differences.

    Returns
    -------
    list of Difference
        Every moved or missing number, sorted by name (empty when all held).
    """
    try:
        numbers = key_numbers(result, keys)
    except RFTheoryError as exc:
        return [Difference(claim, "(result)", None, None, "exact", "", str(exc))]
    return compare_entries(baseline, numbers, claim=claim)


def compare_entries(baseline: Mapping[str, Mapping[str, Any]], numbers: Mapping[str, KeyNumber],
                    *, claim: str = "") -> list[Difference]:
    """The key numbers of a run (``numbers``) that moved beyond the baseline's tolerances.

    Parameters
    ----------
    baseline : mapping
        The baseline entry's numbers: name to ``{"value", "type", "tolerance", "reason"}``.
    numbers : mapping of str to KeyNumber
        This run's key numbers (:func:`key_numbers`).
    claim : str, default ""
        The claim's name, for the differences.

    Returns
    -------
    list of Difference
        Every moved or missing number, sorted by name (empty when all held).
    """
    moved = []
    for name in sorted(set(baseline) | set(numbers)):
        entry = baseline.get(name)
        obtained = numbers.get(name)
        if entry is None:
            moved.append(Difference(claim, name, _MISSING, obtained.value, obtained.tolerance,
                                    obtained.reason, "not in the baseline"))
        elif obtained is None:
            moved.append(Difference(claim, name, _restore(entry["value"]), _MISSING,
                                    entry.get("tolerance", "exact"), entry.get("reason", ""),
                                    "missing from this run"))
        elif not _within(entry["value"], obtained.value, entry.get("tolerance", "exact")):
            moved.append(Difference(claim, name, _restore(entry["value"]), obtained.value,
                                    entry.get("tolerance", "exact"), entry.get("reason", ""),
                                    "moved beyond its tolerance"))
    return sorted(moved, key=lambda d: d.name)


# ---------------------------------------------------------------------------------------------
# Provenance
# ---------------------------------------------------------------------------------------------

def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def machine() -> dict[str, Any]:
    """What decides the last bits of floating-point sums here: CPU, BLAS library and kernels.

    ``blas`` lists the BLAS libraries numpy and scipy loaded (threadpoolctl): their name,
    version, the kernel architecture they picked for this CPU (e.g. OpenBLAS ``Haswell`` or
    ``SkylakeX``) and threading layer. numpy's and scipy's linear algebra are loaded first, so
    the list does not depend on what the process happened to import before.

    Returns
    -------
    dict
        ``platform``, ``machine``, ``cpu`` (model, or None), ``cpus`` and ``blas`` (a list of
        dicts with ``library``, ``version``, ``architecture``, ``threading``).
    """
    import numpy.linalg  # noqa: F401  (each wheel ships its own OpenBLAS)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    blas = sorted({(i.get("internal_api"), i.get("version"), i.get("architecture"),
                    i.get("threading_layer")) for i in threadpool_info()
                   if i.get("user_api") == "blas"}, key=str)
    return {"platform": platform.platform(), "machine": platform.machine(),
            "cpu": _cpu_model(), "cpus": os.cpu_count(),
            "blas": [dict(zip(("library", "version", "architecture", "threading"), b))
                     for b in blas]}


def _differences(label: str, old: Mapping[str, Any], new: Mapping[str, Any],
                 skip: Sequence[str] = (), *, consequence: str) -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        if key in skip:
            continue
        if _jsonable(old.get(key)) != _jsonable(new.get(key)):
            out.append(f"{label}{key}: baseline {old.get(key)!r}, this run {new.get(key)!r} "
                       f"({consequence})")
    return out


#: What each kind of provenance difference means for the numbers (the warnings say it).
_LAST_BITS = ("numbers may differ in their last bits, the optimiser's in which seeds succeed; "
              "the tolerances allow for that")
_CODE = "the code that computes these numbers changed: a moved number may be the change's effect"


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------

def record_claim(module: Any, result: Mapping[str, Any]) -> dict[str, Any]:
    """The baseline file's entry for one claim's result: how it was run, where, its numbers.

    Parameters
    ----------
    module : module
        The claim's module (see :func:`claim_keys`).
    result : mapping
        The claim's result dict.

    Returns
    -------
    dict
        ``run`` (``quick``, ``seed``), ``recorded`` (``environment``, ``machine``, ``sources``)
        and ``numbers`` (name to the file's entry, sorted).
    """
    numbers = key_numbers(result, claim_keys(module))
    return {
        "run": {"quick": bool(result.get("quick", False)), "seed": result.get("seed", 0)},
        "recorded": {"environment": _jsonable(result.get("environment", {})),
                     "machine": machine(),
                     "sources": _jsonable(result.get("sources", {}))},
        "numbers": {name: n.as_json() for name, n in sorted(numbers.items())},
    }


def read_baseline(path: str | Path, *, for_update: bool = False) -> dict[str, Any]:
    """Read and check a baseline file (one clear RFTheoryError when it is not one).

    Parameters
    ----------
    path : str or Path
        The baseline file.
    for_update : bool, default False
        Reading it to write into: a baseline of an earlier format is then taken as empty (it
        is superseded: recorded with another V and without value types).

    Returns
    -------
    dict
        The file's content: ``format``, ``claims`` (name to entry) and the file's notes.

    Raises
    ------
    RFTheoryError
        When the file is missing, not JSON, not a baseline, or holds a malformed entry.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise RFTheoryError(f"baseline {str(path)!r} does not exist; write one with "
                            "--update-baseline") from None
    except RecursionError:
        raise RFTheoryError(f"baseline {str(path)!r}: nested too deeply to be a baseline "
                            f"(values nest at most {_MAX_DEPTH} lists)") from None
    except (OSError, ValueError) as exc:
        raise RFTheoryError(f"baseline {str(path)!r} is not readable JSON: {exc}") from None
    if for_update and isinstance(data, dict) and data.get("format") in _OLD_FORMATS:
        return {"format": FORMAT, "claims": {}}
    validate_baseline(data, str(path))
    return data


_TOLERANCE_SHAPE = ('"exact", {"atol": number >= 0, "rtol": number >= 0}, '
                    '{"factor": number > 1} or {"interval": [lo, hi]}')
_TYPES = ("bool", "int", "float", "str", "null", "list")


def _fail(source: str, where: str, should: str, got: Any) -> RFTheoryError:
    text = repr(got)
    if len(text) > 60:
        text = text[:57] + "..."
    return RFTheoryError(f"baseline {source!r}: {where} must be {should}, got {text}")


def _real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_tolerance(tol: Any, where: str, source: str) -> None:
    if tol == "exact":
        return
    if isinstance(tol, dict) and set(tol) == {"interval"}:  # a fitted number's recorded interval
        bounds = tol["interval"]
        ends = [float(b) if b in ("inf", "-inf", "nan") else b
                for b in bounds] if isinstance(bounds, list) else []
        if (len(ends) != 2 or not all(isinstance(b, (int, float)) and not isinstance(b, bool)
                                      for b in ends)
                or ends[0] > ends[1]):  # NaN (a side the fit could not give) compares False
            raise _fail(source, f"{where}.interval", "[lo, hi] with lo <= hi (numbers, or "
                        '"-inf"/"inf" for an open side, "nan" for an unknown one)', bounds)
        return
    if not isinstance(tol, dict) or not tol or not (set(tol) <= {"atol", "rtol"}
                                                     or set(tol) == {"factor"}):
        raise _fail(source, where, _TOLERANCE_SHAPE, tol)
    for name, value in tol.items():
        ok = _real(value) and (value > 1 if name == "factor" else value >= 0)
        if not ok:
            raise _fail(source, f"{where}.{name}", "a finite number " +
                        ("> 1" if name == "factor" else ">= 0"), value)


def _check_scalar(value: Any, kind: str, where: str, source: str) -> None:
    """One value against its recorded type; floats finite or the strings "nan", "inf", "-inf"."""
    special = isinstance(value, str) and value in ("nan", "inf", "-inf")
    ok = {"bool": isinstance(value, bool),
          "int": isinstance(value, int) and not isinstance(value, bool),
          "float": _real(value) or special,
          "str": isinstance(value, str),
          "null": value is None}[kind]
    if not ok:
        what = {"bool": "true or false", "int": "an integer", "str": "a string", "null": "null",
                "float": 'a finite number or "nan", "inf", "-inf"'}[kind]
        raise _fail(source, where, f"{what} (its type is {kind})", value)


def _check_list(value: Any, where: str, source: str) -> None:
    stack = [(value, where, 0)]
    while stack:
        node, at, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise _fail(source, at, f"nested at most {_MAX_DEPTH} lists deep", "deeper")
        if isinstance(node, list):
            stack.extend((v, f"{at}[{i}]", depth + 1) for i, v in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            raise _fail(source, at, 'a finite number or "nan", "inf", "-inf"', node)
        elif not (node is None or isinstance(node, (bool, int, float, str))):
            raise _fail(source, at, "a number, a string, true/false, null or a list", node)


def _check_mapping(value: Any, where: str, source: str) -> None:
    """A provenance record: a dict of JSON values, floats finite, nested at most _MAX_DEPTH."""
    stack = [(value, where, 0)]
    while stack:
        node, at, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise _fail(source, at, f"nested at most {_MAX_DEPTH} levels deep", "deeper")
        if isinstance(node, dict):
            stack.extend((v, f"{at}.{k}", depth + 1) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, f"{at}[{i}]", depth + 1) for i, v in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            raise _fail(source, at, "a finite number", node)


def validate_baseline(data: Any, source: str = "baseline") -> None:
    """Check a parsed baseline file against its schema, before any run.

    The schema (format :data:`FORMAT`): ``{"format": FORMAT, "claims": {claim: entry}, ...}``,
    an entry ``{"run": {"quick": bool, "seed": int >= 0}, "recorded": {"environment": {...},
    "machine": {...}, "sources": {...}}, "numbers": {name: number}}`` and a number
    ``{"value": ..., "type": "bool"|"int"|"float"|"str"|"null"|"list", "tolerance":
    "exact" | {"atol": x >= 0, "rtol": x >= 0} | {"factor": x > 1}, "reason": str}``. The value
    must be of its type (floats finite, or the strings "nan", "inf", "-inf"; a list of such
    values at most 8 deep); a tolerance other than "exact" only on numbers. Nothing is
    defaulted: a missing tolerance is an error, never "exact".

    Parameters
    ----------
    data : object
        The parsed JSON.
    source : str, default "baseline"
        The file's name, for the message.

    Raises
    ------
    RFTheoryError
        One line naming the first key that does not fit and what it should be.

    Examples
    --------
    >>> entry = {"value": 0.5, "type": "float", "tolerance": "loose", "reason": ""}
    >>> validate_baseline({"format": FORMAT, "claims": {"law": {
    ...     "run": {"quick": True, "seed": 0}, "numbers": {"verdict.x": entry}}}}, "b.json")
    Traceback (most recent call last):
    ...
    rftheory.errors.RFTheoryError: baseline 'b.json': claims.law.numbers.verdict.x.tolerance must be "exact", {"atol": number >= 0, "rtol": number >= 0}, {"factor": number > 1} or {"interval": [lo, hi]}, got 'loose'
    """
    if isinstance(data, dict) and data.get("format") in _OLD_FORMATS:
        raise RFTheoryError(f"baseline {source!r} is format {data['format']} (recorded with an "
                            f"earlier V and without value types): regenerate it with "
                            "--update-baseline")
    if not isinstance(data, dict) or data.get("format") != FORMAT \
            or not isinstance(data.get("claims"), dict):
        raise RFTheoryError(f"{source!r} is not an rftheory baseline (format {FORMAT})")
    for claim, entry in data["claims"].items():
        at = f"claims.{claim}"
        if not isinstance(entry, dict):
            raise _fail(source, at, 'an entry {"run", "recorded", "numbers"}', entry)
        for field in ("run", "numbers"):
            if not isinstance(entry.get(field), dict):
                raise _fail(source, f"{at}.{field}", "an object", entry.get(field, "missing"))
        run = entry["run"]
        if not isinstance(run.get("quick"), bool):
            raise _fail(source, f"{at}.run.quick", "true or false", run.get("quick", "missing"))
        seed = run.get("seed")
        if not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
            raise _fail(source, f"{at}.run.seed", "a non-negative integer", seed)
        recorded = entry.get("recorded", {})
        if not isinstance(recorded, dict):
            raise _fail(source, f"{at}.recorded", 'an object {"environment", "machine", '
                        '"sources"}', recorded)
        for field in ("environment", "machine", "sources"):
            if field in recorded and not isinstance(recorded[field], dict):
                raise _fail(source, f"{at}.recorded.{field}", "an object", recorded[field])
        _check_mapping(recorded, f"{at}.recorded", source)
        for name, number in entry["numbers"].items():
            where = f"{at}.numbers.{name}"
            if not isinstance(number, dict):
                raise _fail(source, where, 'an entry {"value", "type", "tolerance", "reason"}',
                            number)
            for field in ("value", "type", "tolerance"):
                if field not in number:
                    raise _fail(source, f"{where}.{field}", "present" + (
                        " (no tolerance is never taken as exact)" if field == "tolerance" else ""),
                        "missing")
            if not isinstance(number.get("reason", ""), str):
                raise _fail(source, f"{where}.reason", "a string", number["reason"])
            kind, value, tol = number["type"], number["value"], number["tolerance"]
            if kind not in _TYPES:
                raise _fail(source, f"{where}.type", "one of " + ", ".join(_TYPES), kind)
            _check_tolerance(tol, f"{where}.tolerance", source)
            if kind == "list":
                if not isinstance(value, list):
                    raise _fail(source, f"{where}.value", "a list (its type is list)", value)
                _check_list(value, f"{where}.value", source)
            else:
                _check_scalar(value, kind, f"{where}.value", source)
            if tol != "exact" and kind in ("bool", "str", "null"):
                raise _fail(source, f"{where}.tolerance", f'"exact" (its type is {kind})', tol)


def check_ready(path: str | Path, claims: Sequence[str], *, quick: bool, seed: int) -> dict:
    """Before any run: the baseline exists, has every claim, and was recorded the same way.

    Raises :class:`~rftheory.errors.RFTheoryError` (bad input, exit status 2) otherwise.

    Parameters
    ----------
    path : str or Path
        The baseline file.
    claims : sequence of str
        The claims about to run.
    quick : bool
        Whether they run with ``--quick``.
    seed : int
        Their seed.

    Returns
    -------
    dict
        The baseline file's content (as :func:`read_baseline`).
    """
    data = read_baseline(path)
    for claim in claims:
        entry = data["claims"].get(claim)
        if entry is None:
            raise RFTheoryError(f"baseline {str(path)!r} has no entry for {claim!r} (it has "
                                f"{', '.join(sorted(data['claims'])) or 'none'}); add one with "
                                "--update-baseline")
        run = entry["run"]
        if bool(run.get("quick")) != bool(quick) or run.get("seed") != seed:
            raise RFTheoryError(
                f"baseline {str(path)!r} holds {claim!r} as run with"
                f"{' --quick' if run.get('quick') else ''} --seed {run.get('seed')}; this run is"
                f"{' --quick' if quick else ''} --seed {seed}")
    return data


def compare_claim(module: Any, entry: Mapping[str, Any],
                  result: Mapping[str, Any]) -> ClaimComparison:
    """Compare one claim's result with its baseline entry: moved numbers and warnings.

    Parameters
    ----------
    module : module
        The claim's module (its ``CLAIM`` name and key numbers).
    entry : mapping
        The claim's entry of the baseline file.
    result : mapping
        This run's result dict.

    Returns
    -------
    ClaimComparison
        The moved numbers and the provenance warnings.
    """
    claim = module.CLAIM
    moved = compare_numbers(entry["numbers"], result, claim_keys(module), claim=claim)
    exact = tuple(sorted(n for n, e in entry["numbers"].items() if e.get("tolerance") == "exact"))
    within = tuple(sorted(n for n, e in entry["numbers"].items() if e.get("tolerance") != "exact"))
    recorded = entry.get("recorded", {})
    env_old = recorded.get("environment", {})
    env_new = _jsonable(result.get("environment", {}))
    warnings = _differences("version of ", env_old, env_new, skip=("date", "rftheory", "machine"),
                            consequence=_LAST_BITS)
    warnings += _differences("version of ", env_old, env_new,
                             skip=tuple(k for k in set(env_old) | set(env_new) if k != "rftheory"),
                             consequence=_CODE)
    here = machine()
    warnings += _differences("machine ", {k: v for k, v in recorded.get("machine", {}).items()
                                          if k != "platform"},
                             {k: v for k, v in here.items() if k != "platform"},
                             consequence=_LAST_BITS)
    warnings += _differences("source digest of rftheory.", recorded.get("sources", {}),
                             _jsonable(result.get("sources", {})), consequence=_CODE)
    return ClaimComparison(claim, len(entry["numbers"]), tuple(moved),
                           tuple(f"{claim}: {w}" for w in warnings), exact, within)


def check_baseline(path: str | Path, results: Sequence[Mapping[str, Any]]) -> list[ClaimComparison]:
    """Compare claim results (``run_claim``'s dicts) with the baseline file at ``path``.

    Parameters
    ----------
    path : str or Path
        The baseline file.
    results : sequence of mapping
        The claims' results (each with its ``claim`` name).

    Returns
    -------
    list of ClaimComparison
        One per result, in order.

    Raises
    ------
    RFTheoryError
        When the file is not a baseline or has no entry for one of the claims.
    """
    from .claims import claim_module

    data = read_baseline(path)
    out = []
    for result in results:
        module = claim_module(result["claim"])
        entry = data["claims"].get(module.CLAIM)
        if entry is None:
            raise RFTheoryError(f"baseline {str(path)!r} has no entry for {module.CLAIM!r}")
        out.append(compare_claim(module, entry, result))
    return out


def update_baseline(path: str | Path, results: Sequence[Mapping[str, Any]], *,
                    command: str | None = None, replace: bool = False) -> dict[str, Any]:
    """Write (or merge into) the baseline file at ``path`` the key numbers of ``results``.

    Entries of claims not in ``results`` are kept, unless ``replace`` (``verify all``: a claim
    renamed or removed leaves no stale entry). A file that exists and is not a baseline is
    refused; the file is replaced atomically.

    Parameters
    ----------
    path : str or Path
        The baseline file (created when missing).
    results : sequence of mapping
        The claims' results (each with its ``claim`` name).
    command : str, optional
        The command that produced them, stored in the file.
    replace : bool, default False
        Whether to drop the entries of claims not in ``results``.

    Returns
    -------
    dict
        The content written.
    """
    from .claims import claim_module
    from .output import write_json_atomic

    path = Path(path)
    data = read_baseline(path, for_update=True) if path.exists() else {"format": FORMAT, "claims": {}}
    if replace:
        data["claims"] = {}
    for result in results:
        module = claim_module(result["claim"])
        data["claims"][module.CLAIM] = record_claim(module, result)
    data["format"] = FORMAT
    data["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if command:
        data["command"] = command
    data["how_to_update"] = ("rerun the command with --update-baseline FILE instead of --baseline "
                             "and commit the file (a reviewed change); the tolerances come from "
                             "rftheory.baseline.CLAIM_KEYS")
    data["claims"] = dict(sorted(data["claims"].items()))
    write_json_atomic(path, data)
    return data


# ---------------------------------------------------------------------------------------------
# The key numbers of the package's claims (one table, each tolerance with its reason)
# ---------------------------------------------------------------------------------------------
# Every tolerance below is sized for what may differ between two machines of the same kind
# running the same command and seed (README, "Determinism"): the last bits of BLAS/libm sums,
# and, through them, the path of the chaotic reconstruction optimiser. On one machine a rerun
# with the same thread count repeats every number exactly. A claim's result changing shape fails loudly ("not in the
# result"); edit its entry here and regenerate the stored baseline.

_FIXED_V = ("no optimiser: a function of the seeded data and the Philox V, so other BLAS kernels "
            "or libm move it in its last bits only")
_ONE_SEED = ("the optimiser is a chaotic iteration: other BLAS kernels can change its path, and "
             "near the threshold one seed may succeed or fail")
_RUNS = "counts over a few runs of a chaotic optimiser: one run may end elsewhere on other BLAS kernels"

#: The key numbers of each claim of :data:`rftheory.claims.CLAIMS`, by claim name. A claim not
#: listed (a new one) is compared on :data:`DEFAULT_KEYS`; a claim module may also declare its
#: own ``KEY_NUMBERS`` tuple, which takes precedence.
CLAIM_KEYS: dict[str, tuple[Key, ...]] = {
    "kernel_concentration": (
        Key("curves[activation].slope", rtol=1e-6, reason="log-log fit of the error; " + _FIXED_V),
        Key("curves[activation].lambda_min_kernel", rtol=1e-9, reason="eigenvalue of the series "
            "kernel matrix (quadrature coefficients to ~1e-15); " + _FIXED_V),
        Key("curves[activation].hermite_bound_k0", rtol=1e-9, reason="certified Hermite bound; " + _FIXED_V),
        Key("curves[activation].lambda_min_empirical_mean", rtol=1e-6, reason="λ_min of ΦΦᵀ/p; " + _FIXED_V),
        Key("lambda_min_vs_d.activations.*.bound_ok", reason="the bound holds at every d"),
        Key("verdict.*", reason="the claim's verdict: any change is a finding"),
    ),
    "law": (
        Key("per_grid[d,n].label.p_star_over_n", reason="the residual jumps by >= 8 decades between "
            "p = n - 1 and p = n: no machine moves it"),
        Key("per_grid[d,n].data.abs.p_star_over_dn", interval="interval_over_dn",
            reason="fitted threshold (probit MLE of every run): it may move within the recorded "
            "run's 95 % profile-likelihood interval, widened ×2.03 for a rerun (interval_band) — "
            + _ONE_SEED),
        Key("per_grid[d,n].data.sign_invariant.p_star_over_dn", interval="interval_over_dn",
            reason="as the official threshold"),
        Key("pooled.abs.p_star_over_dn", interval="interval_over_dn",
            reason="the law's constant p*/(dn), one fit of every run of every (d, n): within the "
            "recorded run's 95 % profile-likelihood interval, widened ×2.03 for a rerun "
            "(interval_band)"),
        Key("per_grid[d,n].data.abs.located", reason="whether the grid locates the threshold"),
        Key("verdict.supported", reason="the claim's verdict: any change is a finding"),
        Key("verdict.label_threshold_is_n", reason="part of the verdict"),
        Key("verdict.fails_at_p_equal_n", reason="part of the verdict"),
        Key("verdict.succeeds_at_largest_ratio", reason="part of the verdict"),
        Key("verdict.data_thresholds_located", reason="part of the verdict"),
        Key("verdict.collapse_in_dn", reason="part of the verdict"),
        Key("verdict.exponent_d", interval="exponent_d_interval",
            reason="exponent of d in the fitted p* ∝ d^b n^c: within the recorded run's 95 % "
            "interval, widened ×2.03 for a rerun (interval_band)"),
        Key("verdict.exponent_n", interval="exponent_n_interval",
            reason="exponent of n, as that of d"),
    ),
    "nhat": (
        Key("rows[n_hat].min_covered", atol=1, reason=_RUNS),
        Key("rows[n_hat].converged", atol=1, reason=_RUNS),
        Key("rows[n_hat].n_estimate_correct", atol=1, reason=_RUNS),
        Key("verdict.*", reason="the claim's verdict: any change is a finding"),
    ),
    "sign": (
        Key("per_activation[activation].successes", atol=1, reason="a chaotic optimiser: one run "
            "may succeed or fail on another machine's BLAS kernels"),
        Key("per_activation[activation].flip_fraction_successful", atol=0.2, reason="a fraction of "
            "few successful runs' samples: moves when a run joins or leaves them"),
        Key("per_activation[activation].flips_observed", reason="the observation the verdict rests on"),
        Key("per_activation[activation].median_loss_one_flipped", atol=1e-20, rtol=1e-6,
            reason="the loss of the true data with one sample negated: no optimiser; ~1e-29 values "
            "(pure-parity φ) are rounding noise (atol)"),
        Key("per_activation[activation].hermite.sign_identifiable", reason="the symbolic verdict"),
        Key("per_activation[activation].hermite.symmetry", reason="the symbolic parity"),
        Key("per_activation[activation].hermite.antipodal_slope", atol=1e-8,
            reason="adaptive quadrature, error ≲ 1e-10"),
        Key("verdict.*", reason="the claim's verdict: any change is a finding"),
    ),
    "theorem1": (
        Key("uniqueness[ratio].zero_loss_count", atol=1, reason="a few optimiser starts: one may end "
            "elsewhere when other BLAS kernels change its path"),
        Key("uniqueness[ratio].spurious_count", atol=1, reason="as zero_loss_count"),
        Key("gaps[p].gap", atol=1e-10, rtol=0.05, reason="min over a few local constrained "
            "minimisations: another machine's last bits may pick another local minimum; values "
            "below 1e-10 are zero up to rounding"),
        Key("kernel_limit[eps].gap", atol=1e-10, rtol=0.05, reason="as gaps[p].gap"),
        Key("verdict.*", reason="the claim's verdict and where the gap opens: any change is a finding"),
    ),
    "theorem2": (
        Key("curves[activation].rows[ratio].limit_loss", atol=1e-12, rtol=1e-6, reason="closed form "
            "(a least-squares residual, no optimiser): last bits only; values ~1e-27 at p <= d are "
            "rounding noise (atol)"),
        Key("curves[activation].verdict.smallest_min_at_large_p", factor=2.0, reason="min over a "
            "few local minimisations of the duplicate region: another machine's last bits may lead "
            "a start to another local minimum (measured: tanh 0.0700 with OpenBLAS SkylakeX, "
            "0.0738 with Haswell and numpy without AVX-512); bounded_away_at_large_p is the "
            "exact check"),
        Key("curves[activation].verdict.bounded_away_at_large_p", reason="the per-activation verdict"),
        Key("curves[activation].verdict.limit_agrees", reason="the per-activation verdict"),
        Key("verdict.*", reason="the claim's verdict: any change is a finding"),
        # Floats of the general-n verdict (keys after verdict.* override its tolerance):
        Key("verdict.general_n.smallest_limit_from_dn.value", atol=1e-12, rtol=1e-6,
            reason="closed form (a least-squares residual, no optimiser): last bits only"),
        Key("verdict.general_n.smallest_limit_over_leave_one_out_from_dn", rtol=1e-6,
            reason="ratio of closed-form residuals: last bits only"),
        Key("verdict.general_n.smallest_region_from_dn.value", factor=2.0, reason="min over local "
            "minimisations of the duplicate region (an optimiser): another machine may reach "
            "another local minimum (measured: 3.2579e-06 on AMD EPYC, 3.2576e-06 on Xeon); "
            "regions_positive_from_dn is the exact check"),
    ),
    "twolayer_law": (
        Key("verdict.per_setup.*.threshold", factor=2.01, reason="the ratios double (1, 2, 4, 8 in "
            "the quick run): one seed of gradient descent and reconstruction ending elsewhere moves "
            "the threshold by one grid step"),
        Key("verdict.per_setup.*.law_holds", reason="the per-setup verdict"),
        Key("verdict.supported", reason="the claim's verdict"),
        Key("verdict.supported_single_output", reason="the claim's verdict for k = 1"),
    ),
}
