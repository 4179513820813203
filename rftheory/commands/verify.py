"""``rftheory verify CLAIM|all``: run a claim's check, save JSON + figures, print the summary.

``--baseline FILE`` then compares the run's key numbers with a stored baseline and exits with
status 3 (:data:`rftheory.baseline.EXIT_MOVED`) naming every number that moved beyond its
tolerance; ``--update-baseline FILE`` writes them (see :mod:`rftheory.baseline`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import RFTheoryError
from ._common import (add_limit_options, at_least, deadline, limits, output_dir, output_file,
                      produced_by, progress_lines)
from ._rules import integer_type


def register(subparsers) -> None:
    """Add the ``verify`` subcommand."""
    p = subparsers.add_parser("verify", help="check a claim of the paper (writes results/<claim>.json + figures)",
                       description="Run the verification of one claim of the paper, or all of them.")
    p.add_argument("claim", help="kernel_concentration, law, theorem1, theorem2, single_sample, "
                                 "sign, nhat, twolayer_law, headline, deep_law, or all (every "
                                 "claim but headline and deep_law, which run by name; deep_law "
                                 "needs rftheory[deep])")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small, fast version (minutes on 2 cores)")
    size.add_argument("--large", action="store_true",
                      help="the claim's larger run where it has one (law: the d x n grid through "
                           "a resumable sweep store under --out; its relu+tanh cells took 25 "
                           "min on 2 cores on 2026-12-05, its relu cells run after; headline: "
                           "n = 100, a GPU's job); others run their default")
    p.add_argument("--seed", type=integer_type(), default=0, help="base seed (default 0)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="directory for results and figures (default: results; its parent must "
                        "exist, DIR itself is created)")
    p.add_argument("--no-figures", action="store_true", help="skip the figures")
    p.add_argument("--json", action="store_true", help="print the result(s) as JSON")
    base = p.add_mutually_exclusive_group()
    base.add_argument("--baseline", metavar="FILE",
                      help="compare the key numbers with this baseline; exit status 3 if any "
                           "moved beyond its tolerance")
    base.add_argument("--update-baseline", metavar="FILE",
                      help="write (or merge into) this baseline the run's key numbers")
    p.add_argument("--dry-run", action="store_true",
                   help="print the largest jobs' sizes and peak memory and the workers; run "
                        "nothing")
    p.add_argument("--time-probe", action="store_true",
                   help="with --dry-run: time 2 real optimiser steps of the largest "
                        "reconstruction and print that rate times its step budget (an upper "
                        "bound)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or lines")
    add_limit_options(p)
    p.set_defaults(handler=handle)


def handle(args) -> int:
    # every option is checked before a claim is imported (let alone run)
    seed = at_least(args.seed, "seed", 0)
    out = output_dir(args.out, default="results")
    guard = limits(args)
    stop_at = deadline(args)
    if args.time_probe and not args.dry_run:
        raise RFTheoryError("--time-probe goes with --dry-run")
    if args.update_baseline is not None:
        _check_baseline_file(args.update_baseline)

    from ..claims import ALL, claim_module, run_claim
    from ..claims._common import (check_claim_size, default_workers, partial_summary,
                                  result_path)
    from ..output import print_json

    names = list(ALL) if args.claim == "all" else [args.claim]
    modules = [claim_module(n) for n in names]  # refuse unknown names before running anything
    if args.baseline:  # a missing or mismatched baseline is refused before the (long) run
        from ..baseline import check_ready

        check_ready(args.baseline, [m.CLAIM for m in modules], quick=args.quick, seed=seed)
    if args.update_baseline and Path(args.update_baseline).exists():
        from ..baseline import read_baseline

        read_baseline(args.update_baseline, for_update=True)  # never overwrite a non-baseline
    configs = [(module.QUICK if args.quick
                else getattr(module, "LARGE", module.FULL) if args.large else module.FULL
                ).replace(seed=seed) for module in modules]
    for config in configs:  # and every claim's memory (run_claim checks again, for its own)
        check_claim_size(config, workers=default_workers(), **guard)
    if args.dry_run:
        return _dry_run(args, modules, configs, guard)
    results = []
    for module in modules:
        result = run_claim(module.CLAIM, quick=args.quick, large=args.large, seed=seed,
                           out_dir=out, figures=not args.no_figures,
                           progress=progress_lines(args), deadline=stop_at, **guard)
        results.append(result)
        partial = "tasks_not_run" in result
        if not args.json:
            note = " (no larger run: its default)" if args.large and result["size"] != "large" else ""
            print(f"== {module.CLAIM}{note} ({result['wall_seconds']} s)")
            print(partial_summary(result) if partial else module.summary(result))
            figs = ", ".join(result.get("figures", [])) or "none"
            print(f"results: {result_path(out, module.CLAIM, partial)}; figures: {figs}\n")
        if stop_at.passed():  # the claims after it would not start
            break
    if args.json:
        origin = produced_by(args, {"out": str(out)})
        print_json({**results[0], "produced_by": origin} if len(results) == 1
                   else [{**r, "produced_by": origin} for r in results])
    stopped = [r["claim"] for r in results if r.get("stop_reason") == "time_limit"]
    if stopped or len(results) < len(modules):
        not_run = [m.CLAIM for m in modules[len(results):]]
        print(f"rftheory verify: stopped at the time limit ({', '.join(stopped) or 'none'} "
              f"stopped early{'; not run: ' + ', '.join(not_run) if not_run else ''}); the "
              "baseline is neither compared nor written", file=sys.stderr)
        return 0
    if args.update_baseline:
        from ..baseline import update_baseline

        command = f"rftheory verify {args.claim}{' --quick' if args.quick else ''} --seed {seed}"
        data = update_baseline(args.update_baseline, results, command=command,
                               replace=args.claim == "all")
        count = sum(len(data["claims"][m.CLAIM]["numbers"]) for m in modules)
        print(f"baseline: wrote {count} key numbers of {', '.join(m.CLAIM for m in modules)} "
              f"to {args.update_baseline}", file=sys.stderr if args.json else sys.stdout)
    if args.baseline:
        return _report_baseline(args, results)
    return 0


def _dry_run(args, modules, configs, guard) -> int:
    """``--dry-run``: each claim's largest jobs, their declared peak memory, the workers; with
    ``--time-probe`` the measured rate of the largest reconstruction times its step budget."""
    from ..budget import format_bytes, format_duration, memory_limit
    from ..claims._common import claim_memory, default_workers
    from ..output import print_json

    limit, source = memory_limit(guard["memory_limit"], name=guard["via"])
    workers = default_workers()
    plans = []
    for module, config in zip(modules, configs):
        jobs = [{"kind": kind, "sizes": sizes, "job": need.job, "peak_bytes": need.peak_bytes}
                for (kind, sizes), need in zip(config.size_jobs(), claim_memory(config))]
        plan = {"claim": module.CLAIM, "workers": workers, "jobs": jobs}
        recon = [j for j in jobs if j["kind"] == "reconstruct"]
        if args.time_probe and recon:
            from ..pipeline import time_probe

            top = max(recon, key=lambda j: j["peak_bytes"])
            sizes = top["sizes"]
            steps = getattr(config, "max_steps", None)
            plan["time_probe"] = {"job": top["job"], **time_probe(
                activation=(getattr(config, "activations", None) or ["relu+tanh"])[0],
                d=sizes["d"], n=sizes["n"], p=sizes["p"], n_hat=sizes.get("n_hat"),
                method=sizes.get("method"),
                max_steps=steps if isinstance(steps, int) else None)}
        plans.append(plan)
    if args.json:
        print_json({"dry_run": True, "memory_limit": limit, "memory_limit_source": source,
                    "claims": plans})
        return 0
    print(f"memory limit: {format_bytes(limit)} ({source}); {workers} workers")
    for plan in plans:
        print(f"== {plan['claim']}")
        if not plan["jobs"]:
            print("  no job sized (small fixed sizes)")
        for job in plan["jobs"]:
            print(f"  largest job: {job['job']}: ~{format_bytes(job['peak_bytes'])}, "
                  f"{workers} at once ~{format_bytes(workers * job['peak_bytes'])}")
        probe = plan.get("time_probe")
        if probe:
            print(f"  measured on {probe['job']}: {probe['seconds_per_step']:.3g} s per step; "
                  f"at most ~{format_duration(probe['upper_bound_seconds'])} for its budget "
                  f"of {probe['max_steps']} steps (an upper bound at this rate)")
    return 0


def _check_baseline_file(text: str) -> None:
    """``--update-baseline FILE``: the package's output-path rule (``_common.output_file``)."""
    output_file(text, "--update-baseline")


def _report_baseline(args, results) -> int:
    """Compare with the baseline; print warnings and every moved number; the exit status."""
    from ..baseline import EXIT_MOVED, check_baseline

    out = sys.stderr if args.json else sys.stdout
    comparisons = check_baseline(args.baseline, results)
    for comparison in comparisons:
        for warning in comparison.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    for comparison in comparisons:  # how each key number was compared
        print(f"baseline {comparison.claim}: {len(comparison.exact)} compared exactly: "
              f"{', '.join(comparison.exact) or '-'}", file=out)
        print(f"baseline {comparison.claim}: {len(comparison.within)} within a tolerance: "
              f"{', '.join(comparison.within) or '-'}", file=out)
    moved = [d for c in comparisons for d in c.moved]
    checked = sum(c.checked for c in comparisons)
    for difference in moved:
        print(f"MOVED {difference.describe()}", file=out)
    verdict = "all held" if not moved else f"{len(moved)} moved beyond their tolerance"
    print(f"baseline {args.baseline}: {checked} key numbers checked, {verdict}", file=out)
    return EXIT_MOVED if moved else 0
