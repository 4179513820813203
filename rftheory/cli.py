"""The ``rftheory`` command line: a thin layer that parses arguments, calls the library, prints.

Each subcommand lives in a module of :mod:`rftheory.commands` exposing ``register(subparsers)``;
modules there are discovered automatically.

One rule for what goes wrong, in every command:

* bad input — a malformed argument (argparse), a refused value, a file that cannot be read or
  written, a job too large for the limits (:mod:`rftheory.budget`) — prints **one line** on
  stderr, ``rftheory CMD: error: …``, and exits with status 2; ``--debug`` (before or after the
  command) shows the traceback instead. Every argument is first held to the command line's
  input rules (:mod:`rftheory.commands._rules`: one line, bounded length), and a numeric
  failure of numpy's linear algebra that reaches this far (``LinAlgError``) is one line too;
* SIGINT (Ctrl-C) and SIGTERM stop the command cleanly — worker processes are stopped, a
  sweep's finished cells stay stored — with one line and status 130 or 143 (128 + signal),
  also when the signal lands where Python cannot raise (a worker pool forking:
  :func:`_interrupts_not_lost`);
* a closed stdout (``rftheory … | head``) ends the command quietly, with status 141 as for a
  Unix tool killed by SIGPIPE.

Startup imports nothing heavy (the commands import the library in their handlers), so that
``--help``, ``--version`` and refused arguments answer at once.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from . import commands
from .commands._rules import check_arguments
from .errors import RFTheoryError

#: Exit status of refused input (argparse's too).
EXIT_USAGE = 2
#: Exit status when stdout was closed by the reader (128 + SIGPIPE).
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM (SIGINT raises the plain
    KeyboardInterrupt): the same clean stop as Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``rftheory CMD: error: MESSAGE (see 'rftheory CMD --help')``
    instead of the usage block (subparsers inherit the class)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {_one_line(message)} "
                              f"(see '{self.prog} --help')\n")


class _Version(argparse.Action):
    """``--version``: the package version and the definition of V (imported only when asked)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from . import __version__
        from .philox import V_DEFINITION

        print(f"rftheory {__version__} (V: {V_DEFINITION}; Python {sys.version.split()[0]})")
        parser.exit(0)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return "; ".join(lines) if lines else str(text)


def _leaves(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parsers that run a handler (``sweep`` has its own subcommands)."""
    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not nested:
        yield parser
    for action in nested:
        for child in dict.fromkeys(action.choices.values()):
            yield from _leaves(child)


def _command_parser(parser: argparse.ArgumentParser,
                    args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser of the command ``args`` were parsed for (``rftheory sweep run``)."""
    while True:
        nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, nested[0].dest, None) if nested else None
        if chosen is None or chosen not in nested[0].choices:
            return parser
        parser = nested[0].choices[chosen]


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand found in :mod:`rftheory.commands`."""
    parser = _Parser(
        prog="rftheory",
        description="Check the law of data reconstruction in random-features models.",
        epilog="Errors print one line and exit with status 2 (--debug: the traceback). "
               "A job whose arrays cannot fit in memory is refused before it starts: "
               "--memory-limit / RFTHEORY_MEMORY_LIMIT (default 80% of the available memory, "
               "never above the machine's total). Time is not estimated: --time-limit / "
               "RFTHEORY_TIME_LIMIT (seconds; default none) is a deadline at which a job stops "
               "and keeps its partial result.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    for leaf in _leaves(parser):
        if leaf is not parser:  # `rftheory CMD ... --debug` as well as `rftheory --debug CMD`
            leaf.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                              help="show tracebacks on errors")
    return parser


def _silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a file descriptor (tests)
        pass


_MAIN_PID = os.getpid()


def _on_sigterm(signum: int, frame: Any) -> None:
    if os.getpid() != _MAIN_PID:  # a forked child inherited the handler: die as by default
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise Interrupted(signum)


#: Delay (s) before an interrupt that Python swallowed is sent again: enough to leave the C code
#: that swallowed it (an at-fork hook runs for microseconds), nothing next to a person's wait.
_REDELIVER_AFTER = 0.01


@contextmanager
def _interrupts_not_lost() -> Iterator[None]:
    """While active, an interrupt that Python could not raise is sent to this process again.

    A signal handler's exception (KeyboardInterrupt for SIGINT, :class:`Interrupted` for
    SIGTERM) is raised at the next bytecode of the main thread. When that bytecode belongs to
    code whose exceptions CPython reports as "unraisable" and drops — ``os.fork``'s at-fork
    hooks (``logging``'s lock release, run whenever a ``fork`` pool starts its workers), a
    ``__del__``, a weakref callback — the interrupt is printed as "Exception ignored" and the
    command goes on. Here ``sys.unraisablehook`` catches such an interrupt and a helper thread
    sends the same signal again after :data:`_REDELIVER_AFTER` seconds, when the main thread
    is back in ordinary code (if it lands in such code again, the same happens again). Other
    unraisable exceptions go to the previous hook.
    """
    previous, pid = sys.unraisablehook, os.getpid()

    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, KeyboardInterrupt) and os.getpid() == pid:
            signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
            timer = threading.Timer(_REDELIVER_AFTER, os.kill, (pid, signum))
            timer.daemon = True
            timer.start()
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:  # e.g. `rftheory --help | head -1`
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _named_command(parser: argparse.ArgumentParser, argv: list[str]) -> str:
    """The prog of the command ``argv`` names (``rftheory sweep run``), from its first words,
    for messages given before argparse has run."""
    words = [w for w in argv if not w.startswith("-")]
    for word in words:
        nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not nested or word not in nested[0].choices:
            break
        parser = nested[0].choices[word]
    return parser.prog


def _numerical_failure(exc: BaseException) -> bool:
    """A linear-algebra failure of numpy or SciPy (``LinAlgError``) that the library did not
    turn into :class:`~rftheory.errors.NumericalError` itself (it does in
    :func:`rftheory.gram.symmetric_eigh`)."""
    return type(exc).__name__ == "LinAlgError"


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        check_arguments(argv)  # every argument: bounded length, one line (commands/_rules.py)
    except RFTheoryError as exc:
        print(f"{_named_command(parser, argv)}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:  # argparse reports them from the top parser; name the command instead
            _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(extras)}")
        sys.stdout.flush()
    except SystemExit as exc:  # --help, --version, or a refused argument (one line already)
        sys.stdout.flush()
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    name = _command_parser(parser, args).prog  # "rftheory kernel", "rftheory sweep run"
    global _MAIN_PID
    _MAIN_PID = os.getpid()
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (an embedding application): leave signals alone
        pass
    try:
        with _interrupts_not_lost():
            status = int(args.handler(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's final flush
        return status
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        numerical = _numerical_failure(exc)
        if args.debug or not (numerical or isinstance(exc, (RFTheoryError, OSError,
                                                             MemoryError))):
            raise
        text = _one_line(str(exc)) or type(exc).__name__
        # rftheory's own errors are refusals with their message (a MemoryLimitError is a
        # MemoryError too, but it was refused before it ran, not out of memory)
        if isinstance(exc, MemoryError) and not isinstance(exc, RFTheoryError):
            text = f"out of memory ({text}); reduce the sizes or lower --memory-limit"
        elif numerical:
            text = f"numerical failure in linear algebra ({text}); the inputs give a matrix " \
                   "floating point cannot handle"
        print(f"{name}: error: {text}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        if args.debug:
            raise
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        notes = "; ".join(getattr(exc, "__notes__", ()))
        print(f"{name}: interrupted by {signal.Signals(signum).name}"
              + (f"; {notes}" if notes else ""), file=sys.stderr)
        return 128 + signum
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
