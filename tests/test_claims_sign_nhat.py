"""The sign-ambiguity check (rftheory.claims.sign) and the n̂ ≠ n check (rftheory.claims.nhat)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rftheory.output import to_jsonable
from rftheory.errors import RFTheoryError
from rftheory.claims import nhat, sign

from tests.conftest import sphere_points

# Small problems deep in the success regime (p = 10·dn; the law's threshold is ≈ 2·dn): the
# default sweep recovers every relu+tanh and abs run there in 50–1200 steps, so 2000 is ample.
D, N, STEPS = 5, 8, 2000


def _task(activation: str, seed: int) -> dict:
    return {"activation": activation, "d": D, "n": N, "p": 10 * D * N, "seed": seed,
            "max_steps": STEPS}


def test_relu_tanh_recovers_every_sign_and_sees_flips_in_the_loss():
    cell = sign.run_case(_task("relu+tanh", 0))
    assert cell["success"] and cell["sign_flips"] == 0
    # ρ_signed small: no sample is recovered as −x_i. Successful runs measure 1e-5–1e-3.
    assert cell["rho_signed"] < 0.01
    # The true data is a zero of the loss (rounding level, float64); negating one sample is not.
    # That loss grows with the sample's weight a_i in θ* = Φᵀa (a Gaussian label near 0 gives a
    # small one): median over i measured 0.04–0.3, min 3e-4 — both far above the optimiser's 1e-10.
    assert cell["loss_truth"] < 1e-20
    assert cell["loss_one_flipped"] > 1e-3
    assert cell["loss_one_flipped_min"] > 1e-6


def test_even_activation_cannot_tell_x_from_minus_x():
    cell = sign.run_case(_task("abs", 1))
    assert cell["success"]
    # |z| is even: φ(−Vx) = φ(Vx) exactly, so the negated data is a zero of the loss up to
    # rounding (measured 1e-29), and the sign of each recovered sample is the initial guess's.
    assert cell["loss_one_flipped"] < 1e-20 and cell["loss_all_flipped"] < 1e-20
    assert cell["sign_flips"] > 0  # all 8 signs right by chance: probability 2⁻⁸ for this seed
    assert cell["rho_signed"] > 0.3 and cell["rho_sign_invariant"] < 0.01


def test_odd_activation_is_sign_ambiguous_despite_mu3():
    # tanh has μ_3 ≠ 0 (the Hermite criterion calls it sign-identifiable), but it is odd:
    # φ(−Vx) = −φ(Vx) spans the same line, so flipping a sample costs nothing (rounding level).
    cell = sign.run_case(_task("tanh", 2))
    assert cell["success"]
    assert cell["loss_one_flipped"] < 1e-20 and cell["loss_all_flipped"] < 1e-20
    assert cell["sign_flips"] > 0  # probability 2⁻⁸ that all eight initial signs were right


def test_sign_run_reports_verdicts_next_to_flips(tmp_path):
    config = sign.Config(activations=("abs", "relu"), d=D, n=N, seeds=1, max_steps=STEPS)
    result = sign.run(config, workers=2)
    # The runs are the run_case of each task, in task order, whatever the workers did.
    assert [(c["activation"], c["seed"]) for c in result["runs"]] == [("abs", 0), ("relu", 0)]
    assert result["runs"][1] | {"seconds": 0} == sign.run_case(_task("relu", 0)) | {"seconds": 0}
    by = {e["activation"]: e for e in result["per_activation"]}
    # The Hermite criterion (no odd μ_k ≠ 0, k ≥ 3) calls both ambiguous; only abs has a pure
    # parity (even), ReLU has both an even and an odd part.
    assert by["abs"]["hermite"]["sign_identifiable"] is False
    assert by["relu"]["hermite"]["sign_identifiable"] is False
    assert by["abs"]["hermite"]["pure_parity"] and not by["relu"]["hermite"]["pure_parity"]
    assert by["abs"]["agrees_with_parity"] is True
    assert by["relu"]["hermite"]["mu_1"] == pytest.approx(0.5, abs=1e-10)  # ReLU: μ_1 = 1/2
    assert by["abs"]["flips_observed"]
    # For ReLU the flipped truth is not a zero of the loss: μ_1 ≠ 0 makes −x_i visible.
    assert by["relu"]["median_loss_one_flipped"] > 1e-3
    saved = json.loads(json.dumps(to_jsonable(result)))
    assert saved["per_activation"][0]["flip_fraction_all"] == by["abs"]["flip_fraction_all"]
    paths = sign.plot(saved, tmp_path / "sign")
    assert paths == [tmp_path / "sign.png", tmp_path / "sign.pdf"] and all(p.exists() for p in paths)
    rows = {line.split()[0]: line.split() for line in sign.summary(saved).splitlines()[3:5]}
    assert rows["abs"][1] == f"{by['abs']['successes']}/1" and rows["relu"][7] == "no"


def test_antipodal_slope_closed_forms():
    # K'(−1)/K'(1) = E[φ'(g)φ'(−g)]/E[φ'(g)²]: 0 for ReLU (φ'(z)φ'(−z) = 0 off the kink), +1 for
    # odd φ, −1 for even φ, 2α/(1 + α²) for leaky ReLU with slope α = 0.1 (registry). Quadrature
    # error ≲ 1e-10 (scipy quad split at the kinks), so 1e-8 is a safe tolerance.
    assert sign.antipodal_slope("relu") == pytest.approx(0.0, abs=1e-8)
    assert sign.antipodal_slope("tanh") == pytest.approx(1.0, abs=1e-8)
    assert sign.antipodal_slope("abs") == pytest.approx(-1.0, abs=1e-8)
    assert sign.antipodal_slope("leaky_relu") == pytest.approx(0.2 / 1.01, abs=1e-8)


def test_sign_refuses_bad_configurations():
    with pytest.raises(RFTheoryError, match="activations"):
        sign.Config(activations=(), seeds=1)
    with pytest.raises(RFTheoryError, match="ratio"):
        sign.Config(activations=("relu",), ratio=-1.0, seeds=1)
    assert sign.QUICK.p == 10 * sign.QUICK.d * sign.QUICK.n


def test_analyse_flags_duplicates_far_extras_and_sign():
    X = sphere_points(4, 6, seed=3)
    far = sphere_points(1, 6, seed=99)
    # candidates: the data (one of them negated), a near-duplicate of x_0, a far point
    X_hat = np.vstack([X[0], -X[1], X[2], X[3], X[0] + 1e-4, far[0]])
    a = np.array([1.0, 0.5, 0.7, 0.9, 0.0, 1e-6])
    info = nhat.analyse(X, X_hat, a)
    assert info["covered"] == 4                   # −x_1 covers x_1 up to sign
    assert info["exact_candidates"] == 5          # the data and the duplicate
    extras = sorted(info["extras"], key=lambda e: e["nearest_training"])
    assert len(extras) == 2
    assert extras[0]["duplicate"] and extras[0]["nearest_training_index"] == 0
    assert extras[0]["nearest_candidate"] < 1e-3
    assert not extras[1]["duplicate"] and extras[1]["nearest_training"] > nhat.RHO_CLOSE
    assert info["n_estimate"] == 4                # weights ≥ 1e-3·max: the four data rows
    assert info["rho_sign_invariant"] < 1e-4 and info["rho_abs"] < 1e-4


@pytest.fixture(scope="module")
def nhat_result():
    return nhat.run(nhat.Config(d=D, n=N, n_hat_factors=(0.5, 1.5), seeds=1, max_steps=1000),
                    workers=2)


def test_more_candidates_cover_all_fewer_cannot_fit(nhat_result, tmp_path):
    rows = {r["n_hat"]: r for r in nhat_result["rows"]}
    over, under = rows[12], rows[4]
    assert over["min_covered"] == N and over["converged"] == 1
    # Extras carry (almost) no weight: median |a_j|/max|a| measured 7e-6–1e-5 (cut: 1e-3).
    assert over["extras"] == 4 and over["extras_median_abs_coefficient_rel"] < nhat.WEIGHT_CUT
    assert over["n_estimate_correct"] == 1
    # Four candidates cannot span θ*: the loss stays far above tolerance (measured ≈ 0.1).
    assert under["converged"] == 0 and under["median_final_loss"] > 1e-3
    assert under["max_covered"] <= 4
    assert nhat_result["verdict"]["supported"]
    assert [r["n_hat"] for r in nhat_result["runs"]] == [4, 12]  # task order
    saved = json.loads(json.dumps(to_jsonable(nhat_result)))
    paths = nhat.plot(saved, tmp_path / "nhat")
    assert paths == [tmp_path / "nhat.png", tmp_path / "nhat.pdf"] and all(p.exists() for p in paths)
    table = {line.split()[0]: line.split() for line in nhat.summary(saved).splitlines()[3:5]}
    assert table["12"][4] == f"{N}–{N}/{N}" and table["4"][2] == "0/1"  # covered; converged


def test_nhat_refuses_bad_configurations():
    with pytest.raises(RFTheoryError, match="factors"):
        nhat.Config(n_hat_factors=(0.0,), seeds=1)
    with pytest.raises(RFTheoryError, match="exceeds"):
        nhat.Config(d=1, n=4, n_hat_factors=(20.0,), seeds=1, ratio=1.0)
    assert nhat.QUICK.n_hats == [4, 8, 12] and nhat.FULL.p == 10 * 8 * 8
