"""Size guards, wired into every command that computes (issue #11): each input the issue lists
is refused in one line with exit 2 before anything is allocated, by the one rule of
``--memory-limit`` / ``--time-limit`` / ``RFTHEORY_MEMORY_LIMIT`` / ``RFTHEORY_TIME_LIMIT``;
sweep grids are counted without being built."""

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
    line = refused(capsys, *argv)
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
    line = refused(capsys, *small, "--time-limit", "0.001")
    assert "set by --time-limit" in line
    line = refused(capsys, "kernel", "relu", "--d", "10", "--n", "20", "--p", "100,400",
                   "--memory-limit", "64K")
    assert "set by --memory-limit" in line
    monkeypatch.setenv("RFTHEORY_TIME_LIMIT", "0.001")
    assert "set by RFTHEORY_TIME_LIMIT" in refused(capsys, *small)
    assert "set by RFTHEORY_TIME_LIMIT" in refused(
        capsys, "demo", "--quick", "--out", str(tmp_path / "r"))
    assert "set by RFTHEORY_TIME_LIMIT" in refused(
        capsys, "verify", "theorem1", "--quick", "--out", str(tmp_path / "r"))
    assert not (tmp_path / "r").exists()


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


def test_a_grid_of_1e8_cells_is_counted_in_milliseconds_and_refused_by_time(tmp_path):
    spec = parse_spec(_grid(20000))  # 5 · 10³ · 20000 = 10⁸ cells
    start = time.perf_counter()
    assert spec.count_cells() == 10**8
    assert time.perf_counter() - start < 0.1
    start = time.perf_counter()
    with pytest.raises(ResourceLimitError, match="10+ cells to compute on 2 workers"):
        check_sweep_size(spec, slots=2)
    assert time.perf_counter() - start < 1.0
    plan = plan_sweep(spec, tmp_path / "o", slots=2, time_limit="inf")
    assert plan["total"] == plan["planned"] == 10**8
    assert plan["estimate"]["estimated_seconds"] > 10**8 * 1e-3  # at least the bookkeeping
    assert not (tmp_path / "o").exists()


def test_an_absurd_count_is_refused_before_anything_is_built():
    start = time.perf_counter()
    with pytest.raises(SweepSpecError, match="more than the 1e"):
        parse_spec(_grid(MAX_CELLS))
    assert time.perf_counter() - start < 1.0


def test_the_total_work_is_summed_over_workers():
    spec = parse_spec({"sweep": {"cell": "label_fit", "seeds": 10},
                       "grid": {"activation": ["relu"], "p": [1000, 2000, 4000]},
                       "fixed": {"d": 20, "n": 40}})
    one = check_sweep_size(spec, slots=1)
    two = check_sweep_size(spec, slots=2)
    from rftheory.budget import estimate_cell
    from rftheory.sweep import CELL_OVERHEAD_SECONDS

    work = 10 * sum(estimate_cell("label_fit", {"d": 20, "n": 40, "p": p}).seconds
                    for p in (1000, 2000, 4000))
    assert one["estimated_seconds"] == pytest.approx(work + 30 * CELL_OVERHEAD_SECONDS)
    assert two["estimated_seconds"] == pytest.approx(work / 2 + 30 * CELL_OVERHEAD_SECONDS)
    assert one["largest_cell"]["params"]["p"] == 4000
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
