"""Sweep files' p expressions, the ``law`` cell kind, and a store's export."""

from __future__ import annotations

import gzip

import pytest

from rftheory.sweep import (SweepSpecError, SweepStoreError, export_store, parse_spec,
                            read_export, run_sweep)
from rftheory.sweep.spec import p_from_expression


def test_p_expressions_give_integers_per_cell():
    assert [p_from_expression(t, d=10, n=4) for t in ("n-1", "n", "0.5n", "0.25dn", "10dn",
                                                        "2n+3", "1.5 dn")] == [3, 4, 2, 10, 400, 11, 60]
    spec = parse_spec({"sweep": {"cell": "law", "seeds": 1},
                       "grid": {"d": [5, 10], "n": [4], "p": ["n-1", "n", "1dn", 20]},
                       "fixed": {"activation": "relu"}})
    # "1dn" and 20 are the same cell at d = 5: one cell, and p is stored as an integer
    ps = [(c.params["d"], c.params["p"]) for c in spec.cells()]
    assert ps == [(5, 3), (5, 4), (5, 20), (10, 3), (10, 4), (10, 40), (10, 20)]


@pytest.mark.parametrize("value, message", [
    ("n**2", "expression"), ("__import__('os')", "expression"), ("n-9", "p < 1"), ("dn-", "expression"),
])
def test_bad_p_expressions_are_refused_before_running(value, message):
    with pytest.raises(SweepSpecError, match=message):
        parse_spec({"sweep": {"cell": "law", "seeds": 1}, "grid": {"d": [5], "n": [4],
                                                                   "p": [value]},
                    "fixed": {"activation": "relu"}})


def test_law_cells_are_label_fits_below_n(tmp_path):
    spec = parse_spec({"sweep": {"cell": "law", "seeds": 1},
                       "grid": {"p": ["n-1", "10dn"]},
                       "fixed": {"activation": "relu+tanh", "d": 3, "n": 4, "max_steps": 500}})
    run_sweep(spec, tmp_path / "s", workers=1)
    rows = {r["params"]["p"]: r for r in read_export_of(tmp_path)}
    assert rows[3]["result"]["kind"] == "label_fit" and rows[3]["result"]["train_residual"] > 1e-6
    assert rows[120]["result"]["kind"] == "reconstruction"
    assert rows[120]["result"]["rho_abs"] < 0.1  # 10·dn: recovered (measured ~1e-5)


def read_export_of(tmp_path):
    export_store(tmp_path / "s", tmp_path / "e.jsonl.gz")
    return read_export(tmp_path / "e.jsonl.gz")


def test_export_is_deterministic_and_verified(tmp_path):
    spec = parse_spec({"sweep": {"cell": "label_fit", "seeds": 2}, "grid": {"p": [3, 8]},
                       "fixed": {"activation": "relu", "d": 3, "n": 4}})
    run_sweep(spec, tmp_path / "s", workers=1)
    a = export_store(tmp_path / "s", tmp_path / "a.jsonl.gz")
    b = export_store(tmp_path / "s", tmp_path / "b.jsonl.gz")
    assert a["cells"] == 4 and (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    cells = read_export(tmp_path / "a.jsonl.gz")
    assert sorted(c["params"]["p"] for c in cells) == [3, 3, 8, 8]
    # an edited line (its parameters no longer match its key) and a truncated file are refused
    text = gzip.decompress((tmp_path / "a.jsonl.gz").read_bytes()).decode()
    (tmp_path / "edited.jsonl.gz").write_bytes(gzip.compress(text.replace('"p":8', '"p":9', 1).encode()))
    with pytest.raises(SweepStoreError, match="damaged"):
        read_export(tmp_path / "edited.jsonl.gz")
    lines = text.splitlines()
    (tmp_path / "short.jsonl.gz").write_bytes(gzip.compress("\n".join(lines[:-1]).encode()))
    with pytest.raises(SweepStoreError, match="truncated"):
        read_export(tmp_path / "short.jsonl.gz")
    with pytest.raises(SweepStoreError, match="not found"):
        read_export(tmp_path / "missing.jsonl.gz")
