"""Memory guard: refuse, before anything is allocated, a job whose arrays cannot fit this machine.

Every job of the package is sized by a few integers (d, n, p, n̂, the outputs k, the dtype)
long before it allocates anything, so a request that cannot fit is refused in one line, in well
under a second, instead of after minutes of allocation or with the machine swapping
(``reconstruct --p 100000000000``, ``kernel --d 100000000``, ``--p-mult 1e300``, a sweep of
10⁸ cells). This module only adds up and checks: the peak bytes of each job are declared by the
algorithm itself, next to its code, as a :class:`Memory` —

======================================================  =====================================
:func:`rftheory.features.stream_memory`                 one streamed pass over V
:func:`rftheory.fit.train_memory`                       the min-norm fit θ* = Φ⁺Y
:func:`rftheory.features.features_memory`               a materialised Φ (n × p)
:func:`rftheory.projection.loss_memory`                 one projection loss with gradient
:func:`rftheory.varpro.memory`                          the LM attack (dense or CG, exchanges)
:func:`rftheory.reconstruct.memory`                     ``reconstruct`` (either method)
:func:`rftheory.pipeline.reconstruction_memory`         training, then the reconstruction
:func:`rftheory.cells.cell_memory`                      one sweep / claim cell
:func:`rftheory.concentration.measurement_memory`       the kernel concentration measurement
:data:`rftheory.sweep.store.SCANNED_ROW_BYTES`          a sweep's collector, per stored cell
======================================================  =====================================

— and :func:`check` compares one with the limit and raises
:class:`~rftheory.errors.MemoryLimitError` (a :class:`~rftheory.errors.ResourceLimitError` and
a :class:`MemoryError`). Sizes may be floats (``p = 1e300`` is sized, not
refused by an overflow).

Time is not estimated here, nor anywhere: a job shows its progress with a rate measured while it
runs, and ``--time-limit`` / ``RFTHEORY_TIME_LIMIT`` is a deadline on the clock
(:mod:`rftheory.deadline`) at which it stops and keeps what it has.

Limit
-----
By default 80 % (:data:`MEMORY_FRACTION`) of the memory available now (``MemAvailable`` of
``/proc/meminfo``, or the cgroup's remaining allowance when it is smaller, or ``os.sysconf``
elsewhere). ``memory_limit=`` (bytes or a size string) or the environment variable
``RFTHEORY_MEMORY_LIMIT`` (``"12G"``, ``"800M"``, bytes) replaces it, but never beyond the
machine's total memory (or the cgroup's limit): what cannot fit the machine is always refused.

Examples
--------
>>> need = Memory("a job", 3 * 2**30, (("V", 2 * 2**30), ("Φ", 2**30)))
>>> check(need, memory_limit="4G") is need
True
>>> check(need, memory_limit="1G")
Traceback (most recent call last):
...
rftheory.errors.MemoryLimitError: a job needs ~3 GiB of memory (V 2 GiB, Φ 1 GiB), over the limit of 1 GiB (1 GiB set by memory_limit); reduce the sizes, or raise the limit with memory_limit= or RFTHEORY_MEMORY_LIMIT (at most the machine's total memory)

Notes
-----
*What is counted* (each declaration says): the arrays the package allocates (numpy's own
allocations, as ``tracemalloc`` sees them). Not counted: the interpreter and libraries
(~150–300 MB of RSS), LAPACK's workspace, sympy's compilation. *Accuracy, measured*
(``tests/test_budget.py``, tracemalloc peaks of small runs): within a factor 2 of the measured
peak (typically 0.8–1.4×).
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass
from typing import Any, Iterable

from .errors import MemoryLimitError, RFTheoryError

__all__ = [
    "Memory",
    "check",
    "largest",
    "available_memory",
    "format_bytes",
    "format_duration",
    "memory_limit",
    "size",
    "show",
    "MEMORY_FRACTION",
]

#: Default memory limit as a fraction of the memory available when the check runs.
MEMORY_FRACTION = 0.8


@dataclass(frozen=True)
class Memory:
    """The peak bytes of one job, as its algorithm declares them.

    Attributes
    ----------
    job : str
        What it is, with its sizes (used in messages).
    peak_bytes : float
        Peak bytes of the arrays the job allocates (may be ``inf``).
    parts : tuple of (str, float)
        Named terms of the peak, largest first (for messages); they need not add up to it (the
        peak is the largest phase, a part may belong to one phase).

    Examples
    --------
    >>> Memory("x", 10.0, (("a", 2.0), ("b", 8.0))).parts
    (('b', 8.0), ('a', 2.0))
    >>> Memory("x", 10.0).times(3, "three x").peak_bytes
    30.0
    """

    job: str
    peak_bytes: float
    parts: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak_bytes", float(self.peak_bytes))
        parts = tuple((str(k), float(v)) for k, v in self.parts if v > 0)
        object.__setattr__(self, "parts", tuple(sorted(parts, key=lambda kv: -kv[1])))

    def named(self, job: str) -> "Memory":
        """The same memory under another name."""
        return Memory(job, self.peak_bytes, self.parts)

    def times(self, count: float, job: str) -> "Memory":
        """``count`` such jobs at once (e.g. workers), called ``job``."""
        return Memory(job, count * self.peak_bytes, tuple((k, count * v) for k, v in self.parts))

    def describe(self) -> str:
        """One line: the job, its peak and its three largest parts."""
        parts = ", ".join(f"{name} {format_bytes(b)}" for name, b in self.parts[:3])
        return f"{self.job}: ~{format_bytes(self.peak_bytes)} of memory" + (
            f" ({parts})" if parts else "")


def largest(needs: Iterable[Memory], job: str) -> Memory:
    """The largest of several jobs' memory (they run one after the other), called ``job``.

    Parameters
    ----------
    needs : iterable of Memory
        The jobs' declared memory.
    job : str
        The name of the result.

    Returns
    -------
    Memory
        The largest need under the name ``job`` (zero bytes when there is none).

    Examples
    --------
    >>> largest([Memory("a", 1.0), Memory("b", 5.0)], "both").peak_bytes
    5.0
    """
    needs = list(needs)
    if not needs:
        return Memory(job, 0.0)
    top = max(needs, key=lambda m: m.peak_bytes)
    return top.named(job)


# ---------------------------------------------------------------------------------------------
# Formatting and validation
# ---------------------------------------------------------------------------------------------

def format_bytes(value: float) -> str:
    """A byte count for messages, in binary units to 3 significant digits.

    Parameters
    ----------
    value : float
        Bytes (may be infinite).

    Returns
    -------
    str
        E.g. ``"1.5 GiB"``, ``"512 B"``, or ``"an unbounded amount"`` for a non-finite value.

    Examples
    --------
    >>> format_bytes(1.5 * 2**30), format_bytes(512), format_bytes(float("inf"))
    ('1.5 GiB', '512 B', 'an unbounded amount')
    """
    if not math.isfinite(value):
        return "an unbounded amount"
    for unit, scale in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30),
                        ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def format_duration(seconds: float) -> str:
    """A duration for messages, in the largest unit it reaches (s, min, h, days, years).

    Parameters
    ----------
    seconds : float
        The duration in seconds (may be infinite).

    Returns
    -------
    str
        E.g. ``"2 h"``, ``"0.5 s"``, or ``"forever"`` for a non-finite value.

    Examples
    --------
    >>> format_duration(7200), format_duration(0.5), format_duration(float("inf"))
    ('2 h', '0.5 s', 'forever')
    """
    if not math.isfinite(seconds):
        return "forever"
    for unit, scale in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.2g} s"


def size(name: str, value: Any, minimum: float = 1) -> float:
    """A size as a float (``1e300`` allowed), or :class:`RFTheoryError` for a non-number,
    NaN, or a value below ``minimum``.

    Parameters
    ----------
    name : str
        The size's name in messages.
    value : number
        The size.
    minimum : float
        Smallest value accepted (default 1).

    Returns
    -------
    float
        ``value`` as a float.

    Raises
    ------
    rftheory.errors.RFTheoryError
        For a non-number (bool included), NaN or a value below ``minimum``.

    Examples
    --------
    >>> size("p", 10**12)
    1000000000000.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise RFTheoryError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if math.isnan(value) or value < minimum:
        raise RFTheoryError(f"{name} must be >= {minimum:g}, got {value!r}")
    return value


def show(value: float) -> str:
    """A size in a message: an integer below 10⁹, else 3 significant digits.

    Parameters
    ----------
    value : float
        The size.

    Returns
    -------
    str
        E.g. ``"20000"`` or ``"1e+11"``.

    Examples
    --------
    >>> show(20000.0), show(1e11)
    ('20000', '1e+11')
    """
    return f"{int(value)}" if value < 1e9 and value == int(value) else f"{value:.3g}"


# ---------------------------------------------------------------------------------------------
# This machine's memory, the limit, and the check
# ---------------------------------------------------------------------------------------------

def _meminfo() -> dict[str, float]:
    values: dict[str, float] = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                fields = rest.split()
                if fields and fields[0].isdigit():
                    values[key] = float(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    except OSError:
        pass
    return values


def _cgroup() -> tuple[float, float] | None:
    """(limit, usage) of this process's cgroup v2 memory controller, if it has a limit."""
    try:
        with open("/proc/self/cgroup") as f:
            path = next((line.split(":", 2)[2].strip() for line in f if line.startswith("0::")),
                        None)
        if path is None:
            return None
        base = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
        with open(os.path.join(base, "memory.max")) as f:
            limit = f.read().strip()
        if limit == "max":
            return None
        with open(os.path.join(base, "memory.current")) as f:
            usage = float(f.read().strip())
        return float(limit), usage
    except (OSError, ValueError, StopIteration):
        return None


def _machine() -> tuple[float | None, float | None]:
    """(available, total) bytes of memory, None where unknown."""
    info = _meminfo()
    available = info.get("MemAvailable")
    total = info.get("MemTotal")
    if available is None:
        try:
            page = os.sysconf("SC_PAGE_SIZE")
            available = float(os.sysconf("SC_AVPHYS_PAGES") * page)
            total = float(os.sysconf("SC_PHYS_PAGES") * page)
        except (ValueError, OSError, AttributeError):
            pass
    group = _cgroup()
    if group is not None:
        limit, usage = group
        total = limit if total is None else min(total, limit)
        available = (limit - usage) if available is None else min(available, limit - usage)
    return available, total


def available_memory() -> float | None:
    """Bytes of memory available to this process now (None if this platform does not say).

    ``MemAvailable`` of ``/proc/meminfo`` (free memory plus what the kernel can reclaim), capped
    by the remaining allowance of a cgroup v2 memory limit (containers, CI runners);
    ``os.sysconf`` free pages where ``/proc`` does not exist.

    Returns
    -------
    float or None
        Available bytes, or None where the platform does not report them.
    """
    return _machine()[0]


def _parseformat_bytes(text: str, where: str) -> float:
    units = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    number, unit = (t[:-1], t[-1]) if t and t[-1] in "KMGT" else (t, "")
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        raise RFTheoryError(f"{where} must be a size such as 12G, 800M or a number of bytes, "
                            f"got {text!r}") from None
    if not value > 0:
        raise RFTheoryError(f"{where} must be positive, got {text!r}")
    return value


def memory_limit(explicit: float | str | None = None, *,
                 name: str = "memory_limit") -> tuple[float, str]:
    """The memory limit in bytes and a phrase saying where it comes from (for messages).

    ``explicit`` (bytes, or a size string; ``name`` is how messages call it, e.g. the CLI's
    ``--memory-limit``) or ``RFTHEORY_MEMORY_LIMIT`` replaces the default
    :data:`MEMORY_FRACTION` of the available memory; neither may exceed the machine's total.

    Parameters
    ----------
    explicit : float or str, optional
        Bytes, or a size string (``"12G"``, ``"800M"``, ``"1024"``); default None: the
        environment variable, else the default fraction.
    name : str
        How messages call ``explicit`` (default ``"memory_limit"``).

    Returns
    -------
    limit : float
        The limit in bytes (``math.inf`` where the platform reports no memory and none is set).
    source : str
        Where it comes from, e.g. ``"80% of the 12 GiB available"``.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``explicit`` (or the variable) is not a positive size.
    """
    available, total = _machine()
    source = None
    if explicit is None and os.environ.get("RFTHEORY_MEMORY_LIMIT"):
        explicit, source = os.environ["RFTHEORY_MEMORY_LIMIT"], "RFTHEORY_MEMORY_LIMIT"
    if explicit is not None:
        value = _parseformat_bytes(explicit, source or name) if isinstance(explicit, str) \
            else size(name, explicit, 0)
        if total is not None and value > total:
            return total, f"this machine's total of {format_bytes(total)}"
        return value, f"{format_bytes(value)} set by {source or name}"
    if available is None:
        return math.inf, "no limit (this platform does not report its memory)"
    value = MEMORY_FRACTION * available
    return value, (f"{MEMORY_FRACTION:.0%} of the {format_bytes(available)} available")


def check(need: Memory, *, memory_limit: float | str | None = None,
          via: str = "memory_limit=") -> Memory:
    """Return ``need`` if it fits the memory limit; raise :class:`~rftheory.errors.MemoryLimitError` otherwise.

    The message is one line: the job, its peak and main parts, the limit and where it comes
    from, and how to change it. ``via`` names the limit as the caller offers it (the CLI:
    ``"--memory-limit"``).

    Parameters
    ----------
    need : Memory
        The job's memory (its algorithm's declaration).
    memory_limit : float or str, optional
        Bytes or a size string (``"12G"``); default: ``RFTHEORY_MEMORY_LIMIT`` or
        :data:`MEMORY_FRACTION` of the available memory (see :func:`memory_limit`).
    via : str
        How the message names the limit (default ``"memory_limit="``).

    Returns
    -------
    Memory
        ``need``, when it fits.

    Raises
    ------
    rftheory.errors.MemoryLimitError
        If the peak is over the limit.
    """
    limit, source = _limit_memory(memory_limit, name=via.rstrip("="))
    if not need.peak_bytes <= limit:
        parts = ", ".join(f"{name} {format_bytes(b)}" for name, b in need.parts[:3])
        hint = ("reduce the sizes" if source.startswith("this machine")
                else f"reduce the sizes, or raise the limit with {via} or "
                     "RFTHEORY_MEMORY_LIMIT (at most the machine's total memory)")
        raise MemoryLimitError(
            f"{need.job} needs ~{format_bytes(need.peak_bytes)} of memory"
            + (f" ({parts})" if parts else "")
            + f", over the limit of {format_bytes(limit)} ({source}); {hint}")
    return need


# the public name memory_limit is also check()'s keyword
_limit_memory = memory_limit
