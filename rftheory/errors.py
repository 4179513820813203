"""Exceptions raised by rftheory.

Every error that bad user input can cause derives from :class:`RFTheoryError`, itself a
:class:`ValueError`, so callers can catch one type and the CLI can turn it into a one-line message
with exit status 2.

Examples
--------
>>> from rftheory import get_activation
>>> from rftheory.errors import ActivationError, RFTheoryError
>>> issubclass(ActivationError, RFTheoryError) and issubclass(RFTheoryError, ValueError)
True
>>> try:
...     get_activation("__import__('os')")
... except RFTheoryError as error:
...     print(type(error).__name__)
ActivationError
"""


class RFTheoryError(ValueError):
    """Base class for errors caused by invalid input to rftheory."""


class ActivationError(RFTheoryError):
    """An activation string or specification was refused (unsafe, unknown or malformed)."""


class ShapeError(RFTheoryError):
    """Array arguments have incompatible shapes, dtypes or non-finite entries."""


class BackendError(RFTheoryError):
    """An operation is not available for the array namespace of the inputs."""


class HermiteOptionError(RFTheoryError):
    """An option of a Hermite computation (order, method, digits, time budget) is invalid."""


class DataNotFoundError(RFTheoryError):
    """A data set was requested from local files that are missing or unreadable."""


class ResourceLimitError(RFTheoryError):
    """A job was refused before it started: its estimated memory or time exceeds the limit
    (see :mod:`rftheory.budget`)."""


class NumericalError(RFTheoryError):
    """A numerical computation cannot be carried out in floating point for the given inputs:
    a matrix with non-finite entries, an eigenvalue iteration that does not converge (see
    :func:`rftheory.gram.symmetric_eigh`, the one place linear-algebra failures are turned into
    this error)."""
