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
