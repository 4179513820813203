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
