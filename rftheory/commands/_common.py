"""Helpers shared by the subcommands: number options, output locations, size limits, progress,
what a result records about how it was produced.

Options are parsed here, not by argparse, where a bad value must give one clear line and exit
status 2 (the :class:`~rftheory.errors.RFTheoryError` family, which :func:`rftheory.cli.main`
turns into that line). Every check here runs before any computation.

**Output locations, one rule for every command** (``--out DIR``, ``--plot FILE``, the directory
``sweep report`` draws into):

* the path must not be empty (``--out ''`` is refused, not ignored);
* the directory it goes into must exist — ``--plot``'s parent directory, ``--out``'s parent
  (``--out DIR`` itself is created when missing). Nothing else is created: a typo must neither
  cost a long run nor make directories elsewhere. The commands' own defaults (``results``,
  ``results/sweeps/<name>``) are created with their parents;
* it must be writable, checked by creating and removing a temporary file there before any work;
* the file-system root and the system trees (``/proc``, ``/sys``, ``/dev``, ``/boot``, ``/etc``,
  ``/bin``, ``/sbin``, ``/lib*``, ``/usr``) are refused whatever the permissions (root may
  write there);
* ``--out`` must be a directory, ``--plot`` must not be one.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..errors import RFTheoryError
from ..output import print_json

#: Suffixes ``--plot FILE`` accepts; both formats are always written.
FIGURE_SUFFIXES = ("", ".png", ".pdf")
#: Directories no command writes into or below, whatever the permissions.
SYSTEM_TREES = ("/proc", "/sys", "/dev", "/boot", "/etc", "/bin", "/sbin", "/lib", "/lib32",
                "/lib64", "/libx32", "/usr")
#: How the limits are named in messages (:func:`rftheory.budget.check`, the deadline).
LIMIT_OPTIONS = ("--memory-limit", "--time-limit")


def parse_int(text: Any, name: str, minimum: int) -> int:
    """A decimal integer >= ``minimum`` from a command-line string, or RFTheoryError (the rule
    of :func:`rftheory.inputs.integer`: ASCII digits, at most 30 of them)."""
    from ..inputs import integer

    return integer(text, f"--{name}", minimum)


def parse_int_list(text: str, name: str, minimum: int = 1) -> list[int]:
    """``"100,400,1600"`` -> [100, 400, 1600] (sorted, each >= ``minimum``, duplicates refused)."""
    items = [s.strip() for s in text.split(",")]
    if not text.strip() or any(not s for s in items):
        from ..inputs import shown

        raise RFTheoryError(f"--{name} must be comma-separated positive integers, got "
                            f"{shown(text)}")
    values = [parse_int(s, name, minimum) for s in items]
    if len(set(values)) != len(values):
        from ..inputs import shown

        raise RFTheoryError(f"--{name} has repeated values: {shown(text)}")
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


# -- output locations (the rule of the module docstring) ---------------------------------------

def _refuse_system(directory: Path, option: str, shown: str) -> None:
    resolved = Path(os.path.realpath(directory))
    if resolved == Path(resolved.anchor):
        raise RFTheoryError(f"{option} {shown}: refusing to write into the file-system root")
    for tree in SYSTEM_TREES:
        if resolved == Path(tree) or Path(tree) in resolved.parents:
            raise RFTheoryError(f"{option} {shown}: refusing to write into the system "
                                f"directory {tree}")


def _check_writable(directory: Path, option: str, shown: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".rftheory-write-test-")
    except OSError as exc:
        raise RFTheoryError(f"{option} {shown}: cannot write in {str(directory)!r} "
                            f"({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)


def output_dir(text: str | None, option: str = "--out", *, default: str | Path | None = None,
               must_exist: bool = False) -> Path:
    """The directory of ``--out DIR`` (or ``default`` when not given), checked by the module's
    rule before any work; returns it (not created yet: the writers create it).

    ``must_exist``: the directory is an input too (``sweep report DIR``).
    """
    if text is None:
        if default is None:
            raise RFTheoryError(f"{option}: give a directory")
        path = Path(default)
        ours = True
    else:
        if not str(text).strip():
            raise RFTheoryError(f"{option}: empty path; give a directory")
        path, ours = Path(text), False
    shown = repr(str(path))
    if path.exists() and not path.is_dir():
        raise RFTheoryError(f"{option} {shown}: exists and is not a directory")
    if must_exist and not path.is_dir():
        raise RFTheoryError(f"{option} {shown}: directory does not exist")
    if path.is_dir():
        _refuse_system(path, option, shown)
        _check_writable(path, option, shown)
        return path
    parent = path.parent
    if not ours and not parent.is_dir():
        raise RFTheoryError(f"{option} {shown}: its parent directory {str(parent)!r} does not "
                            "exist (only the last component is created)")
    existing = parent
    while not existing.is_dir():  # a default: its parents are created too
        existing = existing.parent
    _refuse_system(path, option, shown)
    _check_writable(existing, option, shown)
    return path


def output_file(text: str, option: str) -> Path:
    """The file of an option such as ``--plot FILE`` or ``--update-baseline FILE``, checked by
    the module's rule before any work: a non-empty name of a file (not ``/``, ``//``, ``.``,
    ``dir/`` or an existing directory) in an existing, writable directory outside the system
    trees."""
    from ..inputs import shown as quoted

    if not str(text).strip():
        raise RFTheoryError(f"{option}: empty file name; give e.g. {option} figure.png")
    shown = quoted(text)
    path = Path(text)
    if path.is_dir():
        raise RFTheoryError(f"{option} {shown}: is a directory; give a file name in it")
    if str(text).endswith(("/", os.sep)) or path.name in ("", ".", ".."):
        raise RFTheoryError(f"{option} {shown}: names a directory; give a file name in it")
    if any(len(part.encode()) > 255 for part in path.parts):
        raise RFTheoryError(f"{option} {shown}: a component of the path is longer than 255 "
                            "bytes")
    if not path.parent.is_dir():
        raise RFTheoryError(f"{option}: directory {quoted(path.parent)} does not exist")
    _refuse_system(path.parent, option, shown)
    _check_writable(path.parent, option, shown)
    return path


def figure_paths(name: str | None, option: str = "--plot") -> list[Path] | None:
    """The PNG and PDF paths of ``--plot NAME`` (None without ``--plot``), checked by the
    module's rule (:func:`output_file`) before any work.

    NAME may end in ``.png``, ``.pdf`` or nothing; both files are written.
    """
    if name is None:
        return None
    path = output_file(name, option)
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        from ..inputs import shown

        raise RFTheoryError(f"{option}: use a .png or .pdf file name (both are written), got "
                            f"{shown(name)}")
    paths = [path.with_suffix(".png"), path.with_suffix(".pdf")]
    if any(p.is_dir() for p in paths):
        raise RFTheoryError(f"{option} {str(path)!r}: is a directory; give a file name in it")
    return paths


# -- limits: memory refused before the start, time a deadline on the clock ---------------------

def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """``--memory-limit`` and ``--time-limit``: the same two options on every command that
    computes (:mod:`rftheory.budget`, :mod:`rftheory.deadline`)."""
    group = parser.add_argument_group(
        "limits", "a job whose arrays cannot fit in memory is refused before it starts, in one "
                  "line; time is not estimated: --time-limit is a deadline on the clock, at "
                  "which the job stops and keeps what it has finished")
    group.add_argument("--memory-limit", metavar="SIZE",
                       help="most memory a job may need, e.g. 12G or 800M (default: "
                            "RFTHEORY_MEMORY_LIMIT, else 80%% of the memory available; never "
                            "above the machine's total)")
    group.add_argument("--time-limit", metavar="SECONDS",
                       help="stop at this many seconds after the start, keeping partial results "
                            "(stop reason time_limit); default RFTHEORY_TIME_LIMIT, else none "
                            "(inf: none)")


def limits(args: argparse.Namespace) -> dict[str, Any]:
    """``memory_limit`` and ``via`` for :func:`rftheory.budget.check` from ``--memory-limit``
    (checked now: a malformed limit is refused before any work)."""
    from ..budget import memory_limit

    mem = getattr(args, "memory_limit", None)
    if mem is not None:
        memory_limit(mem, name=LIMIT_OPTIONS[0])
    return {"memory_limit": mem, "via": LIMIT_OPTIONS[0]}


def deadline(args: argparse.Namespace) -> Any:
    """The :class:`rftheory.deadline.Deadline` of ``--time-limit`` (or ``RFTHEORY_TIME_LIMIT``),
    starting now; a malformed value is refused before any work."""
    from ..deadline import Deadline

    return Deadline.from_limit(getattr(args, "time_limit", None), name=LIMIT_OPTIONS[1])


# -- progress ------------------------------------------------------------------------------------

def progress_lines(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Where a job's progress messages go: nothing with ``--json`` (a clean stdout run) or
    ``--no-progress``; on a terminal a tqdm bar (:class:`TaskBar`: tasks done, the rate
    measured in this run, the ETA); elsewhere (a log) one line per message on stderr."""
    if getattr(args, "json", False) or getattr(args, "no_progress", False):
        return None
    if sys.stderr.isatty():
        return TaskBar()
    return lambda message: print(message, file=sys.stderr, flush=True)


class TaskBar:
    """A tqdm bar fed by a job's progress messages: ``[k/total] what`` (the claims'
    :class:`~rftheory.claims._common.TaskProgress`) advances it to k of total, with ``what``
    shown beside it; any other message is written above the bar."""

    _TASK = re.compile(r"^\[(\d+)/(\d+)\] (.*)$", re.S)

    def __init__(self) -> None:
        self._bar: Any = None

    def __call__(self, message: str) -> None:
        from tqdm import tqdm

        task = self._TASK.match(message)
        if task is None:
            tqdm.write(message, file=sys.stderr)
            return
        done, total, what = int(task[1]), int(task[2]), task[3]
        if self._bar is None or self._bar.total != total or done < self._bar.n:  # a new job
            self.close()
            self._bar = tqdm(total=total, unit="task", file=sys.stderr, dynamic_ncols=True)
        self._bar.update(done - self._bar.n)
        self._bar.set_postfix_str(what[:60], refresh=True)
        if done >= total:
            self.close()

    def close(self) -> None:
        """End the bar (if one is open)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def progress_bar_wanted(args: argparse.Namespace) -> bool:
    """A tqdm bar on stderr: only on a terminal, and not with ``--json`` or ``--no-progress``."""
    return not args.json and not getattr(args, "no_progress", False) and sys.stderr.isatty()


# -- results -------------------------------------------------------------------------------------

_NOT_PARAMETERS = frozenset({"handler", "debug", "json", "command", "sweep_command"})


def produced_by(args: argparse.Namespace, parameters: Mapping[str, Any] | None = None) -> dict:
    """What produced a result: the package version, the definition of V, the command and its
    parameters — the options as given, updated with the values the command resolved
    (``parameters``: defaults the library chose, sizes computed from ``--p-mult``, ...)."""
    from .. import __version__
    from ..philox import V_DEFINITION

    command = " ".join(["rftheory", args.command]
                       + ([args.sweep_command] if getattr(args, "sweep_command", None) else []))
    given = {k: v for k, v in vars(args).items() if k not in _NOT_PARAMETERS}
    return {"rftheory": __version__, "v_definition": V_DEFINITION, "command": command,
            "parameters": {**given, **(parameters or {})}}


def print_result(args: argparse.Namespace, payload: dict, table: str,
                 figures: Sequence[Path] = (), parameters: Mapping[str, Any] | None = None
                 ) -> None:
    """``--json``: the payload with the figures written and what produced it
    (:func:`produced_by`); otherwise the table and one ``wrote PATH`` line per figure."""
    if args.json:
        print_json({**payload, "figures": [str(p) for p in figures],
                    "produced_by": produced_by(args, parameters)})
    else:
        print(table)
        for path in figures:
            print(f"wrote {path}")
