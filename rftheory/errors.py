"""Exceptions raised by rftheory.

Every error that bad user input can cause derives from :class:`RFTheoryError`, the package's
base class: ``except RFTheoryError`` catches them all, and the CLI turns each into a one-line
message with exit status 2. The base class is *not* itself a :class:`ValueError`: each kind of
error also derives from the builtin that fits, so that ``except ValueError`` does not catch a
memory refusal and ``except FileNotFoundError`` catches a missing data set:

=============================  =====================================================
class                          builtin
=============================  =====================================================
:class:`InvalidValueError`     :class:`ValueError` — a value is out of its domain
:class:`ActivationError`       :class:`ValueError` — an activation is refused
:class:`ShapeError`            :class:`ValueError` — shapes, non-finite entries
:class:`HermiteOptionError`    :class:`ValueError` — an option of a Hermite computation
:class:`NumericalError`        :class:`ValueError` (like numpy's ``LinAlgError``)
:class:`InvalidTypeError`      :class:`TypeError` — wrong type or dtype
:class:`BackendError`          :class:`ValueError` and :class:`TypeError` — a namespace
:class:`DataNotFoundError`     :class:`FileNotFoundError` — missing or unreadable data
:class:`MemoryLimitError`      :class:`MemoryError` — a job refused for its memory
:class:`ResourceLimitError`    — (a job refused before it started; base of the above)
=============================  =====================================================

Raising :class:`RFTheoryError` itself (as older code does) creates an
:class:`InvalidValueError` — a :class:`ValueError`, as every rftheory error used to be — that
still shows as ``RFTheoryError`` in tracebacks, so nothing that caught ``ValueError`` before
misses a value error now. New code raises the class that says what went wrong.

Examples
--------
>>> from rftheory import get_activation
>>> from rftheory.errors import ActivationError, InvalidValueError, RFTheoryError
>>> issubclass(ActivationError, RFTheoryError), issubclass(RFTheoryError, ValueError)
(True, False)
>>> try:
...     get_activation("__import__('os')")
... except RFTheoryError as error:
...     print(type(error).__name__, isinstance(error, ValueError))
ActivationError True
>>> isinstance(RFTheoryError("bad value"), InvalidValueError)
True
"""

import inspect

__all__ = ["RFTheoryError", "InvalidValueError", "InvalidTypeError", "ActivationError",
           "ShapeError", "BackendError", "HermiteOptionError", "DataNotFoundError",
           "ResourceLimitError", "MemoryLimitError", "NumericalError"]


class RFTheoryError(Exception):
    """Base class of every error rftheory raises for bad input or a refused job.

    Not itself a :class:`ValueError`; its subclasses also derive from the builtin that fits
    (see the module's table). ``RFTheoryError(message)`` creates an :class:`InvalidValueError`.
    """

    # The classes' signature in the documentation: none (they take the message, as Exception),
    # rather than the ``*args, **kwargs`` of __new__ below.
    __signature__ = inspect.Signature()

    def __new__(cls, *args: object, **kwargs: object) -> "RFTheoryError":
        if cls is RFTheoryError:  # the old spelling of a value error stays a ValueError
            cls = _PlainValueError
        return super().__new__(cls, *args, **kwargs)


class InvalidValueError(RFTheoryError, ValueError):
    """A value is outside what the function accepts (a count, a name, an option)."""


class _PlainValueError(InvalidValueError):
    """What ``RFTheoryError(message)`` creates: an :class:`InvalidValueError` that shows (in
    tracebacks and doctests) and pickles as ``RFTheoryError``, the name it was raised under."""

    def __reduce__(self) -> tuple:
        return (RFTheoryError, self.args)


_PlainValueError.__name__ = _PlainValueError.__qualname__ = "RFTheoryError"


class InvalidTypeError(RFTheoryError, TypeError):
    """An argument has the wrong type or dtype (e.g. a float where an integer seed is needed)."""


class ActivationError(InvalidValueError):
    """An activation string or specification was refused (unsafe, unknown or malformed)."""


class ShapeError(InvalidValueError):
    """Array arguments have incompatible shapes, dtypes or non-finite entries."""


class BackendError(InvalidValueError, TypeError):
    """An operation is not available for the array namespace of the inputs (or the device).

    Both a :class:`ValueError` (as it always was: a device name or an activation the namespace
    cannot evaluate is a bad value) and a :class:`TypeError` (an array of a type that cannot do
    it)."""


class HermiteOptionError(InvalidValueError):
    """An option of a Hermite computation (order, method, digits, time budget) is invalid."""


class DataNotFoundError(RFTheoryError, FileNotFoundError):
    """A data set was requested from local files that are missing or unreadable."""


class ResourceLimitError(RFTheoryError):
    """A job was refused before it started: its estimated memory or time exceeds the limit
    (see :mod:`rftheory.budget`)."""


class MemoryLimitError(MemoryError, ResourceLimitError):
    """A job was refused before it started because its declared peak memory exceeds the limit
    (:func:`rftheory.budget.check`)."""


class NumericalError(InvalidValueError):
    """A numerical computation cannot be carried out in floating point for the given inputs:
    a matrix with non-finite entries, an eigenvalue iteration that does not converge (see
    :func:`rftheory.gram.symmetric_eigh`, the one place linear-algebra failures are turned into
    this error)."""
