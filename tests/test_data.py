import pickle

import numpy as np
import pytest
import scipy.linalg

from rftheory.data import (DataNotFoundError, cifar10_data, dataset_dimension, digits_data,
                           gaussian_labels, load_dataset, sign_labels, sphere_points,
                           tangent_basis, to_sphere)
from rftheory.errors import RFTheoryError, ShapeError
from rftheory.features import RandomFeatures

# Norms are rescaled to √d by one division: float64 rounding leaves ~1e-15 relative error.
NORM_RTOL = 1e-12


def test_sphere_data_norms_seeds_and_isotropy():
    X = sphere_points(2000, 10, seed=3)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), np.sqrt(10), rtol=NORM_RTOL)
    np.testing.assert_array_equal(X, sphere_points(2000, 10, seed=3))
    assert not np.array_equal(X, sphere_points(2000, 10, seed=4))
    # Uniform on the √d-sphere: E[x xᵀ] = I. With 2000 points each entry of the empirical second
    # moment has standard deviation ≈ √(2/2000) ≈ 0.03; 0.15 is 5 sigma.
    np.testing.assert_allclose(X.T @ X / 2000, np.eye(10), atol=0.15)


@pytest.mark.parametrize("x", [[0.0, 0.0, 3.0], [-2.0, 1.0, 0.5], [1e-300, 0.0], [0.0, -1e300],
                               list(np.random.default_rng(0).standard_normal(80)),
                               [-1.0] + [0.0] * 9])
@pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow it handles is not reported
def test_tangent_basis_against_scipy_null_space(x):
    x = np.array(x)
    d = x.size
    B = tangent_basis(x)
    assert B.shape == (d, d - 1) and B.dtype == np.float64
    # A Householder reflection is orthogonal to a few ulps: entries of BᵀB − I and of Bᵀu are
    # sums of d products of numbers ≤ 1, each rounded once: |error| ≤ ~2d·eps.
    tol = 4 * d * np.finfo(float).eps
    np.testing.assert_allclose(B.T @ B, np.eye(d - 1), rtol=0, atol=tol)
    u = x / np.max(np.abs(x))
    u /= np.linalg.norm(u)                     # (x·x itself under/overflows at 1e∓300)
    np.testing.assert_allclose(u @ B, 0.0, rtol=0, atol=tol)
    # The same space as scipy's SVD-based null space (an independent construction).
    N = scipy.linalg.null_space(u[None, :])
    np.testing.assert_allclose(B @ B.T, N @ N.T, rtol=0, atol=tol)


@pytest.mark.parametrize("x", [[0.0, 0.0], [[1.0, 2.0]], 3.0])
def test_tangent_basis_refuses_a_zero_or_non_vector(x):
    with pytest.raises(ShapeError, match="non-zero vector"):
        tangent_basis(np.array(x))


def test_to_sphere_rows_points_centring_and_zero_rows():
    X = np.array([[3.0, 4.0], [0.0, -2.0]])
    np.testing.assert_allclose(to_sphere(X), [[0.6 * np.sqrt(2), 0.8 * np.sqrt(2)],
                                              [0.0, -np.sqrt(2)]], rtol=1e-15)
    np.testing.assert_allclose(to_sphere(X, 25), [[3.0, 4.0], [0.0, -5.0]], rtol=1e-15)
    out, norms = to_sphere(X, return_norms=True)
    np.testing.assert_array_equal(norms, [[5.0], [2.0]])  # exact: 3-4-5 and a single entry
    centred = to_sphere(np.array([[1.0, 3.0]]), centre=True)  # (−1, 1) scaled to norm √2
    np.testing.assert_allclose(centred, [[-1.0, 1.0]], rtol=1e-15)
    point, norm = to_sphere(np.array([0.0, 2.0, 0.0]), return_norms=True)
    assert norm == 2.0 and np.allclose(point, [0.0, np.sqrt(3), 0.0], rtol=1e-15, atol=0)
    assert to_sphere(np.array([[1, 2]])).dtype == np.float64  # integers become float64
    with pytest.raises(ShapeError, match="zero"):
        to_sphere(np.zeros((1, 3)))
    with pytest.raises(ShapeError, match="constant"):
        to_sphere(np.ones((2, 3)), centre=True)
    with pytest.raises(ShapeError):
        to_sphere(np.ones((1, 2, 3)))


def test_to_sphere_keeps_numpy_norm_bits():
    # Rows: vector_norm along axis 1; one point: √(x·x). Both are what np.linalg.norm computes,
    # so every projected point (data, candidates, the claims' points) stays bit-identical.
    rng = np.random.default_rng(0)
    for d in (3, 8, 50, 257):
        A = rng.standard_normal((20, d))
        np.testing.assert_array_equal(to_sphere(A),
                                      A * (np.sqrt(d) / np.linalg.norm(A, axis=1, keepdims=True)))
        np.testing.assert_array_equal(to_sphere(A[0]), A[0] * (np.sqrt(d) / np.linalg.norm(A[0])))


def test_to_sphere_numpy_path_is_the_generic_path_bit_for_bit(xp_strict):
    # numpy rows take a direct path (np.linalg.norm, as array_api_compat's vector_norm calls
    # it); array_api_strict takes the generic one: the same bits, and the same zero-row error.
    rng = np.random.default_rng(2)
    for shape in ((7, 5), (1, 3), (20, 257), (4,)):
        X = rng.standard_normal(shape)
        for kwargs in ({}, {"d": 11}, {"centre": True}):
            ours, generic = to_sphere(X, **kwargs), to_sphere(xp_strict.asarray(X), **kwargs)
            assert ours.tobytes() == np.asarray(generic).tobytes()
    with pytest.raises(ShapeError):
        to_sphere(np.zeros((2, 3)))


def test_to_sphere_is_array_api_generic(xp_strict):
    X = np.random.default_rng(1).standard_normal((5, 4))
    out = to_sphere(xp_strict.asarray(X), centre=True)
    assert isinstance(out, type(xp_strict.asarray(X)))
    np.testing.assert_allclose(np.asarray(out), to_sphere(X, centre=True), rtol=1e-14)


def test_dataset_dimension_without_loading():
    assert dataset_dimension("digits") == 64 and dataset_dimension("cifar10:/nowhere") == 3072
    assert dataset_dimension("sphere", 7) == 7
    with pytest.raises(RFTheoryError, match="needs the dimension"):
        dataset_dimension("sphere")
    with pytest.raises(RFTheoryError, match="d = 64"):
        dataset_dimension("digits", 10)
    with pytest.raises(RFTheoryError, match="unknown data set"):
        dataset_dimension("mnist")


def test_data_streams_are_independent_of_v():
    # The same user seed must not reproduce the rows of V (Philox counter stream vs numpy's).
    rf = RandomFeatures("relu", d=5, p=3, seed=0)
    V = rf.weights()
    X = sphere_points(3, 5, seed=0)
    cos = np.abs(np.sum(V * X, axis=1)) / (np.linalg.norm(V, axis=1) * np.sqrt(5))
    assert np.all(cos < 0.999)


def test_labels():
    y = gaussian_labels(5000, seed=1)
    # mean ~ N(0, 1/5000): |mean| < 0.06 is > 4 sigma; variance within 0.1 (~7 sigma of 0.02).
    assert abs(y.mean()) < 0.06 and abs(y.var() - 1) < 0.1
    s = sign_labels(100, seed=1)
    assert set(np.unique(s)) == {-1.0, 1.0}
    np.testing.assert_array_equal(s, sign_labels(100, seed=1))


def test_digits_shape_norms_and_centring():
    ds = digits_data(30, seed=2)
    assert ds.X.shape == (30, 64) and ds.image_shape == (8, 8) and ds.name == "digits"
    np.testing.assert_allclose(np.linalg.norm(ds.X, axis=1), 8.0, rtol=NORM_RTOL)
    np.testing.assert_allclose(ds.X.mean(axis=1), 0.0, atol=1e-12)
    assert len(np.unique(ds.indices)) == 30
    np.testing.assert_array_equal(ds.indices, digits_data(30, seed=2).indices)
    imgs = ds.to_images(ds.X)
    assert imgs.shape == (30, 8, 8) and imgs.min() == 0.0 and imgs.max() == 1.0
    with pytest.raises(RFTheoryError, match="exceeds"):
        digits_data(5000)


def write_fake_cifar(folder, n_per_batch=6, batches=(1, 2)):
    rng = np.random.default_rng(0)
    for b in batches:
        data = rng.integers(0, 256, size=(n_per_batch, 3072), dtype=np.uint8)
        with open(folder / f"data_batch_{b}", "wb") as f:
            pickle.dump({b"data": data, b"labels": list(range(n_per_batch))}, f)


def test_cifar_loader_reads_local_batches(tmp_path):
    write_fake_cifar(tmp_path)
    ds = cifar10_data(tmp_path, 8, seed=1)
    assert ds.X.shape == (8, 3072) and ds.image_shape == (3, 32, 32)
    np.testing.assert_allclose(np.linalg.norm(ds.X, axis=1), np.sqrt(3072), rtol=NORM_RTOL)
    assert ds.to_images(ds.X).shape == (8, 32, 32, 3)
    # The rows are the stored images (batches in order), centred and rescaled.
    raw = []
    for b in (1, 2):
        with open(tmp_path / f"data_batch_{b}", "rb") as f:
            raw.append(pickle.load(f, encoding="bytes")[b"data"].astype(float))
    rows = np.concatenate(raw)[ds.indices]
    rows -= rows.mean(axis=1, keepdims=True)
    expected = rows * (np.sqrt(3072) / np.linalg.norm(rows, axis=1, keepdims=True))
    np.testing.assert_allclose(ds.X, expected, rtol=1e-12)
    np.testing.assert_array_equal(ds.classes, ds.indices % 6)  # fake labels 0..5 per batch
    # The parent folder of cifar-10-batches-py is accepted too.
    sub = tmp_path / "parent" / "cifar-10-batches-py"
    sub.mkdir(parents=True)
    write_fake_cifar(sub)
    assert load_dataset(f"cifar10:{tmp_path / 'parent'}", 4, seed=0).d == 3072


def test_cifar_missing_or_malformed(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist"):
        cifar10_data(tmp_path / "nope", 3)
    with pytest.raises(DataNotFoundError, match="no CIFAR-10"):
        cifar10_data(tmp_path, 3)
    with open(tmp_path / "data_batch_1", "wb") as f:
        pickle.dump({b"data": np.zeros((2, 10), dtype=np.uint8)}, f)
    with pytest.raises(DataNotFoundError, match="expected data of shape"):
        cifar10_data(tmp_path, 1)
    (tmp_path / "data_batch_1").write_bytes(b"not a pickle")
    with pytest.raises(DataNotFoundError, match="cannot read"):
        cifar10_data(tmp_path, 1)


def test_load_dataset_specs():
    assert load_dataset("sphere", 4, d=7, seed=1).X.shape == (4, 7)
    assert load_dataset("digits", 4).d == 64
    assert load_dataset("digits", 4, d=64).d == 64
    with pytest.raises(RFTheoryError, match="d = 64"):
        load_dataset("digits", 4, d=10)
    with pytest.raises(RFTheoryError, match="needs the dimension"):
        load_dataset("sphere", 4)
    for bad in ("mnist", "cifar10", "cifar10:", "digits:x", "sphere:3"):
        with pytest.raises(RFTheoryError, match="unknown data set"):
            load_dataset(bad, 4, d=3)
    with pytest.raises(RFTheoryError):
        load_dataset("sphere", 0, d=3)
    with pytest.raises(RFTheoryError):
        load_dataset("sphere", 3, d=3, seed=-1)


class _Payload:
    """Unpickling this would call os.system: the loader must refuse it, never run it."""

    def __reduce__(self):
        import os

        return (os.system, ("touch SHOULD_NOT_EXIST",))


def test_cifar_loader_refuses_pickles_that_would_run_code(tmp_path, monkeypatch):
    from rftheory.data import DataNotFoundError, cifar10_data

    monkeypatch.chdir(tmp_path)
    with open(tmp_path / "data_batch_1", "wb") as f:
        pickle.dump({b"data": _Payload()}, f)
    with pytest.raises(DataNotFoundError, match="refusing"):
        cifar10_data(tmp_path, 1)
    assert not (tmp_path / "SHOULD_NOT_EXIST").exists()
