"""The Gaussian matrix behind V: Philox4x64-10 counters and a Box–Muller transform.

The first layer of ``RandomFeatures(activation, d, p, seed)`` is ``V = Z[:p, :d] / √d``, where Z is
one infinite matrix of standard normals per seed, each entry a pure function of (seed, i, j):

1. **Integers.** Column group ``g = j // 4`` of row ``i`` is the Philox4x64-10 block cipher
   (Salmon et al., SC'11; the Random123 reference) applied to the counter ``(i, g, 0, 0)`` under
   the key ``(seed mod 2**64, seed // 2**64)``: four 64-bit words ``w0..w3`` per (i, g).
2. **Uniforms.** Each word's top 53 bits ``k = w >> 11`` give, exactly in float64,
   ``u = (k + 1)·2**-53 ∈ (0, 1]`` for a radius word and ``t = k·2**-53 ∈ [0, 1)`` for an angle
   word.
3. **Normals.** Box–Muller on the pairs (w0, w1) and (w2, w3): with ``r = √(−2 ln u)`` and
   ``θ = 2π t``, ``Z[i, 4g] = r cos θ``, ``Z[i, 4g+1] = r sin θ`` (and columns 4g+2, 4g+3 from the
   second pair). ``−ln u`` is :func:`neg_log_unit` and (sin, cos) of the in-octant angle
   :func:`sincos_octant`: the package's own fixed sequences of correctly rounded operations
   (fdlibm's polynomials), not a libm. The word's top 3 bits pick the octant, the next 50 give
   φ ∈ [0, π/4] (reflected in odd octants), then signs and swaps place (cos θ, sin θ).
4. **V.** ``V[i, j] = Z[i, j] / √d`` in float64 (IEEE division by the correctly rounded √d); a
   float32 V is that float64 number rounded once to float32.

**Guarantee: V to the bit.** Every step is integer arithmetic or one of +, −, ×, ÷, √ on
float64, each correctly rounded by IEEE 754, in a fixed order, never fused into an FMA. So V
(float64 and float32) is the same bits on every IEEE-754 machine: whatever the CPU's SIMD level
(numpy's ``log``/``sin`` kernels are *not* used; ``tests/test_philox.py`` pins SHA-256 hashes of
windows of V and re-runs them with each of numpy's SIMD levels disabled), on the C kernel built
by the host compiler with ``-ffp-contract=off`` (checked equal to the bit in the tests), and on
CUDA, where the kernel uses ``__dadd_rn``-style intrinsics that NVRTC never contracts (not yet
run on a device in this release's tests: GPU runs are unmeasured here). It does not depend on
the block size, the chunk size, the thread count or the dtype (beyond that final rounding), and
models are nested in p *and* d: every (p, d) takes its V from the same Z, as
``Z[:p, :d] / √d``.

**Not guaranteed to the bit:** anything computed *from* V with libm functions or BLAS. The
features φ(VX) use numpy's ``exp``/``tanh``/... (SIMD-dependent, within an ulp or two) and BLAS
products whose summation order depends on the kernel, so Φ, Gram matrices and reconstruction
results agree across machines to rounding (relative ~1e-16 times their conditioning), not bit
for bit.

:data:`V_DEFINITION` names this definition; stored results that depend on V should record it.
Version 2 replaced version 1's libm ``log``/``sin`` (1 ulp apart between glibc and numpy's
AVX-512 kernels on ~0.3 % of inputs) by these functions: every V changed.
"""

from __future__ import annotations

import math
import operator
import threading
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InvalidTypeError, RFTheoryError, ShapeError

__all__ = [
    "V_DEFINITION",
    "GROUP",
    "MAX_ULPS",
    "philox_key",
    "philox_words",
    "box_muller",
    "neg_log_unit",
    "sincos_octant",
    "standard_normal",
    "kernel_source",
    "kernel_path",
    "kernel_constants",
    "KERNEL_FILE",
]

#: Name and version of the definition of V (bump the version whenever any V changes).
V_DEFINITION = "philox4x64-10+box-muller/2"
#: Columns of Z per Philox counter.
GROUP = 4
#: Largest distance, in float64 ulps, between two conforming evaluations of V (numpy at any
#: SIMD level, the host-compiled kernel, CUDA): 0, V is defined to the bit (version 1's libm
#: ``log``/``sin`` allowed 8). The values themselves are within 2 ulps of the exact transform;
#: see Notes of :func:`box_muller`.
MAX_ULPS = 0

_M64 = (1 << 64) - 1
_M256 = (1 << 256) - 1
_U1, _U2, _U4, _U11, _U20, _U32, _U61 = (np.uint64(k) for k in (1, 2, 4, 11, 20, 32, 61))
_MASK50 = np.uint64((1 << 50) - 1)
_TWO50 = np.uint64(1 << 50)
# neg_log_unit: fdlibm e_log.c's constants (ln2_hi has 21 trailing zero bits) and bit masks.
_LN2_HI = 6.93147180369123816490e-01      # 0x3fe62e42fee00000
_LN2_LO = 1.90821492927058770002e-10      # 0x3dea39ef35793c76
_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
       2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
       1.479819860511658591e-01)
_HIGH20_MASK, _SQRT2_CARRY, _BIT20 = np.uint64(0xFFFFF), np.uint64(0x95F64), np.uint64(0x100000)
_ONE_HIGH, _MANTISSA = np.uint64(0x3FF00000), np.uint64((1 << 52) - 1)
_EXP_BIAS = 1023 + 53                     # x = k + 1 = 2**(e + 53)·m
# sincos_octant: fdlibm k_sin.c / k_cos.c's coefficients, π/4 as fl(π/4) + tail, its 26/27-bit
# Dekker halves, and the high-word thresholds of __kernel_cos.
_S = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
      2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_C = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
      -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)
_PIO4_HI = 0.7853981633974483             # fl(π/4) = 0x3fe921fb54442d18
_PIO4_LO = 3.061616997868383e-17          # fl(π/4 − fl(π/4))
_PIO4_H26 = 0.7853981554508209            # fl(π/4) with its low 27 bits cleared
_PIO4_L27 = 7.946627356147928e-09         # fl(π/4) − _PIO4_H26 (exact, 27 bits)
_HIGH25, _LOW25 = np.uint64(_M64 ^ ((1 << 25) - 1)), np.uint64((1 << 25) - 1)
_QUARTER_HIGH = np.uint64(0x00200000)
_COS_SMALL, _COS_LARGE = np.uint64(0x3FD33333), np.uint64(0x3FE90000)
#: Words per Philox run × groups per batch: a batch's temporaries (~10 arrays) stay in L2.
_BATCH_WORDS = 2**14
_local = threading.local()


def philox_key(seed: int) -> np.ndarray:
    """The Philox key of a seed: ``(seed mod 2**64, seed // 2**64)`` as uint64[2].

    Parameters
    ----------
    seed : int
        A non-negative seed below 2**128.

    Returns
    -------
    numpy.ndarray of uint64
        The two key words.

    Examples
    --------
    >>> philox_key(5).tolist()
    [5, 0]
    >>> philox_key(2**64 + 3).tolist()
    [3, 1]
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InvalidTypeError(f"seed must be an integer in [0, 2**128), got {seed!r}")
    if not 0 <= seed < 2**128:
        raise RFTheoryError(f"seed must be an integer in [0, 2**128), got {seed!r}")
    seed = int(seed)
    return np.array([seed & _M64, seed >> 64], dtype=np.uint64)


def _window(spec: Any, name: str) -> tuple[int, int]:
    """(start, stop) of a window given as a count, a range or a slice with step 1."""
    if isinstance(spec, (range, slice)):
        if spec.step not in (None, 1):
            raise RFTheoryError(f"{name} must have step 1, got {spec!r}")
        start, stop = spec.start or 0, spec.stop
    else:
        start, stop = 0, spec
    try:
        start, stop = operator.index(start), operator.index(stop)
    except TypeError:
        raise InvalidTypeError(f"{name} must be a count, a range or a slice of integers, "
                               f"got {spec!r}") from None
    if not 0 <= start <= stop < 2**62:
        raise RFTheoryError(f"{name} must satisfy 0 <= start <= stop < 2**62, got {spec!r}")
    return start, stop


def _bit_generator(key: np.ndarray) -> np.random.Philox:
    """This thread's numpy Philox, built once (building one draws OS entropy: ~15 µs); every run
    sets its key and counter."""
    bg = getattr(_local, "bg", None)
    if bg is None:
        bg = _local.bg = np.random.Philox(key=key)
    return bg


def _run(bg: np.random.Philox, key: np.ndarray, first: int, n: int) -> np.ndarray:
    """Philox outputs for the n consecutive 256-bit counters first, first + 1, ... (word 0
    least significant), as uint64 (n, 4).

    numpy's Philox increments its counter *before* each block, so its state is set to
    ``first − 1`` (mod 2**256). V's runs are (row0 + r, g, 0, 0) with rows < 2**62, so they never
    carry into word 1.
    """
    start = (first - 1) & _M256
    bg.state = {
        "bit_generator": "Philox",
        "state": {"counter": np.array([(start >> s) & _M64 for s in (0, 64, 128, 192)],
                                      dtype=np.uint64),
                  "key": key},
        "buffer": np.zeros(4, dtype=np.uint64), "buffer_pos": 4, "has_uint32": 0, "uinteger": 0,
    }
    return bg.random_raw(4 * n).reshape(n, 4)


def philox_words(seed: int, rows: Any, groups: Any) -> np.ndarray:
    """Philox4x64-10 of the counters (i, g, 0, 0) under the key of ``seed``.

    Parameters
    ----------
    seed : int
        In [0, 2**128).
    rows, groups : int, range or slice
        Rows i and column groups g (a count n means 0..n-1).

    Returns
    -------
    ndarray of uint64, shape (len(rows), len(groups), 4)

    Examples
    --------
    Random123's known answer for the zero key and counter (``kat_vectors``, philox4x64_10):

    >>> [hex(w) for w in philox_words(0, 1, 1)[0, 0]]
    ['0x16554d9eca36314c', '0xdb20fe9d672d0fdc', '0xd7e772cee186176b', '0x7e68b68aec7ba23b']
    """
    key = philox_key(seed)
    r0, r1 = _window(rows, "rows")
    g0, g1 = _window(groups, "groups")
    out = np.empty((r1 - r0, g1 - g0, 4), dtype=np.uint64)
    bg = _bit_generator(key)
    for g in range(g0, g1):
        if r1 > r0:
            out[:, g - g0, :] = _run(bg, key, r0 | (g << 64), r1 - r0)
    return out


def box_muller(words: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Standard normals from Philox words: (w0, w1) → Z columns 0, 1 and (w2, w3) → 2, 3.

    Parameters
    ----------
    words : ndarray of uint64, shape (..., 4)
        Philox outputs (:func:`philox_words`).
    out : ndarray of float64, shape (..., 4), optional
        Where to write the normals (default: a new array).

    Returns
    -------
    ndarray of float64, shape (..., 4)
        The standard normals.

    Notes
    -----
    Radius word a: ``u = ((a >> 11) + 1)·2**-53`` (exact), ``r = √(2·(−ln u))`` with −ln u from
    :func:`neg_log_unit`. Angle word b: octant ``o = b >> 61``; in-octant fraction
    ``m = (b >> 11) mod 2**50``, reflected to ``2**50 − m`` in odd octants, so
    ``φ = (π/4)·m·2**-50 ∈ [0, π/4]``; ``(s, c) = (sin φ, cos φ)`` from :func:`sincos_octant`;
    then (cos θ, sin θ) is (c, s) up to a swap (o ∈ {1, 2, 5, 6}) and signs (cos < 0 for o ∈
    2..5, sin < 0 for o ∈ 4..7), with θ = 2π(b >> 11)·2**-53. No libm function is called: the
    result is the same bits on every IEEE-754 machine (module docstring).

    *Tails.* u ≥ 2**-53, so ``|z| ≤ r_max = √(106 ln 2) = 8.5716…``: a true N(0, 1) exceeds 8.57
    with probability 1.0e-17, about 1e-7 expected exceedances in the 9.4·10⁹ entries of a
    CIFAR-scale V, so the truncation is invisible to every statistic here. The float32 cast
    keeps the whole range (it only rounds to 24 bits, relative 6e-8); in particular it does *not*
    inherit the ±5.8σ cut of transforms fed 24-bit float32 uniforms. u = 1 (probability 2**-53)
    gives z = 0. The radius and the angle are discrete (2**53 values each), but exactly
    distributed at their grid points: P(r > r(k)) = P(u ≤ (k+1)·2**-53) is the Rayleigh tail
    there, so the distribution functions of r and θ are exact to within 2**-53 everywhere (the
    top radii 8.57, 8.49, 8.44, … each have probability 2**-53).

    *Accuracy* (float64, against the exact transform of the same integers): u and the octant
    logic are exact; −ln u is within 0.80 ulp and sin φ, cos φ within 0.83 ulp (measured, see
    :func:`neg_log_unit` and :func:`sincos_octant`); √, the products and the division by √d are
    IEEE. Measured against a 120-bit mpmath evaluation of the same integers
    (``tests/test_philox.py`` keeps the check): at most 2.25 ulps over 4·10⁵ normals (mean 0.43).

    Examples
    --------
    >>> w = philox_words(0, 1, 1)
    >>> box_muller(w).round(6).tolist()
    [[[1.364342, -1.736887, -0.583238, 0.022786]]]
    """
    words = np.asarray(words)
    if words.dtype != np.uint64:
        raise InvalidTypeError(f"words must be uint64 of shape (..., 4), got {words.dtype} {words.shape}")
    if words.shape[-1:] != (4,):
        raise ShapeError(f"words must be uint64 of shape (..., 4), got {words.dtype} {words.shape}")
    if out is None:
        out = np.empty(words.shape, dtype=np.float64)
    a, b = words[..., 0::2], words[..., 1::2]
    # Radius: r = √(2·(−ln u)), u = (k + 1)·2**-53 (no libm: see neg_log_unit).
    r = neg_log_unit(a >> _U11)
    r *= 2.0
    np.sqrt(r, out=r)
    # Angle: octant o, in-octant fraction m reflected in odd octants, φ = (π/4)·m·2**-50.
    o = b >> _U61
    m = (b >> _U11) & _MASK50
    m = np.where((o & _U1).astype(bool), _TWO50 - m, m)
    s, c = sincos_octant(m)
    swap = ((o + _U1) & _U2).astype(bool)
    x = np.where(swap, s, c)
    y = np.where(swap, c, s)
    # Signs by flipping the IEEE sign bit: cos θ < 0 for o ∈ 2..5, sin θ < 0 for o ∈ 4..7.
    x.view(np.uint64)[...] ^= ((o + _U2) & _U4) << _U61
    y.view(np.uint64)[...] ^= (o & _U4) << _U61
    np.multiply(r, x, out=out[..., 0::2])
    np.multiply(r, y, out=out[..., 1::2])
    return out


def neg_log_unit(k: np.ndarray) -> np.ndarray:
    """−ln u for ``u = (k + 1)·2**-53``, from correctly rounded operations only.

    Parameters
    ----------
    k : ndarray of uint64
        Integers in [0, 2**53) (a radius word's top 53 bits).

    Returns
    -------
    ndarray of float64
        −ln u ∈ [0, 53 ln 2], +0 exactly at u = 1.

    Notes
    -----
    The algorithm and coefficients are fdlibm's ``e_log.c`` (Sun Microsystems, 1993), in its
    ``hfsq`` form for every argument, written out as numpy element-wise operations in a fixed
    order: ``x = k + 1`` is exact in float64; its exponent and mantissa are read from the bits;
    the mantissa is halved (exactly) when it is ≥ √2 (fdlibm's 0x95f64 carry test on its top 20
    bits), so ``m ∈ [√½, √2)`` and ``u = 2**e·m``; with ``f = m − 1`` (exact), ``s = f/(2 + f)``,
    ``z = s²``, ``w = z²``, ``R = z(Lg1 + w(Lg3 + w(Lg5 + w·Lg7))) + w(Lg2 + w(Lg4 + w·Lg6))``,
    ``h = f²/2``::

        −ln u = ((h − (s·(h + R) + e·ln2_lo)) − f) − e·ln2_hi

    where ``ln2_hi`` has 21 trailing zero bits, so ``e·ln2_hi`` is exact. Only +, −, ×, ÷ and
    integer bit operations occur, each correctly rounded by IEEE 754 and never fused (numpy's
    element-wise ufuncs do not contract; the C kernel uses ``__dadd_rn``-style intrinsics), so
    the result is the same bits on every IEEE-754 machine and SIMD level.

    *Accuracy*: measured against 120-bit mpmath over 2·10⁵ random k (uniform and
    log-uniform) and the end points: at most 0.80 ulp (fdlibm's bound is < 1 ulp).

    Examples
    --------
    >>> neg_log_unit(np.array([2**53 - 1, 2**52 - 1], dtype=np.uint64)).tolist()
    [0.0, 0.6931471805599453]
    """
    x = (k + _U1).astype(np.float64)
    bits = x.view(np.uint64)
    hm = bits >> _U32
    e = hm >> _U20
    hm &= _HIGH20_MASK
    hm += _SQRT2_CARRY
    hm &= _BIT20                           # 2**20 where the mantissa is ≥ √2: halve it
    e += hm >> _U20
    hm ^= _ONE_HIGH
    hm <<= _U32
    bits &= _MANTISSA
    bits |= hm                             # x is now m ∈ [√½, √2), u = 2**e · m
    dk = e.astype(np.float64)
    dk -= _EXP_BIAS
    f = x
    f -= 1.0
    s = f + 2.0
    np.divide(f, s, out=s)
    z = s * s
    w = z * z
    t1 = w * _LG[5]
    t1 += _LG[3]
    t1 *= w
    t1 += _LG[1]
    t1 *= w
    R = w * _LG[6]
    R += _LG[4]
    R *= w
    R += _LG[2]
    R *= w
    R += _LG[0]
    R *= z
    R += t1
    h = f * f
    h *= 0.5
    R += h
    R *= s                                 # s·(h + R)
    np.multiply(dk, _LN2_LO, out=w)
    R += w
    np.subtract(h, R, out=h)
    h -= f
    dk *= _LN2_HI
    h -= dk
    return h


def sincos_octant(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin φ, cos φ) for ``φ = (π/4)·m·2**-50 ∈ [0, π/4]``, from correctly rounded operations only.

    Parameters
    ----------
    m : ndarray of uint64
        Integers in [0, 2**50].

    Returns
    -------
    (ndarray of float64, ndarray of float64)
        sin φ and cos φ.

    Notes
    -----
    φ is formed as a double-double ``p + t`` without a fused multiply-add: ``x = m·2**-50`` is
    exact and split by integer masks into ``x_h`` (26 bits) + ``x_l`` (25 bits); fl(π/4) is
    split into 26 + 27 bits, so Dekker's product gives ``x·fl(π/4) = p + e`` exactly, and
    ``t = e + x·(π/4 − fl(π/4))``. Then fdlibm's ``__kernel_sin(p, t, 1)`` and
    ``__kernel_cos(p, t)`` (Sun Microsystems, 1993: fixed degree-13 and degree-14 polynomials by
    Horner's rule, with cos's ``qx`` splitting of 1 − z/2 above |p| = 0.3) give the values. Only
    +, −, × and integer bit operations occur, each correctly rounded and never fused, so the
    result is the same bits on every IEEE-754 machine.

    *Accuracy*: measured against 120-bit mpmath over 2·10⁵ random m and the end points: sin at
    most 0.70 ulp, cos at most 0.83 ulp (fdlibm's bound is < 1 ulp each).

    Examples
    --------
    >>> s, c = sincos_octant(np.array([0, 2**50], dtype=np.uint64))
    >>> s.tolist(), c.tolist()
    ([0.0, 0.7071067811865476], [1.0, 0.7071067811865476])
    """
    xh = (m & _HIGH25).astype(np.float64)
    xh *= 2.0**-50
    xl = (m & _LOW25).astype(np.float64)
    xl *= 2.0**-50
    x = xh + xl                            # exact: m·2**-50
    p = x * _PIO4_HI
    t = xh * _PIO4_H26                     # Dekker: e = x·fl(π/4) − p, exactly
    t -= p
    xh *= _PIO4_L27
    t += xh
    np.multiply(xl, _PIO4_H26, out=xh)
    t += xh
    xl *= _PIO4_L27
    t += xl
    x *= _PIO4_LO
    t += x                                 # φ = p + t
    z = p * p
    v = z * p
    r = z * _S[5]
    r += _S[4]
    r *= z
    r += _S[3]
    r *= z
    r += _S[2]
    r *= z
    r += _S[1]
    r *= v                                 # v·r
    sn = t * 0.5
    sn -= r
    sn *= z
    sn -= t
    v *= _S[0]
    sn -= v
    np.subtract(p, sn, out=sn)             # p − ((z(t/2 − v·r) − t) − v·S1)
    rc = z * _C[5]
    rc += _C[4]
    rc *= z
    rc += _C[3]
    rc *= z
    rc += _C[2]
    rc *= z
    rc += _C[1]
    rc *= z
    rc += _C[0]
    rc *= z
    rc *= z                                # z·r
    t *= p
    rc -= t                                # z·r − p·t
    hp = p.view(np.uint64) >> _U32
    qx = ((hp - _QUARTER_HIGH) << _U32).view(np.float64)   # p/4 truncated to its high word
    qx[hp < _COS_SMALL] = 0.0
    qx[hp > _COS_LARGE] = 0.28125
    z *= 0.5
    z -= qx
    z -= rc                                # (z/2 − qx) − (z·r − p·t)
    cs = np.subtract(1.0, qx, out=qx)
    cs -= z
    return sn, cs


def _fill(key: np.ndarray, row0: int, col0: int, out: np.ndarray, sqrt_d: float) -> None:
    """Write Z[row0:, col0:] / sqrt_d into the 2-D float32/float64 array ``out``, in batches.

    A batch is ``run`` rows × ``per`` column groups: one numpy Philox call per (run, group), the
    words laid out row-major (rows, groups, 4) like Z itself, then one :func:`box_muller` over the
    batch and one division by √d written straight into ``out`` (measured: this layout beats a
    group-major one, whose transposed write costs more than the strided copy of the words).
    """
    rows, cols = out.shape
    if rows == 0 or cols == 0:
        return
    g0, g1 = col0 // GROUP, -(-(col0 + cols) // GROUP)
    run = max(1, min(rows, _BATCH_WORDS // GROUP))  # rows per Philox run
    per = max(1, _BATCH_WORDS // (GROUP * run))  # groups per batch
    bg = _bit_generator(key)
    for r0 in range(0, rows, run):
        nr = min(run, rows - r0)
        for ga in range(g0, g1, per):
            gb = min(ga + per, g1)
            words = np.empty((nr, gb - ga, GROUP), dtype=np.uint64)
            for g in range(ga, gb):
                words[:, g - ga, :] = _run(bg, key, (row0 + r0) | (g << 64), nr)
            z = box_muller(words).reshape(nr, GROUP * (gb - ga))
            lo, hi = max(col0, GROUP * ga), min(col0 + cols, GROUP * gb)
            np.divide(z[:, lo - GROUP * ga:hi - GROUP * ga], sqrt_d,
                      out=out[r0:r0 + nr, lo - col0:hi - col0], casting="same_kind")


def standard_normal(seed: int, rows: Any, cols: Any, *, scale_dim: int | None = None,
                    out: np.ndarray | None = None) -> np.ndarray:
    """The window ``Z[rows, cols]`` of the seed's Gaussian matrix (or of V = Z/√d), on the host.

    Parameters
    ----------
    seed : int
        In [0, 2**128).
    rows, cols : int, range or slice
        The window (a count n means 0..n-1); any window of the same matrix gives the same entries.
    scale_dim : int, optional
        When given, return ``Z / √scale_dim`` (V of a model with d = scale_dim).
    out : ndarray of float64 or float32, optional
        Written in place (float32 receives the float64 value rounded once).

    Returns
    -------
    ndarray, shape (len(rows), len(cols))

    Notes
    -----
    Uses numpy's C Philox over runs of up to 4096 consecutive rows per column group (one call
    per run), then :func:`box_muller` in cache-sized batches. See :func:`box_muller` for tails
    and accuracy. Thread-safe (each thread keeps its own bit generator).

    Examples
    --------
    >>> Z = standard_normal(7, 6, 10)
    >>> bool((standard_normal(7, range(2, 5), range(3, 9)) == Z[2:5, 3:9]).all())
    True
    >>> V = standard_normal(7, 6, 10, scale_dim=10)
    >>> bool((V == Z / 10**0.5).all())
    True
    """
    key = philox_key(seed)
    r0, r1 = _window(rows, "rows")
    c0, c1 = _window(cols, "cols")
    shape = (r1 - r0, c1 - c0)
    if out is None:
        out = np.empty(shape)
    elif not isinstance(out, np.ndarray) or out.dtype not in (np.float32, np.float64):
        raise InvalidTypeError(f"out must be a float32/float64 numpy array of shape {shape}, "
                               f"got {getattr(out, 'dtype', type(out).__name__)}")
    elif out.shape != shape:
        raise ShapeError(f"out must be float32/float64 of shape {shape}, got {out.dtype} {out.shape}")
    if scale_dim is not None and (isinstance(scale_dim, bool)
                                  or not isinstance(scale_dim, (int, np.integer))):
        raise InvalidTypeError(f"scale_dim must be a positive integer, got {scale_dim!r}")
    if scale_dim is not None and scale_dim < 1:
        raise RFTheoryError(f"scale_dim must be a positive integer, got {scale_dim!r}")
    _fill(key, r0, c0, out, 1.0 if scale_dim is None else math.sqrt(scale_dim))
    return out


# -- the CUDA kernel: rftheory/philox.cu (also compiled by the host C compiler in the tests) -----

#: Name of the kernel's source file, shipped as package data next to this module.
KERNEL_FILE = "philox.cu"


def kernel_path() -> Path:
    """Where the generator's C/CUDA source ships (package data: ``rftheory/philox.cu``).

    The file holds the kernel without its constants; :func:`kernel_source` prepends them (and the
    target's ``#define``), and the host-compiler test compiles this very file with them included.

    Returns
    -------
    pathlib.Path
        The installed ``philox.cu``.

    Examples
    --------
    >>> kernel_path().name
    'philox.cu'
    """
    return Path(str(resources.files("rftheory").joinpath(KERNEL_FILE)))


def kernel_source(target: str = "cuda") -> str:
    """C source of the generator: ``"cuda"`` (CuPy RawModule) or ``"host"`` (a C compiler).

    Both define ``rf_fill_f32``/``rf_fill_f64(k0, k1, row0, rows, d, sqrt_d, out)`` (V rows
    ``row0 .. row0+rows-1``, row-major with row stride d) and ``rf_words(k0, k1, row0, rows,
    groups, out)`` (the raw Philox words). On the host, ``unsigned __int128`` replaces CUDA's
    ``__umul64hi``; compile without fast-math or FP contraction (``-ffp-contract=off``) so the
    floating-point operations are those of :func:`box_muller`.

    Parameters
    ----------
    target : {"cuda", "host"}
        Which compiler the source is for.

    Returns
    -------
    str
        The C source.

    Examples
    --------
    >>> "rf_fill_f32" in kernel_source("host")
    True
    """
    if target not in ("cuda", "host"):
        raise RFTheoryError(f"target must be 'cuda' or 'host', got {target!r}")
    head = "#define RF_CUDA 1\n" if target == "cuda" else ""
    return head + kernel_constants() + kernel_path().read_text(encoding="utf-8")


def kernel_constants() -> str:
    """``#define`` lines of the transform's constants for :func:`kernel_path`'s source.

    Written from the module's own floats (``repr`` round-trips exactly), so the kernel and
    :func:`box_muller` use the same bits.

    Returns
    -------
    str
        One ``#define RF_<NAME> (<value>)`` line per constant.

    Examples
    --------
    >>> kernel_constants().splitlines()[0]
    '#define RF_LN2_HI (0.6931471803691238)'
    """
    consts = {"RF_LN2_HI": _LN2_HI, "RF_LN2_LO": _LN2_LO, "RF_EXP_BIAS": float(_EXP_BIAS),
              "RF_PIO4_HI": _PIO4_HI, "RF_PIO4_LO": _PIO4_LO, "RF_PIO4_H26": _PIO4_H26,
              "RF_PIO4_L27": _PIO4_L27}
    consts.update({f"RF_LG{i + 1}": c for i, c in enumerate(_LG)})
    consts.update({f"RF_S{i + 1}": c for i, c in enumerate(_S)})
    consts.update({f"RF_C{i + 1}": c for i, c in enumerate(_C)})
    return "".join(f"#define {name} ({value!r})\n" for name, value in consts.items())


#: Names that live in :mod:`rftheory.philox_cupy` (the CuPy launchers), still importable from here.
_MOVED = {"NVRTC_OPTIONS": "philox_cupy", "cupy_fill": "philox_cupy", "cupy_words": "philox_cupy"}


def __getattr__(name: str) -> Any:
    """The CuPy launchers' names, where they were before :mod:`rftheory.philox_cupy` held them
    (lazily: :mod:`rftheory.philox_cupy` imports this module)."""
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(f"rftheory.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
