"""Training data for reconstruction experiments: synthetic sphere data and real images.

Every data set is returned on the paper's data model, rows on the sphere of radius √d (the
patches optionally standardised instead, as the paper's CIFAR-10 runs are), as a float64 numpy
array (move it to another namespace with ``xp.asarray``). Nothing is ever
downloaded: the digits images ship inside scikit-learn, the 32×32 colour patches (d = 3072, CIFAR-10's
dimension) are cut from the photographs that ship inside scikit-image (the optional extra
``rftheory[images]``), and CIFAR-10 is read only from files the user already has.

Seeds. Each random object here is drawn from ``rng`` (SPEC 7: an integer seed, a numpy
``SeedSequence`` or ``Generator``; :func:`rftheory.seeding.generator`). An integer seed gives the
numpy stream ``default_rng([seed, stream])`` with a fixed ``stream`` tag per purpose (≥ 2**40); V
in :mod:`rftheory.features` comes from a counter-based generator (:mod:`rftheory.philox`) that
uses no numpy stream at all, so one user seed can drive the features, the data and the labels
independently. The old keyword ``seed=`` is still accepted wherever ``rng`` is.

Every data set *loader* (:func:`load_dataset`, :func:`digits_data`, :func:`patches_data`,
:func:`cifar10_data`) returns a :class:`Dataset`; :func:`sphere_points` draws bare points (an
ndarray) — its old name ``sphere_data`` is deprecated (``load_dataset("sphere", n, d=d)`` is
the loader of sphere data).
"""

from __future__ import annotations

import functools
import math
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .backend import namespace_of, to_host
from .deprecation import deprecated_alias, keyword_only_after
from .errors import DataNotFoundError, RFTheoryError, ShapeError
from .seeding import RNGLike, generator, rng_or_seed

__all__ = [
    "DataNotFoundError",
    "Dataset",
    "sphere_points",
    "sphere_data",
    "gaussian_labels",
    "sign_labels",
    "to_sphere",
    "tangent_basis",
    "dataset_dimension",
    "digits_data",
    "cifar10_data",
    "patches_data",
    "pooled_patches_data",
    "PATCH_SOURCES",
    "NORMALISATIONS",
    "load_dataset",
    "DATASET_SPECS",
]

#: Forms of ``spec`` accepted by :func:`load_dataset`.
DATASET_SPECS = ("sphere", "digits", "patches", "patches:standardised", "cifar10:DIR")

_STREAM_SPHERE = 2**40 + 1
_STREAM_GAUSSIAN_LABELS = 2**40 + 2
_STREAM_SIGN_LABELS = 2**40 + 3
_STREAM_SUBSET = 2**40 + 4

_CIFAR_D = 3 * 32 * 32
_CIFAR_TRAIN = tuple(f"data_batch_{i}" for i in range(1, 6))
_CIFAR_TEST = ("test_batch",)

#: The photographs of scikit-image's bundled data the patches are cut from, in this order: every
#: natural colour image the wheel ships (checked in scikit-image 0.22–0.26). Left out: the
#: synthetic ``colorwheel`` and ``logo``, the grey images, and ``stereo_motorcycle``'s right view
#: (the left one shifted by a few pixels: its patches would nearly repeat the left's).
PATCH_SOURCES = ("astronaut", "chelsea", "coffee", "hubble_deep_field", "immunohistochemistry",
                 "retina", "rocket", "motorcycle_left")
#: Normalisations of the patches: ``"sphere"`` (each patch centred and scaled to norm √d, the
#: theory's data model) or ``"standardised"`` (one scalar mean and standard deviation over every
#: pixel of the pool, as the paper's CIFAR-10 runs: norms ≈ √d on average, not each).
NORMALISATIONS = ("sphere", "standardised")
_PATCH = 32
#: Each photograph is resized (anti-aliased) to this shorter side before it is cut into
#: non-overlapping 32×32 tiles: 5 tiles across the shorter side, so a patch shows a recognisable
#: part of the scene (as a CIFAR-10 image shows an object) rather than a few pixels of texture.
_PATCH_SHORT_SIDE = 160
#: Tiles whose pixel standard deviation (0–255 scale) is below this are dropped as flat (none of
#: the 240 tiles of scikit-image 0.26 is: the flattest, in hubble_deep_field, has 7.9).
_PATCH_MIN_STD = 4.0


@dataclass(frozen=True, eq=False)
class Dataset:
    """Training inputs on the √d-sphere, with what is needed to show them as images.

    Attributes
    ----------
    X : numpy.ndarray, shape (n, d), float64
        Rows with ‖x_i‖ = √d.
    name : str
        ``"sphere"``, ``"digits"``, ``"patches"`` or ``"cifar10"``.
    image_shape : tuple of int or None
        Shape of one image in storage order — (8, 8) for digits, (3, 32, 32) (channels first)
        for the patches and CIFAR-10 — or None for synthetic data.
    indices : numpy.ndarray of int or None
        Rows of the source data set that were selected (None for synthetic data).
    classes : numpy.ndarray of int or None
        Class labels of the selected images (not the regression labels; None for synthetic data;
        for the patches, the index of the photograph in :data:`PATCH_SOURCES`).
    normalisation : str
        ``"sphere"`` (every row has norm √d) or ``"standardised"`` (patches only).
    """

    X: np.ndarray
    name: str
    image_shape: tuple[int, ...] | None = None
    indices: np.ndarray | None = None
    classes: np.ndarray | None = None
    normalisation: str = "sphere"

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def is_image(self) -> bool:
        return self.image_shape is not None

    def to_images(self, X: Any) -> np.ndarray:
        """Rows of X (any array on the host) as displayable images in [0, 1].

        Each image is min–max scaled on its own, which inverts the per-row centring and scaling
        of :func:`to_sphere` up to an affine map. Returns (n, H, W) for grey images and
        (n, H, W, 3) for colour ones.
        """
        if self.image_shape is None:
            raise RFTheoryError(f"data set {self.name!r} has no image shape")
        X = np.asarray(X, dtype=np.float64)
        imgs = X.reshape((X.shape[0],) + self.image_shape)
        if len(self.image_shape) == 3:  # channels first -> channels last
            imgs = np.moveaxis(imgs, 1, -1)
        axes = tuple(range(1, imgs.ndim))
        lo = imgs.min(axis=axes, keepdims=True)
        span = imgs.max(axis=axes, keepdims=True) - lo
        return (imgs - lo) / np.where(span > 0, span, 1.0)


def _check_count(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise RFTheoryError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _rng(seed: Any, stream: int) -> np.random.Generator:
    """The generator of ``stream`` from a SPEC 7 ``rng`` (an integer seed, a SeedSequence, a
    Generator): :func:`rftheory.seeding.generator`."""
    return generator(seed, stream)


def _seed_or_rng(rng: RNGLike, seed: Any) -> RNGLike:
    """``rng``, or the old keyword ``seed`` where it was given instead."""
    return rng_or_seed(rng, seed)


def to_sphere(X: Any, d: int | None = None, *, centre: bool = False,
              return_norms: bool = False) -> Any:
    """Rescale each row of X (or the vector X) onto the sphere of radius √d: x ↦ √d·x/‖x‖.

    The one projection onto the data model's sphere: data sets, the reconstruction's candidates
    and the claims' points all go through it.

    Parameters
    ----------
    X : array, shape (n, k) or (k,)
        Rows (or one point), in any array-API namespace; the result is in the same namespace.
        Integer arrays are converted to float64, floating ones keep their dtype.
    d : int, optional
        Squared radius (default: k, the length of a row).
    centre : bool
        Subtract each row's mean first (images: removes the brightness offset).
    return_norms : bool
        Also return ‖x‖ (after centring): shape (n, 1) for rows, a float for one point — what a
        chain rule through the projection needs.

    Returns
    -------
    array, or (array, norms)

    Raises
    ------
    ShapeError
        If a row is (numerically) zero — e.g. constant before centring: it has no direction on
        the sphere. "Numerically": ‖x‖ ≤ 1e-12·√k.

    Notes
    -----
    Rows' norms are ``vector_norm(X, axis=1)``; one point's norm is √(x·x) (a BLAS dot on numpy).
    These are exactly what numpy's ``np.linalg.norm`` computes in each case, which keeps every
    projected point bit-identical to earlier versions of this package.

    Examples
    --------
    >>> to_sphere(np.array([[3.0, 4.0]]), d=25)
    array([[3., 4.]])
    >>> to_sphere(np.array([1.0, 1.0, 1.0, 1.0]))
    array([1., 1., 1., 1.])
    """
    xp = namespace_of(X)  # array_namespace(X), with numpy's lookup cheap (a hot loop's retraction)
    if X.ndim not in (1, 2):
        raise ShapeError(f"to_sphere takes rows (n, d) or one point (d,), got shape {tuple(X.shape)}")
    host = type(X) is np.ndarray
    if not (host and X.dtype.kind == "f") and not xp.isdtype(X.dtype, "real floating"):
        X = xp.astype(X, xp.float64)
    k = X.shape[-1]
    d = k if d is None else d
    if centre:
        X = X - xp.mean(X, axis=-1, keepdims=True)
    tiny = 1e-12 * math.sqrt(k)  # a row this close to 0 relative to its scale has no direction
    if X.ndim == 1:
        norms = math.sqrt(float(X @ X))
        zero = norms <= tiny
    else:
        # On numpy, the call array_api_compat's vector_norm makes, without its axis handling.
        norms = (np.linalg.norm(X, axis=1, ord=2).reshape(X.shape[0], 1) if host
                 else xp.linalg.vector_norm(X, axis=1, keepdims=True))
        zero = bool(xp.any(norms <= tiny))
    if zero:
        raise ShapeError("a row is zero" + (" after centring (a constant row)" if centre else "")
                         + ": it has no direction on the sphere")
    out = X * (math.sqrt(d) / norms)
    return (out, norms) if return_norms else out


def tangent_basis(x: Any) -> np.ndarray:
    """Orthonormal basis (d, d − 1) of the tangent space x⊥ of the sphere at x (host float64).

    The columns of the Householder reflection H = I − 2wwᵀ/‖w‖² that maps ±e₁ to x/‖x‖, less
    its first: a fixed, deterministic basis, continuous in x away from the sign switch of
    x₁ (the sign is chosen so that w never cancels).

    Parameters
    ----------
    x : array_like, shape (d,)
        A non-zero point (any namespace; it is brought to the host).

    Returns
    -------
    numpy.ndarray, shape (d, d − 1)
        Orthonormal columns, each orthogonal to x.

    Raises
    ------
    ShapeError
        If x is not a non-zero vector.

    Notes
    -----
    Cost O(d²) (one outer product), no factorisation. A point whose squared norm under- or
    overflows is rescaled by its largest entry first. Accuracy: H is orthogonal to a few ulps
    (a Householder reflection with the non-cancelling sign), so BᵀB = I and Bᵀx = 0 hold to a
    small multiple of eps·√d (tested against ``scipy.linalg.null_space``, whose basis differs
    by a rotation of x⊥ but spans the same space: BBᵀ = I − xxᵀ/‖x‖²).

    Examples
    --------
    >>> B = tangent_basis(np.array([0.0, 0.0, 3.0]))
    >>> B.shape, bool(np.allclose(B.T @ B, np.eye(2))), bool(np.allclose(B[2], 0))
    ((3, 2), True, True)
    """
    x = np.asarray(to_host(x), dtype=np.float64)
    if x.ndim != 1 or not np.any(x):
        raise ShapeError("x must be a non-zero vector")
    with np.errstate(over="ignore", under="ignore"):  # handled below, no warning to show
        norm = np.linalg.norm(x)
    if not 0.0 < norm < math.inf:                    # x·x under- or overflowed: rescale first
        x = x / np.max(np.abs(x))
        norm = np.linalg.norm(x)
    u = x / norm
    w = u.copy()
    w[0] += 1.0 if u[0] >= 0.0 else -1.0            # H = I − 2wwᵀ/‖w‖² maps ±e₁ to u
    H = np.eye(x.shape[0]) - (2.0 / float(w @ w)) * np.outer(w, w)
    return H[:, 1:]


def sphere_points(n: int, d: int, rng: RNGLike = 0, *, seed: int | None = None) -> np.ndarray:
    """n points uniform on the sphere of radius √d in R^d (Gaussian rows, normalised).

    Parameters
    ----------
    n, d : int
        Points and dimension.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the points (SPEC 7, :func:`rftheory.seeding.generator`): an integer
        seed or a SeedSequence gives a stream of its own (labels of the same seed are
        independent); a Generator is drawn from as it is.
    seed : int, optional
        The old name of an integer ``rng``.

    Returns
    -------
    numpy.ndarray, shape (n, d), float64
        The points, each of norm √d.

    Examples
    --------
    >>> import numpy as np
    >>> X = sphere_points(3, 10, rng=0)
    >>> X.shape, bool(np.allclose(np.linalg.norm(X, axis=1), np.sqrt(10)))
    ((3, 10), True)
    >>> Y = sphere_points(3, 10, rng=np.random.default_rng(5))  # SPEC 7: a Generator
    >>> Y.shape
    (3, 10)
    """
    n, d = _check_count("n", n), _check_count("d", d)
    rng = _seed_or_rng(rng, seed)
    return to_sphere(_rng(rng, _STREAM_SPHERE).standard_normal((n, d)))


# The old name of sphere_points (deprecated: a ``*_data`` function loads a Dataset;
# ``load_dataset("sphere", n, d=d)`` is the loader of sphere data).
sphere_data = deprecated_alias(sphere_points, "sphere_data")


def gaussian_labels(n: int, rng: RNGLike = 0, *, seed: int | None = None) -> np.ndarray:
    """n i.i.d. N(0, 1) labels, shape (n,), float64.

    Parameters
    ----------
    n : int
        How many.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the labels (SPEC 7, :func:`rftheory.seeding.generator`): an integer
        seed or a SeedSequence gives a stream of its own; a Generator is drawn
        from as it is.
    seed : int, optional
        The old name of an integer ``rng``.

    Returns
    -------
    numpy.ndarray, shape (n,)
        The labels.
    """
    return _rng(_seed_or_rng(rng, seed), _STREAM_GAUSSIAN_LABELS).standard_normal(_check_count("n", n))


def sign_labels(n: int, rng: RNGLike = 0, *, seed: int | None = None) -> np.ndarray:
    """n i.i.d. uniform ±1 labels, shape (n,), float64.

    Parameters
    ----------
    n : int
        How many.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the labels (SPEC 7, :func:`rftheory.seeding.generator`): an integer
        seed or a SeedSequence gives a stream of its own; a Generator is drawn
        from as it is.
    seed : int, optional
        The old name of an integer ``rng``.

    Returns
    -------
    numpy.ndarray, shape (n,)
        The labels.
    """
    n = _check_count("n", n)
    return _rng(_seed_or_rng(rng, seed), _STREAM_SIGN_LABELS).choice(np.array([-1.0, 1.0]), size=n)


def _subset(total: int, n: int, seed: RNGLike, what: str) -> np.ndarray:
    if n > total:
        raise RFTheoryError(f"n = {n} exceeds the {total} images available in {what}")
    return np.sort(_rng(seed, _STREAM_SUBSET).choice(total, size=n, replace=False))


def digits_data(n: int, rng: RNGLike = 0, *, seed: int | None = None) -> Dataset:
    """A seeded subset of n of scikit-learn's 1797 8×8 handwritten digits (d = 64).

    Each image is centred (its mean pixel subtracted) and scaled to norm √64 = 8. The images ship
    inside scikit-learn (:func:`sklearn.datasets.load_digits`); nothing is downloaded.

    Parameters
    ----------
    n : int
        Images, at most 1797.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the subset (SPEC 7, :func:`rftheory.seeding.generator`): an integer
        seed or a SeedSequence gives a stream of its own; a Generator is drawn
        from as it is.
    seed : int, optional
        The old name of an integer ``rng``.

    Returns
    -------
    Dataset
        The images on the √64-sphere, with what is needed to draw them.
    """
    from sklearn.datasets import load_digits

    n = _check_count("n", n)
    digits = load_digits()
    idx = _subset(digits.data.shape[0], n, _seed_or_rng(rng, seed), "scikit-learn's digits")
    return Dataset(to_sphere(digits.data[idx], centre=True), "digits", (8, 8), idx,
                   np.asarray(digits.target[idx], dtype=np.int64))


def _cifar_batch_dir(directory: Path) -> Path:
    """The folder holding the batches: ``directory`` or its ``cifar-10-batches-py`` subfolder."""
    for candidate in (directory, directory / "cifar-10-batches-py"):
        if any((candidate / name).is_file() for name in _CIFAR_TRAIN + _CIFAR_TEST):
            return candidate
    raise DataNotFoundError(
        f"no CIFAR-10 python batches (data_batch_1..5, test_batch) in {directory}; pass the "
        "folder of your own extracted cifar-10-python archive (nothing is downloaded)")


class _ArrayOnlyUnpickler(pickle.Unpickler):
    """Unpickler that rebuilds numpy arrays and plain containers and refuses every other global,
    so a tampered batch file cannot run code (plain ``pickle.load`` would import and call
    whatever the file names)."""

    _ALLOWED = {
        ("numpy", "ndarray"), ("numpy", "dtype"),
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data file")


def _read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with open(path, "rb") as f:
            # The official CIFAR-10 python format is a pickle: read it with an unpickler that
            # only rebuilds arrays and containers.
            batch = _ArrayOnlyUnpickler(f, encoding="bytes").load()
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError) as exc:
        raise DataNotFoundError(f"cannot read CIFAR-10 batch {path}: {exc}") from None
    if not isinstance(batch, dict) or b"data" not in batch:
        raise DataNotFoundError(f"{path} is not a CIFAR-10 python batch (no b'data' entry)")
    data = np.asarray(batch[b"data"])
    if data.ndim != 2 or data.shape[1] != _CIFAR_D:
        raise DataNotFoundError(f"{path}: expected data of shape (N, {_CIFAR_D}), got {data.shape}")
    labels = np.asarray(batch.get(b"labels", np.full(data.shape[0], -1)), dtype=np.int64)
    return data, labels


def cifar10_data(directory: str | Path, n: int, rng: RNGLike = 0, *, split: str = "train",
                 seed: int | None = None) -> Dataset:
    """A seeded subset of n CIFAR-10 images read from the user's local python batches (d = 3072).

    Parameters
    ----------
    directory : str or Path
        Folder containing ``data_batch_1`` … ``data_batch_5`` and/or ``test_batch`` (the
        extracted ``cifar-10-python.tar.gz``), or its parent holding ``cifar-10-batches-py``.
        Only these local files are read; nothing is downloaded.
    n : int
        Number of images.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the subset (SPEC 7, :func:`rftheory.seeding.generator`).
    split : {"train", "test"}
        ``"train"`` draws from the training batches present in the folder (all five normally),
        ``"test"`` from ``test_batch``.
    seed : int, optional
        The old name of an integer ``rng``.

    Returns
    -------
    Dataset
        Images centred and scaled to norm √3072, ``image_shape`` (3, 32, 32) (channels first,
        the storage order of the batches).

    Raises
    ------
    DataNotFoundError
        If the folder or the batches are missing or not in the CIFAR-10 python format.

    Notes
    -----
    The batches are pickles (the official distribution format). They are read by an unpickler
    that rebuilds only numpy arrays and plain containers and refuses any other global, so a
    tampered file raises :class:`DataNotFoundError` instead of running code.
    """
    n = _check_count("n", n)
    names = {"train": _CIFAR_TRAIN, "test": _CIFAR_TEST}.get(split)
    if names is None:
        raise RFTheoryError(f"CIFAR-10 split must be 'train' or 'test', got {split!r}")
    directory = Path(directory).expanduser()
    if not directory.is_dir():
        raise DataNotFoundError(f"CIFAR-10 folder {directory} does not exist")
    folder = _cifar_batch_dir(directory)
    files = [folder / name for name in names if (folder / name).is_file()]
    if not files:
        raise DataNotFoundError(f"no CIFAR-10 {split} batches ({', '.join(names)}) in {folder}")
    data, labels = zip(*(_read_cifar_batch(f) for f in files))
    data, labels = np.concatenate(data), np.concatenate(labels)
    idx = _subset(data.shape[0], n, _seed_or_rng(rng, seed), f"the CIFAR-10 {split} batches in {folder}")
    return Dataset(to_sphere(data[idx], centre=True), "cifar10", (3, 32, 32), idx, labels[idx])

def _import_skimage() -> Any:
    """scikit-image's data and transform modules, or one clear line on how to install them."""
    try:
        import skimage.data
        import skimage.transform
    except ImportError:
        raise DataNotFoundError(
            "the 'patches' data set needs scikit-image (its bundled photographs): "
            "pip install 'rftheory[images]'") from None
    return skimage


def _load_photograph(skimage: Any, name: str) -> np.ndarray:
    if name == "motorcycle_left":
        return skimage.data.stereo_motorcycle()[0]
    return getattr(skimage.data, name)()


@functools.lru_cache(maxsize=1)
def _patch_pool() -> tuple[np.ndarray, np.ndarray]:
    """Every 32×32×3 tile of :data:`PATCH_SOURCES`, as (tiles (N, 3, 32, 32) float64 in 0–255,
    source index per tile), in source order, row-major within a photograph. Cached: it is a
    function of the installed scikit-image alone (~1 s to build)."""
    skimage = _import_skimage()
    tiles, sources = [], []
    for k, name in enumerate(PATCH_SOURCES):
        image = np.asarray(_load_photograph(skimage, name), dtype=np.float64)[..., :3]
        h, w = image.shape[:2]
        scale = _PATCH_SHORT_SIDE / min(h, w)
        small = skimage.transform.resize(image, (round(h * scale), round(w * scale)),
                                         anti_aliasing=True, preserve_range=True)
        rows, cols = small.shape[0] // _PATCH, small.shape[1] // _PATCH
        cut = small[:rows * _PATCH, :cols * _PATCH].reshape(rows, _PATCH, cols, _PATCH, 3)
        cut = cut.transpose(0, 2, 4, 1, 3).reshape(-1, 3, _PATCH, _PATCH)  # channels first
        keep = cut.reshape(cut.shape[0], -1).std(axis=1) >= _PATCH_MIN_STD
        tiles.append(cut[keep])
        sources.append(np.full(int(keep.sum()), k, dtype=np.int64))
    pool = np.concatenate(tiles)
    pool.setflags(write=False)
    return pool, np.concatenate(sources)


def patches_data(n: int, rng: RNGLike = 0, *, normalisation: str = "sphere",
                 seed: int | None = None) -> Dataset:
    """n distinct 32×32 colour patches of scikit-image's photographs (d = 3072, CIFAR-10's size).

    Parameters
    ----------
    n : int
        Number of patches (at most the pool's size, 240 with scikit-image 0.26).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the subset (SPEC 7, :func:`rftheory.seeding.generator`): n distinct tiles
        of the pool, drawn without replacement by the data subset stream (the same rule as
        :func:`digits_data`), returned in pool order.
    normalisation : {"sphere", "standardised"}
        ``"sphere"``: each patch centred (its mean pixel subtracted) and scaled to norm √3072, the
        theory's data model. ``"standardised"``: (x − m)/s with one scalar mean m and standard
        deviation s over every pixel of the whole pool, as the paper standardises CIFAR-10; a
        patch's row does not depend on which others are drawn, and the norms are √d only on
        average over the pool.
    seed : int, optional
        The old name of an integer ``rng``.

    Returns
    -------
    Dataset
        ``image_shape`` (3, 32, 32) (channels first, as CIFAR-10's batches), ``indices`` the tiles
        drawn, ``classes`` the index of each tile's photograph in :data:`PATCH_SOURCES`.

    Raises
    ------
    DataNotFoundError
        If scikit-image, which ships the photographs, is not installed
        (``pip install 'rftheory[images]'``).

    Notes
    -----
    The pool: each photograph of :data:`PATCH_SOURCES` (RGB; nothing is downloaded: the files
    ship inside the scikit-image wheel) is resized with anti-aliasing
    (:func:`skimage.transform.resize`) to a shorter side of 160 pixels and cut into
    non-overlapping 32×32 tiles, row-major; flat tiles (pixel standard deviation below 4 on the
    0–255 scale) would be dropped. The tiles' last bits depend on the scikit-image and scipy
    versions (the anti-aliasing filter); the selection and the normalisation are exact functions
    of the seed.
    """
    n = _check_count("n", n)
    if normalisation not in NORMALISATIONS:
        raise RFTheoryError(f"normalisation must be one of {', '.join(NORMALISATIONS)}, "
                            f"got {normalisation!r}")
    pool, sources = _patch_pool()
    idx = _subset(pool.shape[0], n, _seed_or_rng(rng, seed), "the patch pool of scikit-image's photographs")
    rows = pool[idx].reshape(n, -1)
    if normalisation == "sphere":
        X = to_sphere(rows, centre=True)
    else:
        X = (rows - pool.mean()) / pool.std()
    return Dataset(X, "patches", (3, _PATCH, _PATCH), idx, sources[idx], normalisation)


def pooled_patches_data(n: int, seed: int = 0, *, factor: int = 4) -> Dataset:
    """The patches of :func:`patches_data`, average-pooled ``factor``×``factor``: 8×8×3 = 192 by default.

    Parameters
    ----------
    n : int
        Number of patches (the same tiles as ``patches_data(n, seed)``).
    seed : int
        Seed of the subset, as :func:`patches_data`.
    factor : int
        Pooling side; must divide 32 (4 gives 8×8 images, d = 192).

    Returns
    -------
    Dataset
        Rows centred and scaled to norm √d (d = 3·(32/factor)²), ``image_shape``
        (3, 32/factor, 32/factor), ``indices`` and ``classes`` as :func:`patches_data`.

    Notes
    -----
    Average pooling is linear and maps a constant image to a constant image, so pooling the
    centred, scaled rows of :func:`patches_data` and normalising again equals pooling the raw tiles
    and normalising: the result is a function of the tiles alone.

    Examples
    --------
    >>> ds = pooled_patches_data(2, seed=0)  # doctest: +SKIP
    >>> ds.X.shape, ds.image_shape  # doctest: +SKIP
    ((2, 192), (3, 8, 8))
    """
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or factor < 1 \
            or _PATCH % factor:
        raise RFTheoryError(f"factor must be a positive divisor of {_PATCH}, got {factor!r}")
    ds = patches_data(n, seed)
    side = _PATCH // int(factor)
    imgs = ds.X.reshape(ds.n, 3, side, factor, side, factor).mean(axis=(3, 5))
    return Dataset(to_sphere(imgs.reshape(ds.n, -1), centre=True), "patches", (3, side, side),
                   ds.indices, ds.classes)


def _parse_dataset(spec: Any, d: int | None) -> tuple[str, str, int]:
    """``(name, argument, d)`` of a data set spec, with every check that needs no file."""
    if not isinstance(spec, str):
        raise RFTheoryError(f"data set must be a string, got {spec!r}")
    name, sep, arg = spec.partition(":")
    name = name.strip().lower()
    if d is not None:
        d = _check_count("d", d)
    if name == "sphere" and not sep:
        if d is None:
            raise RFTheoryError("sphere data needs the dimension d")
        return name, "", d
    fixed_d = {"digits": 64, "cifar10": _CIFAR_D, "patches": _CIFAR_D}.get(name)
    if fixed_d is None or (name == "digits" and sep) or (name == "cifar10" and not arg.strip()) \
            or (name == "patches" and sep and arg.strip().lower() not in NORMALISATIONS):
        raise RFTheoryError(f"unknown data set {spec!r}; use one of: {', '.join(DATASET_SPECS)}")
    if d is not None and d != fixed_d:
        raise RFTheoryError(f"{name} images have d = {fixed_d}, but d = {d} was requested")
    if name == "patches":
        return name, arg.strip().lower() or "sphere", fixed_d
    return name, arg.strip(), fixed_d


def dataset_dimension(spec: str, d: int | None = None) -> int:
    """The input dimension d of the data set ``spec`` (see :func:`load_dataset`), without loading it.

    Raises the errors :func:`load_dataset` raises for a bad ``spec`` or ``d``, except those that
    need the files (a missing CIFAR-10 folder).

    Parameters
    ----------
    spec : str
        ``"sphere"``, ``"digits"`` or ``"cifar10:DIR"``.
    d : int, optional
        The dimension asked for (required for ``sphere``).

    Returns
    -------
    int
        d.

    Examples
    --------
    >>> dataset_dimension("digits"), dataset_dimension("sphere", 20)
    (64, 20)
    """
    return _parse_dataset(spec, d)[2]


@keyword_only_after(2, ("d", "rng"))
def load_dataset(spec: str, n: int, *, d: int | None = None, rng: RNGLike = 0,
                 seed: int | None = None) -> Dataset:
    """Load a data set named by ``spec``: ``"sphere"``, ``"digits"``, ``"patches"`` or ``"cifar10:DIR"``.

    Parameters
    ----------
    spec : str
        ``"sphere"`` (uniform on the √d-sphere; needs ``d``), ``"digits"`` (scikit-learn's 8×8
        digits, d = 64), ``"patches"`` / ``"patches:standardised"`` (32×32 colour patches of
        scikit-image's photographs, d = 3072, on the sphere or standardised, see
        :func:`patches_data`; needs ``rftheory[images]``) or ``"cifar10:DIR"`` (CIFAR-10 training
        batches in the local folder DIR, d = 3072).
    n : int
        Number of training points.
    d : int, optional
        Input dimension. Required for ``sphere``; for image data it is fixed by the images and,
        if given, must agree. Keyword-only (by position: deprecated).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the points (sphere) or of the subset (images) (SPEC 7,
        :func:`rftheory.seeding.generator`): an integer seed or a SeedSequence gives a stream
        of its own; a Generator is drawn from as it is. Keyword-only (by position: deprecated).
    seed : int, optional
        The old name of an integer ``rng``.

    Returns
    -------
    Dataset
        ``X`` (n, d) on the √d-sphere and, for images, what is needed to draw them.
    """
    name, arg, d = _parse_dataset(spec, d)
    rng = _seed_or_rng(rng, seed)
    if name == "sphere":
        return Dataset(sphere_points(n, d, rng), "sphere")
    if name == "digits":
        return digits_data(n, rng)
    if name == "patches":
        return patches_data(n, rng, normalisation=arg)
    return cifar10_data(arg, n, rng)
