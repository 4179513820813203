"""Coverage of the sequential design's threshold intervals on synthetic success curves.

Every sequential run draws Bernoulli outcomes from a probit curve P(success | p) =
Φ((log p − log p*)/σ) with p* = 1.12·dn (dn = 48), makes the law's first pass (p/(dn) in
``rftheory.claims.law.TRANSITION_RATIOS``, 2 seeds), then asks
``rftheory.thresholds.followup_points`` for more runs until it stops (or ``--max-rounds``), and
checks whether the final profile interval holds p*. Beside it, the same final p's are refitted
with fresh outcomes (a fixed design of the same size): the difference is the stopping rule's.

    python benchmarks/threshold_coverage.py                         # the table of the Notes
    python benchmarks/threshold_coverage.py --level 0.95 --resolution 0.045 --sigma 0.06

Prints one line per σ: covered/runs for the sequential and the fixed design, median runs, CPU.
Deterministic given --seed (numpy's PCG64). Cost: ~0.1 s CPU per sequential run.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from rftheory.claims.law import TRANSITION_RATIOS
from rftheory.thresholds import SEQUENTIAL_PROFILE_LEVEL, fit_threshold, followup_points


def coverage(rng: np.random.Generator, runs: int, sigma: float, level: float,
             resolution: float, max_rounds: int, dn: int = 48,
             ratio: float = 1.12) -> tuple[int, int, float]:
    mu = math.log(ratio * dn)

    def draw(ps: list[int]) -> list[bool]:
        return list(rng.random(len(ps)) < stats.norm.cdf((np.log(ps) - mu) / sigma))

    seq = fixed = 0
    sizes = []
    for _ in range(runs):
        p = [int(q) for q in np.repeat(np.round(np.asarray(TRANSITION_RATIOS) * dn), 2)]
        y = draw(p)
        for _ in range(max_rounds):
            nxt = followup_points(p, y, resolution=resolution, unit=dn, level=level)
            if not nxt:
                break
            p += nxt
            y += draw(nxt)
        lo, hi = fit_threshold(p, y, level=level).interval
        seq += lo <= math.exp(mu) <= hi
        lo, hi = fit_threshold(p, draw(p), level=level).interval
        fixed += lo <= math.exp(mu) <= hi
        sizes.append(len(p))
    return seq, fixed, float(np.median(sizes))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="sequential runs per σ")
    parser.add_argument("--sigma", type=float, nargs="+", default=[0.03, 0.06, 0.1])
    parser.add_argument("--level", type=float, default=SEQUENTIAL_PROFILE_LEVEL)
    parser.add_argument("--resolution", type=float, default=0.049)
    parser.add_argument("--max-rounds", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"level {args.level}, resolution ±{args.resolution}·dn, {args.runs} runs per σ, "
          f"seed {args.seed}")
    for i, sigma in enumerate(args.sigma):
        t = time.process_time()
        seq, fixed, size = coverage(np.random.default_rng([args.seed, i]), args.runs, sigma,
                                    args.level, args.resolution, args.max_rounds)
        print(f"σ = {sigma:g}: sequential {seq}/{args.runs} ({seq / args.runs:.0%}), "
              f"fixed design {fixed}/{args.runs} ({fixed / args.runs:.0%}), "
              f"median runs {size:g}, {time.process_time() - t:.0f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
