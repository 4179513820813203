"""Coverage of the sequential design's threshold intervals on synthetic success curves.

Every sequential run draws Bernoulli outcomes from a probit curve P(success | p) =
Φ((log p − log p*)/σ) with p* = 1.12·dn (dn = 48), makes the law's first pass (p/(dn) in
``rftheory.claims.law.TRANSITION_RATIOS``, 2 seeds), then asks
``rftheory.thresholds.followup_points`` for more runs until it stops (or ``--max-rounds`` rounds
or ``--max-added`` runs), and
checks whether the final profile interval holds p*. Beside it, the same final p's are refitted
with fresh outcomes (a fixed design of the same size): the difference is the stopping rule's.
Each run also has a cost, in units of the step budget, as in the law's sweep (a failure above dn
spends the whole budget, 1; one below dn, a spurious zero, 0.3; a success U(0.1, 0.6)), so that
a change of the design can be judged by what it spends as well as by its coverage.

    python benchmarks/threshold_coverage.py                         # the table of the Notes
    python benchmarks/threshold_coverage.py --max-added 100         # the law's cap
    python benchmarks/threshold_coverage.py --level 0.95 --resolution 0.045 --sigma 0.06
    python benchmarks/threshold_coverage.py --max-added 100 --criterion width  # the default's

Prints one line per σ: covered/runs for the sequential and the fixed design, how many ended
resolved within --max-added runs, median added runs, mean cost of the added runs, the widest
final interval, CPU.
Deterministic given --seed (numpy's PCG64). Cost: ~0.1 s CPU per sequential run.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from rftheory.claims.law import TRANSITION_RATIOS
from rftheory.thresholds import (CRITERIA, SEQUENTIAL_PROFILE_LEVEL, fit_threshold,
                                 followup_points, resolved)


def coverage(rng: np.random.Generator, runs: int, sigma: float, level: float,
             resolution: float, max_rounds: int, max_added: int, dn: int = 48,
             ratio: float = 1.12,
             criterion: str = "sides") -> tuple[int, int, int, float, float, float]:
    mu = math.log(ratio * dn)

    spend = rng.spawn(1)[0]  # the costs' own stream: the outcomes are drawn as before

    def draw(ps: list[int]) -> tuple[list[bool], list[float]]:
        y = list(rng.random(len(ps)) < stats.norm.cdf((np.log(ps) - mu) / sigma))
        c = [float(spend.uniform(0.1, 0.6)) if ok else (1.0 if q >= dn else 0.3)
             for q, ok in zip(ps, y)]
        return y, c

    seq = fixed = done = 0
    sizes, spent, widths = [], [], []
    for _ in range(runs):
        p = [int(q) for q in np.repeat(np.round(np.asarray(TRANSITION_RATIOS) * dn), 2)]
        y, c = draw(p)
        first = len(p)
        for _ in range(max_rounds):
            if len(p) - first >= max_added:
                break
            nxt = followup_points(p, y, resolution=resolution, unit=dn, level=level,
                                  criterion=criterion)[:max_added - len(p) + first]
            if not nxt:
                break
            more, cost = draw(nxt)
            p, y, c = p + nxt, y + more, c + cost
        fit = fit_threshold(p, y, level=level)
        seq += fit.interval[0] <= math.exp(mu) <= fit.interval[1]
        done += resolved(fit, resolution, unit=dn, criterion=criterion)
        widths.append((fit.interval[1] - fit.interval[0]) / dn)
        lo, hi = fit_threshold(p, draw(p)[0], level=level).interval
        fixed += lo <= math.exp(mu) <= hi
        sizes.append(len(p) - first)
        spent.append(sum(c[first:]))
    return seq, fixed, done, float(np.median(sizes)), float(np.mean(spent)), max(widths)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="sequential runs per σ")
    parser.add_argument("--sigma", type=float, nargs="+", default=[0.03, 0.06, 0.1])
    parser.add_argument("--level", type=float, default=SEQUENTIAL_PROFILE_LEVEL)
    parser.add_argument("--resolution", type=float, default=0.049)
    parser.add_argument("--max-rounds", type=int, default=60)
    parser.add_argument("--max-added", type=int, default=10**6,
                        help="cap on the added runs (the law's default: 100)")
    parser.add_argument("--criterion", choices=CRITERIA, default="sides",
                        help="what resolved means (followup_points): each side within "
                             "--resolution, or the width within twice it")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"level {args.level}, "
          f"resolution ±{args.resolution}·dn ({args.criterion}), at most {args.max_added} added runs, "
          f"{args.runs} runs per σ, seed {args.seed}")
    for i, sigma in enumerate(args.sigma):
        t = time.process_time()
        seq, fixed, done, size, spent, widest = coverage(
            np.random.default_rng([args.seed, i]), args.runs, sigma, args.level,
            args.resolution, args.max_rounds, args.max_added, criterion=args.criterion)
        print(f"σ = {sigma:g}: sequential {seq}/{args.runs} ({seq / args.runs:.0%}), "
              f"fixed design {fixed}/{args.runs} ({fixed / args.runs:.0%}), "
              f"resolved {done}/{args.runs}, median added runs {size:g}, "
              f"mean cost of the added runs {spent:.1f} budgets, "
              f"widest interval {widest:.3f}·dn, "
              f"{time.process_time() - t:.0f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
