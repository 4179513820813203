"""Old spellings that keep working for a while, with a :class:`DeprecationWarning`.

* :func:`keyword_only_after` — arguments past the first few are keyword-only; passing them by
  position still works (same meaning) and warns;
* :func:`deprecated_alias` — a function's old name calls the new one and warns.

Breaking changes and their deprecations are listed in ``CHANGELOG.md``.

Memory: O(1).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, TypeVar

from .errors import InvalidTypeError

__all__ = ["keyword_only_after", "deprecated_alias"]

F = TypeVar("F", bound=Callable[..., Any])


def keyword_only_after(count: int, old_order: tuple[str, ...]) -> Callable[[F], F]:
    """Accept, with a DeprecationWarning, keyword-only arguments passed by position.

    Parameters
    ----------
    count : int
        Positional parameters of the new signature.
    old_order : tuple of str
        The keyword-only parameters in the order the old signature took them by position.

    Returns
    -------
    callable
        A decorator.

    Examples
    --------
    >>> import warnings
    >>> @keyword_only_after(1, ("b",))
    ... def f(a, *, b=0):
    ...     return a + b
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     f(1, 2), f(1, b=2), caught[0].category.__name__
    (3, 3, 'DeprecationWarning')
    """
    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > count:
                extra = args[count:]
                if len(extra) > len(old_order):
                    raise InvalidTypeError(f"{func.__name__}() takes at most "
                                           f"{count + len(old_order)} positional arguments "
                                           f"({len(args)} given)")
                names = old_order[:len(extra)]
                for name, value in zip(names, extra):
                    if name in kwargs:
                        raise InvalidTypeError(f"{func.__name__}() got multiple values for "
                                               f"argument {name!r}")
                    kwargs[name] = value
                warnings.warn(f"passing {', '.join(names)} to {func.__name__}() by position is "
                              f"deprecated; pass {'it' if len(names) == 1 else 'them'} by "
                              "keyword", DeprecationWarning, stacklevel=2)
                args = args[:count]
            return func(*args, **kwargs)

        wrapper.__signature__ = inspect.signature(func)  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate


def deprecated_alias(func: F, old_name: str) -> F:
    """``func`` under its old name: same call, plus a DeprecationWarning naming the new one.

    Parameters
    ----------
    func : callable
        The function under its new name.
    old_name : str
        The old name.

    Returns
    -------
    callable
        The alias.

    Examples
    --------
    >>> import warnings
    >>> def new(x):
    ...     "Double x."
    ...     return 2 * x
    >>> old = deprecated_alias(new, "old")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old(2), str(caught[0].message)
    (4, 'old() is deprecated; use new()')
    """
    @functools.wraps(func)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"{old_name}() is deprecated; use {func.__name__}()", DeprecationWarning,
                      stacklevel=2)
        return func(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old_name
    # the new function's documentation (parameters, returns) under a deprecation summary
    rest = (inspect.getdoc(func) or "").partition("\n\n")[2]
    alias.__doc__ = (f"Deprecated alias of :func:`{func.__module__}.{func.__name__}` (same "
                     f"arguments, same result), with a DeprecationWarning.\n\n{rest}")
    return alias  # type: ignore[return-value]
