"""``rftheory verify CLAIM|all``: run a claim's check, save JSON + figures, print the summary."""

from __future__ import annotations

from ._common import add_limit_options, at_least, limits, output_dir, produced_by, progress_lines


def register(subparsers) -> None:
    """Add the ``verify`` subcommand."""
    p = subparsers.add_parser("verify", help="check a claim of the paper (writes results/<claim>.json + figures)",
                       description="Run the verification of one claim of the paper, or all of them.")
    p.add_argument("claim", help="kernel_concentration, law, theorem1, theorem2, sign, nhat, "
                                 "twolayer_law, headline, or all")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small, fast version (minutes on 2 cores)")
    size.add_argument("--large", action="store_true",
                      help="the claim's larger run where it has one (law: the d x n grid through "
                           "a resumable sweep store under --out, hours on 2 cores; headline: "
                           "n = 100, a GPU's job); others run their default")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="directory for results and figures (default: results; its parent must "
                        "exist, DIR itself is created)")
    p.add_argument("--no-figures", action="store_true", help="skip the figures")
    p.add_argument("--json", action="store_true", help="print the result(s) as JSON")
    add_limit_options(p)
    p.set_defaults(handler=handle)


def handle(args) -> int:
    # every option is checked before a claim is imported (let alone run)
    seed = at_least(args.seed, "seed", 0)
    out = output_dir(args.out, default="results")
    guard = limits(args)

    from ..claims import CLAIMS, claim_module, run_claim
    from ..claims._common import check_claim_size, default_workers
    from ..output import print_json

    names = list(CLAIMS) if args.claim == "all" else [args.claim]
    modules = [claim_module(n) for n in names]  # refuse unknown names before running anything
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
    return 0
