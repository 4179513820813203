"""Tests of rftheory.varpro: the Gauss–Newton model of the projection loss and its LM solver."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rftheory.activations import get_activation
from rftheory.data import gaussian_labels, sphere_points
from rftheory.features import DenseFeatures, RandomFeatures, train_min_norm
from rftheory.varpro import Problem, _tangent, least_useful, retract


def _model(d=6, n=4, ratio=3, k=1, seed=3, activation="relu+tanh"):
    X = sphere_points(n, d, seed)
    rf = RandomFeatures(activation, d, round(ratio * d * n), seed=seed, v_cache_bytes=2**26)
    Y = gaussian_labels(n, seed) if k == 1 else \
        np.random.default_rng([seed, 9]).standard_normal((n, k))
    theta = train_min_norm(rf, X, Y).theta
    return rf, X, theta if theta.ndim == 2 else theta[:, None]


def _random_rows(m, d, seed):
    U = np.random.default_rng([seed, 77]).standard_normal((m, d))
    return U * (math.sqrt(d) / np.linalg.norm(U, axis=1, keepdims=True))


def _explicit_jacobian(rf, theta, X):
    """Kaufman's J = −(I_k ⊗ P⊥)B built column by column from the materialised V (independent
    of the streamed assembly in rftheory.varpro)."""
    V = rf.weights()
    act = get_activation(rf.activation)
    Z = X @ V.T
    F, D = act(Z), act.derivative(Z)
    Q, _ = np.linalg.qr(F.T)
    A = np.linalg.lstsq(F.T, theta, rcond=None)[0]                  # (m, k)
    m, d = X.shape
    p, k = theta.shape
    U = X / math.sqrt(d)
    J = np.zeros((p * k, m * d))
    for i in range(m):
        W = V - np.outer(V @ U[i], U[i])                            # V P_i
        for c in range(k):
            B = A[i, c] * D[i][:, None] * W                         # (p, d)
            J[c * p:(c + 1) * p, i * d:(i + 1) * d] = -(B - Q @ (Q.T @ B))
    r = theta - F.T @ A
    return J, r.T.ravel()                                           # rows ordered (c, v)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("solver", ["dense", "cg"])
def test_gauss_newton_matrix_and_gradient_match_an_explicit_jacobian(k, solver):
    rf, X, theta = _model(k=k)
    Xh = _random_rows(4, 6, 1)
    lin = Problem(rf, theta, np, None, solver).linearise(Xh)
    J, r = _explicit_jacobian(rf, theta, Xh)
    theta_sq = float(np.sum(theta * theta))
    H = J.T @ J / theta_sq
    g = (J.T @ r) / theta_sq
    w = _tangent(Xh, np.random.default_rng(5).standard_normal(Xh.shape))
    Hw = (lin.hessian @ w.ravel()).reshape(w.shape) if solver == "dense" else lin.product(w)
    # Same quantity by two computations: float64 (dense) agrees to ~1e-12 (relative); the
    # matrix-free products run in float32 (rftheory.varpro.PRODUCT_DTYPE), ~1e-7.
    np.testing.assert_allclose(Hw.ravel(), H @ w.ravel(), rtol=1e-10 if solver == "dense" else 1e-5,
                               atol=(1e-12 if solver == "dense" else 1e-6) * np.abs(H).max())
    np.testing.assert_allclose(lin.gradient.ravel(), g, rtol=1e-9, atol=1e-12 * np.abs(g).max())
    assert lin.loss == pytest.approx(float(r @ r) / theta_sq, rel=1e-10)


def test_gradient_matches_finite_differences_of_the_loss():
    rf, X, theta = _model()
    Xh = _random_rows(4, 6, 2)
    problem = Problem(rf, theta, np, None)
    lin = problem.linearise(Xh)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = _tangent(Xh, rng.standard_normal(Xh.shape))
        eps = 1e-6
        fd = (problem.loss(retract(Xh, eps * w)) - problem.loss(retract(Xh, -eps * w))) / (2 * eps)
        # dL/dε = 2 gᵀw (the model is L + 2gᵀδ + δᵀHδ); central differences: error O(ε²).
        assert fd == pytest.approx(2 * float(np.sum(lin.gradient * w)), rel=1e-6)


@pytest.mark.parametrize("solver", ["dense", "cg"])
def test_gauss_newton_is_the_exact_curvature_at_a_zero(solver):
    # At the training set r = 0, so L(retract(X, εw)) = ε² wᵀHw + O(ε³) with H the Gauss–Newton
    # matrix (Kaufman's J is exact there).
    rf, X, theta = _model()
    problem = Problem(rf, theta, np, None, solver)
    lin = problem.linearise(X)
    assert lin.loss < 1e-25
    w = _tangent(X, np.random.default_rng(1).standard_normal(X.shape))
    Hw = (lin.hessian @ w.ravel()).reshape(w.shape) if solver == "dense" else lin.product(w)
    quad = float(np.sum(w * Hw))
    for eps in (1e-3, 1e-4):
        assert problem.loss(retract(X, eps * w)) / eps**2 == pytest.approx(quad, rel=20 * eps)


def test_restricted_model_is_the_submatrix():
    rf, X, theta = _model()
    Xh = _random_rows(4, 6, 3)
    full = Problem(rf, theta, np, None, "dense").linearise(Xh)
    rows = np.array([2])
    sub_dense = Problem(rf, theta, np, None, "dense").linearise(Xh, free=rows)
    sub_cg = Problem(rf, theta, np, None, "cg").linearise(Xh, free=rows)
    cols = np.arange(2 * 6, 3 * 6)
    np.testing.assert_allclose(sub_dense.hessian, full.hessian[np.ix_(cols, cols)], rtol=1e-10,
                               atol=1e-13 * np.abs(full.hessian).max())
    w = _tangent(Xh[rows], np.random.default_rng(2).standard_normal((1, 6)))
    # The matrix-free products run in float32 (rftheory.varpro.PRODUCT_DTYPE): ~1e-7 relative.
    np.testing.assert_allclose(sub_cg.product(w).ravel(), sub_dense.hessian @ w.ravel(),
                               rtol=1e-5, atol=1e-6 * np.abs(full.hessian).max())
    np.testing.assert_array_equal(sub_dense.gradient, full.gradient[rows])


def test_dense_features_give_the_same_model():
    rf, X, theta = _model()
    dense = DenseFeatures(rf.activation, rf.weights())
    Xh = _random_rows(4, 6, 4)
    a = Problem(rf, theta, np, None, "dense").linearise(Xh)
    b = Problem(dense, theta, np, None, "dense").linearise(Xh)
    np.testing.assert_allclose(a.hessian, b.hessian, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(a.gradient, b.gradient, rtol=1e-12, atol=1e-15)


def test_least_useful_is_the_exact_leave_one_out():
    rf, X, theta = _model()
    Xh = np.concatenate([X, _random_rows(1, 6, 5)])   # the training set plus a useless row
    problem = Problem(rf, theta, np, None)
    j = least_useful(problem, Xh)
    losses = [problem.loss(np.delete(Xh, i, axis=0)) for i in range(Xh.shape[0])]
    assert j == int(np.argmin(losses)) == 4


def test_retract_stays_on_the_sphere():
    X = _random_rows(5, 7, 6)
    Y = retract(X, np.random.default_rng(0).standard_normal(X.shape))
    np.testing.assert_allclose(np.linalg.norm(Y, axis=1), math.sqrt(7), rtol=1e-14)


@pytest.mark.parametrize("solver", ["dense", "cg"])
def test_fast_paths_are_bit_identical_to_the_reference_paths(solver):
    # Problem.evaluate skips projection_loss's per-call checks, and linearise reuses the kept
    # blocks of the evaluation at the same point: neither may change a bit.
    from rftheory.projection import projection_loss

    rf, X, theta = _model(k=2)
    Xh = _random_rows(4, 6, 6)
    problem = Problem(rf, theta, np, None, solver)
    problem.small = False  # the streamed path (the small-problem path: tests below)
    res = problem.evaluate(Xh)
    ref = projection_loss(rf, Xh, theta)
    assert res.loss == ref.loss
    assert res.gradient.tobytes() == ref.gradient.tobytes()
    assert res.coefficients.tobytes() == ref.coefficients.tobytes()
    assert problem._last is not None                   # the blocks were kept ...
    reused = problem.linearise(Xh, res)
    assert problem._last is None                       # ... and handed over
    again = Problem(rf, theta, np, None, solver)
    again.small = False
    fresh = again.linearise(Xh, res)   # streams X̂Vᵀ again
    for name in ("gradient", "scale", "kron"):
        assert getattr(reused, name).tobytes() == getattr(fresh, name).tobytes()
    if solver == "dense":
        assert reused.hessian.tobytes() == fresh.hessian.tobytes()
    else:
        w = _tangent(Xh, np.random.default_rng(3).standard_normal(Xh.shape))
        assert reused.product(w).tobytes() == fresh.product(w).tobytes()
    # A result from elsewhere (not the last evaluation) is not trusted with the kept blocks.
    problem.evaluate(_random_rows(4, 6, 7))
    other = problem.linearise(Xh, res)
    assert other.gradient.tobytes() == fresh.gradient.tobytes()


@pytest.mark.parametrize("free", [None, np.array([1, 3])])
def test_numpy_linearisation_is_the_generic_one_bit_for_bit(xp_strict, free):
    # linearise calls numpy directly for numpy arrays and keeps V's row norms between passes;
    # a problem on array_api_strict arrays (numpy underneath) takes the array-API calls.
    from array_api_compat import array_namespace

    from rftheory.backend import namespace_of

    rf, X, theta = _model(k=2)
    Xh = _random_rows(4, 6, 8)
    ours = Problem(rf, theta, namespace_of(theta), None, "dense")
    ours.small = False  # the streamed path's numpy calls (the small-problem path: below)
    strict_theta = xp_strict.asarray(theta)
    generic = Problem(rf, strict_theta, array_namespace(strict_theta), None, "dense")
    first = ours.linearise(Xh, free=free)
    again = ours.linearise(Xh, free=free)      # V's row norms from the memo
    other = generic.linearise(Xh, free=free)
    for name in ("gradient", "scale", "kron", "hessian", "X", "units"):
        assert getattr(first, name).tobytes() == getattr(other, name).tobytes(), name
        assert getattr(again, name).tobytes() == getattr(other, name).tobytes(), name
    assert first.loss == other.loss


# -- the small-problem path (numpy, p·d ≤ SMALL_WEIGHTS) against the streamed path ------------

def _streamed(rf, theta, solver="dense"):
    problem = Problem(rf, theta, np, None, solver)
    problem.small = False
    return problem


def _close(a, b, p):
    # Both are sums over the p rows of V of the same products, in other orders and groupings:
    # they differ by a few roundings of terms no larger than the largest entry, ≲ p·eps·max|b|.
    np.testing.assert_allclose(a, b, rtol=0, atol=8 * p * np.finfo(float).eps * np.abs(b).max())


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("free", [None, np.array([1, 3]), np.array([2])])
def test_small_path_gives_the_streamed_model(k, free):
    rf, X, theta = _model(k=k)
    Xh = _random_rows(4, 6, 11)
    small = Problem(rf, theta, np, None, "dense")
    assert small.small
    res, ref = small.evaluate(Xh), _streamed(rf, theta).evaluate(Xh)
    assert res.loss == pytest.approx(ref.loss, rel=16 * rf.p * np.finfo(float).eps)
    _close(res.gradient, ref.gradient, rf.p)
    _close(res.coefficients, ref.coefficients, rf.p)
    assert res.gram.method == ref.gram.method == "cholesky"
    a = small.linearise(Xh, res, free)
    b = _streamed(rf, theta).linearise(Xh, free=free)
    for name in ("gradient", "scale", "kron", "hessian", "X", "units"):
        _close(getattr(a, name), getattr(b, name), rf.p)
    assert np.array_equal(a.hessian, a.hessian.T)  # exactly symmetric, as built
    # without the kept blocks of the evaluation (another point evaluated in between)
    small.evaluate(_random_rows(4, 6, 12))
    _close(small.linearise(Xh, res, free).hessian, b.hessian, rf.p)


def test_small_path_feeds_the_matrix_free_solver():
    rf, X, theta = _model(ratio=3)
    Xh = _random_rows(4, 6, 13)
    a = Problem(rf, theta, np, None, "cg").linearise(Xh)
    b = _streamed(rf, theta, "cg").linearise(Xh)
    w = _tangent(Xh, np.random.default_rng(4).standard_normal(Xh.shape))
    assert a.product(w).tobytes() == b.product(w).tobytes()  # the same streamed products
    _close(a.gradient, b.gradient, rf.p)


def test_small_path_with_a_singular_gram_takes_the_pseudo_inverse():
    rf, X, theta = _model()
    Xh = _random_rows(4, 6, 14)
    Xh[3] = Xh[1]                                    # two equal candidates: G singular
    small, streamed = Problem(rf, theta, np, None, "dense"), _streamed(rf, theta)
    res, ref = small.evaluate(Xh), streamed.evaluate(Xh)
    assert res.gram.method == ref.gram.method == "eigh" and res.rank_deficient
    assert res.loss == pytest.approx(ref.loss, rel=1e-10)
    a, b = small.linearise(Xh, res), streamed.linearise(Xh, ref)
    np.testing.assert_allclose(a.hessian, b.hessian, rtol=0, atol=1e-10 * np.abs(b.hessian).max())
    assert np.array_equal(a.hessian, a.hessian.T)


def test_small_path_is_taken_by_size_and_namespace(xp_strict):
    from array_api_compat import array_namespace

    from rftheory.varpro import SMALL_WEIGHTS

    rf, X, theta = _model()
    assert rf.p * rf.d <= SMALL_WEIGHTS and Problem(rf, theta, np, None).small
    big = RandomFeatures("relu+tanh", 64, SMALL_WEIGHTS // 64 + 1, seed=0)
    assert not Problem(big, np.ones((big.p, 1)), np, None).small
    strict = xp_strict.asarray(theta)
    assert not Problem(rf, strict, array_namespace(strict), None).small


def test_lapack_cholesky_is_scipys():
    import scipy.linalg

    from rftheory.varpro import _cho_factor, _cho_solve

    rng = np.random.default_rng(4)
    B = rng.standard_normal((30, 30))
    A = B @ B.T + 0.1 * np.eye(30)
    ours, theirs = _cho_factor(A), scipy.linalg.cho_factor(A, lower=True)
    assert ours[1] is True and ours[0].tobytes() == theirs[0].tobytes()
    for b in (rng.standard_normal(30), rng.standard_normal((30, 3))):
        assert _cho_solve(ours, b).tobytes() == scipy.linalg.cho_solve(theirs, b).tobytes()
    with pytest.raises(np.linalg.LinAlgError):
        _cho_factor(-A)
    with pytest.raises(ValueError):   # non-finite input: SciPy's own check
        _cho_factor(np.full((2, 2), np.nan))


# -- the solver switch (issue #26): "auto" picks by size, on both sides of each threshold -------

@pytest.mark.parametrize("m, d, p, dense", [
    (16, 16, 10**6, True),     # n̂d = 256 = DENSE_MAX_UNKNOWNS: dense however large p
    (17, 16, 10**4, False),    # 272 unknowns, p(n̂d)² = 7.4e8 > DENSE_FLOPS = 2.7e8: cg
    (17, 16, 900, True),       # 272 unknowns, p(n̂d)² = 6.7e7 ≤ DENSE_FLOPS: dense
    (8, 40, 400, True),        # issue #26's (40, 8) at 1.25dn: 4.1e7 flops, dense
    (8, 80, 800, False),       # (80, 8) at 1.25dn: 3.3e8 > 2^28, cg
    (100, 10, 6, False),       # (n̂d)³ = 1e9 > DENSE_FLOPS (the factorisation): cg
])
def test_auto_solver_switch_by_size(m, d, p, dense):
    from types import SimpleNamespace

    from rftheory.varpro import DENSE_FLOPS, DENSE_MAX_UNKNOWNS

    md = m * d
    assert (md <= DENSE_MAX_UNKNOWNS or max(p, md) * md * md <= DENSE_FLOPS) is dense
    assert Problem.dense_for(SimpleNamespace(solver="auto", d=d, p=p), m) is dense
    for forced in ("dense", "cg"):       # an explicit solver overrides the size rule
        assert Problem.dense_for(SimpleNamespace(solver=forced, d=d, p=p), m) is (forced == "dense")


@pytest.mark.parametrize("ratio, m, dense", [(3, 4, True), (3, 40, False)])
def test_auto_builds_the_model_of_the_solver_it_picks(ratio, m, dense):
    # d = 8: m = 4 gives n̂d = 32 (dense), m = 40 gives 320 unknowns with p(n̂d)² > 2^28 (cg).
    rf, X, theta = _model(d=8, n=4, ratio=ratio * 30)
    Xh = _random_rows(m, 8, 2)
    auto = Problem(rf, theta, np, None, "auto")
    assert auto.dense_for(m) is dense
    lin = auto.linearise(Xh)
    assert (lin.hessian is not None) is dense and (lin.product is not None) is (not dense)
    ref = Problem(rf, theta, np, None, "dense" if dense else "cg").linearise(Xh)
    assert lin.gradient.tobytes() == ref.gradient.tobytes()


def test_low_precision_v_is_converted_once_and_changes_no_product():
    # The matrix-free products use V in PRODUCT_DTYPE: made at the first linearisation, the
    # same arrays at the next one, and the same bits as a fresh conversion (a cast is exact
    # to repeat), so every product equals that of a problem that converts afresh.
    from rftheory.varpro import PRODUCT_DTYPE

    rf, X, theta = _model(k=2)
    problem = Problem(rf, theta, np, None, "cg")
    Xa, Xb = _random_rows(4, 6, 8), _random_rows(4, 6, 9)
    problem.linearise(Xa)
    low = dict(problem._low_v)
    assert low and all(v.dtype == np.dtype(PRODUCT_DTYPE) for v in low.values())
    lin_b = problem.linearise(Xb)
    assert all(problem._low_v[k] is v for k, v in low.items())     # not converted again
    V = rf.weights()
    stacked = np.concatenate([v.reshape(-1, v.shape[-1]) for _, v in sorted(low.items())])
    assert stacked.tobytes() == V.astype(PRODUCT_DTYPE).tobytes()
    w = _tangent(Xb, np.random.default_rng(4).standard_normal(Xb.shape))
    fresh = Problem(rf, theta, np, None, "cg").linearise(Xb)
    assert lin_b.product(w).tobytes() == fresh.product(w).tobytes()


def test_default_v_cache_follows_the_declared_peak(monkeypatch):
    # All the available memory when the job's declared peak with V cached fits the limit; the
    # fraction rule when it does not (so a default never makes a job that the limit refuses).
    from rftheory import features

    monkeypatch.setattr(features, "available_memory_bytes", lambda: 20 * 2**30)
    fallback = int(features.V_CACHE_FRACTION * 20 * 2**30)
    assert features.default_v_cache_bytes() == fallback
    seen = []

    def peak(cache):
        seen.append(cache)
        return 11 * 2**30 if cache >= 7 * 2**30 else 4 * 2**30   # V = 7 GiB cached, or not

    assert features.default_v_cache_bytes(peak, 16 * 2**30) == 20 * 2**30
    assert seen == [20 * 2**30]
    assert features.default_v_cache_bytes(peak, 10 * 2**30) == fallback
    monkeypatch.setattr(features, "available_memory_bytes", lambda: None)
    assert features.default_v_cache_bytes(peak, 16 * 2**30) == features.V_CACHE_FLOOR


def test_the_deadline_stops_minimise_in_walks_and_inside_an_exchange(monkeypatch):
    # The deadline is checked after every LM iteration, pool iterations included, and between
    # the parts of an exchange (before its screen, before each refinement): a run whose
    # deadline has passed neither starts an exchange's screen nor another of its LM runs.
    from rftheory import varpro
    from rftheory.deadline import NO_DEADLINE, Deadline

    rf, X, theta = _model()
    start = _random_rows(4, 6, 8)
    problem = Problem(rf, theta, np, None)
    out = varpro.minimise(problem, start, np.random.default_rng(0), tol=0.0, max_steps=10**6,
                          max_rounds=10**6, patience=3, hop_angle=0.3,
                          deadline=Deadline.after(0.0))
    assert out.stop_reason == "time_limit" and out.steps == 1 and out.X.shape == start.shape

    def no_screen(*args, **kwargs):
        raise AssertionError("screened after the deadline")

    monkeypatch.setattr(varpro, "_screen", no_screen)
    for deadline, grow in [(Deadline.after(0.0), True), (Deadline.after(0.0), False)]:
        run = varpro.Run(problem, 0.0, 10**6, None, 1, lambda X: X, deadline=deadline)
        with pytest.raises(varpro.Stop, match="time_limit"):
            varpro.exchange(problem, start, np.random.default_rng(1), run, grow=grow,
                            n_screen=10, top=2)
    # a pool iteration (an exchange's LM) stops there too, where it used to run on
    run = varpro.Run(problem, 0.0, 10**6, None, 1, lambda X: X, deadline=Deadline.after(0.0))
    with pytest.raises(varpro.Stop, match="time_limit"):
        run.iteration(start, 0.5, pool=True)
    # without a deadline the same exchange screens (and the stub says so)
    run = varpro.Run(problem, 0.0, 10**6, None, 1, lambda X: X, deadline=NO_DEADLINE)
    with pytest.raises(AssertionError, match="screened"):
        varpro.exchange(problem, start, np.random.default_rng(1), run, grow=False,
                        n_screen=10, top=2)


@pytest.mark.parametrize("d", [31, 32])
def test_fresh_walks_are_built_from_the_build_dimension_on(monkeypatch, d):
    # The switch on both sides: below BUILD_DIMENSION a fresh walk starts from random points,
    # from it on from build(); the first walk always starts from X0.
    from rftheory import varpro

    assert varpro.BUILD_DIMENSION == 32
    X = sphere_points(2, d, 0)
    rf = RandomFeatures("relu+tanh", d, 3 * d * 2, seed=0)
    theta = train_min_norm(rf, X, gaussian_labels(2, 0)).theta[:, None]
    calls = []
    real = varpro.build

    def spy(problem, rng, run, m):
        calls.append(m)
        return real(problem, rng, run, m)

    monkeypatch.setattr(varpro, "build", spy)
    problem = Problem(rf, theta, np, None)
    out = varpro.minimise(problem, _random_rows(2, d, 1), np.random.default_rng(0), tol=0.0,
                          max_steps=400, max_rounds=6, patience=1, hop_angle=0.3)
    assert out.rounds == 6                     # patience 1: several fresh walks
    assert calls == ([] if d < 32 else [2] * len(calls)) and (d < 32 or len(calls) >= 2)


def test_build_recovers_an_easy_training_set_row_by_row():
    # relu+tanh, d = 40, n = 3, p = 3dn: the greedy build alone (no hops) lands every row on a
    # training point, and its LM iterations are counted as pool iterations (not in history).
    from rftheory import varpro

    d, n = 40, 3
    X = sphere_points(n, d, 1)
    rf = RandomFeatures("relu+tanh", d, 3 * d * n, seed=1)
    theta = train_min_norm(rf, X, gaussian_labels(n, 1)).theta[:, None]
    problem = Problem(rf, theta, np, None)
    run = varpro.Run(problem, 0.0, 10**6, None, 1, lambda Y: Y)
    rows = varpro.build(problem, np.random.default_rng(0), run, n)
    assert rows.shape == (n, d)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), np.sqrt(d), rtol=1e-12)
    cos = np.abs(rows @ X.T) / d
    assert np.all(cos.max(axis=0) > 0.999)     # every training point found
    assert run.steps == run.pool_steps > 0 and run.history == []


@pytest.mark.parametrize("m, d, p, extra", [(10, 8, 480, 5), (10, 8, 479, 0), (1, 8, 64, 1),
                                            (1, 8, 63, 0), (7, 5, 4 * 11 * 5, 4), (0, 5, 10**6, 0)])
def test_wide_rows_switch_by_size(m, d, p, extra):
    # Both sides of p = WIDE_RATIO·(m + ⌈WIDE_EXTRA·m⌉)·d.
    from rftheory import varpro

    assert (varpro.WIDE_EXTRA, varpro.WIDE_RATIO) == (0.5, 4)
    assert varpro.wide_rows(m, d, p) == extra


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_wide_start_puts_a_row_on_every_training_point(seed):
    # relu, d = 24, n = 6, p = 10·dn: one LM run from 9 random rows, pruned back to 6 by exact
    # leave-one-out, leaves every training point with a row (any superset of the training set
    # is a zero, and 9·24 unknowns are far below p = 1440).
    from rftheory import varpro

    d, n = 24, 6
    X = sphere_points(n, d, seed)
    rf = RandomFeatures("relu", d, 10 * d * n, seed=seed, v_cache_bytes=2**26)
    theta = train_min_norm(rf, X, gaussian_labels(n, seed)).theta[:, None]
    problem = Problem(rf, theta, np, None)
    run = varpro.Run(problem, 1e-10, 10**6, None, 1, lambda Y: Y)
    extra = varpro.wide_rows(n, d, rf.p)
    assert extra == 3
    rows = varpro.wide_start(problem, _random_rows(n, d, seed), np.random.default_rng(seed), run,
                             extra)
    assert rows.shape == (n, d)
    cos = np.abs(rows @ X.T) / d
    assert np.all(cos.max(axis=0) > 0.99)
    assert run.steps == run.pool_steps > 0 and run.history == []
    assert np.array_equal(run.best_X, _random_rows(n, d, seed))   # the start, offered first


@pytest.mark.parametrize("ratio, wide", [(6, True), (5, False)])
def test_minimise_starts_wide_only_where_the_size_allows(monkeypatch, ratio, wide):
    from rftheory import varpro

    d, n = 8, 4
    X = sphere_points(n, d, 2)
    rf = RandomFeatures("relu+tanh", d, ratio * d * n, seed=2)
    theta = train_min_norm(rf, X, gaussian_labels(n, 2)).theta[:, None]
    calls = []
    real = varpro.wide_start

    def spy(problem, X0, rng, run, extra):
        calls.append(extra)
        return real(problem, X0, rng, run, extra)

    monkeypatch.setattr(varpro, "wide_start", spy)
    start = _random_rows(n, d, 5)

    def run(widen):
        return varpro.minimise(Problem(rf, theta, np, None), start, np.random.default_rng(0),
                               tol=1e-10, max_steps=3000, max_rounds=50, patience=30,
                               hop_angle=0.3, widen=widen)

    plain = run(False)
    assert calls == []
    out = run(True)
    assert calls == ([2] if wide else [])
    assert out.stop_reason == "tolerance"
    if not wide:   # nothing drawn, nothing changed: the same run to the bit
        assert out.steps == plain.steps and np.array_equal(out.X, plain.X)


def test_a_budget_stop_inside_the_wide_start_returns_the_start():
    from rftheory import varpro

    d, n = 8, 4
    X = sphere_points(n, d, 2)
    rf = RandomFeatures("relu+tanh", d, 10 * d * n, seed=2)
    theta = train_min_norm(rf, X, gaussian_labels(n, 2)).theta[:, None]
    start = _random_rows(n, d, 5)
    problem = Problem(rf, theta, np, None)
    out = varpro.minimise(problem, start, np.random.default_rng(0), tol=1e-10, max_steps=1,
                          max_rounds=50, patience=30, hop_angle=0.3, widen=True)
    assert out.stop_reason == "budget" and out.steps == out.pool_steps == 1
    assert np.array_equal(out.X, start) and out.loss == pytest.approx(problem.loss(start), rel=1e-12)


@pytest.mark.parametrize("given", [False, True])
def test_reconstruct_widens_only_a_random_start(monkeypatch, given):
    from rftheory import varpro
    from rftheory.reconstruct import reconstruct

    d, n = 8, 4
    X = sphere_points(n, d, 2)
    rf = RandomFeatures("relu+tanh", d, 10 * d * n, seed=2)
    theta = train_min_norm(rf, X, gaussian_labels(n, 2)).theta
    seen = []
    real = varpro.minimise

    def spy(*args, **kwargs):
        seen.append(kwargs["widen"])
        return real(*args, **kwargs)

    monkeypatch.setattr("rftheory.reconstruct.minimise", spy)
    res = reconstruct(rf, theta, n, seed=1, X_init=_random_rows(n, d, 4) if given else None)
    assert seen == [not given] and res.converged


def test_pruning_merges_a_close_pair_before_leave_one_out():
    # A wide set holding the 4 training points, a row 0.02 rad from point 0 and a random row.
    # With no pair closer than WIDE_MERGE_COS the pruning is exact leave-one-out (the random
    # row goes first); then the pair is one point, and one of it goes.
    from rftheory import varpro

    d, n = 8, 4
    rf, X, theta = _model(d=d, n=n, ratio=10, activation="relu")
    problem = Problem(rf, theta, np, None)
    t = _tangent(X[:1], _random_rows(1, d, 3))
    twin = retract(X[:1], 0.02 * t / np.linalg.norm(t) * math.sqrt(d))
    assert 0.999 < float(twin[0] @ X[0]) / d < 1 - 1e-5
    wide = np.concatenate([X, twin, _random_rows(1, d, 9)])
    assert varpro._prune_one(problem, np.delete(wide, 4, axis=0)) == \
        least_useful(problem, np.delete(wide, 4, axis=0)) == 4       # the random row
    assert varpro._prune_one(problem, wide) in (0, 4)   # one of the pair (leave-one-out: 5)
    pruned = np.delete(wide, varpro._prune_one(problem, wide), axis=0)
    pruned = np.delete(pruned, varpro._prune_one(problem, pruned), axis=0)
    assert np.all(np.abs(pruned @ X.T).max(axis=0) / d > 0.999)    # every point kept


# -- the linearised exchange (issue #26, near the counting limit) -----------------------------
def _finite_difference_span(rf, rows, h=1e-6):
    """The span S of linearised_gain built independently: the rows' features and their motions
    by central differences of φ(Vx) along a random basis of each tangent space; returns
    y ↦ y − (its least-squares fit by S's columns)."""
    V = rf.weights()
    act = get_activation(rf.activation)
    rng = np.random.default_rng(5)
    cols = []
    for x in rows:
        cols.append(act(V @ x))
        T = rng.standard_normal((x.size, x.size - 1))
        T -= np.outer(x, x @ T) / (x @ x)                          # into x's tangent space
        for t in np.linalg.qr(T)[0].T:
            cols.append((act(V @ (x + h * t)) - act(V @ (x - h * t))) / (2 * h))
    M = np.column_stack(cols)

    def perp(y):
        return y - M @ np.linalg.lstsq(M, y, rcond=None)[0]

    return perp


def _finite_difference_span_gain(rf, theta, rows, pool, h=1e-6):
    """linearised_gain built independently (:func:`_finite_difference_span`)."""
    perp = _finite_difference_span(rf, rows, h)
    act = get_activation(rf.activation)
    V = rf.weights()
    r = perp(theta)
    out = []
    for c in pool:
        f = perp(act(V @ c))
        out.append(float(np.sum((f @ r) ** 2) / (f @ f)))
    return np.array(out)


def test_linearised_gain_matches_a_finite_difference_construction():
    from rftheory import varpro

    rf, X, theta = _model(d=6, n=4, ratio=1.5, seed=2)              # p = 36, q·d = 18 or 24
    problem = Problem(rf, theta, np, None)
    assert problem.small
    pool = _random_rows(40, 6, 9)
    for rows in (_random_rows(3, 6, 4), _random_rows(4, 6, 6)):
        got = varpro.linearised_gain(problem, rows, pool)
        ref = _finite_difference_span_gain(rf, theta, rows, pool)
        # central differences: O(h²) truncation and O(eps/h) rounding in the columns, ~1e-10;
        # the projection multiplies that by the condition of the span (~1e2 here)
        assert np.allclose(got, ref, rtol=1e-5, atol=1e-7 * float(np.sum(theta**2)))
        r_sq = float(np.sum(theta**2))                               # ‖P⊥θ‖² ≤ ‖θ‖²
        assert (got >= 0).all() and (got <= r_sq * (1 + 1e-12)).all()
    # a pool point on a kept row lies inside the span to rounding: it explains nothing (its
    # projected features are rounding noise, whose direction would give a random gain)
    assert varpro.linearised_gain(problem, rows, rows[:1])[0] == 0.0


def test_linearised_and_fixed_rows_residuals_match_least_squares():
    from rftheory import varpro

    rf, X, theta = _model(d=6, n=4, ratio=1.5, seed=2)
    problem = Problem(rf, theta, np, None)
    rows = _random_rows(3, 6, 4)
    scale = float(np.linalg.norm(theta))
    # against the finite-difference span: O(1e-10) column errors times its condition (~1e2)
    lin = varpro.linearised_residual(problem, rows)
    assert lin.shape == theta.shape
    np.testing.assert_allclose(lin, _finite_difference_span(rf, rows)(theta), rtol=0,
                               atol=1e-6 * scale)
    # rows held fixed: the least-squares residual of θ on the rows' features (Φ̂ᵀ, p × q,
    # condition ~1e1: rounding ~1e-14 relative)
    F = get_activation(rf.activation)(rows @ rf.weights().T).T
    ref = theta - F @ np.linalg.lstsq(F, theta, rcond=None)[0]
    np.testing.assert_allclose(np.asarray(varpro.fixed_rows_residual(problem, rows)), ref,
                               rtol=0, atol=1e-10 * scale)
    # the motions explain part of what the features leave: the linearised residual is shorter
    assert np.linalg.norm(lin) < np.linalg.norm(ref)
    problem.small = False                                            # a streamed problem
    with pytest.raises(ValueError, match="linearised_residual needs the small-problem path"):
        varpro.linearised_residual(problem, rows)


def test_linearised_screen_finds_the_missing_point_behind_bent_rows():
    # (10, 10), p = 1.1·dn: nine training points turned by ~2° (how a search near the counting
    # limit leaves them), the tenth — the one of smallest weight |a_i| — hidden among 999
    # random points. Against the residual of the nine, the plain screen ranks it 395th; with the
    # nine rows linearised it comes first, by a factor 1.65 over the runner-up (measured; the
    # assertion allows 1.2: no rounding of any machine moves a gain by 20 %).
    from rftheory import varpro

    d, n = 10, 10
    X = sphere_points(n, d, 4)
    rf = RandomFeatures("relu+tanh", d, 110, seed=4)
    theta = train_min_norm(rf, X, gaussian_labels(n, 4)).theta[:, None]
    problem = Problem(rf, theta, np, None)
    a = np.abs(np.asarray(problem.evaluate(X).coefficients)).ravel()
    miss = int(np.argmin(a))
    rng = np.random.default_rng(4)
    rows = retract(np.delete(X, miss, axis=0), 0.035 * rng.standard_normal((n - 1, d)))
    pool = np.concatenate([X[miss:miss + 1], varpro.random_points(rng, 999, d)])
    assert varpro.linearised_applies(problem, n - 1)
    lin = varpro.linearised_gain(problem, rows, pool)
    assert lin[0] > 1.2 * np.max(lin[1:])
    plain = varpro.fixed_rows_gain(problem, rows, pool)
    assert np.sum(plain > plain[0]) > 100


def test_linearised_screen_applies_by_size_on_both_sides():
    from rftheory import varpro

    rf, X, theta = _model(d=6, n=4, ratio=1.5)                      # p = 36
    problem = Problem(rf, theta, np, None)
    assert varpro.LINEARISED_RATIO == 2.0
    assert varpro.linearised_applies(problem, 4)                     # 24 < 36 < 48
    assert not varpro.linearised_applies(problem, 3)                 # 36 = 2·18: at the ratio
    assert not varpro.linearised_applies(problem, 2)                 # 36 ≥ 2·12: far above
    assert not varpro.linearised_applies(problem, 6)                 # 36 ≤ 6·6: no room left
    problem.small = False                                            # streamed problems: never
    assert not varpro.linearised_applies(problem, 4)
    with pytest.raises(ValueError, match="small-problem path"):
        varpro.linearised_gain(problem, X[:2], X[2:])
    # many rows in a small dimension (V still small): beyond the dense LM step's size, where the
    # screen's QR would cost 2p(q·d)² flops and its basis p·q·d floats, the old exchange
    many = Problem(RandomFeatures("relu+tanh", 4, 6000, seed=1), np.ones((6000, 1)), np, None)
    assert many.small and 4000 < 6000 < 8000 and not varpro.linearised_applies(many, 1000)
    assert not varpro.linearised_applies(many, 64)                   # p ≥ 2·q·d: far above
    # from BUILD_DIMENSION on, where a random pool is far from every point: the old exchange
    for d, applies in [(31, True), (32, False)]:
        rf = RandomFeatures("relu+tanh", d, round(1.5 * d * 2), seed=1)
        wide = Problem(rf, np.ones((rf.p, 1)), np, None)
        assert wide.small and varpro.linearised_applies(wide, 2) is applies


@pytest.mark.parametrize("grow", [False, True])
def test_exchange_inserts_the_best_linearised_point_where_it_applies(monkeypatch, grow):
    from rftheory import varpro

    rf, X, theta = _model(d=6, n=4, ratio=1.5)                      # p = 36: applies to 4 rows
    problem = Problem(rf, theta, np, None)
    start = _random_rows(4, 6, 3)
    run = varpro.Run(problem, 0.0, 10**6, None, 1, lambda X: X)
    seen = []

    def old_screen(*args, **kwargs):
        seen.append(1)
        raise ZeroDivisionError("the plain screen")

    monkeypatch.setattr(varpro, "_screen", old_screen)
    if not grow:
        j = least_useful(problem, start)
        rows = np.delete(start, j, axis=0)
        assert not varpro.linearised_applies(problem, 3)             # 3 kept rows: the old move
        with pytest.raises(ZeroDivisionError):
            varpro.exchange(problem, start, np.random.default_rng(1), run, grow=False,
                            n_screen=20, top=2)
        assert seen == [1]
        return
    monkeypatch.setattr(varpro, "levenberg_marquardt", lambda problem, X, run, **kw: (X, 0.0))
    pool = varpro.random_points(np.random.default_rng(1), 20, 6)
    best = pool[int(np.argmax(varpro.linearised_gain(problem, start, pool)))]
    out = varpro.exchange(problem, start, np.random.default_rng(1), run, grow=True,
                          n_screen=20, top=2)
    grown = np.concatenate([start, best[None, :]])
    assert seen == [] and out.shape == start.shape
    assert np.array_equal(out, np.delete(grown, least_useful(problem, grown), axis=0))
