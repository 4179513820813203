"""Tests of the claim baselines (rftheory.baseline) and ``rftheory verify --baseline``.

The stored baseline ``tests/baselines/verify_quick.json`` holds the key numbers of ``rftheory
verify all --quick --seed 0``; the slow test reruns that and compares. The default suite checks
the mechanism: paths, tolerances, a perturbed number caught, warnings, the command's exit codes.
"""

from __future__ import annotations

import copy
import dataclasses
import doctest
import json
from pathlib import Path

import pytest

import rftheory.baseline as baseline
from rftheory.baseline import (EXIT_MOVED, FORMAT, Key, check_baseline, check_ready,
                               claim_keys, compare_numbers, key_numbers, read_baseline,
                               record_claim, update_baseline)
from rftheory.claims import ALL, CLAIMS, claim_module, run_claim
from rftheory.cli import main
from rftheory.errors import RFTheoryError

STORED = Path(__file__).parent / "baselines" / "verify_quick.json"

RESULT = {
    "claim": "demo", "quick": True, "seed": 0,
    "curves": [{"activation": "relu", "slope": -0.503}, {"activation": "tanh", "slope": -0.497}],
    "per_grid": [{"d": 4, "n": 8, "p_star": 2.38}, {"d": 8.0, "n": 8, "p_star": float("nan")}],
    "verdict": {"supported": True, "spread": 1.19, "satisfied_by": ["relu", "tanh"]},
}
KEYS = (Key("curves[activation].slope", rtol=1e-6, reason="fixed V"),
        Key("per_grid[d,n].p_star", factor=2.0, reason="one grid step"),
        Key("verdict.*", atol=0.01, reason="the verdict"))


def stored(result=RESULT, keys=KEYS):
    return {k: v.as_json() for k, v in key_numbers(result, keys).items()}


def perturbed(path: str, value):
    out = copy.deepcopy(RESULT)
    node = out
    *head, last = path
    for part in head:
        node = node[part]
    node[last] = value
    return out


# -- paths and tolerances -------------------------------------------------------------------------

def test_paths_name_every_number():
    names = sorted(key_numbers(RESULT, KEYS))
    assert names == ["curves[activation=relu].slope", "curves[activation=tanh].slope",
                     "per_grid[d=4,n=8].p_star", "per_grid[d=8,n=8].p_star",
                     "verdict.satisfied_by", "verdict.spread", "verdict.supported"]
    numbers = key_numbers(RESULT, KEYS)
    assert numbers["verdict.supported"].tolerance == "exact"       # booleans always exactly
    assert numbers["verdict.spread"].tolerance == {"atol": 0.01, "rtol": 0.0}
    assert numbers["per_grid[d=4,n=8].p_star"].tolerance == {"factor": 2.0}
    assert key_numbers({"a": [5, 6]}, [Key("a[*]")]) == {
        "a[0]": baseline.KeyNumber("a[0]", 5, "exact", ""),
        "a[1]": baseline.KeyNumber("a[1]", 6, "exact", "")}


def test_bad_keys_and_missing_paths():
    for bad in ("", "a..b", "a[b", "a]"):
        with pytest.raises(RFTheoryError):
            Key(bad)
    with pytest.raises(RFTheoryError):
        Key("a", factor=1.0)
    with pytest.raises(RFTheoryError):
        Key("a", atol=-1)
    with pytest.raises(RFTheoryError, match="'verdict.nope'.*not in the result"):
        key_numbers(RESULT, [Key("verdict.nope")])


def test_unchanged_and_within_tolerance_pass():
    assert compare_numbers(stored(), RESULT, KEYS) == []
    inside = perturbed(["curves", 0, "slope"], -0.503 * (1 + 5e-7))
    inside = copy.deepcopy(inside)
    inside["per_grid"][0]["p_star"] = 2.38 * 1.9
    inside["verdict"]["spread"] = 1.195
    assert compare_numbers(stored(), inside, KEYS) == []


@pytest.mark.parametrize("path, value, name", [
    (["curves", 1, "slope"], -0.497 * (1 + 2e-6), "curves[activation=tanh].slope"),
    (["per_grid", 0, "p_star"], 2.38 * 2.1, "per_grid[d=4,n=8].p_star"),
    (["per_grid", 1, "p_star"], 3.0, "per_grid[d=8,n=8].p_star"),         # NaN became a number
    (["verdict", "supported"], False, "verdict.supported"),
    (["verdict", "satisfied_by"], ["relu"], "verdict.satisfied_by"),
    (["verdict", "spread"], 1.21, "verdict.spread"),
])
def test_a_perturbed_number_is_caught_and_named(path, value, name):
    moved = compare_numbers(stored(), perturbed(path, value), KEYS, claim="demo")
    assert [d.name for d in moved] == [name]
    line = moved[0].describe()
    assert line.startswith(f"demo: {name}: moved beyond its tolerance: baseline ")
    assert "this run" in line and "tolerance" in line and " — " in line  # with its reason


def test_numbers_that_appear_or_disappear_are_differences():
    fewer = copy.deepcopy(RESULT)
    fewer["curves"] = fewer["curves"][:1]
    moved = compare_numbers(stored(), fewer, KEYS)
    assert [(d.name, d.problem) for d in moved] == [("curves[activation=tanh].slope",
                                                    "missing from this run")]
    more = copy.deepcopy(RESULT)
    more["curves"].append({"activation": "erf", "slope": -0.5})
    moved = compare_numbers(stored(), more, KEYS)
    assert [(d.name, d.problem) for d in moved] == [("curves[activation=erf].slope",
                                                    "not in the baseline")]
    broken = {"claim": "demo"}
    assert "not in the result" in compare_numbers(stored(), broken, KEYS)[0].problem


def test_tolerances_are_read_from_the_file():
    entries = stored()
    entries["curves[activation=tanh].slope"]["tolerance"] = {"atol": 0.1, "rtol": 0.0}
    assert compare_numbers(entries, perturbed(["curves", 1, "slope"], -0.55), KEYS) == []


# -- the claims' declarations and the stored baseline ----------------------------------------------

@pytest.mark.parametrize("name", CLAIMS)
def test_every_claim_declares_key_numbers_with_reasons(name):
    keys = claim_keys(claim_module(name))
    assert keys and all(isinstance(k, Key) and k.reason for k in keys)


def test_the_key_table_names_only_claims_that_exist():
    assert set(baseline.CLAIM_KEYS) <= set(CLAIMS)


def test_a_module_declaration_takes_precedence():
    class Module:
        CLAIM = "law"
        KEY_NUMBERS = (Key("verdict.supported", reason="mine"),)

    assert claim_keys(Module) == Module.KEY_NUMBERS
    Module.KEY_NUMBERS = ("verdict.supported",)
    with pytest.raises(RFTheoryError, match="KEY_NUMBERS must be"):
        claim_keys(Module)


def test_a_claim_without_declarations_is_compared_on_its_verdict():
    class Module:
        CLAIM = "headline"

    keys = claim_keys(Module)
    assert keys == baseline.DEFAULT_KEYS
    numbers = key_numbers({"verdict": {"supported": True, "ratio": 1.7}}, keys)
    assert set(numbers) == {"verdict.supported", "verdict.ratio"}


def test_stored_baseline_has_every_claim_recorded_by_the_quick_run():
    data = read_baseline(STORED)
    assert data["format"] == FORMAT and sorted(data["claims"]) == sorted(ALL)
    for name, entry in data["claims"].items():
        assert entry["run"] == {"quick": True, "seed": 0}
        assert entry["numbers"] and all(e["reason"] for e in entry["numbers"].values())
        assert entry["recorded"]["environment"]["v_definition"]
    check_ready(STORED, list(ALL), quick=True, seed=0)
    with pytest.raises(RFTheoryError, match="--quick --seed 0; this run is --seed 0"):
        check_ready(STORED, ["law"], quick=False, seed=0)


def test_stored_baseline_tolerances_match_the_declarations():
    """A reviewer changes a tolerance in CLAIM_KEYS and regenerates; the file must follow."""
    data = read_baseline(STORED)
    for name in ALL:
        keys = claim_keys(claim_module(name))
        reasons = {k.reason for k in keys}
        for entry in data["claims"][name]["numbers"].values():
            reason = entry["reason"].removesuffix("; " + baseline._ROUNDING_REASON)
            assert reason in reasons or entry["reason"] == baseline._ROUNDING_REASON


# -- a tiny claim run through the command ----------------------------------------------------------

@pytest.fixture
def tiny_kernel_claim(monkeypatch):
    """kernel_concentration's --quick at a size of a second (the command reads module.QUICK)."""
    module = claim_module("kernel_concentration")
    monkeypatch.setattr(module, "QUICK", module.Config(
        n=5, d=4, p=(32, 64, 128), reps=1, sweep_n=6, sweep_d=(4, 8), activations=("relu", "erf")))
    return module


def test_verify_update_then_check_then_catch_a_perturbed_number(tmp_path, capsys,
                                                                 tiny_kernel_claim):
    file = tmp_path / "base.json"
    args = ["verify", "kernel_concentration", "--quick", "--no-figures", "--out", str(tmp_path)]
    assert main(args + ["--update-baseline", str(file)]) == 0
    assert "baseline: wrote" in capsys.readouterr().out
    data = json.loads(file.read_text())
    assert data["command"] == "rftheory verify kernel_concentration --quick --seed 0"
    assert main(args + ["--baseline", str(file)]) == 0
    assert "all held" in capsys.readouterr().out

    entry = data["claims"]["kernel_concentration"]["numbers"]["curves[activation=erf].slope"]
    entry["value"] *= 1.001  # a deliberately perturbed number
    verdict = data["claims"]["kernel_concentration"]["numbers"]["verdict.supported"]
    verdict["value"] = not verdict["value"]
    file.write_text(json.dumps(data))
    assert main(args + ["--baseline", str(file)]) == EXIT_MOVED == 3
    out = capsys.readouterr().out
    moved = [line for line in out.splitlines() if line.startswith("MOVED ")]
    assert len(moved) == 2
    assert moved[0].startswith("MOVED kernel_concentration: curves[activation=erf].slope: moved")
    assert "rtol 1e-06" in moved[0] and "Philox V" in moved[0]
    assert moved[1].startswith("MOVED kernel_concentration: verdict.supported:")
    assert "2 moved beyond their tolerance" in out


def test_verify_warns_when_the_baseline_was_recorded_elsewhere(tmp_path, capsys,
                                                               tiny_kernel_claim):
    file = tmp_path / "base.json"
    args = ["verify", "kernel_concentration", "--quick", "--no-figures", "--out", str(tmp_path)]
    assert main(args + ["--update-baseline", str(file)]) == 0
    data = json.loads(file.read_text())
    recorded = data["claims"]["kernel_concentration"]["recorded"]
    recorded["environment"]["numpy"] = "1.26.0"
    recorded["environment"]["v_definition"] = "philox4x64-10+box-muller/0"
    recorded["machine"]["blas"] = [{"library": "mkl", "version": "2024", "architecture": None,
                                    "threading": "intel"}]
    file.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(args + ["--baseline", str(file)]) == 0  # warnings alone do not fail
    err = capsys.readouterr().err
    assert "warning: kernel_concentration: version of numpy: baseline '1.26.0'" in err
    assert "v_definition" in err and "machine blas" in err
    assert "last bits" in err and "code that computes" not in err
    recorded["sources"] = {"reconstruct": "0" * 12}  # recorded by other code
    file.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(args + ["--baseline", str(file)]) == 0
    err = capsys.readouterr().err
    assert "source digest of rftheory." in err and "the code that computes" in err


def test_the_machine_record_does_not_depend_on_earlier_imports():
    import subprocess
    import sys

    code = ("import json, rftheory.baseline as b; print(json.dumps(b.machine()['blas']))")
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout
    assert json.loads(fresh) == baseline.machine()["blas"]


def test_verify_baseline_errors_are_bad_input(tmp_path, capsys):
    args = ["verify", "law", "--quick", "--no-figures", "--out", str(tmp_path)]
    assert main(args + ["--baseline", str(tmp_path / "none.json")]) == 2
    assert "does not exist; write one with --update-baseline" in capsys.readouterr().err
    junk = tmp_path / "junk.json"
    junk.write_text("{\"a\": 1}")
    assert main(args + ["--baseline", str(junk)]) == 2
    assert "is not an rftheory baseline" in capsys.readouterr().err
    assert main(args + ["--update-baseline", str(junk)]) == 2  # never overwrites a non-baseline
    assert json.loads(junk.read_text()) == {"a": 1}
    assert main(args + ["--update-baseline", str(tmp_path / "no" / "b.json")]) == 2
    assert "does not exist" in capsys.readouterr().err  # the output-path rule, before any run
    assert main(args + ["--update-baseline", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["verify", "law", "--no-figures", "--out", str(tmp_path),
                 "--baseline", str(STORED)]) == 2  # recorded with --quick
    assert "this run is --seed 0" in capsys.readouterr().err
    capsys.readouterr()
    assert main(args + ["--baseline", str(STORED), "--update-baseline", str(junk)]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_update_merges_and_keeps_other_claims(tmp_path, tiny_kernel_claim):
    file = tmp_path / "b.json"
    result = run_claim("kernel_concentration", quick=True, out_dir=tmp_path, figures=False)
    update_baseline(file, [result])
    data = read_baseline(file)
    data["claims"]["law"] = copy.deepcopy(data["claims"]["kernel_concentration"])
    file.write_text(json.dumps(data))
    update_baseline(file, [result])
    assert sorted(read_baseline(file)["claims"]) == ["kernel_concentration", "law"]
    [comparison] = check_baseline(file, [result])
    update_baseline(file, [result], replace=True)  # `verify all`: no stale entries
    assert sorted(read_baseline(file)["claims"]) == ["kernel_concentration"]
    assert comparison.ok and comparison.checked == len(record_claim(tiny_kernel_claim,
                                                                    result)["numbers"])


def test_doctests():
    assert doctest.testmod(baseline, optionflags=doctest.ELLIPSIS).failed == 0


def test_kernel_concentration_quick_matches_the_stored_baseline(tmp_path, capsys):
    """The cheapest claim (no optimiser, ~10 s) against the stored baseline in the default suite,
    so CI catches a change that moves its numbers; the slow test below checks every claim."""
    status = main(["verify", "kernel_concentration", "--quick", "--no-figures", "--out",
                   str(tmp_path), "--baseline", str(STORED)])
    out = capsys.readouterr().out
    assert status == 0, "\n".join(line for line in out.splitlines()
                                  if line.startswith(("MOVED", "baseline")))
    assert "key numbers checked, all held" in out


@pytest.mark.slow
def test_verify_all_quick_matches_the_stored_baseline(tmp_path, capsys):
    """The package's own regression test: `rftheory verify all --quick` against the stored
    baseline. A change that moves a claim's numbers fails here; regenerate the file with
    `rftheory verify all --quick --no-figures --out /tmp/verify_quick --update-baseline
    tests/baselines/verify_quick.json` (README, "Keep a baseline of the claims in CI"; ~12 min
    on 2 cores) and commit it (a reviewed change)."""
    status = main(["verify", "all", "--quick", "--no-figures", "--out", str(tmp_path),
                   "--baseline", str(STORED)])
    out = capsys.readouterr().out
    assert status == 0, "\n".join(line for line in out.splitlines()
                                  if line.startswith(("MOVED", "baseline")))


def test_constraints_pin_every_numerical_dependency():
    """constraints.txt (README, "Determinism") pins, with ==, every package the numbers depend on."""
    import re

    text = (Path(__file__).parent.parent / "constraints.txt").read_text()
    pins = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            m = re.fullmatch(r"([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+-]+)", line.strip())
            assert m, f"not an exact pin: {line!r}"
            pins[m[1].lower().replace("_", "-")] = m[2]
    for name in ("numpy", "scipy", "sympy", "mpmath", "matplotlib", "threadpoolctl", "pytest"):
        assert name in pins, f"constraints.txt does not pin {name}"
    assert "rftheory" not in pins  # the package itself is installed from the checkout


def test_nan_and_inf_are_stored_and_told_apart():
    result = {"verdict": {"star": float("nan"), "top": float("inf"), "low": -float("inf")}}
    keys = (Key("verdict.*", rtol=0.1),)
    entries = {k: v.as_json() for k, v in key_numbers(result, keys).items()}
    assert [entries[k]["value"] for k in ("verdict.star", "verdict.top", "verdict.low")] == \
        ["nan", "inf", "-inf"]
    json.dumps(entries, allow_nan=False)  # strict JSON
    assert compare_numbers(entries, result, keys) == []
    swapped = {"verdict": {"star": float("inf"), "top": float("nan"), "low": None}}
    assert [d.name for d in compare_numbers(entries, swapped, keys)] == [
        "verdict.low", "verdict.star", "verdict.top"]


# -- baselines that travel: every float in its last bits, a count or a verdict moved --------------

def _nudged(value, k):
    """Every float of a value moved by k units in its last place (as another CPU's rounding)."""
    import math

    if isinstance(value, list):
        return [_nudged(v, k) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        for _ in range(abs(k)):
            value = math.nextafter(value, math.inf if k > 0 else -math.inf)
    return value


def _as_numbers(entries, change=lambda name, value: value):
    return {name: baseline.KeyNumber(name, change(name, baseline._restore(e["value"])),
                                     e["tolerance"], e["reason"])
            for name, e in entries.items()}


def test_stored_baseline_holds_with_every_float_moved_in_its_last_bits():
    data = read_baseline(STORED)
    floats = 0
    for claim, entry in data["claims"].items():
        for k in (-4, -1, 1, 4):
            moved = baseline.compare_entries(entry["numbers"], _as_numbers(
                entry["numbers"], lambda name, v: _nudged(v, k)), claim=claim)
            assert moved == [], [m.describe() for m in moved]
        floats += sum(baseline._has_floats(baseline._restore(e["value"]))
                      for e in entry["numbers"].values())
        # every float is compared within a tolerance, never exactly
        for name, e in entry["numbers"].items():
            if baseline._has_floats(baseline._restore(e["value"])):
                assert e["tolerance"] != "exact", (claim, name)
    assert floats > 50


def test_stored_baseline_catches_a_moved_count_or_verdict():
    data = read_baseline(STORED)
    entries = data["claims"]["theorem1"]["numbers"]
    flipped = _as_numbers(entries, lambda n, v: (not v) if n == "verdict.supported" else v)
    assert [d.name for d in baseline.compare_entries(entries, flipped)] == ["verdict.supported"]
    # a count compared exactly: one more case matching
    entries = data["claims"]["theorem2"]["numbers"]
    name = "verdict.general_n.pair_cases"
    assert entries[name]["tolerance"] == "exact" and entries[name]["type"] == "int"
    more = _as_numbers(entries, lambda n, v: v + 1 if n == name else v)
    assert [d.name for d in baseline.compare_entries(entries, more)] == [name]


def test_a_nested_verdict_is_compared_leaf_by_leaf():
    # theorem2's verdict.general_n: a dict of booleans, counts and floats. Its floats move on
    # another CPU (3.2579e-06 on AMD, 3.2576e-06 on Xeon), its booleans must not.
    result = {"verdict": {"general_n": {"ok": True, "cases": 10, "smallest": {"value": 3.2579e-06,
                                                                             "n": 3}}}}
    keys = (Key("verdict.*", reason="verdict"),
            Key("verdict.general_n.smallest.value", rtol=0.05, reason="an optimiser's minimum"))
    numbers = key_numbers(result, keys)
    assert sorted(numbers) == ["verdict.general_n.cases", "verdict.general_n.ok",
                               "verdict.general_n.smallest.n", "verdict.general_n.smallest.value"]
    assert numbers["verdict.general_n.ok"].tolerance == "exact"
    assert numbers["verdict.general_n.cases"].tolerance == "exact"
    assert numbers["verdict.general_n.smallest.value"].tolerance == {"atol": 0.0, "rtol": 0.05}
    entries = {k: v.as_json() for k, v in numbers.items()}
    other = copy.deepcopy(result)
    other["verdict"]["general_n"]["smallest"]["value"] = 3.2576009e-06
    assert compare_numbers(entries, other, keys) == []
    other["verdict"]["general_n"]["ok"] = False
    assert [d.name for d in compare_numbers(entries, other, keys)] == ["verdict.general_n.ok"]
    # a float under a key without a tolerance gets the rounding one, not "exact"
    lone = key_numbers({"verdict": {"x": 0.1}}, (Key("verdict.*", reason="v"),))["verdict.x"]
    assert lone.tolerance == {"atol": 0.0, "rtol": baseline.ROUNDING_RTOL}
    assert "rounding" in lone.reason


def test_verify_baseline_prints_exact_and_within_tolerance_keys(tmp_path, capsys,
                                                                tiny_kernel_claim):
    file = tmp_path / "base.json"
    args = ["verify", "kernel_concentration", "--quick", "--no-figures", "--out", str(tmp_path)]
    assert main(args + ["--update-baseline", str(file)]) == 0
    data = json.loads(file.read_text())
    for entry in data["claims"]["kernel_concentration"]["numbers"].values():
        entry["value"] = _nudged(entry["value"], 3)  # another CPU's last bits
    file.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(args + ["--baseline", str(file)]) == 0
    out = capsys.readouterr().out
    exact = next(line for line in out.splitlines() if "compared exactly:" in line)
    within = next(line for line in out.splitlines() if "within a tolerance:" in line)
    assert "verdict.supported" in exact and "].slope" not in exact
    assert "curves[activation=erf].slope" in within and "verdict.supported" not in within
    counts = data["claims"]["kernel_concentration"]["numbers"]
    counts["verdict.supported"]["value"] = not counts["verdict.supported"]["value"]
    file.write_text(json.dumps(data))
    assert main(args + ["--baseline", str(file)]) == EXIT_MOVED


# -- the schema, checked before any run -----------------------------------------------------------

def _small_baseline():
    return {"format": FORMAT, "claims": {"sign": {
        "run": {"quick": True, "seed": 0},
        "recorded": {"environment": {"numpy": "2.4"}, "machine": {"cpus": 2}, "sources": {}},
        "numbers": {
            "verdict.supported": {"value": False, "type": "bool", "tolerance": "exact", "reason": ""},
            "a.successes": {"value": 3, "type": "int", "tolerance": {"atol": 1, "rtol": 0.0},
                            "reason": "one seed"},
            "a.loss": {"value": 0.66, "type": "float", "tolerance": {"atol": 0.0, "rtol": 1e-6},
                       "reason": ""},
            "a.star": {"value": "nan", "type": "float", "tolerance": {"factor": 2.5}, "reason": ""},
            "a.flips": {"value": [0.5, "inf"], "type": "list", "tolerance": {"atol": 0.1,
                                                                            "rtol": 0.0},
                        "reason": ""},
        }}}}


def _set(data, path, value):
    node = data
    for part in path[:-1]:
        node = node[part]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


N = ["claims", "sign", "numbers"]


@pytest.mark.parametrize("path, value, fragment", [
    (N + ["a.loss"], 5, "claims.sign.numbers.a.loss must be an entry"),
    (N + ["a.loss", "value"], KeyError, "a.loss.value must be present"),
    (N + ["a.loss", "tolerance"], KeyError, "a.loss.tolerance must be present (no tolerance is "
                                            "never taken as exact)"),
    (N + ["a.loss", "type"], KeyError, "a.loss.type must be present"),
    (N + ["a.loss", "tolerance"], [1e-6], "a.loss.tolerance must be \"exact\", {\"atol\""),
    (N + ["a.loss", "tolerance"], "loose", "a.loss.tolerance must be \"exact\""),
    (N + ["a.loss", "tolerance"], {"atol": "0.1", "rtol": 0}, "a.loss.tolerance.atol must be a "
                                                              "finite number >= 0"),
    (N + ["a.loss", "tolerance"], {"atol": -1, "rtol": 0}, "tolerance.atol must be a finite "
                                                          "number >= 0"),
    (N + ["a.loss", "tolerance"], {"factor": 1.0}, "tolerance.factor must be a finite number > 1"),
    (N + ["a.loss", "tolerance"], {"atol": 0.1, "factor": 2}, "a.loss.tolerance must be"),
    (N + ["a.loss", "value"], "0.66", "a.loss.value must be a finite number or \"nan\""),
    (N + ["a.loss", "value"], {"v": 0.66}, "a.loss.value must be a finite number"),
    (N + ["a.loss", "value"], None, "a.loss.value must be a finite number"),
    (N + ["a.loss", "value"], float("nan"), "a.loss.value must be a finite number"),
    (N + ["a.loss", "value"], float("inf"), "a.loss.value must be a finite number"),
    (N + ["verdict.supported", "value"], 1, "verdict.supported.value must be true or false"),
    (N + ["a.successes", "value"], 3.5, "a.successes.value must be an integer"),
    (N + ["a.successes", "value"], True, "a.successes.value must be an integer"),
    (N + ["a.flips", "value"], [0.5, float("nan")], "a.flips.value[1] must be a finite number"),
    (N + ["a.flips", "value"], [0.5, {"x": 1}], "a.flips.value[1] must be a number, a string"),
    (N + ["a.flips", "value"], 0.5, "a.flips.value must be a list"),
    (N + ["a.loss", "type"], "decimal", "a.loss.type must be one of bool, int"),
    (N + ["verdict.supported", "tolerance"], {"atol": 1, "rtol": 0},
     "verdict.supported.tolerance must be \"exact\" (its type is bool)"),
    (N + ["a.loss", "reason"], 7, "a.loss.reason must be a string"),
    (["claims", "sign", "recorded"], [1, 2], "claims.sign.recorded must be an object"),
    (["claims", "sign", "recorded", "machine"], "x", "claims.sign.recorded.machine must be an object"),
    (["claims", "sign", "run", "seed"], "0", "claims.sign.run.seed must be a non-negative integer, "
                                            "got '0'"),
    (["claims", "sign", "run", "seed"], -1, "claims.sign.run.seed must be a non-negative integer"),
    (["claims", "sign", "run", "quick"], "yes", "claims.sign.run.quick must be true or false"),
    (["claims", "sign", "numbers"], [], "claims.sign.numbers must be an object"),
    (["claims", "sign"], 5, "claims.sign must be an entry"),
])
def test_a_wrongly_typed_baseline_is_refused_before_the_run(tmp_path, capsys, path, value, fragment):
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(_set(_small_baseline(), path, value)))  # NaN written as NaN
    with pytest.raises(RFTheoryError) as info:
        read_baseline(file)
    assert fragment in str(info.value) and "\n" not in str(info.value)
    # through the command: exit 2, one line, and no claim ran (nothing written to --out)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert main(["verify", "sign", "--quick", "--no-figures", "--out", str(out_dir),
                 "--baseline", str(file)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and fragment in err
    assert not any(out_dir.iterdir())


def test_the_small_baseline_itself_is_valid():
    baseline.validate_baseline(_small_baseline(), "small")


def test_a_deeply_nested_baseline_is_refused_in_one_line(tmp_path):
    file = tmp_path / "deep.json"
    data = _small_baseline()
    file.write_text(json.dumps(data).replace('"value": 0.66', '"value": ' + "[" * 100_000 + "]" * 100_000))
    with pytest.raises(RFTheoryError, match="nested too deeply|nested at most"):
        read_baseline(file)
    shallow = _set(_small_baseline(), N + ["a.flips", "value"], [[[[[[[[[[0.5]]]]]]]]]])
    file.write_text(json.dumps(shallow))
    with pytest.raises(RFTheoryError, match="a.flips.value.*must be nested at most 8 lists deep"):
        read_baseline(file)


def test_a_baseline_of_the_earlier_format_asks_to_be_regenerated(tmp_path):
    file = tmp_path / "old.json"
    file.write_text(json.dumps({"format": "rftheory-baseline/1", "claims": {}}))
    with pytest.raises(RFTheoryError, match="format rftheory-baseline/1.*regenerate it with "
                                            "--update-baseline"):
        read_baseline(file)
    assert read_baseline(file, for_update=True) == {"format": FORMAT, "claims": {}}


# -- the law's fitted thresholds: an interval tolerance ----------------------------------------------

def test_an_interval_tolerance_is_the_recorded_runs_interval():
    keys = (Key("per_grid[d,n].p_star", interval="interval", reason="fitted"),)
    result = {"per_grid": [{"d": 4, "n": 8, "p_star": 1.12, "interval": [1.08, 1.16]}]}
    base = stored(result, keys)
    assert base["per_grid[d=4,n=8].p_star"]["tolerance"] == {"interval": [1.08, 1.16]}
    # the band is the interval widened about 1.12 by INTERVAL_WIDENING (~2.03): [1.039, 1.201]
    assert baseline.interval_band(1.12, 1.08, 1.16) == pytest.approx((1.0388, 1.2012), abs=1e-3)
    for value, holds in ((1.15, True), (1.081, True), (1.19, True), (1.05, True),
                         (1.21, False), (1.02, False)):
        moved = compare_numbers(base, {"per_grid": [{"d": 4, "n": 8, "p_star": value,
                                                     "interval": [0.0, 9.0]}]}, keys)
        assert (not moved) is holds, value
    # an open side is stored as "inf" and holds everything beyond
    open_side = stored({"per_grid": [{"d": 4, "n": 8, "p_star": 1.12,
                                      "interval": [1.08, float("inf")]}]}, keys)
    assert not compare_numbers(open_side, {"per_grid": [{"d": 4, "n": 8, "p_star": 50.0,
                                                         "interval": [1, 2]}]}, keys)
    assert "interval [1.08, 1.16]" in compare_numbers(base, perturbed_law(1.3), keys)[0].describe()


def perturbed_law(value):
    return {"per_grid": [{"d": 4, "n": 8, "p_star": value, "interval": [0.0, 9.0]}]}


def _law_entry():
    return read_baseline(STORED)["claims"]["law"]["numbers"]


def test_the_shipped_law_baseline_holds_its_thresholds_to_their_intervals():
    """Every fitted threshold of the shipped quick baseline is held to its recorded 95 %
    interval, widened for a second estimate (:func:`rftheory.baseline.interval_band`): a move
    just beyond the band is caught, a value inside it holds, and **a move of the fitted p*/(dn)
    by 0.1 either way is caught at every threshold key** (issue #25: the quick run's sequential
    design resolves each threshold to ±0.049·dn, so its band, ×2.03, stays within ±0.1). The
    old attack's threshold (1.75·dn, which the factor-2.5 tolerance held) is caught everywhere.
    """
    entries = _law_entry()
    keys = claim_keys(claim_module("law"))
    fitted = {n: e for n, e in entries.items()
              if isinstance(e["tolerance"], dict) and "interval" in e["tolerance"]
              and n.endswith("p_star_over_dn")}
    assert any(n.startswith("pooled.") for n in fitted) and len(fitted) >= 4
    caught_old = 0
    for name, entry in fitted.items():
        value = entry["value"]
        lo, hi = (float(x) for x in entry["tolerance"]["interval"])
        assert lo <= value <= hi
        lo, hi = baseline.interval_band(value, lo, hi)
        result = _law_result(name, entries)
        path = "pooled.abs.p_star_over_dn" if name.startswith("pooled.") else \
            "per_grid[d,n]." + name.partition("].")[2]
        key = tuple(k for k in keys if k.path == path)
        assert len(key) == 1 and key[0].interval == "interval_over_dn"
        for new, holds in ((hi + 1e-9, False), (lo - 1e-9, False), ((value + lo) / 2, True),
                           ((value + hi) / 2, True), (value + 0.1, value + 0.1 <= hi),
                           (value - 0.1, value - 0.1 >= lo), (1.75, lo <= 1.75 <= hi)):
            moved = compare_numbers({name: entry}, _set_law(result, name, new), key, claim="law")
            assert (name not in {m.name for m in moved}) is holds, (name, new)
        caught_old += not (lo <= 1.75 <= hi)
        # the 0.1·dn move of the issue, up and down, at this key
        for moved_by in (0.1, -0.1):
            moved = compare_numbers({name: entry}, _set_law(result, name, value + moved_by), key,
                                    claim="law")
            assert name in {m.name for m in moved}, (name, moved_by, (lo, hi))
    assert caught_old == len(fitted)


def _law_result(name, entries):
    """A law result holding the baseline's recorded numbers (the minimum compare_numbers walks)."""
    per_grid = {}
    for key, entry in entries.items():
        if key.startswith("per_grid[") and key.endswith("p_star_over_dn"):
            cell, _, rest = key.partition("].")
            d, n = (int(float(x.split("=")[1])) for x in cell[len("per_grid["):].split(","))
            variant = rest.split(".")[1]
            g = per_grid.setdefault((d, n), {"d": d, "n": n, "data": {}, "label": {}})
            g["data"][variant] = {"p_star_over_dn": entry["value"], "interval_over_dn": [0.0, 9.0]}
    return {"per_grid": list(per_grid.values()),
            "pooled": {"abs": {"p_star_over_dn": entries["pooled.abs.p_star_over_dn"]["value"],
                               "interval_over_dn": [0.0, 9.0]}}}


def _set_law(result, name, value):
    out = copy.deepcopy(result)
    if name.startswith("pooled."):
        out["pooled"]["abs"]["p_star_over_dn"] = value
        return out
    cell, _, rest = name.partition("].")
    d, n = (int(float(x.split("=")[1])) for x in cell[len("per_grid["):].split(","))
    g = next(g for g in out["per_grid"] if (g["d"], g["n"]) == (d, n))
    g["data"][rest.split(".")[1]]["p_star_over_dn"] = value
    return out


@pytest.mark.slow
def test_a_reseeded_quick_law_run_holds_the_shipped_thresholds():
    """The quick law run with other seeds (base seed 1000: none of its cells' seeds is one of
    the baseline's, which stay below ~100 even with the sequential design's added runs): every
    fitted threshold — per (d, n) and pooled — lies within its recorded interval's band, the
    same band that a 0.1·dn move leaves (test above). The bands are 95 % intervals widened for
    a second estimate and about ten numbers at once (INTERVAL_WIDENING), so a correct run fails
    here about one time in twenty."""
    from rftheory.claims import law

    keys = tuple(k for k in claim_keys(claim_module("law")) if k.interval is not None
                 and k.path.endswith("p_star_over_dn"))
    entries = {n: e for n, e in _law_entry().items() if n.endswith("p_star_over_dn")}
    # the baseline's seeds are 0 + a seed index, below seeds + max_added at any point
    assert law.QUICK.seeds + law.QUICK.max_added < 1000
    result = law.run(law.QUICK.replace(seed=1000))
    assert not compare_numbers(entries, result, keys)
