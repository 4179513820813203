"""The headline table at d = 3072 (rftheory.claims.headline), at sizes a test can afford."""

from __future__ import annotations

import json

import pytest

from rftheory.claims import headline, run_claim
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


def test_cells_this_machine_cannot_run_are_skipped_with_the_reason(tmp_path):
    # a time limit no cell meets: every cell is refused by rftheory.budget before it starts
    result = headline.run(TINY.replace(time_limit=1e-9))
    assert [r["status"] for r in result["rows"]] == ["skipped", "skipped"]
    assert all("time_limit" in r["reason"] and r["estimated_seconds"] > 0 for r in result["rows"])
    v = result["verdict"]
    assert not v["complete"] and not v["supported"] and v["cells_run"] == 0
    assert "skipped" in headline.summary(result)
    headline.plot(result, tmp_path / "h")  # the originals alone still draw


def test_the_default_sizes_are_the_issues():
    assert headline.FULL.n == 10 and headline.LARGE.n == 100 and headline.LARGE.device == "gpu"
    assert headline.FULL.multiples == ("n", "dn", "10dn")
    assert set(headline.FULL.activations) == {"relu", "relu+tanh"}
    with pytest.raises(RFTheoryError, match="multiples"):
        TINY.replace(multiples=("3dn",))


def test_large_selects_the_larger_run_and_excludes_quick(tmp_path):
    # every cell refused by the time limit: the size plumbing, not a run
    result = run_claim("headline", large=True, config=TINY.replace(time_limit=1e-9),
                       out_dir=tmp_path, figures=False)
    assert result["size"] == "large" and result["quick"] is False
    with pytest.raises(RFTheoryError, match="--quick or --large"):
        run_claim("headline", quick=True, large=True, out_dir=tmp_path)
    from rftheory.cli import main

    assert main(["verify", "headline", "--quick", "--large"]) == 2  # one line, exit status 2
