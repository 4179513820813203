"""Tests of the report card (rftheory.report) and ``rftheory report``.

The default suite runs a tiny size (every section, seconds per card) on a few activations that
exercise the verdicts' branches — one that passes every condition, a user expression, an affine
one (fails non-linearity), a step (not Lipschitz), an even one (signs lost) — and the command's
output and errors. The whole registry at ``--quick`` size is the slow sweep.
"""

from __future__ import annotations

import json
import math

import pytest

from rftheory.activations import ACTIVATIONS
from rftheory.thresholds import p_values
from rftheory.cli import main
from rftheory.errors import ResourceLimitError, RFTheoryError
from rftheory.output import to_jsonable
from rftheory.report import (DEFAULT, QUICK, SIZES, ActivationCard, CardSize, activation_card,
                             card_estimate, card_numbers, card_stem, card_table, plot_card)

#: Every section at the smallest size that still has a slope (3 p) and a law (2 ratios): ~2 s.
TINY = QUICK.replace(name="tiny", order=8, kernel_d=4, kernel_n=6, kernel_p=(32, 64, 128),
                     kernel_reps=1, mc_points=9, mc_p=512, law_d=2, law_n=3,
                     law_ratios=(1.0, 8.0), law_seeds=1, max_steps=200)

_cards: dict[str, ActivationCard] = {}


def tiny_card(activation: str) -> ActivationCard:
    """One tiny card per activation for the whole module (they are deterministic)."""
    if activation not in _cards:
        _cards[activation] = activation_card(activation, TINY, workers=1)
    return _cards[activation]


def check_card(card: ActivationCard, size: CardSize) -> None:
    """What every card must hold, whatever the activation."""
    h = card.hermite
    assert h.order == size.order and len(h.coefficients) == size.order + 1
    assert all(e >= 0 for e in h.errors)
    assert set(card.verdicts) == {"lipschitz", "nonlinearity", "parity", "sign_identifiability"}
    # the Monte Carlo K(t) agrees with the series within its standard error and the bound
    assert len(card.kernel.t) == size.mc_points and card.kernel.t[0] == pytest.approx(1.0)
    assert card.kernel.max_z < 6.0
    c = card.concentration
    assert c["p"] == list(size.kernel_p) and isinstance(c["slope"], float)
    # the Hermite bound is a lower bound on λ_min(K) (to the kernel's own error bound)
    assert c["lambda_min_kernel"] + c["kernel_error_bound"] + 1e-12 >= c["hermite_bound_k0"]
    law = card.law
    assert [pt.p for pt in law.points] == sorted(pt.p for pt in law.points)
    assert len(law.cells) == len(law.points) * size.law_seeds
    for pt in law.points:
        if pt.p < size.law_n:
            assert pt.success_abs is None
        else:
            assert 0.0 <= pt.success_abs <= 1.0 and 0 <= pt.flipped <= pt.recovered
    assert card.sign.recovered == law.recovered and card.sign.flipped == law.flipped
    assert card.cost["seconds"]["total"] > 0
    assert card.cost["estimate"]["peak_bytes"] > 0
    text = json.dumps(to_jsonable(card), allow_nan=False)  # strict JSON
    assert json.loads(text)["activation"] == card.activation
    assert card.activation in card_table(card)


def test_sizes_are_checked_and_replaced():
    assert SIZES == {"quick": QUICK, "default": DEFAULT, "full": SIZES["full"]}
    assert QUICK.replace(law_seeds=5).name == "custom"
    assert QUICK.replace(law_seeds=5).law_seeds == 5
    for bad in ({"law_n": 1}, {"kernel_p": (128,)}, {"kernel_p": (256, 128)}, {"order": 2},
                {"law_ratios": (0.0, 1.0)}, {"max_steps": 0}, {"time_budget": -1.0},
                {"law_seeds": True}):
        with pytest.raises(RFTheoryError):
            QUICK.replace(**bad)


def test_a_passing_activation_has_the_expected_numbers():
    card = tiny_card("relu+tanh")
    check_card(card, TINY)
    v = card.verdicts
    assert v["lipschitz"].holds and v["lipschitz"].numbers["constant"] == pytest.approx(2.0)
    assert v["nonlinearity"].holds and v["sign_identifiability"].holds
    assert card.sign.symmetry == "neither" and card.sign.parity_predicts_lost is False
    # relu + tanh: the flipped truth is visible to the loss (mixed parity, paper_notes/sign.md)
    assert card.sign.loss_one_flipped > 1e-3
    assert card.sign.antipodal_slope == pytest.approx(0.682, abs=1e-3)
    # μ_0 = 1/√(2π) (ReLU's; tanh is odd)
    assert card.hermite.coefficients[0] == pytest.approx(1 / math.sqrt(2 * math.pi), abs=1e-14)
    # labels are fit from p = n exactly, and reconstruction succeeds at 8·dn
    assert card.law.label_threshold_over_n == 1.0
    assert card.law.points[-1].success_abs == 1.0
    numbers = card_numbers(card)
    assert numbers["verdicts"]["sign_identifiability"] is True
    assert numbers["lambda_min_kernel"] > numbers["hermite_bound_k0"] > 0


def test_a_user_expression():
    card = tiny_card("relu(z) + 0.5*sin(3*z)")
    check_card(card, TINY)
    assert card.activation == "relu(z) + 0.5*sin(3*z)"
    assert "sin(3*z)" in card.expression
    assert card.verdicts["lipschitz"].holds
    assert card.verdicts["lipschitz"].numbers["constant"] == pytest.approx(2.5, rel=1e-6)


def test_an_activation_that_fails_a_theorem_condition():
    card = tiny_card("z")  # affine: no non-linear part, K(t) = t is singular for n > d
    check_card(card, TINY)
    assert card.verdicts["nonlinearity"].holds is False
    assert card.verdicts["nonlinearity"].basis == "symbolic"
    assert card.concentration["lambda_min_kernel"] == pytest.approx(0.0, abs=1e-12)
    # the features of a linear φ span d = 2 < n = 3 directions: labels are never fit
    assert math.isnan(card.law.label_threshold_over_n)
    assert "no, Σ_k≥2 μ_k² = 0" in card_table(card)


def test_an_activation_that_is_not_lipschitz():
    card = tiny_card("step")
    check_card(card, TINY)
    lip = card.verdicts["lipschitz"]
    assert lip.holds is False and "jump" in lip.summary
    assert card.sign.antipodal_slope is None  # φ' = 0 almost everywhere: no slope
    assert "Lipschitz" in card_table(card) and "no [" in card_table(card)


def test_an_even_activation_loses_the_signs():
    card = tiny_card("abs")
    assert card.sign.symmetry == "even" and card.sign.parity_predicts_lost is True
    assert card.sign.loss_one_flipped < 1e-20  # −x_i is an exact solution
    assert card.sign.antipodal_slope == pytest.approx(-1.0, abs=1e-8)


def test_same_seed_same_numbers_and_the_seed_matters():
    a = card_numbers(activation_card("tanh", TINY, workers=1))
    b = card_numbers(activation_card("tanh", TINY, workers=2))  # workers never change numbers
    c = card_numbers(activation_card("tanh", TINY, workers=1, seed=1))
    for key in ("lambda_min_kernel", "concentration_slope", "data_threshold_over_dn",
                "loss_one_flipped", "kernel_mc_max_z"):
        assert a[key] == b[key] or (isinstance(a[key], float) and math.isnan(a[key])
                                    and math.isnan(b[key]))
    assert a["concentration_slope"] != c["concentration_slope"]


def test_progress_counts_every_step():
    seen = []
    activation_card("relu", TINY, workers=1, progress=lambda d, t, m: seen.append((d, t, m)))
    total = seen[0][1]
    assert [d for d, _, _ in seen] == list(range(1, total + 1))
    # Hermite, K(t), one per p of the concentration, one per law cell, the sign check
    law_cells = len(p_values(TINY.law_d, TINY.law_n, TINY.law_ratios)) * TINY.law_seeds
    assert total == 2 + len(TINY.kernel_p) + law_cells + 1


def test_plot_writes_one_readable_page(tmp_path):
    paths = plot_card(tiny_card("relu+tanh"), tmp_path / "card")
    assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
    from matplotlib.image import imread

    image = imread(paths[0] if paths[0].suffix == ".png" else paths[1])
    height, width = image.shape[:2]
    assert width == pytest.approx(6.9 * 200, abs=2)  # two-column text width at 200 dpi
    assert height > width  # a page, not a strip


def test_estimate_and_size_check():
    est = card_estimate("relu", DEFAULT)
    assert est.peak_bytes < 2**30 and "law cells" in dict(est.parts)
    with pytest.raises(ResourceLimitError, match="memory"):
        activation_card("relu", DEFAULT, memory_limit=1e5)


def test_bad_input_is_refused_before_any_work():
    for bad in ("relu(", "__import__('os')", "z**1000000"):
        with pytest.raises(RFTheoryError):
            activation_card(bad, TINY)
    with pytest.raises(RFTheoryError, match="unknown size"):
        activation_card("relu", "huge")
    with pytest.raises(RFTheoryError, match="seed"):
        activation_card("relu", TINY, seed=-1)


def test_file_stems():
    assert card_stem("ReLU") == "report_relu"
    assert card_stem("relu(z)").startswith("report_expr-") and "/" not in card_stem("a/b")


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def tiny_quick(monkeypatch):
    """``--quick`` at the tiny size (the command reads the sizes from rftheory.report.SIZES)."""
    monkeypatch.setitem(SIZES, "quick", TINY)


def test_command_writes_json_png_pdf_and_prints_the_card(tmp_path, capsys, tiny_quick):
    assert main(["report", "relu+tanh", "--quick", "--out", str(tmp_path), "--workers", "1"]) == 0
    out = capsys.readouterr()
    for suffix in (".json", ".png", ".pdf"):
        assert (tmp_path / f"report_relu+tanh{suffix}").stat().st_size > 0
    assert "report card: relu+tanh" in out.out and "sign (paper)" in out.out
    assert f"wrote {tmp_path / 'report_relu+tanh.png'}" in out.out
    assert "report card of relu+tanh" in out.err  # the stated cost comes first
    data = json.loads((tmp_path / "report_relu+tanh.json").read_text())
    assert data["law"]["label_threshold_over_n"] == 1.0
    assert data["hermite"]["lipschitz"]["holds"] is True


def test_command_json_on_stdout(tmp_path, capsys, tiny_quick):
    assert main(["report", "tanh", "--quick", "--json", "--no-figures", "--out", str(tmp_path),
                 "--name", "t", "--seeds", "1", "--workers", "1"]) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert data["figures"] == [] and data["size"]["law_seeds"] == 1
    assert data["hermite"]["parity"]["numbers"]["symmetry"] == "odd"
    assert out.err == ""  # --json: nothing but the JSON
    assert (tmp_path / "t.json").exists() and not (tmp_path / "t.png").exists()


@pytest.mark.parametrize("args, message", [
    (["report", "relu("], "error:"),
    (["report", "relu", "--seed", "-1"], "--seed must be >= 0"),
    (["report", "relu", "--d", "0"], "--d must be >= 1"),
    (["report", "relu", "--n", "1"], "--n must be >= 2"),
    (["report", "relu", "--max-steps", "x"], "--max-steps must be an integer"),
    (["report", "relu", "--name", "../x"], "--name must be a plain file stem"),
    (["report", "φ(z)"], "ASCII"),
])
def test_command_errors_are_one_line(args, message, capsys, tmp_path):
    assert main(args + ["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rftheory report: error:") and "\n" not in err and message in err


def test_command_refuses_an_out_path_that_is_a_file(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["report", "relu", "--out", str(target)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["report", "relu", "--out", str(tmp_path / "no" / "such")]) == 2
    assert "parent directory" in capsys.readouterr().err  # the package's output-path rule


def test_command_limit_options(capsys, tmp_path):
    assert main(["report", "relu", "--out", str(tmp_path), "--time-limit", "soon"]) == 2
    assert "--time-limit must be" in capsys.readouterr().err
    assert main(["report", "relu", "--out", str(tmp_path), "--memory-limit", "100K"]) == 2
    assert "--memory-limit" in capsys.readouterr().err


def test_command_size_check(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("RFTHEORY_MEMORY_LIMIT", "100K")
    assert main(["report", "relu", "--out", str(tmp_path)]) == 2
    assert "of memory" in capsys.readouterr().err


def test_quick_and_full_exclude_each_other(capsys):
    assert main(["report", "relu", "--quick", "--full"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# The registry (slow)
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_every_registry_activation_at_quick_size(name, tmp_path):
    card = activation_card(name, "quick")
    check_card(card, QUICK)
    assert len(plot_card(card, tmp_path / "card")) == 2


@pytest.mark.slow
def test_registry_verdicts_regression(data_regression):
    """The four verdicts of every registry activation, as a reviewed YAML file
    (tests/test_report/test_registry_verdicts_regression.yml; ``--force-regen`` rewrites it).

    Verdicts are exact (booleans, bases, vanishing orders), so unlike the claims' numbers they
    need no tolerance: pytest-regressions' data_regression is the right tool.
    """
    from rftheory.verdicts import activation_report

    table = {}
    for name in sorted(ACTIVATIONS):
        report = activation_report(name, order=12, time_budget=30)
        table[name] = {key: {"holds": v.holds, "basis": v.basis}
                       for key, v in report.verdicts.items()}
        table[name]["symmetry"] = report.parity.numbers.get("symmetry")
        table[name]["proven_zero"] = list(report.parity.numbers.get("proven_zero", []))
    data_regression.check(table)


def test_the_method_choices_are_the_libraries():
    from rftheory.commands import report as command
    from rftheory.hermite import METHODS

    assert set(command.METHODS) == set(METHODS)
