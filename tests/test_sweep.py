"""Tests of rftheory.sweep: sweep files, the store, resume after SIGKILL, dask, determinism.

The cells are the built-in ``label_fit`` kind (a real min-norm fit on sphere data, a few ms at
these sizes). Its numbers depend on the BLAS thread count in the last bits, which is why every
executor path runs cells with one BLAS thread and why equality below is exact: the same cell
with the same thread count must give the same bits on any worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import stored_rows
from rftheory.cli import main
from rftheory.errors import RFTheoryError
from rftheory.cells import label_fit_cell
from rftheory.sweep import (
    STORE_FILE,
    SweepSpecError,
    SweepStore,
    SweepStoreError,
    canonical_json,
    comparable_results,
    load_spec,
    parse_spec,
    plan_sweep,
    plot_sweep_report,
    run_sweep,
    sweep_report,
)

ROOT = Path(__file__).resolve().parents[1]
#: label_fit sizes whose numbers were measured to differ in the last bits between 1 and 2
#: OpenBLAS threads (smaller products stay single-threaded and could not tell them apart)
SENSITIVE = {"d": 20, "n": 30, "p": 5000}

SMALL = """
[sweep]
cell = "label_fit"
name = "small"
seeds = 2

[grid]
activation = ["relu", "tanh"]
p = [4, 16]

[fixed]
d = 5
n = 8
"""


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def threads_executor() -> ThreadPoolExecutor:
    """One in-process worker: fast, for tests that are about the store, not the executor."""
    return ThreadPoolExecutor(max_workers=1)


# -- sweep files ------------------------------------------------------------------------------

def test_spec_expands_grid_with_p_mult_and_seeds(tmp_path):
    spec = load_spec(write(tmp_path, """
[sweep]
cell = "label_fit"
seeds = 3
[grid]
activation = ["relu", "relu+tanh"]
p_mult = [0.5, 1, 2.0]
[fixed]
d = 4
n = 5
"""))
    cells = list(spec.cells())
    assert len(cells) == 2 * 3 * 3
    assert sorted({c.params["p"] for c in cells}) == [10, 20, 40]  # p = p_mult·d·n
    assert {c.seed for c in cells} == {0, 1, 2}
    assert all("p_mult" not in c.params for c in cells)
    assert len({c.key for c in cells}) == len(cells)
    # `1` and `1.0` are one canonical value, so the same cell key
    assert spec.axes[1][1] == (0.5, 1.0, 2.0)


def test_p_mult_values_rounding_to_one_p_are_one_cell():
    spec = parse_spec({"sweep": {"cell": "label_fit"},
                       "grid": {"p_mult": [1.0, 1.01]},
                       "fixed": {"activation": "relu", "d": 2, "n": 5, "seed": 0}})
    assert spec.grid_size == 2
    assert [c.params["p"] for c in spec.cells()] == [10]  # round(1.01·10) = 10


BAD_FILES = [
    ("[sweep]\ncell = 'label_fit'\n[grid]\nd = []\n", r"\[grid\] d: axis is empty"),
    ("[sweep]\ncell = 'label_fit'\n[grid]\nd = ['x']\n", r"\[grid\] d\[0\]: expected an integer"),
    ("[sweep]\ncell = 'label_fit'\n[grid]\nd = [true]\n", r"\[grid\] d\[0\]: expected an integer"),
    ("[sweep]\ncell = 'label_fit'\n[grid]\nd = 4\n", r"\[grid\] d: an axis must be a list"),
    ("[sweep]\ncell = 'label_fit'\n[grid]\nd = [4, 4]\n", r"\[grid\] d\[1\]: value 4 appears twice"),
    ("[sweep]\ncell = 'label_fit'\n[grid]\nd = [0]\n", r"\[grid\] d\[0\]: must be >= 1"),
    ("[sweep]\ncell = 'label_fit'\n[grid]\ndd = [4]\n", r"\[grid\] dd: not a parameter of cell"),
    ("[sweep]\ncell = 'label_fit'\n[fixed]\nmax_steps = 4\n", r"\[fixed\] max_steps: not a parameter"),
    ("[sweep]\ncell = 'label_fit'\n[fixed]\nactivation = 'import os'\n", r"\[fixed\] activation:"),
    ("[sweep]\ncell = 'label_fit'\n[fixed]\nlabels = 3\n", r"\[fixed\] labels: expected a string"),
    ("[sweep]\ncell = 'nope'\n", r"\[sweep\] cell: unknown cell kind 'nope'"),
    ("[sweep]\nseeds = 2\n", r"\[sweep\] cell: missing"),
    ("[sweep]\ncell = 'label_fit'\nworkers = 2\n", r"\[sweep\] workers: unknown key"),
    ("[sweep]\ncell = 'label_fit'\nseeds = 0\n", r"\[sweep\] seeds: expected a positive integer"),
    ("cell = 'label_fit'\n", r"cell: unknown key \(put it under \[sweep\]"),
    ("[sweep]\ncell = 'label_fit'\n[grids]\nd = [1]\n", r"grids: unknown key"),
    ("[grid]\nd = [1]\n", r"\[sweep\]: missing section"),
    ("[sweep]\ncell = 'label_fit'\nseeds = 2\n[grid]\nseed = [0]\n", r"\[sweep\] seeds: give either"),
    ("[sweep]\ncell = 'label_fit'\n[grid]\np = [4]\np_mult = [1.0]\n", r"p_mult: give p or p_mult"),
    ("[sweep]\ncell = 'label_fit'\n[grid]\nd = [4]\n[fixed]\nd = 4\n",
     r"\[grid\] d: also given in \[fixed\]"),
    ("[sweep]\ncell = 'label_fit'\n[grid]\nd = [4]\n[fixed]\nn = 4\np = 8\nseed = 0\n",
     r"activation: cell 'label_fit' needs this parameter"),
    ("[sweep]\ncell = 'label_fit'\n[grid\nd = [4]\n", r"invalid TOML: .*line 3"),
]


@pytest.mark.parametrize("text, message", BAD_FILES)
def test_bad_sweep_files_are_refused_naming_the_key(tmp_path, text, message):
    with pytest.raises(SweepSpecError, match=message) as info:
        load_spec(write(tmp_path, text))
    assert isinstance(info.value, RFTheoryError)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(SweepSpecError, match="sweep file not found"):
        load_spec(tmp_path / "absent.toml")


def test_cli_refuses_bad_file_before_running_anything(tmp_path, capsys):
    path = write(tmp_path, "[sweep]\ncell = 'label_fit'\n[grid]\nd = []\n")
    out = tmp_path / "out"
    assert main(["sweep", "run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "[grid] d: axis is empty" in err
    assert not out.exists()


@pytest.mark.parametrize("options, message", [
    (["--workers", "0"], "--workers must be an integer >= 1"),
    (["--dask-local", "0"], "--dask-local must be an integer >= 1"),
])
def test_cli_refuses_bad_executor_choice_before_touching_the_store(tmp_path, capsys, options,
                                                                   message):
    out = tmp_path / "out"
    assert main(["sweep", "run", str(write(tmp_path, SMALL)), "--out", str(out)] + options) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_cell_kinds_are_functions_and_cell_identity_is_stable():
    from rftheory import pipeline
    from rftheory.sweep import CELL_KINDS, cell_key

    assert CELL_KINDS["reconstruct"].function is pipeline.reconstruction_cell
    assert CELL_KINDS["label_fit"].function is pipeline.label_fit_cell
    # The key of a cell of examples/law_small.toml, as a store written by rftheory 0.1.0 before
    # the sweep became a package holds it: stores written before stay readable and resumable.
    params = ('{"activation":"relu","d":5,"data":"sphere","max_steps":1000,"n":4,"p":5,'
              '"seed":0}')
    assert cell_key("reconstruct", params) == \
        "6e4a91cadccf01dcfb3bfc550df99d53bf3ef703488e1c1c2bc69ec01b9d96a8"
    spec = load_spec(ROOT / "examples" / "law_small.toml")
    assert cell_key("reconstruct", params) in {c.key for c in spec.cells()}


def test_example_sweep_file_is_valid():
    spec = load_spec(ROOT / "examples" / "law_small.toml")
    assert spec.cell == "reconstruct" and len(list(spec.cells())) == 36


# -- running and the store ----------------------------------------------------------------------

def test_run_report_and_figure(tmp_path):
    spec = load_spec(write(tmp_path, SMALL))
    out = tmp_path / "out"
    run = run_sweep(spec, out, executor=threads_executor())
    assert (run.total, run.computed, run.errors) == (8, 8, 0)
    report = sweep_report(out)
    assert (report["ok"], report["pending"], report["corrupt"]) == (8, 0, 0)
    groups = {(g["params"]["activation"], g["params"]["p"]): g for g in report["groups"]}
    assert set(groups) == {("relu", 4), ("tanh", 4), ("relu", 16), ("tanh", 16)}
    for (activation, p), group in groups.items():
        assert group["seeds"] == 2 and group["x"] == p / 8  # p/n for label_fit
        residual = group["stats"]["train_residual"]["max"]
        # p < n: 8 labels cannot be fit by 4 features; p = 2n: fit to rounding (n·ε·cond ≪ 1e-8)
        assert residual > 0.1 if p < 8 else residual < 1e-8
    json.dumps(report)  # the report is plain JSON
    written = plot_sweep_report(report, tmp_path / "fig.png")
    assert [p.suffix for p in written] == [".png", ".pdf"] and all(p.stat().st_size for p in written)


def test_report_counts_failure_kinds_of_reconstructions(tmp_path):
    # d = n = 3: below the count (p = 0.5·dn) every run reaches a spurious zero of the loss;
    # with a 3-step budget at 10·dn the descent is unfinished (loss far above 1e-10)
    spec = load_spec(write(tmp_path, """
[sweep]
cell = "reconstruct"
name = "kinds"
seeds = 2

[grid]
activation = ["relu+tanh"]
p_mult = [0.5, 10.0]
max_steps = [3, 2000]

[fixed]
d = 3
n = 3
"""))
    out = tmp_path / "out"
    run_sweep(spec, out, executor=threads_executor())
    report = sweep_report(out)
    kinds = {(g["params"]["p"] > 9, g["params"]["max_steps"]): g["kinds"] for g in report["groups"]}
    assert kinds[(False, 2000)] == {"success": 0, "spurious": 2, "unfinished": 0}
    assert kinds[(True, 3)]["unfinished"] == 2
    assert kinds[(True, 2000)]["success"] == 2
    written = plot_sweep_report(report, tmp_path / "fig.png")
    assert all(p.stat().st_size for p in written)


def test_report_does_not_depend_on_the_order_cells_finished(tmp_path):
    # Three seeds so that a mean has two additions whose order could change its last bit.
    spec = load_spec(write(tmp_path, SMALL.replace("seeds = 2", "seeds = 3")))
    out = tmp_path / "out"
    run_sweep(spec, out, executor=threads_executor())
    reversed_out = tmp_path / "reversed"
    reversed_out.mkdir()
    with sqlite3.connect(out / STORE_FILE) as src, \
            sqlite3.connect(reversed_out / STORE_FILE) as dst:
        src.backup(dst)
        rows = dst.execute("SELECT * FROM cells ORDER BY rowid DESC").fetchall()
        dst.execute("DELETE FROM cells")
        dst.executemany(f"INSERT INTO cells VALUES ({', '.join('?' * len(rows[0]))})", rows)
    forward, backward = sweep_report(out), sweep_report(reversed_out)
    assert [g["stats"] for g in forward["groups"]] == [g["stats"] for g in backward["groups"]]


def test_cell_errors_are_stored_and_retried_only_when_asked(tmp_path):
    text = SMALL.replace('[fixed]', '[fixed]\nlabels = "bogus"')
    spec = load_spec(write(tmp_path, text))
    out = tmp_path / "out"
    run = run_sweep(spec, out, executor=threads_executor())
    assert run.errors == 8
    report = sweep_report(out)
    assert report["errors"] == 8 and "labels must be" in report["error_samples"][0]["error"]
    assert run_sweep(spec, out, resume=True, executor=threads_executor()).computed == 0
    again = run_sweep(spec, out, resume=True, retry_errors=True, executor=threads_executor())
    assert again.computed == 8


def test_existing_store_needs_resume_and_the_same_sweep(tmp_path):
    spec = load_spec(write(tmp_path, SMALL))
    out = tmp_path / "out"
    run_sweep(spec, out, executor=threads_executor())
    with pytest.raises(SweepStoreError, match="pass --resume"):
        run_sweep(spec, out, executor=threads_executor())
    changed = load_spec(write(tmp_path, SMALL.replace("n = 8", "n = 9"), "changed.toml"))
    with pytest.raises(SweepStoreError, match=r"different sweep.*\[fixed\] n"):
        run_sweep(changed, out, resume=True, executor=threads_executor())
    with pytest.raises(SweepStoreError, match="different sweep"):
        plan_sweep(changed, out, resume=True)
    # growing the grid (one more seed, one more p) resumes and computes only the new cells
    grown = load_spec(write(tmp_path, SMALL.replace("seeds = 2", "seeds = 3")
                            .replace("p = [4, 16]", "p = [4, 16, 32]"), "grown.toml"))
    assert plan_sweep(grown, out, resume=True)["planned"] == 18 - 8
    run = run_sweep(grown, out, resume=True, executor=threads_executor())
    assert (run.total, run.already_done, run.computed) == (18, 8, 10)
    assert sweep_report(out)["total_cells"] == 18


def test_one_writer_at_a_time(tmp_path):
    with SweepStore.open_writer(tmp_path):
        with pytest.raises(SweepStoreError, match="another process is writing"):
            SweepStore.open_writer(tmp_path)
    SweepStore.open_writer(tmp_path).close()  # released with the first


def _tamper_payload(db, key):
    db.execute("UPDATE cells SET payload = replace(payload, '\"gram_rank\":', '\"gram_rank\":1') "
               "WHERE cell_key = ?", (key,))


def _truncate_payload(db, key):  # what a half-written record would look like
    db.execute("UPDATE cells SET payload = substr(payload, 1, 20) WHERE cell_key = ?", (key,))


def _tamper_params(db, key):
    db.execute("UPDATE cells SET params = replace(params, '\"p\":', '\"p\":1') WHERE cell_key = ?",
               (key,))


def _payload_as_blob(db, key):
    db.execute("UPDATE cells SET payload = CAST(payload AS BLOB) WHERE cell_key = ?", (key,))


@pytest.mark.parametrize("tamper", [_tamper_payload, _truncate_payload, _tamper_params,
                                    _payload_as_blob])
def test_corrupted_record_is_detected_and_rerun(tmp_path, tamper):
    spec = load_spec(write(tmp_path, SMALL))
    out = tmp_path / "out"
    run_sweep(spec, out, executor=threads_executor())
    reference = comparable_results(out)
    victim = sorted(reference)[3]
    with contextlib.closing(sqlite3.connect(out / STORE_FILE)) as db, db:
        tamper(db, victim)
    report = sweep_report(out)
    assert (report["corrupt"], report["ok"]) == (1, 7)
    assert plan_sweep(spec, out, resume=True)["planned"] == 1
    run = run_sweep(spec, out, resume=True, executor=threads_executor())
    assert (run.computed, run.corrupt_recomputed) == (1, 1)
    assert comparable_results(out) == reference
    assert sweep_report(out)["corrupt"] == 0


def test_damaged_file_is_refused(tmp_path):
    spec = load_spec(write(tmp_path, SMALL))
    out = tmp_path / "out"
    run_sweep(spec, out, executor=threads_executor())
    path = out / STORE_FILE
    # fold the WAL back so every row lives in the main file
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(path.read_bytes())
    page = 4096
    assert len(raw) >= 3 * page
    raw[page + 16: 3 * page] = b"\xa5" * (2 * page - 16)  # scribble over pages 2-3, keep header
    path.write_bytes(bytes(raw))
    with pytest.raises(SweepStoreError):
        sweep_report(out)
    with pytest.raises(SweepStoreError):
        run_sweep(spec, out, resume=True, executor=threads_executor())


# -- executors: local processes, SIGKILL + resume, dask ----------------------------------------

KILL = """
[sweep]
cell = "label_fit"
seeds = 6
[grid]
activation = ["relu", "tanh", "relu+tanh"]
p = [3000, 6000]
[fixed]
d = 20
n = 40
"""


def test_sigkill_mid_run_then_resume_equals_uninterrupted_run(tmp_path):
    sweep_file = write(tmp_path, KILL)
    total = len(list(load_spec(sweep_file).cells()))
    killed = tmp_path / "killed"
    command = [sys.executable, "-m", "rftheory.cli", "sweep", "run", str(sweep_file), "--out",
               str(killed), "--workers", "2", "--no-progress", "--no-figures"]
    # its own session, so the collecting process, forkserver and workers die together
    proc = subprocess.Popen(command, cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    try:
        while stored_rows(killed / STORE_FILE) < 3:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the sweep stored no cells in 120 s"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = comparable_results(killed)
    assert 3 <= len(before) < total, "killed too late to test a resume"
    with SweepStore.open_reader(killed) as store:
        runs = store.runs()
        first_run_rows = {k: c.run_id for k, c in store.scan().cells.items()}
    assert [r["status"] for r in runs] == ["interrupted"]  # recorded running, its writer is gone

    assert main(["sweep", "run", str(sweep_file), "--out", str(killed), "--workers", "2",
                 "--resume", "--no-progress", "--no-figures", "--json"]) == 0
    resumed = comparable_results(killed)
    with SweepStore.open_reader(killed) as store:
        cells = store.scan().cells
        runs = store.runs()
    # nothing finished before the kill was recomputed: same rows, same run, same numbers
    assert all(cells[k].run_id == first_run_rows[k] for k in first_run_rows)
    assert {k: resumed[k] for k in before} == before
    assert runs[-1]["status"] == "finished" and runs[-1]["computed"] == total - len(before)

    uninterrupted = tmp_path / "uninterrupted"
    run_sweep(load_spec(sweep_file), uninterrupted, workers=2)
    assert resumed == comparable_results(uninterrupted)  # bit for bit, timing left out


def test_dask_local_cluster_runs_a_sweep_with_the_same_numbers(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    spec = parse_spec({"sweep": {"cell": "label_fit", "seeds": 2},
                       "grid": {"activation": ["tanh", "relu+tanh"]}, "fixed": SENSITIVE})
    from threadpoolctl import threadpool_limits

    # processes=False keeps the test fast: the workers are threads of this process, which share
    # its BLAS pool, so the BLAS threads are pinned here, in the main thread (see
    # limit_blas_threads); the process-pool tests check the workers' own pinning
    with threadpool_limits(limits=1), distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        run = run_sweep(spec, tmp_path / "dask", dask_scheduler=cluster.scheduler_address)
    assert run.computed == 4 and run.executor.startswith("dask scheduler")
    with SweepStore.open_reader(tmp_path / "dask") as store:
        cells = store.scan().cells.values()
    assert all(c.status == "ok" for c in cells)
    # the same cells computed directly in this process with one BLAS thread give the same bits
    with threadpool_limits(limits=1):
        for cell in cells:
            assert json.loads(canonical_json(label_fit_cell(**cell.params))) == cell.result


def test_cells_are_deterministic_across_worker_processes(tmp_path):
    # SENSITIVE: sizes measured to give other last bits with 2 OpenBLAS threads than with 1
    forward = parse_spec({"sweep": {"cell": "label_fit", "seeds": 2},
                          "grid": {"activation": ["tanh", "relu+tanh"]}, "fixed": SENSITIVE})
    run_sweep(forward, tmp_path / "two", workers=2, max_in_flight=4)
    with SweepStore.open_reader(tmp_path / "two") as store:
        cells = store.scan().cells.values()
    assert len({c.worker for c in cells}) == 2, "both workers should have run cells"
    # the cells in reverse order on one worker: each runs on another process or after other
    # cells, and every number is the same
    reverse = parse_spec({"sweep": {"cell": "label_fit"},
                          "grid": {"activation": ["relu+tanh", "tanh"], "seed": [1, 0]},
                          "fixed": SENSITIVE})
    run_sweep(reverse, tmp_path / "one", workers=1)
    assert comparable_results(tmp_path / "one") == comparable_results(tmp_path / "two")
    # and equal to a direct computation with one BLAS thread: the workers pinned their BLAS
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        for cell in cells:
            assert json.loads(canonical_json(label_fit_cell(**cell.params))) == cell.result


def test_cli_report_json_and_dry_run(tmp_path, capsys):
    spec_path = write(tmp_path, SMALL)
    out = tmp_path / "out"
    assert main(["sweep", "run", str(spec_path), "--out", str(out), "--dry-run", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["planned"] == 8
    assert not out.exists()
    run_sweep(load_spec(spec_path), out, executor=threads_executor())
    assert main(["sweep", "report", str(out), "--json", "--plot", str(tmp_path / "law")]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["ok"] == 8 and len(payload["figures"]) == 2
    assert main(["sweep", "report", str(out), "--no-figures"]) == 0
    table = capsys.readouterr().out
    assert "train_residual (median [min, max])" in table and "relu" in table
    assert main(["sweep", "report", str(tmp_path / "nowhere")]) == 2
    assert "no sweep store" in capsys.readouterr().err


def test_canonical_json_is_order_and_format_independent():
    assert canonical_json({"b": 1.0, "a": [1, 2]}) == canonical_json({"a": [1, 2], "b": 1.0})
    assert canonical_json({"x": 0.1 + 0.2}) == '{"x":0.30000000000000004}'


@pytest.mark.slow
def test_cli_dask_local_cluster_of_processes(tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    spec_path = write(tmp_path, SMALL)
    assert main(["sweep", "run", str(spec_path), "--out", str(tmp_path / "dask"),
                 "--dask-local", "2", "--no-progress", "--no-figures", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["run"]["computed"] == 8 and "LocalCluster" in payload["run"]["executor"]
    run_sweep(load_spec(spec_path), tmp_path / "local", workers=1)
    assert comparable_results(tmp_path / "dask") == comparable_results(tmp_path / "local")


# -- the definition of V, and runs whose writer is gone -----------------------------------------

def _set_meta(out: Path, key: str, value: str | None) -> None:
    with contextlib.closing(sqlite3.connect(out / STORE_FILE)) as db:
        if value is None:
            db.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
        db.commit()


@pytest.mark.parametrize("old_v", [None, "some-other-v/7"])
def test_a_store_of_another_v_is_not_resumed_and_its_report_says_which_v(tmp_path, capsys,
                                                                           old_v):
    from rftheory.features import V_DEFINITION
    from rftheory.sweep import LEGACY_V_DEFINITION

    spec_path = write(tmp_path, SMALL)
    out = tmp_path / "out"
    run_sweep(load_spec(spec_path), out, executor=threads_executor())
    with SweepStore.open_reader(out) as store:
        assert store.v_definition() == (V_DEFINITION, True)  # a new store records it
    _set_meta(out, "v_definition", old_v)  # None: a store written before V was recorded
    shown = old_v or LEGACY_V_DEFINITION
    with pytest.raises(SweepStoreError, match="use a new --out directory"):
        run_sweep(load_spec(spec_path), out, resume=True, executor=threads_executor())
    assert main(["sweep", "run", str(spec_path), "--out", str(out), "--resume",
                 "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"V = {shown}" in err[0] and V_DEFINITION in err[0]
    report = sweep_report(out)
    assert report["v_definition"] == {"name": shown, "recorded": old_v is not None,
                                      "current": False, "this_rftheory": V_DEFINITION}
    assert main(["sweep", "report", str(out), "--no-figures"]) == 0
    assert f"cells computed with V = {shown}" in capsys.readouterr().out


def test_a_run_whose_writer_is_gone_reads_interrupted(tmp_path, capsys):
    spec_path = write(tmp_path, SMALL)
    out = tmp_path / "out"
    run_sweep(load_spec(spec_path), out, executor=threads_executor())
    with SweepStore.open_writer(out) as store:
        run_id = store.start_run("test", 3)
        assert store.runs()[-1]["status"] == "running"  # its writer (this store) is alive
    # closed without finishing: as after a SIGKILL, the writer lock is free
    with SweepStore.open_reader(out) as store:
        assert store.runs()[-1]["status"] == "interrupted" and not store.writer_alive()
    assert main(["sweep", "report", str(out), "--no-figures"]) == 0
    assert "last run: interrupted (pid" in capsys.readouterr().out
    with SweepStore.open_writer(out) as store:  # the next writer records it for good
        pass
    with contextlib.closing(sqlite3.connect(out / STORE_FILE)) as db:
        assert db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone() == \
            ("interrupted",)


def test_cells_are_generated_lazily_and_membership_matches_generation():
    spec = parse_spec({"sweep": {"cell": "reconstruct", "seeds": 2},
                       "grid": {"activation": ["relu"], "d": [5, 10], "n": [4],
                                "p_mult": [0.5, 0.51, 1.0, 2.0]},
                       "fixed": {"max_steps": 10}})
    cells = list(spec.cells())
    keys = [c.key for c in cells]
    assert len(keys) == len(set(keys)) == spec.count_cells() < spec.grid_size
    for cell in cells:
        assert spec.contains(cell.kind, dict(cell.params))
    other = dict(cells[0].params, p=cells[0].params["p"] + 1)
    assert not spec.contains(cells[0].kind, other)
    assert not spec.contains("label_fit", dict(cells[0].params))
    assert not spec.contains(cells[0].kind, dict(cells[0].params, seed=7))


def test_cells_record_the_code_that_stored_them_and_a_mixed_store_is_named(tmp_path, capsys,
                                                                           monkeypatch):
    # The package version does not change when an editable checkout's code does: the store
    # records runtime.code_version() (version + digest of the package's code) with every cell,
    # and a store resumed after a change of the code says that it mixes two.
    from rftheory.runtime import code_version
    from rftheory.sweep import store as store_module

    spec_path = write(tmp_path, SMALL)
    out = tmp_path / "out"
    run_sweep(load_spec(spec_path), out, executor=threads_executor())
    report = sweep_report(out)
    assert report["versions"] == [code_version()] and "+src." in code_version()
    assert main(["sweep", "report", str(out), "--no-figures"]) == 0
    assert "versions of the code" not in capsys.readouterr().out
    victim = sorted(comparable_results(out))[0]
    with contextlib.closing(sqlite3.connect(out / STORE_FILE)) as db, db:
        _truncate_payload(db, victim)  # recomputed on resume, by "other" code
    monkeypatch.setattr(store_module, "code_version", lambda: "0+src.000000000000")
    run_sweep(load_spec(spec_path), out, resume=True, executor=threads_executor())
    assert sweep_report(out)["versions"] == sorted([code_version(), "0+src.000000000000"])
    assert main(["sweep", "report", str(out), "--no-figures"]) == 0
    assert "2 versions of the code" in capsys.readouterr().out
