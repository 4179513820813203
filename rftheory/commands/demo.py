"""``rftheory demo``: the package's main job — the law of data reconstruction at its default size.

Runs the check of :mod:`rftheory.claims.law` (= ``rftheory verify law``): sweeps p/(dn) for a few
(d, n) and seeds, reconstructs the training set at every point, locates p*_label (≈ n) and
p*_data (≈ dn), writes ``<out>/law.json`` and the figure, and prints the thresholds table and the
figure's path.
"""

from __future__ import annotations

from ._common import (add_limit_options, at_least, deadline, limits, output_dir, produced_by,
                      progress_lines)
from ._rules import integer_type


def register(subparsers) -> None:
    """Add the ``demo`` subcommand."""
    p = subparsers.add_parser(
        "demo", help="the main job: the law of data reconstruction (label vs data threshold)",
        description="Sweep p over multiples of n and dn, reconstruct the training data of the RF "
                    "model at every point, and report the label-fitting threshold p*_label/n and "
                    "the reconstruction threshold p*_data/(dn), fitted with profile-likelihood "
                    "intervals, adding runs where a threshold's interval is not yet at most "
                    "0.098·dn wide (same as `rftheory verify law`). 28–46 s on 2 free cores of "
                    "the project's VM (52–89 s of CPU over ten base seeds, measured "
                    "2026-12-05), longer when other jobs share them.")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="directory for law.json and the figures (default: results; its parent "
                        "must exist, DIR itself is created)")
    p.add_argument("--seed", type=integer_type(), default=0, help="base seed (default 0)")
    p.add_argument("--quick", action="store_true",
                   help="the quick baseline's sweep: a coarser first pass, but each side of "
                        "every interval resolved to ±0.049·dn, as the baseline's bands need "
                        "(slower than the default since the default stops on the interval's "
                        "width: 81 s against 30 s on 2 cores, 2026-12-05)")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or lines")
    add_limit_options(p)
    p.set_defaults(handler=handle)


def handle(args) -> int:
    # every option is checked before the claim is imported (let alone run)
    seed = at_least(args.seed, "seed", 0)
    out = output_dir(args.out, default="results")
    guard = limits(args)
    stop_at = deadline(args)

    from ..claims import run_claim
    from ..claims._common import partial_summary, result_path
    from ..claims.law import summary
    from ..output import print_json

    result = run_claim("law", quick=args.quick, seed=seed, out_dir=out,
                       progress=progress_lines(args), deadline=stop_at, **guard)
    if args.json:
        print_json({**result, "produced_by": produced_by(args, {"out": str(out)})})
        return 0
    partial = "tasks_not_run" in result
    print(partial_summary(result) if partial else summary(result))
    print(f"wall time {result['wall_seconds']} s; results: {result_path(out, 'law', partial)}")
    print(f"figure: {', '.join(result.get('figures', []))}")
    return 0
