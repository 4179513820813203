"""Sweep files: the TOML grid of cells, checked before anything runs, and a cell's identity.

A sweep file names a cell kind (a key of :data:`~rftheory.sweep.cells.CELL_KINDS`), the axes of
a grid and fixed parameters; every combination of the axes is one :class:`Cell`, whose key is
the SHA-256 of the canonical JSON of its kind and parameters (:func:`canonical_json`). See
:mod:`rftheory.sweep` for the format.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import itertools
import json
import math
import re
import tomllib
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..errors import InvalidValueError, RFTheoryError
from ..pipeline import check_method, feature_count
from .cells import CELL_KINDS, CellKind

__all__ = ["MAX_CELLS", "Cell", "SweepSpec", "SweepSpecError", "canonical_json", "cell_key",
           "load_spec", "parse_spec", "p_from_expression"]


class SweepSpecError(InvalidValueError):
    """A sweep file was refused: missing, not TOML, or a key/value the cell kind does not accept."""


#: Most cells one sweep may have: every finished cell is a committed row of the store (~1 KB
#: and one fsync'd commit each), so beyond this the store and its bookkeeping alone are
#: unreasonable whatever the cells cost; split such a grid into several sweeps. Refused when
#: the file is read, before anything is built (the time limit usually refuses far smaller grids).
MAX_CELLS = 10**9

# Parameters that must be >= 1 / >= 0 whenever a cell takes them (refused before running).
_POSITIVE = frozenset({"d", "n", "p", "n_hat", "max_steps"})
_NON_NEGATIVE = frozenset({"seed"})


#: A ``p`` given as text: ``"n"``, ``"n-1"``, ``"2n+3"``, ``"0.25dn"``, ``"10dn"`` — a multiple of
#: n or of d·n plus an integer offset (nothing is evaluated: the text must match this pattern).
_P_EXPRESSION = re.compile(r"^\s*(?:(\d+(?:\.\d*)?|\.\d+)\s*\*?\s*)?(dn|n)\s*(?:([+-])\s*(\d+))?\s*$")


def p_from_expression(text: str, *, d: int, n: int) -> int:
    """The p of a sweep cell given as text, from its d and n: round(c·n) or round(c·d·n), plus
    an integer offset — so one axis can hold the label threshold's p = n − 1, n and multiples of
    dn.

    Parameters
    ----------
    text : str
        ``"[c][*]n"`` or ``"[c][*]dn"`` with an optional ``+k``/``-k`` (c a decimal, k an
        integer), e.g. ``"n-1"``, ``"0.25dn"``; nothing is evaluated.
    d, n : int
        The cell's input dimension and training-set size.

    Returns
    -------
    int
        The number of features.

    Raises
    ------
    rftheory.sweep.SweepSpecError
        If ``text`` does not match the pattern.

    Examples
    --------
    >>> [p_from_expression(t, d=10, n=4) for t in ("n-1", "n", "0.25dn", "10dn", "2n+3")]
    [3, 4, 10, 400, 11]
    """
    match = _P_EXPRESSION.match(text)
    if match is None:
        raise SweepSpecError(f"p = {text!r} is not an integer or an expression such as "
                             "\"n\", \"n-1\", \"2n+3\", \"0.25dn\"")
    coefficient, base, sign, offset = match.groups()
    value = float(coefficient) if coefficient is not None else 1.0
    p = round(value * (d * n if base == "dn" else n))
    if offset is not None:
        p += int(offset) if sign == "+" else -int(offset)
    return p


def canonical_json(value: Any) -> str:
    """The one JSON text of ``value`` used for keys and checksums: sorted keys, no spaces.

    Floats are written by ``repr`` (shortest round-trip form), so equal numbers give equal text;
    NaN and infinities are written as ``NaN``/``Infinity`` (read back by Python's :mod:`json`).

    Parameters
    ----------
    value : object
        JSON-serialisable data.

    Returns
    -------
    str
        The canonical JSON text (ASCII).

    Examples
    --------
    >>> canonical_json({"p": 10, "d": 2.5})
    '{"d":2.5,"p":10}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=True)


def sha256_hex(text: str) -> str:
    """SHA-256 of ``text`` (UTF-8) in hex: the identity of a cell or a row.

    Parameters
    ----------
    text : str
        Usually canonical JSON (:func:`canonical_json`).

    Returns
    -------
    str
        64 hex digits.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Cell:
    """One point of the grid: a cell kind and the full keyword arguments of its function.

    ``params_json`` (canonical JSON of the parameters) and ``key`` (SHA-256 of the canonical
    JSON of ``{"kind", "params"}``, the cell's identity) are computed once, at creation.

    Attributes
    ----------
    kind : str
        The cell kind, a key of :data:`~rftheory.sweep.CELL_KINDS`.
    params : mapping
        The keyword arguments of the kind's function.
    params_json : str
        :func:`canonical_json` of ``params``.
    key : str
        :func:`cell_key` of the cell (64 hex digits).
    """

    kind: str
    params: Mapping[str, Any]
    params_json: str = dataclasses.field(init=False, repr=False, compare=False)
    key: str = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        text = canonical_json(dict(self.params))
        object.__setattr__(self, "params_json", text)
        object.__setattr__(self, "key", cell_key(self.kind, text))

    @property
    def seed(self) -> int | None:
        return self.params.get("seed")


def cell_key(kind: str, params_json: str) -> str:
    """The key of a cell from its kind and canonical parameter JSON.

    Parameters
    ----------
    kind : str
        The cell kind.
    params_json : str
        The parameters as JSON (re-canonicalised here).

    Returns
    -------
    str
        SHA-256, in hex, of the canonical JSON of ``{"kind": kind, "params": params}``.
    """
    return sha256_hex(canonical_json({"kind": kind, "params": json.loads(params_json)}))


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: the cell kind, the grid axes (in file order) and the fixed parameters.

    ``p_mult`` may be an axis or a fixed value; it is turned into ``p = round(p_mult·d·n)`` per
    cell (cells that round to the same p are one cell).

    Attributes
    ----------
    cell : str
        The cell kind, a key of :data:`~rftheory.sweep.CELL_KINDS`.
    axes : tuple of (str, tuple)
        The grid's axes in file order: name and values.
    fixed : tuple of (str, object)
        The parameters shared by every cell.
    name : str
        The sweep's name (``[sweep] name``; default empty).
    description : str
        Its description (default empty).
    """

    cell: str
    axes: tuple[tuple[str, tuple[Any, ...]], ...]
    fixed: tuple[tuple[str, Any], ...]
    name: str = ""
    description: str = ""

    @property
    def kind(self) -> CellKind:
        return CELL_KINDS[self.cell]

    def to_json(self) -> dict:
        """The spec as stored with a run; a long seed axis (``[sweep] seeds = N``, N > 10⁴) as
        ``{"range": [0, N]}`` rather than N numbers."""
        def axis(values: Any) -> Any:
            if isinstance(values, range) and len(values) > 10**4:
                return {"range": [values.start, values.stop]}
            return list(values)

        return {"cell": self.cell, "name": self.name, "description": self.description,
                "grid": {k: axis(v) for k, v in self.axes}, "fixed": dict(self.fixed)}

    @property
    def grid_size(self) -> int:
        """Combinations of the axes (an upper bound of :meth:`count_cells`), without building any."""
        return math.prod(len(values) for _, values in self.axes)

    def _p_source(self) -> tuple[str | None, Callable[[Any, int, int], int]]:
        """Which parameter p is computed from per (d, n) — ``"p_mult"``, or ``"p"`` when some of
        its values are expressions (``"n-1"``, ``"0.25dn"``) — and how; (None, …) when p is
        given as integers."""
        given = dict(self.fixed) | dict(self.axes)
        if "p_mult" in given:
            return "p_mult", lambda m, d, n: feature_count(p_mult=m, d=d, n=n)
        values = dict(self.axes).get("p", (given.get("p"),))
        if any(isinstance(v, str) for v in values):
            return "p", lambda v, d, n: (p_from_expression(v, d=d, n=n) if isinstance(v, str)
                                         else v)
        return None, lambda v, d, n: v

    def _p_of(self) -> Callable[[Mapping[str, Any]], Any] | None:
        """p of a combination when the spec gives ``p_mult`` or p expressions (None when it
        gives integer p)."""
        source, to_p = self._p_source()
        if source is None:
            return None
        return lambda params: to_p(params[source], params["d"], params["n"])

    def count_cells(self) -> int:
        """The number of distinct cells, counted without building them (milliseconds for a
        grid of 10⁸ cells).

        Cells differ unless two ``p_mult`` values round to the same p for the same (d, n);
        those are counted once, by going over the (d, n, p_mult) values only.
        """
        axes = dict(self.axes)
        source, to_p = self._p_source()
        if source is None or source not in axes:
            return self.grid_size
        fixed = dict(self.fixed)
        d_values = axes.get("d", (fixed.get("d"),))
        n_values = axes.get("n", (fixed.get("n"),))
        others = math.prod(len(v) for k, v in self.axes if k not in (source, "d", "n"))
        distinct = sum(len({to_p(m, d, n) for m in axes[source]})
                       for d in d_values for n in n_values)
        return others * distinct

    def cells(self) -> Iterator[Cell]:
        """The grid's cells in file order (last axis fastest), each distinct cell once.

        Generated lazily in constant memory: the only cells that coincide are combinations that
        differ in ``p_mult`` alone and round to the same p; such a combination is skipped when
        an earlier ``p_mult`` value of the axis gives its p.
        """
        names = [k for k, _ in self.axes]
        p_of = self._p_of()
        source, to_p = self._p_source()
        multiples = dict(self.axes).get(source) if p_of is not None else None
        first: dict[tuple[Any, Any], set[int]] = {}  # (d, n) -> axis indices first for their p

        def is_first(params: Mapping[str, Any]) -> bool:
            dn = (params["d"], params["n"])
            if dn not in first:
                seen: dict[int, int] = {}
                for i, m in enumerate(multiples):
                    seen.setdefault(to_p(m, dn[0], dn[1]), i)
                first[dn] = set(seen.values())
            return multiples.index(params[source]) in first[dn]

        for combo in itertools.product(*(values for _, values in self.axes)):
            params = dict(self.fixed)
            params.update(zip(names, combo))
            if p_of is not None:
                if multiples is not None and not is_first(params):
                    continue  # the same cell as an earlier p_mult of the axis
                params["p"] = p_of(params)
                params.pop("p_mult", None)
            yield Cell(self.cell, params)

    def contains(self, kind: str, params: Mapping[str, Any]) -> bool:
        """Whether the cell (``kind``, ``params``) — e.g. a stored one — is a cell of this sweep,
        checked against the axes without generating the grid."""
        if kind != self.cell:
            return False
        expected, multiples, names = self._membership
        if set(params) != names:
            return False
        for name, values in expected.items():
            value = params[name]
            if isinstance(values, range):
                if isinstance(value, bool) or not isinstance(value, int) or value not in values:
                    return False
            elif canonical_json(value) not in values:
                return False
        if multiples is not None:
            _, to_p = self._p_source()
            try:
                return any(to_p(m, params["d"], params["n"]) == params["p"] for m in multiples)
            except (KeyError, TypeError, RFTheoryError):
                return False
        return True

    @functools.cached_property
    def _membership(self) -> tuple[dict[str, Any], tuple | None, set[str]]:
        """For :meth:`contains`: each parameter's values (canonical JSON texts, or a range),
        the p_mult values, and the parameter names a cell has."""
        expected: dict[str, Any] = {k: (v,) for k, v in self.fixed} | dict(self.axes)
        source, _ = self._p_source()
        multiples = expected.pop(source, None) if source is not None else None
        names = set(expected) | ({"p"} if multiples is not None else set())
        index = {k: v if isinstance(v, range) else {canonical_json(x) for x in v}
                 for k, v in expected.items()}
        return index, (None if multiples is None else tuple(multiples)), names

    def size_values(self, name: str) -> tuple[Any, ...]:
        """Every value parameter ``name`` takes in the grid (its axis, or its fixed value);
        empty when the sweep does not give it."""
        axes, fixed = dict(self.axes), dict(self.fixed)
        if name in axes:
            return tuple(axes[name])
        return (fixed[name],) if name in fixed else ()


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file; raises :class:`SweepSpecError` naming the bad key.

    Parameters
    ----------
    path : str or Path
        The sweep file (TOML, UTF-8).

    Returns
    -------
    SweepSpec
        The validated sweep (see :func:`parse_spec`).

    Raises
    ------
    rftheory.sweep.SweepSpecError
        If the file cannot be read, is not UTF-8 TOML, or fails a check of :func:`parse_spec`.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SweepSpecError(f"sweep file not found: {path}") from None
    except OSError as exc:
        raise SweepSpecError(f"cannot read sweep file {path}: {exc.strerror or exc}") from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SweepSpecError(f"{path}: starts with a UTF-16 byte-order mark; save it as UTF-8")
    try:
        # "utf-8-sig": a UTF-8 byte-order mark (written by some Windows editors) is accepted
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SweepSpecError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SweepSpecError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise SweepSpecError(f"{path}: invalid sweep file: arrays or tables nested too deeply "
                             "(a sweep file needs one level)") from None
    return parse_spec(document, source=str(path))


_SECTIONS = ("sweep", "grid", "fixed")
_SWEEP_KEYS = ("cell", "name", "description", "seeds")


def _type_name(kind: Any) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        kind, "a number, string or boolean")


def _parameter_types(function: Callable) -> dict[str, tuple[Any, bool]]:
    """``{name: (scalar type or None, required)}`` from a cell function's signature."""
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to no type checks
        hints = {}
    out = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        hint = hints.get(name)
        # `int | None` and Optional[int]: TOML has no null, so the non-None member is the type.
        members = [a for a in typing.get_args(hint) if a is not type(None)] \
            if typing.get_origin(hint) in (typing.Union, types.UnionType) else [hint]
        scalar = members[0] if len(members) == 1 and members[0] in (int, float, str, bool) else None
        out[name] = (scalar, parameter.default is inspect.Parameter.empty)
    return out


def parse_spec(document: Mapping[str, Any], *, source: str = "<sweep>") -> SweepSpec:
    """Validate a parsed sweep document (the dict :mod:`tomllib` returns) into a SweepSpec.

    Every check runs here, before any cell: unknown sections or keys, empty or repeated axis
    values, wrong value types (from the cell function's annotations), out-of-range sizes, unknown
    activations, missing required parameters, an unknown or unavailable cell kind.

    Parameters
    ----------
    document : mapping
        The sections ``sweep``, ``grid`` and ``fixed``.
    source : str
        Where the document comes from, for messages (default ``"<sweep>"``).

    Returns
    -------
    SweepSpec
        The validated sweep.

    Raises
    ------
    rftheory.sweep.SweepSpecError
        Naming the section and key of the first problem found.

    Examples
    --------
    >>> spec = parse_spec({"sweep": {"cell": "label_fit", "seeds": 2},
    ...                    "grid": {"activation": ["relu"], "d": [3], "n": [4], "p": [8, 16]}})
    >>> spec.count_cells()
    4
    """
    def fail(where: str, message: str) -> SweepSpecError:
        return SweepSpecError(f"{source}: {where}: {message}")

    for key, value in document.items():
        if key not in _SECTIONS:
            hint = " (put it under [sweep], [grid] or [fixed])" if not isinstance(value, dict) else ""
            raise fail(key, f"unknown key{hint}; the sections are [sweep], [grid] and [fixed]")
        if not isinstance(value, dict):
            raise fail(f"[{key}]", "must be a table")
    sweep = document.get("sweep")
    if sweep is None:
        raise fail("[sweep]", "missing section; it names the cell kind: cell = \"reconstruct\"")
    for key in sweep:
        if key not in _SWEEP_KEYS:
            raise fail(f"[sweep] {key}", f"unknown key; allowed: {', '.join(_SWEEP_KEYS)}")
    kind_name = sweep.get("cell")
    if kind_name is None:
        raise fail("[sweep] cell", f"missing; choose from: {', '.join(sorted(CELL_KINDS))}")
    if not isinstance(kind_name, str) or kind_name not in CELL_KINDS:
        raise fail("[sweep] cell", f"unknown cell kind {kind_name!r}; choose from: "
                                   f"{', '.join(sorted(CELL_KINDS))}")
    for key in ("name", "description"):
        if not isinstance(sweep.get(key, ""), str):
            raise fail(f"[sweep] {key}", "must be a string")
    parameters = _parameter_types(CELL_KINDS[kind_name].function)
    accepted = dict(parameters)
    if {"p", "d", "n"} <= set(parameters):
        accepted["p_mult"] = (float, False)

    def check_value(where: str, name: str, value: Any) -> Any:
        kind = accepted[name][0]
        if name == "p" and isinstance(value, str) and {"d", "n"} <= set(parameters):
            if _P_EXPRESSION.match(value) is None:
                raise fail(where, f"expected an integer or an expression such as \"n-1\" or "
                                  f"\"0.25dn\", got {value!r}")
            return value
        if isinstance(value, (dict, list)) or not isinstance(value, (int, float, str, bool)):
            raise fail(where, f"expected {_type_name(kind)}, got {type(value).__name__}")
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)  # one canonical form, so `1` and `1.0` are the same cell
        elif kind is not None and (not isinstance(value, kind) or
                                   (kind is int and isinstance(value, bool))):
            raise fail(where, f"expected {_type_name(kind)}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise fail(where, f"must be finite, got {value!r}")
        if name in _POSITIVE and value < 1:
            raise fail(where, f"must be >= 1, got {value!r}")
        if name in _NON_NEGATIVE and value < 0:
            raise fail(where, f"must be >= 0, got {value!r}")
        if name == "p_mult" and value <= 0:
            raise fail(where, f"must be > 0, got {value!r}")
        if name == "method":
            try:
                check_method(value)
            except RFTheoryError as exc:
                raise fail(where, str(exc)) from None
        if name == "activation":
            from ..activations import get_activation

            try:
                get_activation(value)
            except RFTheoryError as exc:
                raise fail(where, str(exc)) from None
        return value

    def check_name(section: str, name: str) -> None:
        if name not in accepted:
            raise fail(f"[{section}] {name}", f"not a parameter of cell {kind_name!r} (its "
                                              f"parameters: {', '.join(accepted)})")

    grid = document.get("grid", {})
    fixed_doc = document.get("fixed", {})
    axes: list[tuple[str, tuple[Any, ...]]] = []
    for name, values in grid.items():
        check_name("grid", name)
        if name in fixed_doc:
            raise fail(f"[grid] {name}", "also given in [fixed]; give it in one place")
        if not isinstance(values, list):
            raise fail(f"[grid] {name}", f"an axis must be a list of values, got {values!r}")
        if not values:
            raise fail(f"[grid] {name}", "axis is empty")
        checked = tuple(check_value(f"[grid] {name}[{i}]", name, v) for i, v in enumerate(values))
        seen: set[str] = set()
        for i, value in enumerate(checked):
            text = canonical_json(value)
            if text in seen:
                raise fail(f"[grid] {name}[{i}]", f"value {value!r} appears twice")
            seen.add(text)
        axes.append((name, checked))
    fixed = []
    for name, value in fixed_doc.items():
        check_name("fixed", name)
        fixed.append((name, check_value(f"[fixed] {name}", name, value)))

    if "seeds" in sweep:
        seeds = sweep["seeds"]
        if "seed" in grid or "seed" in fixed_doc:
            raise fail("[sweep] seeds", "give either [sweep] seeds or a seed in [grid]/[fixed]")
        if "seed" not in parameters:
            raise fail("[sweep] seeds", f"cell {kind_name!r} takes no seed")
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise fail("[sweep] seeds", f"expected a positive integer (seeds 0..N-1), got {seeds!r}")
        if seeds * math.prod(len(v) for _, v in axes) > MAX_CELLS:
            raise fail("[sweep] seeds", f"{seeds} seeds make a grid of "
                                        f"{seeds * math.prod(len(v) for _, v in axes):.3g} cells, "
                                        f"more than the {MAX_CELLS:.0e} one sweep may have")
        axes.append(("seed", range(seeds)))  # a range: 10⁸ seeds are not built here
    given = {k for k, _ in axes} | {k for k, _ in fixed}
    if "p_mult" in given and "p" in given:
        raise fail("p_mult", "give p or p_mult (p = p_mult·d·n), not both")
    if "p_mult" in given:
        given.add("p")
    texts = [("[grid] p", v) for k, vs in axes if k == "p" for v in vs if isinstance(v, str)]
    texts += [("[fixed] p", v) for k, v in fixed if k == "p" and isinstance(v, str)]
    if texts:  # every expression must give p >= 1 for every (d, n) of the grid
        values = {k: list(vs) for k, vs in axes} | {k: [v] for k, v in fixed}
        for where, text in texts:
            for d_value, n_value in itertools.product(values.get("d", [1]), values.get("n", [1])):
                if p_from_expression(text, d=d_value, n=n_value) < 1:
                    raise fail(where, f"{text!r} gives p < 1 at d = {d_value}, n = {n_value}")
    for name, (_, required) in parameters.items():
        if required and name not in given:
            raise fail(name, f"cell {kind_name!r} needs this parameter; give it in [grid] "
                             "(a list) or [fixed]" + (" or [sweep] seeds" if name == "seed" else ""))
    spec = SweepSpec(cell=kind_name, axes=tuple(axes), fixed=tuple(fixed),
                     name=sweep.get("name", ""), description=sweep.get("description", ""))
    if spec.grid_size > MAX_CELLS and spec.count_cells() > MAX_CELLS:
        raise fail("[grid]", f"{spec.count_cells():.3g} cells, more than the {MAX_CELLS:.0e} one "
                             "sweep may have (each is a row of the store); split the grid")
    return spec
