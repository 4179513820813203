"""benchmarks/bench_attack.py's summary line: the success rate's interval and the verdict."""

import pytest

from conftest import benchmark_module


@pytest.fixture(scope="module")
def bench():
    with benchmark_module("bench_attack") as module:
        yield module


def _rows(successes, runs):
    return [{"rho": 1e-5 if i < successes else 0.5, "loss": 1e-12 if i < successes else 1e-4,
             "steps": 100, "rounds": 3, "passes": 10, "wall": 1.0, "cpu": 1.0, "p": 1600,
             "rank": 1, "count": 1.25} for i in range(runs)]


def test_success_interval_is_wilsons_and_brackets_the_rate(bench):
    # Wilson 95 % for 26/30: centre (k + z²/2)/(n + z²), half-width z√(k(n−k)/n + z²/4)/(n + z²).
    z = 1.959963984540054
    k, n = 26, 30
    centre = (k + z * z / 2) / (n + z * z)
    half = z * ((k * (n - k) / n + z * z / 4) ** 0.5) / (n + z * z)
    low, high = bench.success_interval(k, n)
    assert low == pytest.approx(centre - half, rel=1e-12)
    assert high == pytest.approx(centre + half, rel=1e-12)
    assert low < k / n < high
    assert bench.success_interval(6, 6)[1] == pytest.approx(1.0)
    assert bench.success_interval(0, 6)[0] == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("successes, runs, verdict, undecided", [
    (26, 30, "MET", True),       # 87 %, interval [70 %, 95 %] contains 80 %
    (22, 30, "missed", True),    # 73 %, [56 %, 86 %]
    (30, 30, "MET", False),      # [89 %, 100 %]
    (10, 30, "missed", False),   # [19 %, 51 %]
])
def test_the_verdict_names_a_target_inside_the_interval_undecided(bench, successes, runs,
                                                                  verdict, undecided):
    line = bench.summarise("relu+tanh:80:16:1.25", "varpro", _rows(successes, runs), 0.01)
    assert f"success {successes}/{runs}" in line and "95 % interval" in line
    assert f"target ≥ 80 %: {verdict}" in line
    assert ("undecided at 30 seeds" in line) is undecided


def test_budget_table_reads_successes_within_each_budget_up_to_the_runs_own(bench):
    rows = _rows(3, 4)
    for r, steps in zip(rows, (500, 25000, 39000, 40000)):
        r["steps"], r["budget"] = steps, 40000
        r["stop"] = "tolerance" if r["rho"] < 0.01 else "budget"
    line = bench.budget_table("relu+tanh:80:8:1.25", "varpro", rows, [1000, 20000, 30000,
                                                                       40000, 60000], 0.01)
    # 60 000 lies beyond the runs' budget: not read off them
    assert "1000: 1/4, 20000: 1/4, 30000: 2/4, 40000: 3/4, 60000: –" in line
    assert "failures stopped by: budget" in line


def test_a_seed_records_the_budget_it_ran_with(bench, monkeypatch):
    # None: reconstruct's own budget at the case's d (500·d above d = 40); else the option's.
    from types import SimpleNamespace

    import numpy as np

    def fake(features, theta, n, **kwargs):
        X_hat = np.full((n, features.d), 1.0)
        return SimpleNamespace(X_hat=X_hat, loss=1.0, steps=kwargs.get("max_steps", 7),
                               rounds=1, evaluations=1, passes=1, stop_reason="budget")

    monkeypatch.setattr(bench, "reconstruct", fake)
    assert bench.run_seed("relu+tanh:48:2:1.5", 0, "varpro")["budget"] == 24000
    assert bench.run_seed("relu+tanh:8:2:1.5", 0, "varpro")["budget"] == 20000
    assert bench.run_seed("relu+tanh:48:2:1.5", 0, "lbfgs")["budget"] == 20000
    assert bench.run_seed("relu+tanh:48:2:1.5", 0, "varpro", max_steps=123)["budget"] == 123
