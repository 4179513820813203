"""``rftheory activation EXPR``: Hermite coefficients and theorem-condition verdicts in one line.

Examples::

    rftheory activation relu --order 12
    rftheory activation "relu(z) + tanh(z)" --method mpmath --digits 40
    rftheory activation gelu --method exact --order 8 --json
    rftheory activation relu+tanh --plot relu_tanh_hermite.png   # also writes the .pdf
"""

from __future__ import annotations

import argparse
import math
import pathlib
from typing import Any

from ..output import format_table, print_json
from ._common import figure_paths, produced_by
from ._rules import expression, integer_type

#: ``--method`` choices and the bounds of ``--order`` and ``--digits`` (rftheory.hermite's
#: METHODS, MAX_ORDER, MIN_DPS, MAX_DPS, repeated so that the options are checked before sympy is
#: imported; tests/test_cli_activation.py checks that they agree).
METHODS = ("exact", "mpmath", "fast")
MAX_ORDER = 1000
MIN_DPS, MAX_DPS = 5, 300

def register(subparsers: Any) -> None:
    """Add the ``activation`` subcommand."""
    parser = subparsers.add_parser(
        "activation",
        help="Hermite coefficients of an activation and the theorems' conditions on it",
        description=(
            "Compute the Hermite coefficients mu_k = E[phi(g) He_k(g)]/sqrt(k!), g ~ N(0,1), of an "
            "activation, the Parseval remainder, and whether it is Lipschitz, non-linear, which "
            "coefficients vanish, and whether an odd coefficient of order >= 3 is non-zero "
            "(sign identifiability)."
        ),
    )
    parser.add_argument("expr", metavar="EXPR", type=expression,
                        help="registry name (relu, tanh, relu+tanh, gelu, ...) or an expression in z, "
                             "e.g. 'relu(z) + 0.5*tanh(z)'")
    parser.add_argument("--order", type=integer_type(0, MAX_ORDER), default=12, metavar="K",
                        help="highest Hermite order (default 12; at most 1000)")
    parser.add_argument("--digits", type=integer_type(MIN_DPS, MAX_DPS), default=30, metavar="D",
                        help="mpmath digits for --method mpmath, digits shown for exact values "
                             "(default 30; 5 to 300)")
    parser.add_argument("--method", choices=METHODS, default="fast",
                        help="fast: double-precision quadrature (default); mpmath: D-digit quadrature; "
                             "exact: sympy closed forms")
    parser.add_argument("--time-budget", type=float, default=10.0, metavar="SECONDS",
                        help="work for each sympy stage, in nominal seconds: a fixed count of "
                             "steps (500 000 per second), so the verdict does not depend on the "
                             "machine's load (default 10)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--plot", metavar="FILE",
                        help="draw |mu_k| against k to FILE (.png or .pdf; both are written)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Handler: validate (before sympy is imported), compute the report, print it, plot."""
    from ..errors import HermiteOptionError

    if not 0 <= args.order <= MAX_ORDER:
        raise HermiteOptionError(f"--order must be between 0 and {MAX_ORDER}, got {args.order}")
    if not MIN_DPS <= args.digits <= MAX_DPS:
        raise HermiteOptionError(f"--digits must be between {MIN_DPS} and {MAX_DPS}, got {args.digits}")
    if not (math.isfinite(args.time_budget) and args.time_budget >= 0):
        raise HermiteOptionError(f"--time-budget must be a number of seconds >= 0, got {args.time_budget}")
    paths = figure_paths(args.plot)
    from ..verdicts import activation_report

    report = activation_report(args.expr, order=args.order, method=args.method, dps=args.digits,
                               time_budget=args.time_budget)
    if args.json:
        from ..output import to_jsonable

        print_json({**to_jsonable(report), "produced_by": produced_by(args)})
    else:
        print(format_report(report, digits=args.digits))
    if paths:
        plot_hermite_spectrum(report, paths)
        if not args.json:
            print("figure: " + ", ".join(str(p) for p in paths))
    return 0


def _yes_no(holds: bool | None) -> str:
    return {True: "yes", False: "no", None: "undetermined"}[holds]


def format_report(report: Any, digits: int = 30) -> str:
    """The human-readable report: coefficient table, Parseval line, verdicts."""
    lines = [f"activation {report.activation}:  φ(z) = {report.expression}",
             f"method {report.method}" + (f" ({report.dps} digits)" if report.dps else "")
             + f", orders 0..{report.order}"]
    if report.method == "exact":
        rows = [(k, "unknown" if math.isnan(v) else f"{v:.{min(digits, 17)}g}", text,
                 "0" if e == 0 else "unknown")
                for k, (v, text, e) in enumerate(zip(report.coefficients, report.coefficient_text,
                                                     report.errors))]
        lines.append(format_table(["k", "μ_k", "closed form", "error"], rows))
    else:
        rows = [(k, text, f"{e:.1e}") for k, (text, e) in enumerate(zip(report.coefficient_text,
                                                                       report.errors))]
        lines.append(format_table(["k", "μ_k", "error"], rows))
    if report.second_moment is None:
        lines.append("Parseval: E[φ²] unknown (no closed form found), so the tail is unknown")
    else:
        covered = sum(v * v for v in report.coefficients if not math.isnan(v))
        tail = "unknown" if report.tail_mass is None else \
            f"{report.tail_mass:.6g} ± {report.tail_mass_error:.1e}"
        lines.append(f"Parseval: E[φ²] = {report.second_moment_text}; Σ_{{k≤{report.order}}} μ_k² = "
                     f"{covered:.12g}; tail E[φ²] − Σ = {tail}")
    names = {"lipschitz": "Lipschitz", "nonlinearity": "non-linear",
             "parity": "even/odd", "sign_identifiability": "sign-identifiable"}
    for key, verdict in report.verdicts.items():
        lines.append(f"{names[key]:>17}: {_yes_no(verdict.holds):<12} [{verdict.basis}] {verdict.summary}")
    lines.append(f"notes: {report.notes}")
    return "\n".join(lines)


def plot_hermite_spectrum(report: Any, paths: "tuple[pathlib.Path, ...] | list") -> None:
    """Draw |μ_k| against k (log scale), marking vanishing coefficients, and save to ``paths``.

    Coefficients proven to vanish (symbolically or exactly) or numerically zero within their
    error estimate are drawn as crosses on the bottom edge; the error estimates as a dashed line.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    values = np.abs(np.asarray(report.coefficients, dtype=np.float64))
    errors = np.asarray(report.errors, dtype=np.float64)
    ks = np.arange(values.size)
    numbers = report.parity.numbers
    zero = set(numbers.get("proven_zero", [])) | set(numbers.get("numerically_zero", [])) \
        | set(numbers.get("exactly_zero", []))
    shown = np.array([k not in zero and np.isfinite(values[k]) and values[k] > 0 for k in ks])
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    if shown.any():
        ax.semilogy(ks[shown], values[shown], "o", ms=4, label=r"$|\mu_k|$")
        floor = float(np.min(values[shown])) / 10.0
    else:
        ax.set_yscale("log")
        floor = 1e-17
    finite_err = np.isfinite(errors) & (errors > 0)
    if finite_err.any():
        ax.semilogy(ks[finite_err], errors[finite_err], "--", lw=1, color="0.5", label="error estimate")
        floor = min(floor, float(np.min(errors[finite_err])) / 10.0)
    vanishing = sorted(zero)
    if vanishing:
        ax.plot(vanishing, [floor] * len(vanishing), "x", color="C3", label=r"$\mu_k = 0$")
    ax.set_xlabel(r"Hermite order $k$")
    ax.set_ylabel(r"$|\mu_k|$")
    ax.set_title(f"{report.activation}: Hermite coefficients ({report.method})")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    for path in paths:
        fig.savefig(path)
    plt.close(fig)
