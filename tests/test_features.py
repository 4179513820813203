import numpy as np
import pytest

from rftheory.errors import RFTheoryError, ShapeError
from rftheory.features import (BLOCK_ROWS, SUM_GROUP, THREADED_DRAW_MIN, V_DEFINITION, BlockSum,
                               DenseFeatures, RandomFeatures, train_min_norm)
from rftheory.philox import MAX_ULPS, V_DEFINITION as PHILOX_V_DEFINITION, box_muller, standard_normal
from tests import philox_reference
from tests.conftest import cupy_or_skip, sphere_points

D, N = 12, 7
P = 2 * BLOCK_ROWS + 321  # two full blocks and a partial one


@pytest.fixture
def rf():
    return RandomFeatures("relu+tanh", d=D, p=P, seed=5)


@pytest.fixture
def X():
    return sphere_points(N, D, seed=0)


def test_v_statistics_and_determinism(rf):
    V = rf.weights()
    assert V.shape == (P, D)
    # Entries ~ N(0, 1/d): with P*D = 28k samples the sample variance is within ~1 % (4 sigma).
    assert abs(V.var() * D - 1.0) < 0.04 and abs(V.mean()) < 4 / np.sqrt(V.size / D)
    np.testing.assert_array_equal(V, RandomFeatures("relu", d=D, p=P, seed=5).weights())
    assert not np.array_equal(V, RandomFeatures("relu", d=D, p=P, seed=6).weights())


def test_models_are_nested_in_p(rf):
    small = RandomFeatures("relu", d=D, p=BLOCK_ROWS + 10, seed=5)
    np.testing.assert_array_equal(small.weights(), rf.weights()[: BLOCK_ROWS + 10])


def test_v_definition_is_exposed():
    assert V_DEFINITION == PHILOX_V_DEFINITION == RandomFeatures.v_definition
    assert V_DEFINITION.startswith("philox4x64-10+box-muller/")


@pytest.mark.parametrize("chunk", [1, BLOCK_ROWS, 2 * BLOCK_ROWS + 5, 100 * BLOCK_ROWS])
def test_results_bit_identical_whatever_chunk_size(rf, X, chunk):
    other = RandomFeatures("relu+tanh", d=D, p=P, seed=5, chunk_rows=chunk)
    theta = np.random.default_rng(1).standard_normal(P)
    a = np.random.default_rng(2).standard_normal(N)
    G1, c1 = rf.gram_and_matvec(X, theta)
    G2, c2 = other.gram_and_matvec(X, theta)
    np.testing.assert_array_equal(G1, G2)
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_array_equal(rf.rmatvec(X, a), other.rmatvec(X, a))
    cot = lambda blk: np.ones_like(blk.F)  # noqa: E731
    np.testing.assert_array_equal(rf.vjp(X, cot), other.vjp(X, cot))


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_v_is_the_same_whatever_threads_draw_it(threads):
    # p·d above THREADED_DRAW_MIN so the pool is really used; chunks of 2 blocks so several
    # chunks are in flight at once.
    d, p = 64, 33 * BLOCK_ROWS + 17
    assert p * d >= THREADED_DRAW_MIN
    ref = RandomFeatures("relu", d=d, p=p, seed=2).weights()
    rf = RandomFeatures("relu", d=d, p=p, seed=2, threads=threads, chunk_rows=2 * BLOCK_ROWS)
    streamed = np.concatenate([ch.V.reshape(-1, d) for ch in rf.chunks(np.zeros((1, d)))])
    np.testing.assert_array_equal(streamed, ref)
    # Block 7 from the definition, computed independently: the pure-numpy Philox reference's
    # words, the Box–Muller transform (checked against mpmath in test_philox), scaled by 1/√d.
    words = philox_reference.words(2, range(7 * BLOCK_ROWS, 8 * BLOCK_ROWS), range(d // 4))
    block_7 = box_muller(words).reshape(BLOCK_ROWS, d) / np.sqrt(d)
    np.testing.assert_array_equal(ref[7 * BLOCK_ROWS:8 * BLOCK_ROWS], block_7)


@pytest.mark.parametrize("blocks", [1, 3, 40])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_streamed_v_is_independent_of_chunk_size(blocks, dtype):
    d, p = 10, 41 * BLOCK_ROWS + 3
    rf = RandomFeatures("relu", d=d, p=p, seed=8, chunk_rows=blocks * BLOCK_ROWS)
    streamed = np.concatenate([ch.V.reshape(-1, d)
                               for ch in rf.chunks(np.zeros((1, d), dtype=dtype))])
    assert streamed.dtype == dtype
    # One definition for every dtype: float32 V is the float64 V rounded once.
    np.testing.assert_array_equal(streamed, rf.weights().astype(dtype))


def test_v_is_a_pure_function_of_seed_row_and_column():
    d = 13
    V = RandomFeatures("relu", d=d, p=3 * BLOCK_ROWS + 50, seed=3).weights()
    rng = np.random.default_rng(1)
    for _ in range(10):
        i0 = int(rng.integers(0, V.shape[0]))
        i1 = int(rng.integers(i0, V.shape[0] + 1))
        j0 = int(rng.integers(0, d))
        j1 = int(rng.integers(j0, d + 1))
        window = standard_normal(3, range(i0, i1), range(j0, j1), scale_dim=d)
        np.testing.assert_array_equal(window, V[i0:i1, j0:j1])


def test_models_are_nested_in_d_up_to_the_scale():
    small = RandomFeatures("relu", d=7, p=100, seed=4).weights()
    big = RandomFeatures("relu", d=12, p=BLOCK_ROWS + 9, seed=4).weights()
    # Both rescaled to the seed's standard normals: equal up to the roundings of /√d, ×√d and
    # of the two square roots (≤ 2 ulps each side).
    np.testing.assert_allclose(small * np.sqrt(7), big[:100, :7] * np.sqrt(12), rtol=1e-15, atol=0)
    np.testing.assert_array_equal(small, standard_normal(4, 100, 12)[:, :7] / np.sqrt(7))


def test_default_rng_of_the_seed_is_not_v():
    # The old definition drew block 0 from default_rng([seed, 0]); the new V shares no stream
    # with any numpy Generator.
    V = RandomFeatures("relu", d=6, p=50, seed=0).weights()
    for rng in (np.random.default_rng(0), np.random.default_rng([0, 0])):
        other = rng.standard_normal((50, 6)) / np.sqrt(6)
        assert abs(np.corrcoef(V.ravel(), other.ravel())[0, 1]) < 0.25  # 300 pairs: std 0.058


def test_stopping_a_stream_early_is_clean():
    d, p = 64, 40 * BLOCK_ROWS
    rf = RandomFeatures("relu", d=d, p=p, seed=2, threads=2, chunk_rows=BLOCK_ROWS)
    stream = rf.chunks(np.ones((1, d)))
    first = next(stream)
    stream.close()  # joins the drawing threads
    assert first.V.shape == (1, BLOCK_ROWS, d)


def test_dense_features_stream_like_random_features(X):
    rf = RandomFeatures("relu+tanh", d=D, p=17 * BLOCK_ROWS + 5, seed=1)
    dense = DenseFeatures("relu+tanh", rf.weights())
    theta = np.random.default_rng(4).standard_normal(rf.p)
    np.testing.assert_array_equal(dense.gram(X), rf.gram(X))
    np.testing.assert_array_equal(dense.matvec(X, theta), rf.matvec(X, theta))
    assert [ch.rows for ch in dense.chunks(X)] == [slice(0, 16 * BLOCK_ROWS),
                                                   slice(16 * BLOCK_ROWS, 17 * BLOCK_ROWS),
                                                   slice(17 * BLOCK_ROWS, rf.p)]


@pytest.mark.parametrize("blocks_per_chunk", [1, 3, 16, 40])
def test_block_sum_association_is_fixed_by_block_index(blocks_per_chunk):
    # 37 blocks: two whole groups of SUM_GROUP and a partial one; chunkings that cut groups
    # (3 blocks) and that span several (40) must give the same bits as one group per chunk.
    rng = np.random.default_rng(0)  # magnitudes 1e-6..1e6, so the association shows in the bits
    parts = rng.standard_normal((37, 4, 3)) * 10.0 ** rng.integers(-6, 7, size=(37, 1, 1))
    def run(per):
        total = BlockSum(np.zeros((4, 3)))
        for b0 in range(0, 37, per):
            total.add(b0, parts[b0:b0 + per])
        return total.result()
    np.testing.assert_array_equal(run(blocks_per_chunk), run(SUM_GROUP))
    # Any association is within a few ulps of the largest term (1e6 · 4e-16 · 37 terms).
    np.testing.assert_allclose(run(blocks_per_chunk), parts.sum(axis=0), rtol=0, atol=1e-8)


@pytest.mark.parametrize("chunk", [BLOCK_ROWS, 3 * BLOCK_ROWS, 40 * BLOCK_ROWS])
def test_reductions_over_many_groups_bit_identical(chunk):
    d, p = 3, 37 * BLOCK_ROWS + 11
    X = sphere_points(4, d, seed=3)
    theta = np.random.default_rng(5).standard_normal(p)
    ref = RandomFeatures("tanh", d=d, p=p, seed=1)
    other = RandomFeatures("tanh", d=d, p=p, seed=1, chunk_rows=chunk)
    for a, b in zip(ref.gram_and_matvec(X, theta), other.gram_and_matvec(X, theta)):
        np.testing.assert_array_equal(a, b)
    cot = lambda blk: blk.F  # noqa: E731
    np.testing.assert_array_equal(ref.vjp(X, cot), other.vjp(X, cot))


def test_v_cache_does_not_change_results(rf, X):
    cached = RandomFeatures("relu+tanh", d=D, p=P, seed=5, v_cache_bytes=10**9)
    first, second = cached.gram(X), cached.gram(X)  # second call reads the cache
    np.testing.assert_array_equal(first, rf.gram(X))
    np.testing.assert_array_equal(second, first)


def test_streamed_operations_match_materialised(rf, X):
    rng = np.random.default_rng(3)
    Y = sphere_points(4, D, seed=9)
    theta, a = rng.standard_normal(P), rng.standard_normal(N)
    V = rf.weights()
    F, FY = rf.activation(X @ V.T), rf.activation(Y @ V.T)
    np.testing.assert_allclose(rf.features(X), F, rtol=0, atol=1e-14)
    # Reductions over p = 2369 terms of size O(1): rounding ~ sqrt(p) eps relative to |G|.
    np.testing.assert_allclose(rf.gram(X), F @ F.T, rtol=1e-12)
    np.testing.assert_allclose(rf.cross_gram(X, Y), F @ FY.T, rtol=1e-12)
    np.testing.assert_allclose(rf.matvec(X, theta), F @ theta, rtol=1e-11)
    np.testing.assert_allclose(rf.rmatvec(X, a), F.T @ a, rtol=1e-12, atol=1e-13)
    C = rng.standard_normal((N, P))
    vjp = rf.vjp(X, lambda blk: C[:, blk.rows])
    np.testing.assert_allclose(vjp, (C * rf.activation.derivative(X @ V.T)) @ V, rtol=1e-11, atol=1e-12)


def test_vjp_is_the_derivative_of_a_linear_functional(rf, X):
    # d/dX <C, Φ(X)> by central differences (tanh part smooth; relu kinks are not hit at h=1e-6
    # with probability 1 for Gaussian V), float64: error O(h²) + eps/h ~ 1e-9.
    rng = np.random.default_rng(4)
    C, E = rng.standard_normal((N, P)), rng.standard_normal((N, D))
    f = lambda Z: float(np.sum(C * rf.features(Z)))  # noqa: E731
    h = 1e-6
    fd = (f(X + h * E) - f(X - h * E)) / (2 * h)
    grad = rf.vjp(X, lambda blk: C[:, blk.rows])
    assert abs(fd - np.sum(grad * E)) <= 1e-6 * max(1.0, abs(fd))


def test_float32_close_to_float64(rf, X):
    G64 = rf.gram(X)
    G32 = rf.gram(X.astype(np.float32))
    assert G32.dtype == np.float32
    # float32 accumulation over p ~ 2.4e3 terms: relative error ~ sqrt(p) * 6e-8 ~ 3e-6.
    np.testing.assert_allclose(G32, G64, rtol=1e-4)


def test_strict_array_api(rf, X, xp_strict):
    Xs = xp_strict.asarray(X)
    theta = np.random.default_rng(5).standard_normal(P)
    G, c = rf.gram_and_matvec(Xs, xp_strict.asarray(theta))
    G_ref, c_ref = rf.gram_and_matvec(X, theta)
    np.testing.assert_array_equal(np.asarray(G), G_ref)
    np.testing.assert_allclose(np.asarray(c), c_ref, rtol=1e-13)
    model = train_min_norm(rf, Xs, xp_strict.asarray(np.arange(N, dtype=float)))
    assert model.train_residual < 1e-10
    vj = rf.vjp(Xs, lambda blk: xp_strict.ones_like(blk.F))
    assert vj.shape == (N, D)


def test_training_fits_labels_above_n_and_is_min_norm(X):
    rf = RandomFeatures("relu+tanh", d=D, p=300, seed=1)
    Y = np.random.default_rng(6).standard_normal(N)
    model = train_min_norm(rf, X, Y)
    assert model.train_residual < 1e-10 and model.gram.method == "cholesky"
    F = rf.features(X)
    # θ* = pinv(Φ) Y; cond(Φ) is modest here, so agreement to ~1e-10 relative.
    np.testing.assert_allclose(model.theta, np.linalg.pinv(F) @ Y, rtol=1e-8, atol=1e-10)


def test_training_below_n_leaves_a_residual(X):
    rf = RandomFeatures("relu+tanh", d=D, p=3, seed=1)
    Y = np.random.default_rng(7).standard_normal(N)
    model = train_min_norm(rf, X, Y)
    assert model.gram.rank_deficient and model.gram.rank == 3
    F = rf.features(X)
    expected = np.linalg.norm(F @ np.linalg.lstsq(F, Y, rcond=None)[0] - Y) / np.linalg.norm(Y)
    assert model.train_residual == pytest.approx(expected, rel=1e-8)
    assert model.train_residual > 0.1


def test_multi_output_labels(X):
    rf = RandomFeatures("tanh", d=D, p=200, seed=2)
    Y = np.random.default_rng(8).standard_normal((N, 3))
    model = train_min_norm(rf, X, Y)
    assert model.theta.shape == (200, 3) and model.train_residual < 1e-10


@pytest.mark.parametrize("kwargs", [dict(p=0), dict(d=0), dict(p=-3), dict(p=2.5), dict(seed=-1),
                                    dict(seed=2**128),
                                    dict(chunk_rows=0), dict(p=True), dict(threads=-1),
                                    dict(threads=1.5)])
def test_bad_model_parameters(kwargs):
    args = dict(activation="relu", d=4, p=10, seed=0) | kwargs
    with pytest.raises(RFTheoryError):
        RandomFeatures(**args)


def test_bad_data(rf, X):
    with pytest.raises(ShapeError, match="columns"):
        rf.gram(X[:, :-1])
    with pytest.raises(ShapeError, match="2-D"):
        rf.gram(X[0])
    bad = X.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ShapeError, match="non-finite"):
        rf.gram(bad)
    with pytest.raises(ShapeError, match="floating"):
        rf.gram(np.ones((2, D), dtype=int))
    with pytest.raises(ShapeError, match="θ"):
        rf.matvec(X, np.ones(P - 1))
    with pytest.raises(ShapeError):
        rf.rmatvec(X, np.ones(N + 1))
    with pytest.raises(ShapeError):
        train_min_norm(rf, X, np.ones(N + 1))
    with pytest.raises(ShapeError):
        train_min_norm(rf, X, np.full(N, np.inf))
    with pytest.raises(ShapeError):
        rf.gram([[1.0] * D])


def test_materialising_large_phi_is_explicit():
    rf = RandomFeatures("relu", d=2, p=2**24, seed=0)
    with pytest.raises(RFTheoryError, match="allow_large"):
        rf.features(np.ones((8, 2)))


@pytest.mark.gpu
def test_cupy_matches_numpy(rf, X):
    cp = cupy_or_skip()
    G = rf.gram(cp.asarray(X))
    assert isinstance(G, cp.ndarray)
    # V agrees to MAX_ULPS float64 ulps (the devices' log/sin); the Gram's rounding dominates.
    np.testing.assert_allclose(cp.asnumpy(G), rf.gram(X), rtol=1e-10)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cupy_draws_v_on_the_device(dtype):
    cp = cupy_or_skip()
    d, p = 37, 3 * BLOCK_ROWS + 11
    rf = RandomFeatures("tanh", d=d, p=p, seed=6, chunk_rows=2 * BLOCK_ROWS)
    chunks = list(rf.chunks(cp.zeros((1, d), dtype=dtype)))
    assert all(isinstance(ch.V, cp.ndarray) and ch.V.dtype == dtype for ch in chunks)
    V_gpu = cp.asnumpy(cp.concatenate([ch.V.reshape(-1, d) for ch in chunks]))
    V_cpu = rf.weights(dtype=getattr(np, dtype))
    np.testing.assert_array_equal(V_gpu, cp.asnumpy(rf.weights(cp, dtype=dtype)))
    ulps = np.abs(V_gpu - V_cpu) / np.spacing(np.abs(V_cpu).astype(dtype))
    if dtype == "float64":
        assert ulps.max() <= MAX_ULPS
    else:  # one rounding of values MAX_ULPS float64 ulps apart: rarely one float32 ulp
        assert ulps.max() <= 1 and np.mean(ulps > 0) < 1e-3


@pytest.mark.gpu
def test_cupy_float32_gram_and_training_match_numpy(X):
    cp = cupy_or_skip()
    rf = RandomFeatures("relu+tanh", d=D, p=P, seed=5)
    Xg = cp.asarray(X, dtype=cp.float32)
    # float32 accumulation over p ~ 2.4e3 terms on both sides: ~3e-6 relative each.
    np.testing.assert_allclose(cp.asnumpy(rf.gram(Xg)), rf.gram(X.astype(np.float32)), rtol=1e-4)
    cached = RandomFeatures("relu+tanh", d=D, p=P, seed=5, v_cache_bytes=10**9)
    Y = np.random.default_rng(6).standard_normal(N)
    model = train_min_norm(cached, cp.asarray(X), cp.asarray(Y))
    np.testing.assert_allclose(cp.asnumpy(model.theta), train_min_norm(rf, X, Y).theta,
                               rtol=1e-8, atol=1e-10)


def test_weight_chunks_stream_exactly_v_in_row_order():
    # V drawn over several chunks (a small cache forces streaming): the stacks, laid end to
    # end in the order given, are V itself, bit for bit.
    rf = RandomFeatures("relu+tanh", 7, 5000, seed=3, v_cache_bytes=0)
    starts, parts = [], []
    for start, Vs in rf.weight_chunks():
        starts.append(start)
        parts.append(np.asarray(Vs).reshape(-1, 7))
    assert len(parts) > 1 and starts == sorted(starts) and starts[0] == 0
    assert np.array_equal(np.concatenate(parts), rf.weights())
