"""``rftheory reconstruct``: train an RF model, recover its training set from (θ*, V), score it.

Pipeline: data X (sphere, digits or the user's CIFAR-10 files) and labels Y → min-norm θ* = Φ⁺Y
(training residual reported: the label threshold p ≈ n) → :func:`rftheory.reconstruct.reconstruct`
→ ρ in three variants (:mod:`rftheory.metrics`). One ``--seed`` drives V, the data, the labels and
the optimiser's start through separate random streams.
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..data import Dataset, gaussian_labels, load_dataset, sign_labels
from ..errors import BackendError, RFTheoryError
from ..metrics import VARIANTS, Matching, match, to_host
from ..output import format_table, print_json

#: Seconds between ρ evaluations for the progress bar (a Hungarian matching on the host).
PROGRESS_RHO_INTERVAL = 1.0
#: Bytes of V kept in memory between optimiser steps (saves redrawing V every step).
DEFAULT_V_CACHE_MB = 1024


@dataclass(frozen=True, eq=False)
class ReconstructReport:
    """Everything one ``rftheory reconstruct`` run measured (plain values and host arrays).

    ``summary()`` is the JSON-serialisable part; ``X``, ``X_hat`` and ``dataset`` are kept for
    :func:`plot_report`.
    """

    activation: str
    data: str
    d: int
    n: int
    n_hat: int
    p: int
    seed: int
    device: str
    train_residual: float
    train_rank_deficient: bool
    loss: float
    steps: int
    converged: bool
    stop_reason: str
    seconds: float
    history: tuple[float, ...]
    matchings: dict[str, Matching]
    X: np.ndarray
    X_hat: np.ndarray
    dataset: Dataset

    @property
    def p_over_dn(self) -> float:
        return self.p / (self.d * self.n)

    def summary(self) -> dict[str, Any]:
        official = self.matchings["abs"]
        return {
            "activation": self.activation, "data": self.data, "d": self.d, "n": self.n,
            "n_hat": self.n_hat, "p": self.p, "p_over_dn": self.p_over_dn, "seed": self.seed,
            "device": self.device, "train_residual": self.train_residual,
            "train_rank_deficient": self.train_rank_deficient, "loss": self.loss,
            "steps": self.steps, "converged": self.converged, "stop_reason": self.stop_reason,
            "seconds": self.seconds,
            "rho": {v: m.rho for v, m in self.matchings.items()},
            "sign_flips": official.n_flipped,
            "unmatched": official.n_unmatched,
            "per_sample_rho": official.per_sample,
            "assignment": official.assignment,
            "flipped": official.flipped,
            "history": self.history,
        }


def _positive(name: str, value: Any, minimum: int = 1) -> int:
    if value is None or value < minimum:
        raise RFTheoryError(f"--{name} must be >= {minimum}, got {value}")
    return int(value)


def _namespace(device: str) -> Any:
    """numpy for ``cpu``; CuPy for ``gpu`` after checking a CUDA device is usable."""
    if device == "cpu":
        return np
    try:
        import cupy
    except ImportError:
        raise BackendError("--device gpu needs CuPy (pip install 'rftheory[gpu]')") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - CUDA driver missing or broken: any error
        raise BackendError(f"--device gpu: no usable CUDA device ({exc})".splitlines()[0]) from None
    if count < 1:
        raise BackendError("--device gpu: no CUDA device found")
    return cupy


def _plot_paths(path: str) -> list[Path]:
    base = Path(path)
    if base.suffix.lower() not in ("", ".png", ".pdf"):
        raise RFTheoryError(f"--plot: use a .png or .pdf file name (both are written), got {path}")
    stem = base.with_suffix("") if base.suffix else base
    return [stem.with_suffix(".png"), stem.with_suffix(".pdf")]


def run_reconstruction(*, activation: str, n: int, d: int | None, p: int | None,
                       p_mult: float | None, n_hat: int | None = None, seed: int = 0,
                       data: str = "sphere", labels: str = "gaussian", device: str = "cpu",
                       max_steps: int | None = None, tol: float | None = None,
                       v_cache_mb: int = DEFAULT_V_CACHE_MB, progress: bool = False) -> ReconstructReport:
    """Train θ* on seeded data, reconstruct the training set, and measure ρ.

    Parameters mirror the command-line options; exactly one of ``p`` and ``p_mult`` (p = M·d·n)
    is given. Raises :class:`~rftheory.errors.RFTheoryError` on bad input.
    """
    from ..features import RandomFeatures, train_min_norm
    from ..reconstruct import reconstruct  # imported late: the optimiser is optional for --help

    n = _positive("n", n)
    n_hat = n if n_hat is None else _positive("n-hat", n_hat)
    seed = _positive("seed", seed, 0)
    if d is not None:
        d = _positive("d", d)
    if max_steps is not None:
        max_steps = _positive("max-steps", max_steps)
    if tol is not None and not (math.isfinite(tol) and tol >= 0):
        raise RFTheoryError(f"--tol must be a finite number >= 0, got {tol}")
    if (p is None) == (p_mult is None):
        raise RFTheoryError("give exactly one of --p and --p-mult")
    if labels not in ("gaussian", "sign"):
        raise RFTheoryError(f"--labels must be 'gaussian' or 'sign', got {labels!r}")
    v_cache_mb = _positive("v-cache-mb", v_cache_mb, 0)
    xp = _namespace(device)
    dataset = load_dataset(data, n, d, seed)
    d = dataset.d
    if p_mult is not None:
        if not (math.isfinite(p_mult) and p_mult > 0):
            raise RFTheoryError(f"--p-mult must be a positive number, got {p_mult}")
        p = max(1, round(p_mult * d * n))
    p = _positive("p", p)
    if p <= n_hat:
        raise RFTheoryError(f"p = {p} must exceed n_hat = {n_hat}: with p <= n_hat the candidates' "
                            "features span R^p and the loss is identically 0")

    features = RandomFeatures(activation, d=d, p=p, seed=seed, v_cache_bytes=v_cache_mb * 2**20)
    X = xp.asarray(dataset.X)
    Y = xp.asarray(gaussian_labels(n, seed) if labels == "gaussian" else sign_labels(n, seed))
    model = train_min_norm(features, X, Y)

    options: dict[str, Any] = {"seed": seed}
    if max_steps is not None:
        options["max_steps"] = max_steps
    if tol is not None:
        options["tol"] = tol
    bar = None
    if progress:
        from tqdm import tqdm

        budget = max_steps
        if budget is None:  # the optimiser's own default budget, for the bar's total
            default = inspect.signature(reconstruct).parameters.get("max_steps")
            budget = default.default if default is not None and isinstance(default.default, int) else None
        bar = tqdm(total=budget, desc="reconstruct", unit="step", file=sys.stderr,
                   dynamic_ncols=True)
        state = {"step": 0, "rho_at": -math.inf}

        def callback(step: int, loss: float, X_hat: Any) -> None:
            bar.update(step - state["step"])
            state["step"] = step
            postfix = {"loss": f"{loss:.3e}"}
            now = time.perf_counter()
            if now - state["rho_at"] >= PROGRESS_RHO_INTERVAL:
                state["rho_at"] = now
                state["rho"] = match(dataset.X, to_host(X_hat), "abs").rho
            if "rho" in state:
                postfix["ρ"] = f"{state['rho']:.3f}"
            bar.set_postfix(postfix, refresh=False)

        options["callback"] = callback
    t0 = time.perf_counter()
    try:
        result = reconstruct(features, model.theta, n_hat, **options)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    X_hat = to_host(result.X_hat)
    matchings = {v: match(dataset.X, X_hat, v) for v in VARIANTS}
    return ReconstructReport(
        activation=features.activation.name, data=data, d=d, n=n, n_hat=n_hat, p=p, seed=seed,
        device=device, train_residual=float(model.train_residual),
        train_rank_deficient=bool(model.gram.rank_deficient), loss=float(result.loss),
        steps=int(result.steps), converged=bool(result.converged),
        stop_reason=str(result.stop_reason), seconds=seconds,
        history=tuple(float(v) for v in result.history), matchings=matchings,
        X=dataset.X, X_hat=X_hat, dataset=dataset)


def plot_report(report: ReconstructReport, path: str, *, max_images: int = 12) -> list[Path]:
    """Write the run's figure as PNG and PDF; returns the paths written.

    Image data: originals (top) above their matched reconstructions (bottom), in training order,
    each reconstruction shown with the sign of its official-ρ match corrected. Synthetic data:
    the loss curve L(X̂_t) on a log scale.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = _plot_paths(path)
    official = report.matchings["abs"]
    if report.dataset.is_image:
        shown = [i for i in range(report.n) if official.assignment[i] >= 0][:max_images]
        if not shown:
            raise RFTheoryError("--plot: no training image was matched to a reconstruction")
        signs = np.where(official.flipped[shown], -1.0, 1.0)[:, None]
        originals = report.dataset.to_images(report.X[shown])
        recon = report.dataset.to_images(signs * report.X_hat[official.assignment[shown]])
        fig, axes = plt.subplots(2, len(shown), figsize=(1.3 * len(shown) + 0.8, 3.2),
                                 squeeze=False)
        cmap = "gray_r" if originals.ndim == 3 else None
        for k, i in enumerate(shown):
            axes[0, k].imshow(originals[k], cmap=cmap)
            axes[1, k].imshow(recon[k], cmap=cmap)
            axes[1, k].set_title(f"{official.per_sample[i]:.2f}", fontsize=7)
            for ax in axes[:, k]:
                ax.set_xticks([])
                ax.set_yticks([])
        axes[0, 0].set_ylabel(r"$x_i$")
        axes[1, 0].set_ylabel(r"$\hat{x}_{\pi(i)}$")
        fig.suptitle(f"{report.data}: {report.activation}, n={report.n}, p={report.p} "
                     f"(p/dn={report.p_over_dn:.2g}), ρ={official.rho:.3f}", fontsize=9)
    else:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        hist = np.asarray(report.history, dtype=float)
        # log axis: exact zeros are drawn at the smallest positive double
        ax.semilogy(np.arange(1, hist.size + 1), np.maximum(hist, np.finfo(float).tiny))
        ax.set_xlabel("step $t$")
        ax.set_ylabel(r"$L(\hat{X}_t)$")
        ax.set_title(f"{report.activation}, d={report.d}, n={report.n}, p={report.p}, "
                     f"ρ={official.rho:.3f}", fontsize=9)
    fig.tight_layout()
    for out in paths:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=150)
    plt.close(fig)
    return paths


def _table(report: ReconstructReport) -> str:
    m = report.matchings
    rows = [
        ("data", report.data), ("activation", report.activation), ("device", report.device),
        ("d", report.d), ("n", report.n), ("n_hat", report.n_hat), ("p", report.p),
        ("p/(dn)", f"{report.p_over_dn:.3g}"),
        ("train residual ‖Φθ*−Y‖/‖Y‖", f"{report.train_residual:.3e}"),
        ("final loss L(X̂)", f"{report.loss:.3e}"),
        ("steps", report.steps), ("stop reason", report.stop_reason),
        ("time [s]", f"{report.seconds:.2f}"),
        ("ρ official (|x|, Hungarian)", f"{m['abs'].rho:.4f}"),
        ("ρ signed", f"{m['signed'].rho:.4f}"),
        ("ρ up to sign ±x̂", f"{m['sign_invariant'].rho:.4f}"),
        ("sign flips (official match)", f"{m['abs'].n_flipped}/{report.n - m['abs'].n_unmatched}"),
    ]
    if m["abs"].n_unmatched:
        rows.append(("unmatched training points", m["abs"].n_unmatched))
    return format_table(["quantity", "value"], rows)


def _handle(args: argparse.Namespace) -> int:
    if args.plot is not None:
        _plot_paths(args.plot)  # refuse a bad name before the (long) run
    progress = not args.json and not args.no_progress and sys.stderr.isatty()
    report = run_reconstruction(
        activation=args.activation, n=args.n, d=args.d, p=args.p, p_mult=args.p_mult,
        n_hat=args.n_hat, seed=args.seed, data=args.data, labels=args.labels,
        device=args.device, max_steps=args.max_steps, tol=args.tol, v_cache_mb=args.v_cache_mb,
        progress=progress)
    written = plot_report(report, args.plot) if args.plot is not None else []
    if args.json:
        payload = report.summary()
        payload["figures"] = [str(p) for p in written]
        print_json(payload)
    else:
        print(_table(report))
        for path in written:
            print(f"wrote {path}")
    return 0


def register(subparsers: Any) -> None:
    """Add the ``reconstruct`` subcommand."""
    parser = subparsers.add_parser(
        "reconstruct",
        help="train an RF model and reconstruct its training data from (θ*, V)",
        description="Train θ* = Φ⁺Y on n points, recover n̂ candidates by minimising the "
                    "projection loss, and report ρ (official, signed, up to sign).")
    parser.add_argument("--activation", default="relu+tanh",
                        help="registry name or expression in z (default: relu+tanh)")
    parser.add_argument("--d", type=int, help="input dimension (required for sphere data)")
    parser.add_argument("--n", type=int, required=True, help="number of training points")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--p", type=int, help="number of random features")
    size.add_argument("--p-mult", type=float, metavar="M", help="p = M·d·n")
    parser.add_argument("--n-hat", type=int, help="number of candidates n̂ (default: n)")
    parser.add_argument("--seed", type=int, default=0, help="seed of V, data, labels, start")
    parser.add_argument("--data", default="sphere", help="sphere | digits | cifar10:DIR")
    parser.add_argument("--labels", choices=("gaussian", "sign"), default="gaussian")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--max-steps", type=int, help="optimiser iteration budget")
    parser.add_argument("--tol", type=float, help="target loss")
    parser.add_argument("--v-cache-mb", type=int, default=DEFAULT_V_CACHE_MB,
                        help=f"keep V in memory if it fits (default {DEFAULT_V_CACHE_MB} MB)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--plot", metavar="FILE", help="write a figure (PNG and PDF)")
    parser.set_defaults(handler=_handle)
