"""What a user reads (issue #11): the table shows what the JSON says, runs that do not mean what
they seem say so, and every JSON result is strict JSON that says what produced it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rftheory.cli import main
from rftheory.output import print_json, to_jsonable


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


KERNEL = ["kernel", "relu", "--d", "10", "--n", "20", "--p", "100,400"]


def test_kernel_table_shows_the_verdicts_of_the_json(capsys):
    code, out, _ = run(capsys, *KERNEL, "--json")
    verdict = json.loads(out)["verdict"]
    code, table, _ = run(capsys, *KERNEL)
    assert code == 0
    marks = {True: "ok", False: "FAIL", None: "n/a"}
    for key in ("slope_ok", "lambda_min_ok", "hermite_bound_ok", "all_ok"):
        line = next(l for l in table.splitlines() if l.startswith(f"verdict {key}:"))
        assert line.split()[2] == marks[verdict[key]]
    # p ≤ 4n is far from concentrated: λ_min of ΦΦᵀ/p is not within 5 % of λ_min(K) yet
    assert verdict["lambda_min_ok"] is False and verdict["all_ok"] is False


def test_reconstruct_warns_when_the_labels_are_not_fit(capsys):
    # n = 10 points, p = 6 features: Φθ = Y cannot be solved (reconstructing n̂ = 2 candidates)
    argv = ["reconstruct", "--d", "3", "--n", "10", "--n-hat", "2", "--p", "6",
            "--max-steps", "20", "--no-progress"]
    code, out, _ = run(capsys, *argv)
    warnings = [l for l in out.splitlines() if l.startswith("warning: ")]
    assert code == 0 and any("labels are not fit" in w and "p = 6 < n = 10" in w
                             for w in warnings)
    code, out, _ = run(capsys, *argv, "--json")
    result = json.loads(out)
    assert result["train_residual"] > 1e-6
    assert any("labels are not fit" in w for w in result["warnings"])


def test_reconstruct_warns_when_the_gram_matrix_is_rank_deficient(capsys):
    # φ(z) = z²: the features φ(vᵀx) are quadratic forms in x, which span d(d+1)/2
    # dimensions: d = 3 gives 6, so ΦΦᵀ of n = 10 points has rank 6 although p = 100 ≥ n
    code, out, _ = run(capsys, "reconstruct", "--activation", "z**2", "--d", "3", "--n", "10",
                       "--p", "100", "--max-steps", "5", "--no-progress", "--json")
    result = json.loads(out)
    assert code == 0 and result["train_rank_deficient"] is True
    assert any("labels are not fit" in w and "numerical rank 6 < n = 10" in w
               for w in result["warnings"])


def test_reconstruct_says_why_a_step_activation_stalls(capsys):
    code, out, _ = run(capsys, "reconstruct", "--activation", "step", "--d", "5", "--n", "3",
                       "--p-mult", "4", "--no-progress")
    assert code == 0
    warning = next(l for l in out.splitlines() if l.startswith("warning: "))
    assert "φ′ = 0 almost everywhere" in warning and "no gradient" in warning


def test_a_good_run_has_no_warning(capsys):
    code, out, _ = run(capsys, "reconstruct", "--d", "4", "--n", "3", "--p", "120",
                       "--no-progress", "--json")
    assert code == 0 and json.loads(out)["warnings"] == []


def test_reconstruct_json_says_what_produced_it(capsys):
    from rftheory import __version__
    from rftheory.features import V_DEFINITION
    from rftheory.reconstruct import reconstruct, step_budget
    import inspect

    code, out, _ = run(capsys, "reconstruct", "--d", "4", "--n", "3", "--p-mult", "10",
                       "--labels", "sign", "--json")
    origin = json.loads(out)["produced_by"]
    assert origin["rftheory"] == __version__ and origin["v_definition"] == V_DEFINITION
    assert origin["command"] == "rftheory reconstruct"
    defaults = inspect.signature(reconstruct).parameters
    params = origin["parameters"]
    assert params["tol"] == defaults["tol"].default
    assert params["max_steps"] == step_budget(4) == 20000   # the budget the run used at d = 4
    assert params["labels"] == "sign" and params["p"] == 120 and params["p_mult"] == 10
    assert json.loads(out)["labels"] == "sign"


@pytest.mark.parametrize("argv", [
    ["activation", "relu", "--order", "3", "--json"],
    ["kernel", "relu", "--d", "4", "--n", "3", "--p", "50", "--reps", "1", "--json"],
])
def test_every_json_result_says_what_produced_it(capsys, argv):
    code, out, _ = run(capsys, *argv)
    origin = json.loads(out)["produced_by"]
    assert code == 0 and origin["command"] == f"rftheory {argv[0]}" and origin["v_definition"]


def test_unknown_numbers_are_null_everywhere(capsys):
    value = {"a": math.nan, "b": [1.0, math.inf, -math.inf], "c": np.array([np.nan, 2.0]),
             "d": np.float64("nan")}
    assert to_jsonable(value) == {"a": None, "b": [1.0, None, None], "c": [None, 2.0], "d": None}
    print_json(value)
    text = capsys.readouterr().out
    assert "nan" not in text.lower() and "infinity" not in text.lower()
    assert json.loads(text)["b"] == [1.0, None, None]
    # the sweep store's canonical form keeps them as floats
    assert math.isnan(to_jsonable(math.nan, finite_only=False))
