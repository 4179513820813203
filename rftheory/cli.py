"""The ``rftheory`` command line: a thin layer that parses arguments, calls the library, prints.

Each subcommand lives in a module of :mod:`rftheory.commands` exposing ``register(subparsers)``;
modules there are discovered automatically. Errors caused by the user's input print one line on
stderr and exit with status 2 (argparse does the same for malformed arguments); ``--debug`` shows
the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands
from .errors import RFTheoryError


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand found in :mod:`rftheory.commands`."""
    parser = argparse.ArgumentParser(
        prog="rftheory",
        description="Check the law of data reconstruction in random-features models.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (RFTheoryError, OSError) as exc:
        if args.debug:
            raise
        print(f"rftheory {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"rftheory {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
