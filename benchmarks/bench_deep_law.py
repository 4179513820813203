"""Cost of ``rftheory verify deep_law`` against issue #29's targets: QUICK ≤ 3 min, FULL ≤ 45 min.

Runs the claim's sweep (``deep_law.run``, the same cells as the CLI) or reads the cells file of a
finished or stopped run, and prints the wall time, the CPU time of this process and its workers,
and per (network, n, data set): runs, CPU seconds (the cases' ``cpu_seconds``), training wall
seconds, LM steps, Krylov bases (one per point the attack stood at; a rejected step re-solves in
its point's basis), products JᵀJq through the body (the attack's cost; absent from cells of
older code) and successes. ``--compare`` puts a
second cells file (e.g. of an earlier commit) beside it, run by run.

    python benchmarks/bench_deep_law.py --quick                    # run QUICK, print the figures
    python benchmarks/bench_deep_law.py --out /tmp/full            # run FULL (keeps its cells)
    python benchmarks/bench_deep_law.py --cells DIR/deep_law.cells.jsonl --compare OLD.jsonl

The wall time is the machine's: the targets are stated for 2 free cores, and the script prints
the cores it saw and the load before and after (a figure taken under load says so).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

from rftheory.claims import deep_law

#: Wall-clock targets of issue #29 on 2 cores (seconds).
TARGETS = {"quick": 180.0, "full": 2700.0}


def read_cells(path: str | Path) -> list[dict]:
    """One JSON object per line (a ``deep_law.cells.jsonl``, optionally gzipped)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _key(case: dict) -> tuple:
    return case["arch"], case["n"], case["dataset"], case["ratio_nominal"], case["seed"]


def table(cases: list[dict], other: list[dict] | None = None) -> str:
    """Per (network, n, data set): runs, CPU, training, steps, bases, successes (and the other's)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for c in cases:
        groups[c["arch"], c["n"], c["dataset"]].append(c)
    theirs = {_key(c): c for c in other or ()}
    head = "net     n  data      runs   CPU s  train s  steps  bases  products  successes"
    if other is not None:
        head += "  | other: CPU s  steps  successes (same runs)"
    lines = [head]
    for g in sorted(groups):
        mine = groups[g]
        row = (f"{g[0]:<7} {g[1]:>1}  {g[2]:<8} {len(mine):>5} {sum(c['cpu_seconds'] for c in mine):>7.0f} "
               f"{sum(c['train_seconds'] for c in mine):>8.0f} {sum(c['recon_steps'] for c in mine):>6} "
               f"{sum(c.get('recon_bases', 0) for c in mine):>6} "
               f"{sum(c.get('recon_products', 0) for c in mine):>9} {sum(c['success'] for c in mine):>10}")
        if other is not None:
            pairs = [theirs[_key(c)] for c in mine if _key(c) in theirs]
            row += (f"  | {sum(c['cpu_seconds'] for c in pairs):>12.0f} "
                    f"{sum(c['recon_steps'] for c in pairs):>6} {sum(c['success'] for c in pairs):>10}"
                    f" ({len(pairs)})")
        lines.append(row)
    total = (f"all{'':13} {len(cases):>5} {sum(c['cpu_seconds'] for c in cases):>7.0f} "
             f"{sum(c['train_seconds'] for c in cases):>8.0f} "
             f"{sum(c['recon_steps'] for c in cases):>6} "
             f"{sum(c.get('recon_bases', 0) for c in cases):>6} "
             f"{sum(c.get('recon_products', 0) for c in cases):>9} {sum(c['success'] for c in cases):>10}")
    lines.append(total)
    if other is not None:
        changed = [(_key(c), theirs[_key(c)]["success"], c["success"]) for c in cases
                   if _key(c) in theirs and theirs[_key(c)]["success"] != c["success"]]
        lines.append(f"runs whose success changed against the other file: {len(changed)}"
                     + "".join(f"\n  {k}: {a} -> {b}" for k, a, b in changed))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="QUICK instead of FULL")
    parser.add_argument("--cells", help="summarise this cells file instead of running")
    parser.add_argument("--compare", help="a second cells file, run by run")
    parser.add_argument("--out", help="directory for the run's cells file (default: a temp dir)")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    other = read_cells(args.compare) if args.compare else None
    if args.cells:
        print(table(read_cells(args.cells), other))
        return
    import tempfile

    config, name = (deep_law.QUICK, "quick") if args.quick else (deep_law.FULL, "full")
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_deep_law_"))
    print(f"deep_law {name}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; cells -> {out}",
          flush=True)
    t0, c0 = time.perf_counter(), time.process_time()
    result = deep_law.run(config, workers=args.workers, out_dir=out,
                          progress=lambda line: print(f"  {line}", flush=True))
    wall = time.perf_counter() - t0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - c0 + children.ru_utime + children.ru_stime
    print(table(result["cases"], other))
    verdict = "met" if wall <= TARGETS[name] else "missed"
    print(f"wall {wall:.0f} s, CPU {cpu:.0f} s (this process and its workers), "
          f"{result['workers']} workers, load after {os.getloadavg()[0]:.2f}; "
          f"target ≤ {TARGETS[name]:.0f} s on 2 cores: {verdict}; verdict of the claim: "
          f"{'SUPPORTED' if result['verdict']['supported'] else 'NOT SUPPORTED'}")


if __name__ == "__main__":
    main()
