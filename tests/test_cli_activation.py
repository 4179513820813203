"""The ``rftheory activation`` command: tables, JSON, figures and one-line errors."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from rftheory.cli import build_parser, main


def run(capsys, *argv):
    code = main(["activation", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_parseval_and_verdicts(capsys):
    code, out, err = run(capsys, "relu", "--order", "6")
    assert code == 0 and err == ""
    assert "μ_k" in out and "error" in out
    # μ_1 of relu is exactly 1/2; the table prints 17 significant digits.
    row_1 = next(line for line in out.splitlines() if line.strip().startswith("1 "))
    assert abs(float(row_1.split()[1]) - 0.5) <= 1e-16
    assert "Parseval: E[φ²] = 0.5" in out
    assert "sign-identifiable: no" in out and "Lipschitz: yes" in out


def test_json_output(capsys):
    code, out, _ = run(capsys, "relu(z) + tanh(z)", "--order", "5", "--json")
    payload = json.loads(out)
    assert code == 0
    assert payload["sign_identifiability"]["holds"] is True
    assert payload["order"] == 5 and len(payload["coefficients"]) == 6
    # μ_0 = E[relu] + E[tanh] = 1/sqrt(2π) + 0.
    assert abs(payload["coefficients"][0] - 1 / math.sqrt(2 * math.pi)) <= 1e-15


def test_exact_method_prints_closed_forms(capsys):
    code, out, _ = run(capsys, "relu", "--method", "exact", "--order", "4")
    assert code == 0
    assert "sqrt(2)/(2*sqrt(pi))" in out and "-sqrt(3)/(12*sqrt(pi))" in out
    assert "Parseval: E[φ²] = 1/2" in out


def test_mpmath_method_prints_requested_digits(capsys):
    code, out, _ = run(capsys, "tanh", "--method", "mpmath", "--digits", "25", "--order", "3")
    assert code == 0
    # tanh's μ_1 to 25 digits (mpmath.quad reference value 0.605705509602158825583540218...).
    assert "0.6057055096021588255835402" in out


def test_plot_writes_png_and_pdf(capsys, tmp_path):
    target = tmp_path / "relu_hermite.png"
    code, out, _ = run(capsys, "relu", "--order", "10", "--plot", str(target))
    assert code == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "relu_hermite.pdf").read_bytes()[:5] == b"%PDF-"


@pytest.mark.parametrize("argv, fragment", [
    (["__import__('os').system('echo pwned')"], "dunder"),
    (["z.real"], "Attribute"),
    (["1/z"], "pole"),
    (["exp(z**2)"], "grows too fast"),
    (["relu", "--order", "-1"], "--order"),
    (["relu", "--order", "5000"], "--order"),
    (["relu", "--digits", "2"], "--digits"),
    (["relu", "--digits", "100000"], "--digits"),
    (["relu", "--plot", "figure.svg"], ".png or .pdf"),
    (["relu", "--plot", "/no/such/dir/f.png"], "does not exist"),
    (["relu", "--time-budget", "-1"], "--time-budget"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rftheory activation: error:")
    assert fragment in lines[0]


def test_malformed_arguments_exit_2_via_argparse(capsys):
    assert main(["activation", "relu", "--method", "simpson"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rftheory activation: error: ")
    assert "invalid choice" in lines[0] and "--help" in lines[0]


def test_method_choices_and_help_ranges_agree_with_hermite():
    from rftheory.commands import activation
    from rftheory.hermite import MAX_DPS, MAX_ORDER, METHODS, MIN_DPS

    assert set(activation.METHODS) == set(METHODS)
    text = build_parser()._subparsers._group_actions[0].choices["activation"].format_help()
    assert f"at most {MAX_ORDER}" in text and f"{MIN_DPS} to {MAX_DPS}" in " ".join(text.split())


def _console_script(name: str = "rftheory") -> Path:
    """The console script installed with *this* interpreter (the venv's bin/, not PATH).

    A fresh machine runs the tests as ``.venv/bin/python -m pytest`` without activating the
    venv, so the script is only next to ``sys.executable``; looking it up on PATH would find
    (and test) some other installation, or nothing.
    """
    suffix = ".exe" if os.name == "nt" else ""
    candidates = [Path(sysconfig.get_path("scripts")) / f"{name}{suffix}",
                  Path(sys.executable).parent / f"{name}{suffix}"]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise AssertionError(f"the {name} console script is not installed next to {sys.executable} "
                         f"(looked for {', '.join(map(str, candidates))}; pip install -e .)")


def test_console_script_subprocess():
    executable = _console_script()
    done = subprocess.run([executable, "activation", "relu+tanh", "--order", "4", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sign_identifiability"]["holds"] is True
    bad = subprocess.run([executable, "activation", "open('x')"], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        bad.stderr.strip().splitlines()[0]] and "unknown function 'open'" in bad.stderr
