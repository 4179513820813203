"""Shared fixtures and backend helpers for the test suite."""

from __future__ import annotations

import contextlib
import importlib
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@contextlib.contextmanager
def benchmark_module(name: str):
    """Import ``benchmarks/<name>.py`` (which imports its siblings) with benchmarks/ on the path."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


def sphere_points(n: int, d: int, seed: int) -> np.ndarray:
    """n Gaussian points rescaled to the sphere of radius √d (the paper's data model)."""
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X * (np.sqrt(d) / np.linalg.norm(X, axis=1, keepdims=True))


@pytest.fixture
def xp_strict():
    """The strict array-API namespace: any numpy-only call in a backend-agnostic path fails."""
    return pytest.importorskip("array_api_strict")


def cupy_or_skip():
    """Return CuPy when a CUDA device is usable, else skip the calling test."""
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except Exception as exc:  # CUDA driver missing or broken
        pytest.skip(f"no usable CUDA device: {exc}")
    return cp


def stored_rows(path: Path) -> int:
    """Rows of a sweep store's cells table (0 before it exists), read without disturbing it."""
    if not path.is_file():
        return 0
    try:
        # closed at once: a connection left to the garbage collector keeps this process's view of
        # the WAL index, so the reader after the kill could not rebuild it and would miss a cell
        # the killed writer had committed (see sweep._recover_wal_if_no_writer)
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True,
                                                timeout=5)) as db:
            return db.execute("SELECT count(*) FROM cells").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not created yet
        return 0
