"""The CLI's promises to a careless or hostile user (issue #11): one-line errors with exit 2,
every input and output location checked before any work, quiet broken pipes, --version.

Each input the issue lists is run here; "computed nothing" is asserted by making the work itself
fail the test if it is reached.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rftheory.cli import main
from rftheory.commands._common import figure_paths, output_dir
from rftheory.errors import RFTheoryError

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line(err: str, command: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"rftheory {command}: error: "), lines[0]
    return lines[0]


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a claim or a reconstruction starts."""
    def forbidden(*args, **kwargs):
        raise AssertionError("work started before the input was refused")

    import rftheory.claims
    import rftheory.claims._common
    import rftheory.pipeline

    monkeypatch.setattr(rftheory.claims, "run_claim", forbidden)
    monkeypatch.setattr(rftheory.claims._common, "run_claim", forbidden)
    monkeypatch.setattr(rftheory.pipeline, "fit_model", forbidden)


# -- argparse ------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, command, fragment", [
    (["kernel", "relu", "--d", "3"], "kernel", "required: --n, --p"),
    (["reconstruct", "--n", "x", "--p", "3"], "reconstruct", "--n: must be an integer"),
    (["reconstruct", "--n", "3", "--p", "9", "--labels", "cauchy"], "reconstruct",
     "invalid choice"),
    (["sweep", "run"], "sweep run", "required: file"),
    (["demo", "--bogus"], "demo", "unrecognized arguments: --bogus"),
    (["nosuchcommand"], "", "invalid choice"),
])
def test_argparse_errors_are_one_line_with_a_help_hint(capsys, argv, command, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    prog = f"rftheory {command}".strip()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), lines
    assert fragment in lines[0] and f"see '{prog} --help'" in lines[0]


def test_version(capsys):
    from rftheory import __version__
    from rftheory.features import V_DEFINITION

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith(f"rftheory {__version__} ") and V_DEFINITION in out


def test_debug_is_accepted_after_the_command_and_shows_the_traceback(capsys, tmp_path):
    with pytest.raises(RFTheoryError):
        main(["sweep", "run", str(tmp_path / "missing.toml"), "--debug"])
    assert main(["sweep", "run", str(tmp_path / "missing.toml")]) == 2


# -- sweep files and stores ----------------------------------------------------------------------

def test_deeply_nested_toml_is_one_line(capsys, tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text('[sweep]\ncell = "label_fit"\n[grid]\nd = ' + "[" * 5000 + "]" * 5000 + "\n")
    code, _, err = run(capsys, "sweep", "run", str(path), "--dry-run")
    assert code == 2 and "nested too deeply" in one_line(err, "sweep run")


SMALL = '[sweep]\ncell = "label_fit"\nseeds = 1\n[fixed]\nactivation = "relu"\nd = 2\nn = 2\np = 4\n'


def test_a_utf8_byte_order_mark_is_accepted_and_utf16_is_named(capsys, tmp_path):
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + SMALL.encode())
    code, out, _ = run(capsys, "sweep", "run", str(bom), "--dry-run", "--out", str(tmp_path / "o"))
    assert code == 0 and out.startswith("1 cells;")
    utf16 = tmp_path / "utf16.toml"
    utf16.write_bytes(SMALL.encode("utf-16"))
    code, _, err = run(capsys, "sweep", "run", str(utf16), "--dry-run")
    assert code == 2 and "UTF-16 byte-order mark" in one_line(err, "sweep run")


def test_damaged_store_is_one_line(capsys, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from rftheory.sweep import parse_spec, run_sweep

    spec = parse_spec({"sweep": {"cell": "label_fit", "seeds": 8},
                       "grid": {"activation": ["relu", "tanh"], "p": [4, 16]},
                       "fixed": {"d": 5, "n": 8}})
    out = tmp_path / "out"
    run_sweep(spec, out, executor=ThreadPoolExecutor(1))
    path = out / "sweep.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(path.read_bytes())
    raw[4096 + 16: 3 * 4096] = b"\xa5" * (2 * 4096 - 16)
    path.write_bytes(bytes(raw))
    code, _, err = run(capsys, "sweep", "report", str(out), "--no-figures")
    assert code == 2 and "damaged" in one_line(err, "sweep report")


@pytest.mark.parametrize("option", ["--workers", "--dask-local"])
def test_more_workers_than_cpus_are_refused(capsys, tmp_path, option):
    path = tmp_path / "s.toml"
    path.write_text(SMALL)
    code, _, err = run(capsys, "sweep", "run", str(path), option, "10000",
                       "--out", str(tmp_path / "o"))
    line = one_line(err, "sweep run")
    assert code == 2 and "10000" in line and "CPUs" in line
    assert not (tmp_path / "o").exists()


# -- output locations: one rule ------------------------------------------------------------------

def test_output_locations_follow_one_rule(tmp_path):
    assert output_dir(str(tmp_path / "new")) == tmp_path / "new"  # the last component is created
    assert not (tmp_path / "new").exists()  # ... by the writer, not by the check
    assert output_dir(None, default=tmp_path / "a" / "b") == tmp_path / "a" / "b"  # defaults
    (tmp_path / "file").write_text("")
    for text, message in (("", "empty path"), ("/", "file-system root"),
                          ("/proc/nope", "system directory /proc"),
                          ("/etc/rftheory", "system directory /etc"),
                          (str(tmp_path / "missing" / "x"), "parent directory"),
                          (str(tmp_path / "file"), "not a directory")):
        with pytest.raises(RFTheoryError, match=message):
            output_dir(text)
    for text, message in (("", "empty file name"), ("/x.png", "file-system root"),
                          ("/nonexistent/x.png", "does not exist"),
                          (str(tmp_path), "is a directory"), ("/proc/x.png", "system")):
        with pytest.raises(RFTheoryError, match=message):
            figure_paths(text)
    assert not Path("/nonexistent").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_read_only_directory_is_refused_before_any_work(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(RFTheoryError, match="cannot write"):
            output_dir(str(locked))
        with pytest.raises(RFTheoryError, match="cannot write"):
            figure_paths(str(locked / "fig.png"))
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("argv, command, fragment", [
    (["demo", "--quick", "--seed", "-1"], "demo", "--seed must be >= 0"),
    (["demo", "--quick", "--out", "/proc/nope"], "demo", "system directory /proc"),
    (["demo", "--out", ""], "demo", "empty path"),
    (["demo", "--out", "/"], "demo", "file-system root"),
    (["verify", "law", "--quick", "--out", "/proc/x"], "verify", "system directory /proc"),
    (["verify", "law", "--quick", "--seed", "-3"], "verify", "--seed must be >= 0"),
    (["demo", "--memory-limit", "lots"], "demo", "size such as 12G"),
    (["demo", "--time-limit", "-5"], "demo", "must be positive"),
    (["reconstruct", "--n", "3", "--p", "30", "--d", "2", "--plot", ""], "reconstruct",
     "empty file name"),
    (["reconstruct", "--n", "3", "--p", "30", "--d", "2", "--plot", "/nonexistent/x.png"],
     "reconstruct", "does not exist"),
    (["kernel", "relu", "--d", "3", "--n", "4", "--p", "10", "--plot", "/x.png"], "kernel",
     "file-system root"),
    (["activation", "relu", "--plot", ""], "activation", "empty file name"),
])
def test_inputs_are_refused_in_one_line_before_any_work(capsys, no_work, argv, command,
                                                         fragment):
    start = time.perf_counter()
    code, out, err = run(capsys, *argv)
    assert time.perf_counter() - start < 5.0  # refused, not started; slack for load
    assert code == 2 and out == ""
    assert fragment in one_line(err, command)


def test_a_refused_demo_imports_nothing_heavy():
    """In a fresh interpreter: the refusal comes before the claim (or sympy) is imported."""
    code = ("import sys; from rftheory.cli import main; rc = main(['demo', '--quick', '--seed', "
            "'-1']); heavy = [m for m in ('rftheory.claims.law', 'rftheory.pipeline', 'sympy') "
            "if m in sys.modules]; print(rc, heavy)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "2 []", done.stdout + done.stderr


def test_sweep_report_needs_a_writable_directory_for_its_default_figure(capsys, tmp_path):
    code, _, err = run(capsys, "sweep", "report", str(tmp_path / "nothing"))
    assert code == 2 and "does not exist" in one_line(err, "sweep report")


# -- broken pipe ---------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, status", [
    (["--help"], (0, 141)),  # argparse itself ignores a failed write of the help
    (["activation", "relu", "--order", "4"], (141,)),
    (["activation", "relu", "--order", "4", "--json"], (141,)),
])
def test_a_closed_stdout_ends_quietly(argv, status):
    proc = subprocess.Popen([sys.executable, "-m", "rftheory.cli", *argv], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before anything is written: `| head -0`
    _, err = proc.communicate(timeout=120)
    assert err.decode() == "" and proc.returncode in status
