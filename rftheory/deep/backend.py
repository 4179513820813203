"""JAX for the deep part: a clear error when it is missing, and the float64 scope.

JAX computes in float32 unless ``jax_enable_x64`` is on. The deep part's public functions run
inside :func:`float64` (a context, so the caller's own JAX setting is left alone) and return
numpy arrays, which keep their float64 values outside it.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ..errors import RFTheoryError

__all__ = ["require_jax", "float64"]


def require_jax() -> Any:
    """Import and return :mod:`jax`, or raise a one-line error naming the extra to install.

    Returns
    -------
    module
        :mod:`jax`.

    Raises
    ------
    RFTheoryError
        If JAX is not installed.
    """
    try:
        import jax
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise RFTheoryError("the deep part needs JAX: pip install 'rftheory[deep]'") from None
    return jax


@contextlib.contextmanager
def float64() -> Iterator[None]:
    """Run the enclosed JAX code with float64 enabled (restored on exit).

    Uses ``jax.enable_x64`` (jax ≥ 0.4.36) or ``jax.experimental.enable_x64`` (older).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> with float64():
    ...     str(jnp.ones(2).dtype)
    'float64'
    """
    jax = require_jax()
    ctx = getattr(jax, "enable_x64", None)
    if ctx is None:  # pragma: no cover - jax < 0.4.36
        from jax.experimental import enable_x64 as ctx
    with ctx(True):
        yield
