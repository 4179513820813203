"""Random generators from a SPEC 7 ``rng``: an integer seed, a ``SeedSequence``, a ``Generator``.

Every random object of the package other than V (data, labels, initial candidates, bootstrap,
...) is drawn from a numpy :class:`~numpy.random.Generator` made here. V is not: it is a pure
function of an integer seed (:mod:`rftheory.philox`), so a model's ``seed`` stays an integer.

:func:`generator` follows `SPEC 7 <https://scientific-python.org/specs/spec-0007/>`_:

* an integer ``seed`` ≥ 0 gives ``default_rng([seed, stream, *extra])`` — the package's fixed
  stream per purpose (``stream`` ≥ 2**26, one tag per kind of draw), so one seed drives V, the
  data, the labels and the optimiser's start independently; the numbers are those the package
  has always drawn for that seed;
* a :class:`~numpy.random.SeedSequence` gives the same per-purpose child, its ``spawn_key``
  extended by ``(stream, *extra)``: independent streams again, from the caller's entropy;
* a :class:`~numpy.random.Generator` is used as it is (and advanced): the caller chose the
  stream, and successive draws from one generator are what they get;
* ``None`` draws fresh entropy from the operating system (not reproducible: pass a seed for that).

Memory: O(1).
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from .errors import InvalidTypeError, InvalidValueError

__all__ = ["RNGLike", "generator", "check_rng", "rng_or_seed"]

#: What an ``rng`` argument accepts (SPEC 7).
RNGLike = Union[int, np.integer, np.random.SeedSequence, np.random.Generator, None]


def check_rng(rng: Any, name: str = "rng") -> Any:
    """Refuse what :func:`generator` cannot use, before any work.

    Parameters
    ----------
    rng : int, numpy.random.SeedSequence, numpy.random.Generator or None
        The value to check.
    name : str, default "rng"
        Its name in the message.

    Returns
    -------
    int, numpy.random.SeedSequence, numpy.random.Generator or None
        ``rng``, an integer as a Python int.

    Raises
    ------
    rftheory.errors.InvalidTypeError
        For a type that is none of these (a float, a string, a bool, numpy's legacy
        ``RandomState``, ...).
    rftheory.errors.InvalidValueError
        For a negative integer.

    Examples
    --------
    >>> check_rng(3), check_rng(None)
    (3, None)
    """
    if rng is None or isinstance(rng, (np.random.Generator, np.random.SeedSequence)):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, (int, np.integer)):
        raise InvalidTypeError(f"{name} must be an integer seed >= 0, a numpy SeedSequence or a "
                               f"numpy Generator, got {type(rng).__name__} {rng!r}")
    if rng < 0:
        raise InvalidValueError(f"{name} must be an integer seed >= 0, got {rng!r}")
    return int(rng)


def generator(rng: RNGLike, stream: int, *extra: int) -> np.random.Generator:
    """The numpy Generator of one purpose (``stream``) from a SPEC 7 ``rng``.

    Parameters
    ----------
    rng : int, numpy.random.SeedSequence, numpy.random.Generator or None
        See the module: an integer seed or a SeedSequence gives the per-purpose stream, a
        Generator is returned as is, None draws fresh entropy.
    stream : int
        The purpose's tag (a fixed integer per kind of draw).
    *extra : int
        Further integers of the stream's key (e.g. a grid index).

    Returns
    -------
    numpy.random.Generator
        The generator to draw from.

    Raises
    ------
    rftheory.errors.InvalidTypeError, rftheory.errors.InvalidValueError
        As :func:`check_rng`.

    Examples
    --------
    An integer seed gives the package's fixed stream (the numbers it always drew); a Generator
    is used as it is:

    >>> import numpy as np
    >>> a = generator(7, 2**40 + 1).standard_normal(2)
    >>> bool(np.all(a == np.random.default_rng([7, 2**40 + 1]).standard_normal(2)))
    True
    >>> g = np.random.default_rng(0)
    >>> generator(g, 2**40 + 1) is g
    True
    """
    rng = check_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.SeedSequence):
        child = np.random.SeedSequence(rng.entropy,
                                       spawn_key=tuple(rng.spawn_key) + (int(stream), *map(int, extra)),
                                       pool_size=rng.pool_size)
        return np.random.default_rng(child)
    if rng is None:
        return np.random.default_rng()
    return np.random.default_rng([rng, int(stream), *map(int, extra)])


def rng_or_seed(rng: RNGLike, seed: Any, *, default: RNGLike = 0) -> RNGLike:
    """``rng``, or the old keyword ``seed`` where a caller gave that instead.

    Functions that drew from an integer ``seed=`` take ``rng=`` (SPEC 7) and keep ``seed=``
    working: ``rng`` is left at ``default`` and ``seed`` holds the integer.

    Parameters
    ----------
    rng : int, numpy.random.SeedSequence, numpy.random.Generator or None
        The SPEC 7 argument.
    seed : int or None
        The old keyword (None: not given).
    default : int, numpy.random.SeedSequence, numpy.random.Generator or None, default 0
        ``rng``'s default in the function's signature.

    Returns
    -------
    int, numpy.random.SeedSequence, numpy.random.Generator or None
        What to draw from.

    Raises
    ------
    rftheory.errors.InvalidTypeError
        When both are given.

    Examples
    --------
    >>> rng_or_seed(0, 5), rng_or_seed(3, None)
    (5, 3)
    """
    if seed is None:
        return rng
    if rng is not default and not (rng is None and default is None) and not (
            isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)
            and isinstance(default, int) and rng == default):
        raise InvalidTypeError(f"give rng or seed (its old name), not both: rng={rng!r}, "
                               f"seed={seed!r}")
    return seed
