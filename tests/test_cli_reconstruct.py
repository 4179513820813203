import json
import re
import sys
import types

import numpy as np
import pytest

from rftheory import pipeline
from rftheory.cli import main
from rftheory.data import load_dataset
from rftheory.reconstruct import METHODS


def run_json(capsys, argv):
    assert main(["reconstruct", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("method", [None, *METHODS])
def test_end_to_end_with_the_real_optimiser(capsys, method):
    flag = [] if method is None else ["--method", method]
    out = run_json(capsys, ["--d", "5", "--n", "3", "--p-mult", "4", "--max-steps", "2000", *flag])
    assert out["method"] == (METHODS[0] if method is None else method)
    assert out["passes"] >= out["steps"]  # every iteration streams V at least once
    assert out["p"] == 60 and out["p_over_dn"] == 4 and out["n_hat"] == 3
    # p = 20n ≫ n: labels are interpolated (Gram solve in float64, condition ≲ 1e3).
    assert out["train_residual"] < 1e-10
    # varpro: an exchange's iterations on the grown set count in steps but not in the history.
    exact = out["method"] == "lbfgs"
    assert (out["steps"] == len(out["history"])) if exact else \
        (0 < len(out["history"]) <= out["steps"])
    assert 0.0 <= out["loss"] <= 1.0
    assert out["rho"]["abs"] <= out["rho"]["sign_invariant"] <= out["rho"]["signed"]
    assert np.mean(out["per_sample_rho"]) == pytest.approx(out["rho"]["abs"], rel=1e-12)
    # p = 4dn is past the reconstruction threshold for relu+tanh: the (tiny) training set is
    # recovered. A loss ≤ 1e-10 forces candidates within ~1e-3 of the training points here.
    assert out["converged"]
    assert out["rho"]["abs"] < 1e-3


def fake_optimiser(transform):
    """A stand-in for the pipeline's optimiser that returns transform(X) of the CLI's training data.

    It regenerates X from the documented seeding (load_dataset(data, n, d=d, rng=seed)) — so the test
    checks that the CLI scores the reconstruction against exactly that data.
    """
    calls = {}

    def reconstruct(features, theta, n_hat, *, seed=0, callback=None, **options):
        calls.update(d=features.d, p=features.p, n_hat=n_hat, seed=seed, options=options)
        X = load_dataset(calls["spec"], calls["n"], d=features.d, rng=seed).X
        X_hat = transform(X)
        history = (0.5, 0.1, 1e-3)
        if callback is not None:
            for step, loss in enumerate(history, 1):
                callback(step, loss, X_hat)
        return types.SimpleNamespace(X_hat=X_hat, loss=history[-1], history=history,
                                     steps=len(history), converged=False, stop_reason="budget",
                                     coefficients=None, method=options.get("method", "fake"),
                                     passes=2 * len(history), sweeps=2 * len(history))

    return reconstruct, calls


def test_scores_against_the_training_data_with_a_fake(monkeypatch, capsys):
    perm = np.array([2, 0, 3, 1])
    fake, calls = fake_optimiser(lambda X: -X[perm])
    calls.update(spec="sphere", n=4)
    monkeypatch.setattr(pipeline, "reconstruct", fake)
    out = run_json(capsys, ["--d", "6", "--n", "4", "--p", "50", "--seed", "3",
                            "--max-steps", "7"])
    assert calls["options"]["max_steps"] == 7 and calls["seed"] == 3 and calls["n_hat"] == 4
    # No --method: the pipeline leaves the choice to reconstruct()'s default (never hard-coded).
    assert "method" not in calls["options"] and out["method"] == "fake" and out["passes"] == 6
    # −X permuted: the official and sign-invariant ρ forgive it, the signed one does not.
    assert out["rho"]["abs"] == pytest.approx(0.0, abs=1e-12)
    assert out["rho"]["sign_invariant"] == pytest.approx(0.0, abs=1e-12)
    assert out["rho"]["signed"] > 0.5
    assert out["sign_flips"] == 4 and out["flipped"] == [True] * 4
    assert out["assignment"] == np.argsort(perm).tolist()
    assert out["stop_reason"] == "budget" and out["history"] == [0.5, 0.1, 1e-3]


@pytest.mark.parametrize("method", METHODS)
def test_method_flag_reaches_the_optimiser(monkeypatch, capsys, method):
    fake, calls = fake_optimiser(lambda X: X)
    calls.update(spec="sphere", n=3)
    monkeypatch.setattr(pipeline, "reconstruct", fake)
    out = run_json(capsys, ["--d", "4", "--n", "3", "--p", "40", "--method", method])
    assert calls["options"]["method"] == method and out["method"] == method
    assert main(["reconstruct", "--d", "4", "--n", "3", "--p", "40", "--method", method,
                 "--no-progress"]) == 0
    table = capsys.readouterr().out
    assert re.search(rf"^\s*method\s+{method}$", table, re.MULTILINE)


def test_progress_callback_and_plots(monkeypatch, tmp_path, capsys):
    fake, calls = fake_optimiser(lambda X: X[::-1])
    calls.update(spec="digits", n=3)
    monkeypatch.setattr(pipeline, "reconstruct", fake)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the bar is drawn on terminals only
    assert main(["reconstruct", "--activation", "tanh", "--data", "digits", "--n", "3",
                 "--p-mult", "2"]) == 0
    captured = capsys.readouterr()
    assert "reconstruct" in captured.err and "ρ=0.000" in captured.err  # the tqdm bar, with ρ
    table = dict(line.strip().rsplit(None, 1) for line in captured.out.splitlines()[2:])
    assert table["p"] == str(2 * 64 * 3)  # p = 2·d·n with d = 64 for digits
    assert table["ρ signed"] == "0"  # the fake returns the training set reversed
    assert main(["reconstruct", "--data", "digits", "--n", "3", "--p", "400",
                 "--plot", str(tmp_path / "img.png")]) == 0
    assert (tmp_path / "img.png").stat().st_size > 0 and (tmp_path / "img.pdf").stat().st_size > 0
    table = capsys.readouterr().out
    assert "ρ official" in table and f"wrote {tmp_path / 'img.pdf'}" in table
    calls.update(spec="sphere")
    assert main(["reconstruct", "--d", "4", "--n", "3", "--p", "40", "--json",
                 "--plot", str(tmp_path / "curve")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["figures"] == [str(tmp_path / "curve.png"), str(tmp_path / "curve.pdf")]
    assert (tmp_path / "curve.pdf").stat().st_size > 0


@pytest.mark.parametrize("argv, message", [
    (["--d", "4", "--n", "0", "--p", "40"], "--n must be >= 1"),
    (["--d", "4", "--n", "3", "--p", "3"], "must exceed n_hat"),
    (["--d", "4", "--n", "3", "--p", "10", "--n-hat", "12"], "must exceed n_hat"),
    (["--d", "4", "--n", "3", "--p-mult", "-1"], "--p-mult must be a positive"),
    (["--n", "3", "--p", "40"], "needs the dimension"),
    (["--data", "digits", "--d", "10", "--n", "3", "--p", "40"], "d = 64"),
    (["--data", "mnist", "--d", "4", "--n", "3", "--p", "40"], "unknown data set"),
    (["--data", "cifar10:/no/such/dir", "--n", "3", "--p", "40"], "does not exist"),
    (["--d", "4", "--n", "3", "--p", "40", "--plot", "fig.txt"], ".png or .pdf"),
    (["--d", "4", "--n", "3", "--p", "40", "--plot", "/no/such/dir/fig.png"], "does not exist"),
    (["--d", "4", "--n", "3", "--p", "40", "--activation", "__import__('os')"], ""),
    (["--d", "4", "--n", "3", "--p", "40", "--seed", "-2"], "--seed must be >= 0"),
    (["--d", "4", "--n", "3", "--p", "40", "--method", "adam"],
     "--method must be one of varpro, lbfgs, got 'adam'"),
    (["--d", "4", "--n", "3", "--p", "40", "--method", "LBFGS"], "--method must be one of"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, message):
    assert main(["reconstruct", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rftheory reconstruct: error:")
    assert message in err


def test_gpu_request_without_cuda_exits_2(capsys):
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            pytest.skip("a CUDA device is present")
    except Exception:  # noqa: BLE001 - no CuPy or no driver: the case under test
        pass
    assert main(["reconstruct", "--d", "4", "--n", "3", "--p", "40", "--device", "gpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gpu" in err


def test_method_choices_are_the_optimisers():
    # The parser repeats rftheory.reconstruct.METHODS so that it imports no optimiser (or sympy).
    from rftheory.commands import reconstruct as command
    from rftheory.reconstruct import METHODS

    assert command.METHODS == METHODS
