"""Figures and tables of the collision survey (scratch/collisions_survey.py), from its JSON.

``python scratch/plot_collisions.py [JSON] [--stem STEM]`` writes STEM_limits, STEM_thresholds and
STEM_regions as PNG + PDF (default JSON scratch/results/collisions_survey.json, STEM next to it)
and prints the tables the paper note quotes.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from pathlib import Path


ROOT = Path(__file__).resolve().parent
# A limit below this is 0: closed forms (pairs) reach ~1e-26 at their zeros, the direction
# optimisation of triples 1e-15..1e-24; the first non-zero values above the counts are ≳ 1e-9.
ZERO = 1e-12
REGION_ZERO = 1e-12  # a region minimum below this is 0 (L-BFGS-B drives reachable zeros there)
FLOOR = 1e-18    # display floor of log axes


def _save(fig, stem: Path) -> None:
    import matplotlib.pyplot as plt

    for ext in ("png", "pdf"):
        fig.savefig(stem.with_name(stem.name + "." + ext), dpi=150)
    plt.close(fig)


def _ticks(ax) -> None:
    """Plain decimal ticks on the log p/(dn) axis; few decades on the log y axis."""
    from matplotlib.ticker import (FixedLocator, LogLocator, NullFormatter, NullLocator,
                                   ScalarFormatter)

    lo, hi = ax.get_xlim()
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 4, 8) if lo <= t <= hi]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    if ax.get_yscale() == "log":
        ax.yaxis.set_major_locator(LogLocator(numticks=6))
        ax.yaxis.set_minor_locator(NullLocator())


def measured_threshold(rows: list[dict], label: str) -> int | None:
    """Largest p with limit ≤ ZERO such that every larger p has limit > ZERO (None if never)."""
    vals = [(r["p"], next(t for t in r["types"] if t["label"] == label)) for r in rows]
    last_zero = None
    for p, t in vals:
        if t["limit"] <= ZERO:
            last_zero = p
    return last_zero


def figure_limits(data: dict, stem: Path, activation: str = "relu+tanh") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [c for c in data["cells"] if c["activation"] == activation]
    ns = sorted({c["n"] for c in cells})
    cols = 3
    rows = -(-(len(ns) + 1) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.9 * rows), squeeze=False,
                             constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    flat = list(axes.ravel())
    for ax in flat[len(ns) + 1:]:
        ax.set_visible(False)
    _thresholds_axes(flat[len(ns)], data)
    for ax, n in zip(flat, ns):
        group = [c for c in cells if c["n"] == n]
        d = group[0]["d"]
        labels = [t["label"] for t in group[0]["rows"][0]["types"]]
        for j, label in enumerate(labels):
            color = colors[j % len(colors)]
            for k, c in enumerate(group):
                x = [r["p_over_dn"] for r in c["rows"]]
                t = [next(e for e in r["types"] if e["label"] == label) for r in c["rows"]]
                y = [max(e["limit"], FLOOR) for e in t]
                exact = max(map(int, label.split("+"))) <= 3
                ax.plot(x, y, "-" if exact else "--", color=color, lw=1, alpha=0.8, marker=".",
                        ms=3, label=(_short(label) + ("" if exact else " (upper bound)"))
                        if k == 0 else None)
            thr = t[0]["threshold"]
            if max(map(int, label.split("+"))) <= 3:
                ax.axvline(thr / (d * n), color=color, ls=":", lw=1)
        for k, c in enumerate(group):
            x = [r["p_over_dn"] for r in c["rows"]]
            ax.plot(x, [max(r["leave_one_out"], FLOOR) for r in c["rows"]], "-", color="grey",
                    lw=1.5, alpha=0.5, label="leave one out" if k == 0 else None)
        ax.axvline(1.0, color="k", lw=0.8)
        ax.axhline(ZERO, color="k", ls="--", lw=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(FLOOR / 3, 2)
        ax.set_xlabel(r"$p/(dn)$")
        ax.set_ylabel(r"$L_0 = \lim_{\delta\to 0}\min_{D_m(\delta)} L$")
        ax.set_title(f"{activation}, n = {n}, d = {d} ({len(group)} seeds)\n"
                     r"dotted: $p^* = n + \ell(d-2)$", fontsize=9)
        ax.legend(fontsize=6, loc="lower left")
        _ticks(ax)
    _save(fig, stem)


def _short(label: str) -> str:
    parts = label.split("+")
    if len(parts) > 4:
        from collections import Counter

        cnt = Counter(parts)
        return "+".join(f"{v}^{cnt[v]}" if cnt[v] > 1 else v
                        for v in sorted(cnt, key=int, reverse=True))
    return label


def threshold_table(data: dict) -> list[dict]:
    out = []
    for c in data["cells"]:
        for label in [t["label"] for t in c["rows"][0]["types"]]:
            t0 = next(t for t in c["rows"][0]["types"] if t["label"] == label)
            out.append({"activation": c["activation"], "n": c["n"], "seed": c["seed"],
                        "label": label, "predicted": t0["threshold"],
                        "exact": max(map(int, label.split("+"))) <= 3,
                        "measured": measured_threshold(c["rows"], label),
                        "dn": c["d"] * c["n"]})
    return out


def _thresholds_axes(ax, data: dict) -> None:
    """Measured last p with L₀ = 0 against the count p*, every (activation, n, seed, type ≤ 3)."""
    table = threshold_table(data)
    marks = {"relu+tanh": "o", "tanh": "s", "erf": "^", "relu": "D"}
    for act, mk in marks.items():
        pts = [t for t in table if t["activation"] == act and t["exact"]
               and t["measured"] is not None]
        if pts:
            ax.plot([t["predicted"] / t["dn"] for t in pts], [t["measured"] / t["dn"] for t in pts],
                    mk, mfc="none", ms=6, label=act)
    lim = [0.05, 1.2]
    ax.plot(lim, lim, "k-", lw=0.8, label=r"measured = $p^*$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"predicted $p^*/(dn)$, $p^* = n + \ell(d-2)$")
    ax.set_ylabel(r"measured: last $p/(dn)$ with $L_0 = 0$")
    ax.set_title("last zero of $L_0$ vs the count, types with multiplicities ≤ 3\n"
                 "(all n, seeds, activations; ReLU off the line: activation cells)", fontsize=9)
    ax.legend(fontsize=7)


def figure_regions(data: dict, stem: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    acts = sorted({c["activation"] for c in data["cells"]})
    ns = sorted({c["n"] for c in data["cells"]})
    fig, axes = plt.subplots(len(acts), len(ns), figsize=(3.4 * len(ns), 2.9 * len(acts)),
                             squeeze=False, constrained_layout=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for a, act in enumerate(acts):
        for b, n in enumerate(ns):
            ax = axes[a, b]
            group = [c for c in data["cells"] if c["activation"] == act and c["n"] == n]
            if not group:
                continue
            labels = ["+".join(map(str, t)) for t in group[0]["direct_types"]]
            for j, label in enumerate(labels):
                color = colors[j % len(colors)]
                first = True
                for c in group:
                    pts = []
                    for r in c["rows"]:
                        e = next(t for t in r["types"] if t["label"] == label)
                        if e["region"] is None:
                            continue
                        m = e["region"]["minima"][-1]
                        pts.append((r["p_over_dn"], max(m["loss"], FLOOR), e["limit"]))
                    if not pts:
                        continue
                    pts.sort()
                    ax.plot([q[0] for q in pts], [q[1] for q in pts], "o-", color=color, ms=3,
                            lw=1, label=f"{_short(label)}" if first else None)
                    ax.plot([q[0] for q in pts], [max(q[2], FLOOR) for q in pts], "x:",
                            color=color, ms=3, lw=0.8)
                    first = False
            for c in group:
                ax.plot([r["p_over_dn"] for r in c["rows"]],
                        [max(r["leave_one_out"], FLOOR) for r in c["rows"]], "-", color="grey",
                        lw=1, alpha=0.4)
            ax.axvline(1.0, color="k", lw=0.8)
            ax.axhline(REGION_ZERO, color="k", ls="--", lw=0.6)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_ylim(FLOOR / 3, 2)
            ax.set_title(f"{act}, n = {n}", fontsize=9)
            if b == 0:
                ax.set_ylabel(r"$\min_{D_m(\delta_{\max})} L$ (o), $L_0$ (x)")
            if a == len(acts) - 1:
                ax.set_xlabel(r"$p/(dn)$")
            ax.legend(fontsize=6, loc="lower left")
            _ticks(ax)
    _save(fig, stem)


def tables(data: dict) -> str:
    lines = []
    table = threshold_table(data)
    exact = [t for t in table if t["exact"]]
    agree = [t for t in exact if t["measured"] == t["predicted"]]
    lines.append(f"thresholds: {len(agree)}/{len(exact)} (activation, n, seed, type) with "
                 "multiplicities <= 3 vanish exactly up to p* and not at p*+1")
    for t in exact:
        if t["measured"] != t["predicted"]:
            lines.append(f"  differs: {t}")
    # smallest limit and region minimum at p >= dn, per n and activation
    lines.append("\nsmallest limit / region minimum at p >= dn (over types, seeds, p), and the "
                 "leave-one-out baseline there")
    for c_key in sorted({(c["activation"], c["n"]) for c in data["cells"]}):
        act, n = c_key
        best_lim, best_reg, best_loo = math.inf, math.inf, math.inf
        where_lim = where_reg = None
        for c in data["cells"]:
            if (c["activation"], c["n"]) != c_key:
                continue
            for r in c["rows"]:
                if r["p_over_dn"] < 1.0:
                    continue
                best_loo = min(best_loo, r["leave_one_out"])
                for t in r["types"]:
                    if t["limit"] < best_lim:
                        best_lim, where_lim = t["limit"], (t["label"], r["p"], c["seed"])
                    if t["region"]:
                        for m in t["region"]["minima"]:
                            if m["loss"] < best_reg:
                                best_reg = m["loss"]
                                where_reg = (t["label"], r["p"], c["seed"], m["delta"])
        lines.append(f"  {act:10s} n={n:2d}: limit {best_lim:.2e} {where_lim}; region "
                     f"{best_reg:.2e} {where_reg}; loo {best_loo:.2e}")
    # where the region minimum leaves zero
    lines.append("\nregion minima (largest delta) per type and p/(dn): zero (<1e-12) or value")
    rows = defaultdict(dict)
    for c in data["cells"]:
        for r in c["rows"]:
            for t in r["types"]:
                if t["region"]:
                    m = t["region"]["minima"][-1]
                    rows[(c["activation"], c["n"], t["label"], c["seed"])][r["p"]] = (
                        m["loss"], m["delta"], t["limit"])
    for key in sorted(rows):
        cells = rows[key]
        txt = ", ".join(f"p={p}: {v[0]:.1e}(d={v[1]:.2g}; L0 {v[2]:.1e})"
                        for p, v in sorted(cells.items()))
        lines.append(f"  {key[0]} n={key[1]} {_short(key[2])} s{key[3]}: {txt}")
    lines.append("\nper activation and p/(dn): smallest region minimum (largest delta; over n, "
                 "direct types, seed 0..) and smallest ratio region/leave-one-out; smallest "
                 "L0/leave-one-out over all types and seeds")
    summary = defaultdict(lambda: [math.inf, math.inf, math.inf, None])
    for c in data["cells"]:
        for r in c["rows"]:
            key = (c["activation"], round(r["p_over_dn"], 3))
            loo = max(r["leave_one_out"], 1e-300)
            for t in r["types"]:
                if t["label"] != "+".join(["1"] * (c["n"] - 1)) and r["p_over_dn"] >= 1.0:
                    summary[key][2] = min(summary[key][2], t["limit"] / loo)
                if t["region"]:
                    m = t["region"]["minima"][-1]["loss"]
                    if m < summary[key][0]:
                        summary[key][0] = m
                        summary[key][3] = (c["n"], _short(t["label"]), c["seed"])
                    summary[key][1] = min(summary[key][1], m / loo)
    for key in sorted(summary):
        v = summary[key]
        if v[0] == math.inf and v[2] == math.inf:
            continue
        lines.append(f"  {key[0]:10s} p/dn={key[1]:<6g} region min {v[0]:.1e} at {v[3]}; "
                     f"region/loo {v[1]:.2g}; L0/loo {v[2]:.2g}")
    if data.get("limit_checks"):
        lines.append("\nlimit checks: relative gap (L0 - min_D(delta))/L0")
        for e in data["limit_checks"]:
            gaps = ", ".join(f"{dl:.0e}: {g:.1e}" for dl, g in zip(e["deltas"], e["relative_gap"]))
            lines.append(f"  {e['activation']} n={e['n']} {e['type']} L0={e['limit']:.3e} "
                         f"{gaps or e.get('note', '')}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="?", type=Path,
                    default=ROOT / "results" / "collisions_survey.json")
    ap.add_argument("--stem", type=Path, default=None)
    args = ap.parse_args(argv)
    data = json.loads(args.json.read_text())
    stem = args.stem or args.json.with_suffix("")
    figure_limits(data, stem.with_name(stem.name + "_limits"))
    figure_regions(data, stem.with_name(stem.name + "_regions"))
    print(tables(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
