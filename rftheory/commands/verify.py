"""``rftheory verify CLAIM|all``: run a claim's check, save JSON + figures, print the summary."""

from __future__ import annotations

from ..output import print_json
from ._common import progress_lines


def register(subparsers) -> None:
    """Add the ``verify`` subcommand."""
    p = subparsers.add_parser("verify", help="check a claim of the paper (writes results/<claim>.json + figures)",
                       description="Run the verification of one claim of the paper, or all of them.")
    p.add_argument("claim", help="kernel_concentration, law, theorem1, theorem2, sign, nhat, "
                                 "twolayer_law, or all")
    p.add_argument("--quick", action="store_true", help="small, fast version (minutes on 2 cores)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--out", default="results", help="directory for results and figures")
    p.add_argument("--no-figures", action="store_true", help="skip the figures")
    p.add_argument("--json", action="store_true", help="print the result(s) as JSON")
    p.set_defaults(handler=handle)


def handle(args) -> int:
    from ..claims import CLAIMS, claim_module, run_claim

    names = list(CLAIMS) if args.claim == "all" else [args.claim]
    modules = [claim_module(n) for n in names]  # refuse unknown names before running anything
    results = []
    for module in modules:
        result = run_claim(module.CLAIM, quick=args.quick, seed=args.seed, out_dir=args.out,
                           figures=not args.no_figures, progress=progress_lines(args))
        results.append(result)
        if not args.json:
            print(f"== {module.CLAIM} ({result['wall_seconds']} s)")
            print(module.summary(result))
            figs = ", ".join(result.get("figures", [])) or "none"
            print(f"results: {args.out}/{module.CLAIM}.json; figures: {figs}\n")
    if args.json:
        print_json(results[0] if len(results) == 1 else results)
    return 0
