"""The command line's input rules, shared by every command (no numpy, no sympy imported here):

* **every argument** is at most :data:`MAX_ARGUMENT_LENGTH` characters and one line of text
  without control characters (:func:`check_arguments`, run by :func:`rftheory.cli.main` before
  any command);
* an **activation** ``EXPR`` follows the text rule of :mod:`rftheory.inputs` (stripped, at most
  400 characters, ASCII, an expression of the allowed shape) at parse time (:func:`expression`,
  an argparse ``type``), so the stripped text is what results record;
* an **integer** option has ASCII digits only, at most 30 of them, within its bounds
  (:func:`integer_type` for argparse, :func:`rftheory.inputs.integer` in handlers);
* a **count of repetitions** (``--reps``, ``--seeds``) is at most :data:`MAX_REPETITIONS`;
* ``--workers`` follows :func:`rftheory.processes.check_workers` in every command.

Each refusal is one line (argparse's, or an :class:`~rftheory.errors.RFTheoryError`), quoting at
most a few dozen characters of what was typed.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Sequence

from ..errors import RFTheoryError
from ..inputs import activation_text, control_character, integer, shown

#: Longest command-line argument accepted (PATH_MAX on Linux; an activation is at most 400).
MAX_ARGUMENT_LENGTH = 4096
#: Most repetitions (independent draws, seeds) a command accepts: each is a full run of the
#: measurement, so more than this is a typo, not a plan (time is bounded by --time-limit).
MAX_REPETITIONS = 10_000


def check_arguments(argv: Sequence[str]) -> None:
    """Refuse an argument that is too long or holds a control character (one line).

    Raises
    ------
    RFTheoryError
        Naming the argument's position and, shortened, its text.
    """
    for position, token in enumerate(argv, start=1):
        if not isinstance(token, str):
            raise RFTheoryError(f"argument {position} is a {type(token).__name__}, not text")
        if len(token) > MAX_ARGUMENT_LENGTH:
            raise RFTheoryError(f"argument {position} {shown(token)} is longer than "
                                f"{MAX_ARGUMENT_LENGTH} characters")
        control = control_character(token)
        if control is not None:
            raise RFTheoryError(f"argument {position} {shown(token)} holds the control character "
                                f"{control[1]} at position {control[0]}; give one line of text")


def expression(text: str) -> str:
    """argparse ``type`` of an activation: the text rule of :mod:`rftheory.inputs`."""
    try:
        return activation_text(text)
    except RFTheoryError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def integer_type(minimum: int | None = None,
                 maximum: int | None = None) -> Callable[[str], int]:
    """argparse ``type`` of an integer option within ``[minimum, maximum]``."""
    def parse(text: str) -> int:
        try:
            return integer(text, "the value", minimum, maximum)
        except RFTheoryError as exc:
            raise argparse.ArgumentTypeError(str(exc).replace("the value ", "", 1)) from None

    parse.__name__ = "int"
    return parse


def repetitions(text: Any, option: str, minimum: int = 1) -> int:
    """A count of repetitions (``--reps``): an integer in ``[minimum, MAX_REPETITIONS]``."""
    return integer(text, option, minimum, MAX_REPETITIONS)


def workers(text: Any, option: str = "--workers") -> int | None:
    """``--workers W`` (None when not given) by the rule of
    :func:`rftheory.processes.check_workers`: an integer from 1 to the CPUs this process may
    use."""
    if text is None:
        return None
    from ..processes import check_workers

    return check_workers(integer(text, option), option)
