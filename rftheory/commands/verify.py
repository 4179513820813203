"""``rftheory verify CLAIM|all``: run a claim's check, save JSON + figures, print the summary.

``--baseline FILE`` then compares the run's key numbers with a stored baseline and exits with
status 3 (:data:`rftheory.baseline.EXIT_MOVED`) naming every number that moved beyond its
tolerance; ``--update-baseline FILE`` writes them (see :mod:`rftheory.baseline`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import RFTheoryError
from ._common import (_check_writable, _refuse_system, add_limit_options, at_least, limits,
                      output_dir, produced_by, progress_lines)


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
                           "a resumable sweep store under --out, ~80 min on 2 cores; headline: "
                           "n = 100, a GPU's job); others run their default")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
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
    add_limit_options(p)
    p.set_defaults(handler=handle)


def handle(args) -> int:
    # every option is checked before a claim is imported (let alone run)
    seed = at_least(args.seed, "seed", 0)
    out = output_dir(args.out, default="results")
    guard = limits(args)
    if args.update_baseline is not None:
        _check_baseline_file(args.update_baseline)

    from ..claims import ALL, claim_module, run_claim
    from ..claims._common import check_claim_size, default_workers
    from ..output import print_json

    names = list(ALL) if args.claim == "all" else [args.claim]
    modules = [claim_module(n) for n in names]  # refuse unknown names before running anything
    if args.baseline:  # a missing or mismatched baseline is refused before the (long) run
        from ..baseline import check_ready

        check_ready(args.baseline, [m.CLAIM for m in modules], quick=args.quick, seed=seed)
    if args.update_baseline and Path(args.update_baseline).exists():
        from ..baseline import read_baseline

        read_baseline(args.update_baseline)  # never overwrite a file that is not a baseline
    for module in modules:  # and every claim's sizes (run_claim checks again, for its own)
        config = (module.QUICK if args.quick
                  else getattr(module, "LARGE", module.FULL) if args.large else module.FULL)
        check_claim_size(config.replace(seed=seed), workers=default_workers(), **guard)
    results = []
    for module in modules:
        result = run_claim(module.CLAIM, quick=args.quick, large=args.large, seed=seed,
                           out_dir=out, figures=not args.no_figures,
                           progress=progress_lines(args), **guard)
        results.append(result)
        if not args.json:
            note = " (no larger run: its default)" if args.large and result["size"] != "large" else ""
            print(f"== {module.CLAIM}{note} ({result['wall_seconds']} s)")
            print(module.summary(result))
            figs = ", ".join(result.get("figures", [])) or "none"
            print(f"results: {out / (module.CLAIM + '.json')}; figures: {figs}\n")
    if args.json:
        origin = produced_by(args, {"out": str(out)})
        print_json({**results[0], "produced_by": origin} if len(results) == 1
                   else [{**r, "produced_by": origin} for r in results])
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


def _check_baseline_file(text: str) -> None:
    """``--update-baseline FILE``: the package's output-path rule (``_common``) for one file."""
    option = "--update-baseline"
    if not str(text).strip():
        raise RFTheoryError(f"{option}: empty file name")
    path = Path(text)
    shown = repr(str(path))
    if path.is_dir():
        raise RFTheoryError(f"{option} {shown}: is a directory; give a file name in it")
    if not path.parent.is_dir():
        raise RFTheoryError(f"{option}: directory {str(path.parent)!r} does not exist")
    _refuse_system(path.parent, option, shown)
    _check_writable(path.parent, option, shown)


def _report_baseline(args, results) -> int:
    """Compare with the baseline; print warnings and every moved number; the exit status."""
    from ..baseline import EXIT_MOVED, check_baseline

    out = sys.stderr if args.json else sys.stdout
    comparisons = check_baseline(args.baseline, results)
    for comparison in comparisons:
        for warning in comparison.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    moved = [d for c in comparisons for d in c.moved]
    checked = sum(c.checked for c in comparisons)
    for difference in moved:
        print(f"MOVED {difference.describe()}", file=out)
    verdict = "all held" if not moved else f"{len(moved)} moved beyond their tolerance"
    print(f"baseline {args.baseline}: {checked} key numbers checked, {verdict}", file=out)
    return EXIT_MOVED if moved else 0
