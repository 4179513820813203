"""Tests of ``rftheory kernel``: JSON and table output, the figure, and one-line input errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from rftheory.cli import main
from rftheory.data import sphere_points
from rftheory.kernel import closed_form_kernel_matrix

ARGS = ["kernel", "relu", "--d", "10", "--n", "5", "--p", "3200,200,800", "--seed", "2",
        "--reps", "2"]


def test_json_output_is_complete_and_matches_independent_kernel(capsys):
    assert main(ARGS + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["p"] == [200, 800, 3200]  # parsed and sorted
    assert out["n"] == 5 and out["d"] == 10 and out["reps"] == 2
    # λ_min(K) against the arc-cosine closed form on the same data (data seed = --seed):
    # the series with exact diagonal agrees to rounding (1e-15 entrywise, n = 5).
    X = sphere_points(5, 10, seed=2)
    lam = np.linalg.eigvalsh(closed_form_kernel_matrix("relu", X))[0]
    assert out["lambda_min_kernel"] == pytest.approx(lam, abs=1e-12)
    assert out["hermite_bound_k0"] <= out["lambda_min_kernel"]
    assert len(out["op_error_mean"]) == 3 and all(e > 0 for e in out["op_error_mean"])
    assert isinstance(out["slope"], float)


def test_table_output_has_rows_and_slope(capsys):
    assert main(ARGS) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert any(line.split()[:1] == ["3200"] for line in lines)
    assert any(line.startswith("fitted slope") for line in lines)
    assert "Hermite lower bound" in captured.out


def test_plot_writes_png_and_pdf(tmp_path, capsys):
    target = tmp_path / "fig.png"
    assert main(["kernel", "tanh", "--d", "6", "--n", "4", "--p", "100,400", "--reps", "1",
                 "--json", "--plot", str(target)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["figures"]) == sorted([str(tmp_path / "fig.png"), str(tmp_path / "fig.pdf")])
    assert (tmp_path / "fig.png").stat().st_size > 0 and (tmp_path / "fig.pdf").stat().st_size > 0


@pytest.mark.parametrize("bad", [
    ["--d", "0", "--n", "5", "--p", "100"],
    ["--d", "x", "--n", "5", "--p", "100"],
    ["--d", "3", "--n", "-1", "--p", "100"],
    ["--d", "3", "--n", "5", "--p", "100,,400"],
    ["--d", "3", "--n", "5", "--p", "100,0"],
    ["--d", "3", "--n", "5", "--p", "1e3"],
    ["--d", "3", "--n", "5", "--p", "100,100"],
    ["--d", "3", "--n", "5", "--p", "100", "--seed", "-1"],
    ["--d", "3", "--n", "5", "--p", "100", "--reps", "0"],
    ["--d", "3", "--n", "5", "--p", "100", "--plot", "out.txt"],
])
def test_bad_input_exits_2_with_one_line(bad, capsys):
    assert main(["kernel", "relu"] + bad) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rftheory kernel: error:")
    assert captured.out == ""


def test_bad_activation_exits_2_in_a_real_process():
    proc = subprocess.run([sys.executable, "-m", "rftheory.cli", "kernel", "__import__('os')",
                           "--d", "3", "--n", "2", "--p", "10"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("rftheory kernel: error:")
