"""Memory guard, wired into every command that computes (issues #11, #22): each input that
cannot fit is refused in one line with exit 2 before anything is allocated, by the one rule of
``--memory-limit`` / ``RFTHEORY_MEMORY_LIMIT``; sweep grids are counted without being built;
nothing is refused on time (``--time-limit`` is a deadline, see tests/test_deadline.py)."""

from __future__ import annotations

import time

import pytest

from rftheory.cli import main
from rftheory.errors import ResourceLimitError
from rftheory.sweep import MAX_CELLS, SweepSpecError, check_sweep_size, parse_spec, plan_sweep


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def refused(capsys, *argv: str) -> str:
    command = " ".join(argv[:2]) if argv[0] == "sweep" else argv[0]
    code, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert lines[0].startswith(f"rftheory {command}: error: ")
    return lines[0]


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if any model is built."""
    import rftheory.concentration
    import rftheory.pipeline

    def forbidden(*args, **kwargs):
        raise AssertionError("work started before the size guard refused it")

    monkeypatch.setattr(rftheory.pipeline, "fit_model", forbidden)
    monkeypatch.setattr(rftheory.concentration, "measure_concentration", forbidden)


@pytest.mark.parametrize("argv", [
    ["reconstruct", "--d", "10", "--n", "5", "--p", "100000000000"],
    ["reconstruct", "--d", "10", "--n", "5", "--p-mult", "1e300"],
    ["reconstruct", "--d", "100000", "--n", "100000", "--p", "200000"],
    ["reconstruct", "--d", "5", "--n", "10000000", "--p", "20000000"],
    ["kernel", "relu", "--d", "10", "--n", "20", "--p", "100000000000000"],
    ["kernel", "relu", "--d", "100000000", "--n", "20", "--p", "100"],
])
def test_jobs_that_cannot_fit_are_refused_before_they_start(capsys, no_work, argv):
    import rftheory.reconstruct  # noqa: F401  (imports are not the guard's time)

    start = time.perf_counter()
    line = refused(capsys, *argv)
    assert time.perf_counter() - start < 5.0  # refused, not started; slack for load
    assert "of memory" in line and "over the limit" in line


@pytest.mark.parametrize("argv", [
    ["kernel", "relu", "--d", "100000", "--n", "100000", "--p", "100"],
    ["kernel", "relu", "--d", "10", "--n", "10000000", "--p", "100"],
])
def test_kernel_sizes_beyond_its_n_bound_are_refused(capsys, no_work, argv):
    assert "--n must be <=" in refused(capsys, *argv)


def test_explicit_limits_one_rule_for_every_command(capsys, no_work, monkeypatch, tmp_path):
    small = ["reconstruct", "--d", "20", "--n", "10", "--p", "20000"]
    line = refused(capsys, *small, "--memory-limit", "1M")
    assert "1 MiB set by --memory-limit" in line and "--memory-limit" in line
    line = refused(capsys, "kernel", "relu", "--d", "10", "--n", "20", "--p", "100,400",
                   "--memory-limit", "64K")
    assert "set by --memory-limit" in line
    monkeypatch.setenv("RFTHEORY_MEMORY_LIMIT", "64K")
    assert "set by RFTHEORY_MEMORY_LIMIT" in refused(capsys, *small)
    assert "set by RFTHEORY_MEMORY_LIMIT" in refused(
        capsys, "demo", "--quick", "--out", str(tmp_path / "r"))
    assert "set by RFTHEORY_MEMORY_LIMIT" in refused(
        capsys, "verify", "law", "--quick", "--out", str(tmp_path / "r"))
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("value", ["0", "-3", "soon", "nan"])
def test_a_malformed_time_limit_is_refused_before_any_work(capsys, no_work, monkeypatch, value):
    small = ["reconstruct", "--d", "20", "--n", "10", "--p", "20000"]
    assert "--time-limit must be " in refused(capsys, *small, "--time-limit", value)
    monkeypatch.setenv("RFTHEORY_TIME_LIMIT", value)
    assert "RFTHEORY_TIME_LIMIT must be " in refused(capsys, *small)


@pytest.mark.parametrize("argv", [
    ["reconstruct", "--d", "100", "--n", "20", "--p-mult", "10"],
    ["reconstruct", "--activation", "relu", "--data", "patches", "--n", "2", "--p-mult", "1"],
])
def test_the_main_jobs_are_not_refused(capsys, monkeypatch, argv):
    """Issue #22: these were refused on time estimates of hours. The guard accepts them (no time
    estimate exists any more; a tiny limit set on purpose still stops them, on the clock); the
    run is not made here (the first fit is stopped by no_work's stand-in)."""
    import rftheory.pipeline

    reached = []

    def stand_in(**kwargs):
        reached.append(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr(rftheory.pipeline, "fit_model", stand_in)
    monkeypatch.setenv("RFTHEORY_TIME_LIMIT", "0.001")
    with pytest.raises(SystemExit):
        main(argv)
    assert reached and reached[0]["n"] in (2, 20)
    code, out, err = run(capsys, *argv, "--dry-run")
    assert code == 0 and "of memory" in out and err == ""


HUGE = """
[sweep]
cell = "reconstruct"
seeds = 2
[grid]
activation = ["relu"]
d = [5]
n = [4]
p_mult = [1e300]
"""


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_sweep_with_an_absurd_cell_is_refused_also_at_dry_run(capsys, tmp_path, dry_run):
    path = tmp_path / "huge.toml"
    path.write_text(HUGE)
    out = tmp_path / "out"
    line = refused(capsys, "sweep", "run", str(path), "--out", str(out),
                   *(["--dry-run"] if dry_run else []))
    assert "largest cell" in line and "p_mult = 1e+300" in line and "of memory" in line
    assert not out.exists()  # refused before the store was created


def _grid(seeds: int) -> dict:
    values = list(range(2, 12))
    return {"sweep": {"cell": "label_fit", "seeds": seeds},
            "grid": {"activation": ["relu", "tanh", "relu+tanh", "abs", "gelu"] * 1,
                     "d": values, "n": values, "p": [v + 2 for v in values]},
            "fixed": {}}


def test_a_grid_of_1e8_cells_is_counted_in_milliseconds_and_refused_on_memory(tmp_path):
    """10⁸ cells: the collector would hold every stored row (SCANNED_ROW_BYTES each, ~95 GiB):
    refused by counting, in well under a second, before anything is built."""
    spec = parse_spec(_grid(20000))  # 5 · 10³ · 20000 = 10⁸ cells
    start = time.perf_counter()
    assert spec.count_cells() == 10**8
    assert time.perf_counter() - start < 2.0  # counting, not building; slack for load
    start = time.perf_counter()
    with pytest.raises(ResourceLimitError, match="scan of a store of 1e\\+08 cells"):
        check_sweep_size(spec, slots=2, memory_limit="64G")
    assert time.perf_counter() - start < 5.0  # refused, not started; slack for load
    with pytest.raises(ResourceLimitError, match="of memory"):
        plan_sweep(spec, tmp_path / "o", slots=2, memory_limit="64G")
    assert not (tmp_path / "o").exists()
    small = parse_spec(_grid(2))  # 10⁴ cells of tiny label fits: accepted
    assert check_sweep_size(small, slots=2)["cells"] == 10**4


def test_an_absurd_count_is_refused_before_anything_is_built():
    start = time.perf_counter()
    with pytest.raises(SweepSpecError, match="more than the 1e"):
        parse_spec(_grid(MAX_CELLS))
    assert time.perf_counter() - start < 5.0  # refused, not started; slack for load


def test_the_memory_of_the_workers_adds_up():
    spec = parse_spec({"sweep": {"cell": "label_fit", "seeds": 10},
                       "grid": {"activation": ["relu"], "p": [1000, 2000, 4000]},
                       "fixed": {"d": 20, "n": 40}})
    one = check_sweep_size(spec, slots=1)
    assert one["largest_cell"]["params"]["p"] == 4000 and one["cells"] == 30
    assert one["scan_bytes"] == 30 * 1024
    with pytest.raises(ResourceLimitError, match="workers each running"):
        check_sweep_size(spec, slots=2, memory_limit=1.5 * one["largest_cell"]["peak_bytes"])


def test_claim_configurations_are_checked_before_they_run():
    from rftheory.claims import claim_module, run_claim

    law = claim_module("law")
    big = law.QUICK.replace(grid=((10**5, 10**4),))
    with pytest.raises(ResourceLimitError, match="of memory"):
        run_claim("law", config=big)
    kernel = claim_module("kernel_concentration")
    with pytest.raises(ResourceLimitError):
        run_claim("kernel_concentration", config=kernel.QUICK.replace(d=10**8))


@pytest.mark.slow
def test_the_main_job_runs_to_its_end(capsys):
    """`rftheory reconstruct --d 100 --n 20 --p-mult 10` (refused before issue #22 on an
    estimate of 4.3 h) runs to its own end: 5-22 s on 2 free cores."""
    assert main(["reconstruct", "--d", "100", "--n", "20", "--p-mult", "10", "--json"]) == 0
    import json

    result = json.loads(capsys.readouterr().out)
    assert result["stop_reason"] in ("tolerance", "stalled", "budget")
