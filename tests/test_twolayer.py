"""Two-layer networks trained by gradient descent (rftheory.twolayer) and reconstruction from them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rftheory.errors import RFTheoryError, ShapeError
from rftheory.features import DenseFeatures, RandomFeatures, train_min_norm
from rftheory.metrics import rho
from rftheory.projection import projection_loss
from rftheory.twolayer import (
    TrainingDivergedError,
    TwoLayerNetwork,
    encode_targets,
    init_network,
    loss_and_gradients,
    train_two_layer,
)

from tests.conftest import cupy_or_skip, sphere_points


def _problem(loss: str, n: int = 6, d: int = 5, k: int = 3, seed: int = 0):
    """Data on the √d-sphere and labels of the right kind for ``loss``."""
    rng = np.random.default_rng([seed, 99])
    X = sphere_points(n, d, seed)
    if loss == "square":
        Y = rng.standard_normal((n, k)) if k > 1 else rng.standard_normal(n)
    elif loss == "logistic":
        Y = rng.choice(np.array([-1.0, 1.0]), size=n)
    else:
        Y = rng.integers(0, k, size=n)
    return X, Y


# -- gradients ------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss, k", [("square", 1), ("square", 3), ("logistic", 1),
                                     ("cross_entropy", 3)])
@pytest.mark.parametrize("scaling", ["standard", "ntk"])
def test_gradients_match_finite_differences(loss, k, scaling):
    X, Y = _problem(loss, k=k)
    net0 = init_network("tanh", X.shape[1], 7, k, seed=1, scaling=scaling,
                        last_layer_init="normal", last_layer_scale=3.0)
    T = encode_targets(Y, loss, X.shape[0], n_classes=k if loss == "cross_entropy" else None)
    ev = loss_and_gradients(net0, X, T, loss)
    rng = np.random.default_rng(5)
    D1 = rng.standard_normal(net0.W1.shape)
    D2 = rng.standard_normal(net0.W2.shape)
    h = 1e-5

    def value(t):
        net = TwoLayerNetwork(net0.activation, net0.W1 + t * D1, net0.W2 + t * D2, scaling)
        return loss_and_gradients(net, X, T, loss, gradient=False).loss

    fd = (value(h) - value(-h)) / (2 * h)
    analytic = float(np.sum(ev.grad_W1 * D1) + np.sum(ev.grad_W2 * D2))
    # Central differences with a smooth φ = tanh: truncation error ~h²·|f'''| ≈ 1e-10 and rounding
    # ~eps·|f|/h ≈ 1e-11, both far below 1e-6 relative to a directional derivative of order one.
    assert fd == pytest.approx(analytic, rel=1e-6, abs=1e-9)


def test_relu_gradients_match_finite_differences_away_from_kinks():
    X, Y = _problem("square", k=2)
    net0 = init_network("relu", X.shape[1], 9, 2, seed=3, last_layer_init="normal")
    T = encode_targets(Y, "square", X.shape[0])
    ev = loss_and_gradients(net0, X, T, "square")
    rng = np.random.default_rng(8)
    D1 = rng.standard_normal(net0.W1.shape)
    Z = X @ net0.W1.T
    dZ = X @ D1.T
    h = 1e-7
    # No pre-activation crosses the kink within ±h, so the loss is smooth along the segment.
    assert np.min(np.abs(Z) / np.maximum(np.abs(dZ), 1e-300)) > 10 * h

    def value(t):
        net = TwoLayerNetwork(net0.activation, net0.W1 + t * D1, net0.W2)
        return loss_and_gradients(net, X, T, "square", gradient=False).loss

    fd = (value(h) - value(-h)) / (2 * h)
    # ReLU is piecewise linear: the only FD error is rounding ~eps·|f|/h ≈ 1e-9.
    assert fd == pytest.approx(float(np.sum(ev.grad_W1 * D1)), rel=1e-6, abs=1e-8)


def test_loss_values_at_zero_last_layer():
    # f ≡ 0: square = ½·mean‖y‖², logistic = log 2, cross-entropy = log k (uniform softmax),
    # closed forms independent of the implementation's stable rewrites.
    for loss, k, expected in [("logistic", 1, math.log(2)), ("cross_entropy", 4, math.log(4))]:
        X, Y = _problem(loss, k=k)
        net = init_network("relu", X.shape[1], 5, k)
        T = encode_targets(Y, loss, X.shape[0], n_classes=k if k > 1 else None)
        assert loss_and_gradients(net, X, T, loss).loss == pytest.approx(expected, rel=1e-15)
    X, Y = _problem("square", k=2)
    net = init_network("relu", X.shape[1], 5, 2)
    T = encode_targets(Y, "square", X.shape[0])
    got = loss_and_gradients(net, X, T, "square").loss
    assert got == pytest.approx(0.5 * np.mean(np.sum(Y * Y, axis=1)), rel=1e-15)


def test_logistic_loss_is_stable_for_large_margins():
    X, Y = _problem("logistic")
    net = init_network("tanh", X.shape[1], 4, 1, seed=0, last_layer_init="normal",
                       last_layer_scale=1e4)
    T = encode_targets(Y, "logistic", X.shape[0])
    ev = loss_and_gradients(net, X, T, "logistic")
    assert math.isfinite(ev.loss) and np.all(np.isfinite(ev.grad_W1))
    assert np.all(np.isfinite(ev.grad_W2))


# -- GD on the last layer is the random-features model ------------------------------------------

def test_first_layer_init_is_the_random_features_V():
    net = init_network("relu", 6, 40, 2, seed=7)
    V = RandomFeatures("relu", 6, 40, seed=7).weights()
    np.testing.assert_array_equal(net.W1, V)
    np.testing.assert_array_equal(net.W2, 0.0)


def test_gd_on_last_layer_converges_to_min_norm_interpolator():
    d, n, width = 5, 8, 120
    X = sphere_points(n, d, 2)
    Y = np.random.default_rng(4).standard_normal(n)
    res = train_two_layer(X, Y, width=width, activation="relu", train_first_layer=False,
                          steps=20000, tol=1e-28, seed=11)
    assert res.stop_reason == "tolerance"
    np.testing.assert_array_equal(res.network.W1, res.initial.W1)  # frozen
    star = train_min_norm(RandomFeatures("relu", d, width, seed=11), X, Y)
    # GD from W₂(0) = 0 stays in the row space of Φ; at training loss ½‖r‖²/n ≤ 1e-28 the
    # distance to θ* is ≤ ‖r‖/σ_min(Φ) ~ 1e-13 relative — 1e-9 leaves room for rounding over
    # ~10³ steps.
    err = np.linalg.norm(res.theta - star.theta) / np.linalg.norm(star.theta)
    assert err < 1e-9


@pytest.mark.parametrize("loss, k", [("square", 1), ("logistic", 1), ("cross_entropy", 3),
                                     ("square", 3)])
def test_last_layer_change_lies_in_the_span_when_first_layer_frozen(loss, k):
    X, Y = _problem(loss, n=6, d=5, k=k, seed=3)
    res = train_two_layer(X, Y, width=80, activation="relu+tanh", loss=loss,
                          train_first_layer=False, steps=300, seed=2, last_layer_init="normal",
                          n_classes=k if loss == "cross_entropy" else None)
    assert res.theta.shape == ((80,) if k == 1 else (80, k))
    in_span = projection_loss(res.features(), X, res.theta, gradient=False).loss
    # ΔW₂ is a sum of GD steps c·RᵀΦ: in the span up to rounding (‖P⊥θ‖²/‖θ‖² ~ eps² ≈ 1e-32).
    assert in_span < 1e-20
    other = sphere_points(6, 5, 99)
    assert projection_loss(res.features(), other, res.theta, gradient=False).loss > 1e-3


def test_output_scaling_does_not_change_the_frozen_first_layer_path():
    X, Y = _problem("square", k=2)
    outs = [train_two_layer(X, Y, width=30, activation="tanh", train_first_layer=False, steps=40,
                            scaling=scaling).network(X)
            for scaling in ("standard", "ntk", "mean_field")]
    # η ∝ 1/c² makes the function-space step −(n/λ_max)·ΦΦᵀR independent of c; only rounding
    # differs (~1e-15 relative per step over 40 steps).
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(outs[2], outs[0], rtol=1e-10, atol=1e-12)


def test_training_reports_history_accuracy_and_first_layer_motion():
    X, Y = _problem("cross_entropy", n=9, d=5, k=3)
    res = train_two_layer(X, Y, width=60, activation="tanh", loss="cross_entropy", steps=400,
                          seed=1, last_layer_init="normal", record_every=50)
    steps = [h[0] for h in res.history]
    assert steps[0] == 0 and steps[-1] == res.steps == 400
    assert res.history[-1][1] == res.train_loss < res.history[0][1]
    assert res.train_accuracy == 1.0
    assert 0 < res.first_layer_change < 1
    assert res.network.k == 3 and res.network.last_layer_parameters == 180


# -- reconstruction ------------------------------------------------------------------------------

def test_reconstruction_from_trained_network_at_ten_dn():
    from rftheory.reconstruct import reconstruct

    d = n = 5
    X = sphere_points(n, d, 0)
    Y = np.random.default_rng(0).standard_normal(n)
    res = train_two_layer(X, Y, width=10 * d * n, activation="relu+tanh", steps=5000, tol=1e-20,
                          seed=0)
    assert res.first_layer_change > 0  # both layers trained: ΔW₂ only nearly in the span
    # The reconstruction's seed must differ from the data's: both draw default_rng(seed) normals.
    rec = reconstruct(res.features(), res.theta, n, seed=1000, max_steps=1500)
    # Measured ρ ≈ 4e-4 (the first layer's motion leaves a span residual ≈ 4e-11 here, 1e-8 to
    # 2e-4 for other seeds); failed reconstructions sit at ρ ≈ 0.3–0.6.
    assert rho(X, rec.X_hat) < 0.01


def test_multi_output_reconstruction_uses_one_shared_feature_block():
    from rftheory.reconstruct import reconstruct

    d = n = 4
    k = 3
    X = sphere_points(n, d, 6)
    labels = np.array([0, 1, 2, 1])
    res = train_two_layer(X, labels, width=10 * d * n // k, activation="relu+tanh",
                          loss="cross_entropy", train_first_layer=False, steps=200, seed=6,
                          last_layer_init="normal")
    assert res.theta.shape == (res.network.width, k)
    rec = reconstruct(res.features(), res.theta, n, seed=1006, max_steps=1500)
    # W₁ frozen: ΔW₂ is exactly in the span, the loss reaches the 1e-10 tolerance and ρ ~ 1e-5.
    assert rho(X, rec.X_hat) < 0.01


# -- bad input ------------------------------------------------------------------------------------

def test_bad_input_raises_clear_errors():
    X, Y = _problem("square", k=1)
    with pytest.raises(RFTheoryError, match="unknown loss"):
        train_two_layer(X, Y, width=4, loss="hinge")
    with pytest.raises(ShapeError, match="shape"):
        train_two_layer(X, Y[:-1], width=4)
    with pytest.raises(ShapeError, match="2-D"):
        train_two_layer(X[0], Y, width=4)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ShapeError, match="non-finite"):
        train_two_layer(bad, Y, width=4)
    with pytest.raises(ShapeError, match="non-finite"):
        train_two_layer(X, np.full(X.shape[0], np.inf), width=4)
    with pytest.raises(RFTheoryError, match="width"):
        train_two_layer(X, Y, width=0)
    with pytest.raises(RFTheoryError, match="width is required"):
        train_two_layer(X, Y)
    with pytest.raises(RFTheoryError, match="scaling"):
        train_two_layer(X, Y, width=4, scaling="xavier")
    with pytest.raises(RFTheoryError, match="last_layer_init"):
        train_two_layer(X, Y, width=4, last_layer_init="ones")
    with pytest.raises(RFTheoryError, match="-1 or \\+1"):
        train_two_layer(X, np.arange(X.shape[0]) % 2, width=4, loss="logistic")
    with pytest.raises(ShapeError, match="k = 1"):
        train_two_layer(X, np.ones((X.shape[0], 2)), width=4, loss="logistic")
    with pytest.raises(ShapeError, match="integer"):
        train_two_layer(X, Y, width=4, loss="cross_entropy")
    with pytest.raises(ShapeError, match="does not fit"):
        train_two_layer(X, np.arange(X.shape[0]), width=4, loss="cross_entropy", n_classes=3)
    with pytest.raises(RFTheoryError, match="learning_rate"):
        train_two_layer(X, Y, width=4, learning_rate=-1.0)


def test_k_mismatch_with_initial_network():
    X, Y = _problem("square", k=2)
    net = init_network("relu", X.shape[1], 5, k=3)
    with pytest.raises(ShapeError, match="k = 2 .* k = 3"):
        train_two_layer(X, Y, initial=net)
    with pytest.raises(ShapeError, match="7 columns"):
        train_two_layer(sphere_points(6, 7, 0), Y, initial=net)
    T = encode_targets(Y, "square", X.shape[0])
    with pytest.raises(ShapeError, match="targets"):
        loss_and_gradients(net, X, T)
    with pytest.raises(ShapeError, match="columns"):
        TwoLayerNetwork("relu", net.W1, np.zeros((3, 4)))


def test_divergence_is_reported():
    X, Y = _problem("square")
    with pytest.raises(TrainingDivergedError, match="diverged"):
        train_two_layer(X, Y, width=20, lr_scale=50.0, steps=200, last_layer_init="normal")


# -- backends ------------------------------------------------------------------------------------

def test_array_api_strict_matches_numpy(xp_strict):
    X, Y = _problem("cross_entropy", k=3)
    kw = dict(width=12, activation="relu+tanh", loss="cross_entropy", steps=30, seed=2,
              last_layer_init="normal")
    ref = train_two_layer(X, Y, **kw)
    got = train_two_layer(xp_strict.asarray(X), xp_strict.asarray(Y), **kw)
    assert type(got.network.W1).__module__.startswith("array_api_strict")
    assert isinstance(got.features(), DenseFeatures)
    # Same operations in the same order on the same float64 data: identical up to rounding.
    np.testing.assert_allclose(np.asarray(got.network.W1), ref.network.W1, rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.asarray(got.theta), ref.theta, rtol=1e-12, atol=1e-14)
    assert got.train_loss == pytest.approx(ref.train_loss, rel=1e-12)


@pytest.mark.gpu
def test_cupy_matches_numpy():
    cp = cupy_or_skip()
    X, Y = _problem("square", k=2)
    kw = dict(width=16, activation="relu", steps=50, seed=1, last_layer_init="normal")
    ref = train_two_layer(X, Y, **kw)
    got = train_two_layer(cp.asarray(X), cp.asarray(Y), **kw)
    assert isinstance(got.network.W1, cp.ndarray)
    # Same float64 arithmetic on another BLAS: agreement to ~1e-12 relative.
    np.testing.assert_allclose(cp.asnumpy(got.theta), ref.theta, rtol=1e-9, atol=1e-12)
