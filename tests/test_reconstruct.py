"""Tests of rftheory.reconstruct: recovery of the training set from (θ*, V)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from rftheory.errors import RFTheoryError, ShapeError
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.projection import projection_loss
from rftheory.features import DenseFeatures
from rftheory.reconstruct import METHODS, STOP_REASONS, ReconstructionResult, reconstruct


def _sphere(n, d, rng):
    U = rng.standard_normal((n, d))
    return U * (math.sqrt(d) / np.linalg.norm(U, axis=1, keepdims=True))


def _problem(activation="relu+tanh", d=12, n=4, ratio=10.0, data_seed=101):
    """Synthetic sphere data, Gaussian labels, p = ratio·d·n, θ* = Φ⁺Y.

    The data seed differs from every reconstruction seed used below, so no candidate pool
    can start on the training points by sharing a random stream.
    """
    rng = np.random.default_rng([data_seed, 7])
    X = _sphere(n, d, rng)
    Y = rng.standard_normal(n)
    rf = RandomFeatures(activation, d, round(ratio * d * n), seed=data_seed, v_cache_bytes=2**26)
    return rf, X, train_min_norm(rf, X, Y).theta


def _rho_abs(X, X_hat):
    """The paper's ρ: Hungarian matching on elementwise |x| (independent of rftheory.metrics)."""
    A, B = np.abs(X), np.abs(np.asarray(X_hat))
    cost = np.linalg.norm(A[:, None, :] - B[None, :, :], axis=2)
    r, c = linear_sum_assignment(cost)
    return float(cost[r, c].sum() / (X.shape[0] * math.sqrt(X.shape[1])))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("activation", ["relu+tanh", "relu"])
def test_recovers_training_set(activation, method):
    rf, X, theta = _problem(activation, d=12, n=4)
    res = reconstruct(rf, theta, 4, seed=1, method=method)
    assert isinstance(res, ReconstructionResult) and res.method == method
    assert res.converged and res.stop_reason == "tolerance"
    # The brief's success criterion; at loss 1e-10 the recovered rows are typically ~1e-4 off.
    assert _rho_abs(X, res.X_hat) < 0.01
    # The reported loss is the loss of the returned rows (re-evaluated independently).
    again = projection_loss(rf, res.X_hat, theta, gradient=False).loss
    assert again == pytest.approx(res.loss, rel=1e-6, abs=1e-15)  # same computation, same data
    assert len(res.history) == res.steps - res.residual_steps and res.steps > 0
    assert res.evaluations >= res.steps
    assert res.passes >= res.evaluations  # every evaluation streams V at least once


def test_relu_tanh_recovers_signs():
    # ReLU+tanh breaks the x ↔ −x ambiguity: the signed distance must be small too.
    rf, X, theta = _problem("relu+tanh", d=12, n=4)
    res = reconstruct(rf, theta, 4, seed=2)
    Xh = np.asarray(res.X_hat)
    cost = np.linalg.norm(X[:, None, :] - Xh[None, :, :], axis=2)
    r, c = linear_sum_assignment(cost)
    assert cost[r, c].max() < 0.01 * math.sqrt(12)  # ρ threshold applied to the worst point


@pytest.mark.parametrize("method", METHODS)
def test_rows_on_sphere_and_deterministic(method):
    rf, X, theta = _problem(d=10, n=3)
    a = reconstruct(rf, theta, 3, seed=5, max_steps=40, method=method)
    b = reconstruct(rf, theta, 3, seed=5, max_steps=40, method=method)
    Xa = np.asarray(a.X_hat)
    # Rows are √d u/‖u‖ in float64: norm √d to rounding.
    np.testing.assert_allclose(np.linalg.norm(Xa, axis=1), math.sqrt(10), rtol=1e-13)
    np.testing.assert_array_equal(Xa, np.asarray(b.X_hat))
    assert a.history == b.history and a.steps == b.steps and a.passes == b.passes


@pytest.mark.parametrize("method", METHODS)
def test_overcomplete_n_hat_covers_all_training_points(method):
    rf, X, theta = _problem(d=12, n=4)
    res = reconstruct(rf, theta, 6, seed=3, method=method)
    assert res.X_hat.shape == (6, 12)
    assert res.converged
    Xh = np.asarray(res.X_hat)
    dist = np.linalg.norm(X[:, None, :] - Xh[None, :, :], axis=2).min(axis=1)
    assert dist.max() < 0.01 * math.sqrt(12)  # every training point has a row within ρ's threshold


@pytest.mark.parametrize("method", METHODS)
def test_undercomplete_n_hat_returns_best_fit(method):
    rf, X, theta = _problem(d=10, n=5)
    res = reconstruct(rf, theta, 2, seed=4, max_rounds=1 if method == "lbfgs" else 5,
                      method=method)
    assert res.X_hat.shape == (2, 10)
    # Two rows cannot span θ* built from five independent feature vectors.
    assert not res.converged and res.loss > 1e-6
    assert res.stop_reason in ("stalled", "budget")
    assert 0.0 < res.loss < 1.0


@pytest.mark.parametrize("method", METHODS)
def test_stop_reasons(method):
    rf, X, theta = _problem(d=10, n=3)
    budget = reconstruct(rf, theta, 3, seed=6, max_steps=7, method=method)
    assert budget.stop_reason == "budget" and budget.steps == 7 and not budget.converged
    loose = reconstruct(rf, theta, 3, seed=6, tol=0.9, method=method)  # met within a few iterations
    assert loose.stop_reason == "tolerance" and loose.converged and loose.loss <= 0.9
    seen = []

    def stop_at_twenty(step, loss, X_hat):
        seen.append((step, loss, X_hat.shape))
        return step >= 20

    # tol = 0 (unreachable in float64 for LM, which otherwise converges within 20 iterations).
    cb = reconstruct(rf, theta, 3, seed=6, callback=stop_at_twenty, callback_every=5,
                     method=method, tol=0.0)
    steps = [s for s, _, _ in seen]
    if method == "lbfgs":
        assert cb.stop_reason == "callback" and cb.steps == 20
        assert steps == [5, 10, 15, 20]
    else:  # every 5 iterations, the iterations of an exchange's grown set not reported
        assert cb.stop_reason == "callback" and cb.steps == steps[-1] >= 20
        assert steps[0] == 5 and all(b - a >= 5 for a, b in zip(steps, steps[1:]))
    assert all(0.0 <= loss <= 1.0 for _, loss, _ in seen)
    assert set(STOP_REASONS) >= {budget.stop_reason, loose.stop_reason, cb.stop_reason}


@pytest.mark.parametrize("method", METHODS)
def test_work_budget_stops_a_run_by_its_sweeps(method):
    """max_sweeps ends a run ("budget") after the iteration that used it up, long before
    max_steps; the sweeps are counted for every method and never exceed the passes."""
    rf, X, theta = _problem(d=10, n=3)
    free = reconstruct(rf, theta, 3, seed=6, tol=0.0, max_steps=60, method=method)
    assert free.stop_reason == "budget" and free.steps == 60      # max_steps bound it
    assert 60 <= free.sweeps <= free.passes
    cut = reconstruct(rf, theta, 3, seed=6, tol=0.0, max_steps=60, method=method,
                      max_sweeps=free.sweeps // 3)
    assert cut.stop_reason == "budget" and not cut.converged and cut.steps < free.steps
    assert free.sweeps // 3 <= cut.sweeps < free.sweeps
    # The same stream up to the stop: the shorter run's history is the longer one's start.
    assert cut.history == free.history[:len(cut.history)]


def test_default_work_budget_binds_only_at_cifar_scale():
    """The default sweep budget: 2⁴³ multiply-adds' worth, at least SWEEP_FLOOR sweeps."""
    from rftheory.varpro import SWEEP_FLOOR, WORK_BUDGET, default_max_sweeps

    assert default_max_sweeps(30720, 3072, 10) == math.ceil(WORK_BUDGET / (30720 * 3072 * 10))
    assert default_max_sweeps(3_072_000, 3072, 100) == SWEEP_FLOOR
    # The law's grids (d ≤ 80): more than 20 000 LM iterations of 2n̂ + 2 sweeps each can use.
    for p, d, m in [(170, 12, 12), (1600, 80, 16), (2 * 80 * 16, 80, 16)]:
        assert default_max_sweeps(p, d, m) > 20000 * (2 * m + 2)
    # (100, 20) at 10·dn: its runs take ≤ 310 iterations (≤ ~13 000 sweeps, attack.md).
    assert default_max_sweeps(20000, 100, 20) > 200_000
    rf, X, theta = _problem(d=10, n=3)
    a = reconstruct(rf, theta, 3, seed=6, max_steps=200)
    b = reconstruct(rf, theta, 3, seed=6, max_steps=200, max_sweeps=10**12)
    assert a.history == b.history and np.array_equal(a.X_hat, b.X_hat)


def test_sweeps_do_not_depend_on_the_memory_at_hand(monkeypatch):
    """A loss evaluation streams V twice when its first pass's blocks cannot be kept (passes
    grow), but it is one sweep either way: the work budget stops at the same iteration."""
    import rftheory.projection as projection

    rf, X, theta = _problem(d=10, n=3)
    kept = reconstruct(rf, theta, 3, seed=6, tol=0.0, max_steps=40, max_sweeps=150)
    monkeypatch.setattr(projection, "KEEP_BLOCKS_BYTES", 0)
    streamed = reconstruct(rf, theta, 3, seed=6, tol=0.0, max_steps=40, max_sweeps=150)
    assert streamed.passes > kept.passes
    assert (streamed.sweeps, streamed.steps, streamed.stop_reason) == \
        (kept.sweeps, kept.steps, kept.stop_reason)
    assert np.array_equal(streamed.X_hat, kept.X_hat)


@pytest.mark.parametrize("method", METHODS)
def test_x_init_at_the_answer_converges_immediately(method):
    rf, X, theta = _problem(d=10, n=3)
    res = reconstruct(rf, theta, 3, X_init=2.0 * X, method=method)  # scale is removed by the sphere projection
    assert res.converged and _rho_abs(X, res.X_hat) < 1e-6  # started at the exact optimum
    assert res.steps == 0  # the start already meets tol: no optimiser iteration


def test_array_api_strict_namespace():
    xps = pytest.importorskip("array_api_strict")
    rf, X, theta = _problem(d=10, n=3)
    res = reconstruct(rf, xps.asarray(theta), 3, seed=1)
    assert type(res.X_hat) is type(xps.asarray(theta))
    assert res.converged and _rho_abs(X, np.from_dlpack(res.X_hat)) < 0.01


@pytest.mark.parametrize("kwargs, error", [
    ({"n_hat": 0}, RFTheoryError),
    ({"n_hat": 2.5}, RFTheoryError),
    ({"n_hat": 10**6}, RFTheoryError),          # more candidates than features p
    ({"n_hat": 3, "max_steps": 0}, RFTheoryError),
    ({"n_hat": 3, "max_sweeps": 0}, RFTheoryError),
    ({"n_hat": 3, "max_sweeps": 2.5}, RFTheoryError),
    ({"n_hat": 3, "max_sweeps": True}, RFTheoryError),
    ({"n_hat": 3, "tol": -1.0}, RFTheoryError),
    ({"n_hat": 3, "oversample": 0.5, "method": "lbfgs"}, RFTheoryError),
    ({"n_hat": 3, "oversample": 2.0}, RFTheoryError),         # a pool is lbfgs's only
    ({"n_hat": 3, "memory": 5}, RFTheoryError),
    ({"n_hat": 3, "method": "adam"}, RFTheoryError),
    ({"n_hat": 3, "solver": "qr"}, RFTheoryError),
    ({"n_hat": 3, "hop_angle": 0.0}, RFTheoryError),
    ({"n_hat": 3, "hop_angle": "0.3"}, RFTheoryError),
    ({"n_hat": 3, "hop_angle": math.inf}, RFTheoryError),
    ({"n_hat": 3, "patience": 0}, RFTheoryError),
    ({"n_hat": 3, "max_rounds": 0}, RFTheoryError),
    ({"n_hat": 3, "seed": -1}, RFTheoryError),
    ({"n_hat": 3, "X_init": np.ones((2, 10))}, ShapeError),
    ({"n_hat": 3, "X_init": np.ones((3, 9))}, ShapeError),
])
def test_bad_arguments(kwargs, error):
    rf, X, theta = _problem(d=10, n=3)
    n_hat = kwargs.pop("n_hat")
    with pytest.raises(error):
        reconstruct(rf, theta, n_hat, **kwargs)


def test_the_default_hop_grows_with_the_dimension():
    # The hop's scale is hop_angle_for(d): 0.3 up to d = 10, √d-proportional above, capped at
    # 0.6. The default run at d = 40 is the run with that scale passed explicitly, bit for bit,
    # and not the run with the d = 10 scale (the walk needs hops here: 1.5·dn, n = 4).
    from rftheory.varpro import HOP_ANGLE, HOP_ANGLE_MAX, hop_angle_for

    assert hop_angle_for(1) == hop_angle_for(10) == HOP_ANGLE
    assert hop_angle_for(40) == pytest.approx(2 * HOP_ANGLE)
    assert hop_angle_for(40) == HOP_ANGLE_MAX == hop_angle_for(80) == hop_angle_for(3072)
    assert all(hop_angle_for(d) <= hop_angle_for(d + 1) for d in range(1, 200))
    for bad in (0, -3, 2.5, True, "40"):
        with pytest.raises(RFTheoryError, match="d must"):
            hop_angle_for(bad)
    rf, X, theta = _problem(d=40, n=4, ratio=1.5, data_seed=7)
    runs = {name: reconstruct(rf, theta, 4, seed=3, max_steps=400, **kw)
            for name, kw in (("default", {}), ("explicit", {"hop_angle": hop_angle_for(40)}),
                             ("d=10 scale", {"hop_angle": HOP_ANGLE}))}
    assert runs["default"].rounds > 1  # the hops were used
    assert np.array_equal(runs["default"].X_hat, runs["explicit"].X_hat)
    assert runs["default"].steps == runs["explicit"].steps
    assert not np.array_equal(runs["default"].X_hat, runs["d=10 scale"].X_hat)
    # any real scale is accepted, numpy's included
    assert reconstruct(rf, theta, 4, seed=3, max_steps=5, hop_angle=np.float32(0.6)).steps <= 5


def test_bad_theta():
    rf, X, theta = _problem(d=10, n=3)
    with pytest.raises(ShapeError, match="shape"):
        reconstruct(rf, theta[:-1], 3)
    with pytest.raises(ShapeError, match="non-finite"):
        bad = theta.copy()
        bad[0] = np.nan
        reconstruct(rf, bad, 3)
    with pytest.raises(ShapeError, match="zero"):
        reconstruct(rf, np.zeros_like(theta), 3)
    with pytest.raises(ShapeError):
        reconstruct(rf, [1.0, 2.0], 3)
    with pytest.raises(RFTheoryError):
        reconstruct("not features", theta, 3)


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("activation", ["relu+tanh", "relu"])
def test_recovery_rate_d20_n10(activation, method):
    # The brief's target at its small setting: ρ < 0.01 in ≥ 90 % of seeds; 5 seeds here, all must
    # pass except possibly one (the benchmark measures the rate over more seeds).
    ok = 0
    for s in range(5):
        rf, X, theta = _problem(activation, d=20, n=10, data_seed=200 + s)
        ok += _rho_abs(X, reconstruct(rf, theta, 10, seed=s, method=method).X_hat) < 0.01
    assert ok >= 4


def test_recovers_at_one_and_a_half_dn():
    # Near the counting threshold (p = 1.5dn, where the L-BFGS method of earlier versions
    # recovered 0 of 4 seeds at d = n = 10): basin-hopping LM recovers every seed tried here.
    for s in range(3):
        rf, X, theta = _problem(d=8, n=6, ratio=1.5, data_seed=300 + s)
        res = reconstruct(rf, theta, 6, seed=s)
        assert res.converged and _rho_abs(X, res.X_hat) < 0.01


def test_recovers_at_one_and_a_quarter_dn():
    # Closer still to the counting limit p = dn (nd unknowns, p equations): p = 1.25dn.
    for s in range(2):
        rf, X, theta = _problem(d=6, n=4, ratio=1.25, data_seed=500 + s)
        res = reconstruct(rf, theta, 4, seed=s)
        assert res.converged and _rho_abs(X, res.X_hat) < 0.01


def test_recovers_at_one_point_one_dn():
    # Issue #26: at p = 1.1dn, 10 % above the counting limit, on fixed seeds (~1 s each).
    for s in range(2):
        rf, X, theta = _problem(d=6, n=4, ratio=1.1, data_seed=700 + s)
        res = reconstruct(rf, theta, 4, seed=s)
        assert res.converged and _rho_abs(X, res.X_hat) < 0.01, (s, res.loss, res.steps)


def test_a_smaller_step_budget_cuts_the_same_run():
    """The step budget only stops a run, it steers nothing: with budget B the run is the
    larger budget's run cut at B (``benchmarks/bench_attack.py --budgets`` reads the success
    within B off one run on this premise)."""
    rf, X, theta = _problem(d=6, n=4, ratio=1.1, data_seed=700)
    full = reconstruct(rf, theta, 4, seed=0)
    assert full.converged and full.rounds > 10       # hops and exchanges: the whole search
    budget = full.steps - 3
    cut = reconstruct(rf, theta, 4, seed=0, max_steps=budget)
    assert cut.stop_reason == "budget" and cut.steps == budget and not cut.converged
    assert cut.history == full.history[:len(cut.history)] and len(cut.history) > 100


def test_default_step_budget_grows_with_d_beyond_40():
    from rftheory.varpro import (STEP_BUDGET, STEP_DIMENSION, default_max_rounds,
                                 default_max_steps)

    assert [default_max_steps(d) for d in (1, 10, 39, 40)] == [STEP_BUDGET] * 4
    assert [default_max_steps(d) for d in (41, 80, 3072)] == [20500, 40000, 1536000]
    assert all(default_max_steps(d) * STEP_DIMENSION >= STEP_BUDGET * d for d in range(1, 200))
    assert [default_max_rounds(b) for b in (1, 3000, 20000, 40000, 60000)] == \
        [1000, 1000, 1000, 2000, 3000]


def test_step_budget_refuses_what_is_not_a_dimension_or_a_method():
    from rftheory.reconstruct import step_budget

    assert step_budget(np.int64(80)) == 40000
    for bad in (0, -3, 2.5, True, "80", None):
        with pytest.raises(ValueError, match="d must be a positive integer"):
            step_budget(bad)
    with pytest.raises(ValueError, match="unknown method 'adam'"):
        step_budget(10, "adam")


@pytest.mark.parametrize("d, method, steps, rounds", [(8, "varpro", 20000, 1000),
                                                     (80, "varpro", 40000, 2000),
                                                     (80, "lbfgs", 20000, 10)])
def test_reconstruct_passes_the_default_budget_of_its_dimension(monkeypatch, d, method, steps,
                                                               rounds):
    # What reconstruct hands its search when no budget is given: varpro's grows with d, the
    # L-BFGS method keeps its own; an explicit budget and round cap are passed as they are.
    import rftheory.reconstruct as rec

    seen = []

    class Seen(Exception):
        pass

    def spy(*args, **kwargs):
        seen.append((kwargs["max_steps"], kwargs["max_rounds"]))
        raise Seen

    monkeypatch.setattr(rec, "minimise", spy)
    monkeypatch.setattr(rec, "_reconstruct_lbfgs", spy)
    rf, X, theta = _problem(d=d, n=2, ratio=2.0, data_seed=5)
    cap_of_77 = 10 if method == "lbfgs" else 1000          # the round cap of a 77-step budget
    for kwargs, want in [({}, (steps, rounds)), ({"max_steps": 77}, (77, cap_of_77)),
                         ({"max_steps": 77, "max_rounds": 5}, (77, 5))]:
        with pytest.raises(Seen):
            rec.reconstruct(rf, theta, 2, seed=0, method=method, **kwargs)
        assert seen.pop() == want


@pytest.mark.parametrize("d, dense", [(12, True), (100, False)])
def test_auto_solver_switch_by_size_recovers_on_both_sides(d, dense):
    # solver="auto" picks the dense Gauss–Newton matrix for n̂d = 48 and matrix-free CG for
    # n̂d = 400 at p = 10dn (p·(n̂d)² = 6.4e8 > DENSE_FLOPS); each side recovers the data.
    from rftheory.varpro import Problem

    rf, X, theta = _problem(d=d, n=4, ratio=10.0, data_seed=800 + d)
    assert Problem(rf, np.asarray(theta)[:, None], np, "cpu").dense_for(4) is dense
    res = reconstruct(rf, theta, 4, seed=0)
    assert res.converged and _rho_abs(X, res.X_hat) < 0.01
    forced = reconstruct(rf, theta, 4, seed=0, solver="cg" if dense else "dense")
    assert forced.converged and _rho_abs(X, forced.X_hat) < 0.01


#: Issue #14's targets near the information limit, (d, n, p/(dn), success rate), relu+tanh,
#: default options; 5 seeds each here (benchmarks/bench_attack.py measures 10 on other seeds).
NEAR_LIMIT_TARGETS = [
    (10, 10, 1.5, 0.8), (20, 10, 1.5, 0.8), (10, 10, 1.25, 0.5), (20, 10, 1.25, 0.5),
]


@pytest.mark.slow
@pytest.mark.parametrize("d, n, ratio, rate", NEAR_LIMIT_TARGETS)
def test_recovery_rate_near_the_information_limit(d, n, ratio, rate):
    seeds = 5
    ok = 0
    for s in range(seeds):
        rf, X, theta = _problem(d=d, n=n, ratio=ratio, data_seed=400 + s)
        ok += _rho_abs(X, reconstruct(rf, theta, n, seed=s).X_hat) < 0.01
    assert ok >= math.ceil(rate * seeds)


@pytest.mark.slow
@pytest.mark.parametrize("activation", ["relu+tanh", "relu"])
def test_recovery_at_scale_d100_n20(activation):
    # Issue #14's large target: p = 10dn at (d, n) = (100, 20), ≥ 90 % success (3 seeds here,
    # all must succeed; the wall-time target is the benchmark's, not a test's).
    for s in range(3):
        rf, X, theta = _problem(activation, d=100, n=20, data_seed=600 + s)
        res = reconstruct(rf, theta, 20, seed=s)
        assert _rho_abs(X, res.X_hat) < 0.01, (s, res.loss, res.stop_reason)


@pytest.mark.parametrize("solver", ["dense", "cg"])
def test_multi_output_theta(solver):
    # k = 3 outputs share the candidates (θ of shape (p, 3)); both LM solvers recover them.
    rng = np.random.default_rng([5, 7])
    X = _sphere(4, 10, rng)
    rf = RandomFeatures("relu+tanh", 10, 3 * 10 * 4, seed=5, v_cache_bytes=2**26)
    theta = train_min_norm(rf, X, rng.standard_normal((4, 3))).theta
    assert theta.shape == (120, 3)
    res = reconstruct(rf, theta, 4, seed=2, solver=solver)
    assert res.converged and _rho_abs(X, res.X_hat) < 0.01
    assert res.coefficients.shape == (4, 3)


def _two_layer(data, loss, k, ratio, seed):
    """A GD-trained two-layer net with W₁ frozen (relu+tanh, W₂(0) = 0) at p^(L) = k·width =
    ratio·dn: (features, θ = ΔW₂ᵀ of shape (width, k), X). Sphere data: d = n = 6, k random
    classes; digits: 5 images, k = 10 classes."""
    from rftheory.data import load_dataset
    from rftheory.twolayer import train_two_layer

    if data == "sphere":
        ds = load_dataset("sphere", 6, d=6, rng=seed)
        classes = np.random.default_rng([seed, 2**41 + 2]).integers(0, k, ds.n)
    else:
        ds = load_dataset("digits", 5, rng=seed)
        classes = np.asarray(ds.classes, dtype=np.int64)
    n, d = ds.X.shape
    Y, tol = (classes, 1e-2) if loss == "cross_entropy" else (np.eye(k)[classes], 1e-16)
    trained = train_two_layer(ds.X, Y, width=round(ratio * d * n / k), activation="relu+tanh",
                              loss=loss, train_first_layer=False, steps=20000, tol=tol, seed=seed,
                              n_classes=k if loss == "cross_entropy" else None)
    return trained.features(), trained.theta, ds.X


@pytest.mark.parametrize("loss", ["cross_entropy", "square"])
def test_k_output_two_layer_at_four_dn(loss):
    # Issue #14: k outputs of a GD-trained net (W₁ frozen) are one problem with weights a of
    # shape (n̂, k); at p^(L) = 4dn the k = 3 net is recovered like a k = 1 model.
    for seed in range(2):
        features, theta, X = _two_layer("sphere", loss, 3, 4.0, seed)
        assert theta.shape == (features.p, 3)
        res = reconstruct(features, theta, X.shape[0], seed=seed)
        assert res.converged and _rho_abs(X, res.X_hat) < 0.01
        assert res.coefficients.shape == (X.shape[0], 3)


@pytest.mark.slow
@pytest.mark.parametrize("loss", [
    pytest.param("cross_entropy", marks=pytest.mark.xfail(
        strict=False, reason="issue #14's k = 10 digits target not reached: 2 of 4 seeds in "
                             "benchmarks/bench_attack.py, seeds 0 and 3 fail "
                             "(paper_notes/attack.md)")),
    "square",
])
def test_k_output_two_layer_digits(loss):
    # Issue #14's example: k = 10 outputs on 5 digits (d = 64) at p^(L) = k·width = 4dn, the
    # target being k = 1's success (10/10 in the benchmark). Measured in the benchmark (same
    # seeds): square 8/10, seeds 0 and 6 failing (their θ has rank 3: 3·width = 1.2dn
    # equations); cross-entropy 2 of 4. Asserted: at least 2 of seeds 0–2.
    ok = 0
    for seed in range(3):
        features, theta, X = _two_layer("digits", loss, 10, 4.0, seed)
        ok += _rho_abs(X, reconstruct(features, theta, X.shape[0], seed=seed).X_hat) < 0.01
    assert ok >= 2


def test_dense_features():
    rf, X, theta = _problem(d=10, n=3, ratio=3)
    dense = DenseFeatures("relu+tanh", rf.weights())
    res = reconstruct(dense, theta, 3, seed=1)
    assert res.converged and _rho_abs(X, res.X_hat) < 0.01


def test_budget_exhausted_in_the_first_pool_phase_returns_the_selected_rows():
    # Regression: a budget spent inside round 1's pool phase used to return the random start.
    import numpy as np

    from rftheory.data import gaussian_labels, sphere_points
    from rftheory.features import RandomFeatures, train_min_norm
    from rftheory.projection import projection_loss
    from rftheory.reconstruct import STREAM_CANDIDATES, reconstruct
    from rftheory.varpro import random_points

    d, n = 8, 4
    rf = RandomFeatures("relu+tanh", d=d, p=10 * d * n, seed=11)
    theta = train_min_norm(rf, sphere_points(n, d, 11), gaussian_labels(n, 11)).theta
    result = reconstruct(rf, theta, n, seed=3, max_steps=15, method="lbfgs")
    start = random_points(np.random.default_rng([3, STREAM_CANDIDATES]), n, d)
    assert result.stop_reason == "budget"
    assert not np.allclose(np.asarray(result.X_hat), start)
    assert result.loss < projection_loss(rf, start, theta, gradient=False).loss


@pytest.mark.parametrize("pool, d, p, single", [
    (10, 100, 20000, True),      # the law's and (100, 20)'s sizes: small blocks, small sweeps
    (40, 100, 20000, True),      # the L-BFGS pool screen of the measurement behind the rule
    (10, 3072, 30720, True),     # CIFAR's dimension at p = dn: one thread measured as fast
    (10, 3072, 307200, False),   # ... at p = 10·dn: two threads 1.47× faster (attack.md)
    (10, 3072, 0, True),         # p unknown: the block rule alone
    (100, 3072, 1000, False),    # a large block product keeps BLAS's threads
])
def test_blas_threads_follow_the_block_and_the_sweep(pool, d, p, single):
    from contextlib import nullcontext

    from threadpoolctl import threadpool_limits

    from rftheory.reconstruct import blas_threads_for

    ctx = blas_threads_for(np, pool, d, p)
    assert isinstance(ctx, threadpool_limits) == single
    assert isinstance(ctx, nullcontext) == (not single)
    if single:
        ctx.restore_original_limits()
