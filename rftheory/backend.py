"""Array backends: the namespace a device name stands for, and copies back to the host.

Array code in rftheory is written once against the array API, and its namespace follows the
inputs (``array_namespace(x)``). These two helpers are the only places that name a backend:
:func:`namespace` turns a device name into numpy or CuPy (checking that a CUDA device is usable),
:func:`to_host` copies an array of any namespace back to numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from array_api_compat import array_namespace

from .errors import BackendError

#: What ``array_namespace`` returns for numpy arrays (looked up once).
_NUMPY_COMPAT = array_namespace(np.zeros(0))

__all__ = ["DEVICES", "namespace", "namespace_of", "to_host"]

#: Device names accepted by :func:`namespace`.
DEVICES = ("cpu", "gpu")


def namespace(device: str = "cpu") -> Any:
    """The array namespace of ``device``: numpy for ``"cpu"``, CuPy for ``"gpu"``.

    Parameters
    ----------
    device : {"cpu", "gpu"}
        Where the arrays live.

    Returns
    -------
    module
        :mod:`numpy` or ``cupy``.

    Raises
    ------
    BackendError
        For another name, or ``"gpu"`` without CuPy or without a usable CUDA device.

    Examples
    --------
    >>> namespace("cpu").__name__
    'numpy'
    """
    if device == "cpu":
        return np
    if device != "gpu":
        raise BackendError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    try:
        import cupy
    except ImportError:
        raise BackendError("device gpu needs CuPy (pip install 'rftheory[gpu]')") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - CUDA driver missing or broken: any error
        raise BackendError(f"device gpu: no usable CUDA device ({exc})".splitlines()[0]) from None
    if count < 1:
        raise BackendError("device gpu: no CUDA device found")
    return cupy


def namespace_of(*arrays: Any) -> Any:
    """``array_api_compat.array_namespace(*arrays)``, with a fast path for plain numpy arrays.

    The same namespace object as ``array_namespace`` returns, so results cannot differ; only the
    lookup is cheaper (~0.3 µs rather than ~10 µs), which matters in loops that make tens of
    array calls on small arrays (an LM iteration of the attack at d = n = 10 makes ~40).

    Parameters
    ----------
    *arrays : array
        Arrays of one namespace.

    Returns
    -------
    module
        Their array-API namespace (``array_api_compat.numpy`` for numpy arrays).

    Raises
    ------
    TypeError
        As ``array_namespace`` does, for non-arrays or mixed namespaces.

    Examples
    --------
    >>> from array_api_compat import array_namespace
    >>> x = np.zeros(3)
    >>> namespace_of(x, x) is array_namespace(x)
    True
    """
    for a in arrays:
        if type(a) is not np.ndarray:
            return array_namespace(*arrays)
    return _NUMPY_COMPAT if arrays else array_namespace(*arrays)


def to_host(A: Any, dtype: Any = None) -> np.ndarray:
    """Copy an array of any array-API namespace to a host numpy array (CuPy via ``.get()``).

    A numpy array is returned as it is (no copy) unless ``dtype`` asks for a conversion.

    Parameters
    ----------
    A : array
        An array of numpy, CuPy or any array-API namespace.
    dtype : dtype, optional
        Convert to this dtype (default: keep ``A``'s).

    Returns
    -------
    numpy.ndarray
        The values on the host.

    Examples
    --------
    >>> to_host(np.arange(3), np.float64)
    array([0., 1., 2.])
    """
    if isinstance(A, np.ndarray):
        host = A
    elif hasattr(A, "get") and type(A).__module__.startswith("cupy"):
        host = A.get()
    else:
        try:
            host = np.from_dlpack(A)
        except (TypeError, RuntimeError, BufferError, AttributeError):
            host = np.asarray(A)
    return host if dtype is None else np.asarray(host, dtype=dtype)
