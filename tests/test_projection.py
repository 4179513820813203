import numpy as np
import pytest

from rftheory.errors import ShapeError
from rftheory.features import BLOCK_ROWS, RandomFeatures, train_min_norm
from rftheory.projection import projection_loss, projection_residuals
from tests.conftest import cupy_or_skip, sphere_points

D, N = 6, 3
P = BLOCK_ROWS + 200  # one full block and a partial one: both streaming paths are exercised


def trained(activation: str, p: int = P, n: int = N, seed: int = 0):
    rf = RandomFeatures(activation, d=D, p=p, seed=seed)
    X = sphere_points(n, D, seed=seed + 1)
    Y = np.random.default_rng(seed + 2).standard_normal(n)
    return rf, X, train_min_norm(rf, X, Y).theta


def explicit_loss(rf, X_hat, theta):
    """‖P⊥θ‖²/‖θ‖² with Φ̂ materialised and the projection by least squares (independent path)."""
    F = rf.features(X_hat)
    coef = np.linalg.lstsq(F.T, theta, rcond=None)[0]
    r = theta - F.T @ coef
    return float(r @ r / (theta @ theta))


@pytest.mark.parametrize("chunk", [BLOCK_ROWS, 3 * BLOCK_ROWS])
@pytest.mark.parametrize("keep", [True, False])
def test_loss_and_gradient_bit_identical_whatever_chunk_and_kept_blocks(monkeypatch, chunk, keep):
    # Two full blocks and a partial one; one chunk of all blocks is the reference.
    p = 2 * BLOCK_ROWS + 77
    ref_rf = RandomFeatures("relu+tanh", d=D, p=p, seed=3, chunk_rows=100 * BLOCK_ROWS)
    X_hat = sphere_points(4, D, seed=4)
    theta = np.random.default_rng(5).standard_normal(p)
    ref = projection_loss(ref_rf, X_hat, theta)
    if not keep:  # force the second pass to stream V again instead of reusing the first's blocks
        monkeypatch.setattr("rftheory.projection.KEEP_BLOCKS_BYTES", 0)
    rf = RandomFeatures("relu+tanh", d=D, p=p, seed=3, chunk_rows=chunk)
    got = projection_loss(rf, X_hat, theta)
    assert got.loss == ref.loss
    np.testing.assert_array_equal(got.gradient, ref.gradient)
    np.testing.assert_array_equal(got.coefficients, ref.coefficients)


@pytest.mark.parametrize("activation", ["relu+tanh", "tanh", "relu"])
def test_gradient_matches_finite_differences(activation):
    rf, X, theta = trained(activation)
    X_hat = sphere_points(N, D, seed=10)
    res = projection_loss(rf, X_hat, theta)
    assert 0.0 < res.loss <= 1.0
    direction = np.random.default_rng(11).standard_normal(X_hat.shape)
    h = 1e-6
    if activation == "relu":
        # Away from kinks: no pre-activation may cross 0 within the difference step.
        Z = X_hat @ rf.weights().T
        speed = np.abs(direction @ rf.weights().T)
        assert np.min(np.abs(Z) / speed) > 10 * h
    lp = projection_loss(rf, X_hat + h * direction, theta, gradient=False).loss
    lm = projection_loss(rf, X_hat - h * direction, theta, gradient=False).loss
    fd = (lp - lm) / (2 * h)
    # Central differences: truncation O(h²·L''') ≈ 1e-12 and rounding eps·L/h ≈ 1e-10, against
    # directional derivatives of order 0.1–1: 1e-6 relative leaves a wide margin.
    assert float(np.sum(res.gradient * direction)) == pytest.approx(fd, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("activation", ["relu+tanh", "tanh"])
def test_loss_agrees_with_explicit_projection(activation):
    rf, X, theta = trained(activation)
    X_hat = sphere_points(N + 1, D, seed=12)
    # Two routes to the same projection (Gram normal equations vs least squares on Φ̂ᵀ): they
    # agree to the Gram route's accuracy, eps·cond(G) ≲ 1e-12 here.
    assert projection_loss(rf, X_hat, theta).loss == pytest.approx(
        explicit_loss(rf, X_hat, theta), rel=1e-9)


def test_multi_output_loss_and_gradient():
    rf, X, _ = trained("relu+tanh")
    Y = np.random.default_rng(30).standard_normal((N, 2))
    theta = train_min_norm(rf, X, Y).theta  # (p, 2)
    X_hat = sphere_points(N, D, seed=31)
    res = projection_loss(rf, X_hat, theta)
    # Σ_c ‖P⊥θ_c‖² / Σ_c ‖θ_c‖² from the per-column explicit losses (same 1e-9 reason as above).
    parts = [explicit_loss(rf, X_hat, theta[:, c]) * (theta[:, c] @ theta[:, c]) for c in range(2)]
    assert res.loss == pytest.approx(sum(parts) / np.sum(theta**2), rel=1e-9)
    direction = np.random.default_rng(32).standard_normal(X_hat.shape)
    h = 1e-6
    fd = (projection_loss(rf, X_hat + h * direction, theta, gradient=False).loss
          - projection_loss(rf, X_hat - h * direction, theta, gradient=False).loss) / (2 * h)
    assert float(np.sum(res.gradient * direction)) == pytest.approx(fd, rel=1e-6, abs=1e-9)


def test_loss_vanishes_at_training_points_and_lies_in_unit_interval():
    rf, X, theta = trained("relu+tanh")
    at_train = projection_loss(rf, X[::-1].copy(), theta)  # order does not matter
    # θ* = Φᵀa lies in the span up to rounding: L ~ (eps·cond)² ≪ 1e-20.
    assert at_train.loss < 1e-20
    # ...and the gradient is tiny there (a minimum): far below its size at random points.
    random_pts = projection_loss(rf, sphere_points(N, D, seed=13), theta)
    assert np.linalg.norm(at_train.gradient) < 1e-6 * np.linalg.norm(random_pts.gradient)
    for seed in range(5):
        loss = projection_loss(rf, sphere_points(N, D, seed=20 + seed), theta, gradient=False).loss
        assert 0.0 <= loss <= 1.0


def test_duplicated_rows_are_finite_flagged_and_change_nothing():
    rf, X, theta = trained("relu+tanh")
    X_hat = sphere_points(2, D, seed=14)
    base = projection_loss(rf, X_hat, theta)
    dup = projection_loss(rf, X_hat[[0, 0, 1]], theta)
    assert dup.rank_deficient and not base.rank_deficient
    assert np.all(np.isfinite(dup.gradient)) and np.all(np.isfinite(dup.coefficients))
    # A repeated row adds nothing to the span; only rounding of the eigen-solve differs.
    assert dup.loss == pytest.approx(base.loss, rel=1e-9)


def test_identical_rows_equal_a_single_row():
    rf, X, theta = trained("relu+tanh")
    x = sphere_points(1, D, seed=15)
    same = projection_loss(rf, np.repeat(x, 4, axis=0), theta)
    assert same.rank_deficient and np.all(np.isfinite(same.gradient))
    assert same.loss == pytest.approx(projection_loss(rf, x, theta).loss, rel=1e-9)


def test_more_candidates_than_features_spans_everything():
    rf, X, theta = trained("relu+tanh", p=5, n=2)
    res = projection_loss(rf, sphere_points(8, D, seed=16), theta)
    assert res.rank_deficient and np.all(np.isfinite(res.gradient))
    # 8 generic feature vectors span R^5: θ is fully explained up to the eigen-solve rounding.
    assert res.loss < 1e-20


def test_per_vector_residuals():
    rf, X, theta = trained("relu+tanh")
    # Training points in the candidates: residual ≈ 0 up to the documented √eps floor (1e-8).
    np.testing.assert_array_less(projection_residuals(rf, X[[2, 0, 1]], X), 1e-7)
    other = sphere_points(N, D, seed=17)
    res = projection_residuals(rf, other, X)
    # Unrelated points with p ≫ n: features far from the span — check against least squares.
    F_hat, F = rf.features(other), rf.features(X)
    coef = np.linalg.lstsq(F_hat.T, F.T, rcond=None)[0]
    expected = np.linalg.norm(F.T - F_hat.T @ coef, axis=0) / np.linalg.norm(F, axis=1)
    np.testing.assert_allclose(res, expected, rtol=1e-6)  # difference of Gram terms: ~√eps-level
    assert np.all(res > 0.05)


def test_strict_array_api_matches_numpy(xp_strict):
    rf, X, theta = trained("relu+tanh")
    X_hat = sphere_points(N, D, seed=18)
    ref = projection_loss(rf, X_hat, theta)
    got = projection_loss(rf, xp_strict.asarray(X_hat), xp_strict.asarray(theta))
    # Same operations in the same order on the same CPU: only BLAS reassociation may differ.
    assert got.loss == pytest.approx(ref.loss, rel=1e-12)
    np.testing.assert_allclose(np.from_dlpack(got.gradient), ref.gradient, rtol=1e-10, atol=1e-14)
    res = projection_residuals(rf, xp_strict.asarray(X_hat), xp_strict.asarray(X))
    np.testing.assert_allclose(np.from_dlpack(res), projection_residuals(rf, X_hat, X), rtol=1e-10)


@pytest.mark.parametrize("k", [None, 3])
def test_numpy_path_is_the_generic_path_bit_for_bit(xp_strict, k):
    # projection_loss_checked calls numpy's matmul/transpose/sum directly for numpy arrays;
    # array_api_strict (numpy underneath) takes the array-API calls: the same bits.
    rf, X, theta = trained("relu+tanh")
    if k is not None:
        theta = np.random.default_rng(4).standard_normal((rf.p, k))
    X_hat = sphere_points(N, D, seed=19)
    ref = projection_loss(rf, X_hat, theta)
    got = projection_loss(rf, xp_strict.asarray(X_hat), xp_strict.asarray(theta))
    assert got.loss == ref.loss
    assert np.asarray(got.gradient).tobytes() == ref.gradient.tobytes()
    assert np.asarray(got.coefficients).tobytes() == ref.coefficients.tobytes()


@pytest.mark.gpu
def test_cupy_matches_numpy():
    cp = cupy_or_skip()
    rf, X, theta = trained("relu+tanh")
    X_hat = sphere_points(N, D, seed=19)
    ref = projection_loss(rf, X_hat, theta)
    got = projection_loss(rf, cp.asarray(X_hat), cp.asarray(theta))
    assert isinstance(got.gradient, cp.ndarray)
    # Different BLAS and transcendental implementations in float64: agreement to ~1e-10.
    assert got.loss == pytest.approx(ref.loss, rel=1e-9)
    np.testing.assert_allclose(got.gradient.get(), ref.gradient, rtol=1e-8, atol=1e-12)


def test_bad_input_raises_shape_error():
    rf, X, theta = trained("relu+tanh")
    good = sphere_points(N, D, seed=0)
    with pytest.raises(ShapeError):
        projection_loss(rf, good[:, :-1], theta)              # wrong d
    with pytest.raises(ShapeError):
        projection_loss(rf, np.where(good > 0, np.nan, good), theta)  # NaN
    with pytest.raises(ShapeError):
        projection_loss(rf, good, theta[:-1])                 # θ of wrong length
    with pytest.raises(ShapeError):
        projection_loss(rf, good, theta[:, None, None])       # θ 3-D
    with pytest.raises(ShapeError):
        projection_loss(rf, good, np.zeros_like(theta))       # θ = 0: loss undefined
    with pytest.raises(ShapeError):
        projection_residuals(rf, good, good[:, :-1])          # X of wrong d
