"""Output helpers: JSON conversion, JSON on stdout or a human table, atomic JSON files, figures."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Iterable, Sequence


def to_jsonable(value: Any) -> Any:
    """Convert numpy / mpmath / sympy scalars and arrays, dataclasses and tuples to plain JSON."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not f.name.startswith("_")}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return to_jsonable(value.tolist())
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    try:
        return to_jsonable(float(value))
    except (TypeError, ValueError):
        return str(value)


def print_json(payload: Any) -> None:
    """Print ``payload`` as indented JSON on stdout."""
    json.dump(to_jsonable(payload), sys.stdout, indent=2)
    sys.stdout.write("\n")


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain-text table with right-aligned columns."""
    rows = [[str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)

