"""Issue #24, row by row, with variants of each reported input: the parser's text rule, numeric
failures of linear algebra, one-line refusals before any progress, the --workers rule and the
parent watcher, output paths, foreign sweep stores, bounded repetitions, lazy imports, file
modes and help texts. (Row 8, baseline schemas, is tests/test_baseline.py's.)"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from rftheory.cli import main
from rftheory.errors import ActivationError, NumericalError, RFTheoryError

ROOT = Path(__file__).resolve().parents[1]


class WorkStarted(BaseException):
    """Raised by a replaced entry point of real work."""


def forbid(monkeypatch, *targets):
    def forbidden(*args, **kwargs):
        raise WorkStarted("work started before the input was refused")

    for module, name in targets:
        monkeypatch.setattr(module, name, forbidden)


def refused(capsys, *argv) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2 and captured.out == "" and len(lines) == 1, (argv, captured.err[-500:])
    assert "Traceback" not in captured.err and ": error: " in lines[0]
    return lines[0]


# -- row 1: surrounding whitespace is stripped, length is bounded, one line ----------------------

@pytest.mark.parametrize("pad", [" ", " " * 399, "\u0020" * 2000])
def test_padded_activation_is_stripped_everywhere_it_is_echoed(capsys, pad):
    code = main(["kernel", pad + "tanh" + pad, "--d", "3", "--n", "3", "--p", "8,16", "--reps",
                 "1", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    payload = json.loads(out)
    assert payload["activation"] == "tanh"
    assert payload["produced_by"]["parameters"]["activation"] == "tanh"
    assert len(out) < 20_000  # nothing of the padding is echoed


def test_library_strips_and_bounds_the_same_way():
    from rftheory.activations import get_activation

    assert get_activation("  relu(z) + tanh(z)" + " " * 20_000).name == "relu(z) + tanh(z)"
    with pytest.raises(ActivationError, match="too long"):
        get_activation("z" + " + z" * 120)  # 481 characters of expression
    with pytest.raises(ActivationError, match="control character U\\+000A"):
        get_activation("z\n+ 1")


@pytest.mark.parametrize("argv", [
    ["activation", "z" + " " * 100_000],
    ["report", "relu" + " " * 5000, "--quick"],
    ["kernel", " " * 4097 + "z", "--d", "2", "--n", "2", "--p", "4"],
    ["activation", "z" + " + z" * 150],
    ["activation", "tanh(z)\x1b[2J"],
])
def test_overlong_or_multiline_arguments_are_one_short_line(capsys, argv):
    line = refused(capsys, *argv)
    assert len(line) < 300


# -- row 2: 309+ digit literals ------------------------------------------------------------------

@pytest.mark.parametrize("text", ["9" * 309, "1" + "0" * 398, "z*" + "9" * 350,
                                  "z*(-" + "7" * 320 + ")", "z + 1" + "0" * 330 + ".5",
                                  "tanh(" + "3" * 310 + "*z)"])
def test_huge_literals_are_one_line_not_an_overflow(capsys, text):
    line = refused(capsys, "activation", text)
    assert "out of range" in line and "OverflowError" not in line and len(line) < 300
    with pytest.raises(ActivationError, match="out of range"):
        from rftheory.activations import parse_activation

        parse_activation(text)


@pytest.mark.parametrize("digits", [31, 309, 400])
def test_huge_integers_in_options_are_one_line(capsys, digits):
    for argv in (["kernel", "relu", "--d", "9" * digits, "--n", "2", "--p", "4"],
                 ["reconstruct", "--n", "9" * digits, "--p", "4"],
                 ["activation", "relu", "--order", "9" * digits]):
        assert "at most 30 digits" in refused(capsys, *argv)


# -- row 3: numeric failures of linear algebra -----------------------------------------------------

def test_symmetric_eigh_names_the_matrix_instead_of_failing():
    from rftheory.gram import symmetric_eigh

    for bad in (np.inf, -np.inf, np.nan):
        A = np.eye(3)
        A[1, 2] = A[2, 1] = bad
        with pytest.raises(NumericalError, match="the test matrix has 2 non-finite entries of 9"):
            symmetric_eigh(A, what="the test matrix")
    w, Q = symmetric_eigh(np.diag([3.0, 1.0, 2.0]))
    assert w.tolist() == [1.0, 2.0, 3.0] and Q.shape == (3, 3)  # exact: a diagonal matrix


def test_a_closed_form_that_overflows_is_reported_not_raised(monkeypatch):
    """The result path, cheaply: erf's closed form made to overflow in one entry."""
    import rftheory.concentration

    exact = rftheory.concentration.closed_form_kernel_matrix

    def overflowing(activation, X):
        K = exact(activation, X)
        K[0, -1] = K[-1, 0] = np.inf
        return K

    monkeypatch.setattr(rftheory.concentration, "closed_form_kernel_matrix", overflowing)
    result = rftheory.concentration.measure_concentration("erf", 3, 4, [8, 16], reps=1)
    assert result["closed_form"]["lambda_min"] is None
    assert "2 non-finite entries of 16" in result["closed_form"]["failed"]


@pytest.mark.slow  # ~15 s each: the Hermite series of a fast oscillation
@pytest.mark.parametrize("activation", ["sin(1000000*z)", "cos(300000*z)", "sin(500000*z)"])
def test_an_overflowing_closed_form_gives_a_result_that_says_so(activation):
    from rftheory.concentration import measure_concentration

    result = measure_concentration(activation, 4, 4, [8, 16], reps=1)
    closed = result["closed_form"]
    assert closed["lambda_min"] is None and "non-finite" in closed["failed"]
    assert np.isfinite(result["lambda_min_kernel"])


def test_a_closed_form_that_is_finite_is_still_checked():
    from rftheory.concentration import measure_concentration

    closed = measure_concentration("sin(z)", 4, 4, [8, 16], reps=1)["closed_form"]
    assert "failed" not in closed and closed["max_entry_difference"] < 1e-6


def test_a_stray_linalg_error_is_one_line_at_the_cli(capsys, monkeypatch):
    import rftheory.concentration

    def fails(*args, **kwargs):
        raise np.linalg.LinAlgError("Eigenvalues did not converge")

    monkeypatch.setattr(rftheory.concentration, "measure_concentration", fails)
    line = refused(capsys, "kernel", "relu", "--d", "3", "--n", "3", "--p", "8")
    assert "numerical failure in linear algebra (Eigenvalues did not converge)" in line


# -- row 4: a refusal is exactly one line, before any progress ------------------------------------

@pytest.mark.parametrize("activation, fragment", [
    ("1e-300*z", "numerically zero"), ("1e-250*z + 1e-260*tanh(z)", "numerically zero"),
    ("0.000001**40*z", "numerically zero"), ("exp(z**64)", "grows too fast"),
    ("exp(z**3)", "grows too fast"), ("relu(z)*exp(z**2)", "grows too fast"),
])
def test_unusable_activations_are_refused_before_any_progress(capsys, monkeypatch, tmp_path,
                                                              activation, fragment):
    import rftheory.concentration
    import rftheory.report

    forbid(monkeypatch, (rftheory.concentration, "measure_concentration"),
           (rftheory.report, "activation_card"))
    assert fragment in refused(capsys, "kernel", activation, "--d", "5", "--n", "5", "--p",
                               "10,20", "--reps", "1")
    assert fragment in refused(capsys, "report", activation, "--quick", "--out",
                               str(tmp_path / "r"))
    assert not (tmp_path / "r").exists()


def test_the_double_precision_check_can_pass():
    from rftheory.hermite import check_double_precision

    assert check_double_precision("1e-90*z") > 0  # E[φ²] = 1e-180: above the 1e-200 floor
    assert check_double_precision("tanh") > 0


# -- row 5: one --workers rule; the watcher polls ---------------------------------------------------

def test_workers_beyond_the_cpus_are_refused_by_every_command(capsys, monkeypatch, tmp_path):
    import rftheory.report
    from rftheory.processes import available_cpus

    forbid(monkeypatch, (rftheory.report, "activation_card"))
    sweep = tmp_path / "s.toml"
    sweep.write_text('[sweep]\ncell = "label_fit"\nseeds = 1\n[fixed]\nactivation = "relu"\n'
                     'd = 2\nn = 2\np = 4\n')
    for count in (available_cpus() + 1, 999, 10**12):
        a = refused(capsys, "report", "relu", "--quick", "--workers", str(count), "--out",
                    str(tmp_path / "r"))
        b = refused(capsys, "sweep", "run", str(sweep), "--workers", str(count), "--out",
                    str(tmp_path / "o"))
        assert a.split(": error: ")[1] == b.split(": error: ")[1]  # the same rule, word for word
        assert f"give at most --workers {available_cpus()}" in a
    assert "must be an integer >= 1" in refused(capsys, "report", "relu", "--workers", "0")
    assert not (tmp_path / "r").exists() and not (tmp_path / "o").exists()


def test_check_workers():
    from rftheory.processes import available_cpus, check_workers

    assert check_workers(available_cpus()) == available_cpus()
    for bad in (0, -3, 1.0, True, available_cpus() + 1):
        with pytest.raises(RFTheoryError):
            check_workers(bad)


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs pidfd_open (Linux >= 5.3)")
def test_the_parent_watcher_works_on_descriptors_above_1024(tmp_path):
    """A worker holding > 1024 descriptors (a 999-worker pool) still dies with its parent:
    select() raised "filedescriptor out of range" there."""
    script = textwrap.dedent(f"""
        import os, resource, subprocess, sys
        sys.path.insert(0, {str(ROOT)!r})
        from rftheory.processes import _watch
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard < 1200:
            sys.exit(77)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
        keep = [os.dup(0) for _ in range(1100)]  # the pidfd gets a number >= 1100
        parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
        _watch(parent.pid)  # returns only by killing this process once `parent` has exited
        print("watcher returned without killing", flush=True)
    """)
    watcher = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             timeout=60)
    if watcher.returncode == 77:
        pytest.skip("the hard descriptor limit is below 1200")
    assert watcher.returncode == -signal.SIGKILL, watcher.stderr[-1000:]
    assert "out of range" not in watcher.stderr


# -- row 6: one rule for output paths ---------------------------------------------------------------

@pytest.fixture
def store(tmp_path):
    from rftheory.sweep import parse_spec, run_sweep

    run_sweep(parse_spec({"sweep": {"cell": "label_fit", "seeds": 1},
                          "fixed": {"activation": "relu", "d": 2, "n": 2, "p": 4}}),
              tmp_path / "store", executor=ThreadPoolExecutor(1))
    return tmp_path / "store"


@pytest.mark.parametrize("plot", ["/", "//", "///", "/.", ".", "..", "{tmp}/", "{tmp}/sub/",
                                  "{tmp}/.."])
def test_plot_paths_naming_directories_are_one_line_in_every_command(capsys, tmp_path, store,
                                                                     plot):
    plot = plot.replace("{tmp}", str(tmp_path))
    sweep = tmp_path / "s.toml"
    sweep.write_text('[sweep]\ncell = "label_fit"\nseeds = 1\n[fixed]\nactivation = "relu"\n'
                     'd = 2\nn = 2\np = 4\n')
    for argv in (["reconstruct", "--d", "3", "--n", "4", "--p", "50"], ["activation", "relu"],
                 ["kernel", "relu", "--d", "3", "--n", "3", "--p", "8"],
                 ["sweep", "run", str(sweep), "--out", str(tmp_path / "o")],
                 ["sweep", "report", str(store)]):
        line = refused(capsys, *argv, "--plot", plot)
        assert "a directory; give a file name in it" in line, line
    assert "a directory" in refused(capsys, "sweep", "export", str(store), plot)
    assert not (tmp_path / "o").exists()


# -- row 7: an empty or foreign store is refused, saying what the file is ----------------------------

def _foreign(path: Path, kind: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "empty":
        path.write_bytes(b"")
        return "an empty file (0 bytes)"
    if kind == "text":
        path.write_text("id,value\n1,2\n")
        return "not an SQLite database (it starts with b'id,value"
    with sqlite3.connect(path) as db:
        if kind == "other":
            db.execute("CREATE TABLE cells (x)")
            db.execute("CREATE TABLE notes (y)")
            return "an SQLite database of something else (its tables: cells, notes)"
        db.execute("CREATE TABLE t (x)")
        db.execute("DROP TABLE t")  # a valid database file with no table left
    return "an SQLite database without tables"


@pytest.mark.parametrize("kind", ["empty", "text", "other", "none"])
def test_a_foreign_store_is_refused_before_any_cell(capsys, monkeypatch, tmp_path, kind):
    import rftheory.sweep.run

    sweep = tmp_path / "s.toml"
    sweep.write_text('[sweep]\ncell = "label_fit"\nseeds = 2\n[grid]\np = [4, 8]\n[fixed]\n'
                     'activation = "relu"\nd = 2\nn = 2\n')
    out = tmp_path / "out"
    what = _foreign(out / "sweep.sqlite", kind)
    before = (out / "sweep.sqlite").read_bytes()
    forbid(monkeypatch, (rftheory.sweep.run, "open_executor"))
    for extra in (["--resume"], [], ["--resume", "--dry-run"]):
        line = refused(capsys, "sweep", "run", str(sweep), "--out", str(out), *extra)
        assert what in line and "not a sweep store" in line, line
    assert what in refused(capsys, "sweep", "report", str(out))
    assert what in refused(capsys, "sweep", "export", str(out), str(tmp_path / "e.jsonl.gz"))
    assert (out / "sweep.sqlite").read_bytes() == before  # untouched


def test_a_store_whose_writer_died_is_not_foreign(tmp_path):
    """The files of a writer killed before its first checkpoint (main file + write-ahead log,
    copied while it holds them open) open as a store, not as a foreign file."""
    import shutil

    from rftheory.sweep import SweepStore

    with SweepStore.open_writer(tmp_path / "live") as live:
        live.start_run("test", 1)
        (tmp_path / "crashed").mkdir()
        for name in ("sweep.sqlite", "sweep.sqlite-wal"):
            if (tmp_path / "live" / name).exists():
                shutil.copy(tmp_path / "live" / name, tmp_path / "crashed" / name)
    with SweepStore.open_writer(tmp_path / "crashed") as store:
        assert store.meta("schema_version") is not None


def test_a_real_store_still_resumes(capsys, tmp_path, store):
    sweep = tmp_path / "s.toml"
    sweep.write_text('[sweep]\ncell = "label_fit"\nseeds = 1\n[fixed]\nactivation = "relu"\n'
                     'd = 2\nn = 2\np = 4\n')
    assert main(["sweep", "run", str(sweep), "--out", str(store), "--resume", "--dry-run"]) == 0
    assert "1 already in" in capsys.readouterr().out


# -- row 9: repetitions are bounded --------------------------------------------------------------

@pytest.mark.parametrize("reps", ["10001", "1000000000", "4" + "0" * 12])
def test_absurd_repetitions_are_refused(capsys, monkeypatch, tmp_path, reps):
    import rftheory.concentration
    import rftheory.report

    forbid(monkeypatch, (rftheory.concentration, "measure_concentration"),
           (rftheory.report, "activation_card"))
    assert "--reps must be <= 10000" in refused(capsys, "kernel", "relu", "--d", "5", "--n", "5",
                                                "--p", "10", "--reps", reps)
    assert "--seeds must be <= 10000" in refused(capsys, "report", "relu", "--quick", "--seeds",
                                                 reps, "--out", str(tmp_path / "r"))


def test_the_repetition_bound_admits_its_maximum(monkeypatch):
    from rftheory.commands._rules import MAX_REPETITIONS, repetitions

    assert repetitions(str(MAX_REPETITIONS), "--reps") == MAX_REPETITIONS
    with pytest.raises(RFTheoryError):
        repetitions(str(MAX_REPETITIONS + 1), "--reps")


# -- row 10: checks before heavy imports ------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["reconstruct", "--n", "0", "--p", "3"], ["reconstruct", "--n", "3", "--p", "3", "--d", "2"],
    ["sweep", "run", "/nonexistent/s.toml"], ["sweep", "report", "/nonexistent"],
    ["activation", "relu", "--order", "-1"], ["activation", "relu(z) + tahn(z)"],
    ["activation", "relu", "--digits", "1000"], ["report", "relu", "--workers", "0"],
])
def test_refusals_of_reconstruct_sweep_activation_load_neither_numpy_nor_sympy(argv):
    code = ("import sys; from rftheory.cli import main; rc = main(" + repr(argv) + "); "
            "print(rc, [m for m in ('numpy', 'sympy', 'scipy') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.strip() == "2 []", done.stdout + done.stderr


def test_the_command_constants_agree_with_the_library():
    from rftheory import hermite
    from rftheory.commands import activation, sweep
    from rftheory.sweep import STORE_FILE

    assert (activation.MAX_ORDER, activation.MIN_DPS, activation.MAX_DPS) == (
        hermite.MAX_ORDER, hermite.MIN_DPS, hermite.MAX_DPS)
    assert sweep.STORE_FILE == STORE_FILE


# -- minor points -------------------------------------------------------------------------------

@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077, 0o002])
def test_result_json_honours_the_umask_like_figures(tmp_path, mask):
    from rftheory.output import write_json_atomic

    old = os.umask(mask)
    try:
        write_json_atomic(tmp_path / "r.json", {"x": 1})
        with open(tmp_path / "figure.png", "w"):
            pass
    finally:
        os.umask(old)
    mode = (tmp_path / "r.json").stat().st_mode & 0o777
    assert mode == 0o666 & ~mask == (tmp_path / "figure.png").stat().st_mode & 0o777


def test_help_texts_show_single_percent_signs():
    from rftheory.cli import build_parser

    def helps(parser):
        yield parser.format_help()
        for action in parser._actions:
            if isinstance(getattr(action, "choices", None), dict):
                for child in action.choices.values():
                    yield from helps(child)

    texts = list(helps(build_parser()))
    assert len(texts) > 9 and "80%" in texts[0]
    assert not [t for t in texts if "%%" in t]


@pytest.mark.slow
def test_a_killed_pool_leaves_no_leaked_semaphore_warning(tmp_path):
    script = tmp_path / "kill.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from rftheory.processes import process_pool
        if __name__ == "__main__":
            pool = process_pool(2, method="forkserver")
            futures = [pool.submit(time.sleep, 30) for _ in range(2)]
            time.sleep(2)
            os.kill(os.getpid(), signal.SIGKILL)
    """))
    # stderr is read to its end: the resource tracker holds it until it has cleaned up
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert "leaked semaphore" not in done.stderr, done.stderr
