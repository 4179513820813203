"""The law claim's figures (private to :mod:`rftheory.claims.law`, which exports :func:`plot`).

Drawn from a result dict alone (a run's, or one read back from its JSON). Memory: one figure
at a time (matplotlib, a few MB).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from rftheory.metrics import run_kind
from rftheory.output import save_figure


#: Markers by n (up to 6 distinct n); colours (rftheory.plotting.PALETTE) by d.
_MARKERS = "osD^vP"
_RHO_FLOOR = 1e-7  # ρ of exact reconstructions on log axes


def _styles(per_grid: list[dict[str, Any]]) -> dict[tuple[int, int], dict[str, Any]]:
    """Colour by d, marker and dash by n: a product grid reads as two legends, not twelve."""
    from rftheory.plotting import PALETTE

    ds = sorted({g["d"] for g in per_grid})
    ns = sorted({g["n"] for g in per_grid})
    dashes = ("-", "--", ":", "-.")
    return {(g["d"], g["n"]): dict(color=PALETTE[ds.index(g["d"]) % len(PALETTE)],
                                   marker=_MARKERS[ns.index(g["n"]) % len(_MARKERS)],
                                   ls=dashes[ns.index(g["n"]) % len(dashes)], ms=3, lw=0.9)
            for g in per_grid}


def _legend(ax: Any, per_grid: list[dict[str, Any]], **kwargs: Any) -> None:
    """One legend entry per (d, n) for small grids; for products, colour = d and marker = n."""
    from matplotlib.lines import Line2D

    styles = _styles(per_grid)
    ds = sorted({g["d"] for g in per_grid})
    ns = sorted({g["n"] for g in per_grid})
    if len(per_grid) <= 4:
        handles = [Line2D([], [], **styles[(g["d"], g["n"])]) for g in per_grid]
        labels = [f"d = {g['d']}, n = {g['n']}" for g in per_grid]
    else:
        by_d = {g["d"]: styles[(g["d"], g["n"])]["color"] for g in per_grid}
        by_n = {g["n"]: styles[(g["d"], g["n"])] for g in per_grid}
        handles = [Line2D([], [], color=by_d[d], lw=2) for d in ds] + \
                  [Line2D([], [], color="0.3", marker=by_n[n]["marker"], ls=by_n[n]["ls"], ms=3,
                          lw=0.9) for n in ns]
        labels = [f"d = {d}" for d in ds] + [f"n = {n}" for n in ns]
    ax.legend(handles, labels, **kwargs)


def _median_rho(g: dict[str, Any], variant: str, x: str) -> tuple[list[float], list[float]]:
    return ([r[x] for r in g["rows"]], [max(r[f"median_rho_{variant}"], _RHO_FLOOR) for r in g["rows"]])


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """The claim's figures (PNG + PDF each), drawn in the package's style.

    ``<stem>``: three panels — median ρ against p/(dn) (seeds: dots succeed, × spurious
    interpolants, open circles unfinished descents), P(ρ < 0.1) against p/(dn) with the fitted
    p*_data and its 95 % profile-likelihood interval (a square: a step, width not identified),
    train residual against p/n.
    ``<stem>_collapse``: the data collapse — median ρ of every (d, n) against p/(dn) (left, the
    curves fall on one another if the threshold scales as dn) and against p/n (right, where they
    spread by the range of d). For a compared activation, ``<stem>_<name>`` and
    ``<stem>_<name>_collapse`` in the sign-invariant ρ. Log axes.

    Parameters
    ----------
    result : dict
        A result of :func:`rftheory.claims.law.run` (or read back from its JSON).
    stem : str or Path
        Path of the figures without suffix.

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    from rftheory.plotting import paper_style

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    variant = result["success_variant"]
    panels = [(result["activation"], result["per_grid"], variant, stem, result["seeds"])]
    for name, other in result.get("by_activation", {}).items():
        safe = "".join(ch if ch.isalnum() else "_" for ch in name)
        panels.append((name, other["per_grid"], "sign_invariant",
                       stem.with_name(f"{stem.name}_{safe}"), other.get("seeds", result["seeds"])))
    written: list[Path] = []
    with paper_style():
        for name, per_grid, v, base, seeds in panels:
            cells = [c for c in result["cells"] if c["activation"] == name]
            written += _plot_thresholds(result, name, per_grid, cells, v, base, seeds)
            written += _plot_collapse(result, name, per_grid, v,
                                      base.with_name(base.name + "_collapse"), seeds)
    return written


def _plain_ticks(axis: Any) -> None:
    """Log-axis ticks written 0.1, 1, 10 (not 10⁻¹, 10⁰, 10¹): p/(dn) and p/n read as ratios."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def _rho_label(variant: str) -> str:
    return {"abs": r"$\rho$ (official)", "signed": r"$\rho$ (signed)",
            "sign_invariant": r"$\rho$ (up to sign)"}[variant]


def _plot_thresholds(result: dict[str, Any], name: str, per_grid: list[dict[str, Any]],
                     cells: list[dict[str, Any]], variant: str, stem: Path,
                     seeds: int) -> list[Path]:
    from rftheory.plotting import SYMBOLS, paper_figure

    fig, (ax_rho, ax_succ, ax_res) = paper_figure(2, ncols=3, aspect=1.0)
    styles = _styles(per_grid)
    floor = 1e-17  # exact zeros of the residual on log axes
    for g in per_grid:
        st = styles[(g["d"], g["n"])]
        mine = [c for c in cells if c["d"] == g["d"] and c["n"] == g["n"]]
        rec = [c for c in mine if c["kind"] == "reconstruction"]
        # seeds by kind: dots succeed, × spurious interpolants (a second zero), ○ unfinished
        for kind, marker, face in (("success", "o", st["color"]), ("spurious", "x", st["color"]),
                                   ("unfinished", "o", "none")):
            mine_k = [c for c in rec if run_kind(c, variant, rho_success=result["rho_success"]) == kind]
            ax_rho.scatter([c["p_over_dn"] for c in mine_k],
                           [max(c[f"rho_{variant}"], _RHO_FLOOR) for c in mine_k],
                           s=3 if kind == "success" else 9, alpha=0.25 if kind == "success" else 0.6,
                           marker=marker, facecolors=face if marker == "o" else None,
                           edgecolors=st["color"] if marker == "o" else None,
                           color=st["color"] if marker == "x" else None, lw=0.6)
        ax_rho.plot(*_median_rho(g, variant, "p_over_dn"), **st)
        th = g["data"][variant]
        ax_succ.plot([r["p_over_dn"] for r in g["rows"]], th["success_probability"], **st)
        if th["located"]:
            lo, hi = th["interval_over_dn"]
            centre = th["p_star_over_dn"]
            span = ax_succ.get_xlim()
            lo = lo if math.isfinite(lo) else min(span[0], centre)
            hi = hi if math.isfinite(hi) else max(span[1], centre)
            ax_succ.errorbar([centre], [0.5], xerr=[[centre - lo], [hi - centre]],
                             fmt="o" if th["status"] == "ok" else "s", ms=2.5,
                             color=st["color"], elinewidth=0.8, capsize=1.5)
        med: dict[int, list[float]] = {}
        for c in mine:
            med.setdefault(c["p"], []).append(max(c["train_residual"], floor))
        ps = sorted(med)
        ax_res.plot([p / g["n"] for p in ps], [float(np.median(med[p])) for p in ps], **st)
    for ax in (ax_rho, ax_succ):
        ax.set_xscale("log")
        ax.axvline(1.0, color="0.6", lw=0.6, ls=":")
        ax.set_xlabel(SYMBOLS["p_over_dn"])
    ax_rho.set_yscale("log")
    ax_rho.axhline(result["rho_success"], color="k", lw=0.6, ls="--")
    ax_rho.set_ylabel(_rho_label(variant))
    ax_rho.set_title("median; seeds: · success,\n× spurious, ○ unfinished")
    ax_succ.axhline(0.5, color="k", lw=0.6, ls="--")
    ax_succ.set_ylim(-0.03, 1.03)
    ax_succ.set_ylabel(rf"$P(\rho < {result['rho_success']:g})$")
    ax_succ.set_title("bar: fitted $p^*_{\\rm data}$,\n95% profile (■: step)")
    ax_res.set_xscale("log")
    ax_res.set_yscale("log")
    ax_res.axvline(1.0, color="0.6", lw=0.6, ls=":")
    ax_res.axhline(result["label_tol"], color="k", lw=0.6, ls="--")
    ax_res.set_xlabel(SYMBOLS["p_over_n"])
    ax_res.set_ylabel(SYMBOLS["train_residual"])
    ax_res.set_title("label fitting (median)")
    _legend(ax_rho, per_grid, loc="lower left", fontsize=6, ncol=2 if len(per_grid) > 4 else 1)
    for ax in (ax_rho, ax_succ, ax_res):
        _plain_ticks(ax.xaxis)
    fig.suptitle(f"Law of data reconstruction, φ = {name}, {seeds} seeds, "
                 f"budget {result['max_steps']} steps")
    return save_figure(fig, stem)


def _plot_collapse(result: dict[str, Any], name: str, per_grid: list[dict[str, Any]],
                   variant: str, stem: Path, seeds: int) -> list[Path]:
    from rftheory.plotting import SYMBOLS, paper_figure

    fig, (ax_dn, ax_n) = paper_figure(2, ncols=2, aspect=0.75, sharey=True)
    styles = _styles(per_grid)
    for g in per_grid:
        ax_dn.plot(*_median_rho(g, variant, "p_over_dn"), **styles[(g["d"], g["n"])])
        ax_n.plot(*_median_rho(g, variant, "p_over_n"), **styles[(g["d"], g["n"])])
    for ax, x in ((ax_dn, "p_over_dn"), (ax_n, "p_over_n")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(result["rho_success"], color="k", lw=0.6, ls="--")
        ax.set_xlabel(SYMBOLS[x])
    ax_dn.axvline(1.0, color="0.6", lw=0.6, ls=":")
    ax_dn.set_ylabel(_rho_label(variant) + ", median over seeds")
    ax_dn.set_title(r"against $p/(dn)$: one curve if $p^*_{\rm data} \propto dn$")
    ax_n.set_title(r"against $p/n$: the same runs spread by $d$")
    _legend(ax_dn, per_grid, loc="lower left", fontsize=6, ncol=2 if len(per_grid) > 4 else 1)
    for ax in (ax_dn, ax_n):
        _plain_ticks(ax.xaxis)
    fig.suptitle(f"Data collapse, φ = {name}, {seeds} seeds")
    return save_figure(fig, stem)


def plot_steps(curve: dict[str, Any], stem: str | Path) -> list[Path]:
    """The success fraction at fixed p/(dn) against the step budget (PNG + PDF).

    Parameters
    ----------
    curve : dict
        A result of :func:`rftheory.claims.law.success_against_steps`.
    stem : str or Path
        Path of the figure without suffix.

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    from rftheory.plotting import PALETTE, paper_figure, paper_style

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    with paper_style():
        fig, ax = paper_figure(1, aspect=0.7)
        keys = [k for k in curve if isinstance(curve[k], dict) and "success" in curve[k]]
        for i, key in enumerate(keys):
            c = curve[key]
            ax.step(curve["budgets"], c["success"], where="post", color=PALETTE[i % len(PALETTE)],
                    label=f"p = {key}·dn ({c['runs']} runs, n ∈ {c['ns']})")
        ax.set_xscale("log")
        ax.set_ylim(-0.03, 1.03)
        ax.axhline(0.5, color="0.6", lw=0.6, ls="--")
        ax.set_xlabel("step budget")
        ax.set_ylabel(r"fraction of runs with $\rho < 0.1$ within the budget")
        ax.set_title(f"d = {curve['d']}: success against steps (runs' budget {curve['budget']})")
        ax.legend(loc="upper left", fontsize=6)
        return save_figure(fig, stem)
