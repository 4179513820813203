"""The numerical rank of θ (rftheory.rank) and the rank the two-layer runs report."""

from __future__ import annotations

import numpy as np
import pytest

from rftheory.errors import ShapeError
from rftheory.rank import numerical_rank, singular_values


def test_rank_counts_independent_columns():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((50, 3)), rng.standard_normal((3, 7))
    assert numerical_rank(A @ B) == 3  # a product of rank 3, 7 columns
    assert numerical_rank(rng.standard_normal((50, 7))) == 7
    assert numerical_rank(np.zeros((5, 2))) == 0
    assert numerical_rank(rng.standard_normal(9)) == 1
    # a rank-1 matrix plus 1e-9 noise: full rank at the SVD's rounding level (50·eps ≈ 1e-14),
    # rank 1 with a stated relative tolerance of 1e-6
    noisy = np.outer(A[:, 0], B[0]) + 1e-9 * rng.standard_normal((50, 7))
    assert numerical_rank(noisy) == 7 and numerical_rank(noisy, rtol=1e-6) == 1
    assert singular_values(A @ B).shape == (7,)


def test_rank_refuses_bad_input():
    with pytest.raises(ShapeError):
        numerical_rank(np.ones((2, 2, 2)))
    with pytest.raises(ShapeError):
        numerical_rank(np.array([[np.nan]]))


def test_cross_entropy_theta_has_rank_at_most_k_minus_1():
    """With W₂(0) = 0, every cross-entropy gradient's rows sum to zero over the k classes, so
    θ = ΔW₂ᵀ·1 = 0 and r ≤ k − 1; the square loss on one-hot targets has no such constraint."""
    from rftheory.data import sphere_points
    from rftheory.twolayer import train_two_layer

    X = sphere_points(6, 5, seed=0)
    classes = np.array([0, 1, 2, 3, 0, 1])
    ce = train_two_layer(X, classes, width=40, activation="tanh", loss="cross_entropy",
                         train_first_layer=False, steps=300, tol=1e-2, seed=0,
                         last_layer_init="zero", n_classes=4)
    theta = np.asarray(ce.theta)
    assert theta.shape == (40, 4)
    assert numerical_rank(theta) == 3
    sq = train_two_layer(X, np.eye(4)[classes], width=40, activation="tanh", loss="square",
                         train_first_layer=False, steps=300, tol=1e-16, seed=0,
                         last_layer_init="zero")
    assert numerical_rank(np.asarray(sq.theta)) == 4
