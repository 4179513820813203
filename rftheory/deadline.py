"""A deadline on the clock: the one object the package's long jobs check to stop in time.

``--time-limit SECONDS`` (or ``RFTHEORY_TIME_LIMIT``) becomes a :class:`Deadline` when the
command starts; it is passed down to what loops — the optimiser (checked once per iteration),
the kernel measurement (once per draw of V), a claim's tasks and a sweep's cells (the waits for
them end at the deadline) — which stop when it has passed and return what they have, marked
``stop_reason: "time_limit"``. Nothing is estimated: a job that would take too long simply runs
until the deadline. Without a limit (``None``, ``inf``) the deadline never passes.

Examples
--------
>>> Deadline.after(None).passed(), Deadline.after(float("inf")).remaining()
(False, inf)
>>> Deadline.after(0.0).passed()
True
>>> time_limit("90")
90.0
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any

from .errors import RFTheoryError

__all__ = ["Deadline", "NO_DEADLINE", "time_limit", "TIME_LIMIT_REACHED"]

#: The ``stop_reason`` of a job that its deadline stopped.
TIME_LIMIT_REACHED = "time_limit"


def time_limit(value: Any = None, *, name: str = "time_limit") -> float:
    """Seconds of a time limit: ``value`` (called ``name`` in messages), else
    ``RFTHEORY_TIME_LIMIT``, else none (``math.inf``); ``"inf"`` means none.

    Parameters
    ----------
    value : float or str, optional
        Seconds (> 0, or ``inf``).
    name : str
        How messages call ``value`` (the CLI: ``--time-limit``).

    Returns
    -------
    float
        The limit in seconds, ``math.inf`` for none.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If the value is not a positive number of seconds (NaN, 0, negative, text).
    """
    source = name
    if value is None:
        value = os.environ.get("RFTHEORY_TIME_LIMIT") or None
        source = "RFTHEORY_TIME_LIMIT"
        if value is None:
            return math.inf
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise RFTheoryError(f"{source} must be a number of seconds or inf, got {value!r}") \
            from None
    if math.isnan(seconds) or seconds <= 0:
        raise RFTheoryError(f"{source} must be positive (seconds, or inf), got {value!r}")
    return seconds


@dataclass(frozen=True)
class Deadline:
    """A point on the monotonic clock (``time.monotonic``, shared by the processes of one
    machine, so a deadline can be sent to worker processes), or none.

    Attributes
    ----------
    at : float
        ``time.monotonic()`` value at which the deadline passes (``math.inf``: never).
    seconds : float
        The limit it was made from (``math.inf``: none).
    """

    at: float = math.inf
    seconds: float = math.inf

    @classmethod
    def after(cls, seconds: float | None) -> "Deadline":
        """A deadline ``seconds`` from now (None or ``inf``: none)."""
        if seconds is None or not math.isfinite(seconds):
            return NO_DEADLINE
        return cls(time.monotonic() + max(0.0, float(seconds)), float(seconds))

    @classmethod
    def from_limit(cls, value: Any = None, *, name: str = "time_limit") -> "Deadline":
        """:func:`time_limit` of ``value`` (or the environment), starting now."""
        return cls.after(time_limit(value, name=name))

    @property
    def finite(self) -> bool:
        """Whether this deadline can pass at all."""
        return math.isfinite(self.at)

    def remaining(self) -> float:
        """Seconds left (0 once passed; ``inf`` without a deadline)."""
        return max(0.0, self.at - time.monotonic()) if self.finite else math.inf

    def passed(self) -> bool:
        """Whether the deadline has passed."""
        return self.finite and time.monotonic() >= self.at


#: The deadline that never passes.
NO_DEADLINE = Deadline()
