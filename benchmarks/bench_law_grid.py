"""Time of the law's grid (``rftheory verify law --large``, ``examples/law_grid.toml``), projected
from the cells of a run of part of it.

Reads the ``law`` cells of a sweep store or export (their steps and wall seconds), fits
    seconds = c0 + steps · (c1 + c2 · n·d·p)
by non-negative least squares (c0: training and set-up; c1: a step's fixed cost; c2: its
arithmetic, ∝ the n×d by d×p product), and projects the whole grid of
:data:`rftheory.claims.law.LARGE`: each of its cells takes the median steps measured at the same
activation and p (named as in the sweep file: "n", "0.25dn", ...; p < n: label fits, their
measured median). Prints the fit, the measured and projected
seconds per (d, n), and the total on ``--workers`` processes (perfect sharing; the sweep
hands out cells one at a time). The cells' times are as measured: on a shared machine they are
inflated by the load, so rerun a part of the grid on a quiet machine before trusting the total.

    python benchmarks/bench_law_grid.py results/law_reduced/law_sweep --workers 2
    python benchmarks/bench_law_grid.py examples/law_grid_cells.jsonl.gz
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from rftheory.claims import law


def _cells(source: str) -> list[dict]:
    path = Path(source)
    if path.is_dir():
        return law.cells_from_store(path)
    return law.cells_from_export(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", help="a sweep store directory or an export (.jsonl.gz)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    cells = [c for c in _cells(args.source) if "error" not in c]
    rec = [c for c in cells if c["kind"] == "reconstruction"]
    if len(rec) < 3:
        raise SystemExit("need at least 3 reconstruction cells to fit the cost model")
    steps = np.array([c["steps"] for c in rec], float)
    work = np.array([c["n"] * c["d"] * c["p"] for c in rec], float)
    secs = np.array([c["seconds"] for c in rec], float)
    A = np.column_stack([np.ones_like(steps), steps, steps * work])
    coef, _ = nnls(A, secs)
    pred = A @ coef
    label_secs = [c["seconds"] for c in cells if c["kind"] == "label_fit"]
    c0_label = float(np.median(label_secs)) if label_secs else coef[0]
    print(f"{len(cells)} cells ({len(rec)} reconstructions) from {args.source}; measured total "
          f"{sum(c['seconds'] for c in cells):.0f} cell-seconds")
    print(f"fit: seconds = {coef[0]:.3g} + steps·({coef[1]:.3g} + {coef[2]:.3g}·n·d·p); "
          f"median |relative error| {np.median(np.abs(pred - secs) / secs):.2f}; label fit "
          f"{c0_label:.3g} s")
    config = law.LARGE
    from rftheory.sweep.spec import p_from_expression

    tokens = law.sweep_document(config)["grid"]["p"]  # "n", "0.25dn", ...: a cell's p by name

    def token(d: int, n: int, p: int) -> str:
        return next((t for t in tokens if p_from_expression(t, d=d, n=n) == p), str(p))

    median_steps: dict[tuple, list] = defaultdict(list)
    for c in rec:
        median_steps[(c["activation"], token(c["d"], c["n"], c["p"]))].append(c["steps"])
    typical = {k: float(np.median(v)) for k, v in median_steps.items()}

    measured = defaultdict(float)
    for c in cells:
        measured[(c["d"], c["n"])] += c["seconds"]
    total = 0.0
    print(f"{'d':>4} {'n':>4} {'cells':>6} {'measured s':>11} {'projected s':>12}")
    for d, n in config.grid:
        ps = sorted({p_from_expression(t, d=d, n=n) for t in tokens})
        here = 0.0
        count = 0
        for a in config.activations:
            for p in ps:
                for _ in range(config.seeds):
                    count += 1
                    if p < n:
                        here += c0_label
                        continue
                    s = typical.get((a, token(d, n, p)), config.max_steps)
                    here += coef[0] + s * (coef[1] + coef[2] * n * d * p)
        total += here
        got = f"{measured[(d, n)]:.0f}" if (d, n) in measured else "—"
        print(f"{d:>4} {n:>4} {count:>6} {got:>11} {here:>12.0f}")
    print(f"projected grid: {total:.0f} cell-seconds = {total / 3600:.2f} h of one core; "
          f"{total / args.workers / 3600:.2f} h wall on {args.workers} workers (at the load "
          "the source cells were measured under)")


if __name__ == "__main__":
    main()
