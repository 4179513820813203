"""``rftheory kernel EXPR --d D --n N --p P1,P2,...``: how ΦΦᵀ/p concentrates around the RF kernel.

For one activation and n points on the √d-sphere: ‖ΦΦᵀ/p − K‖_op and λ_min(ΦΦᵀ)/p for each p
(averaged over ``--reps`` independent draws of V), λ_min(K), its Hermite lower bounds and the
fitted log–log slope of the error (−1/2 expected). The measurement is
:func:`rftheory.concentration.measure_concentration`, the same one ``rftheory verify
kernel_concentration`` runs for several activations.
"""

from __future__ import annotations

import math

from ..errors import RFTheoryError
from ..output import format_table, print_json
from ._common import (add_limit_options, deadline, figure_paths, limits, parse_int,
                      parse_int_list, produced_by, progress_bar_wanted, progress_lines)
from ._rules import expression, repetitions

#: Largest n accepted: the check diagonalises n × n matrices (O(n³)) for every p and draw.
MAX_N = 5000


def register(subparsers) -> None:
    """Add the ``kernel`` subcommand."""
    p = subparsers.add_parser(
        "kernel", help="concentration of PhiPhi^T/p around the RF kernel K, and lambda_min(K)",
        description="Measure ||PhiPhi^T/p - K||_op and lambda_min(PhiPhi^T)/p against p for one "
                    "activation on n points of the sphere of radius sqrt(d), with lambda_min(K), "
                    "its Hermite lower bound and the fitted log-log slope (-1/2 expected).")
    p.add_argument("activation", metavar="EXPR", type=expression,
                   help="activation: registry name (relu, tanh, relu+tanh, erf, ...) or an "
                        "expression in z such as 'relu(z) + 0.5*tanh(z)'")
    # Numbers are parsed here, not by argparse, so that bad input gives one line and exit 2.
    p.add_argument("--d", required=True, metavar="D", help="input dimension (>= 1)")
    p.add_argument("--n", required=True, metavar="N", help="number of data points (>= 1)")
    p.add_argument("--p", required=True, metavar="P1,P2,...",
                   help="comma-separated numbers of features, e.g. 100,400,1600,6400")
    p.add_argument("--seed", default="0", help="seed of the data and of V (default 0)")
    p.add_argument("--reps", default="4",
                   help="independent draws of V per p, averaged (default 4; at most 10000)")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("--plot", metavar="FILE",
                   help="write the figure to FILE (.png or .pdf; both are written)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or lines")
    add_limit_options(p)
    p.set_defaults(handler=handle)


def _z(z: float) -> str:
    if not math.isfinite(z):
        return "—"  # no spread in (uᵀφ)² (e.g. one feature, or a zero bottom eigenvector image)
    return f"{z:+.2f}" if abs(z) < 1e4 else f"{z:+.1e}"


def curve_table(c: dict) -> str:
    """Per-p table of one activation's curve (used by ``rftheory kernel``)."""
    import numpy as np

    rows = []
    for j, p in enumerate(c["p"]):
        rows.append([p, f"{c['op_error_mean'][j]:.4e}", f"{c['lambda_min_empirical_mean'][j]:.5e}",
                     f"{np.mean(c['clt_sd'][j]):.2e}", _z(c['lambda_min_z'][j])])
    return format_table(["p", "||PhiPhi^T/p - K||_op", "lambda_min(PhiPhi^T)/p", "CLT sd",
                         "z"], rows)


def verdict_lines(result: dict) -> str:
    """The verdicts of the JSON's ``verdict`` block, one line each, and the overall one."""
    from ..concentration import EXPECTED_SLOPE, LAMBDA_RTOL, SLOPE_TOLERANCE

    v = result["verdict"]

    def mark(value: bool | None) -> str:
        return {True: "ok", False: "FAIL", None: "n/a"}[value]

    rel = result.get("lambda_min_relative_error_at_max_p")
    rel_text = "unknown" if rel is None or not math.isfinite(rel) else f"{rel:+.2%}"
    lines = [
        f"verdict slope_ok:         {mark(v.get('slope_ok')):>4}  (|slope - ({EXPECTED_SLOPE})| "
        f"<= {SLOPE_TOLERANCE}" + ("; needs two values of p" if v.get("slope_ok") is None else "")
        + ")",
        f"verdict lambda_min_ok:    {mark(v.get('lambda_min_ok')):>4}  (lambda_min(PhiPhi^T)/p "
        f"at the largest p within {LAMBDA_RTOL:.0%} of lambda_min(K): {rel_text})",
        f"verdict hermite_bound_ok: {mark(v.get('hermite_bound_ok')):>4}  (lambda_min(K) >= its "
        "Hermite lower bound)",
        f"verdict all_ok:           {mark(v.get('all_ok')):>4}",
    ]
    return "\n".join(lines)


def handle(args) -> int:
    """Handler: parse the numbers, measure, print the table or JSON, optionally plot."""
    d = parse_int(args.d, "d", 1)
    n = parse_int(args.n, "n", 1)
    if n > MAX_N:
        raise RFTheoryError(f"--n must be <= {MAX_N} (n x n eigenvalue problems), got {n}")
    p_values = parse_int_list(args.p, "p")
    seed = parse_int(args.seed, "seed", 0)
    reps = repetitions(args.reps, "--reps")
    paths = figure_paths(args.plot)
    guard = limits(args)
    stop_at = deadline(args)
    from ..hermite import check_double_precision

    check_double_precision(args.activation)  # refused in one line before any progress line
    from ..budget import check
    from ..concentration import measurement_memory

    check(measurement_memory(d=d, n=n, p_values=p_values), **guard)

    from ..concentration import measure_concentration, plot_curves

    bar = _WidthBar(p_values, reps) if progress_bar_wanted(args) else None
    try:
        result = measure_concentration(args.activation, d, n, p_values, seed=seed, reps=reps,
                                       progress=bar or progress_lines(args), deadline=stop_at)
    finally:
        if bar is not None:
            bar.close()
    stopped = result.get("stop_reason") == "time_limit"
    figures = ([] if paths is None or not result["p"]
               else [str(p) for p in plot_curves([result], paths[0])])
    result["figures"] = figures
    if args.json:
        print_json({**result, "produced_by": produced_by(
            args, {"d": d, "n": n, "p": p_values, "seed": seed, "reps": reps})})
        return 0
    print(f"activation {result['activation']}, n = {n}, d = {d}, seed = {seed}, "
          f"{reps} draws of V per p, kernel series to order {result['order']}")
    print(f"lambda_min(K)                       = {result['lambda_min_kernel']:.6e}")
    print(f"Hermite lower bound, k >= 0         = {result['hermite_bound_k0']:.6e}")
    print(f"Hermite lower bound, k >= 2         = {result['hermite_bound_k2']:.6e}")
    print(f"sum_{{k>=2}} mu_k^2 (large-d approx.) = {result['parseval_tail_k2']:.6e}")
    print(curve_table(result))
    if result["slope"] is None:
        print("fitted slope: needs at least two values of p")
    else:
        se = result["slope_standard_error"]
        print(f"fitted slope of log ||PhiPhi^T/p - K||_op vs log p: {result['slope']:.3f}"
              + ("" if se is None else f" ± {se:.3f}") + " (expected -0.5)")
    print(verdict_lines(result))
    if stopped:
        print(f"stopped at the time limit: p = {', '.join(map(str, result['p_not_run']))} not "
              "measured")
    if figures:
        print(f"figure: {', '.join(figures)}")
    return 0


class _WidthBar:
    """A tqdm bar of the measurement's feature draws (widths × draws, so its rate and ETA weigh
    each width by its size), advanced by the measurement's one progress line per width (the
    widths come in the sorted order :func:`~rftheory.concentration.measure_concentration`
    measures them)."""

    def __init__(self, p_values: list[int], reps: int) -> None:
        import sys

        from tqdm import tqdm

        self._widths = iter(p_values)
        self._reps = reps
        self._bar = tqdm(total=sum(p_values) * reps, unit="feature", unit_scale=True,
                         desc="kernel", file=sys.stderr, dynamic_ncols=True)

    def __call__(self, line: str) -> None:
        self._bar.update(next(self._widths, 0) * self._reps)
        self._bar.set_postfix_str(line.split(": ", 1)[-1][:60], refresh=True)

    def close(self) -> None:
        self._bar.close()
