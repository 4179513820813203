"""Collision patterns, their δ → 0 limits and region minima (rftheory/collisions.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg

from rftheory.collisions import (Collision, collision_assignments, collision_limit,
                                 collision_region_minimum, collision_types, kink_radius,
                                 limit_configuration, max_region_radius, min_collision_limit,
                                 zero_threshold)
from rftheory.data import tangent_basis
from rftheory.errors import RFTheoryError, ShapeError
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.projection import projection_loss
from tests.conftest import sphere_points

D = 5


def model(activation: str, n: int, p: int, seed: int = 0, d: int = D):
    X = sphere_points(n, d, seed=seed + 10)
    Y = np.random.default_rng(seed + 20).standard_normal(n)
    f = RandomFeatures(activation, d, p, seed=seed + 30, v_cache_bytes=2**24)
    return f, X, np.asarray(train_min_norm(f, X, Y).theta)


def dense_columns(f, X, collision):
    """[φ(x_i) (i ∈ S), diag φ′(Vx_i) V B_i (m_i ≥ 2)] from materialised V (independent path)."""
    V = f.weights()
    cols = [f.activation(V @ X[i]) for i in collision.support]
    for i in collision.multiple:
        B = scipy.linalg.null_space(X[i][None, :])
        cols += list((f.activation.derivative(V @ X[i])[:, None] * (V @ B)).T)
    return np.array(cols).T


def residual(A, theta):
    coef = np.linalg.lstsq(A, theta, rcond=None)[0]
    r = theta - A @ coef
    return float(r @ r / (theta @ theta))


# -- patterns -------------------------------------------------------------------------------

def test_types_are_partitions_with_a_collision():
    assert collision_types(2) == [(2,)]
    assert collision_types(3) == [(2, 1), (3,)]
    assert collision_types(4) == [(2, 1, 1), (2, 2), (3, 1), (4,)]
    # p(8) = 22 and p(16) = 231 partitions, minus the all-ones one.
    assert len(collision_types(8)) == 21 and len(collision_types(16)) == 230
    assert all(t[0] >= 2 and sum(t) == 8 for t in collision_types(8))
    # n̂ < n: some parts may be missing; every type still has a part ≥ 2.
    assert collision_types(4, n_hat=3) == [(2, 1), (3,)]


@pytest.mark.parametrize("kind, n", [((2, 1), 3), ((2, 2, 1), 5), ((3, 1, 1), 6), ((2,), 4)])
def test_assignments_are_the_distinct_placements(kind, n):
    got = [c.multiplicities for c in collision_assignments(kind, n)]
    counts = {v: kind.count(v) for v in set(kind)}
    counts[0] = n - len(kind)
    expected = math.factorial(n) // math.prod(math.factorial(c) for c in counts.values())
    assert len(got) == len(set(got)) == expected
    assert all(sorted(m, reverse=True)[: len(kind)] == sorted(kind, reverse=True) for m in got)


def test_collision_properties_and_threshold():
    c = Collision((0, 3, 1, 2, 0, 0))
    assert (c.n, c.n_hat, c.support, c.left_out, c.multiple) == (6, 6, (1, 2, 3), (0, 4, 5), (1, 3))
    assert c.type == (3, 2, 1) and c.lost == 3 and c.centres == (1, 1, 1, 2, 3, 3)
    assert c.label() == "3+2+1" and c.is_duplicate and not Collision((1, 1)).is_duplicate
    # p* = n̂ + ℓ(d − 2): one pair n + d − 2; all candidates on one point nd − n − d + 2.
    assert zero_threshold(Collision((2, 1, 1, 0)), 6) == 4 + 6 - 2
    assert zero_threshold(Collision((4, 0, 0, 0)), 6) == 4 * 6 - 4 - 6 + 2


@pytest.mark.parametrize("bad", [(), (-1, 2), (True, 1), (0, 0), (1.5, 1)])
def test_bad_multiplicities_are_refused(bad):
    with pytest.raises(RFTheoryError):
        Collision(bad)


def test_bad_inputs_raise_clear_errors():
    f, X, theta = model("tanh", 3, 30)
    with pytest.raises(ShapeError):
        collision_limit(f, X[:2], theta, (2, 1, 0))
    with pytest.raises(ShapeError):
        collision_limit(f, X, theta[:-1], (2, 1, 0))
    with pytest.raises(RFTheoryError):
        collision_region_minimum(f, X, theta, (2, 1, 0), 2.5)
    with pytest.raises(RFTheoryError):
        list(collision_assignments((2, 1, 1, 1), 3))


def test_geometry_helpers():
    X = sphere_points(3, D, seed=1)
    B = tangent_basis(X[0])
    assert np.allclose(B.T @ B, np.eye(D - 1)) and np.allclose(X[0] @ B, 0)
    assert kink_radius(RandomFeatures("tanh", D, 20), X) == math.inf
    r = kink_radius(RandomFeatures("relu", D, 20), X)
    V = RandomFeatures("relu", D, 20).weights()
    # At distance just below r√d no pre-activation changes sign; the bound is attained.
    ratios = np.abs(X @ V.T) / np.linalg.norm(V, axis=1) / math.sqrt(D)
    assert r == pytest.approx(ratios.min(), rel=1e-12)
    c = Collision((2, 1, 0))
    dist = min(np.linalg.norm(X[i] - s * X[j]) for i in (0, 1) for j in range(3) if j != i
               for s in (1, -1))
    assert max_region_radius(X, c) == pytest.approx(min(dist, 2 * math.sqrt(D)) / (2 * math.sqrt(D)))


# -- the limit: closed forms -------------------------------------------------------------------

@pytest.mark.parametrize("activation", ["tanh", "relu+tanh", "relu"])
@pytest.mark.parametrize("mult", [(2, 0), (2, 1, 0), (2, 2, 0, 0), (2, 1, 1, 0)])
def test_pair_limit_is_the_residual_on_the_first_order_span(activation, mult):
    f, X, theta = model(activation, len(mult), 12 * len(mult))
    c = Collision(mult)
    lim = collision_limit(f, X, theta, c)
    A = dense_columns(f, X, c)
    assert lim.dimension == A.shape[1] == len(c.support) + (D - 1) * len(c.multiple)
    assert lim.exact and lim.loss == lim.first_order_loss == lim.lower_bound
    assert lim.loss == pytest.approx(residual(A, theta), rel=1e-9)


@pytest.mark.parametrize("mult", [(2, 0), (2, 2, 0, 0)])
def test_no_choice_of_directions_beats_the_closed_form(mult):
    # The limit of a configuration is span{F_S, J_i B u_i}: one direction per multiple point.
    # The closed form claims the best directions reach the whole J_i B_i blocks.
    f, X, theta = model("tanh", len(mult), 40)
    c = Collision(mult)
    lim = collision_limit(f, X, theta, c)
    V = f.weights()
    F = np.array([f.activation(V @ X[i]) for i in c.support]).T
    J = {i: f.activation.derivative(V @ X[i])[:, None] * V for i in c.multiple}
    rng = np.random.default_rng(0)
    for _ in range(200):
        extra = []
        for i in c.multiple:
            u = rng.standard_normal(D)
            extra.append(J[i] @ (u - (u @ X[i]) * X[i] / D))
        assert residual(np.column_stack([F] + extra), theta) >= lim.loss * (1 - 1e-9)
    # ... and the directions it reports attain it.
    best = [J[i] @ lim.directions[i]["u"] for i in c.multiple]
    assert residual(np.column_stack([F] + best), theta) == pytest.approx(lim.loss, rel=1e-8)


@pytest.mark.parametrize("activation, mult", [("tanh", (3, 0, 0)), ("erf", (3, 1, 0, 0)),
                                              ("relu+tanh", (3, 1, 0, 0))])
def test_triple_limit_is_approached_by_curvilinear_triples(activation, mult):
    f, X, theta = model(activation, len(mult), 10 * len(mult))
    lim = collision_limit(f, X, theta, mult)
    assert lim.exact and lim.lower_bound <= lim.loss <= lim.first_order_loss
    # Three candidates on the curve exp(tu + t²s/2) at t = −τ, 0, τ: the loss tends to L₀ as
    # τ → 0, at rate O(τ) (the first correction of the spanned plane). Conditioning ~τ⁻⁴ keeps
    # τ ≥ 1e-3 (relu+tanh: below the kink radius is then out of reach; the ReLU part is
    # linear and adds nothing at second order, so the smooth picture still holds at τ = 1e-3).
    # Measured (tanh, erf, relu+tanh): gaps 6e-2/4e-2/4.0 at τ = 0.1, 6e-4/4e-4/1e-4 at 1e-2,
    # 1e-4/2e-5/6e-5 at 1e-3 — the last is the rounding floor κ·eps ~ τ⁻⁴·1e-16, not the rate
    # (it moves with the BLAS kernel: 7.8e-4 for relu+tanh on an AVX-512 Xeon).
    gaps = [abs(projection_loss(f, limit_configuration(X, lim, h), theta, gradient=False).loss
                - lim.loss) / lim.loss for h in (1e-1, 1e-2, 1e-3)]
    assert gaps[1] < 2e-3 and gaps[1] < gaps[0] / 5  # at least the O(τ) rate above the floor
    # At τ = 1e-3 only the floor is left: the rate's part is below gaps[1], and the rounding of a
    # projection with condition κ ~ τ⁻⁴ (three candidates within τ) is a few κ·eps; 10 κ·eps
    # bounds it on any IEEE-754 machine (2.2e-3 here), and still catches a limit that is wrong.
    eps, tau = np.finfo(np.float64).eps, 1e-3
    assert gaps[2] < gaps[1] + 10 * eps * tau**-4


def test_relu_triples_add_nothing_beyond_first_order():
    # Inside the kink radius ReLU features are linear in x̂ (φ(Vx̂) = J x̂): q(u) ∈ span{φ(x), JB}.
    f, X, theta = model("relu", 3, 30)
    lim = collision_limit(f, X, theta, (3, 0, 0))
    assert lim.loss == pytest.approx(lim.first_order_loss, rel=1e-12)
    assert lim.lower_bound == pytest.approx(lim.first_order_loss, rel=1e-12)


@pytest.mark.parametrize("activation", ["tanh", "relu+tanh"])
@pytest.mark.parametrize("mult", [(2, 1, 0), (2, 2, 0, 0), (2, 1, 1, 0)])
def test_pair_limits_vanish_exactly_up_to_the_dimension_count(activation, mult):
    c = Collision(mult)
    thr = zero_threshold(c, D)
    below = collision_limit(*model(activation, c.n, thr), c)
    above = collision_limit(*model(activation, c.n, thr + 1), c)
    assert below.loss < 1e-20 < 1e-6 < above.loss


def test_triple_limit_vanishes_below_its_count_and_not_above():
    # (3, 0, 0) with d = 5: p* = 3 + 2·3 = 9; below it the zero set in u is a curve.
    c = Collision((3, 0, 0))
    thr = zero_threshold(c, D)
    lim_below = collision_limit(*model("tanh", 3, thr - 1), c)
    lim_above = collision_limit(*model("tanh", 3, thr + 1), c)
    assert lim_below.first_order_loss > 1e-4  # the second-order term is what reaches zero
    assert lim_below.loss < 1e-9
    assert lim_above.loss > 1e-4


def test_search_over_placements_matches_brute_force():
    f, X, theta = model("tanh", 4, 40)
    for kind in [(2, 1, 1), (2, 2), (3, 1)]:
        search = min_collision_limit(f, X, theta, kind)
        brute = min(collision_limit(f, X, theta, c).loss for c in collision_assignments(kind, 4))
        assert search.certified and search.screened == len(list(collision_assignments(kind, 4)))
        assert search.best.loss == pytest.approx(brute, rel=1e-9)
        # Screening values agree with the exact ones (Gram accuracy).
        assert search.table[0][1] == pytest.approx(
            collision_limit(f, X, theta, search.table[0][0]).first_order_loss, rel=1e-6)
    assert not min_collision_limit(f, X, theta, (4,), max_refine=2).certified
    # No part ≥ 2: the leave-one-out baseline, min_j ‖P⊥_{φ(x_i), i ≠ j}θ‖².
    base = min_collision_limit(f, X, theta, (1, 1, 1))
    brute = min(residual(dense_columns(f, X, Collision(tuple(int(i != j) for i in range(4)))),
                         theta) for j in range(4))
    assert base.best.loss == pytest.approx(brute, rel=1e-9)


# -- the region minimum ------------------------------------------------------------------------

def test_region_minimum_tends_to_the_limit():
    f, X, theta = model("tanh", 3, 30)
    for mult in [(2, 1, 0), (2, 0, 0)]:
        lim = collision_limit(f, X, theta, mult)
        gaps = [(lim.loss - collision_region_minimum(f, X, theta, mult, dl, random_starts=0,
                                                     limit=lim).loss) / lim.loss
                for dl in (1e-2, 1e-3)]
        # inf over D(δ) ≤ L₀ (the limit is approached inside every region), within O(δ).
        assert -1e-6 < gaps[1] < 1e-2 and gaps[1] < gaps[0] / 3


def test_region_minimum_of_a_triple_tends_to_its_limit():
    f, X, theta = model("tanh", 3, 24)
    lim = collision_limit(f, X, theta, (3, 0, 0))
    out = collision_region_minimum(f, X, theta, (3, 0, 0), 1e-3, random_starts=0, limit=lim)
    # Not below the (exact) limit by more than O(δ), and not above it by more than the start's
    # O(τ) error: the region cannot beat the second-order limit, while first order alone would
    # leave it at the (higher) first-order value.
    assert abs(out.loss - lim.loss) < 1e-3 * lim.loss < (lim.first_order_loss - lim.loss)


def test_relu_region_minimum_equals_limit_inside_kink_radius():
    # No single candidates: inside the kink radius every φ(Vx̂_j) = J x̂_j ∈ span{φ(x), JB}, so
    # the minimum over D(δ) is exactly the first-order limit.
    f, X, theta = model("relu", 2, 20)
    r = kink_radius(f, X[0])
    lim = collision_limit(f, X, theta, (2, 0))
    out = collision_region_minimum(f, X, theta, (2, 0), r / 2, random_starts=2, limit=lim)
    assert out.loss == pytest.approx(lim.loss, rel=1e-8)
    assert out.max_distance <= r / 2 * (1 + 1e-9)


def test_region_minimum_is_bounded_away_at_large_p_and_zero_below_the_count():
    f, X, theta = model("tanh", 3, 60)
    lim = collision_limit(f, X, theta, (2, 1, 0))
    out = collision_region_minimum(f, X, theta, (2, 1, 0), 0.2, random_starts=1, limit=lim)
    assert 1e-4 < out.loss <= lim.loss
    assert projection_loss(f, X, theta, gradient=False).loss < 1e-20  # the true set
    f, X, theta = model("tanh", 3, zero_threshold(Collision((2, 1, 0)), D))
    out = collision_region_minimum(f, X, theta, (2, 1, 0), 0.2, random_starts=1,
                                   limit=collision_limit(f, X, theta, (2, 1, 0)))
    assert out.loss < 1e-12


def test_limit_in_the_strict_array_namespace_matches_numpy(xp_strict):
    f, X, theta = model("tanh", 3, 30)
    ref = collision_limit(f, X, theta, (3, 0, 0))
    got = collision_limit(f, xp_strict.asarray(X), xp_strict.asarray(theta), (3, 0, 0))
    assert got.loss == pytest.approx(ref.loss, rel=1e-10)
    assert got.first_order_loss == pytest.approx(ref.first_order_loss, rel=1e-12)
