"""The definition of V: Philox4x64-10 integers, the Box–Muller transform, windows, the kernel."""

from __future__ import annotations

import ctypes
import math
import os
import shutil
import subprocess

import mpmath
import numpy as np
import pytest
import scipy.stats

from rftheory import philox, philox_cupy
from rftheory.errors import RFTheoryError
from tests import philox_reference as ref
from tests.conftest import cupy_or_skip

R_MAX = math.sqrt(106 * math.log(2))  # √(−2 ln 2**-53): the largest |z| the transform can give


# -- integers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("ctr, key, expected", ref.KAT_PHILOX4X64_10)
def test_known_answer_vectors(ctr, key, expected):
    # The pure-numpy reference and numpy's C Philox (through the module's counter-run helper,
    # which sets the state to counter − 1 because numpy increments before generating).
    assert ref.philox4x64_10(np.array(ctr, dtype=np.uint64),
                             np.array(key, dtype=np.uint64)).tolist() == expected
    bg = np.random.Philox(key=np.array(key, dtype=np.uint64))
    first = sum(c << (64 * i) for i, c in enumerate(ctr))
    run = philox._run(bg, np.array(key, dtype=np.uint64), first, 1)
    assert run[0].tolist() == expected


def test_known_answer_through_the_public_api():
    # Counter (0, 0, 0, 0) under key (0, 0) is row 0, group 0 of seed 0.
    assert philox.philox_words(0, 1, 1)[0, 0].tolist() == ref.KAT_PHILOX4X64_10[0][2]


@pytest.mark.parametrize("seed", [0, 7, 2**63 + 11, 2**64 + 5, 2**128 - 1])
def test_words_match_the_reference_on_windows(seed):
    # Row 0 and group > 0 make numpy's "counter − 1" borrow from word 1; seeds ≥ 2**64 use key
    # word 1; rows near 2**40 check that nothing is truncated to 32 bits.
    for rows, groups in [(range(0, 5), range(0, 3)), (range(3, 40), range(7, 9)),
                         (range(2**40 - 2, 2**40 + 3), range(2**33, 2**33 + 2))]:
        got = philox.philox_words(seed, rows, groups)
        np.testing.assert_array_equal(got, ref.words(seed, rows, groups))


def test_bad_seeds_and_windows():
    for seed in (-1, 2**128, 1.5, True):
        with pytest.raises(RFTheoryError, match="seed"):
            philox.philox_key(seed)
    with pytest.raises(RFTheoryError, match="step"):
        philox.standard_normal(0, range(0, 10, 2), 3)
    with pytest.raises(RFTheoryError, match="rows"):
        philox.standard_normal(0, range(5, 2), 3)
    with pytest.raises(RFTheoryError, match="out"):
        philox.standard_normal(0, 2, 3, out=np.empty((3, 2)))
    with pytest.raises(RFTheoryError, match="words"):
        philox.box_muller(np.zeros((2, 3), dtype=np.uint64))


# -- the transform ----------------------------------------------------------------------------
def _edge_words() -> np.ndarray:
    """Radius words at both ends of u, angle words at every octant's ends and middle."""
    a_values = [0, 1 << 11, (2**53 - 1) << 11, 2**64 - 1, 12345 << 11]
    b_values = []
    for o in range(8):
        for m in (0, 1, 2**49, 2**50 - 1):
            b_values.append(((o << 50) | m) << 11)
    pairs = [(a, b) for a in a_values for b in b_values]
    return np.array([[a, b, b, a] for a, b in pairs], dtype=np.uint64)


def test_box_muller_is_accurate_against_mpmath():
    # 1500 random counters (6000 normals) plus the edge words: every value within 3 ulps of the
    # 120-bit transform of the same integers: −ln u ≤ 0.8 ulp (halved by √), √ 0.5, sin/cos ≤ 0.83,
    # the product 0.5 compose to ≲ 2.3 + second order (measured max 2.25 over 4·10⁵ normals).
    w = np.concatenate([philox.philox_words(3, 1500, 1).reshape(-1, 4), _edge_words()])
    z = philox.box_muller(w)
    worst = 0.0
    for row, zr in zip(w.tolist(), z):
        for p in (0, 1):
            x, y = ref.exact_normal_pairs(row[2 * p], row[2 * p + 1])
            worst = max(worst, ref.ulps(zr[2 * p], x), ref.ulps(zr[2 * p + 1], y))
    assert worst <= 3.0, worst


def test_tails_and_special_words():
    w = _edge_words()
    z = philox.box_muller(w)
    assert np.abs(z).max() <= R_MAX
    # a = 0 gives the largest radius, b = 0 the angle 0: z = (r_max, 0) exactly up to the radius'
    # rounding; a = all ones gives u = 1, r = 0.
    z0 = philox.box_muller(np.array([[0, 0, 2**64 - 1, 0]], dtype=np.uint64))[0]
    assert z0[0] == pytest.approx(R_MAX, rel=4e-16) and z0[1] == 0.0
    assert z0[2] == 0.0 and z0[3] == 0.0
    # A float32 cast keeps the whole range (no ±5.8σ cut of 24-bit uniforms).
    assert np.float32(z0[0]) > 8.57


def test_distribution_moments_and_ks():
    Z = philox.standard_normal(11, 512, 400)  # 204 800 normals
    x = Z.ravel()
    n = x.size
    # Sampling standard deviations: mean 1/√n = 0.0022, variance √(2/n) = 0.0031, third moment
    # √(15/n) = 0.0086, fourth moment √(96/n) = 0.022; bounds are 5 of them.
    assert abs(x.mean()) < 5 / math.sqrt(n)
    assert abs(x.var() - 1) < 5 * math.sqrt(2 / n)
    assert abs(np.mean(x**3)) < 5 * math.sqrt(15 / n)
    assert abs(np.mean(x**4) - 3) < 5 * math.sqrt(96 / n)
    assert scipy.stats.kstest(x, "norm").pvalue > 1e-3
    # Box–Muller partners (columns 4g, 4g+1 share the radius) are independent: their squares are
    # uncorrelated (std of the sample correlation 1/√(n/2) = 0.003).
    xs, ys = Z[:, 0::2].ravel() ** 2, Z[:, 1::2].ravel() ** 2
    assert abs(np.corrcoef(xs, ys)[0, 1]) < 5 / math.sqrt(n / 2)
    # Neighbouring rows and groups are uncorrelated.
    assert abs(np.corrcoef(Z[:-1].ravel(), Z[1:].ravel())[0, 1]) < 5 / math.sqrt(n)
    assert abs(np.corrcoef(Z[:, :-4].ravel(), Z[:, 4:].ravel())[0, 1]) < 5 / math.sqrt(n)


# -- V to the bit: the package's own log and sin/cos ------------------------------------------
def test_transform_constants_are_the_stated_splits():
    # fl(π/4) split in 26 + 27 bits (Dekker's product is exact only then); its tail; ln2_hi
    # with 21 trailing zero bits (so e·ln2_hi is exact for the |e| ≤ 54 that occur).
    bits = lambda x: int(np.array([x]).view(np.uint64)[0])  # noqa: E731
    assert philox._PIO4_HI == float(mpmath.pi / 4)
    assert bits(philox._PIO4_H26) == bits(philox._PIO4_HI) & ~((1 << 27) - 1)
    assert philox._PIO4_H26 + philox._PIO4_L27 == philox._PIO4_HI
    with mpmath.workprec(200):
        assert philox._PIO4_LO == float(mpmath.pi / 4 - mpmath.mpf(philox._PIO4_HI))
    assert bits(philox._LN2_HI) & ((1 << 21) - 1) == 0
    assert abs(philox._LN2_HI + philox._LN2_LO - math.log(2)) <= 1e-16


def test_octant_angle_is_an_exact_double_double():
    # x·fl(π/4) = p + e exactly (Dekker, no FMA): checked in rationals at random m and the ends.
    from fractions import Fraction

    rng = np.random.default_rng(5)
    m = np.concatenate([rng.integers(0, 2**50 + 1, 300, dtype=np.uint64),
                        np.array([0, 1, 2**25 - 1, 2**25, 2**50 - 1, 2**50], dtype=np.uint64)])
    xh = (m & philox._HIGH25).astype(np.float64) * 2.0**-50
    xl = (m & philox._LOW25).astype(np.float64) * 2.0**-50
    x = xh + xl
    p = x * philox._PIO4_HI
    e = ((xh * philox._PIO4_H26 - p) + xh * philox._PIO4_L27 + xl * philox._PIO4_H26) \
        + xl * philox._PIO4_L27
    for mi, pi, ei in zip(m.tolist(), p.tolist(), e.tolist()):
        assert Fraction(pi) + Fraction(ei) == Fraction(mi, 2**50) * Fraction(philox._PIO4_HI)


def _mp_ulps(got: float, exact) -> float:
    return float(abs(mpmath.mpf(got) - exact) / mpmath.mpf(float(np.spacing(float(abs(exact))))))


def test_neg_log_unit_against_mpmath():
    # Measured max 0.80 ulp over 2·10⁵ arguments (Notes); here 4000 + the ends, bound 1 ulp.
    rng = np.random.default_rng(8)
    k = np.concatenate([rng.integers(0, 2**53, 2000, dtype=np.uint64),
                        np.minimum((2.0 ** rng.uniform(0, 53, 2000)).astype(np.uint64),
                                   np.uint64(2**53 - 1)),
                        np.array([0, 1, 2, 2**52 - 1, 2**52, 2**53 - 2], dtype=np.uint64)])
    got = philox.neg_log_unit(k)
    assert philox.neg_log_unit(np.array([2**53 - 1], dtype=np.uint64))[0] == 0.0  # u = 1
    with mpmath.workprec(120):
        worst = max(_mp_ulps(g, -mpmath.log(mpmath.mpf(int(ki) + 1) / 2**53))
                    for ki, g in zip(k.tolist(), got.tolist()))
    assert worst < 1.0, worst


def test_sincos_octant_against_mpmath():
    # Measured max 0.70 (sin) and 0.83 (cos) ulp over 2·10⁵ angles (Notes); here 4000, bound 1.
    rng = np.random.default_rng(9)
    m = np.concatenate([rng.integers(0, 2**50 + 1, 4000, dtype=np.uint64),
                        np.array([1, 2**49, 2**50 - 1, 2**50], dtype=np.uint64)])
    s, c = philox.sincos_octant(m)
    worst = 0.0
    with mpmath.workprec(120):
        for mi, si, ci in zip(m.tolist(), s.tolist(), c.tolist()):
            phi = mpmath.pi / 4 * mpmath.mpf(mi) / 2**50
            worst = max(worst, _mp_ulps(si, mpmath.sin(phi)), _mp_ulps(ci, mpmath.cos(phi)))
    assert worst < 1.0, worst
    s0, c0 = philox.sincos_octant(np.array([0], dtype=np.uint64))
    assert (s0[0], c0[0]) == (0.0, 1.0)


#: Windows of V whose bytes are pinned: (seed, rows, cols, scale_dim, dtype). Seeds on both key
#: words, rows past 2**32 and 2**40, column windows that start and stop inside a group of four,
#: d not divisible by 4, float64 Z, float64 V and float32 V.
PINNED_WINDOWS = {
    "z64-seed0": (0, range(0, 64), range(0, 37), None, np.float64),
    "v64-rows-past-2^32": (2**64 + 5, range(2**32 - 3, 2**32 + 61), range(5, 42), 37, np.float64),
    "v32-rows-past-2^40": (123456789, range(2**40, 2**40 + 16), range(0, 1001), 1001, np.float32),
    "v32-d13": (7, range(0, 300), range(0, 13), 13, np.float32),
    "v64-big-seed": (2**128 - 1, range(1000, 1100), range(2, 31), 31, np.float64),
}
#: SHA-256 of the little-endian bytes of each window (philox4x64-10+box-muller/2). A change
#: here is a change of V: bump V_DEFINITION and regenerate every stored result.
PINNED_SHA256 = {
    "z64-seed0": "1633f8fb9de5811a23d5db53c4e246f8aedcd2775902348947451c4069f21473",
    "v64-rows-past-2^32": "e44ff574b37323b43bf272aa045bbefe8cd267dbf55f17959be235af457eaa49",
    "v32-rows-past-2^40": "d45e473eb05d1d63104cb4a7f0bff2db3d24c81ec4cdd8eb6f9abedd3bac6957",
    "v32-d13": "0bc003ead96fd107adc178e0da2b773480a8335d9e41fa44543dedc61ae3f147",
    "v64-big-seed": "c13b5f7f2de500df7491b2f912c75c4f8a5e664273a763d6cb62952d92bc8fbe",
}


def _sha(a: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()).hexdigest()


def _window_hashes() -> dict:
    out = {}
    for name, (seed, rows, cols, scale, dtype) in PINNED_WINDOWS.items():
        V = philox.standard_normal(seed, rows, cols, scale_dim=scale,
                                   out=np.empty((len(rows), len(cols)), dtype))
        out[name] = _sha(V)
    return out


def test_pinned_hashes_of_windows_of_v():
    assert philox.V_DEFINITION == "philox4x64-10+box-muller/2"
    assert _window_hashes() == PINNED_SHA256


def _umath():
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath as umath
    return umath


def _simd_levels() -> list[list[str]]:
    """numpy's dispatched SIMD targets found on this CPU, as the lists to disable (each level
    together with every level above it: numpy refuses to keep a level whose base is off)."""
    umath = _umath()
    found = [t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t)]
    return [found[i:] for i in range(len(found))]


@pytest.mark.parametrize("disable", _simd_levels() or [[]], ids=lambda d: "-".join(d) or "none")
def test_v_is_the_same_at_every_simd_level(disable):
    # The generator in a fresh interpreter with numpy's dispatch capped below each level this
    # CPU has: the same hashes (version 1's np.log/np.sin moved V here when X86_V4 was off).
    import json
    import sys

    code = ("import json, sys; sys.path.insert(0, '.'); from tests import test_philox as t; "
            "from tests.test_philox import _umath; u = _umath(); "
            "print(json.dumps([t._window_hashes(), [k for k in u.__cpu_dispatch__ "
            "if u.__cpu_features__.get(k)]]))")
    env = dict(os.environ, NPY_DISABLE_CPU_FEATURES=" ".join(disable))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), timeout=300)
    assert done.returncode == 0, done.stderr
    hashes, active = json.loads(done.stdout.strip().splitlines()[-1])
    assert not set(disable) & set(active)  # the levels really were off in the child
    assert hashes == PINNED_SHA256


# -- windows: V is a pure function of (seed, i, j) --------------------------------------------
def test_windows_are_slices_of_one_matrix():
    full = philox.standard_normal(4, 2100, 23)
    rng = np.random.default_rng(0)
    for _ in range(25):
        r0, c0 = int(rng.integers(0, 2100)), int(rng.integers(0, 23))
        r1, c1 = int(rng.integers(r0, 2101)), int(rng.integers(c0, 24))
        got = philox.standard_normal(4, range(r0, r1), slice(c0, c1))
        np.testing.assert_array_equal(got, full[r0:r1, c0:c1])
    # Batches of the fill (many small runs / one long run) do not change the values.
    tall = philox.standard_normal(4, range(0, 9000), range(5, 7))
    np.testing.assert_array_equal(tall[:2100], full[:, 5:7])


def test_scaled_and_float32_windows_are_the_float64_value_rounded():
    Z = philox.standard_normal(9, 300, 50)
    V = philox.standard_normal(9, 300, 50, scale_dim=50)
    np.testing.assert_array_equal(V, Z / math.sqrt(50))
    V32 = philox.standard_normal(9, 300, 50, scale_dim=50, out=np.empty((300, 50), np.float32))
    np.testing.assert_array_equal(V32, V.astype(np.float32))


def test_different_seeds_differ_and_fill_is_thread_safe():
    from concurrent.futures import ThreadPoolExecutor

    a, b = philox.standard_normal(1, 64, 8), philox.standard_normal(2, 64, 8)
    assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.2  # 512 pairs: std 0.044
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda s: philox.standard_normal(s, 2000, 30), [1, 2, 1, 2]))
    np.testing.assert_array_equal(parts[0], parts[2])
    np.testing.assert_array_equal(parts[1], parts[3])
    np.testing.assert_array_equal(parts[0][:64, :8], a)


# -- the kernel source on the host compiler -----------------------------------------------------
def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def host_kernel(tmp_path_factory):
    cc = _compiler()
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("kernel")
    constants, lib = d / "rf_constants.h", d / "rf_philox.so"
    constants.write_text(philox.kernel_constants())
    # The file that ships (package data), compiled as C with the constants included: the same
    # source NVRTC compiles (kernel_source("cuda") is RF_CUDA + these constants + this file).
    # No fast-math, no contraction: the kernel's float64 operations must be box_muller()'s.
    done = subprocess.run([cc, "-O2", "-std=gnu99", "-ffp-contract=off", "-fPIC", "-shared",
                           "-include", str(constants), "-x", "c", str(philox.kernel_path()),
                           "-o", str(lib), "-lm"], capture_output=True, text=True)
    if done.returncode:
        pytest.fail(f"the kernel source does not compile on the host:\n{done.stderr}")
    so = ctypes.CDLL(str(lib))
    u64, i64 = ctypes.c_ulonglong, ctypes.c_longlong
    arr = lambda dt: np.ctypeslib.ndpointer(dt, flags="C_CONTIGUOUS")  # noqa: E731
    so.rf_words.argtypes = [u64, u64, u64, i64, ctypes.c_int, arr(np.uint64)]
    so.rf_fill_f64.argtypes = [u64, u64, u64, i64, ctypes.c_int, ctypes.c_double, arr(np.float64)]
    so.rf_fill_f32.argtypes = [u64, u64, u64, i64, ctypes.c_int, ctypes.c_double, arr(np.float32)]
    so.rf_philox_many.argtypes = [i64, arr(np.uint64), arr(np.uint64), arr(np.uint64)]
    return so


def test_kernel_source_on_the_host_compiler(host_kernel):
    so = host_kernel
    ctr = np.array([c for c, _, _ in ref.KAT_PHILOX4X64_10], dtype=np.uint64)
    key = np.array([k for _, k, _ in ref.KAT_PHILOX4X64_10], dtype=np.uint64)
    out = np.empty_like(ctr)
    so.rf_philox_many(len(ctr), ctr, key, out)
    assert out.tolist() == [e for _, _, e in ref.KAT_PHILOX4X64_10]

    seed, row0, rows, d = 2**64 + 77, 2**33 + 5, 300, 37
    k0, k1 = (int(w) for w in philox.philox_key(seed))
    groups = -(-d // 4)
    W = np.empty((rows, groups, 4), dtype=np.uint64)
    so.rf_words(k0, k1, row0, rows, groups, W)
    np.testing.assert_array_equal(W, philox.philox_words(seed, range(row0, row0 + rows), groups))

    Z = np.empty((rows, d))
    so.rf_fill_f64(k0, k1, row0, rows, d, 1.0, Z)
    Zn = philox.standard_normal(seed, range(row0, row0 + rows), d)
    # Same correctly rounded operations in the same order, no libm, no contraction: equal bits.
    np.testing.assert_array_equal(Z, Zn)
    assert philox.MAX_ULPS == 0

    V32 = np.empty((rows, d), dtype=np.float32)
    so.rf_fill_f32(k0, k1, row0, rows, d, math.sqrt(d), V32)
    ref32 = philox.standard_normal(seed, range(row0, row0 + rows), d, scale_dim=d,
                                   out=np.empty((rows, d), np.float32))
    np.testing.assert_array_equal(V32, ref32)


class _HostCuPy:
    """A stand-in for the parts of CuPy the launchers use, running the host build of the kernel
    (grid arguments ignored: the host loop covers every index), so the launchers' argument
    order and types are checked against the kernel's signature without a GPU."""

    float32, float64, uint64 = np.float32, np.float64, np.uint64

    def __init__(self, so):
        self._so = so
        self.calls: list[tuple] = []
        host = self

        class RawModule:
            def __init__(self, code, options=()):
                assert "#define RF_CUDA 1" in code and options == philox_cupy.NVRTC_OPTIONS
                assert code.endswith(philox.kernel_path().read_text())  # the shipped file

            def get_function(self, name):
                def launch(grid, block, args):
                    host.calls.append((name, grid, block))
                    getattr(host._so, name)(*args)
                return launch

        class Device:
            id = 0

        self.RawModule = RawModule
        self.cuda = type("cuda", (), {"Device": Device})

    def empty(self, shape, dtype=np.float64):
        return np.empty(shape, dtype=dtype)


def test_cupy_launchers_against_the_host_build(host_kernel, monkeypatch):
    fake = _HostCuPy(host_kernel)
    monkeypatch.setitem(__import__("sys").modules, "cupy", fake)
    monkeypatch.setattr(philox_cupy, "_MODULES", {})
    seed, row0, d = 2**64 + 3, 4096, 13
    out = philox.cupy_fill(seed, row0, np.empty((3, 100, d), dtype=np.float32), scale_dim=d)
    expected = philox.standard_normal(seed, range(row0, row0 + 300), d, scale_dim=d,
                                      out=np.empty((300, d), np.float32))
    np.testing.assert_array_equal(out.reshape(300, d), expected)
    words = philox.cupy_words(seed, row0, 50, 4)
    np.testing.assert_array_equal(words, philox.philox_words(seed, range(row0, row0 + 50), 4))
    (name, grid, block), _ = fake.calls
    assert name == "rf_fill_f32" and grid[0] * block[0] >= 300 * 4  # one thread per (row, group)
    with pytest.raises(RFTheoryError, match="contiguous"):
        philox.cupy_fill(seed, 0, np.empty((4, 8))[:, ::2])
    # RandomFeatures' device path (chunk plan, first rows, dtypes) through the same stand-in.
    import array_api_compat.numpy as xp_np

    from rftheory.features import BLOCK_ROWS, RandomFeatures
    rf = RandomFeatures("relu", d=d, p=3 * BLOCK_ROWS + 5, seed=seed)
    for dtype in (np.float32, np.float64):
        chunks = list(rf._device_chunks(xp_np, dtype, None, 2))
        assert [start for start, _ in chunks] == [0, 2 * BLOCK_ROWS, 3 * BLOCK_ROWS]
        V = np.concatenate([v.reshape(-1, d) for _, v in chunks])
        np.testing.assert_array_equal(V, rf.weights(dtype=dtype))


def test_cuda_source_compiles_with_nvcc(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    src = tmp_path / "rf_philox.cu"
    src.write_text(philox.kernel_source("cuda"))
    done = subprocess.run([nvcc, "--ptx", "--fmad=false", "-o", str(tmp_path / "k.ptx"), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ptx = (tmp_path / "k.ptx").read_text()
    for name in ("rf_fill_f32", "rf_fill_f64", "rf_words", "rf_philox_many"):
        assert f".entry {name}" in ptx
    assert "mul.hi.u64" in ptx  # __umul64hi, the 64×64→128 high word


def _nvrtc() -> ctypes.CDLL | None:
    """libnvrtc (what CuPy compiles RawModules with), from the system or the nvidia-cuda-nvrtc
    wheel, or None."""
    import ctypes.util
    import glob
    import site

    names = [ctypes.util.find_library("nvrtc")]
    for root in site.getsitepackages() + [os.environ.get("CUDA_PATH", "/usr/local/cuda")]:
        names += sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib", "libnvrtc.so.*")))
        names += sorted(glob.glob(os.path.join(root, "lib64", "libnvrtc.so*")))
    for name in names:
        if name and "builtins" not in name and ".alt." not in name:
            # NVRTC dlopens its builtins library by name: load the one beside it first.
            for builtins in glob.glob(os.path.join(os.path.dirname(name), "libnvrtc-builtins.so.*")):
                if ".alt." not in builtins:
                    try:
                        ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
                    except OSError:
                        pass
            try:
                return ctypes.CDLL(name)
            except OSError:
                continue
    return None


def test_cuda_source_compiles_with_nvrtc():
    # The exact path CuPy takes: NVRTC on the source string with the module's options.
    lib = _nvrtc()
    if lib is None:
        pytest.skip("no libnvrtc")
    prog = ctypes.c_void_p()
    src = philox.kernel_source("cuda").encode()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"rf_philox.cu", 0, None, None) == 0
    opts = [o.encode() for o in philox.NVRTC_OPTIONS + ("-arch=compute_90",)]
    status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, ptx)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    assert status == 0, log.value.decode(errors="replace")
    text = ptx.value.decode()
    for name in ("rf_fill_f32", "rf_fill_f64", "rf_words", "rf_philox_many"):
        assert f".entry {name}" in text
    assert "mul.hi.u64" in text


# -- the CUDA kernel on a device ----------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_known_answers_and_words():
    cp = cupy_or_skip()
    ctr = cp.asarray(np.array([c for c, _, _ in ref.KAT_PHILOX4X64_10], dtype=np.uint64))
    key = cp.asarray(np.array([k for _, k, _ in ref.KAT_PHILOX4X64_10], dtype=np.uint64))
    out = cp.empty_like(ctr)
    philox._cupy_module().get_function("rf_philox_many")(
        (1,), (32,), (np.int64(len(ctr)), ctr, key, out))
    assert cp.asnumpy(out).tolist() == [e for _, _, e in ref.KAT_PHILOX4X64_10]
    seed, row0, rows, groups = 2**64 + 77, 2**33 + 5, 3000, 25
    got = cp.asnumpy(philox.cupy_words(seed, row0, rows, groups))
    np.testing.assert_array_equal(got, philox.philox_words(seed, range(row0, row0 + rows), groups))


@pytest.mark.gpu
def test_gpu_normals_equal_the_host():
    cp = cupy_or_skip()
    seed, row0, rows, d = 5, 1024 * 7, 4096, 101
    Z = cp.asnumpy(philox.cupy_fill(seed, row0, cp.empty((rows, d))))
    Zn = philox.standard_normal(seed, range(row0, row0 + rows), d)
    np.testing.assert_array_equal(Z, Zn)  # V is defined to the bit (no libm on either side)
    V32 = cp.asnumpy(philox.cupy_fill(seed, row0, cp.empty((rows, d), cp.float32), scale_dim=d))
    ref32 = philox.standard_normal(seed, range(row0, row0 + rows), d, scale_dim=d,
                                   out=np.empty((rows, d), np.float32))
    np.testing.assert_array_equal(V32, ref32)


@pytest.mark.gpu
def test_gpu_pinned_windows():
    cp = cupy_or_skip()
    for name, (seed, rows, cols, scale, dtype) in PINNED_WINDOWS.items():
        if cols.start:  # the device fills whole rows: take the window out of them
            continue
        V = cp.asnumpy(philox.cupy_fill(seed, rows.start, cp.empty((len(rows), cols.stop), dtype),
                                        scale_dim=scale))
        assert _sha(V) == PINNED_SHA256[name], name


def test_the_kernel_ships_as_package_data():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    data = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert philox.KERNEL_FILE in data["rftheory"]
    assert philox.kernel_path().is_file()
    source = philox.kernel_source("cuda")
    assert source.startswith("#define RF_CUDA 1\n" + philox.kernel_constants())
    assert source.endswith(philox.kernel_path().read_text())
    # the old entry points of the launchers still import from philox
    assert philox.cupy_fill is philox_cupy.cupy_fill and philox.cupy_words is philox_cupy.cupy_words
