"""``rftheory reconstruct``: train an RF model, recover its training set from (θ*, V), score it.

The pipeline is :mod:`rftheory.pipeline`: :func:`~rftheory.pipeline.fit_model` (data X — sphere,
digits or the user's CIFAR-10 files — and labels Y → min-norm θ* = Φ⁺Y, training residual
reported: the label threshold p ≈ n), then :func:`~rftheory.pipeline.recover_training_set`
(:func:`rftheory.reconstruct.reconstruct` → ρ in three variants); this module checks the options
before any work, shows a progress bar and prints the run. One ``--seed`` drives V, the data,
the labels and the optimiser's start through separate random streams.
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
from typing import Any

from ..errors import RFTheoryError
#: ``--method`` choices (rftheory.reconstruct.METHODS, repeated so that the parser imports neither
#: the optimiser nor sympy; tests/test_cli_reconstruct.py checks the two agree).
METHODS = ("varpro", "lbfgs")
from ..output import format_table
from ._common import (add_limit_options, at_least, deadline, figure_paths, finite_at_least,
                      limits, print_result, progress_bar_wanted)
from ._rules import expression, integer_type

#: Seconds between ρ evaluations for the progress bar (a Hungarian matching on the host).
PROGRESS_RHO_INTERVAL = 1.0
#: ``--v-cache-mb`` when not given: None, i.e. :func:`rftheory.features.default_v_cache_bytes`
#: with the job's declared peak (all the memory available at the start when the peak with V
#: cached fits the memory limit, else a quarter of it; at least 1024 MB). The cache keeps V in
#: memory between optimiser steps (saves redrawing V every step); it never changes results.
DEFAULT_V_CACHE_MB = None


def register(subparsers: Any) -> None:
    """Add the ``reconstruct`` subcommand."""
    parser = subparsers.add_parser(
        "reconstruct",
        help="train an RF model and reconstruct its training data from (θ*, V)",
        description="Train θ* = Φ⁺Y on n points, recover n̂ candidates by minimising the "
                    "projection loss, and report ρ (official, signed, up to sign).")
    parser.add_argument("--activation", default="relu+tanh", type=expression,
                        help="registry name or expression in z (default: relu+tanh)")
    parser.add_argument("--d", type=integer_type(),
                        help="input dimension (required for sphere data)")
    parser.add_argument("--n", type=integer_type(), required=True,
                        help="number of training points")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--p", type=integer_type(), help="number of random features")
    size.add_argument("--p-mult", type=float, metavar="M", help="p = M·d·n")
    parser.add_argument("--n-hat", type=integer_type(),
                        help="number of candidates n̂ (default: n)")
    parser.add_argument("--seed", type=integer_type(), default=0,
                        help="seed of V, data, labels, start")
    parser.add_argument("--data", default="sphere",
                        help="sphere | digits | patches[:standardised] | cifar10:DIR")
    parser.add_argument("--labels", choices=("gaussian", "sign"), default="gaussian")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--method", metavar="{" + ",".join(METHODS) + "}",
                        help=f"reconstruction algorithm (default: {METHODS[0]}, Levenberg–Marquardt "
                             "on the variable-projection loss; lbfgs: the earlier over-complete "
                             "L-BFGS)")
    parser.add_argument("--max-steps", type=integer_type(),
                        help="optimiser iteration budget (default: 20 000 up to d = 40, then "
                             "500·d; --method lbfgs 20 000)")
    parser.add_argument("--tol", type=float, help="target loss")
    parser.add_argument("--v-cache-mb", type=integer_type(), default=DEFAULT_V_CACHE_MB,
                        help="keep V in memory if it fits in this many MB (default: keep it when "
                             "the job's declared peak with V kept fits the memory limit)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--plot", metavar="FILE", help="write a figure (PNG and PDF)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the sizes and the peak memory; run nothing")
    parser.add_argument("--time-probe", action="store_true",
                        help="with --dry-run: train, time 2 real optimiser steps, and print the "
                             "measured time per step times the step budget (an upper bound)")
    add_limit_options(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Handler: check every option and the job's size before the (long) run, run the pipeline,
    print (with its warnings), plot. The options are checked before numpy is imported."""
    stop_at = deadline(args)  # the clock starts with the command
    figure_paths(args.plot)
    n = at_least(args.n, "n")
    n_hat = n if args.n_hat is None else at_least(args.n_hat, "n-hat")
    seed = at_least(args.seed, "seed", 0)
    d = None if args.d is None else at_least(args.d, "d")
    max_steps = None if args.max_steps is None else at_least(args.max_steps, "max-steps")
    tol = None if args.tol is None else finite_at_least(args.tol, "tol")
    v_cache_mb = None if args.v_cache_mb is None else at_least(args.v_cache_mb, "v-cache-mb", 0)
    if args.method is not None and args.method not in METHODS:
        raise RFTheoryError(f"--method must be one of {', '.join(METHODS)}, got {args.method!r}")
    if args.p_mult is not None and not (math.isfinite(args.p_mult) and args.p_mult > 0):
        raise RFTheoryError(f"--p-mult must be a positive number, got {args.p_mult}")
    if args.p is not None and at_least(args.p, "p") <= n_hat:
        raise RFTheoryError(f"p = {args.p} must exceed n_hat = {n_hat}: with p <= n_hat the "
                            "candidates' features span R^p and the loss is identically 0")
    guard = limits(args)
    from ..data import dataset_dimension  # numpy, not yet sympy

    d = dataset_dimension(args.data, d)
    from ..features import default_v_cache_bytes  # sympy (through the activations)

    from ..budget import check, memory_limit
    from ..pipeline import feature_count, fit_model, reconstruction_memory, recover_training_set
    from ..reconstruction_figure import plot_reconstruction
    from ..varpro import default_max_sweeps

    p = at_least(feature_count(args.p, p_mult=args.p_mult, d=d, n=n), "p")
    if v_cache_mb is None:   # cache V when the job's declared peak with V cached fits the limit
        v_cache_bytes = default_v_cache_bytes(
            lambda cache: reconstruction_memory(d=d, n=n, p=p, n_hat=n_hat, method=args.method,
                                                v_cache_bytes=cache).peak_bytes,
            memory_limit(guard["memory_limit"])[0])
    else:
        v_cache_bytes = v_cache_mb * 2**20
    if p <= n_hat:
        raise RFTheoryError(f"p = {p} must exceed n_hat = {n_hat}: with p <= n_hat the candidates' "
                            "features span R^p and the loss is identically 0")
    if args.time_probe and not args.dry_run:
        raise RFTheoryError("--time-probe goes with --dry-run")
    resolved = _optimiser_options(tol, max_steps, d, args.method)
    resolved["max_sweeps"] = default_max_sweeps(p, d, n_hat)
    need = check(reconstruction_memory(d=d, n=n, p=p, n_hat=n_hat, method=args.method,
                                       v_cache_bytes=v_cache_bytes), **guard)
    sizes = {"d": d, "n": n, "p": p, "n_hat": n_hat, "seed": seed, "labels": args.labels,
             **resolved}
    fit_options = dict(activation=args.activation, n=n, d=d, p=p, seed=seed, data=args.data,
                       labels=args.labels, device=args.device, v_cache_bytes=v_cache_bytes)
    if args.dry_run:
        return _dry_run(args, need, sizes, fit_options)
    fitted = fit_model(**fit_options)
    bar = _ProgressBar(fitted.X, resolved["max_steps"]) if progress_bar_wanted(args) else None
    try:
        run = recover_training_set(fitted, n_hat, method=args.method, tol=tol,
                                   max_steps=max_steps, callback=bar, deadline=stop_at)
    finally:
        if bar is not None:
            bar.close()
    written = plot_reconstruction(run, args.plot) if args.plot is not None else []
    table = _table(run) + "".join(f"\nwarning: {w}" for w in run.warnings())
    print_result(args, run.summary(), table, written, parameters=sizes)
    return 0


def _dry_run(args: argparse.Namespace, need: Any, sizes: dict[str, Any],
             fit_options: dict[str, Any]) -> int:
    """``--dry-run``: the sizes and the declared peak memory; with ``--time-probe`` the training
    and two real optimiser steps, timed, and their rate times the step budget."""
    from ..budget import format_bytes, format_duration, memory_limit

    limit, source = memory_limit(args.memory_limit, name="--memory-limit")
    plan: dict[str, Any] = {"dry_run": True, "job": need.job, "sizes": sizes,
                            "peak_bytes": need.peak_bytes, "memory_parts": dict(need.parts),
                            "memory_limit": limit, "memory_limit_source": source}
    lines = [need.describe(), f"memory limit: {format_bytes(limit)} ({source})",
             f"budget: {sizes['max_steps']} optimiser steps or {sizes['max_sweeps']} sweeps over V, "
             f"whichever comes first (tol {sizes['tol']:g})"]
    if args.time_probe:
        from ..pipeline import time_probe

        probe = time_probe(n_hat=sizes["n_hat"], method=args.method,
                           max_steps=sizes["max_steps"], max_sweeps=sizes["max_sweeps"],
                           **fit_options)
        plan["time_probe"] = probe
        lines.append(f"measured: training {probe['fit_seconds']:.2f} s, "
                     f"{probe['seconds_per_step']:.3g} s per step ({probe['probe_steps']} real "
                     f"steps); at most ~{format_duration(probe['upper_bound_seconds'])} for the "
                     f"whole budget ({probe['max_steps']} steps or {probe['max_sweeps']} sweeps; "
                     "an upper bound at this rate: runs that reach tol stop earlier)")
    print_result(args, plan, "\n".join(lines), parameters=sizes)
    return 0


def _optimiser_options(tol: float | None, max_steps: int | None, d: int,
                       method: str | None) -> dict[str, Any]:
    """``tol`` and ``max_steps`` as the run uses them: the options, or the reconstruction's
    defaults (its signature's tolerance and its budget at d, so they follow the library)."""
    from ..reconstruct import reconstruct, step_budget

    return {"tol": inspect.signature(reconstruct).parameters["tol"].default if tol is None else tol,
            "max_steps": step_budget(d, method) if max_steps is None else max_steps}


class _ProgressBar:
    """A tqdm bar of optimiser steps with the loss and, once a second, ρ against the training set
    X (the optimiser's callback)."""

    def __init__(self, X: Any, max_steps: int | None) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=max_steps if isinstance(max_steps, int) else None,
                         desc="reconstruct", unit="step", file=sys.stderr, dynamic_ncols=True)
        self._step = 0
        self._rho_at = -math.inf
        self._rho: float | None = None
        self.X = X

    def __call__(self, step: int, loss: float, X_hat: Any) -> None:
        from ..backend import to_host
        from ..metrics import match

        self._bar.update(step - self._step)
        self._step = step
        postfix = {"loss": f"{loss:.3e}"}
        now = time.perf_counter()
        if now - self._rho_at >= PROGRESS_RHO_INTERVAL:
            self._rho_at = now
            self._rho = match(self.X, to_host(X_hat), "abs").rho
        if self._rho is not None:
            postfix["ρ"] = f"{self._rho:.3f}"
        self._bar.set_postfix(postfix, refresh=False)

    def close(self) -> None:
        self._bar.close()


def _table(run: Any) -> str:
    from ..output import significant  # ρ to 3 significant digits (1.1e-4, not 0.0000)

    fitted, m = run.fitted, run.matchings
    rows = [
        ("data", fitted.data), ("activation", fitted.features.activation.name),
        ("device", fitted.device),
        ("d", fitted.d), ("n", fitted.n), ("n_hat", run.n_hat), ("p", fitted.p),
        ("p/(dn)", f"{fitted.p_over_dn:.3g}"),
        ("train residual ‖Φθ*−Y‖/‖Y‖", f"{fitted.train_residual:.3e}"),
        ("final loss L(X̂)", f"{run.loss:.3e}"), ("method", run.result.method),
        ("steps", run.result.steps), ("passes over V", run.result.passes),
        ("sweeps (work budget)", run.result.sweeps),
        ("stop reason", run.result.stop_reason),
        ("time [s]", f"{run.reconstruct_seconds:.2f}"),
        ("ρ official (|x|, Hungarian)", significant(m['abs'].rho, 3)),
        ("ρ signed", significant(m['signed'].rho, 3)),
        ("ρ up to sign ±x̂", significant(m['sign_invariant'].rho, 3)),
        ("sign flips (official match)", f"{m['abs'].n_flipped}/{fitted.n - m['abs'].n_unmatched}"),
    ]
    if m["abs"].n_unmatched:
        rows.append(("unmatched training points", m["abs"].n_unmatched))
    return format_table(["quantity", "value"], rows)
