"""--time-limit as a deadline on the clock (rftheory.deadline, issue #22): the optimiser, the
kernel measurement, a claim and a sweep stop once it has passed and keep what they finished.

Each job below would take a minute or more on the 2-core development machine; the deadline is
1-3 s. "Within the limit plus one step": the elapsed time is at most the limit plus a few of
the job's own measured steps (a step, the final loss evaluation, the stop of the worker
processes) — the allowance is the run's own measured rate, plus a fixed second for process and
scheduling jitter on a loaded machine; no assertion depends on how fast this machine is.
"""

from __future__ import annotations

import json
import math
import time

import pytest

from rftheory.cli import main
from rftheory.deadline import NO_DEADLINE, Deadline, time_limit
from rftheory.errors import RFTheoryError

#: Seconds for process start/stop and scheduling jitter on a loaded machine (see module doc).
JITTER = 1.0


def test_deadline_object_and_its_parsing(monkeypatch):
    monkeypatch.delenv("RFTHEORY_TIME_LIMIT", raising=False)
    assert time_limit() == math.inf and not Deadline.from_limit().finite
    assert time_limit("inf") == math.inf and time_limit(2) == 2.0
    monkeypatch.setenv("RFTHEORY_TIME_LIMIT", "inf")  # examples/law_grid*.toml docs use it
    assert Deadline.from_limit() is NO_DEADLINE
    monkeypatch.setenv("RFTHEORY_TIME_LIMIT", "5")
    d = Deadline.from_limit()
    assert d.finite and d.seconds == 5.0 and 4.0 < d.remaining() <= 5.0 and not d.passed()
    assert Deadline.from_limit(0.5).seconds == 0.5  # the option wins over the variable
    for bad in ("0", "-1", "nan", "soon", ""):
        if bad:
            with pytest.raises(RFTheoryError, match="time_limit must be"):
                time_limit(bad)
    assert Deadline.after(0.0).passed() and Deadline.after(0.0).remaining() == 0.0
    assert not NO_DEADLINE.passed() and NO_DEADLINE.remaining() == math.inf


def _long_reconstruction(method: str):
    """d = 40, n = 16, p = 4·dn with tol = 0 and a budget of 10⁶ steps: minutes to hours."""
    from rftheory.data import gaussian_labels, sphere_points
    from rftheory.features import RandomFeatures, train_min_norm

    d, n = 40, 16
    features = RandomFeatures("relu+tanh", d=d, p=4 * d * n, seed=0, v_cache_bytes=2**30)
    theta = train_min_norm(features, sphere_points(n, d, 0), gaussian_labels(n, 0)).theta
    return features, theta, n


@pytest.mark.parametrize("method", ["varpro", "lbfgs"])
def test_the_optimiser_stops_at_the_deadline_with_its_best_rows(method):
    from rftheory.projection import projection_loss
    from rftheory.reconstruct import reconstruct

    features, theta, n = _long_reconstruction(method)
    limit = 2.0
    calls = []
    start = time.perf_counter()
    result = reconstruct(features, theta, n, method=method, tol=0.0, max_steps=10**6,
                         deadline=Deadline.after(limit), callback_every=5,
                         callback=lambda step, loss, X: calls.append(step))
    elapsed = time.perf_counter() - start
    assert result.stop_reason == "time_limit" and not result.converged
    per_step = result.wall_time / max(1, result.steps)
    assert limit <= elapsed <= limit + 3 * per_step + JITTER, (elapsed, per_step)
    assert result.steps < 10**6 and result.X_hat.shape == (n, features.d)
    # the best rows found: their loss is the one reported, and below a random start's
    assert result.loss == pytest.approx(projection_loss(features, result.X_hat, theta,
                                                        gradient=False).loss, rel=1e-12)
    assert result.loss < 1.0
    # the user's callback still runs at its own interval (not every iteration)
    assert calls and all(b - a >= 5 for a, b in zip(calls, calls[1:]))


def test_without_a_deadline_the_same_run_ends_on_its_budget():
    from rftheory.reconstruct import reconstruct

    features, theta, n = _long_reconstruction("varpro")
    result = reconstruct(features, theta, n, tol=0.0, max_steps=3)
    assert result.stop_reason == "budget" and result.steps == 3


def test_reconstruct_command_returns_its_partial_result(capsys):
    import rftheory.pipeline  # noqa: F401  (imports are not the job's time)
    import rftheory.reconstruct  # noqa: F401

    limit = 3.0
    start = time.perf_counter()
    code = main(["reconstruct", "--d", "40", "--n", "16", "--p-mult", "4", "--tol", "0",
                 "--max-steps", "1000000", "--time-limit", str(limit), "--json"])
    elapsed = time.perf_counter() - start
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads(captured.out)
    assert result["stop_reason"] == "time_limit"
    per_step = result["seconds"] / max(1, result["steps"])
    assert elapsed <= limit + 3 * per_step + 2 * JITTER  # + the matching and the JSON
    assert result["rho"] and len(result["per_sample_rho"]) == 16  # scored as any run
    assert any("stop reason time_limit" in w for w in result["warnings"])


def _one_draw_seconds(d: int, n: int, p: int) -> float:
    """Seconds of one draw of the kernel measurement at width p (its Gram and Φᵀu passes)."""
    import numpy as np

    from rftheory.data import sphere_points
    from rftheory.features import RandomFeatures

    X = sphere_points(n, d, 0)
    start = time.perf_counter()
    rf = RandomFeatures("relu", d, p, seed=1)
    rf.gram(X)
    rf.rmatvec(X, np.ones(n))
    return time.perf_counter() - start


def test_the_kernel_measurement_keeps_its_finished_widths(capsys):
    from rftheory.concentration import measure_concentration

    d, n, limit = 50, 20, 1.5
    p_values = [1000 * 2**k for k in range(12)]  # to 2·10⁶, 10 draws each: a minute or more
    start = time.perf_counter()
    result = measure_concentration("relu", d, n, p_values, reps=10,
                                   deadline=Deadline.after(limit))
    elapsed = time.perf_counter() - start
    assert result["stop_reason"] == "time_limit"
    assert result["p"] + result["p_not_run"] == p_values and result["p_not_run"]
    assert len(result["op_error"]) == len(result["p"])  # only complete widths are kept
    # the draw running at the deadline belongs to the first width not kept
    step = _one_draw_seconds(d, n, result["p_not_run"][0])
    assert elapsed <= limit + 2 * step + JITTER, (elapsed, step)
    code = main(["kernel", "relu", "--d", str(d), "--n", str(n), "--p",
                 ",".join(map(str, p_values)), "--reps", "10", "--time-limit", "1", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = json.loads(captured.out)
    assert out["stop_reason"] == "time_limit" and out["p_not_run"]


def test_a_claim_reports_finished_tasks_and_lists_the_others(tmp_path, capsys):
    """verify law (its default: ~1 min on 2 free cores) with a 3 s deadline: the worker
    processes are stopped at the deadline, the partial result is saved apart from law.json."""
    limit = 3.0
    start = time.perf_counter()
    code = main(["verify", "law", "--out", str(tmp_path), "--time-limit", str(limit),
                 "--no-figures"])
    elapsed = time.perf_counter() - start
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "stopped at the time limit" in captured.out and "not run:" in captured.out
    assert not (tmp_path / "law.json").exists()
    saved = json.loads((tmp_path / "law.partial.json").read_text())
    assert saved["stop_reason"] == "time_limit" and saved["tasks_not_run"]
    assert not saved["verdict"]["supported"]
    # the cells are small (a second or so each); the pool is stopped, not waited for
    assert elapsed <= limit + 4 * JITTER, elapsed


SWEEP = """
[sweep]
cell = "reconstruct"
seeds = 40
[grid]
activation = ["relu+tanh"]
p_mult = [1.0, 2.0]
[fixed]
d = 20
n = 10
max_steps = 400
"""


def test_a_sweep_keeps_its_finished_cells_and_resumes(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(SWEEP)
    out = tmp_path / "out"
    limit = 3.0
    start = time.perf_counter()
    code = main(["sweep", "run", str(path), "--out", str(out), "--workers", "2",
                 "--time-limit", str(limit), "--json"])
    elapsed = time.perf_counter() - start
    captured = capsys.readouterr()
    assert code == 0, captured.err
    run = json.loads(captured.out)["run"]
    assert run["stop_reason"] == "time_limit" and run["computed"] < run["planned"] == 80
    assert elapsed <= limit + 4 * JITTER, elapsed  # + the report of the stored cells
    from conftest import stored_rows

    assert stored_rows(out / "sweep.sqlite") == run["computed"]
    code = main(["sweep", "run", str(path), "--out", str(out), "--workers", "2", "--resume",
                 "--time-limit", "1", "--json"])
    again = json.loads(capsys.readouterr().out)["run"]
    assert code == 0 and again["already_done"] == run["computed"]


def test_the_kernel_claim_stops_without_a_verdict_on_part_of_its_widths(tmp_path):
    from rftheory.claims import claim_module, run_claim

    claim = claim_module("kernel_concentration")
    start = time.perf_counter()
    # widths 1000..128 000, 50 draws each: ~10 s on free cores, far more than the limit
    widths = tuple(1000 * 2**k for k in range(8))
    result = run_claim("kernel_concentration", config=claim.QUICK.replace(n=20, d=50, p=widths,
                                                                          reps=50),
                       out_dir=tmp_path, deadline=Deadline.after(1.5), figures=False)
    elapsed = time.perf_counter() - start
    assert result["stop_reason"] == "time_limit" and result["tasks_not_run"]
    assert not result["verdict"]["supported"]
    assert (tmp_path / "kernel_concentration.partial.json").exists()
    assert elapsed < 1.5 + 2 * _one_draw_seconds(50, 20, widths[-1]) + JITTER
