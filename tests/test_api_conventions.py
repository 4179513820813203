"""The conventions a numpy/scipy user expects (issue #28): SPEC 7 ``rng``, exceptions with the
fitting builtin, keyword-only arguments, numpy dtypes, one return type for data loaders, the
Hermite coefficients as an ndarray, the namespace read from the inputs, old spellings kept."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

from rftheory import data, errors, philox, seeding
from rftheory.errors import (ActivationError, BackendError, DataNotFoundError, HermiteOptionError,
                             InvalidTypeError, InvalidValueError, MemoryLimitError, NumericalError,
                             ResourceLimitError, RFTheoryError, ShapeError)

# -- exceptions ------------------------------------------------------------------------------

BUILTIN = {InvalidValueError: ValueError, ActivationError: ValueError, ShapeError: ValueError,
           HermiteOptionError: ValueError, NumericalError: ValueError,
           InvalidTypeError: TypeError, BackendError: TypeError,
           DataNotFoundError: FileNotFoundError, MemoryLimitError: MemoryError}


def test_the_base_class_is_not_a_value_error_and_each_kind_has_its_builtin():
    assert not issubclass(RFTheoryError, ValueError)
    assert not issubclass(ResourceLimitError, ValueError)
    assert not issubclass(MemoryLimitError, ValueError)  # `except ValueError` misses a refusal
    for cls, builtin in BUILTIN.items():
        assert issubclass(cls, RFTheoryError) and issubclass(cls, builtin), cls
    assert issubclass(BackendError, ValueError)  # as before: a device name is a value
    assert sorted(errors.__all__) == sorted({*map(lambda c: c.__name__, BUILTIN),
                                             "RFTheoryError", "ResourceLimitError"})


def test_raising_the_base_class_gives_a_value_error_and_pickles():
    err = RFTheoryError("bad")
    assert isinstance(err, InvalidValueError) and isinstance(err, ValueError) and str(err) == "bad"
    assert type(err).__name__ == "RFTheoryError"  # tracebacks name what was raised
    assert repr(err) == "RFTheoryError('bad')"
    for cls in (*BUILTIN, ResourceLimitError, RFTheoryError):
        again = pickle.loads(pickle.dumps(cls("message")))  # workers send errors back pickled
        assert type(again) is type(cls("message")) and str(again) == "message"


def test_a_memory_refusal_is_a_memory_error_not_a_value_error():
    from rftheory import budget

    need = budget.Memory("a job", 2.0**40, ())
    with pytest.raises(MemoryError) as info:
        budget.check(need, memory_limit=2**20)
    assert isinstance(info.value, MemoryLimitError) and isinstance(info.value, ResourceLimitError)
    assert not isinstance(info.value, ValueError)


def test_missing_data_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        data.cifar10_data(tmp_path / "nowhere", 3)
    assert isinstance(info.value, DataNotFoundError) and "does not exist" in str(info.value)


@pytest.mark.parametrize("call, kind", [
    (lambda: philox.philox_key(1.5), TypeError),
    (lambda: philox.philox_key("3"), TypeError),
    (lambda: philox.philox_key(-1), ValueError),
    (lambda: philox.standard_normal(0, 2, 3, out=np.empty((2, 3), dtype=np.int64)), TypeError),
    (lambda: philox.standard_normal(0, 2, 3, out=np.empty((3, 2))), ValueError),
    (lambda: philox.standard_normal(0, 2.5, 3), TypeError),
    (lambda: philox.standard_normal(0, 2, 3, scale_dim=2.0), TypeError),
    (lambda: philox.box_muller(np.zeros((2, 4), dtype=np.float64)), TypeError),
    (lambda: philox.box_muller(np.zeros((2, 3), dtype=np.uint64)), ValueError),
    (lambda: seeding.check_rng(1.0), TypeError),
    (lambda: seeding.check_rng(np.random.RandomState(0)), TypeError),
    (lambda: seeding.check_rng(-2), ValueError),
    (lambda: data.sphere_points(3, 4, rng="0"), TypeError),
])
def test_wrong_types_raise_type_errors_and_wrong_values_value_errors(call, kind):
    other = ValueError if kind is TypeError else TypeError
    with pytest.raises(kind) as info:
        call()
    assert isinstance(info.value, RFTheoryError) and not isinstance(info.value, other)


@pytest.mark.parametrize("argv, words", [
    (["kernel", "relu", "--d", "5", "--n", "2000", "--p", "100000", "--memory-limit", "1M",
      "--no-progress"], "memory"),
    (["reconstruct", "--data", "cifar10:/nonexistent/dir", "--n", "3", "--p", "10",
      "--no-progress"], "does not exist"),
    (["activation", "__import__('os')"], ""),
])
def test_the_cli_turns_every_refusal_into_one_line_and_status_2(argv, words):
    proc = subprocess.run([sys.executable, "-c",
                           "import sys; from rftheory.cli import main; sys.exit(main(sys.argv[1:]))",
                           *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in proc.stderr
    assert words in lines[0] and "out of memory" not in lines[0]


def test_the_cli_net_catches_every_error_class():
    # the CLI's net is `except Exception` filtered by RFTheoryError, OSError and MemoryError:
    # every class of rftheory.errors is one of them
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), (RFTheoryError, OSError, MemoryError))


# -- SPEC 7 rng ----------------------------------------------------------------------------------

def _draws():
    """Every public function of the package that draws (other than V), as f(rng) -> numbers."""
    from rftheory.collisions import collision_limit, collision_region_minimum
    from rftheory.features import RandomFeatures, train_min_norm
    from rftheory.reconstruct import reconstruct
    from rftheory.span_attack import span_attack
    from rftheory.spectral_init import spectral_init

    X = data.sphere_points(3, 4, 11)
    f = RandomFeatures("tanh", 4, 40, seed=1)
    theta = np.asarray(train_min_norm(f, X, data.gaussian_labels(3, 2)).theta)
    theta_k = np.asarray(train_min_norm(f, X, np.eye(3)).theta)  # rank n: the span attack works
    return {
        "sphere_points": lambda **r: data.sphere_points(4, 3, **r),
        "gaussian_labels": lambda **r: data.gaussian_labels(5, **r),
        "sign_labels": lambda **r: data.sign_labels(8, **r),
        "digits_data": lambda **r: data.digits_data(4, **r).X,
        "load_dataset sphere": lambda **r: data.load_dataset("sphere", 3, d=4, **r).X,
        "load_dataset digits": lambda **r: data.load_dataset("digits", 3, **r).indices,
        "span_attack": lambda **r: span_attack(f, theta_k, starts=2, maxiter=5, **r).ends,
        "collision_limit": lambda **r: collision_limit(f, X, theta, (3, 0, 0), starts=2,
                                                       **r).loss,
        "collision_region_minimum": lambda **r: collision_region_minimum(
            f, X, theta, (2, 1, 0), 0.3, random_starts=2, options={"maxiter": 3}, **r).losses,
        # the attack's initial candidates and hops (a few steps: the draw is what is tested)
        "reconstruct": lambda **r: reconstruct(f, theta, 3, max_steps=3, **r).X_hat,
        "reconstruct lbfgs": lambda **r: reconstruct(f, theta, 3, method="lbfgs", max_steps=3,
                                                     **r).X_hat,
        "spectral_init": lambda **r: spectral_init(f, theta, 3, **r).X,
    }


@pytest.fixture(scope="module")
def draws():
    return _draws()


NAMES = ["sphere_points", "gaussian_labels", "sign_labels", "digits_data", "load_dataset sphere",
         "load_dataset digits", "span_attack", "collision_limit", "collision_region_minimum",
         "reconstruct", "reconstruct lbfgs", "spectral_init"]


def test_the_list_of_drawing_functions_is_complete(draws):
    assert sorted(draws) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_rng_follows_spec7(draws, name):
    f = draws[name]
    same = lambda a, b: np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float),  # noqa: E731
                                       equal_nan=True)
    # an integer rng is the old integer seed, by keyword or (where it was) by position
    assert same(f(rng=3), f(seed=3))
    assert same(f(rng=np.int64(3)), f(rng=3))
    # a SeedSequence: reproducible, its own stream
    assert same(f(rng=np.random.SeedSequence(42)), f(rng=np.random.SeedSequence(42)))
    # a Generator: used as it is (same state, same numbers; it advances)
    g = np.random.default_rng(7)
    first = f(rng=g)
    assert same(first, f(rng=np.random.default_rng(7)))
    # both spellings at once is refused
    with pytest.raises(TypeError):
        f(rng=np.random.default_rng(1), seed=2)


@pytest.mark.parametrize("name", ["sphere_points", "gaussian_labels", "sign_labels",
                                  "digits_data", "load_dataset sphere", "span_attack",
                                  "reconstruct", "spectral_init"])
def test_different_randomness_gives_different_numbers(draws, name):
    # the rng really drives the draw (a test that could fail): other seed, other numbers;
    # a shared Generator advances between calls
    f = draws[name]
    assert not np.array_equal(f(rng=3), f(rng=4))
    assert not np.array_equal(f(rng=3), f(rng=np.random.SeedSequence(3)))
    g = np.random.default_rng(0)
    assert not np.array_equal(f(rng=g), f(rng=g))


def test_an_integer_rng_keeps_the_numbers_the_package_always_drew():
    # data streams: default_rng([seed, stream]) with the fixed stream tags
    x = np.random.default_rng([5, 2**40 + 1]).standard_normal((2, 3))
    np.testing.assert_array_equal(data.sphere_points(2, 3, 5), data.to_sphere(x))
    np.testing.assert_array_equal(data.gaussian_labels(4, 5),
                                  np.random.default_rng([5, 2**40 + 2]).standard_normal(4))


# -- keyword-only arguments, deprecations, old import paths --------------------------------------

def test_load_dataset_takes_d_and_rng_by_keyword_and_warns_by_position():
    new = data.load_dataset("sphere", 3, d=4, rng=2).X
    with pytest.warns(DeprecationWarning, match="by position"):
        old = data.load_dataset("sphere", 3, 4, 2).X
    np.testing.assert_array_equal(new, old)
    with pytest.raises(TypeError, match="multiple values"):
        data.load_dataset("sphere", 3, 4, d=4)


def test_sphere_data_is_a_deprecated_alias_with_the_same_numbers():
    with pytest.warns(DeprecationWarning, match="sphere_points"):
        old = data.sphere_data(3, 4, 1)
    np.testing.assert_array_equal(old, data.sphere_points(3, 4, 1))


def test_data_loaders_return_one_type():
    loaders = [data.load_dataset("sphere", 2, d=3), data.load_dataset("digits", 2),
               data.digits_data(2)]
    assert all(isinstance(ds, data.Dataset) for ds in loaders)
    assert isinstance(data.sphere_points(2, 3), np.ndarray)  # a sampler of points, not a loader


def test_old_import_paths_still_work():
    from rftheory import blocksum, cells, fit, output, philox_cupy, pipeline, reconstruction_figure
    from rftheory import features

    assert features.train_min_norm is fit.train_min_norm and features.BlockSum is blocksum.BlockSum
    assert features.TrainedModel is fit.TrainedModel and features.train_memory is fit.train_memory
    assert pipeline.law_cell is cells.law_cell and pipeline.cell_memory is cells.cell_memory
    assert pipeline.significant is output.significant
    assert pipeline.plot_reconstruction is reconstruction_figure.plot_reconstruction
    assert philox.cupy_fill is philox_cupy.cupy_fill
    with pytest.raises(AttributeError):
        pipeline.no_such_name  # noqa: B018


# -- dtypes, Hermite coefficients, namespaces ----------------------------------------------------

def test_testing_accepts_numpy_dtypes():
    from rftheory.testing import assert_hermite_coefficients, tolerance

    assert tolerance("quadrature_atol", np.float32) == tolerance("quadrature_atol", "float32")
    assert tolerance("quadrature_atol", np.dtype(np.float64)) == tolerance("quadrature_atol")
    assert tolerance("rho", "statistical") > 0
    with pytest.raises(TypeError):
        tolerance("quadrature_atol", 3.5)
    assert_hermite_coefficients("relu", {1: np.float32(0.5)}, dtype=np.float32)


def test_hermite_coefficients_are_an_ndarray_with_nan_where_unknown():
    import dataclasses

    from rftheory.hermite import hermite_coefficients

    h = hermite_coefficients("relu", order=4, method="exact")
    a = np.asarray(h)
    assert isinstance(h.coefficients, np.ndarray) and h.coefficients.dtype == np.float64
    np.testing.assert_array_equal(a, h.coefficients)
    assert a[1] == 0.5 and len(h) == 5 and not h.coefficients.flags.writeable
    assert str(h.exact[1]) == "1/2"  # the exact numbers, kept apart
    unknown = dataclasses.replace(h, values=h.values[:2] + (None,) + h.values[3:])
    assert np.isnan(unknown.coefficients[2]) and np.isnan(unknown.coefficients).sum() == 1


def test_weights_take_the_namespace_dtype_and_device_of_like():
    from rftheory.features import RandomFeatures

    rf = RandomFeatures("relu", d=3, p=5, seed=2)
    V32 = rf.weights(like=np.ones((2, 3), dtype=np.float32))
    assert V32.dtype == np.float32
    np.testing.assert_array_equal(V32, rf.weights(dtype=np.float32))  # V to the bit
    assert rf.weights().dtype == np.float64  # nothing says: numpy float64


def test_method_and_dps_are_keyword_only_and_warn_by_position():
    from rftheory.hermite import hermite_coefficients
    from rftheory.verdicts import activation_report

    new = hermite_coefficients("relu", 4, method="mpmath", dps=20)
    with pytest.warns(DeprecationWarning, match="method"):
        old = hermite_coefficients("relu", 4, "mpmath", dps=20)
    assert old.values == new.values
    with pytest.warns(DeprecationWarning, match="method, dps"):
        report = activation_report("tanh", 5, "mpmath", 20)
    assert report.method == "mpmath" and report.dps == 20
    with pytest.raises(TypeError, match="positional"):
        activation_report("tanh", 5, "mpmath", 20, 3.0)
