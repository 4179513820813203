"""Per-sample recovery and the per-point span attack (rftheory/sample_recovery.py, span_attack.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rftheory.errors import RFTheoryError, ShapeError
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.sample_recovery import (AttackOutput, reconstruct_attack, sample_recovery,
                                      span_point_attack)
from rftheory.span_attack import span_attack, span_residual, theta_span
from tests.conftest import sphere_points

D, N = 6, 3


def model(p: int, k: int, activation: str = "relu+tanh", seed: int = 0):
    X = sphere_points(N, D, seed=seed + 1)
    Y = np.random.default_rng(seed + 2).standard_normal((N, k) if k > 1 else N)
    f = RandomFeatures(activation, D, p, seed=seed + 3, v_cache_bytes=2**24)
    return f, X, np.asarray(train_min_norm(f, X, Y).theta)


def test_sample_recovery_scores_each_point_on_its_own():
    X = sphere_points(3, D, seed=0)
    cand = np.vstack([X[0] * (1 + 1e-4), -X[1], X[0] + 0.5])
    r = sample_recovery(X, cand)
    assert r.recovered.tolist() == [True, False, False] and r.fraction == pytest.approx(1 / 3)
    assert r.nearest[0] == 0 and r.n_candidates == 3 and r.true_candidates == 2  # −x₁ counts
    r = sample_recovery(X, cand, sign_invariant=True)
    assert r.recovered.tolist() == [True, True, False] and r.count == 2
    assert r.distances[2] == pytest.approx(
        np.min(np.linalg.norm(X[2] - cand, axis=1)) / np.linalg.norm(X[2]))
    empty = sample_recovery(X, np.empty((0, D)))
    assert empty.fraction == 0.0 and empty.n_candidates == 0


def test_sample_recovery_refuses_bad_input():
    X = sphere_points(3, D, seed=0)
    with pytest.raises(ShapeError):
        sample_recovery(X, np.ones((2, D + 1)))
    with pytest.raises(RFTheoryError):
        sample_recovery(X, X, tol=0.0)


@pytest.mark.parametrize("k, rank", [(1, 1), (2, 2), (3, 3), (5, 3)])
def test_theta_span_rank_is_min_n_k(k, rank):
    f, X, theta = model(30, k)
    s = theta_span(theta)
    assert s.rank == rank and np.allclose(s.basis.T @ s.basis, np.eye(rank))


def test_span_residual_value_gradient_and_floor():
    f, X, theta = model(40, N)
    s = theta_span(theta)
    # A training feature lies in span θ (rank n): its residual is at the rounding floor.
    assert all(span_residual(f, s, X[i], gradient=False)[0] < 1e-26 for i in range(N))
    x = sphere_points(1, D, seed=9)[0]
    value, g = span_residual(f, s, x)
    phi = f.features(x[None, :])[0]
    Phi = f.features(X)
    coef = np.linalg.lstsq(Phi.T, phi, rcond=None)[0]
    r = phi - Phi.T @ coef
    assert value == pytest.approx(r @ r / (phi @ phi), rel=1e-10)
    h = 1e-6
    fd = [(span_residual(f, s, x + h * e, gradient=False)[0]
           - span_residual(f, s, x - h * e, gradient=False)[0]) / (2 * h) for e in np.eye(D)]
    assert np.allclose(g, fd, rtol=1e-5, atol=1e-9)


def test_span_attack_recovers_every_point_from_n_plus_d():
    # p = n + d + 2: the only zeros of r are the training points (relu+tanh: no sign symmetry).
    f, X, theta = model(N + D + 2, N)
    out = span_attack(f, theta, starts=30, seed=0)
    rec = sample_recovery(X, out.candidates)
    assert out.rank == N and rec.count == N
    assert rec.true_candidates == rec.n_candidates  # no spurious zero
    assert np.all(rec.distances < 1e-6)


def test_span_attack_finds_spurious_zeros_below_n_plus_d():
    # p ≤ n + d − 2: a zero manifold through each x_i; starts land anywhere on it.
    f, X, theta = model(N + D - 3, N)
    out = span_attack(f, theta, starts=10, seed=0)
    rec = sample_recovery(X, out.candidates)
    assert out.candidates.shape[0] >= 5 and rec.true_candidates < rec.n_candidates


def test_attacks_share_one_protocol_and_k1_needs_p_of_order_dn():
    # k = 1 at p = 4dn: the set reconstruction recovers every point; at p = dn/2 it reaches a
    # zero of the loss (spurious: the zero set has dimension nd − p) that recovers none.
    attack = reconstruct_attack(max_steps=3000)
    f, X, theta = model(4 * D * N, 1)
    out = attack(f, theta, N, 0)
    assert isinstance(out, AttackOutput) and out.candidates.shape == (N, D)
    assert sample_recovery(X, out.candidates).count == N
    f, X, theta = model(D * N // 2, 1)
    out = attack(f, theta, N, 0)
    assert out.info["runs"][0]["loss"] < 1e-10
    assert sample_recovery(X, out.candidates).count == 0
    pooled = reconstruct_attack(restarts=2, max_steps=500)(f, theta, N, 0)
    assert pooled.candidates.shape == (2 * N, D) and len(pooled.info["runs"]) == 2
    f, X, theta = model(N + D + 2, N)
    out = span_point_attack(starts_per_point=10)(f, theta, N, 0)
    assert out.info["rank"] == N and sample_recovery(X, out.candidates).count == N
