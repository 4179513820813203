"""The d = 3072 colour patches of scikit-image's photographs (rftheory.data.patches_data)."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

from rftheory import data
from rftheory.data import DataNotFoundError, dataset_dimension, load_dataset, patches_data

pytest.importorskip("skimage", reason="the patches need the optional extra rftheory[images]")

#: One division rescales each row to √d: float64 rounding leaves ~1e-15 relative error.
NORM_RTOL = 1e-12


def test_shapes_dimension_and_sources():
    ds = patches_data(12, seed=0)
    assert ds.X.shape == (12, 3072) and ds.X.dtype == np.float64
    assert ds.image_shape == (3, 32, 32) and ds.name == "patches" and ds.is_image
    assert dataset_dimension("patches") == dataset_dimension("patches:standardised") == 3072
    assert ds.classes.min() >= 0 and ds.classes.max() < len(data.PATCH_SOURCES)
    images = ds.to_images(ds.X)
    assert images.shape == (12, 32, 32, 3) and images.min() >= 0 and images.max() <= 1


def test_sphere_normalisation_is_centred_rows_of_norm_sqrt_d():
    ds = load_dataset("patches", 20, seed=1)
    np.testing.assert_allclose(np.linalg.norm(ds.X, axis=1), np.sqrt(3072), rtol=NORM_RTOL)
    # centred before scaling: each row's mean is 0 up to rounding (3072 terms of size ~1)
    np.testing.assert_allclose(ds.X.mean(axis=1), 0.0, atol=1e-12)
    assert ds.normalisation == "sphere"


def test_standardisation_is_one_scalar_over_the_pool():
    pool, _ = data._patch_pool()
    everything = patches_data(pool.shape[0], normalisation="standardised").X
    # over the whole pool the pixels have mean 0 and variance 1 exactly (up to rounding), and
    # a patch's row does not depend on the other patches drawn with it
    assert abs(everything.mean()) < 1e-12 and abs(everything.var() - 1) < 1e-12
    few = load_dataset("patches:standardised", 5, seed=2)
    np.testing.assert_array_equal(few.X, everything[few.indices])
    norms = np.linalg.norm(everything, axis=1) / np.sqrt(3072)
    assert norms.min() < 0.9 and norms.max() > 1.1  # not on the sphere: norms vary by patch


def test_determinism_and_distinctness():
    a, b = patches_data(30, seed=3), patches_data(30, seed=3)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert len(set(a.indices.tolist())) == 30
    assert not np.array_equal(a.indices, patches_data(30, seed=4).indices)
    # distinct images, not only distinct indices: no two rows of the whole pool are close
    # (measured: the closest pair of the 240 sphere-projected patches is 0.055·√d apart)
    pool = patches_data(data._patch_pool()[0].shape[0]).X / np.sqrt(3072)
    gram = pool @ pool.T
    distances = np.sqrt(np.maximum(2 - 2 * gram[np.triu_indices(len(pool), 1)], 0))
    assert distances.min() > 0.02


def test_bad_requests_are_refused():
    pool_size = data._patch_pool()[0].shape[0]
    with pytest.raises(data.RFTheoryError, match="exceeds"):
        patches_data(pool_size + 1)
    with pytest.raises(data.RFTheoryError, match="unknown data set"):
        load_dataset("patches:pixels", 3)
    with pytest.raises(data.RFTheoryError, match="normalisation"):
        patches_data(3, normalisation="pixels")
    with pytest.raises(data.RFTheoryError, match="d = 3072"):
        load_dataset("patches", 3, d=64)


def test_missing_extra_gives_one_clear_line(monkeypatch):
    real_import = builtins.__import__

    def no_skimage(name, *args, **kwargs):
        if name == "skimage" or name.startswith("skimage."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(data, "_patch_pool", data._patch_pool.__wrapped__)  # bypass the cache
    monkeypatch.setattr(builtins, "__import__", no_skimage)
    with pytest.raises(DataNotFoundError) as info:
        patches_data(3)
    message = str(info.value)
    assert "\n" not in message and "pip install 'rftheory[images]'" in message


def test_cli_reconstruct_on_patches_writes_a_colour_figure(tmp_path, capsys):
    from rftheory.cli import main

    # n = 2, p = 3·n: labels fit, nothing is recovered in 5 steps; what is tested is the data
    # path and the colour figure, not the attack
    status = main(["reconstruct", "--data", "patches", "--n", "2", "--p", "6", "--max-steps",
                   "5", "--no-progress", "--plot", str(tmp_path / "fig.png")])
    assert status == 0
    assert "patches" in capsys.readouterr().out
    import matplotlib.image

    image = matplotlib.image.imread(tmp_path / "fig.png")
    assert image.ndim == 3 and image.shape[2] in (3, 4)
    rgb = image[..., :3]
    assert np.abs(rgb[..., 0] - rgb[..., 1]).max() > 0.1  # colour, not grey


def test_pooled_patches_are_the_tiles_average_pooled_and_normalised():
    """8×8×3 = 192 (issue 29): the same tiles as patches_data, 4×4 means, centred, norm √192."""
    from rftheory.data import pooled_patches_data, to_sphere
    from rftheory.errors import RFTheoryError

    ds, full = pooled_patches_data(5, seed=3), patches_data(5, seed=3)
    assert ds.X.shape == (5, 192) and ds.image_shape == (3, 8, 8)
    np.testing.assert_array_equal(ds.indices, full.indices)
    tiles = data._patch_pool()[0][full.indices]  # raw 0–255 tiles, pooled by loops
    pooled = np.array([[[[tiles[i, c, 4 * a:4 * a + 4, 4 * b:4 * b + 4].mean() for b in range(8)]
                         for a in range(8)] for c in range(3)] for i in range(5)])
    np.testing.assert_allclose(ds.X, to_sphere(pooled.reshape(5, -1), centre=True),
                               rtol=NORM_RTOL, atol=NORM_RTOL * np.sqrt(192))
    np.testing.assert_allclose(np.linalg.norm(ds.X, axis=1), np.sqrt(192), rtol=NORM_RTOL)
    assert pooled_patches_data(2, seed=0, factor=2).X.shape == (2, 768)
    for bad in (3, 0, True):
        with pytest.raises(RFTheoryError):
            pooled_patches_data(2, seed=0, factor=bad)
