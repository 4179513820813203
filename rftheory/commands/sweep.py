"""``rftheory sweep run FILE``, ``rftheory sweep report DIR`` and ``rftheory sweep export DIR FILE``.

``run`` validates the sweep file, runs the cells not yet in the store (local processes by
default, a dask cluster with ``--dask-scheduler``/``--dask-local``), then prints the summary
table and redraws the figure. ``report`` rebuilds both from the store at any time, also while a
run is still writing it. The design (store, resume policy) is in :mod:`rftheory.sweep`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from ..output import format_table, print_json
from ._common import (add_limit_options, deadline, figure_paths, limits, output_dir, output_file,
                      print_result, produced_by, progress_bar_wanted)
from ._rules import integer_type, workers as worker_count

#: Where ``run`` puts a sweep's store when ``--out`` is not given: ``results/sweeps/<file stem>``.
DEFAULT_OUT_ROOT = Path("results") / "sweeps"


def _number(value: float | None) -> str:
    return "nan" if value is None or not math.isfinite(value) else f"{value:.3g}"



def report_table(report: dict) -> str:
    """The report as text: a header of counts, then one row per parameter group."""
    x = report.get("x")
    lines = [f"sweep {report.get('name') or '(unnamed)'}: cell {report['cell']}, "
             f"{report['total_cells']} cells — {report['ok']} ok, {report['errors']} failed, "
             f"{report['pending']} pending" + (f", {report['corrupt']} corrupt (rerun with "
                                               "--resume)" if report["corrupt"] else "")]
    if len(report["versions"]) > 1:
        lines.append(f"note: cells stored by {len(report['versions'])} versions of the code "
                     f"({', '.join(report['versions'])}): the store was resumed after a change "
                     f"of the code (a version without '+src.' predates the digest)")
    v = report.get("v_definition")
    if v and not v.get("current"):
        lines.append(f"note: cells computed with V = {v['name']}"
                     + ("" if v["recorded"] else " (not recorded: a store written before V was)")
                     + f"; this rftheory draws V = {v['this_rftheory']}, so new cells go to a "
                       "new directory")
    last = (report.get("runs") or [None])[-1]
    if last is not None and last["status"] != "finished":
        lines.append(f"last run: {last['status']} (pid {last['pid']} on {last['host']}, started "
                     f"{last['started_at']}, {last['computed']} of {last['planned']} cells "
                     "computed)" + (" — rerun `sweep run` with --resume to continue"
                                    if last["status"] == "interrupted" else ""))
    if not report["groups"]:
        return "\n".join(lines + ["(no finished cells yet)"])
    keys = list(report["line_keys"])
    headers = keys + (["p", x["label"].strip("$").replace("\\", "")] if x else []) + ["seeds"]
    headers += [f"{m} (median [min, max])" for m in report["metrics"]]
    with_kinds = any(g.get("kinds") for g in report["groups"])
    if with_kinds:  # failed reconstructions by kind (rftheory.metrics.FAILURE_KINDS)
        headers.append("spurious/unfinished")
    with_errors = any(g["errors"] for g in report["groups"])
    if with_errors:
        headers.append("failed")
    rows = []
    for group in report["groups"]:
        row: list[Any] = [group["line"][k] for k in keys]
        if x:
            row += [group["params"].get("p", ""), "" if group["x"] is None else f"{group['x']:.3g}"]
        row.append(group["seeds"])
        for metric in report["metrics"]:
            stats = group["stats"].get(metric)
            row.append("—" if not stats or not stats.get("finite") else
                       f"{_number(stats['median'])} [{_number(stats['min'])}, {_number(stats['max'])}]")
        if with_kinds:
            k = group.get("kinds") or {}
            row.append(f"{k.get('spurious', 0)}/{k.get('unfinished', 0)}" if k else "")
        if with_errors:
            row.append(group["errors"])
        rows.append(row)
    lines.append(format_table(headers, rows))
    for sample in report["error_samples"][:3]:
        lines.append(f"failed: {sample['params']}: {sample['error']}")
    return "\n".join(lines)


def _figure_base(report: dict, out_dir: Path, plot: str | None) -> Path | None:
    if plot is not None:
        return Path(plot)
    if report.get("x") is None or not report["metrics"]:
        return None
    return out_dir / f"{report['metrics'][0]}_vs_{report['x']['name']}"


def _report_outputs(out_dir: Path, args: argparse.Namespace) -> tuple[dict, list[Path]]:
    from ..sweep import plot_sweep_report, sweep_report

    report = sweep_report(out_dir, metrics=args.metric or None)
    written: list[Path] = []
    base = None if args.no_figures else _figure_base(report, out_dir, args.plot)
    if base is not None and any(g["x"] is not None and g["seeds"] for g in report["groups"]):
        written = plot_sweep_report(report, base)
    return report, written


#: The store's file name (rftheory.sweep.STORE_FILE, repeated so that a missing store is refused
#: before the sweep package — and numpy and sympy with it — is imported; tests check the two).
STORE_FILE = "sweep.sqlite"


def _run(args: argparse.Namespace) -> int:
    figure_paths(args.plot)
    guard = limits(args)
    stop_at = deadline(args)
    worker_count(args.workers, "--workers")  # the one rule; dask's options are checked below
    worker_count(args.dask_local, "--dask-local")
    if args.time_probe and not args.dry_run:
        from ..errors import RFTheoryError

        raise RFTheoryError("--time-probe goes with --dry-run")
    if not Path(args.file).is_file():  # the rest of the file's checks are load_spec's
        from ..errors import RFTheoryError

        raise RFTheoryError(f"sweep file not found: {args.file}" if not Path(args.file).exists()
                            else f"sweep file {args.file}: not a file")
    out_dir = output_dir(args.out, default=DEFAULT_OUT_ROOT / Path(args.file).stem)

    from ..budget import format_bytes
    from ..sweep import (SweepAbortedError, check_executor_choice, load_spec, plan_sweep,
                         run_sweep)

    check_executor_choice(workers=args.workers, dask_scheduler=args.dask_scheduler,
                          dask_local=args.dask_local)
    spec = load_spec(args.file)  # every check of the file happens before anything runs
    if args.dry_run:
        slots = None if args.dask_scheduler else (args.workers or args.dask_local)
        plan = plan_sweep(spec, out_dir, resume=args.resume, retry_errors=args.retry_errors,
                          slots=slots, **guard)
        if args.time_probe:
            plan["time_probe"] = _time_probe(spec, plan["estimate"]["largest_cell"]["params"])
        if args.json:
            print_json({**plan, "produced_by": produced_by(args, {"out": str(out_dir)})})
        else:
            est = plan["estimate"]
            print(f"{plan['total']} cells; {plan['already_done']} already in {plan['store']}; "
                  f"{plan['planned']} to compute" +
                  (f" ({plan['corrupt']} corrupt rows to redo)" if plan["corrupt"] else "")
                  + f"; {est['workers']} worker{'s' if est['workers'] > 1 else ''}; largest "
                    f"cell {est['largest_cell']['job']} ~"
                    f"{format_bytes(est['largest_cell']['peak_bytes'])} of memory; the "
                    f"collector's scan of the store ~{format_bytes(est['scan_bytes'])}")
            probe = plan.get("time_probe")
            if probe:
                print(f"measured on the largest cell: training {probe['fit_seconds']:.2f} s, "
                      f"{probe['seconds_per_step']:.3g} s per step; at most "
                      f"~{probe['upper_bound_seconds']:.0f} s for its budget of "
                      f"{probe['max_steps']} steps (an upper bound at this rate)")
            elif args.time_probe:
                print("no time probe: the sweep's cells are not reconstructions")
        return 0
    progress = progress_bar_wanted(args)
    try:
        run = run_sweep(spec, out_dir, resume=args.resume, retry_errors=args.retry_errors,
                        workers=args.workers, dask_scheduler=args.dask_scheduler,
                        dask_local=args.dask_local, progress=progress, deadline=stop_at,
                        **guard)
    except SweepAbortedError as exc:
        print(f"rftheory sweep run: {exc}", file=sys.stderr)
        return 1
    report, written = _report_outputs(out_dir, args)
    if args.json:
        print_json({"run": run.to_json(), "report": report, "figures": [str(p) for p in written],
                    "produced_by": produced_by(args, {"out": str(out_dir)})})
    else:
        print(f"computed {run.computed} of {run.total} cells ({run.already_done} already stored"
              + (f", {run.corrupt_recomputed} corrupt rows redone" if run.corrupt_recomputed else "")
              + f") on {run.executor} in {run.seconds:.1f} s; store: {run.store}")
        if run.stop_reason == "time_limit":
            left = run.planned - run.computed
            print(f"stopped at the time limit: {left} cells not computed (rerun with --resume "
                  "to compute them)")
        print(report_table(report))
        for path in written:
            print(f"wrote {path}")
    if report["errors"]:
        print(f"rftheory sweep run: {report['errors']} cells failed (their errors are stored; "
              "rerun with --resume --retry-errors to try them again)", file=sys.stderr)
        return 1
    return 0


def _time_probe(spec: Any, largest: dict) -> dict | None:
    """:func:`rftheory.pipeline.time_probe` of the sweep's largest cell when its cells run a
    reconstruction (``reconstruct``, ``law`` at p >= n), else None."""
    from ..pipeline import time_probe
    from ..sweep.spec import p_from_expression

    params = dict(spec.fixed) | dict(largest)
    if "p_mult" in params:
        params["p"] = max(1, round(params.pop("p_mult") * params["d"] * params["n"]))
    elif isinstance(params.get("p"), str):
        params["p"] = p_from_expression(params["p"], d=params["d"], n=params["n"])
    if spec.cell not in ("reconstruct", "law") or params["p"] < params["n"]:
        return None
    activation = next((v[0] for k, v in spec.axes if k == "activation"),
                      params.get("activation", "relu+tanh"))
    return time_probe(activation=activation, d=int(params["d"]), n=int(params["n"]),
                      p=int(params["p"]), n_hat=params.get("n_hat"), method=params.get("method"),
                      max_steps=params.get("max_steps"), data=params.get("data", "sphere"))


def _report(args: argparse.Namespace) -> int:
    figure_paths(args.plot)
    _check_store_directory(args.dir)
    directory = Path(args.dir)
    if args.plot is None and not args.no_figures:  # the figure goes into the store's directory
        output_dir(args.dir, "DIR", must_exist=True)
    report, written = _report_outputs(directory, args)
    print_result(args, report, report_table(report), written)
    return 0


def _check_store_directory(text: str) -> None:
    """A store to read: the directory and its file exist (before the sweep package loads)."""
    from ..errors import RFTheoryError

    if not str(text).strip():
        raise RFTheoryError("DIR: empty path; give the sweep's directory")
    if not Path(text).is_dir():
        raise RFTheoryError(f"no sweep store in {text}: the directory does not exist")
    if not (Path(text) / STORE_FILE).is_file():
        raise RFTheoryError(f"no sweep store in {text} (expected {Path(text) / STORE_FILE})")


def _export(args: argparse.Namespace) -> int:
    _check_store_directory(args.dir)
    output_file(args.file, "FILE")
    from ..sweep import export_store

    done = export_store(args.dir, args.file)
    if args.json:
        print_json(done)
    else:
        print(f"exported {done['cells']} cells ({done['errors']} failed) to {done['path']} "
              f"({done['bytes'] / 1024:.0f} kB)")
    return 0


def handle(args: argparse.Namespace) -> int:
    """Handler: ``sweep run``, ``sweep report`` or ``sweep export``."""
    return {"run": _run, "report": _report, "export": _export}[args.sweep_command](args)


def _figure_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metric", action="append", metavar="NAME",
                        help="result key to tabulate and plot (repeatable; default: the cell "
                             "kind's headline metrics, e.g. rho_abs and train_residual)")
    figure = parser.add_mutually_exclusive_group()
    figure.add_argument("--plot", metavar="FILE",
                        help="figure file (PNG and PDF are both written; default: in the store's "
                             "directory, named after the metric and axis)")
    figure.add_argument("--no-figures", action="store_true", help="skip the figure")
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def register(subparsers: Any) -> None:
    """Add ``sweep run`` and ``sweep report``."""
    parser = subparsers.add_parser(
        "sweep", help="run grids of cells (local processes or dask), resumable; report them",
        description="Sweeps described in a TOML file: every combination of the [grid] axes is "
                    "one cell, stored in SQLite as soon as it finishes.")
    parser.set_defaults(handler=handle)
    sub = parser.add_subparsers(dest="sweep_command", required=True, metavar="ACTION")

    run = sub.add_parser(
        "run", help="run a sweep file's cells that are not stored yet",
        description="Run the cells of a sweep file. Local worker processes by default; "
                    "--dask-scheduler ADDRESS uses a running dask.distributed cluster and "
                    "--dask-local N starts a local one (pip install 'rftheory[cluster]').")
    run.add_argument("file", help="sweep file (TOML): [sweep] cell/seeds, [grid] axes, [fixed]")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--workers", type=integer_type(), metavar="N",
                       help="local worker processes, at most the CPUs available (default: all "
                            "of them)")
    where.add_argument("--dask-scheduler", metavar="ADDRESS",
                       help="address of a dask scheduler, e.g. tcp://10.0.0.5:8786")
    where.add_argument("--dask-local", type=integer_type(), metavar="N",
                       help="start a dask LocalCluster with N worker processes (at most the "
                            "CPUs available)")
    run.add_argument("--out", metavar="DIR",
                     help=f"directory of the store (default: {DEFAULT_OUT_ROOT}/<file stem>)")
    run.add_argument("--resume", action="store_true",
                     help="continue a store: skip stored cells, compute the rest (a sweep file "
                          "may grow its grid, not change it)")
    run.add_argument("--retry-errors", action="store_true",
                     help="with --resume, rerun cells whose stored outcome is an error")
    run.add_argument("--dry-run", action="store_true",
                     help="check the file, the store and the memory, count the cells to "
                          "compute; run nothing")
    run.add_argument("--time-probe", action="store_true",
                     help="with --dry-run: time 2 real optimiser steps of the largest "
                          "reconstruction cell and print that rate times its step budget (an "
                          "upper bound)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    _figure_options(run)
    add_limit_options(run)

    report = sub.add_parser(
        "report", help="summary table and figure of a sweep store (any time, even mid-run)",
        description="Aggregate a store over seeds: median [min, max] of the headline metrics per "
                    "parameter group against p/(dn) (or p/n), and a figure (PNG + PDF).")
    report.add_argument("dir", help="the sweep's directory (holding sweep.sqlite)")
    _figure_options(report)

    export = sub.add_parser(
        "export", help="write a store's cells to a compact .jsonl.gz (to keep in a repository)",
        description="One gzip'd canonical-JSON line per verified cell, sorted by key, the same "
                    "bytes for the same store; readable by rftheory.sweep.read_export (e.g. "
                    "python -m rftheory.claims.law --from-export FILE).")
    export.add_argument("dir", help="the sweep's directory (holding sweep.sqlite)")
    export.add_argument("file", help="the export to write, e.g. cells.jsonl.gz")
    export.add_argument("--json", action="store_true", help="machine-readable output on stdout")
