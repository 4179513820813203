"""The law of data reconstruction check (rftheory.claims.law) and ``rftheory demo``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rftheory.cli import main as cli_main
from rftheory.errors import RFTheoryError
from rftheory.claims import law

#: A tiny sweep: d = 4, n = 6, p ∈ {3, 5, 6, 240} (n/2, n − 1, n, 10·dn), two seeds. p = 10·dn is
#: deep in the success regime (every seed of the default sweep succeeds there) and p = n deep in
#: the failure regime; 1500 steps is ~3× what the p = 10·dn runs need (measured: 100–700).
TINY = law.Config(grid=((4, 6),), ratios=(10.0,), seeds=2, max_steps=1500, resolution=None)


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


def test_data_threshold_is_the_fitted_curve_of_every_run():
    success = np.array([[0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 1], [0, 0, 1, 1]], dtype=bool)
    p = [10, 20, 40, 80]
    a = law.data_threshold(p, success)
    assert a == law.data_threshold(p, success)  # deterministic: no resampling
    assert a["success_probability"] == [0.0, 0.25, 0.75, 1.0]
    lo, hi = a["interval"]
    assert a["status"] == "ok" and lo < a["p_star"] < hi
    assert 20 < a["p_star"] < 40  # the curve crosses 1/2 between 0.25 (p = 20) and 0.75 (p = 40)
    assert a["crossing_status"] == "ok" and 20 < a["crossing"] < 40  # the secondary rule
    # every seed fails at 20 and succeeds at 40: a step, never a zero-width interval
    step = law.data_threshold(p, np.array([[0, 0, 1, 1]] * 3, dtype=bool))
    assert step["status"] == "step" and step["gap"] == [20.0, 40.0]
    assert step["interval"][0] <= 20 * (1 + 1e-4) and step["interval"][1] >= 40 * (1 - 1e-4)
    none = law.data_threshold(p, np.zeros((3, 4), dtype=bool))
    assert none["status"] == "above_grid" and not none["located"] and math.isnan(none["p_star"])


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
    # every seed fails at p = n and succeeds at 10·dn: a step, located in the gap between them
    assert th["status"] == "step" and th["located"] and th["gap"] == [n, 10 * d * n]
    assert n < th["p_star"] < 10 * d * n and th["interval"][0] < th["interval"][1]
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
    assert row.split()[3] == f"{g['data']['abs']['p_star_over_dn']:.3f}"
    paths = law.plot(saved, tmp_path / "law")
    assert paths == [tmp_path / "law.png", tmp_path / "law.pdf",
                     tmp_path / "law_collapse.png", tmp_path / "law_collapse.pdf"]
    for png, pdf in (paths[:2], paths[2:]):
        assert png.read_bytes()[:4] == b"\x89PNG" and pdf.read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("changes, message", [
    ({"seeds": 1}, "seeds"), ({"grid": ((4, 1),)}, "grid"), ({"ratios": (0.0,)}, "ratios"),
    ({"success_variant": "nope"}, "success_variant"),
    ({"seed": -1}, "seed"),
])
def test_bad_configurations_are_refused(changes, message):
    with pytest.raises(RFTheoryError, match=message):
        TINY.replace(**changes)


def test_run_claim_saves_the_configured_run(tmp_path):
    from rftheory.claims import run_claim

    small = TINY.replace(grid=((3, 4),))
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
    ("relu+tanh", "law_grid", 4 * 3 * 16 * 5),   # d × n × p × seeds, no p collides
    ("relu", "law_grid_relu", 4 * 2 * 16 * 3),   # compared: n ∈ {4, 8}, 3 seeds
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
                        compare_seeds=2, compare_grid=((3, 4), (6, 4)), sweep=True,
                        resolution=None)
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
                   compare_grid=((3, 4), (6, 8)), sweep=True, resolution=None)
    with pytest.raises(RFTheoryError, match="not one of"):
        law.sweep_document(config, "tanh")


#: A product grid (d ∈ {3, 6}, n = 4) small enough to run twice in a test.
SWEPT = law.Config(grid=((3, 4), (6, 4)), ratios=(10.0,), seeds=2, max_steps=600,
                   compare=("relu",), sweep=True, resolution=None)


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
    assert g["label"]["p_star"] == 4 and g["data"]["abs"]["located"]
    figures = law.plot(redrawn, tmp_path / "law")
    assert tmp_path / "law_collapse.png" in figures and tmp_path / "law_relu_collapse.png" in figures


def test_an_incomplete_grid_is_refused(tmp_path):
    result = law.run(TINY, workers=1)
    with pytest.raises(RFTheoryError, match="missing or failed"):
        law.analyse(result["cells"][:-1], TINY)


def _synthetic_cells(p_star, *, ds=(10, 20, 40, 80), ns=(4, 8, 16), seeds=5, sigma=0.05,
                     noise=0.0, seed=0, around=False):
    """Reconstruction cells whose success follows a probit curve at p_star(d, n)·(1 + noise), on
    the law's ratios of dn (or, ``around``, the same ratios of p_star/1.12: a grid that brackets
    a threshold that does not scale with dn)."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    cells = []
    for d in ds:
        for n in ns:
            star = p_star(d, n) * (1 + noise * rng.standard_normal())
            unit = p_star(d, n) / 1.12 if around else d * n
            for r in law.TRANSITION_RATIOS + (0.5, 3.0):
                p = max(n, int(round(r * unit)))
                for s in range(seeds):
                    ok = rng.random() < stats.norm.cdf(math.log(p / star) / sigma)
                    rho = 1e-6 if ok else 0.4
                    cells.append({"kind": "reconstruction", "d": d, "n": n, "p": p,
                                  "seed_index": s, "rho_abs": rho, "rho_signed": rho,
                                  "rho_sign_invariant": rho, "final_loss": 1e-14 if ok else 1e-6,
                                  "converged": ok, "steps": 10, "seconds": 0.0})
    return cells


def _synthetic_per_grid(cells):
    """per_grid entries (the claim's own per-(d, n) analysis) of synthetic cells."""
    out = []
    for d, n in sorted({(c["d"], c["n"]) for c in cells}):
        here = [c for c in cells if (c["d"], c["n"]) == (d, n)]
        ps = sorted({c["p"] for c in here})
        seeds = 1 + max(c["seed_index"] for c in here)
        ok = np.zeros((seeds, len(ps)), dtype=bool)
        for c in here:
            ok[c["seed_index"], ps.index(c["p"])] = c["rho_abs"] < law.RHO_SUCCESS
        th = law.data_threshold(ps, ok)
        th["p_star_over_dn"] = th["p_star"] / (d * n)
        th["p_star_over_n"] = th["p_star"] / n
        out.append({"d": d, "n": n, "data": {"abs": th},
                    "label": {"p_star": float(n), "p_below": float(n - 1)},
                    "rows": [{"p": p, "success_abs": float(ok[:, j].mean())}
                             for j, p in enumerate(ps)]})
    return out


@pytest.mark.parametrize("law_of, noise, true_model", [
    (lambda d, n: 1.12 * d * n, 0.05, "dn"),      # the law, 5 % noise in each (d, n)'s p*
    (lambda d, n: 1.12 * 30 * n, 0.0, "n"),       # p* ∝ n
    (lambda d, n: 1.12 * 8 * d, 0.0, "d"),        # p* ∝ d
])
def test_the_collapse_verdict_tells_the_law_from_its_alternatives(law_of, noise, true_model):
    # 10 synthetic sweeps of the large grid's shape (5 seeds, the law's ratios, here of the true
    # p* so that every threshold is located) per law. The verdict's intervals are 95 % ones, so
    # under p* ∝ dn both exponents' intervals hold 1 in about 0.95² ≈ 90 % of draws (binomial
    # s.d. over 10 draws ~9 %; fewer than 6 of 10 has probability 0.2 %); under p* ∝ n or ∝ d one exponent sits
    # at 0, many standard errors from 1, so never.
    supported, best = 0, []
    for draw in range(10):
        cells = _synthetic_cells(law_of, noise=noise, seed=100 + draw, around=True)
        per_grid = _synthetic_per_grid(cells)
        fit = law.scaling_fit(per_grid)
        assert fit["points"] == 12
        verdict = law._verdict(per_grid, "abs", fit)
        assert verdict["collapse_in_dn"] == law.collapse_in_dn(fit)
        supported += verdict["supported"]
        best.append(fit["best_model"])
        if true_model != "dn":  # the true alternative beats p* ∝ dn by far
            assert fit["models"][true_model]["aic"] < fit["models"]["dn"]["aic"] - 10
    if true_model == "dn":
        assert supported >= 6
        assert all(b in ("dn", "free") for b in best)
    else:
        assert supported == 0
        assert all(b in (true_model, "free") for b in best)


def test_the_default_grids_vary_d_and_n_by_four_and_resolve_the_transition():
    for config in (law.FULL, law.QUICK, law.LARGE):
        ds, ns = [d for d, _ in config.grid], [n for _, n in config.grid]
        assert max(ds) / min(ds) >= 4 and max(ns) / min(ns) >= 4
        near = [r for r in config.ratios if 0.9 <= r <= 1.5]
        assert len(near) >= 6  # steps of 0.1 or finer between 0.9 and 1.5


def test_the_pooled_threshold_is_the_common_constant():
    cells = _synthetic_cells(lambda d, n: 1.12 * d * n, seeds=3, seed=2)
    th = law.pooled_threshold(cells)
    lo, hi = th["interval_over_dn"]
    assert th["status"] == "ok" and lo < 1.12 < hi and hi - lo < 0.05


def test_scaling_fit_recovers_the_exponents_of_synthetic_thresholds():
    cells = _synthetic_cells(lambda d, n: 1.2 * d * n, seeds=4, seed=3)
    fit = law.scaling_fit(_synthetic_per_grid(cells))
    for k in ("d", "n"):
        assert fit["exponents"][k] == pytest.approx(1.0, abs=0.05)
        lo, hi = fit["intervals"][k]
        assert lo < 1.0 < hi and hi - lo < 0.2
    assert fit["prefactor"] == pytest.approx(1.2, rel=0.05)
    assert fit["label_exponents"] == pytest.approx({"d": 0.0, "n": 1.0}, abs=1e-12)
    # one d: the exponent of d is not identifiable, so no fit is made
    one_d = _synthetic_per_grid(_synthetic_cells(lambda d, n: d * n, ds=(10,), seed=4))
    assert math.isnan(law.scaling_fit(one_d)["exponents"]["d"])
    assert not law.collapse_in_dn(law.scaling_fit(one_d))


def test_the_shipped_exports_are_the_large_grid_and_redraw_its_result():
    # examples/ keeps the finished --large run (paper_notes/law.md), made on the grid before the
    # resolving ratios (LARGE_EXPORTED): every cell of it is there and succeeded, so the note's
    # tables and figures can be redrawn without a rerun.
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    exports = [examples / "law_grid_cells.jsonl.gz", examples / "law_grid_relu_cells.jsonl.gz"]
    result = law.result_from_export(exports)
    assert result["ratios"] == list(law.LARGE_EXPORTED.ratios)
    assert len(result["cells"]) == 780 + 312
    assert [tuple(g) for g in result["grid"]] == list(law.LARGE.grid)
    assert result["verdict"]["label_threshold_is_n"]
    relu = result["by_activation"]["relu"]
    assert [(g["d"], g["n"]) for g in relu["per_grid"]] == list(law.LARGE.grid_of("relu"))
    # the point of the grid: p*_data scales with dn — its spread over (d, n) is far below that
    # of p*_data / n (d varies by 8)
    v = result["verdict"]
    assert v["spread_p_star_over_dn"] < 2 < 4 < v["spread_p_star_over_n"]
    # every failure is classified, and the counts add up to the reconstructions
    kinds = result["failure_kinds"]["abs"]
    assert sum(kinds.values()) == sum(c["kind"] == "reconstruction" for c in result["cells"]
                                      if c["activation"] == "relu+tanh")


# ---------------------------------------------------------------------------------------------
# The sequential design (Config.resolution): extra runs where p*_data is not yet resolved
# ---------------------------------------------------------------------------------------------

def _probit_point(task, p_star_over_dn=1.1, sigma=0.05):
    """A stand-in for run_point: a seeded Bernoulli outcome of a probit curve in log p (no
    optimiser), so that the design's bookkeeping is tested in milliseconds."""
    from scipy import stats

    d, n, p = task["d"], task["n"], task["p"]
    rng = np.random.default_rng([task["seed"], p, d, n])
    base = {"activation": task["activation"], "d": d, "n": n, "p": p, "seed": task["seed"],
            "seed_index": task["seed_index"], "p_over_dn": p / (d * n), "p_over_n": p / n,
            "train_residual": 1e-15 if p >= n else 0.3, "seconds": 0.0}
    if p < n:
        return base | {"kind": "label_fit", "rho_abs": math.nan, "rho_signed": math.nan,
                       "rho_sign_invariant": math.nan}
    ok = rng.random() < stats.norm.cdf(math.log(p / (p_star_over_dn * d * n)) / sigma)
    rho = 1e-6 if ok else 0.4
    return base | {"kind": "reconstruction", "rho_abs": rho, "rho_signed": rho,
                   "rho_sign_invariant": rho, "final_loss": 1e-14 if ok else 1e-6,
                   "converged": ok, "steps": 10, "stop_reason": "tolerance"}


@pytest.mark.parametrize("criterion", ["width", "sides"])
def test_the_sequential_design_resolves_every_threshold_and_is_reproducible(monkeypatch,
                                                                            criterion):
    from rftheory.claims import _law_sweep

    monkeypatch.setattr(_law_sweep, "run_point", _probit_point)
    config = law.Config(grid=((8, 3), (32, 3), (8, 12)), ratios=law.TRANSITION_RATIOS, seeds=2,
                        resolution=0.049, max_added=200, criterion=criterion)
    result = law.run(config, workers=1)
    assert result["criterion"] == criterion
    for g in result["per_grid"]:
        th = g["data"]["abs"]
        lo, hi = th["interval_over_dn"]
        if criterion == "sides":
            # both sides within 0.049·dn, so the interval is narrower than 0.1·dn
            assert th["p_star_over_dn"] - lo <= 0.049 and hi - th["p_star_over_dn"] <= 0.049
        else:  # the interval at most 0.098·dn wide, whatever its skew
            assert hi - lo <= 0.098
            assert g["design"]["widest_interval_over_dn"] <= 0.098
        assert result["profile_level"] == 0.98  # the sequential design's calibrated level
        assert g["design"]["resolved"] and g["design"]["added"] > 0
        assert g["design"]["runs"] == sum(r["runs"] for r in g["rows"])
        # the truth is 1.1·dn: a 95 % interval (after the design) misses it rarely
        assert lo - 0.02 < 1.1 < hi + 0.02
    # every added run draws a fresh problem: a seed index used at no other p of its (d, n)
    # (a seed's runs at neighbouring p share data, labels, nested V and start — near copies)
    keys = [(c["d"], c["n"], c["p"], c["seed"]) for c in result["cells"]]
    assert len(keys) == len(set(keys))
    for d, n in config.grid:
        added = [c["seed_index"] for c in result["cells"] if (c["d"], c["n"]) == (d, n)
                 and c["kind"] == "reconstruction" and c.get("design_round", 0) > 0]
        assert added and len(added) == len(set(added)) and min(added) >= config.seeds
    # deterministic given the base seed, and analysable again from its own cells
    again = law.run(config, workers=1)
    assert again["per_grid"] == result["per_grid"]
    assert law.analyse(result["cells"], config)["per_grid"] == result["per_grid"]
    # a fixed design (no resolution) of the same cells ignores the added runs
    fixed = law.analyse(result["cells"], config.replace(resolution=None))
    assert all(g["design"]["added"] == 0 for g in fixed["per_grid"])


def test_the_design_runs_each_grid_point_on_its_own_and_gives_the_lockstep_cells(monkeypatch):
    # The rounds of each (d, n) start as soon as its previous round is in (runtime.run_stages),
    # not when every (d, n)'s round is: the cells, their order and their rounds must be what
    # running the rounds in lockstep gives, whatever the workers.
    from rftheory.claims import _law_sweep
    from rftheory.thresholds import followup_points

    monkeypatch.setattr(_law_sweep, "run_point", _probit_point)
    config = law.Config(grid=((8, 3), (32, 3), (8, 12)), ratios=law.TRANSITION_RATIOS, seeds=2,
                        resolution=0.049, max_added=40)
    first = [_probit_point({"activation": "relu+tanh", "d": d, "n": n, "p": p, "seed": s,
                            "seed_index": s})
             for d, n in config.grid for p in law.p_values(d, n, config.ratios) for s in (0, 1)]
    # The lockstep reference, written out: every (d, n)'s next points from the same runs.
    runs = {dn: [c for c in first if (c["d"], c["n"]) == dn and c["kind"] == "reconstruction"]
            for dn in config.grid}
    extra, reference, round_ = dict.fromkeys(config.grid, 0), [], 0
    while True:
        round_ += 1
        batch = []
        for (d, n), mine in runs.items():
            pts = set()
            for v in law.DESIGN_VARIANTS:
                pts |= set(followup_points([c["p"] for c in mine],
                                           [c[f"rho_{v}"] < law.RHO_SUCCESS for c in mine],
                                           resolution=0.049, unit=d * n,
                                           level=law.profile_level(config),
                                           criterion=config.criterion))
            fresh = 1 + max(c["seed_index"] for c in mine)
            for i, p in enumerate(sorted(pts)[:config.max_added - extra[(d, n)]], start=fresh):
                batch.append(_probit_point({"activation": "relu+tanh", "d": d, "n": n, "p": p,
                                            "seed": i, "seed_index": i}) | {"design_round": round_})
                extra[(d, n)] += 1
        if not batch:
            break
        for c in batch:
            runs[(c["d"], c["n"])].append(c)
        reference += batch
    assert round_ > 3 and len(set(c["design_round"] for c in reference)) == round_ - 1
    for workers in (1, 2):
        added = _law_sweep.follow_up(first, config, rho_success=law.RHO_SUCCESS,
                                     level=law.profile_level(config),
                                     variants=law.DESIGN_VARIANTS, workers=workers,
                                     progress=None)
        assert added == reference


def test_the_sequential_design_stops_at_its_cap(monkeypatch):
    from rftheory.claims import _law_sweep

    monkeypatch.setattr(_law_sweep, "run_point", _probit_point)
    config = law.Config(grid=((8, 3),), ratios=law.TRANSITION_RATIOS, seeds=2,
                        resolution=0.001, max_added=7)  # unreachable: 0.001·dn
    g = law.run(config, workers=1)["per_grid"][0]
    assert g["design"]["added"] == 7 and g["design"]["resolved"] is False


@pytest.mark.parametrize("changes", [{"resolution": 0.0}, {"resolution": "x"},
                                     {"resolution": 0.05, "sweep": True}, {"max_added": -1},
                                     {"criterion": "both"}, {"criterion": None}])
def test_bad_sequential_designs_are_refused(changes):
    with pytest.raises(RFTheoryError, match="resolution|max_added|criterion"):
        law.Config(**changes)


def test_a_partial_analysis_names_the_missing_cells_and_fits_the_rest(tiny_result):
    cells = [c for c in tiny_result["cells"] if not (c["p"] == 240 and c["seed_index"] == 1)]
    with pytest.raises(RFTheoryError, match="1 of the 8 cells"):
        law.analyse(cells, TINY)
    part = law.analyse(cells, TINY, partial=True)
    assert part["missing"] == {"cells": 1, "of": 8, "failed": 0,
                               "by_grid": {"relu+tanh d=4 n=6": 1}}
    assert part["complete"] is False and part["verdict"]["supported"] is False
    (g,) = part["per_grid"]
    assert g["design"]["runs"] == 3 and g["data"]["abs"]["located"]  # 2 at p = n, 1 at 10·dn
    assert law.summary(part).startswith("PARTIAL: 1 of the 8 cells of the grid are missing")
    # no verdict line from part of a grid: neither SUPPORTED nor NOT SUPPORTED is printed
    last = law.summary(part).splitlines()[-1]
    assert last.startswith("no verdict: 1 cells") and "SUPPORTED" not in law.summary(part)
    whole = law.analyse(tiny_result["cells"], TINY, partial=True)
    assert whole["complete"] is True and whole["missing"]["cells"] == 0
    assert whole["per_grid"] == tiny_result["per_grid"]
    assert "verdict (relu+tanh)" in law.summary(whole).splitlines()[-1]


def test_run_stages_stops_at_the_deadline_and_names_what_did_not_run():
    from functools import partial

    from rftheory.deadline import Deadline
    from rftheory.runtime import TimeLimitReached, run_stages

    calls = [[partial(int, "1"), partial(int, "2")], [partial(int, "3")]]
    with pytest.raises(TimeLimitReached) as info:
        run_stages(calls, lambda g, r: [], workers=1, deadline=Deadline.after(0.0))
    assert info.value.finished == [] and len(info.value.not_run) == 3
    assert run_stages(calls, lambda g, r: [], workers=2) == [[[1, 2]], [[3]]]


def test_cells_of_two_code_versions_are_named_in_the_summary(tiny_result):
    # cells read from a sweep store or an export carry the code version that stored them
    cells = [dict(c, code_version="1+src.a" if i % 2 else "1+src.b")
             for i, c in enumerate(tiny_result["cells"])]
    mixed = law.analyse(cells, TINY)
    assert mixed["code_versions"] == ["1+src.a", "1+src.b"]
    assert "2 versions of the code (1+src.a, 1+src.b;" in law.summary(mixed)
    one = law.analyse([dict(c, code_version="1+src.a") for c in tiny_result["cells"]], TINY)
    assert one["code_versions"] == ["1+src.a"] and "versions of the code" not in law.summary(one)
    assert law.analyse(tiny_result["cells"], TINY)["code_versions"] == []  # in memory: none


def test_the_module_entry_point_reads_an_export_and_refuses_bad_input_in_one_line(tmp_path,
                                                                                   capsys):
    # python -m rftheory.claims.law --from-export FILE --steps-curve D [--steps-ratios ...]
    examples = Path(__file__).resolve().parents[1] / "examples"
    rerun = str(examples / "law_grid_rerun_cells.jsonl.gz")
    assert law.main(["--from-export", rerun, "--steps-curve", "80", "--steps-ratios",
                     "1.3,1.5", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1.3·dn: 15 runs" in out and (tmp_path / "law_steps_d80.json").exists()
    for argv, message in [
            (["--steps-curve", "80"], "no reconstruction at d = 80, p/(dn) = 1.25"),  # not there
            (["--steps-curve", "80", "--steps-ratios", "x"], "--steps-ratios must be"),
            (["--steps-curve", "80", "--steps-ratios", "-1"], "--steps-ratios must be")]:
        assert law.main(["--from-export", rerun, *argv, "--out", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0] and err[0].startswith("python -m")
    assert law.main(["--from-export", str(tmp_path / "missing.jsonl.gz"),
                     "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error" in err[0]
