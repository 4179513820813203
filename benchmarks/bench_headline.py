"""Cost of the headline table's cells (rftheory.claims.headline): memory declared, time measured.

For each (activation, p) cell of the table at ``--n`` it prints the declared peak memory
(:func:`rftheory.pipeline.reconstruction_memory`), then runs the cells that fit ``--max-gib`` of
memory for ``--steps`` optimiser steps only and prints the measured fit time, seconds per step
and the projection to the claim's budget (``--budget`` steps: the cost of a cell that runs to its
budget, which cells below the threshold do). Wall-clock figures: rerun on a quiet machine.

    python benchmarks/bench_headline.py --n 10 --steps 10           # the CPU default's cells
    python benchmarks/bench_headline.py --n 100 --estimate-only     # the GPU table's memory
"""

from __future__ import annotations

import argparse
import time

from rftheory.claims import headline
from rftheory.pipeline import reconstruction_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10, help="optimiser steps measured per cell")
    parser.add_argument("--budget", type=int, default=headline.FULL.max_steps,
                        help="steps to project to (the claim's max_steps)")
    parser.add_argument("--multiples", default="n,dn,10dn")
    parser.add_argument("--activations", default="relu,relu+tanh")
    parser.add_argument("--max-gib", type=float, default=2.0,
                        help="measure only cells whose estimated memory is below this")
    parser.add_argument("--estimate-only", action="store_true")
    args = parser.parse_args()
    d = 3072
    multiples = tuple(args.multiples.split(","))
    print(f"headline cells at d = {d}, n = {args.n}; projections to {args.budget} steps")
    for m in multiples:
        p = headline.MULTIPLES[m](d, args.n)
        need = reconstruction_memory(d=d, n=args.n, p=p, v_cache_bytes=headline.FULL.v_cache_bytes)
        print(f"  p = {m} = {p}: {need.describe()}")
        if args.estimate_only or need.peak_bytes > args.max_gib * 2**30:
            continue
        for name in args.activations.split(","):
            config = headline.FULL.replace(n=args.n, multiples=(m,), activations=(name,),
                                           max_steps=args.steps)
            start = time.perf_counter()
            row = headline.run(config)["rows"][0]
            wall = time.perf_counter() - start
            steps = max(1, row["steps"])
            per = row["reconstruct_seconds"] / steps
            print(f"    {name}: fit {row['fit_seconds']:.1f} s, {row['steps']} steps at "
                  f"{per:.3g} s/step ({row['stop_reason']}); projected {args.budget} steps: "
                  f"{(row['fit_seconds'] + per * args.budget) / 60:.1f} min; wall {wall:.0f} s")


if __name__ == "__main__":
    main()
