"""The two-layer claim (rftheory.claims.twolayer_law) on a tiny grid."""

from __future__ import annotations

import json

import pytest

from rftheory.claims import twolayer_law
from rftheory.errors import RFTheoryError
from rftheory.output import to_jsonable


def test_tiny_sweep_result_summary_and_figure(tmp_path):
    config = twolayer_law.Config(ratios=(1.0, 4.0), seeds=1, setups=("rf_gd",),
                                 datasets=("sphere",), max_steps=300)
    result = twolayer_law.run(config, workers=1)
    saved = json.loads(json.dumps(to_jsonable(result)))  # the result must be plain JSON
    cases = {c["ratio_nominal"]: c for c in saved["cases"]}
    assert cases[4.0]["p_last"] == 4 * 8 * 8 and cases[4.0]["k"] == 1
    # First layer frozen: ΔW₂ in the span up to rounding (measured ≈ 1e-30).
    assert cases[4.0]["span_residual"] < 1e-20
    # At p = dn the unknowns outnumber the equations: far from the data (measured ρ ≈ 0.6).
    # At p = 4dn the RF control is recovered (measured ρ ≈ 4e-5).
    assert cases[1.0]["rho"] > 0.1 and cases[4.0]["rho"] < 0.01
    verdict = saved["verdict"]["per_setup"]["sphere/rf_gd"]
    assert verdict["law_holds"] and verdict["threshold"] == 4.0
    row = twolayer_law.summary(saved).splitlines()[3].split()
    assert row[:3] == ["sphere", "rf_gd", "1"] and row[3] == f"{cases[1.0]['rho']:.1e}"
    assert row[-2:] == ["4", "holds"]
    paths = twolayer_law.plot(saved, tmp_path / "twolayer_law")
    assert paths == [tmp_path / "twolayer_law.png", tmp_path / "twolayer_law.pdf"]
    assert all(p.exists() for p in paths)


def test_refuses_unknown_setup():
    with pytest.raises(RFTheoryError, match="unknown setup"):
        twolayer_law.Config(setups=("hinge",))
    with pytest.raises(RFTheoryError, match="unknown data set"):
        twolayer_law.QUICK.replace(datasets=("mnist",))
