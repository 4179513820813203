"""Size guards (rftheory.budget): estimates against measured peaks and counts; limits; refusals."""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np
import pytest

import rftheory.budget as budget
from rftheory.activations import Activation
from rftheory.data import gaussian_labels, sphere_data
from rftheory.errors import ResourceLimitError, RFTheoryError
from rftheory.features import RandomFeatures, train_min_norm
from rftheory.projection import projection_loss
from rftheory.reconstruct import reconstruct

#: Stated accuracy of the peak-memory estimates (module Notes): within a factor 2 either way of
#: the tracemalloc peak, on cases large enough (tens of MiB) that the interpreter's own
#: allocations do not count. Measured ratios on the development machine: 0.95–1.75.
PEAK_FACTOR = 2.0


@pytest.fixture(autouse=True)
def one_blas_thread():
    """These runs issue thousands of tiny batched products; OpenBLAS's threads only contend for
    them (10-20x slower on a loaded 2-core machine). Memory and counts do not depend on it."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _peak(job) -> tuple[float, object]:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = job()
        return tracemalloc.get_traced_memory()[1] - base, out
    finally:
        tracemalloc.stop()


def _assert_within(estimate: budget.Estimate, measured: float) -> None:
    ratio = estimate.peak_bytes / measured
    assert 1 / PEAK_FACTOR <= ratio <= PEAK_FACTOR, (estimate.describe(), measured, ratio)


@pytest.mark.parametrize("d, n, p, cache, activation, dtype", [
    (50, 100, 40000, 0, "relu", "float64"),            # V streamed, drawn by threads
    (50, 100, 40000, 2**30, "relu", "float64"),        # V cached after the first pass
    (100, 300, 20000, 0, "gelu", "float64"),
    (10, 1000, 5000, 0, "tanh", "float64"),            # partial Gram blocks dominate (n² terms)
    (300, 50, 60000, 0, "relu+tanh", "float32"),       # host float64 chunks and float32 casts
])
def test_training_peak_memory(d, n, p, cache, activation, dtype):
    X, Y = sphere_data(n, d, 0).astype(dtype), gaussian_labels(n, 0).astype(dtype)
    features = RandomFeatures(activation, d=d, p=p, seed=0, v_cache_bytes=cache)
    measured, _ = _peak(lambda: train_min_norm(features, X, Y))
    _assert_within(budget.estimate_train(d=d, n=n, p=p, dtype=dtype, v_cache_bytes=cache),
                   measured)


@pytest.mark.parametrize("d, n, p, cache", [
    (50, 20, 30000, 2**30),   # blocks kept for the second pass, V cached
    (50, 20, 30000, 0),       # V drawn every pass, kept with the blocks
    (30, 30, 60000, 0),
])
@pytest.mark.parametrize("method", ["lbfgs", "varpro"])
def test_reconstruction_peak_memory(d, n, p, cache, method):
    X, Y = sphere_data(n, d, 0), gaussian_labels(n, 0)

    def job():
        features = RandomFeatures("relu+tanh", d=d, p=p, seed=0, v_cache_bytes=cache)
        model = train_min_norm(features, X, Y)
        return reconstruct(features, model.theta, n, seed=0, max_steps=3, method=method)

    measured, _ = _peak(job)
    _assert_within(budget.estimate_reconstruct(d=d, n=n, p=p, max_steps=3, v_cache_bytes=cache,
                                               method=method), measured)


def test_varpro_peak_memory_with_an_exchange():
    """45 steps: two LM runs with a grow exchange between them, whose screen of 1000 random
    points (batches of 256 rows with the candidates) sets the peak (measured ratio 1.04)."""
    d, n, p = 50, 20, 30000
    X, Y = sphere_data(n, d, 0), gaussian_labels(n, 0)

    def job():
        features = RandomFeatures("relu+tanh", d=d, p=p, seed=0, v_cache_bytes=2**30)
        model = train_min_norm(features, X, Y)
        return reconstruct(features, model.theta, n, seed=0, max_steps=80)

    measured, result = _peak(job)
    assert result.rounds >= 2 and result.residual_steps > 0  # an exchange ran
    est = budget.estimate_reconstruct(d=d, n=n, p=p, max_steps=80)
    assert est.parts[0][0] == "exchange"
    _assert_within(est, measured)


def test_dense_gauss_newton_matrix_is_counted():
    """solver="dense" at n̂d = 800: H, H + λS and its factor ((n̂d)² float64 each) dominate."""
    d, n, p = 40, 20, 1000
    X, Y = sphere_data(n, d, 0), gaussian_labels(n, 0)

    def job():
        features = RandomFeatures("relu+tanh", d=d, p=p, seed=0, v_cache_bytes=2**30)
        model = train_min_norm(features, X, Y)
        return reconstruct(features, model.theta, n, seed=0, max_steps=3, solver="dense")

    measured, _ = _peak(job)
    est = budget.estimate_reconstruct(d=d, n=n, p=p, max_steps=3, solver="dense")
    assert "varpro/dense" in est.job and est.parts[0][0] == "Gauss–Newton matrix"
    assert est.peak_bytes > 3 * (n * d) ** 2 * 8
    _assert_within(est, measured)
    cg = budget.estimate_reconstruct(d=d, n=n, p=p, max_steps=3, solver="cg")
    assert cg.peak_bytes < est.peak_bytes  # no (n̂d)² matrix


def _measure_concentration():
    from rftheory.concentration import measure_concentration
    return measure_concentration


@pytest.mark.parametrize("d, n, p_values, reps", [(20, 200, [1000, 20000], 1),
                                                   (10, 400, [3000], 1)])
def test_kernel_measurement_peak_memory(d, n, p_values, reps):
    measure = _measure_concentration()
    measured, _ = _peak(lambda: measure("relu", d, n, p_values, reps=reps))
    _assert_within(budget.estimate_kernel(d=d, n=n, p_values=p_values, reps=reps), measured)


@pytest.mark.parametrize("n, p, d", [(100, 50000, 20), (1000, 20000, 10)])
def test_materialised_features_peak_memory(n, p, d):
    features = RandomFeatures("relu", d=d, p=p, seed=0)
    X = sphere_data(n, d, 0)
    measured, _ = _peak(lambda: features.features(X, allow_large=True))
    _assert_within(budget.estimate_features(n=n, p=p, d=d), measured)


# -- work: Gaussian draws exactly, matrix products exactly ------------------------------------

class _Counter:
    """Counts matmul flops (2·m·n·k per product), φ/φ′ elements and Gaussian draws of V."""

    def __init__(self, monkeypatch):
        import array_api_compat.numpy as xpn

        self.matmul = self.elements = self.draws = 0.0
        matmul, call = xpn.matmul, Activation.__call__
        both, fill = Activation.value_and_derivative, RandomFeatures._fill_block

        def counted_matmul(a, b):
            out = matmul(a, b)
            self.matmul += 2.0 * out.size * a.shape[-1]
            return out

        def counted_call(act, x):
            self.elements += x.size
            return call(act, x)

        def counted_both(act, x):
            self.elements += 2 * x.size
            return both(act, x)

        def counted_fill(features, b, out):
            self.draws += out.size
            return fill(features, b, out)

        monkeypatch.setattr(xpn, "matmul", counted_matmul)
        monkeypatch.setattr(Activation, "__call__", counted_call)
        monkeypatch.setattr(Activation, "value_and_derivative", counted_both)
        monkeypatch.setattr(RandomFeatures, "_fill_block", counted_fill)

    @property
    def flops(self) -> float:
        return self.matmul + budget.ACTIVATION_FLOPS * self.elements


@pytest.mark.parametrize("p, cache", [(2000, 0), (50000, 0), (50000, 2**30)])
def test_training_work_is_counted_exactly(monkeypatch, p, cache):
    d, n = 20, 30
    X, Y = sphere_data(n, d, 0), gaussian_labels(n, 0)
    features = RandomFeatures("relu+tanh", d=d, p=p, seed=0, v_cache_bytes=cache)
    count = _Counter(monkeypatch)
    train_min_norm(features, X, Y)
    est = budget.estimate_train(d=d, n=n, p=p, v_cache_bytes=cache)
    assert est.draws == count.draws == (1 if cache else 3) * p * d
    # the estimate adds LAPACK's n³ terms (0.1–1.5 % here) to the exactly counted products
    assert 1.0 <= est.flops / count.flops <= 1.02


@pytest.mark.parametrize("m, cache", [(20, 0), (40, 2**30)])
def test_one_loss_evaluation_is_counted_exactly(monkeypatch, m, cache):
    d, n, p = 20, 30, 50000
    features = RandomFeatures("relu+tanh", d=d, p=p, seed=0, v_cache_bytes=cache)
    theta = train_min_norm(features, sphere_data(n, d, 0), gaussian_labels(n, 0)).theta
    count = _Counter(monkeypatch)
    projection_loss(features, sphere_data(m, d, 1), theta)
    _, flops, draws = budget._loss_evaluation(m, d, p, 1, 8, bool(cache), 2)
    assert draws == count.draws
    assert 1.0 <= flops / count.flops <= 1.01


def test_reconstruction_work_is_an_upper_bound_for_the_step_budget(monkeypatch):
    d, n, p = 20, 10, 4000
    X, Y = sphere_data(n, d, 0), gaussian_labels(n, 0)
    features = RandomFeatures("relu+tanh", d=d, p=p, seed=0, v_cache_bytes=2**30)
    count = _Counter(monkeypatch)
    model = train_min_norm(features, X, Y)
    # The estimate models the over-complete L-BFGS method (reconstruct(method="lbfgs")).
    result = reconstruct(features, model.theta, n, seed=0, max_steps=60, method="lbfgs")
    est = budget.estimate_reconstruct(d=d, n=n, p=p, method="lbfgs", max_steps=result.steps,
                                      max_rounds=result.rounds,
                                      evaluations_per_step=result.evaluations / result.steps)
    assert est.draws == count.draws == p * d  # V drawn once, then cached
    # every step priced at the pool size (the polish phase runs n̂ rows): above, within 3×
    assert count.flops <= est.flops <= 3 * count.flops


# -- limits, messages, machine memory -----------------------------------------------------------

def test_absurd_sizes_are_refused_at_once_in_one_line():
    cases = [
        lambda: budget.check_reconstruct(d=100, n=20, p=10**11),
        lambda: budget.check_reconstruct(d=5, n=3, p=1e300 * 5 * 3),  # --p-mult 1e300
        lambda: budget.check_kernel(d=10, n=20, p_values=[10**14]),
        lambda: budget.check_kernel(d=10**8, n=20, p_values=[100, 400]),
        lambda: budget.check_train(d=100000, n=100000, p=1000),
        lambda: budget.check_features(n=10**7, p=10**5, d=10),
    ]
    tracemalloc.start()
    try:
        for case in cases:
            start = time.perf_counter()
            with pytest.raises(ResourceLimitError) as info:
                case()
            assert time.perf_counter() - start < 0.1
            message = str(info.value)
            assert "\n" not in message and "limit" in message
            assert isinstance(info.value, RFTheoryError) and isinstance(info.value, ValueError)
        assert tracemalloc.get_traced_memory()[1] < 2**20  # estimated, never allocated
    finally:
        tracemalloc.stop()


def test_memory_message_names_estimate_limit_and_override(monkeypatch):
    monkeypatch.delenv("RFTHEORY_MEMORY_LIMIT", raising=False)
    est = budget.estimate_reconstruct(d=100, n=20, p=200_000)  # V cached: 153 MiB
    with pytest.raises(ResourceLimitError) as info:
        budget.check(est, memory_limit=64 * 2**20)
    message = str(info.value)
    assert message.startswith("reconstruct (d = 100, n = 20, n̂ = 20, p = 200000, float64, "
                              "varpro/cg) needs ~")
    assert "over the limit of 64 MiB (64 MiB set by memory_limit)" in message
    assert "V cached" in message and "RFTHEORY_MEMORY_LIMIT" in message
    assert budget.check(est, memory_limit="1G", time_limit=math.inf) is est
    monkeypatch.setenv("RFTHEORY_MEMORY_LIMIT", "64M")
    with pytest.raises(ResourceLimitError, match="set by RFTHEORY_MEMORY_LIMIT"):
        budget.check(est, time_limit=math.inf)


def test_an_explicit_memory_limit_never_exceeds_the_machine(monkeypatch):
    monkeypatch.setattr(budget, "_machine", lambda: (8.0 * 2**30, 16.0 * 2**30))
    assert budget.memory_limit() == (0.8 * 8 * 2**30, "80% of the 8 GiB available")
    assert budget.memory_limit(12 * 2**30)[0] == 12 * 2**30  # above what is free: allowed
    limit, source = budget.memory_limit("1T")  # above the machine: capped
    assert limit == 16 * 2**30 and source == "this machine's total of 16 GiB"
    with pytest.raises(ResourceLimitError, match=r"\(this machine's total of 16 GiB\); reduce the sizes$"):
        budget.check(budget.estimate_features(n=10**5, p=10**5, d=10), memory_limit="1T")


def test_time_limit_default_override_and_infinity(monkeypatch):
    monkeypatch.delenv("RFTHEORY_TIME_LIMIT", raising=False)
    big = budget.estimate_reconstruct(d=100, n=200, p=200_000, v_cache_bytes=0)
    assert big.seconds > budget.DEFAULT_TIME_LIMIT
    with pytest.raises(ResourceLimitError, match=r"would take ~.*over the limit of the default "
                                                 r"1 h; .*RFTHEORY_TIME_LIMIT"):
        budget.check(big, memory_limit=math.inf)
    assert budget.check(big, memory_limit=math.inf, time_limit=math.inf) is big
    monkeypatch.setenv("RFTHEORY_TIME_LIMIT", "inf")
    assert budget.check(big, memory_limit=math.inf) is big
    monkeypatch.setenv("RFTHEORY_TIME_LIMIT", "soon")
    with pytest.raises(RFTheoryError, match="RFTHEORY_TIME_LIMIT must be a number"):
        budget.check(big, memory_limit=math.inf)


def test_available_memory_reads_this_machine_with_a_fallback(monkeypatch):
    available = budget.available_memory()
    if available is not None:  # Linux: MemAvailable
        assert 0 < available <= budget._machine()[1]
    monkeypatch.setattr(budget, "_meminfo", lambda: {})  # no /proc: os.sysconf
    monkeypatch.setattr(budget, "_cgroup", lambda: None)
    fallback = budget.available_memory()
    assert fallback is None or fallback > 0
    monkeypatch.setattr(budget, "_cgroup", lambda: (2.0 * 2**30, 1.5 * 2**30))  # a container
    monkeypatch.setattr(budget, "_meminfo", lambda: {"MemAvailable": 10.0 * 2**30,
                                                     "MemTotal": 16.0 * 2**30})
    assert budget._machine() == (0.5 * 2**30, 2.0 * 2**30)


@pytest.mark.parametrize("call, message", [
    (lambda: budget.estimate_train(d=0, n=1, p=1), "d must be >= 1"),
    (lambda: budget.estimate_train(d=True, n=1, p=1), "d must be a number"),
    (lambda: budget.estimate_train(d="3", n=1, p=1), "d must be a number"),
    (lambda: budget.estimate_train(d=3, n=float("nan"), p=1), "n must be >= 1"),
    (lambda: budget.estimate_train(d=3, n=2, p=4, dtype="int8"), "dtype must be float64"),
    (lambda: budget.estimate_kernel(d=3, n=2, p_values=[]), "at least one value of p"),
    (lambda: budget.estimate_kernel(d=3, n=2, p_values=7), "p_values must be a list"),
    (lambda: budget.estimate_cell("nope", {"d": 1, "n": 1, "p": 1}), "no estimate for cells"),
    (lambda: budget.estimate_cell("label_fit", {"d": 1, "n": 1}), "missing p"),
    (lambda: budget.memory_limit("lots"), "must be a size such as 12G"),
])
def test_bad_sizes_are_one_line_errors(call, message):
    with pytest.raises(RFTheoryError, match=message):
        call()


def test_cells_and_large_floats():
    cell = budget.estimate_cell("reconstruct", {"d": 100, "n": 20, "p": 20000, "seed": 0})
    assert cell.job.startswith("reconstruct cell (d = 100")
    assert cell.draws == 20000 * 100  # V cached under 1 GiB in the cell
    label = budget.estimate_cell("label_fit", {"d": 20, "n": 30, "p": 5000, "seed": 0})
    assert label.peak_bytes < 2**27
    huge = budget.estimate_reconstruct(d=5, n=3, p=1.5e301)
    assert math.isinf(huge.peak_bytes) or huge.peak_bytes > 1e300
    assert "p = 1.5e+301" in huge.job


def test_streaming_constants_agree_with_the_package():
    from rftheory import features, kernel, projection
    import inspect

    assert (budget._BLOCK_ROWS, budget._SUM_GROUP, budget._THREADED_DRAW_MIN) == (
        features.BLOCK_ROWS, features.SUM_GROUP, features.THREADED_DRAW_MIN)
    assert budget._KEEP_BLOCKS_BYTES == projection.KEEP_BLOCKS_BYTES
    assert budget._KERNEL_ORDER == kernel.DEFAULT_ORDER
    assert budget._RECONSTRUCT_MAX_STEPS == \
        inspect.signature(reconstruct).parameters["max_steps"].default
    from rftheory import reconstruct as rec, varpro

    assert budget._METHODS == rec.METHODS
    # defaults set in the body of reconstruct / _solve_step, repeated by the model
    body = inspect.getsource(rec.reconstruct)
    assert f"max_rounds = {budget._LBFGS_MAX_ROUNDS} if max_rounds is None" in body
    assert f"max_rounds = {budget._VARPRO_MAX_ROUNDS} if max_rounds is None" in body
    assert "max_iter=max(20, 2 * m)" in inspect.getsource(varpro._solve_step)
    assert budget._cg_iterations(5) == 20 and budget._cg_iterations(16) == 32


# -- the varpro model ----------------------------------------------------------------------------

@pytest.mark.parametrize("solver", ["dense", "cg"])
def test_varpro_work_is_an_upper_bound_for_the_step_budget(monkeypatch, solver):
    """The streamed products of reconstruct(method="varpro"), counted exactly, against the model
    given the run's own trial count: above (CG priced at its max_iter, runs and exchanges at
    their bound), within a small factor; V drawn once."""
    from rftheory import varpro
    import rftheory.reconstruct as rec

    d, n, p = 20, 10, 4000
    X, Y = sphere_data(n, d, 0), gaussian_labels(n, 0)
    features = RandomFeatures("relu+tanh", d=d, p=p, seed=0, v_cache_bytes=2**30)
    made = []

    class Counted(varpro.Problem):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(rec, "Problem", Counted)
    count = _Counter(monkeypatch)
    model = train_min_norm(features, X, Y)
    result = reconstruct(features, model.theta, n, seed=0, max_steps=40, solver=solver)
    est = budget.estimate_reconstruct(d=d, n=n, p=p, method="varpro", solver=solver,
                                      max_steps=result.steps,
                                      evaluations_per_step=result.evaluations / result.steps)
    assert est.draws == count.draws == p * d
    ratio = est.flops / count.flops
    assert 1.0 <= ratio <= 4.0, ratio
    if solver == "cg":  # CG never runs past the max_iter the model prices
        assert made[-1].products <= result.evaluations * (budget._cg_iterations(n) + 1)
        assert est.float32_flops > 0.5 * est.flops
    else:
        assert est.float32_flops == 0


@pytest.mark.parametrize("d, n_hat, p", [
    (16, 16, 10**6),    # n̂d = 256 = DENSE_MAX_UNKNOWNS: dense however large p
    (17, 16, 10**4),    # 272 unknowns, p(n̂d)² > DENSE_FLOPS: cg
    (20, 20, 1677),     # 400 unknowns, p(n̂d)² = 2.68e8 <= 2**28: dense
    (20, 20, 1678),     # just above: cg
    (100, 10, 6),       # p(n̂d)² = 6e6 but (n̂d)³ = 1e9 > DENSE_FLOPS (the factorisation): cg
    (64, 10, 6),        # (n̂d)³ = 2.6e8 <= 2**28: dense
])
def test_solver_switches_where_varpro_does(d, n_hat, p):
    from rftheory import varpro
    from rftheory.backend import to_host  # noqa: F401  (the Problem's own imports)
    import array_api_compat.numpy as xpn

    features = RandomFeatures("relu", d=d, p=p, seed=0)
    problem = varpro.Problem(features, xpn.zeros((p, 1)), xpn, None, "auto")
    expected = "dense" if problem.dense_for(n_hat) else "cg"
    assert budget.varpro_solver(d=d, p=p, n_hat=n_hat) == expected
    assert budget.varpro_solver(d=d, p=p, n_hat=n_hat, solver="cg") == "cg"
    assert budget.varpro_solver(d=d, p=p, n_hat=n_hat, solver="dense") == "dense"
    est = budget.estimate_reconstruct(d=d, n=n_hat, p=p, max_steps=10)
    assert est.job.endswith(f"varpro/{expected})")
    names = [name for name, _ in est.parts]
    assert ("Gauss–Newton matrix" in names) == (expected == "dense")
    assert ("kept blocks (CG)" in names) == (expected == "cg")
    with pytest.raises(RFTheoryError, match="unknown solver"):
        budget.estimate_reconstruct(d=d, n=n_hat, p=p, solver="qr")


@pytest.mark.parametrize("d, n, p", [(10, 10, 100), (20, 10, 4000), (80, 16, 12800),
                                     (3072, 10, 30720)])
def test_varpro_costs_more_per_step_than_one_lbfgs_evaluation(d, n, p):
    """Each LM iteration is an L-BFGS step of the n̂ rows (a loss evaluation per trial) plus a
    curvature pass and a solve: never cheaper at the same trial count; and the default method
    is reconstruct's own (varpro)."""
    for e in (1.0, 2.0):
        vp = budget.estimate_reconstruct(d=d, n=n, p=p, method="varpro", evaluations_per_step=e,
                                         include_training=False)
        lb = budget.estimate_reconstruct(d=d, n=n, p=p, method="lbfgs", oversample=1,
                                         max_rounds=1, evaluations_per_step=e,
                                         include_training=False)
        assert vp.flops > lb.flops and vp.seconds > lb.seconds
    import inspect
    default = inspect.signature(reconstruct).parameters["method"].default
    assert budget.estimate_reconstruct(d=d, n=n, p=p) == \
        budget.estimate_reconstruct(d=d, n=n, p=p, method=default)
    with pytest.raises(RFTheoryError, match="unknown method"):
        budget.estimate_reconstruct(d=d, n=n, p=p, method="adam")


def test_headline_dn_cell_is_skipped_under_the_default_limit(monkeypatch):
    """The headline's n = 10, p = dn cell (d = 3072) with the default attack is estimated at
    hours: the claim's own skip path refuses it under the default one-hour limit (nothing is
    fitted or reconstructed), while p = n still runs."""
    from rftheory.claims import headline

    monkeypatch.delenv("RFTHEORY_TIME_LIMIT", raising=False)
    config = headline.FULL
    d = 3072
    line, seconds, skip = headline._estimate(config, d, headline.MULTIPLES["dn"](d, config.n))
    assert seconds > budget.DEFAULT_TIME_LIMIT
    assert skip is not None and "would take" in skip and "over the limit of the default 1 h" in skip
    assert "varpro/cg" in line
    _, _, none = headline._estimate(config, d, headline.MULTIPLES["n"](d, config.n))
    assert none is None
    lbfgs = budget.estimate_reconstruct(d=d, n=config.n, p=d * config.n, method="lbfgs",
                                        max_steps=config.max_steps,
                                        v_cache_bytes=config.v_cache_bytes)
    assert seconds > 5 * lbfgs.seconds  # what the check used to see: 42 min, under the limit
    pytest.importorskip("skimage", reason="the headline's images need rftheory[images]")
    rows = headline.run(config.replace(multiples=("dn",), activations=("relu",)))["rows"]
    assert [row["status"] for row in rows] == ["skipped"] and rows[0]["reason"] == skip


def test_sweep_size_check_prices_each_cell_with_its_method():
    """A sweep over ``method``: the largest cell is the costliest method's (not the
    alphabetically largest name), and the total counts each cell at its own method."""
    import math as _math

    from rftheory.sweep.run import check_sweep_size
    from rftheory.sweep.spec import parse_spec

    def report(methods):
        spec = parse_spec({"sweep": {"cell": "reconstruct", "seeds": 1},
                           "grid": {"activation": ["relu"], "d": [20], "n": [10],
                                    "p": [4000], "method": methods},
                           "fixed": {"max_steps": 100}})
        return check_sweep_size(spec, slots=1, time_limit=_math.inf)

    both, lbfgs, varpro = report(["lbfgs", "varpro"]), report(["lbfgs"]), report(["varpro"])
    assert both["largest_cell"]["params"]["method"] == "varpro"
    assert both["largest_cell"]["seconds"] == varpro["largest_cell"]["seconds"] \
        > lbfgs["largest_cell"]["seconds"]
    # one cell each: the total is the sum of both cells (plus 10 ms of bookkeeping per cell)
    assert both["estimated_seconds"] == pytest.approx(
        lbfgs["estimated_seconds"] + varpro["estimated_seconds"], rel=0.01)
