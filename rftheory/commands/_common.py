"""Helpers shared by the subcommands: number options, ``--plot`` names, progress on stderr.

Options are parsed here, not by argparse, where a bad value must give one clear line and exit
status 2 (the :class:`~rftheory.errors.RFTheoryError` family, which :func:`rftheory.cli.main`
turns into that line).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import RFTheoryError
from ..output import print_json

#: Suffixes ``--plot FILE`` accepts; both formats are always written.
FIGURE_SUFFIXES = ("", ".png", ".pdf")


def parse_int(text: Any, name: str, minimum: int) -> int:
    """A decimal integer >= ``minimum`` from a command-line string, or RFTheoryError."""
    try:
        value = int(str(text).strip())
    except ValueError:
        raise RFTheoryError(f"--{name} must be an integer, got {text!r}") from None
    if value < minimum:
        raise RFTheoryError(f"--{name} must be >= {minimum}, got {value}")
    return value


def parse_int_list(text: str, name: str, minimum: int = 1) -> list[int]:
    """``"100,400,1600"`` -> [100, 400, 1600] (sorted, each >= ``minimum``, duplicates refused)."""
    items = [s.strip() for s in text.split(",")]
    if not text.strip() or any(not s for s in items):
        raise RFTheoryError(f"--{name} must be comma-separated positive integers, got {text!r}")
    values = [parse_int(s, name, minimum) for s in items]
    if len(set(values)) != len(values):
        raise RFTheoryError(f"--{name} has repeated values: {text!r}")
    return sorted(values)


def at_least(value: int | None, name: str, minimum: int = 1) -> int:
    """An integer option (already parsed by argparse) that must be >= ``minimum``."""
    if value is None or value < minimum:
        raise RFTheoryError(f"--{name} must be >= {minimum}, got {value}")
    return int(value)


def finite_at_least(value: float, name: str, minimum: float = 0.0) -> float:
    """A float option that must be finite and >= ``minimum``."""
    if not (math.isfinite(value) and value >= minimum):
        raise RFTheoryError(f"--{name} must be a finite number >= {minimum:g}, got {value}")
    return float(value)


def figure_paths(name: str | None) -> list[Path] | None:
    """The PNG and PDF paths of ``--plot NAME`` (None without ``--plot``), checked before any work.

    NAME may end in ``.png``, ``.pdf`` or nothing; both files are written. Its directory must
    exist (a typo should not cost a long run).
    """
    if name is None:
        return None
    path = Path(name)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise RFTheoryError(f"--plot: use a .png or .pdf file name (both are written), got {name}")
    if not path.parent.is_dir():
        raise RFTheoryError(f"--plot: directory {str(path.parent)!r} does not exist")
    return [path.with_suffix(".png"), path.with_suffix(".pdf")]


def progress_lines(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Where one-line progress messages go: stderr, unless ``--json`` asks for a clean stdout run."""
    if getattr(args, "json", False):
        return None
    return lambda message: print(message, file=sys.stderr, flush=True)


def progress_bar_wanted(args: argparse.Namespace) -> bool:
    """A tqdm bar on stderr: only on a terminal, and not with ``--json`` or ``--no-progress``."""
    return not args.json and not getattr(args, "no_progress", False) and sys.stderr.isatty()


def print_result(args: argparse.Namespace, payload: dict, table: str,
                 figures: Sequence[Path] = ()) -> None:
    """``--json``: the payload with the figures written; otherwise the table and one
    ``wrote PATH`` line per figure."""
    if args.json:
        print_json({**payload, "figures": [str(p) for p in figures]})
    else:
        print(table)
        for path in figures:
            print(f"wrote {path}")
