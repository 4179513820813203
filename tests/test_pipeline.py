"""The reconstruction pipeline (rftheory.pipeline): one implementation, every summary of it."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from rftheory.claims import law, nhat, sign
from rftheory.data import gaussian_labels, load_dataset
from rftheory.errors import RFTheoryError
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.metrics import VARIANTS, match
from rftheory.output import to_jsonable
from rftheory.pipeline import (DEFAULT_V_CACHE_BYTES, feature_count, fit_model,
                               reconstruction_cell, recover_training_set, run_reconstruction)
from rftheory.reconstruct import METHODS, reconstruct

from tests.conftest import cupy_or_skip

# p = 5·dn: past the reconstruction threshold (≈ 2·dn), so the run converges (the numbers below
# are compared for equality, not for quality; 800 steps is ample at this size).
ARGS = dict(activation="relu+tanh", d=4, n=3, p=60, seed=2)
STEPS = 800


@pytest.fixture(scope="module")
def run():
    with threadpool_limits(limits=1, user_api="blas"):  # as the claims and sweeps run cells
        return run_reconstruction(**ARGS, tol=1e-10, max_steps=STEPS)


def test_run_is_the_documented_composition_of_the_steps(run):
    # The streams of the pipeline, written out by hand: data, V and labels of one seed, θ* = Φ⁺Y,
    # the optimiser seeded by the same seed. Bit-identical numbers (same calls, same order).
    with threadpool_limits(limits=1, user_api="blas"):
        X = load_dataset("sphere", ARGS["n"], d=ARGS["d"], rng=ARGS["seed"]).X
        features = RandomFeatures(ARGS["activation"], d=ARGS["d"], p=ARGS["p"], seed=ARGS["seed"],
                                  v_cache_bytes=DEFAULT_V_CACHE_BYTES)
        model = train_min_norm(features, X, gaussian_labels(ARGS["n"], ARGS["seed"]))
        result = reconstruct(features, model.theta, ARGS["n"], seed=ARGS["seed"], tol=1e-10,
                             max_steps=STEPS)
    np.testing.assert_array_equal(run.X, X)
    np.testing.assert_array_equal(run.theta, model.theta)
    np.testing.assert_array_equal(run.X_hat, result.X_hat)
    np.testing.assert_array_equal(run.coefficients, result.coefficients)
    assert run.loss == result.loss and run.result.steps == result.steps
    for v in VARIANTS:
        assert run.rho[v] == match(X, result.X_hat, v).rho
    # Converged: labels fit (float64 Gram solve) and the data recovered (loss ≤ 1e-10 forces
    # candidates within ~1e-3 of the training points at this size).
    assert run.train_residual < 1e-10 and run.result.converged and run.rho["abs"] < 1e-3


def test_two_steps_equal_the_whole(run):
    with threadpool_limits(limits=1, user_api="blas"):
        fitted = fit_model(activation=ARGS["activation"], n=ARGS["n"], d=ARGS["d"], p=ARGS["p"],
                           seed=ARGS["seed"])
        again = recover_training_set(fitted, tol=1e-10, max_steps=STEPS)
    np.testing.assert_array_equal(again.X_hat, run.X_hat)
    assert again.rho == run.rho and again.n_hat == ARGS["n"]
    assert again.seconds >= again.reconstruct_seconds > 0


def test_cell_and_claims_are_summaries_of_one_run(run):
    with threadpool_limits(limits=1, user_api="blas"):
        cell = reconstruction_cell(**ARGS, max_steps=STEPS)
    assert cell["rho_abs"] == run.rho["abs"] and cell["rho_signed"] == run.rho["signed"]
    assert cell["final_loss"] == run.loss and cell["train_residual"] == run.train_residual
    assert cell["sign_flips"] == run.matchings["sign_invariant"].n_flipped
    assert cell["p_over_dn"] == 5.0 and cell["steps"] == run.result.steps
    task = {**ARGS, "max_steps": STEPS}
    law_cell = law.run_point({**task, "seed_index": 0})
    assert {k: law_cell[k] for k in cell if k != "seconds"} == \
        {k: v for k, v in cell.items() if k != "seconds"}
    nhat_case = nhat.run_case({**task, "n_hat": ARGS["n"]})
    assert nhat_case["final_loss"] == run.loss and nhat_case["rho_abs"] == run.rho["abs"]
    assert nhat_case["rho_sign_invariant"] == run.rho["sign_invariant"]
    sign_case = sign.run_case(task)
    assert sign_case["final_loss"] == run.loss
    assert [sign_case[f"rho_{v}"] for v in VARIANTS] == [run.rho[v] for v in VARIANTS]


def test_summary_is_plain_json(run):
    payload = json.loads(json.dumps(to_jsonable(run.summary())))
    assert payload["p"] == 60 and payload["p_over_dn"] == 5.0 and payload["n_hat"] == 3
    assert payload["rho"] == run.rho and len(payload["history"]) == run.result.steps
    assert payload["per_sample_rho"] == run.matchings["abs"].per_sample.tolist()


def test_feature_count_and_refusals():
    assert feature_count(p_mult=0.26, d=5, n=4) == 5  # round(5.2)
    assert feature_count(p_mult=1e-6, d=5, n=4) == 1  # at least one feature
    with pytest.raises(RFTheoryError, match="exactly one"):
        feature_count(10, p_mult=1.0, d=5, n=4)
    with pytest.raises(RFTheoryError, match="positive"):
        feature_count(p_mult=-1.0, d=5, n=4)
    with pytest.raises(RFTheoryError, match="smaller than the number of candidates"):
        run_reconstruction(activation="relu", d=4, n=3, p=5, n_hat=6)
    with pytest.raises(RFTheoryError, match="labels"):
        fit_model(activation="relu", d=4, n=3, p=5, labels="uniform")


def test_method_is_passed_through_and_defaults_to_reconstructs(run):
    # The default is reconstruct()'s own (the strongest attack), never re-stated by the pipeline.
    default = inspect.signature(reconstruct).parameters["method"].default
    assert run.result.method == default == METHODS[0] and run.summary()["method"] == default
    with threadpool_limits(limits=1, user_api="blas"):
        cell = reconstruction_cell(**ARGS, method="lbfgs", max_steps=STEPS)
    assert cell["method"] == "lbfgs" and cell["passes"] >= cell["steps"] > 0
    assert cell["converged"] and cell["rho_abs"] < 1e-3   # p = 5dn: both methods recover X
    with pytest.raises(RFTheoryError, match="unknown reconstruction method 'adam'"):
        run_reconstruction(activation="relu", d=4, n=3, p=60, method="adam")


def test_sweep_files_take_the_method_of_the_cell():
    from rftheory.sweep.spec import SweepSpecError, parse_spec

    spec = parse_spec({"sweep": {"cell": "reconstruct"}, "grid": {"method": list(METHODS)},
                       "fixed": {"activation": "relu", "d": 4, "n": 3, "p": 60, "seed": 0}})
    assert [c.params["method"] for c in spec.cells()] == list(METHODS)
    with pytest.raises(SweepSpecError, match=r"\[fixed\] method: unknown reconstruction method"):
        parse_spec({"sweep": {"cell": "reconstruct"},
                    "fixed": {"activation": "relu", "d": 4, "n": 3, "p": 60, "seed": 0,
                              "method": "adam"}})


@pytest.mark.gpu
def test_gpu_run_matches_cpu(run):
    cp = cupy_or_skip()
    gpu = run_reconstruction(**ARGS, tol=1e-10, max_steps=STEPS, device="gpu")
    assert isinstance(gpu.result.X_hat, cp.ndarray) and isinstance(gpu.X_hat, np.ndarray)
    # float64 on another BLAS: the optimiser's path may differ in the last bits, so compare the
    # recovered data, not the bits: both runs recover the training set to ~1e-3.
    assert gpu.train_residual < 1e-10 and gpu.rho["abs"] < 1e-3
