"""CuPy launchers of the generator's kernel: V (or Z) and the Philox words on a CUDA device.

The kernel is :func:`rftheory.philox.kernel_source` (the shipped ``rftheory/philox.cu`` with its
constants), compiled once per device by NVRTC with :data:`NVRTC_OPTIONS`; the numbers are those
of the host generator :func:`rftheory.philox.standard_normal`, to the bit.

Memory: the output array only (no host draw, no transfer).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import InvalidTypeError, RFTheoryError
from .philox import GROUP, kernel_source, philox_key

__all__ = ["NVRTC_OPTIONS", "cupy_fill", "cupy_words"]

#: NVRTC options of the kernel: no fused multiply-adds, so its operations are box_muller()'s.
NVRTC_OPTIONS = ("--fmad=false",)
_MODULES: dict[int, Any] = {}


def _cupy_module() -> Any:
    import cupy

    dev = cupy.cuda.Device().id
    mod = _MODULES.get(dev)
    if mod is None:
        mod = _MODULES[dev] = cupy.RawModule(code=kernel_source("cuda"), options=NVRTC_OPTIONS)
    return mod


_THREADS_PER_BLOCK = 256


def cupy_fill(seed: int, row0: int, out: Any, *, scale_dim: int | None = None) -> Any:
    """Fill a C-contiguous CuPy array ``out`` of shape (..., d) with rows row0.. of V (or Z).

    ``out`` is viewed as (rows, d); float32 or float64. With ``scale_dim`` it receives
    V = Z/√scale_dim, else Z. No host draw, no transfer: one kernel launch.

    Parameters
    ----------
    seed : int
        The seed of V.
    row0 : int
        The first row.
    out : cupy.ndarray
        C-contiguous, float32 or float64, last axis d.
    scale_dim : int, optional
        Divide by √scale_dim (V's d); default: the raw normals Z.

    Returns
    -------
    cupy.ndarray
        ``out``.
    """
    import cupy

    if out.dtype not in (cupy.float32, cupy.float64):
        raise InvalidTypeError(f"out must be a C-contiguous float32/float64 CuPy array, got {out.dtype}")
    if not out.flags.c_contiguous or out.ndim < 1:
        raise RFTheoryError("out must be a C-contiguous float32/float64 CuPy array")
    key = philox_key(seed)
    d = int(out.shape[-1])
    rows = out.size // d if d else 0
    if rows == 0:
        return out
    kern = _cupy_module().get_function("rf_fill_f32" if out.dtype == cupy.float32 else "rf_fill_f64")
    n = rows * -(-d // GROUP)
    blocks = min(-(-n // _THREADS_PER_BLOCK), 2**20)
    sqrt_d = 1.0 if scale_dim is None else math.sqrt(scale_dim)
    kern((blocks,), (_THREADS_PER_BLOCK,),
         (np.uint64(key[0]), np.uint64(key[1]), np.uint64(row0), np.int64(rows), np.int32(d),
          np.float64(sqrt_d), out))
    return out


def cupy_words(seed: int, row0: int, rows: int, groups: int) -> Any:
    """The Philox words of counters (row0 + r, g, 0, 0) computed on the device, (rows, groups, 4).

    Parameters
    ----------
    seed : int
        The seed (key).
    row0 : int
        The first row counter.
    rows, groups : int
        How many rows, and groups of four columns per row.

    Returns
    -------
    cupy.ndarray of uint64
        Shape (rows, groups, 4).
    """
    import cupy

    key = philox_key(seed)
    out = cupy.empty((rows, groups, 4), dtype=cupy.uint64)
    n = rows * groups
    if n:
        _cupy_module().get_function("rf_words")(
            (min(-(-n // _THREADS_PER_BLOCK), 2**20),), (_THREADS_PER_BLOCK,),
            (np.uint64(key[0]), np.uint64(key[1]), np.uint64(row0), np.int64(rows),
             np.int32(groups), out))
    return out
