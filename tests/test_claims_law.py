"""The law of data reconstruction check (rftheory.claims.law) and ``rftheory demo``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rftheory.cli import main as cli_main
from rftheory.errors import RFTheoryError
from rftheory.claims import law

#: A tiny sweep: d = 4, n = 6, p ∈ {3, 5, 6, 240} (n/2, n − 1, n, 10·dn), two seeds. p = 10·dn is
#: deep in the success regime (every seed of the default sweep succeeds there) and p = n deep in
#: the failure regime; 1500 steps is ~3× what the p = 10·dn runs need (measured: 100–700).
TINY = law.Config(grid=((4, 6),), ratios=(10.0,), seeds=2, max_steps=1500, resamples=200)


@pytest.fixture(scope="module")
def tiny_result():
    return law.run(TINY, workers=1)


def test_crossing_interpolates_in_log_p():
    # success 0 at p = 10, 1 at p = 1000: the 1/2 crossing is the geometric midpoint, 100.
    p_star, status = law.crossing([10, 1000], [0.0, 1.0])
    assert status == "ok"
    assert p_star == pytest.approx(100.0, rel=1e-12)  # exact formula, rounding only
    # The crossing after the *last* dip below 1/2 counts (a late failure resets the threshold).
    p_star, _ = law.crossing([1, 10, 100, 1000], [0.0, 1.0, 0.0, 1.0])
    assert p_star == pytest.approx(math.sqrt(100 * 1000), rel=1e-12)
    assert law.crossing([1, 10], [0.75, 1.0]) == (1.0, "below_grid")
    p_star, status = law.crossing([1, 10], [0.0, 0.25])
    assert status == "above_grid" and math.isnan(p_star)


def test_label_threshold_brackets_the_first_fitting_p():
    residual = np.array([[0.5, 0.1, 1e-14, 1e-13], [0.4, 1e-3, 1e-15, 1e-14]])
    th = law.label_threshold([5, 9, 10, 20], residual)
    assert th["p_star"] == 10 and th["p_below"] == 9
    never = law.label_threshold([5, 9], residual[:, :2])
    assert math.isnan(never["p_star"])


def test_data_threshold_bootstrap_is_seeded_and_brackets_the_estimate():
    success = np.array([[0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 1], [0, 0, 1, 1]], dtype=bool)
    p = [10, 20, 40, 80]
    a = law.data_threshold(p, success, rng=np.random.default_rng(1), resamples=500)
    b = law.data_threshold(p, success, rng=np.random.default_rng(1), resamples=500)
    assert a == b
    assert a["success_probability"] == [0.0, 0.25, 0.75, 1.0]
    lo, hi = a["interval"]
    assert lo <= a["p_star"] <= hi
    assert 20 < a["p_star"] < 40  # P crosses 1/2 between 0.25 (p = 20) and 0.75 (p = 40)


def test_p_values_include_n_minus_one_and_n():
    assert law.p_values(5, 10, (0.05, 1.0, 10.0)) == [2, 5, 9, 10, 50, 500]


def test_tiny_sweep_separates_label_and_data_thresholds(tiny_result):
    (g,) = tiny_result["per_grid"]
    n, d = g["n"], g["d"]
    # Label fitting switches on exactly at p = n.
    assert g["label"]["p_star"] == n and g["label"]["p_below"] == n - 1
    rows = {row["p"]: row for row in g["rows"]}
    # At p = n labels fit but the data are not recovered: failed runs sit at ρ_abs ≈ 0.4–0.65
    # (random points on the sphere), so 0.2 leaves a wide margin.
    assert rows[n]["success_abs"] == 0.0
    assert rows[n]["median_rho_abs"] > 0.2
    assert rows[n]["median_rho_signed"] > 0.5
    # At p = 10·dn both seeds recover the data; successful runs measure ρ ≈ 1e-5–1e-3 (the loss
    # tolerance 1e-10 bounds them), so 0.01 is a loose bound.
    top = rows[10 * d * n]
    assert top["success_abs"] == 1.0 and top["success_signed"] == 1.0
    assert top["median_rho_signed"] < 0.01
    th = g["data"]["abs"]
    assert th["status"] == "ok" and n < th["p_star"] < 10 * d * n
    v = tiny_result["verdict"]
    assert v["label_threshold_is_n"] and v["fails_at_p_equal_n"] and v["succeeds_at_largest_ratio"]
    # Cells below p = n are label fits only; every cell at p >= n has all three ρ.
    for cell in tiny_result["cells"]:
        assert (cell["kind"] == "label_fit") == (cell["p"] < n)
        if cell["kind"] == "reconstruction":
            assert cell["rho_abs"] <= cell["rho_sign_invariant"] + 1e-12 <= cell["rho_signed"] + 2e-12


def test_result_is_json_and_the_summary_reports_its_numbers(tiny_result, tmp_path):
    from rftheory.output import to_jsonable

    saved = json.loads(json.dumps(to_jsonable(tiny_result)))
    (g,) = saved["per_grid"]
    assert g["data"]["abs"]["p_star"] == tiny_result["per_grid"][0]["data"]["abs"]["p_star"]
    assert len(saved["cells"]) == 2 * 4  # two seeds × p ∈ {3, 5, 6, 240}
    # The summary is drawn from the numbers: the table row of (d, n) carries its thresholds.
    row = next(line for line in law.summary(saved).splitlines() if line.split()[:2] == ["4", "6"])
    assert row.split()[2] == f"{g['label']['p_star_over_n']:.2f}" == "1.00"
    assert row.split()[3] == f"{g['data']['abs']['p_star_over_dn']:.2f}"
    paths = law.plot(saved, tmp_path / "law")
    assert paths == [tmp_path / "law.png", tmp_path / "law.pdf",
                     tmp_path / "law_collapse.png", tmp_path / "law_collapse.pdf"]
    for png, pdf in (paths[:2], paths[2:]):
        assert png.read_bytes()[:4] == b"\x89PNG" and pdf.read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("changes, message", [
    ({"seeds": 1}, "seeds"), ({"grid": ((4, 1),)}, "grid"), ({"ratios": (0.0,)}, "ratios"),
    ({"success_variant": "nope"}, "success_variant"), ({"resamples": 0}, "resamples"),
    ({"seed": -1}, "seed"),
])
def test_bad_configurations_are_refused(changes, message):
    with pytest.raises(RFTheoryError, match=message):
        TINY.replace(**changes)


def test_run_claim_saves_the_configured_run(tmp_path):
    from rftheory.claims import run_claim

    small = TINY.replace(grid=((3, 4),), resamples=50)
    result = run_claim("law", config=small, seed=5, out_dir=tmp_path, figures=False)
    saved = json.loads((tmp_path / "law.json").read_text())
    assert saved["seed"] == saved["base_seed"] == 5 and saved["quick"] is False
    assert sorted({c["seed"] for c in saved["cells"]}) == [5, 6]  # seed + seed index
    assert saved["per_grid"][0]["label"]["p_star"] == 4 == result["per_grid"][0]["label"]["p_star"]


def test_demo_cli_writes_json_and_figures(tmp_path, monkeypatch, capsys):
    # The real default takes minutes and the CLI takes no configuration, so this one test swaps
    # the default for the tiny one: the plumbing (seed, files, JSON) is the same at any size.
    monkeypatch.setattr(law, "FULL", TINY)
    status = cli_main(["demo", "--json", "--out", str(tmp_path), "--seed", "3"])
    assert status == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["claim"] == "law" and payload["seed"] == 3 and payload["quick"] is False
    assert json.loads((tmp_path / "law.json").read_text())["per_grid"] == payload["per_grid"]
    assert payload["figures"][:2] == [str(tmp_path / "law.png"), str(tmp_path / "law.pdf")]
    assert payload["per_grid"][0]["label"]["p_star"] == 6


# ---------------------------------------------------------------------------------------------
# --large: the grid through the sweep machinery, its export, the scaling fit
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("activation, stem, count", [
    ("relu+tanh", "law_grid", 4 * 3 * 13 * 5),   # d × n × p × seeds, no p collides
    ("relu", "law_grid_relu", 4 * 2 * 13 * 3),   # compared: n ∈ {4, 8}, 3 seeds
])
def test_large_is_the_example_sweep_files(activation, stem, count):
    from pathlib import Path

    from rftheory.sweep import load_spec, parse_spec

    example = Path(__file__).resolve().parents[1] / "examples" / f"{stem}.toml"
    keys = {c.key for c in load_spec(example).cells()}
    assert keys == {c.key for c in parse_spec(law.sweep_document(law.LARGE, activation)).cells()}
    assert len(keys) == count
    assert law.LARGE.sweep and law.LARGE.compare == ("relu",) and law.LARGE.seeds >= 5
    assert law.LARGE.seeds_of("relu") >= 3  # the floor for the compared activation


def test_compared_activation_has_its_own_seeds_grid_and_store():
    config = law.Config(grid=((3, 4), (6, 4), (3, 8), (6, 8)), seeds=3, compare=("relu",),
                        compare_seeds=2, compare_grid=((3, 4), (6, 4)), sweep=True)
    assert config.grid_of("relu") == ((3, 4), (6, 4)) and config.seeds_of("relu") == 2
    assert config.grid_of("relu+tanh") == config.grid and config.seeds_of("relu+tanh") == 3
    assert law.sweep_dir(config, "relu") != law.sweep_dir(config, "relu+tanh")
    doc = law.sweep_document(config, "relu")
    assert doc["grid"]["activation"] == ["relu"] and doc["grid"]["seed"] == [0, 1]
    with pytest.raises(RFTheoryError, match="subset"):
        law.Config(grid=((3, 4),), compare=("relu",), compare_grid=((5, 4),))
    with pytest.raises(RFTheoryError, match="seeds"):
        law.Config(compare=("relu",), compare_seeds=1)
    with pytest.raises(RFTheoryError, match="product"):
        law.Config(grid=((3, 4), (6, 4), (3, 8), (6, 8)), compare=("relu",),
                   compare_grid=((3, 4), (6, 8)), sweep=True)
    with pytest.raises(RFTheoryError, match="not one of"):
        law.sweep_document(config, "tanh")


#: A product grid (d ∈ {3, 6}, n = 4) small enough to run twice in a test.
SWEPT = law.Config(grid=((3, 4), (6, 4)), ratios=(10.0,), seeds=2, max_steps=600, resamples=100,
                   compare=("relu",), sweep=True)


def test_sweep_backed_run_resumes_and_its_export_gives_the_same_result(tmp_path):
    from rftheory.sweep import export_store

    first = law.run(SWEPT, workers=1, out_dir=tmp_path)
    # 2 activations × 2 d × p ∈ {2, 3, 4, 10·dn} × 2 seeds, one store per activation; a
    # second run computes nothing
    assert len(first["cells"]) == 2 * 2 * 4 * 2
    lines = []
    again = law.run(SWEPT, workers=1, out_dir=tmp_path, progress=lines.append)
    assert sum("0 computed" in line for line in lines) == 2
    assert again["per_grid"] == first["per_grid"] and again["fits"] == first["fits"]
    exports = []
    for activation in SWEPT.activations:
        exports.append(tmp_path / f"{activation}.jsonl.gz")
        done = export_store(tmp_path / law.sweep_dir(SWEPT, activation), exports[-1])
        assert done["cells"] == len(first["cells"]) // 2 and done["errors"] == 0
    redrawn = law.result_from_export(exports, SWEPT)
    assert redrawn["per_grid"] == first["per_grid"]
    # without a config the exports are read as LARGE's grid at the (d, n) they hold: these
    # cells have other ratios and seeds, so the missing ones are named instead of a wrong
    # analysis
    with pytest.raises(RFTheoryError, match="missing or failed"):
        law.result_from_export(exports)
    assert redrawn["by_activation"] == first["by_activation"]
    # the verdict's export alone: no comparison, the same verdict
    alone = law.result_from_export(exports[0], SWEPT.replace(compare=()))
    assert alone["per_grid"] == first["per_grid"] and alone["by_activation"] == {}
    # the cells are the in-memory run's: one cell function, the same numbers
    memory = law.run(SWEPT.replace(sweep=False), workers=1)

    def untimed(per_grid):  # every number but the cells' wall times
        return [{k: v for k, v in g.items() if k != "seconds"} for g in per_grid]

    assert untimed(memory["per_grid"]) == untimed(first["per_grid"])
    g = first["per_grid"][0]
    assert g["label"]["p_star"] == 4 and g["data"]["abs"]["status"] == "ok"
    figures = law.plot(redrawn, tmp_path / "law")
    assert tmp_path / "law_collapse.png" in figures and tmp_path / "law_relu_collapse.png" in figures


def test_an_incomplete_grid_is_refused(tmp_path):
    result = law.run(TINY, workers=1)
    with pytest.raises(RFTheoryError, match="missing or failed"):
        law.analyse(result["cells"][:-1], TINY)


def _synthetic_grid(p_star, ds=(10, 20, 40, 80), ns=(4, 8, 16)):
    """per_grid entries whose p*_data is p_star(d, n), with a narrow bootstrap around it."""
    rng = np.random.default_rng(0)
    grid = []
    for d in ds:
        for n in ns:
            star = p_star(d, n)
            draws = star * np.exp(rng.normal(0, 0.05, size=400))
            th = {"p_star": star, "status": "ok", "draws": draws}
            grid.append({"d": d, "n": n, "data": {"abs": th},
                         "label": {"p_star": float(n)}})
    return grid


def test_scaling_fit_recovers_the_exponents_of_synthetic_thresholds():
    fit = law.scaling_fit(_synthetic_grid(lambda d, n: 1.8 * d * n))
    # exact data: least squares returns the exponents and prefactor to rounding
    assert fit["exponents"]["d"] == pytest.approx(1.0, abs=1e-12)
    assert fit["exponents"]["n"] == pytest.approx(1.0, abs=1e-12)
    assert fit["prefactor"] == pytest.approx(1.8, rel=1e-12)
    assert fit["label_exponents"] == pytest.approx({"d": 0.0, "n": 1.0}, abs=1e-12)
    lo, hi = fit["bootstrap"]["d"]
    # 5 % noise in log p* over 12 points: the interval is narrow and holds the truth
    assert lo < 1.0 < hi and hi - lo < 0.2
    only_n = law.scaling_fit(_synthetic_grid(lambda d, n: 50.0 * n))
    assert only_n["exponents"]["d"] == pytest.approx(0.0, abs=1e-12)
    # one d: the exponent of d is not identifiable, so no fit is made
    assert law.scaling_fit(_synthetic_grid(lambda d, n: d * n, ds=(10,)))["points"] == 3
    assert math.isnan(law.scaling_fit(_synthetic_grid(lambda d, n: d * n, ds=(10,)))["exponents"]["d"])


def test_the_shipped_exports_are_the_large_grid_and_redraw_its_result():
    # examples/ keeps the finished --large run (paper_notes/law.md): every cell of LARGE is
    # there and succeeded, so the note's tables and figures can be redrawn without a rerun; a
    # change of LARGE (or of the cell's keys) without a rerun fails here.
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    exports = [examples / "law_grid_cells.jsonl.gz", examples / "law_grid_relu_cells.jsonl.gz"]
    result = law.result_from_export(exports, law.LARGE.replace(resamples=200))
    assert len(result["cells"]) == 780 + 312
    assert [tuple(g) for g in result["grid"]] == list(law.LARGE.grid)
    assert result["verdict"]["label_threshold_is_n"] and result["verdict"]["collapse_in_dn"]
    relu = result["by_activation"]["relu"]
    assert [(g["d"], g["n"]) for g in relu["per_grid"]] == list(law.LARGE.grid_of("relu"))
    # the point of the grid: p*_data scales with dn — its spread over (d, n) is far below that
    # of p*_data / n (d varies by 8)
    v = result["verdict"]
    assert v["spread_p_star_over_dn"] < 2 < 4 < v["spread_p_star_over_n"]
