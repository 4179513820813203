"""Sweep files: the TOML grid of cells, checked before anything runs, and a cell's identity.

A sweep file names a cell kind (a key of :data:`~rftheory.sweep.cells.CELL_KINDS`), the axes of
a grid and fixed parameters; every combination of the axes is one :class:`Cell`, whose key is
the SHA-256 of the canonical JSON of its kind and parameters (:func:`canonical_json`). See
:mod:`rftheory.sweep` for the format.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import itertools
import json
import math
import tomllib
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..errors import RFTheoryError
from ..pipeline import check_method, feature_count
from .cells import CELL_KINDS, CellKind

__all__ = ["Cell", "SweepSpec", "SweepSpecError", "canonical_json", "cell_key", "load_spec",
           "parse_spec"]


class SweepSpecError(RFTheoryError):
    """A sweep file was refused: missing, not TOML, or a key/value the cell kind does not accept."""


# Parameters that must be >= 1 / >= 0 whenever a cell takes them (refused before running).
_POSITIVE = frozenset({"d", "n", "p", "n_hat", "max_steps"})
_NON_NEGATIVE = frozenset({"seed"})


def canonical_json(value: Any) -> str:
    """The one JSON text of ``value`` used for keys and checksums: sorted keys, no spaces.

    Floats are written by ``repr`` (shortest round-trip form), so equal numbers give equal text;
    NaN and infinities are written as ``NaN``/``Infinity`` (read back by Python's :mod:`json`).
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=True)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Cell:
    """One point of the grid: a cell kind and the full keyword arguments of its function.

    ``params_json`` (canonical JSON of the parameters) and ``key`` (SHA-256 of the canonical
    JSON of ``{"kind", "params"}``, the cell's identity) are computed once, at creation.
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
    """The key of a cell from its kind and canonical parameter JSON."""
    return _sha256(canonical_json({"kind": kind, "params": json.loads(params_json)}))


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: the cell kind, the grid axes (in file order) and the fixed parameters.

    ``p_mult`` may be an axis or a fixed value; it is turned into ``p = round(p_mult·d·n)`` per
    cell (cells that round to the same p are one cell).
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
        return {"cell": self.cell, "name": self.name, "description": self.description,
                "grid": {k: list(v) for k, v in self.axes}, "fixed": dict(self.fixed)}

    @property
    def grid_size(self) -> int:
        return math.prod(len(values) for _, values in self.axes)

    def cells(self) -> Iterator[Cell]:
        """The grid's cells in file order (last axis fastest), each distinct cell once."""
        names = [k for k, _ in self.axes]
        seen: set[str] = set()
        for combo in itertools.product(*(values for _, values in self.axes)):
            params = dict(self.fixed)
            params.update(zip(names, combo))
            if "p_mult" in params:
                params["p"] = feature_count(p_mult=params.pop("p_mult"), d=params["d"],
                                            n=params["n"])
            cell = Cell(self.cell, params)
            key = cell.key
            if key not in seen:
                seen.add(key)
                yield cell


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file; raises :class:`SweepSpecError` naming the bad key."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SweepSpecError(f"sweep file not found: {path}") from None
    except OSError as exc:
        raise SweepSpecError(f"cannot read sweep file {path}: {exc.strerror or exc}") from None
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SweepSpecError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise SweepSpecError(f"{path}: invalid TOML: {exc}") from None
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
        axes.append(("seed", tuple(range(seeds))))
    given = {k for k, _ in axes} | {k for k, _ in fixed}
    if "p_mult" in given and "p" in given:
        raise fail("p_mult", "give p or p_mult (p = p_mult·d·n), not both")
    if "p_mult" in given:
        given.add("p")
    for name, (_, required) in parameters.items():
        if required and name not in given:
            raise fail(name, f"cell {kind_name!r} needs this parameter; give it in [grid] "
                             "(a list) or [fixed]" + (" or [sweep] seeds" if name == "seed" else ""))
    return SweepSpec(cell=kind_name, axes=tuple(axes), fixed=tuple(fixed),
                     name=sweep.get("name", ""), description=sweep.get("description", ""))
