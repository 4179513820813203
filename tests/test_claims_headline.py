"""The headline table at d = 3072 (rftheory.claims.headline), at sizes a test can afford."""

from __future__ import annotations

import json

import pytest

from rftheory.claims import headline, run_claim
from rftheory.deadline import Deadline
from rftheory.errors import RFTheoryError

pytest.importorskip("skimage", reason="the headline's images need rftheory[images]")

#: n = 2 images, the p = n and p = dn (6144) columns, 3 optimiser steps: the table's plumbing
#: (fit, reconstruct, every ρ, images, verdict), not the attack's success.
TINY = headline.Config(n=2, multiples=("n", "dn"), activations=("relu+tanh",), max_steps=3)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("headline")
    return run_claim("headline", config=TINY, out_dir=out), out


def test_the_table_reports_fit_and_every_rho(tiny):
    result, out = tiny
    assert result["d"] == 3072 and result["n"] == 2 and result["data"] == "patches"
    rows = {r["multiple"]: r for r in result["rows"]}
    assert set(rows) == {"n", "dn"} and all(r["status"] == "ok" for r in rows.values())
    assert rows["n"]["p"] == 2 and rows["dn"]["p"] == 6144
    # p >= n: the interpolator fits its labels (residual at rounding level, ~1e-15 measured)
    assert all(r["train_residual"] < headline.TRAIN_TOL for r in rows.values())
    for r in rows.values():  # ρ_abs ≤ ρ_sign_invariant ≤ ρ_signed pointwise (rftheory.metrics)
        assert r["rho"]["abs"] <= r["rho"]["sign_invariant"] + 1e-12 <= r["rho"]["signed"] + 2e-12
    # p = n: n̂ = p candidates span R^p, the loss is 0 at the start — nothing is recovered
    # (random candidates sit at ρ ≈ 0.8–1.1 from natural patches)
    assert rows["n"]["steps"] == 0 and rows["n"]["rho"]["abs"] > 0.5
    saved = json.loads((out / "headline.json").read_text())
    assert saved["rows"][1]["rho"] == rows["dn"]["rho"]
    assert (out / "headline.png").read_bytes()[:4] == b"\x89PNG"
    table = headline.summary(saved)
    assert "6144" in table and "≈ 0.5" in table  # the paper's value sits next to ours
    # the fitted threshold of the runs (rftheory.thresholds), in units of dn: with 3 steps
    # nothing is recovered, so it is not located — and says so instead of a number
    th = saved["thresholds"]["relu+tanh"]
    assert th["runs"] == 2 and th["status"] == "above_grid" and not th["located"]
    assert "fitted p*_data/(dn) = — (above_grid" in table


def test_cells_that_cannot_fit_in_memory_are_skipped_with_the_reason(tmp_path):
    # a memory limit no cell meets: every cell is refused by rftheory.budget before it starts
    result = headline.run(TINY, memory_limit="1K")
    assert [r["status"] for r in result["rows"]] == ["skipped", "skipped"]
    assert all("of memory" in r["reason"] and "over the limit of 1 KiB" in r["reason"]
               for r in result["rows"])
    v = result["verdict"]
    assert not v["complete"] and not v["supported"] and v["cells_run"] == 0
    assert "skipped" in headline.summary(result)
    headline.plot(result, tmp_path / "h")  # the originals alone still draw


def test_no_cell_is_refused_on_time_and_a_deadline_stops_the_table():
    """The default table runs every column (no estimate of time decides anything): its cells
    all fit this machine's memory test limit of 16 GiB; a deadline already passed leaves every
    cell not run, and the result says so (and is not supported)."""
    for multiple in headline.FULL.multiples:
        line, skip = headline._memory(headline.FULL, 3072,
                                      headline.MULTIPLES[multiple](3072, headline.FULL.n), "16G")
        assert skip is None, line
    result = headline.run(TINY, deadline=Deadline.after(0.0))
    assert [r["status"] for r in result["rows"]] == ["not_run", "not_run"]
    assert result["stop_reason"] == "time_limit"
    assert not result["verdict"]["complete"] and not result["verdict"]["supported"]
    assert "not run" in headline.summary(result)


def test_the_default_sizes_are_the_issues():
    assert headline.FULL.n == 10 and headline.LARGE.n == 100 and headline.LARGE.device == "gpu"
    assert headline.FULL.multiples == ("n", "dn", "10dn")
    assert set(headline.FULL.activations) == {"relu", "relu+tanh"}
    with pytest.raises(RFTheoryError, match="multiples"):
        TINY.replace(multiples=("3dn",))


def test_large_selects_the_larger_run_and_excludes_quick(tmp_path):
    # a deadline already passed: the size plumbing, not a run
    result = run_claim("headline", large=True, config=TINY, deadline=Deadline.after(0.0),
                       out_dir=tmp_path, figures=False)
    assert result["size"] == "large" and result["quick"] is False
    with pytest.raises(RFTheoryError, match="--quick or --large"):
        run_claim("headline", quick=True, large=True, out_dir=tmp_path)
    from rftheory.cli import main

    assert main(["verify", "headline", "--quick", "--large"]) == 2  # one line, exit status 2
