"""Independent references for rftheory.philox, used by the tests only.

* :func:`philox4x64_10`: Philox4x64-10 written from the Random123 specification (Salmon et al.,
  SC'11) in plain numpy uint64 arithmetic, the 64×64→128-bit product built from 32-bit halves —
  shares no code with numpy's C ``Philox`` nor with the kernel source.
* :func:`exact_normal_pairs`: the Box–Muller transform of the same integers in 120-bit mpmath,
  written from the definition (u = (k + 1)·2**-53, θ = 2π k'·2**-53), not from the octant
  algorithm of :func:`rftheory.philox.box_muller`.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_M = (np.uint64(0xD2E7470EE14C6C93), np.uint64(0xCA5A826395121157))
_W = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBB67AE8584CAA73B))

#: Random123's known-answer vectors for philox4x64_10 (``kat_vectors`` of the Random123
#: distribution, as reproduced in D. E. Shaw Research's core123 unit test ut_philox.cpp):
#: (counter words 0..3, key words 0..1, output words 0..3).
KAT_PHILOX4X64_10 = [
    ([0, 0, 0, 0], [0, 0],
     [0x16554D9ECA36314C, 0xDB20FE9D672D0FDC, 0xD7E772CEE186176B, 0x7E68B68AEC7BA23B]),
    ([2**64 - 1] * 4, [2**64 - 1] * 2,
     [0x87B092C3013FE90B, 0x438C3C67BE8D0224, 0x9CC7D7C69CD777B6, 0xA09CAEBF594F0BA0]),
    ([0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89],
     [0x452821E638D01377, 0xBE5466CF34E90C6C],
     [0xA528F45403E61D95, 0x38C72DBD566E9788, 0xA5A1610E72FD18B5, 0x57BD43B5E52B7FE6]),
]


def _mulhilo(a: np.ndarray, b: np.uint64) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) 64-bit words of the 128-bit product a·b, from 32-bit halves."""
    a_lo, a_hi = a & _M32, a >> _S32
    b_lo, b_hi = b & _M32, b >> _S32
    ll, lh, hl, hh = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (ll >> _S32) + (lh & _M32) + (hl & _M32)  # < 3·2**32: no overflow
    return a * b, hh + (lh >> _S32) + (hl >> _S32) + (mid >> _S32)


def philox4x64_10(ctr: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Philox4x64-10 of counters ``ctr`` (..., 4) under keys ``key`` (..., 2), uint64 arrays."""
    ctr, key = np.asarray(ctr), np.asarray(key)
    if ctr.dtype != np.uint64 or key.dtype != np.uint64:
        raise TypeError("counters and keys must be uint64 arrays")
    with np.errstate(over="ignore"):  # wrap-around is the arithmetic mod 2**64 we want
        return _rounds([ctr[..., i] for i in range(4)], [key[..., i] for i in range(2)])


def _rounds(c: list, k: list) -> np.ndarray:
    for rnd in range(10):
        if rnd:
            k = [k[0] + _W[0], k[1] + _W[1]]
        lo0, hi0 = _mulhilo(c[0], _M[0])
        lo1, hi1 = _mulhilo(c[2], _M[1])
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0]
    return np.stack(c, axis=-1)


def words(seed: int, rows: range, groups: range) -> np.ndarray:
    """Philox words of the counters (i, g, 0, 0), i in rows, g in groups: (rows, groups, 4)."""
    i, g = np.meshgrid(np.arange(rows.start, rows.stop, dtype=np.uint64),
                       np.arange(groups.start, groups.stop, dtype=np.uint64), indexing="ij")
    zero = np.zeros_like(i)
    ctr = np.stack([i, g, zero, zero], axis=-1)
    key = np.broadcast_to(np.array([seed % 2**64, seed >> 64], dtype=np.uint64), ctr.shape[:-1] + (2,))
    return philox4x64_10(ctr, key)


def exact_normal_pairs(a: int, b: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    """(r cos θ, r sin θ) at 120 bits for the radius word a and the angle word b."""
    with mpmath.workprec(120):
        u = mpmath.mpf((a >> 11) + 1) / 2**53
        r = mpmath.sqrt(-2 * mpmath.log(u))
        theta = 2 * mpmath.pi * mpmath.mpf(b >> 11) / 2**53
        return r * mpmath.cos(theta), r * mpmath.sin(theta)


def ulps(got: float, exact: mpmath.mpf) -> float:
    """|got − exact| in units of the float64 spacing at |exact|.

    Below 2**-100, ``exact`` is the 120-bit image of an exact zero (cos θ at θ = π/2, 3π/2: the
    angles 2π·k·2**-53 hit them exactly), so ``got`` must then be 0 itself.
    """
    if abs(exact) < mpmath.mpf(2) ** -100:
        return 0.0 if got == 0 else math.inf
    with mpmath.workprec(120):
        return float(abs(mpmath.mpf(float(got)) - exact) / mpmath.mpf(float(np.spacing(abs(float(exact))))))
