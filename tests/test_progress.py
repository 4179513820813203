"""Progress (issue #22): a tqdm bar on a terminal only, fed by the jobs' one progress hook;
``--no-progress`` and ``--json`` are quiet; dry runs size a job without running it."""

from __future__ import annotations

import argparse
import json
import sys

import pytest

from rftheory.cli import main
from rftheory.commands._common import TaskBar, progress_bar_wanted, progress_lines


def _args(**kw):
    return argparse.Namespace(**{"json": False, "no_progress": False, **kw})


def test_a_bar_on_a_terminal_lines_in_a_log_nothing_when_asked(monkeypatch, capsys):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert not isinstance(progress_lines(_args()), TaskBar) and not progress_bar_wanted(_args())
    assert progress_lines(_args(no_progress=True)) is None
    assert progress_lines(_args(json=True)) is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert progress_bar_wanted(_args()) and not progress_bar_wanted(_args(no_progress=True))
    bar = progress_lines(_args())
    assert isinstance(bar, TaskBar)
    bar("a note")          # written above the bar
    bar("[1/3] first")
    bar("[3/3] last")      # the bar ends at its total
    err = capsys.readouterr().err
    assert "a note" in err and "3/3" in err and "last" in err
    assert bar._bar is None


def test_reconstruct_dry_run_sizes_the_job_and_runs_nothing(capsys, monkeypatch):
    import rftheory.pipeline

    monkeypatch.setattr(rftheory.pipeline, "fit_model",
                        lambda **kw: pytest.fail("a dry run must not fit a model"))
    assert main(["reconstruct", "--d", "100", "--n", "20", "--p-mult", "10", "--dry-run",
                 "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["dry_run"] and plan["sizes"]["p"] == 20000 and plan["peak_bytes"] > 0
    assert "time_probe" not in plan and "V cached" in plan["memory_parts"]
    assert main(["reconstruct", "--d", "10", "--n", "5", "--p", "100", "--time-probe"]) == 2
    assert "--time-probe goes with --dry-run" in capsys.readouterr().err


def test_time_probe_measures_two_real_steps(capsys):
    assert main(["reconstruct", "--d", "10", "--n", "5", "--p-mult", "10", "--max-steps",
                 "500", "--dry-run", "--time-probe", "--json"]) == 0
    probe = json.loads(capsys.readouterr().out)["time_probe"]
    assert probe["probe_steps"] == 2 and probe["max_steps"] == 500
    assert probe["seconds_per_step"] > 0
    assert probe["upper_bound_seconds"] == pytest.approx(
        probe["fit_seconds"] + min(500 * probe["seconds_per_step"],
                                   probe["max_sweeps"] * probe["seconds_per_sweep"]))
    from rftheory.varpro import default_max_sweeps

    assert probe["max_sweeps"] == default_max_sweeps(500, 10, 5)


@pytest.mark.parametrize("d, method, budget", [(10, None, 20000), (48, None, 24000),
                                               (48, "lbfgs", 20000)])
def test_time_probe_scales_to_the_default_budget_of_the_method_and_dimension(d, method, budget):
    from rftheory.pipeline import time_probe

    probe = time_probe(activation="relu+tanh", d=d, n=2, p=4 * d, method=method)
    assert probe["max_steps"] == budget
    assert probe["upper_bound_seconds"] == pytest.approx(
        probe["fit_seconds"] + min(budget * probe["seconds_per_step"],
                                   probe["max_sweeps"] * probe["seconds_per_sweep"]))


def test_time_probe_bound_follows_the_work_budget_when_it_binds_first():
    """Where the sweep budget ends a run before max_steps (d = 3072), the probe's upper bound
    is the sweeps' — here forced by a budget of 30 sweeps against 10⁶ steps."""
    from rftheory.pipeline import time_probe

    probe = time_probe(activation="relu+tanh", d=10, n=5, p=500, max_steps=10**6, max_sweeps=30)
    assert probe["max_sweeps"] == 30 and probe["seconds_per_sweep"] > 0
    assert probe["upper_bound_seconds"] == pytest.approx(
        probe["fit_seconds"] + 30 * probe["seconds_per_sweep"])
    assert 30 * probe["seconds_per_sweep"] < 10**6 * probe["seconds_per_step"]


def test_verify_and_sweep_dry_runs(capsys, tmp_path):
    assert main(["verify", "law", "--dry-run", "--json", "--out", str(tmp_path / "r")]) == 0
    plan = json.loads(capsys.readouterr().out)
    jobs = plan["claims"][0]["jobs"]
    assert plan["dry_run"] and jobs and all(j["peak_bytes"] > 0 for j in jobs)
    assert not (tmp_path / "r" / "law.json").exists()
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\ncell = "label_fit"\nseeds = 3\n[grid]\nactivation = ["relu"]\n'
                    'p = [10, 20]\n[fixed]\nd = 4\nn = 6\n')
    assert main(["sweep", "run", str(spec), "--out", str(tmp_path / "o"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "6 cells" in out and "of memory" in out and not (tmp_path / "o").exists()


def test_sweep_time_probe_times_the_largest_reconstruction_cell(capsys, tmp_path):
    spec = tmp_path / "r.toml"
    spec.write_text('[sweep]\ncell = "reconstruct"\nseeds = 2\n[grid]\n'
                    'activation = ["relu+tanh"]\np_mult = [1.0, 2.0]\n'
                    '[fixed]\nd = 10\nn = 5\nmax_steps = 300\n')
    assert main(["sweep", "run", str(spec), "--out", str(tmp_path / "o"), "--dry-run",
                 "--time-probe", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    probe = plan["time_probe"]
    assert plan["estimate"]["largest_cell"]["params"]["p_mult"] == 2.0
    assert probe["max_steps"] == 300 and probe["probe_steps"] == 2
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("d, method, budget", [(48, [], 24000), (48, ["--method", "lbfgs"], 20000),
                                               (40, [], 20000)])
def test_dry_run_reports_the_budget_the_run_would_use(capsys, d, method, budget):
    assert main(["reconstruct", "--d", str(d), "--n", "2", "--p", "400", "--dry-run",
                 "--json", *method]) == 0
    assert json.loads(capsys.readouterr().out)["sizes"]["max_steps"] == budget
