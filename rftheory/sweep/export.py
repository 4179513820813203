"""A compact, verifiable export of a sweep store: one gzip'd JSON line per cell.

A finished store (``sweep.sqlite``, with its WAL and run log) is the working copy of a sweep; its
export is what a repository keeps so that tables, fits and figures can be redrawn without
rerunning — a few hundred kB for a thousand cells. Each line is one verified row of the store
(:meth:`SweepStore.scan`): ``{"key", "kind", "params", "status", "result", "seconds", "version"}``,
sorted by key, after a first line ``{"sweep": <the sweep file as JSON>, "cells": N}``. The gzip
header carries no time stamp and the lines are canonical JSON, so the same store always gives
the same bytes. :func:`read_export` checks every line's key against its kind and parameters (the
same SHA-256 identity as the store), so a damaged or edited export is refused, not half-read.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

from .spec import canonical_json, cell_key
from .store import SweepStore, SweepStoreError

__all__ = ["export_store", "read_export", "EXPORT_FORMAT"]

#: Format tag of the header line (bumped if the line layout changes).
EXPORT_FORMAT = "rftheory-sweep-export/1"


def export_store(directory: str | Path, path: str | Path, *, include_errors: bool = True) -> dict:
    """Write the cells of the store in ``directory`` to ``path`` (gzip'd JSON lines).

    Parameters
    ----------
    directory : path
        The sweep's directory (holding ``sweep.sqlite``); opened read-only.
    path : path
        The export file (conventionally ``.jsonl.gz``); written to a temporary name and renamed,
        so a reader never sees half a file.
    include_errors : bool
        Also export cells whose outcome is an error (their message, no traceback).

    Returns
    -------
    dict
        ``{"path", "cells", "errors", "bytes"}``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from rftheory.sweep import parse_spec, run_sweep
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> spec = parse_spec({"sweep": {"cell": "label_fit", "seeds": 2},
    ...                    "grid": {"p": [3, 6]}, "fixed": {"activation": "relu", "d": 3, "n": 4}})
    >>> _ = run_sweep(spec, tmp / "store", workers=1)
    >>> export_store(tmp / "store", tmp / "cells.jsonl.gz")["cells"]
    4
    >>> len(read_export(tmp / "cells.jsonl.gz"))
    4
    """
    with SweepStore.open_reader(directory) as store:
        spec = store.spec()
        scan = store.scan()
    rows = []
    errors = 0
    for key in sorted(scan.cells):
        cell = scan.cells[key]
        if cell.status == "error":
            errors += 1
            if not include_errors:
                continue
            result: Any = {"error": cell.result.get("error")}
        else:
            result = cell.result
        rows.append(canonical_json({"key": key, "kind": cell.kind, "params": cell.params,
                                    "status": cell.status, "result": result,
                                    "seconds": cell.seconds, "version": cell.version}))
    header = canonical_json({"format": EXPORT_FORMAT, "sweep": spec, "cells": len(rows)})
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(("\n".join([header] + rows) + "\n").encode("utf-8"))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(buffer.getvalue())
    temporary.replace(path)
    return {"path": str(path), "cells": len(rows), "errors": errors,
            "bytes": len(buffer.getvalue())}


def read_export(path: str | Path) -> list[dict[str, Any]]:
    """The cells of an export written by :func:`export_store`, each line verified.

    Parameters
    ----------
    path : str or Path
        The export file (gzip'd JSON lines).

    Returns
    -------
    list of dict
        One dict per cell: ``key``, ``kind``, ``params``, ``status``, ``result``, ``seconds``
        and ``version``, in file order (sorted by key).

    Raises
    ------
    SweepStoreError
        The file is missing, not a gzip'd export, truncated (fewer cells than its header says),
        or a line's key does not match its kind and parameters.
    """
    path = Path(path)
    try:
        text = gzip.decompress(path.read_bytes()).decode("utf-8")
    except FileNotFoundError:
        raise SweepStoreError(f"sweep export not found: {path}") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise SweepStoreError(f"{path}: not a gzip'd sweep export ({exc})") from None
    lines = text.splitlines()
    try:
        header = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError:
        header = {}
    if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
        raise SweepStoreError(f"{path}: not a sweep export of this rftheory ({EXPORT_FORMAT})")
    cells = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            row = json.loads(line)
            if row["key"] != cell_key(row["kind"], canonical_json(row["params"])):
                raise ValueError("key does not match kind and parameters")
        except (ValueError, KeyError, TypeError) as exc:
            raise SweepStoreError(f"{path}, line {number}: damaged cell ({exc})") from None
        cells.append(row)
    if len(cells) != header.get("cells"):
        raise SweepStoreError(f"{path}: {len(cells)} cells, its header says {header.get('cells')} "
                              "(truncated?)")
    return cells
