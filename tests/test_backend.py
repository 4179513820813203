"""rftheory.backend: device names and host copies."""

import numpy as np
import pytest

from rftheory.backend import namespace, to_host
from rftheory.errors import BackendError


def test_cpu_is_numpy_and_unknown_devices_are_refused():
    assert namespace("cpu") is np
    with pytest.raises(BackendError, match="device must be one of"):
        namespace("tpu")


def test_gpu_without_cuda_is_a_clear_error():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            pytest.skip("a CUDA device is present")
    except Exception:  # noqa: BLE001 - no CuPy or no driver: the case under test
        pass
    with pytest.raises(BackendError, match="gpu"):
        namespace("gpu")


def test_to_host_from_any_namespace(xp_strict):
    a = np.arange(6.0).reshape(2, 3)
    assert to_host(a) is a  # numpy stays as it is
    host = to_host(xp_strict.asarray(a))
    assert isinstance(host, np.ndarray) and np.array_equal(host, a)
    assert to_host(np.arange(3), np.float64).dtype == np.float64


def test_namespace_of_is_array_namespace():
    import array_api_strict
    from array_api_compat import array_namespace

    from rftheory.backend import namespace_of

    x = np.zeros((2, 3))
    assert namespace_of(x) is array_namespace(x)
    assert namespace_of(x, x[0]) is array_namespace(x, x[0])
    y = array_api_strict.asarray([1.0])
    assert namespace_of(y) is array_namespace(y)
    with pytest.raises(TypeError):
        namespace_of(x, y)   # mixed namespaces: array_namespace's error
    with pytest.raises(TypeError):
        namespace_of([1.0])
