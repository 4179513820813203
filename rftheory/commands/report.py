"""``rftheory report EXPR``: an activation's one-page report card (PDF + PNG + JSON).

Examples::

    rftheory report relu+tanh                       # default size: well under a minute on 2 cores
    rftheory report "relu(z) + 0.5*sin(3*z)" --quick
    rftheory report step --out cards --json         # the JSON on stdout as well

The computation is :func:`rftheory.report.activation_card`; this module checks the options,
shows the progress, writes ``OUT/report_<name>.{json,png,pdf}`` and prints the card.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from ..errors import RFTheoryError
from .activation import METHODS  # rftheory.hermite.METHODS without importing sympy
from ._common import (add_limit_options, deadline, limits, output_dir, parse_int, print_result,
                      progress_bar_wanted, progress_lines)
from ._rules import expression, repetitions, workers as worker_count


def register(subparsers: Any) -> None:
    """Add the ``report`` subcommand."""
    p = subparsers.add_parser(
        "report", help="an activation's one-page report card: spectrum, verdicts, kernel, law",
        description="Everything the package checks for one activation, on one page (PDF and "
                    "PNG) with the same numbers as JSON: the Hermite spectrum, every verdict with "
                    "its numbers, what the sign check finds, the RF kernel against Monte Carlo, "
                    "lambda_min(K) against its Hermite bound, the concentration slope, and a "
                    "small empirical law (label fit, reconstruction success, sign flips).")
    p.add_argument("expr", metavar="EXPR", type=expression,
                   help="registry name (relu, tanh, relu+tanh, ...) or an expression in z, e.g. "
                        "'relu(z) + 0.5*tanh(z)'")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smallest card (~10 s on 2 cores)")
    size.add_argument("--full", action="store_true", help="the claims' sizes (minutes)")
    p.add_argument("--seed", default="0", help="base seed (default 0)")
    p.add_argument("--method", choices=METHODS, default="fast",
                   help="Hermite method of the spectrum and verdicts (default fast)")
    p.add_argument("--d", metavar="D", help="the empirical law's input dimension (overrides the size)")
    p.add_argument("--n", metavar="N", help="the empirical law's training-set size (>= 2)")
    p.add_argument("--seeds", metavar="S", help="seeds per point of the empirical law")
    p.add_argument("--max-steps", metavar="M", help="step budget of each reconstruction")
    p.add_argument("--workers", metavar="W", help="processes for the law's cells (default 2)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="directory of report_<name>.json/.png/.pdf (default: results; its parent "
                        "must exist, DIR itself is created)")
    p.add_argument("--name", metavar="STEM",
                   help="file stem instead of report_<name> (expressions get report_expr-<hash>)")
    p.add_argument("--no-figures", action="store_true", help="write the JSON only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the card as JSON")
    add_limit_options(p)
    p.set_defaults(handler=handle)


def _size_changes(args: argparse.Namespace) -> dict[str, int]:
    """The size options given, checked (before anything heavy is imported)."""
    changes = {}
    for option, field, low in (("d", "law_d", 1), ("n", "law_n", 2), ("seeds", "law_seeds", 1),
                               ("max_steps", "max_steps", 1)):
        value = getattr(args, option)
        if value is not None:
            changes[field] = (repetitions(value, "--seeds") if option == "seeds"
                              else parse_int(value, option.replace("_", "-"), low))
    return changes


def _size(args: argparse.Namespace, changes: dict[str, int]) -> Any:
    from ..report import SIZES

    size = SIZES["quick" if args.quick else "full" if args.full else "default"]
    return size.replace(**changes) if changes else size


class _Progress:
    """The card's progress: a tqdm bar on a terminal, otherwise one line per step on stderr
    (nothing with ``--json``), following :func:`rftheory.commands._common.progress_bar_wanted`."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._bar = None
        self._want_bar = progress_bar_wanted(args)
        self._lines = None if self._want_bar else progress_lines(args)

    def __call__(self, done: int, total: int, message: str) -> None:
        if self._want_bar:
            if self._bar is None:
                from tqdm import tqdm

                self._bar = tqdm(total=total, desc="report", unit="step", file=sys.stderr,
                                 dynamic_ncols=True)
            self._bar.set_postfix_str(message[:60], refresh=False)
            self._bar.update(done - self._bar.n)
        elif self._lines is not None:
            self._lines(f"[{done}/{total}] {message}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def handle(args: argparse.Namespace) -> int:
    """Handler: check every option (before numpy or sympy is imported), then the activation
    and the sizes, run the card, write JSON + figures, print."""
    seed = parse_int(args.seed, "seed", 0)
    workers = worker_count(args.workers)
    changes = _size_changes(args)
    out = output_dir(args.out, default="results")
    guard = limits(args)
    stop_at = deadline(args)  # a malformed --time-limit is refused before sympy loads
    if args.name is not None and (
            len(args.name) > 200 or not re.fullmatch(r"[A-Za-z0-9_+-][A-Za-z0-9_+.-]*", args.name)
            or args.name.endswith((".json", ".png", ".pdf"))):
        from ..inputs import shown

        raise RFTheoryError(f"--name must be a plain file stem of at most 200 characters "
                            f"(letters, digits, _ + - .; no directory, no suffix), got "
                            f"{shown(args.name)}")

    from ..hermite import check_double_precision
    from ..output import to_jsonable, write_json_atomic
    from ..report import activation_card, card_estimate, card_stem, card_table, plot_card

    check_double_precision(args.expr)  # a bad or unusable activation: one line, nothing shown
    size = _size(args, changes)
    stem_name = args.name if args.name is not None else card_stem(args.expr)
    estimate = card_estimate(args.expr, size, seed=seed, workers=workers)
    lines = progress_lines(args)
    if lines is not None:
        lines(f"{estimate.describe()}")
    progress = _Progress(args)
    from ..claims._common import TimeLimitReached

    try:
        card = activation_card(args.expr, size, seed=seed, method=args.method, workers=workers,
                               progress=progress, deadline=stop_at, **guard)
    except TimeLimitReached as stopped:
        print(f"rftheory report: stopped at the time limit ({len(stopped.finished)} law cells "
              f"finished, {len(stopped.not_run)} not run); no card written", file=sys.stderr)
        return 0
    finally:
        progress.close()
    json_path = out / f"{stem_name}.json"
    figures = [] if args.no_figures else plot_card(card, out / f"{stem_name}.png")
    payload = to_jsonable(card)
    write_json_atomic(json_path, payload)
    print_result(args, payload, card_table(card) + f"\nwrote {json_path}", figures)
    return 0
