"""The report of a sweep store: statistics over seeds per parameter group, the table's data
and the figure (:func:`sweep_report`, :func:`plot_sweep_report`), readable while a run writes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import RFTheoryError
from ..features import V_DEFINITION
from ..metrics import FAILURE_KINDS, run_kind
from .cells import CELL_KINDS
from .spec import canonical_json
from .store import SweepStore

__all__ = ["TIMING_KEYS", "sweep_report", "plot_sweep_report", "comparable_results"]

#: Result keys left out when two runs' numbers are compared (wall-clock time is not deterministic).
TIMING_KEYS = frozenset({"seconds"})

_X_AXES = {
    "p_over_dn": (r"$p/(dn)$", lambda p: p["p"] / (p["d"] * p["n"])),
    "p_over_n": (r"$p/n$", lambda p: p["p"] / p["n"]),
}


def _stats(values: list[float]) -> dict:
    import numpy as np

    a = np.asarray(values, dtype=float)
    finite = a[np.isfinite(a)]
    if finite.size == 0:
        return {"count": int(a.size), "finite": 0, "mean": math.nan, "std": math.nan,
                "median": math.nan, "min": math.nan, "max": math.nan}
    return {"count": int(a.size), "finite": int(finite.size), "mean": float(finite.mean()),
            "std": float(finite.std(ddof=1)) if finite.size > 1 else 0.0,
            "median": float(np.median(finite)), "min": float(finite.min()),
            "max": float(finite.max())}


def sweep_report(out_dir: str | Path, metrics: Iterable[str] | None = None) -> dict:
    """Aggregate a store over seeds: the JSON-serialisable result behind the table and figure.

    Rows with the same parameters except ``seed`` form a group; every numeric result key
    (booleans count as 0/1) gets count, mean, std (ddof=1), median, min and max over the group's
    successful cells, NaN/inf left out of the statistics (``finite`` says how many remained).
    Groups are ordered by the varying parameters, then by the x coordinate (p/(dn) or p/n);
    within a group the values are taken in seed order, so the statistics are the same however
    the cells were scheduled. Works on a store that is still being written (a read-only snapshot).

    Parameters
    ----------
    out_dir : str or Path
        The sweep's directory (opened read-only).
    metrics : iterable of str, optional
        Headline result keys (default: the cell kind's :class:`~rftheory.sweep.Metric` names).

    Returns
    -------
    dict
        ``store``, ``name``, ``cell``, ``spec``, the counts (``total_cells``, ``ok``,
        ``errors``, ``corrupt``, ``pending``), ``versions``, ``v_definition``, ``x``,
        ``metrics`` (with their labels and log flags), ``varying``, ``line_keys``, ``groups``
        (per group: ``params``, ``line``, ``x``, ``seeds``, ``errors``, ``stats``, and
        ``kinds`` — for reconstruction cells the count of each of
        :data:`rftheory.metrics.FAILURE_KINDS` among its seeds, else None),
        ``error_samples`` and ``runs``.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If a requested metric is in no result.
    """
    with SweepStore.open_reader(out_dir) as store:
        spec = store.spec() or {}
        total = int(store.meta("total_cells") or 0)
        scan = store.scan()
        runs = store.runs()
        path = str(store.path)
        v_name, v_recorded = store.v_definition()
    kind_name = spec.get("cell")
    kind = CELL_KINDS.get(kind_name)
    headline = list(metrics) if metrics else [m.name for m in kind.metrics] if kind else []
    x_name = kind.x if kind else None
    groups: dict[str, dict] = {}
    error_samples = []
    # In seed order, not storage order (the order cells finished in): the statistics' last bits
    # then do not depend on which worker was faster.
    for stored in sorted(scan.cells.values(), key=lambda c: (c.seed is None, c.seed or 0, c.key)):
        base = {k: v for k, v in stored.params.items() if k != "seed"}
        group = groups.setdefault(canonical_json(base), {"params": base, "seeds": [],
                                                         "errors": 0, "values": {}})
        if stored.status == "error":
            group["errors"] += 1
            if len(error_samples) < 10:
                error_samples.append({"params": stored.params, "error": stored.result.get("error")})
            continue
        group["seeds"].append(stored.seed)
        if {"rho_abs", "final_loss"} <= set(stored.result) and \
                isinstance(stored.result["rho_abs"], (int, float)) and \
                math.isfinite(stored.result["rho_abs"]):
            # every reconstruction classified: success, spurious interpolant (loss at the
            # tolerance, ρ large) or unfinished descent (loss above it) — rftheory.metrics
            outcome = run_kind(stored.result)
            counts = group.setdefault("kinds", dict.fromkeys(FAILURE_KINDS, 0))
            counts[outcome] += 1
        for name, value in stored.result.items():
            # numbers only (bools count 0/1); parameters echoed back by the cell are not results
            if isinstance(value, (int, float)) and name not in TIMING_KEYS \
                    and name not in stored.params:
                group["values"].setdefault(name, []).append(float(value))
    x_of = None
    if x_name is not None:
        label, x_of = _X_AXES[x_name]
    all_params = [g["params"] for g in groups.values()]
    varying = sorted({k for p in all_params for k in p
                      if len({canonical_json(q.get(k)) for q in all_params}) > 1})
    line_keys = [k for k in varying if k != "p"]
    rows = []
    for group in groups.values():
        params = group["params"]
        x = x_of(params) if x_of is not None and {"p", "d", "n"} <= set(params) else None
        rows.append({"params": params, "line": {k: params.get(k) for k in line_keys}, "x": x,
                     "seeds": len(group["seeds"]), "errors": group["errors"],
                     "kinds": group.get("kinds"),
                     "stats": {name: _stats(v) for name, v in sorted(group["values"].items())}})
    rows.sort(key=lambda r: (canonical_json(r["line"]), r["x"] if r["x"] is not None else 0.0,
                             canonical_json(r["params"])))
    missing = [m for m in headline if rows and not any(m in r["stats"] for r in rows)]
    if missing and metrics:
        raise RFTheoryError(f"metric(s) {', '.join(missing)} not found in the store's results")
    return {
        "store": path, "name": spec.get("name", ""), "cell": kind_name, "spec": spec,
        "total_cells": total, "ok": scan.ok, "errors": scan.errors, "corrupt": len(scan.corrupt),
        "pending": max(0, total - len(scan.cells)),
        "versions": sorted({c.version for c in scan.cells.values()}),
        "v_definition": {"name": v_name, "recorded": v_recorded,
                         "current": v_name == V_DEFINITION, "this_rftheory": V_DEFINITION},
        "x": None if x_name is None else {"name": x_name, "label": label},
        "metrics": headline, "metric_labels": {m.name: m.label for m in kind.metrics} if kind else {},
        "metric_log": {m.name: m.log for m in kind.metrics} if kind else {},
        "varying": varying, "line_keys": line_keys, "groups": rows, "error_samples": error_samples,
        "runs": runs,
    }


def plot_sweep_report(report: Mapping[str, Any], path: str | Path) -> list[Path]:
    """Draw the report's headline metrics against p/(dn) (or p/n), aggregated over seeds.

    One panel per headline metric, one line per combination of the varying parameters other
    than p; a dashed line marks the threshold x = 1. Every panel shows the median over seeds with
    min–max whiskers (the statistic of ``rftheory sweep report``'s table too), which stay inside
    the data's range; residuals and eigenvalues are on log axes, ρ on a linear one. Writes
    ``path`` as PNG and PDF (a .png/.pdf suffix is replaced) and returns both paths.

    Parameters
    ----------
    report : mapping
        A result of :func:`sweep_report`.
    path : str or Path
        Where to write.

    Returns
    -------
    list of Path
        The PNG and PDF written.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If the report's cell kind has no x axis.
    """
    if report.get("x") is None:
        raise RFTheoryError(f"cell kind {report.get('cell')!r} has no x axis to plot against")
    points = [r for r in report["groups"] if r["x"] is not None]
    if not points:
        raise RFTheoryError("the store holds no finished cell to plot yet")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    base = Path(path)
    base = base.with_suffix("") if base.suffix.lower() in (".png", ".pdf") else base
    metrics = report["metrics"]
    from ..plotting import paper_figure, paper_style

    with paper_style():
        fig, axes = paper_figure(2 if len(metrics) > 1 else 1, ncols=len(metrics), squeeze=False)
        lines: dict[str, list[dict]] = {}
        for row in points:
            lines.setdefault(canonical_json(row["line"]), []).append(row)
        for ax, metric in zip(axes[0], metrics):
            log = bool(report["metric_log"].get(metric))
            for rows in lines.values():
                rows = [r for r in rows if r["stats"].get(metric, {}).get("finite")]
                if not rows:
                    continue
                stats = [r["stats"][metric] for r in rows]
                # One statistic on every axis (and in the CLI's table): the median with min–max
                # whiskers, which never leave the data's range (mean ± std went below 0 for ρ).
                centre = [s["median"] for s in stats]
                spread = [[s["median"] - s["min"] for s in stats],
                          [s["max"] - s["median"] for s in stats]]
                label = ", ".join(f"{k}={v}" for k, v in rows[0]["line"].items()) or None
                bars = ax.errorbar([r["x"] for r in rows], centre, yerr=spread, marker="o", ms=3,
                                   capsize=2, label=label)
                if metric.startswith("rho"):  # failures by kind: × spurious, ○ unfinished
                    colour = bars[0].get_color()
                    for r, c in zip(rows, centre):
                        k = r.get("kinds") or {}
                        if k.get("spurious"):
                            ax.plot(r["x"], c, "x", color=colour, ms=6, mew=0.8)
                        if k.get("unfinished"):
                            ax.plot(r["x"], c, "o", mfc="none", mec=colour, ms=7, mew=0.6)
            ax.axvline(1.0, color="0.6", ls="--", lw=0.8)
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            if log:
                ax.set_yscale("log")
            ax.set_xlabel(report["x"]["label"])
            ax.set_ylabel(report["metric_labels"].get(metric, metric))
            ax.set_title("median, min–max over seeds"
                         + ("; × spurious, ○ unfinished runs" if metric.startswith("rho") else ""))
            if ax.get_legend_handles_labels()[0] and len(lines) > 1:
                ax.legend()
        seeds = max(r["seeds"] for r in points)
        fig.suptitle(f"{report.get('name') or report.get('cell')}: {report.get('cell')} cells, "
                     f"up to {seeds} seeds per point")
        written = []
        for suffix in (".png", ".pdf"):
            out = base.with_suffix(suffix)
            out.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(out, dpi=150)
            written.append(out)
        plt.close(fig)
    return written


def comparable_results(out_dir: str | Path) -> dict[str, tuple[str, dict]]:
    """``{cell key: (status, result without timing keys)}`` of a store — to compare two runs.

    Parameters
    ----------
    out_dir : str or Path
        The sweep's directory (opened read-only).

    Returns
    -------
    dict of str to tuple of (str, dict)
        Per cell key: its status and its result without :data:`~rftheory.sweep.TIMING_KEYS`
        (for an error: only its message).
    """
    with SweepStore.open_reader(out_dir) as store:
        scan = store.scan()
    out = {}
    for key, cell in scan.cells.items():
        result = {k: v for k, v in cell.result.items() if k not in TIMING_KEYS}
        if cell.status == "error":
            result = {"error": cell.result.get("error")}
        out[key] = (cell.status, result)
    return out
