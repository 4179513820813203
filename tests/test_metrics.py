import itertools
import math

import numpy as np
import pytest
from scipy.linalg import hadamard

from rftheory.errors import RFTheoryError, ShapeError
from rftheory.metrics import VARIANTS, match, rho
from tests.conftest import cupy_or_skip, sphere_points

# Exact answers below are sums of a few square roots; 1e-12 covers float64 rounding of cdist.
EXACT = 1e-12


def basis_points(d: int) -> np.ndarray:
    """√d·e_i: orthogonal points on the √d-sphere, so every pairwise distance is known."""
    return math.sqrt(d) * np.eye(d)


@pytest.mark.parametrize("variant", VARIANTS)
def test_permutation_is_recovered_exactly(variant):
    X = sphere_points(6, 5, seed=0)
    perm = np.array([3, 0, 5, 1, 4, 2])
    m = match(X, X[perm], variant)
    assert m.rho == pytest.approx(0.0, abs=EXACT)
    # candidate perm^-1(i) holds x_i
    np.testing.assert_array_equal(m.assignment, np.argsort(perm))
    assert m.n_flipped == 0 and m.n_unmatched == 0
    assert m.pairs == [(i, int(j)) for i, j in enumerate(np.argsort(perm))]


def test_sign_flips_per_variant():
    d = 4
    X = basis_points(d)
    X_hat = X.copy()
    X_hat[[1, 3]] *= -1
    flipped = np.array([False, True, False, True])
    for variant in ("abs", "sign_invariant"):
        m = match(X, X_hat, variant)
        assert m.rho == pytest.approx(0.0, abs=EXACT)
        np.testing.assert_array_equal(m.flipped, flipped)
        np.testing.assert_array_equal(m.assignment, np.arange(d))
    # Signed: -x_1 and -x_3 are 2√d from their originals but √(2d) from the other one, so the
    # optimum swaps them: per-sample errors 0, √2, 0, √2 and ρ = √2/2.
    m = match(X, X_hat, "signed")
    np.testing.assert_allclose(m.per_sample, [0, math.sqrt(2), 0, math.sqrt(2)], atol=EXACT)
    assert m.rho == pytest.approx(math.sqrt(2) / 2, abs=EXACT)
    np.testing.assert_array_equal(m.assignment, [0, 3, 2, 1])


def test_scaled_errors_give_their_size():
    # Hadamard rows: entries ±1, norm √d, mutually orthogonal. x̂_i = (1 + s_i) x_i has error
    # |s_i|·√d in every variant (signs are kept), so per-sample errors are |s_i| and ρ = mean |s_i|.
    d = 8
    X = hadamard(d).astype(float)
    s = np.array([0.1, -0.2, 0.05, 0.0, 0.3, -0.15, 0.25, 0.02])
    perm = np.random.default_rng(0).permutation(d)
    X_hat = ((1 + s)[:, None] * X)[perm]
    for variant in VARIANTS:
        m = match(X, X_hat, variant)
        assert m.rho == pytest.approx(np.mean(np.abs(s)), abs=EXACT)
        if variant != "abs":  # |x_i| is all ones for every row: "abs" cannot tell rows apart
            np.testing.assert_allclose(m.per_sample, np.abs(s), atol=EXACT)
            np.testing.assert_array_equal(m.assignment, np.argsort(perm))


def test_abs_forgives_elementwise_signs_but_others_do_not():
    X = sphere_points(5, 7, seed=1)
    pattern = np.where(np.random.default_rng(2).random(X.shape) < 0.5, -1.0, 1.0)
    X_hat = X * pattern
    assert rho(X, X_hat, "abs") == pytest.approx(0.0, abs=EXACT)
    assert rho(X, X_hat, "sign_invariant") > 0.1  # a mixed pattern is not a global ±1


def test_more_candidates_than_points_ignores_extras():
    X = sphere_points(3, 6, seed=3)
    extra = sphere_points(4, 6, seed=4)
    X_hat = np.concatenate([extra[:2], X[[2, 0, 1]], extra[2:]])
    for variant in VARIANTS:
        m = match(X, X_hat, variant)
        assert m.rho == pytest.approx(0.0, abs=EXACT)
        np.testing.assert_array_equal(m.assignment, [3, 4, 2])
        assert m.n_hat == 7 and m.n_unmatched == 0


def test_fewer_candidates_than_points_charges_the_zero_vector():
    X = sphere_points(4, 5, seed=5)
    m = match(X, X[[2, 0]], "abs")
    # Two exact matches (error 0) and two unmatched points charged ‖x‖/√d = 1: ρ = 2/4.
    assert m.rho == pytest.approx(0.5, abs=EXACT)
    np.testing.assert_array_equal(m.assignment, [1, -1, 0, -1])
    np.testing.assert_allclose(m.per_sample, [0, 1, 0, 1], atol=EXACT)
    assert m.n_unmatched == 2 and not m.flipped.any()


def test_fewer_candidates_minimises_the_total_including_charges():
    # d = 1, x = 10 and 1, one candidate 2. Matching it to the nearer point (cost 1) leaves 10
    # uncovered (charge 10): total 11; matching it to 10 costs 8 + charge 1 = 9, the optimum.
    # A plain rectangular assignment, blind to the charges, would pick the first.
    m = match(np.array([[10.0], [1.0]]), np.array([[2.0]]), "signed")
    np.testing.assert_array_equal(m.assignment, [0, -1])
    assert m.rho == pytest.approx(9 / 2, abs=EXACT)


@pytest.mark.parametrize("variant", VARIANTS)
def test_hungarian_matches_brute_force(variant):
    # Independent check: the minimum over all 5! matchings, costs written from the definition.
    X, X_hat = sphere_points(5, 4, seed=6), sphere_points(5, 4, seed=7)
    cost = {
        "abs": lambda x, y: np.linalg.norm(np.abs(x) - np.abs(y)),
        "signed": lambda x, y: np.linalg.norm(x - y),
        "sign_invariant": lambda x, y: min(np.linalg.norm(x - y), np.linalg.norm(x + y)),
    }[variant]
    best = min(sum(cost(X[i], X_hat[j]) for i, j in enumerate(perm))
               for perm in itertools.permutations(range(5)))
    assert rho(X, X_hat, variant) == pytest.approx(best / (5 * math.sqrt(4)), rel=1e-12)


def test_variants_are_ordered():
    # ‖|x|−|y|‖ ≤ min(‖x−y‖, ‖x+y‖) ≤ ‖x−y‖ pointwise, hence for the optimal matchings too.
    X, X_hat = sphere_points(20, 10, seed=8), sphere_points(25, 10, seed=9)
    r = {v: rho(X, X_hat, v) for v in VARIANTS}
    assert r["abs"] <= r["sign_invariant"] <= r["signed"]
    assert r["abs"] < r["signed"]


def test_strict_array_api_input(xp_strict):
    X, X_hat = sphere_points(4, 3, seed=10), sphere_points(4, 3, seed=11)
    expected = match(X, X_hat, "sign_invariant")
    got = match(xp_strict.asarray(X), xp_strict.asarray(X_hat), "sign_invariant")
    assert got.rho == expected.rho
    np.testing.assert_array_equal(got.assignment, expected.assignment)


@pytest.mark.gpu
def test_cupy_input():
    cp = cupy_or_skip()
    X, X_hat = sphere_points(4, 3, seed=10), sphere_points(4, 3, seed=11)
    assert rho(cp.asarray(X), cp.asarray(X_hat)) == rho(X, X_hat)


@pytest.mark.parametrize("X_hat, error", [
    (np.ones((3, 4)), ShapeError),                       # d mismatch
    (np.full((3, 5), np.nan), ShapeError),               # non-finite
    (np.ones(5), ShapeError),                            # 1-D
    (np.ones((3, 5), dtype=np.int64), ShapeError),       # not floating
    (np.ones((0, 5)), ShapeError),                       # no candidates
])
def test_bad_input(X_hat, error):
    with pytest.raises(error):
        match(np.ones((3, 5)), X_hat)


def test_unknown_variant():
    with pytest.raises(RFTheoryError, match="variant"):
        rho(np.ones((2, 2)), np.ones((2, 2)), "relative")
