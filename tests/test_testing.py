"""Tests of rftheory.testing: every assertion passing, and failing with a message that says why."""

from __future__ import annotations

import doctest
import math

import pytest
import sympy as sp

import rftheory.testing as testing
from rftheory.errors import RFTheoryError
from rftheory.testing import (TOLERANCES, TheoryAssertionError, assert_hermite_coefficients,
                              tolerance,
                              assert_kernel_concentrates, assert_reconstruction_fails,
                              assert_reconstruction_succeeds, assert_verdict)

RELU = [1 / math.sqrt(2 * math.pi), 0.5, 1 / (2 * math.sqrt(math.pi)), 0.0,
        -1 / math.sqrt(48 * math.pi)]  # μ_4 = E[relu(g)He_4(g)]/√24 = −1/(√(2π)√24)


def test_failures_are_assertion_errors():
    assert issubclass(TheoryAssertionError, AssertionError)
    assert set(TOLERANCES) == {"float64", "float32", "mpmath", "statistical"}
    assert all(t.reason and t.value >= 0 for group in TOLERANCES.values() for t in group.values())


def test_one_tolerance_table_per_precision():
    # float32 tolerances are looser than float64's, the same quantities in both
    assert TOLERANCES["float32"].keys() == TOLERANCES["float64"].keys()
    for name in TOLERANCES["float64"]:
        assert tolerance(name, "float32") > tolerance(name, "float64")
    with pytest.raises(RFTheoryError, match="no tolerance 'rho' for 'float64'"):
        tolerance("rho", "float64")


# -- Hermite coefficients ----------------------------------------------------------------------

def test_hermite_coefficients_pass_for_every_method():
    assert_hermite_coefficients("relu", RELU)                              # fast
    assert_hermite_coefficients("relu", RELU, method="exact")
    exact = {0: 1 / sp.sqrt(2 * sp.pi), 2: 1 / (2 * sp.sqrt(sp.pi))}
    assert_hermite_coefficients("relu", exact, method="mpmath", dps=40)    # to 35 digits
    assert_hermite_coefficients("relu", {4: None, 1: "0.5"})               # None skips an order


def test_hermite_coefficients_failure_names_the_order_and_the_numbers():
    wrong = list(RELU)
    wrong[2] += 1e-9  # far below what a plot shows, far above the fast tolerance
    with pytest.raises(TheoryAssertionError) as exc:
        assert_hermite_coefficients("relu", wrong)
    message = str(exc.value)
    assert message.startswith("Hermite coefficients of relu (fast, orders 0..4) differ")
    lines = [line.split() for line in message.splitlines()]
    assert any(row[:1] == ["2"] for row in lines)            # the order that is off ...
    assert not any(row[:1] in (["0"], ["1"], ["3"]) for row in lines)  # ... and only it
    assert "1.00e-09" in message and "atol = 1e-13, rtol = 1e-12" in message


def test_hermite_coefficients_tolerance_can_be_widened():
    wrong = list(RELU)
    wrong[2] += 1e-9
    assert_hermite_coefficients("relu", wrong, atol=1e-8)
    with pytest.raises(TheoryAssertionError, match="computed"):
        assert_hermite_coefficients("relu", {12: 0.0}, method="mpmath", dps=30)  # μ_12 ≠ 0


def test_float32_expected_values_get_float32_tolerances():
    import numpy as np

    relu32 = np.array(RELU, dtype=np.float32)  # 1e-8 off in float64 terms
    assert_hermite_coefficients("relu", relu32)  # dtype inferred from the array
    assert_hermite_coefficients("relu", relu32.tolist(), dtype="float32")
    with pytest.raises(TheoryAssertionError, match=r"\(float64 expected values\)"):
        assert_hermite_coefficients("relu", relu32, dtype="float64")
    off = relu32.copy()
    off[1] += np.float32(1e-4)  # a real error stays an error in float32
    with pytest.raises(TheoryAssertionError, match=r"atol = 1e-06, rtol = 1e-05 \(float32"):
        assert_hermite_coefficients("relu", off)
    with pytest.raises(RFTheoryError, match="dtype must be"):
        assert_hermite_coefficients("relu", RELU, dtype="float16")


def test_hermite_coefficients_bad_arguments():
    for bad in ("0.5", [], {-1: 0.0}, {1.5: 0.0}):
        with pytest.raises(RFTheoryError):
            assert_hermite_coefficients("relu", bad)
    with pytest.raises(RFTheoryError):
        assert_hermite_coefficients("relu", [0.0], atol=-1)


# -- verdicts -----------------------------------------------------------------------------------

def test_verdicts_pass():
    assert assert_verdict("relu+tanh", "lipschitz").numbers["constant"] == pytest.approx(2.0)
    assert_verdict("relu", "sign", holds=False)   # the paper's criterion fails for ReLU
    assert_verdict("tanh", "parity")              # odd
    assert_verdict("z", "nonlinear", holds=False)


def test_verdict_failure_says_what_was_found_and_why():
    with pytest.raises(TheoryAssertionError) as exc:
        assert_verdict("step", "lipschitz")
    message = str(exc.value)
    assert message.startswith("verdict 'lipschitz' of step (φ = Heaviside(z)) does not hold, "
                              "expected it to hold")
    assert "jumps by 1 at z = 0" in message
    assert "[symbolic]" in message or "[numeric]" in message  # numeric if sympy ran out of time
    with pytest.raises(TheoryAssertionError, match="holds, expected it not to hold"):
        assert_verdict("relu+tanh", "sign_identifiability", holds=False)


def test_verdict_bad_arguments():
    with pytest.raises(RFTheoryError, match="unknown verdict"):
        assert_verdict("relu", "smooth")
    with pytest.raises(RFTheoryError, match="holds"):
        assert_verdict("relu", "lipschitz", holds="yes")


# -- kernel concentration -----------------------------------------------------------------------

def test_kernel_concentrates_at_minus_one_half():
    result = assert_kernel_concentrates("relu+tanh")
    assert abs(result["slope"] + 0.5) <= tolerance("kernel_slope", "statistical")


def test_kernel_concentration_failure_shows_the_slope_and_the_errors():
    with pytest.raises(TheoryAssertionError) as exc:
        assert_kernel_concentrates("relu+tanh", slope=-1.0)  # a wrong rate
    message = str(exc.value)
    assert "does not decay as p^-1" in message and "allowed |slope − -1| ≤ 0.1" in message
    assert "p = 128:" in message and "s.e. over 4 draws of V" in message


# -- reconstruction ------------------------------------------------------------------------------

def test_reconstruction_succeeds_above_and_fails_below_the_count():
    good = assert_reconstruction_succeeds("relu+tanh", d=3, n=3, p_over_dn=10, seeds=(0, 1))
    assert [c["seed"] for c in good] == [0, 1]
    bad = assert_reconstruction_fails("relu+tanh", d=3, n=3, p_over_dn=0.5, seeds=2)
    assert all(c["rho_abs"] >= 0.1 for c in bad)


def test_reconstruction_success_failure_lists_every_seed():
    with pytest.raises(TheoryAssertionError) as exc:
        assert_reconstruction_succeeds("relu+tanh", d=3, n=3, p_over_dn=0.5, seeds=(0, 1))
    message = str(exc.value)
    assert message.startswith("reconstruction of relu+tanh at p/(dn) = 0.5 (d = 3, n = 3, p = 4) "
                              "succeeded for 0 of 2 seeds, expected at least 2")
    assert "ρ_abs < 0.1" in message
    rows = [line.split() for line in message.splitlines()]
    assert [r[0] for r in rows if r and r[0] in ("0", "1")] == ["0", "1"]  # one row per seed


def test_reconstruction_failure_assertion_fails_when_it_succeeds():
    with pytest.raises(TheoryAssertionError, match="succeeded for 1 of 1 seeds, expected at most 0"):
        assert_reconstruction_fails("relu+tanh", d=3, n=3, p_over_dn=10, seeds=1)


def test_an_attack_that_does_nothing_cannot_pass_the_failure_assertion(monkeypatch):
    # A do-nothing attack: the candidates stay at their random start, the loss far above the
    # tolerance. It "fails to reconstruct", but that is no second zero of the loss, so the
    # default kind="spurious" must reject it; kind="unfinished"/"any" accept it as what it is.
    import rftheory.cells as cells

    def idle(**kwargs):
        return {"seed": kwargs["seed"], "rho_abs": 0.6, "rho_signed": 1.1,
                "rho_sign_invariant": 0.9, "final_loss": 0.4, "steps": 0, "converged": False,
                "stop_reason": "budget"}

    monkeypatch.setattr(cells, "reconstruction_cell", idle)
    with pytest.raises(TheoryAssertionError, match="not a second zero of the loss"):
        assert_reconstruction_fails("relu+tanh", d=3, n=3, p_over_dn=0.5, seeds=2)
    assert len(assert_reconstruction_fails("relu+tanh", d=3, n=3, p_over_dn=0.5, seeds=2,
                                           kind="unfinished")) == 2
    assert_reconstruction_fails("relu+tanh", d=3, n=3, p_over_dn=0.5, seeds=2, kind="any")
    with pytest.raises(RFTheoryError, match="kind"):
        assert_reconstruction_fails("relu+tanh", d=3, n=3, p_over_dn=0.5, kind="some")


def test_a_budget_limited_run_is_an_unfinished_descent():
    # The real optimiser stopped after 3 steps: the loss is far above the tolerance, so the
    # failure is classified unfinished and the default assertion refuses it.
    with pytest.raises(TheoryAssertionError, match="not a second zero") as exc:
        assert_reconstruction_fails("relu+tanh", d=3, n=3, p_over_dn=0.5, seeds=1, max_steps=3)
    assert "unfinished" in str(exc.value)
    cells = assert_reconstruction_fails("relu+tanh", d=3, n=3, p_over_dn=0.5, seeds=1,
                                        max_steps=3, kind="unfinished")
    assert cells[0]["final_loss"] > 1e-10 and not cells[0]["converged"]


def test_reconstruction_variant_and_min_successes():
    # ReLU with the sign-invariant ρ; one success of two is enough when asked for one
    assert_reconstruction_succeeds("relu", d=3, n=3, p_over_dn=10, seeds=2,
                                   variant="sign_invariant", min_successes=1)


def test_reconstruction_bad_arguments():
    for kwargs in ({"seeds": 0}, {"seeds": [1, 1]}, {"seeds": [-1]}, {"variant": "l2"},
                   {"rho": -0.1}, {"min_successes": 5}, {"p_over_dn": 0.01}):
        args = {"d": 3, "n": 3, "p_over_dn": 10, "seeds": 1} | kwargs
        with pytest.raises(RFTheoryError):
            assert_reconstruction_succeeds("relu+tanh", **args)


def test_same_seed_same_numbers():
    a = assert_reconstruction_succeeds("tanh", d=3, n=3, p_over_dn=10, seeds=[4])
    b = assert_reconstruction_succeeds("tanh", d=3, n=3, p_over_dn=10, seeds=[4])
    assert a[0]["rho_abs"] == b[0]["rho_abs"] and a[0]["steps"] == b[0]["steps"]


def test_doctests():
    assert doctest.testmod(testing, optionflags=doctest.ELLIPSIS).failed == 0
