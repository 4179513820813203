"""Output helpers: the one JSON converter, JSON and tables for people, atomic JSON files, figures.

Every result rftheory writes or prints — a claim's ``results/<claim>.json``, a command's
``--json``, a sweep cell's stored payload — goes through :func:`to_jsonable`; figures are saved
as PNG and PDF by :func:`save_figure`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Sequence

__all__ = ["to_jsonable", "print_json", "format_table", "write_json_atomic", "save_figure",
           "sparse_log_ticks", "significant"]


def to_jsonable(value: Any, *, finite_only: bool = True, strict: bool = False,
                where: str = "value") -> Any:
    """Convert numpy / mpmath / sympy scalars and arrays, dataclasses and tuples to plain JSON.

    Parameters
    ----------
    value : any
        Dicts (keys become strings), lists and tuples (become lists), dataclasses (their public
        fields, as a dict), arrays and numpy scalars (via ``tolist``), numbers, strings, None.
    finite_only : bool
        True (default): NaN and ±inf become ``None`` (JSON ``null``), so the output is strict
        JSON with one convention for a number that is unknown or not finite, in scalars and
        inside numeric arrays alike (a string would break a reader's numeric array). False:
        they stay floats (Python's :mod:`json` writes them as ``NaN``/``Infinity`` and reads
        them back) — the sweep store's canonical form.
    strict : bool
        False (default): anything else is converted by ``float`` when it can be (mpmath, sympy
        numbers), else by ``str``. True: values that are neither numbers nor containers raise
        :class:`TypeError` naming where they are (a sweep cell's result must be numbers).
    where : str
        Name of ``value`` in that error message (nested keys are appended, ``result.rho``).

    Returns
    -------
    any
        Dicts, lists, floats, ints, strings, booleans and None only.

    Examples
    --------
    >>> import numpy as np
    >>> to_jsonable({"rho": np.float64(0.5), "p": (1, 2), "loss": float("nan")})
    {'rho': 0.5, 'p': [1, 2], 'loss': None}
    >>> to_jsonable(np.array([1.0, np.inf, np.nan]))
    [1.0, None, None]
    >>> to_jsonable({"loss": float("nan")}, finite_only=False)
    {'loss': nan}
    """
    def convert(v: Any, here: str) -> Any:
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            if strict:
                raise TypeError(f"{here} is a {type(v).__name__}, not a JSON number, string or list")
            return {f.name: convert(getattr(v, f.name), f"{here}.{f.name}")
                    for f in dataclasses.fields(v) if not f.name.startswith("_")}
        if isinstance(v, dict):
            return {str(k): convert(x, f"{here}.{k}") for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [convert(x, here) for x in v]
        if hasattr(v, "tolist"):  # numpy (and CuPy) scalars and arrays
            return convert(v.tolist(), here)
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) or not finite_only else None
        try:
            return convert(float(v), here)
        except (TypeError, ValueError):
            if strict:
                raise TypeError(f"{here} is a {type(v).__name__}, not a JSON number, string or "
                                "list") from None
            return str(v)

    return convert(value, where)


def print_json(payload: Any) -> None:
    """Print ``payload`` as indented strict JSON on stdout (NaN and ±inf as ``null``).

    Parameters
    ----------
    payload : any
        Converted by :func:`to_jsonable` first.
    """
    json.dump(to_jsonable(payload), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain-text table with right-aligned columns.

    Parameters
    ----------
    headers : sequence of str
        Column titles.
    rows : iterable of sequence
        The rows (any values; formatted with ``str``).

    Returns
    -------
    str
        The table, one line per row, without a final newline.

    Examples
    --------
    >>> print(format_table(["k", "mu_k"], [[0, "0.5"], [1, "0.25"]]))
    k  mu_k
    -  ----
    0   0.5
    1  0.25
    """
    rows = [[str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(out)


def _umask() -> int:
    """The process's file-creation mask, read without changing it where Linux allows
    (``/proc/self/status``); elsewhere set and restored at once."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON to ``path`` via a temporary file and ``os.replace``: a crash or a bad value
    never leaves a truncated or corrupted result behind. The file gets the mode ``open`` would
    give it (0666 less the umask), like the figures, not the temporary file's 0600.

    Parameters
    ----------
    path : Path
        Where to write (the parent directory must exist).
    payload : any
        Converted by :func:`to_jsonable` first (strict JSON: NaN and ±inf as ``null``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # serialise fully before touching the disk; strict JSON (NaN and ±inf as null)
    text = json.dumps(to_jsonable(payload), indent=2, allow_nan=False)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 -> what open() gives, as for figures
        with os.fdopen(fd, "w") as fh:
            fh.write(text + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sparse_log_ticks(ax: Any) -> None:
    """At most ~6 major and no minor ticks on log axes: the default locators put hundreds of
    ticks on axes spanning 15 decades, which makes drawing take tens of seconds.

    Parameters
    ----------
    ax : Axes
        The panel (its linear axes are left alone).
    """
    from matplotlib.ticker import LogLocator, NullLocator

    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_locator(LogLocator(numticks=6))
            axis.set_minor_locator(NullLocator())


def save_figure(fig: Any, stem: str | Path, dpi: float | None = None) -> list[Path]:
    """Save a matplotlib figure as ``stem.png`` and ``stem.pdf``, close it, return the paths.

    Parameters
    ----------
    fig : Figure
        The figure (closed afterwards).
    stem : path
        Where to write; a suffix (``.png``, ``.pdf``) is replaced: both files are always
        written. Missing parent directories are created.
    dpi : float, optional
        Resolution of the PNG (default: the style's ``savefig.dpi``, 300 under
        :func:`rftheory.plotting.paper_style`; 150 where no style sets it).

    Returns
    -------
    list of Path
        The PNG's and the PDF's paths.
    """
    import matplotlib.pyplot as plt

    if dpi is None and plt.rcParams["savefig.dpi"] == "figure":
        dpi = 150
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    for path in paths:
        fig.savefig(path, **({} if dpi is None else {"dpi": dpi}))
        # The layout engine placed the axes while drawing the PNG; the PDF has the same size in
        # inches, so it keeps those positions instead of solving the layout again (a third of
        # a figure's time: 1.3 s of the demo's 7 s of figures).
        fig.set_layout_engine("none")
    plt.close(fig)
    return paths


def significant(x: float, digits: int = 2) -> str:
    """``x`` to ``digits`` significant digits, for figure titles (1.1e-4 → ``"0.00011"``, not
    ``"0.000"``).

    Parameters
    ----------
    x : float
        The number.
    digits : int
        Significant digits (default 2).

    Returns
    -------
    str
        ``format(x, f".{digits}g")``.

    Examples
    --------
    >>> significant(1.1e-4), significant(0.4321), significant(2.5e-7), significant(0.0)
    ('0.00011', '0.43', '2.5e-07', '0')
    """
    return format(float(x), f".{digits}g")
