"""The default V cache derived from the memory available (issue #26)."""

from __future__ import annotations

import rftheory.features as features
from rftheory.features import V_CACHE_FLOOR, V_CACHE_FRACTION, default_v_cache_bytes


def test_default_v_cache_is_a_fraction_of_the_available_memory(monkeypatch):
    monkeypatch.setattr(features, "available_memory_bytes", lambda: 20 * 2**30)
    assert default_v_cache_bytes() == int(V_CACHE_FRACTION * 20 * 2**30) == 5 * 2**30
    # Never below the floor (the earlier fixed default), and the floor when memory is unknown.
    monkeypatch.setattr(features, "available_memory_bytes", lambda: 2**30)
    assert default_v_cache_bytes() == V_CACHE_FLOOR
    monkeypatch.setattr(features, "available_memory_bytes", lambda: None)
    assert default_v_cache_bytes() == V_CACHE_FLOOR


def test_available_memory_is_read():
    available = features.available_memory_bytes()
    assert available is None or available > 0


def test_cli_default_uses_the_derived_cache(monkeypatch):
    from rftheory.commands import reconstruct as command

    assert command.DEFAULT_V_CACHE_MB is None   # resolved at run time, not at import
