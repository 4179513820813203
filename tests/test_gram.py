import numpy as np
import pytest
from array_api_compat import array_namespace

from rftheory.errors import ShapeError
from rftheory.gram import solve_gram


def _gram(A):
    return A @ A.T


def test_well_conditioned_uses_cholesky_and_matches_solve():
    A = np.random.default_rng(0).standard_normal((6, 40))
    G, b = _gram(A), np.arange(6.0)
    out = solve_gram(G, b)
    assert out.method == "cholesky" and out.rank == 6 and not out.rank_deficient
    # cond(G) ~ 10 here, so the solve is accurate to a few ulps of the solution scale.
    np.testing.assert_allclose(out.solution, np.linalg.solve(G, b), rtol=1e-12)
    assert np.isfinite(out.condition) and out.condition >= 1.0


def test_duplicate_rows_fall_back_to_pseudo_inverse():
    A = np.random.default_rng(1).standard_normal((4, 30))
    A = np.vstack([A, A[:2]])  # rows 4, 5 duplicate rows 0, 1: rank 4
    G = _gram(A)
    b = G @ np.ones(6)  # consistent right-hand side
    out = solve_gram(G, b)
    assert out.method == "eigh" and out.rank == 4 and out.rank_deficient
    assert out.condition == np.inf
    # Minimum-norm solution = pinv(G) b; rcond of pinv chosen below the eigenvalue gap.
    np.testing.assert_allclose(out.solution, np.linalg.pinv(G, rcond=1e-10) @ b, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(G @ out.solution, b, rtol=1e-9)


def test_zero_matrix_gives_zero_rank_and_finite_solution():
    out = solve_gram(np.zeros((3, 3)), np.ones(3))
    assert out.rank == 0 and out.rank_deficient and np.all(out.solution == 0)


def test_matrix_right_hand_side():
    A = np.random.default_rng(2).standard_normal((5, 20))
    G, B = _gram(A), np.random.default_rng(3).standard_normal((5, 3))
    np.testing.assert_allclose(solve_gram(G, B).solution, np.linalg.solve(G, B), rtol=1e-11)


def test_strict_namespace(xp_strict):
    A = np.random.default_rng(4).standard_normal((5, 20))
    A2 = np.vstack([A, A[:1]])
    for M in (A, A2):
        G = _gram(M)
        b = G @ np.ones(M.shape[0])
        out = solve_gram(xp_strict.asarray(G), xp_strict.asarray(b))
        ref = solve_gram(G, b)
        assert out.method == ref.method and out.rank == ref.rank
        np.testing.assert_allclose(np.asarray(out.solution), ref.solution, rtol=1e-12, atol=1e-12)


def test_numpy_path_is_the_generic_path_bit_for_bit(xp_strict):
    # solve_gram_checked calls numpy directly for numpy arrays; array_api_strict (numpy
    # underneath) takes the generic path: every field must agree bit for bit, on the Cholesky
    # path, the pseudo-inverse path, with a known result, and for 1-D and 2-D right-hand sides.
    from rftheory.gram import solve_gram_checked

    rng = np.random.default_rng(12)
    A = rng.standard_normal((6, 30))
    for M in (A, np.vstack([A, A[:2]]), np.zeros((3, 30))):
        # Asymmetric by rounding-level noise, as a streamed Gram may be: the symmetrisation
        # shows in the bits.
        G = _gram(M) + 1e-12 * rng.standard_normal((M.shape[0], M.shape[0]))
        for B in (rng.standard_normal(M.shape[0]), rng.standard_normal((M.shape[0], 3))):
            ours = solve_gram(G, B)
            generic = solve_gram(xp_strict.asarray(G), xp_strict.asarray(B))
            assert ours.solution.tobytes() == np.asarray(generic.solution).tobytes()
            assert (ours.method, ours.rank, ours.condition, ours.rank_deficient) == \
                (generic.method, generic.rank, generic.condition, generic.rank_deficient)
            known = solve_gram_checked(G, B, array_namespace(G), known=ours)
            known_generic = solve_gram_checked(xp_strict.asarray(G), xp_strict.asarray(B),
                                               xp_strict, known=generic)
            assert known.solution.tobytes() == np.asarray(known_generic.solution).tobytes()


@pytest.mark.parametrize("G, b", [(np.ones((3, 2)), np.ones(3)), (np.eye(3), np.ones(4)),
                                   (np.eye(3), np.ones((3, 2, 1)))])
def test_shape_errors(G, b):
    with pytest.raises(ShapeError):
        solve_gram(G, b)


def test_rank_deficient_gram_that_passes_cholesky_is_not_trusted():
    # Regression: d = n = 8, p = 7 (seed 2) gives a singular Gram whose Cholesky succeeds with a
    # diagonal condition bound of ~2e13; solving with it gave a label residual of 1.34 where
    # least squares gives 0.24. The min-norm fit must match numpy's lstsq.
    from rftheory.data import gaussian_labels, sphere_points
    from rftheory.features import RandomFeatures, train_min_norm

    X, Y = sphere_points(8, 8, 2), gaussian_labels(8, 2)
    rf = RandomFeatures("relu+tanh", d=8, p=7, seed=2)
    model = train_min_norm(rf, X, Y)
    F = rf.features(X)
    expected = np.linalg.norm(F @ np.linalg.lstsq(F, Y, rcond=None)[0] - Y) / np.linalg.norm(Y)
    assert model.gram.rank_deficient and model.gram.rank == 7
    assert model.train_residual == pytest.approx(expected, rel=1e-8)


def test_known_cholesky_result_skips_only_the_test():
    # solve_gram_checked(known=...) must give solve_gram's numbers bit for bit.
    from rftheory.gram import solve_gram_checked as _solve_gram

    rng = np.random.default_rng(11)
    F = rng.standard_normal((6, 40))
    G = F @ F.T
    first = solve_gram(G, rng.standard_normal((6, 2)))
    assert first.method == "cholesky"
    B = rng.standard_normal((6, 30))
    ref = solve_gram(G, B)
    fast = _solve_gram(G, B, array_namespace(G), known=first)
    assert fast.solution.tobytes() == ref.solution.tobytes()
    assert (fast.method, fast.rank, fast.rank_deficient) == (ref.method, ref.rank, ref.rank_deficient)
    # An eigh result is no shortcut: the full path runs.
    singular = np.ones((3, 3))
    eig = solve_gram(singular, np.ones(3))
    assert eig.method == "eigh"
    again = _solve_gram(singular, np.ones(3), array_namespace(singular), known=eig)
    assert again.solution.tobytes() == eig.solution.tobytes()
