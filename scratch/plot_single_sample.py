"""Figure and table of the single-sample survey (scratch/single_sample_survey.py), from its JSON.

``python scratch/plot_single_sample.py [JSON] [--stem STEM]`` writes STEM.png/.pdf (recovered
fraction against p/(dn) and against p/(n + d), per attack: mean over seeds, band min–max) and
prints the table the paper note quotes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
LABELS = {
    "k1_reconstruct": r"$k=1$: reconstruct (pool $2\hat n$)",
    "k1_reconstruct_pool": r"$k=1$: reconstruct (pool $4\hat n$, 2 restarts pooled)",
    "kn_span": r"$k=n$: per-point span attack",
    "kn_reconstruct": r"$k=n$: reconstruct (pool $2\hat n$)",
}


def collect(data: dict) -> dict:
    """attack -> {"p": [...], "fraction": (seeds, ps), "precision": (seeds, ps)}."""
    cells = data["cells"]
    ps = [r["p"] for r in cells[0]["rows"]]
    names = list(cells[0]["rows"][0]["attacks"])
    out = {}
    for name in names:
        frac = np.array([[r["attacks"][name]["fraction"] for r in c["rows"]] for c in cells])
        cand = np.array([[r["attacks"][name]["n_candidates"] for r in c["rows"]] for c in cells])
        true = np.array([[r["attacks"][name]["true_candidates"] for r in c["rows"]] for c in cells])
        out[name] = {"p": ps, "fraction": frac, "candidates": cand, "true": true,
                     "k": cells[0]["rows"][0]["attacks"][name]["k"]}
    return out


def figure(data: dict, stem: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg = data["config"]
    d, n = cfg["d"], cfg["n"]
    res = collect(data)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    styles = {"k1_reconstruct": ("tab:blue", "o-"), "k1_reconstruct_pool": ("tab:cyan", "s--"),
              "kn_span": ("tab:red", "^-"), "kn_reconstruct": ("tab:orange", "D--")}
    for ax, scale, xlabel in ((axes[0], d * n, r"$p/(dn)$"), (axes[1], n + d, r"$p/(n+d)$")):
        for name, r in res.items():
            color, style = styles.get(name, ("k", "x-"))
            x = np.array(r["p"]) / scale
            f = r["fraction"]
            ax.plot(x, f.mean(axis=0), style, color=color, ms=4, label=LABELS.get(name, name))
            ax.fill_between(x, f.min(axis=0), f.max(axis=0), color=color, alpha=0.15, lw=0)
        ax.axvline((n + d) / scale, color="tab:purple", ls=":", lw=1, label="$p = n + d$")
        ax.axvline(d * n / scale, color="grey", lw=1, label="$p = dn$")
        ax.set_xscale("log")
        from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator, ScalarFormatter

        lo, hi = ax.get_xlim()
        ticks = [t for t in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if lo <= t <= hi]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction of training points recovered\n"
                      r"($\min_j \|x_i-\hat x_j\|/\|x_i\| < %g$)" % cfg["tol"])
    axes[0].legend(fontsize=7, loc="center left")
    axes[0].set_title(f"{cfg['activation']}, d = {d}, n = {n}, {len(data['cells'])} seeds "
                      "(mean; band: min–max)", fontsize=9)
    fig.savefig(stem.with_suffix(".png"), dpi=150)
    fig.savefig(stem.with_suffix(".pdf"))
    plt.close(fig)


def table(data: dict) -> str:
    cfg = data["config"]
    d, n = cfg["d"], cfg["n"]
    res = collect(data)
    names = list(res)
    head = ["p", "p/(dn)", "p/(n+d)"] + names
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for j, p in enumerate(res[names[0]]["p"]):
        cells = []
        for name in names:
            r = res[name]
            frac = r["fraction"][:, j]
            true, cand = int(r["true"][:, j].sum()), int(r["candidates"][:, j].sum())
            cells.append(f"{frac.mean():.2f} [{frac.min():.2f}–{frac.max():.2f}] ({true}/{cand})")
        lines.append(" | ".join([str(p), f"{p / (d * n):.3g}", f"{p / (n + d):.3g}"] + cells))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="?", type=Path,
                    default=ROOT / "results" / "single_sample_survey.json")
    ap.add_argument("--stem", type=Path, default=None)
    args = ap.parse_args(argv)
    data = json.loads(args.json.read_text())
    figure(data, args.stem or args.json.with_suffix(""))
    print("recovered fraction: mean [min-max] over seeds (true candidates / candidates, summed)")
    print(table(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
