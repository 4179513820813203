import sys

import numpy as np
import pytest

from rftheory.runtime import retain_freed_memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_allocator_setting_applies_on_linux_and_is_idempotent():
    assert retain_freed_memory() is True
    assert retain_freed_memory() is True
    # Allocation keeps working (and freeing) after the change.
    arrays = [np.ones(2**20) for _ in range(8)]
    del arrays
    assert float(np.ones(2**22).sum()) == 2.0**22


def test_is_a_noop_off_linux(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert retain_freed_memory() is False
