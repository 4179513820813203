"""Claim (the paper's headline table): at CIFAR-10's dimension d = 3072, the training images of
an RF model are not recoverable at p = n, half-recovered at p = dn and recovered at p = 10·dn,
while the labels are fit (train loss ≈ 0) throughout.

The paper's table (random features on n = 100 CIFAR-10 images, ReLU): ρ ≈ 1 at p = n, ≈ 0.5 at
p = dn, ≈ 0 at p = 10·dn, train loss ≈ 0 in every column. This check runs the same table on
images that ship with an installed package, so nothing is downloaded: 32×32×3 patches of
scikit-image's photographs (:func:`rftheory.data.patches_data`, ``rftheory[images]``), for ReLU
and relu + tanh, at p ∈ {n, dn, 10·dn}. Every cell is one :func:`rftheory.pipeline.fit_model` +
:func:`rftheory.pipeline.recover_training_set` with the reconstruction's default attack, and
reports the train residual ‖Φθ* − Y‖/‖Y‖ and mean squared train loss, the official ρ, the
sign-invariant ρ and the signed ρ, and the images side by side.

Sizes. At n = 100, p = 10·dn is 3.07 M features (V = 75 GB in float64): a GPU's job
(:data:`LARGE`, ``--large``, ``device="gpu"``). On 2 CPU cores :data:`FULL` uses n = 10
(p = 10·dn = 307 200, V cached = 7.0 GiB in float64). Every cell runs: before it starts, its
peak memory (declared by the pipeline, :func:`rftheory.pipeline.reconstruction_memory`) is
checked by :mod:`rftheory.budget`, and a cell that cannot fit in memory is reported as skipped
with that one-line reason. Time is not estimated: with a deadline (``--time-limit``) the cell
running when it passes stops with its best reconstruction (``stop_reason = "time_limit"``) and
the cells after it are reported as not run.

Verdict (falsifiable), over the cells that ran: every train residual < :data:`TRAIN_TOL`; for
each activation ρ (official) decreases from p = n to p = dn to p = 10·dn, with
ρ < :data:`RHO_SUCCESS` at 10·dn and ρ > :data:`RHO_SUCCESS` at p = n. ``complete`` says
whether every cell ran to its own end (tolerance, stall or step budget, not the deadline); a
table with skipped, unfinished or unrun cells is reported, never called supported.

Run: ``rftheory verify headline [--quick | --large]``, ``python -m rftheory.claims.headline``.

Notes
-----
ρ is the threshold-free number of one seed (one training set, one V); the paper's values are
means over its runs. The reconstruction is the package's default attack at ``max_steps``; near
p = dn a budget-limited run may stop short, as in :mod:`rftheory.claims.law`. The patches are on
the √d-sphere by default (the theory's data model); ``data="patches:standardised"`` uses the
paper's scalar standardisation, whose norms vary by patch (0.3–1.8·√d over the pool) while the
reconstruction's candidates stay on the sphere — a floor on ρ that the sphere data do not have.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rftheory.claims._common import ClaimConfig, check_activations, main_for, source_digests
from rftheory.deadline import TIME_LIMIT_REACHED, Deadline
from rftheory.metrics import run_kind
import rftheory.metrics as _metrics
from rftheory.errors import ResourceLimitError, RFTheoryError
from rftheory.output import format_table, save_figure
from rftheory.varpro import WORK_BUDGET

CLAIM = "headline"

#: Feature counts of the table, as multiples: "n" (p = n), "dn", "10dn".
MULTIPLES = {"n": lambda d, n: n, "dn": lambda d, n: d * n, "10dn": lambda d, n: 10 * d * n}
#: The paper's values of ρ in each column (Iurada et al., CIFAR-10, n = 100, ReLU), for the table.
PAPER_RHO = {"n": "≈ 1", "dn": "≈ 0.5", "10dn": "≈ 0"}
#: A train residual below this counts as "labels fit" (measured ≤ 1e-9 on every cell that ran).
TRAIN_TOL = 1e-6
#: ρ below this counts as recovered (the law claim's threshold, :data:`rftheory.claims.law.RHO_SUCCESS`).
RHO_SUCCESS = _metrics.RHO_SUCCESS
#: Images of each cell kept in the result (as 8-bit pixels) and shown in the figure.
SHOWN = 10
#: Seconds between the progress messages of a running cell (``[step/max_steps] ...``).
STEP_PROGRESS_SECONDS = 10.0


@dataclasses.dataclass(frozen=True)
class Config(ClaimConfig):
    """What the headline table covers; checked on creation.

    Attributes
    ----------
    n : int
        Training images.
    multiples : tuple of str
        Columns, keys of :data:`MULTIPLES` (``"n"``, ``"dn"``, ``"10dn"``).
    activations : tuple of str
        Rows (default ReLU, the paper's, and relu + tanh).
    data : str
        ``"patches"`` (on the √d-sphere) or ``"patches:standardised"``; any image data set of
        :func:`rftheory.data.load_dataset` works (``"cifar10:DIR"`` for the real thing).
    max_steps : int
        Optimiser budget per reconstruction.
    device : {"cpu", "gpu"}
    v_cache_bytes : int
        Keep V in memory when it fits (speed only).
    """

    n: int = 10
    multiples: tuple[str, ...] = ("n", "dn", "10dn")
    activations: tuple[str, ...] = ("relu", "relu+tanh")
    data: str = "patches"
    max_steps: int = 3000
    device: str = "cpu"
    v_cache_bytes: int = 8 * 2**30

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 2:
            raise RFTheoryError(f"n must be an integer >= 2, got {self.n!r}")
        multiples = tuple(self.multiples)
        if not multiples or any(m not in MULTIPLES for m in multiples):
            raise RFTheoryError(f"multiples must be among {', '.join(MULTIPLES)}, got {multiples!r}")
        self._set("multiples", multiples)
        self._set("activations", tuple(str(a) for a in self.activations))
        if not self.activations:
            raise RFTheoryError("give at least one activation")
        if isinstance(self.max_steps, bool) or int(self.max_steps) != self.max_steps \
                or self.max_steps < 1:
            raise RFTheoryError(f"max_steps must be a positive integer, got {self.max_steps!r}")
        if self.device not in ("cpu", "gpu"):
            raise RFTheoryError(f"device must be 'cpu' or 'gpu', got {self.device!r}")


#: ``rftheory verify headline``: n = 10 on the CPU (p = 10, 30 720, 307 200).
FULL = Config()
#: ``--quick``: n = 4, the p = n and p = dn columns, 300 steps (a smoke run of the table).
QUICK = Config(n=4, multiples=("n", "dn"), max_steps=300)
#: ``--large``: the paper's size, n = 100 on a GPU (p = 100, 307 200, 3 072 000).
LARGE = Config(n=100, device="gpu", v_cache_bytes=0)


def _pixels(images: np.ndarray) -> dict[str, Any]:
    """Displayable images in [0, 1] as 8-bit pixels, base64 (compact in JSON)."""
    data = np.clip(np.round(np.asarray(images) * 255), 0, 255).astype(np.uint8)
    return {"shape": list(data.shape), "uint8_base64": base64.b64encode(data.tobytes()).decode()}


def _unpixels(stored: dict[str, Any]) -> np.ndarray:
    raw = np.frombuffer(base64.b64decode(stored["uint8_base64"]), dtype=np.uint8)
    return raw.reshape(stored["shape"]).astype(np.float64) / 255.0


def _memory(config: Config, d: int, p: int, memory_limit: float | str | None
            ) -> tuple[str, str | None]:
    """(the cell's declared memory, the reason to skip it or None): a cell is skipped only when
    it cannot fit in this machine's memory (on the CPU; a GPU's memory is not this machine's)."""
    from rftheory import budget
    from rftheory.pipeline import reconstruction_memory

    # no method: reconstruct's default, the one recover_training_set runs in run()
    need = reconstruction_memory(d=d, n=config.n, p=p, v_cache_bytes=config.v_cache_bytes)
    if config.device != "cpu":
        return need.describe(), None
    try:
        budget.check(need, memory_limit=memory_limit)
    except ResourceLimitError as exc:
        return need.describe(), str(exc)
    return need.describe(), None


def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None,
        deadline: Deadline | None = None,
        memory_limit: float | str | None = None) -> dict[str, Any]:
    """The table for ``config``: every (activation, p) cell, in order (those that cannot fit in
    memory skipped, saying why).

    Parameters
    ----------
    config : Config
        What to run (default :data:`FULL`; :data:`QUICK` for ``--quick``).
    progress : callable, optional
        Receives one line per finished (or skipped) cell.
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops: the running cell returns its best reconstruction
        (``stop_reason = "time_limit"``), the later cells are reported as not run.
    memory_limit : float or str, optional
        The memory guard's limit (:func:`rftheory.budget.check`) for each cell.

    Returns
    -------
    dict
        JSON-serialisable: parameters, the originals (8-bit), one row per cell (numbers, the
        budget's estimate, or the reason it was skipped; the reconstructions as 8-bit images),
        the verdict.
    """
    from rftheory.data import dataset_dimension, load_dataset
    from rftheory.pipeline import fit_model, matched_images, recover_training_set

    deadline = Deadline() if deadline is None else deadline  # None: no deadline

    for name in config.activations:
        check_activations(name)
    d = dataset_dimension(config.data)
    sources = source_digests()
    dataset = load_dataset(config.data, config.n, seed=config.seed)
    if not dataset.is_image:
        raise RFTheoryError(f"the headline table needs an image data set, got {config.data!r}")
    originals = dataset.to_images(dataset.X)[:SHOWN]
    rows = []
    for name in config.activations:
        for multiple in config.multiples:
            p = MULTIPLES[multiple](d, config.n)
            line, skip = _memory(config, d, p, memory_limit)
            row: dict[str, Any] = {"activation": name, "multiple": multiple, "p": p,
                                   "p_over_dn": p / (d * config.n), "memory": line}
            if deadline.passed():
                row.update(status="not_run", reason="the time limit had passed")
                rows.append(row)
                continue
            if skip is not None:
                row.update(status="skipped", reason=skip)
                rows.append(row)
                if progress is not None:
                    progress(f"{name}, p = {multiple} = {p}: skipped ({skip})")
                continue
            start = time.perf_counter()
            fitted = fit_model(activation=name, n=config.n, p=p, seed=config.seed,
                               data=config.data, device=config.device,
                               v_cache_bytes=config.v_cache_bytes)
            fit_seconds = time.perf_counter() - start
            run_ = recover_training_set(fitted, max_steps=config.max_steps, deadline=deadline,
                                        callback=_StepProgress(progress, f"{name}, p = {multiple}",
                                                               config.max_steps))
            shown, _, recon = matched_images(run_, SHOWN)
            residual = float(fitted.train_residual)
            row.update(
                status="ok", train_residual=residual,
                train_mse=residual**2 * float(np.mean(fitted.Y**2)),
                rho={v: float(m.rho) for v, m in run_.matchings.items()},
                sign_flips=int(run_.matchings["sign_invariant"].n_flipped),
                loss=float(run_.loss), steps=int(run_.result.steps),
                stop_reason=str(run_.result.stop_reason),
                # success, or which failure (rftheory.metrics): a spurious zero of the loss or
                # an unfinished descent (loss above the tolerance at the budget)
                kind=run_kind({"rho_abs": float(run_.matchings["abs"].rho),
                               "final_loss": float(run_.loss),
                               "converged": bool(run_.result.converged)},
                              rho_success=RHO_SUCCESS),
                fit_seconds=fit_seconds, reconstruct_seconds=run_.reconstruct_seconds,
                seconds_per_step=run_.reconstruct_seconds / max(1, run_.result.steps),
                shown=[int(i) for i in shown],
                per_sample_rho=[float(run_.matchings["abs"].per_sample[i]) for i in shown],
                images=_pixels(recon))
            rows.append(row)
            if progress is not None:
                progress(f"{name}, p = {multiple} = {p}: residual {residual:.1e}, "
                         f"ρ = {row['rho']['abs']:.3g} ({row['steps']} steps, "
                         f"{row['reconstruct_seconds']:.0f} s)")
    stopped = any(r["status"] == "not_run" or r.get("stop_reason") == TIME_LIMIT_REACHED
                  for r in rows)
    return {
        **({"stop_reason": TIME_LIMIT_REACHED} if stopped else {}),
        "claim": CLAIM,
        "statement": ("At d = 3072 the RF interpolator fits its labels at every p ≥ n, while its "
                      "training images are not recovered at p = n, half-recovered at p = dn and "
                      "recovered at p = 10·dn (paper: ρ ≈ 1, 0.5, 0; train loss ≈ 0)."),
        "data": config.data, "normalisation": dataset.normalisation, "d": d, "n": config.n,
        "activations": list(config.activations), "multiples": list(config.multiples),
        "max_steps": config.max_steps, "work_budget": WORK_BUDGET, "device": config.device,
        "labels": "gaussian",
        "image_indices": [int(i) for i in dataset.indices],
        "originals": _pixels(originals), "paper_rho": PAPER_RHO, "rows": rows,
        "thresholds": _thresholds(rows, config, d), "verdict": _verdict(rows, config),
        "sources": sources,
    }


def _thresholds(rows: list[dict[str, Any]], config: Config, d: int) -> dict[str, Any]:
    """Per activation, p*_data fitted to the cells that ran (:func:`rftheory.thresholds.fit_threshold`,
    success = ρ_abs < :data:`RHO_SUCCESS`), in units of dn. With one run at each of p = n, dn and
    10·dn it is mostly a step (status ``"step"``: somewhere in the gap, which the interval holds)
    or not located; the crossing rule is kept inside it as the secondary number."""
    from rftheory.thresholds import fit_threshold

    out = {}
    dn = d * config.n
    for name in config.activations:
        mine = [r for r in rows if r["activation"] == name and r["status"] == "ok"]
        if not mine:
            continue
        fit = fit_threshold([r["p"] for r in mine], [r["rho"]["abs"] < RHO_SUCCESS for r in mine])
        out[name] = {"status": fit.status, "located": fit.located, "runs": fit.runs,
                     **{f"{k}_over_dn": v for k, v in fit.scaled(dn).items()}}
    return out


class _StepProgress:
    """The optimiser's callback in a cell: every :data:`STEP_PROGRESS_SECONDS` a progress
    message ``[step/max_steps] <cell>: loss ...`` (a bar of the cell's steps on a terminal)."""

    def __init__(self, progress: Callable[[str], None] | None, cell: str, max_steps: int):
        self.progress, self.cell, self.max_steps = progress, cell, max_steps
        self.last = time.perf_counter()

    def __call__(self, step: int, loss: float, X_hat: Any) -> bool:
        now = time.perf_counter()
        if self.progress is not None and now - self.last >= STEP_PROGRESS_SECONDS:
            self.last = now
            self.progress(f"[{step}/{self.max_steps}] {self.cell}: loss {loss:.3e}")
        return False


def _verdict(rows: list[dict[str, Any]], config: Config) -> dict[str, Any]:
    ran = [r for r in rows if r["status"] == "ok"]
    labels_fit = all(r["train_residual"] < TRAIN_TOL for r in ran)
    ordered, ends = True, True
    for name in config.activations:
        mine = [r for r in ran if r["activation"] == name]
        rho = [r["rho"]["abs"] for r in mine]
        ordered &= all(a > b for a, b in zip(rho, rho[1:]))
        for r in mine:
            if r["multiple"] == "n":
                ends &= r["rho"]["abs"] > RHO_SUCCESS
            if r["multiple"] == "10dn":
                ends &= r["rho"]["abs"] < RHO_SUCCESS
    complete = len(ran) == len(rows) and all(r["stop_reason"] != TIME_LIMIT_REACHED for r in ran)
    return {"complete": complete, "cells_run": len(ran), "cells": len(rows),
            "labels_fit": bool(labels_fit), "rho_decreases_with_p": bool(ordered),
            "ends_as_predicted": bool(ends),
            "supported": bool(complete and labels_fit and ordered and ends),
            "criterion": (f"every train residual < {TRAIN_TOL:g}; per activation ρ_abs decreasing "
                          f"in p, > {RHO_SUCCESS} at p = n and < {RHO_SUCCESS} at p = 10dn; "
                          "every cell run")}


def _g(x: float) -> str:
    return "—" if not isinstance(x, (int, float)) or not math.isfinite(x) else f"{x:.2g}"


def summary(result: dict[str, Any]) -> str:
    """The table, the paper's ρ beside ours, and the verdict.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or read back from its JSON).

    Returns
    -------
    str
        The table and the verdict, one line per row.
    """
    rows = []
    for r in result["rows"]:
        head = [r["activation"], r["multiple"], r["p"]]
        if r["status"] != "ok":
            rows.append(head + [r["status"].replace("_", " ")] + [""] * 4
                        + [PAPER_RHO[r["multiple"]], ""])
            continue
        rows.append(head + [_g(r["train_residual"]), _g(r["rho"]["abs"]),
                            _g(r["rho"]["sign_invariant"]), _g(r["rho"]["signed"]),
                            f"{r['steps']} ({r['stop_reason']}"
                            + (f", {r['kind']})" if "kind" in r else ")"), PAPER_RHO[r["multiple"]],
                            f"{r['fit_seconds'] + r['reconstruct_seconds']:.0f} s"])
    headers = ["φ", "p", "value", "train residual", "ρ official", "ρ up to sign", "ρ signed",
               "steps", "paper ρ", "time"]
    v = result["verdict"]
    lines = [f"headline table — {result['data']} (d = {result['d']}), n = {result['n']}, "
             f"{result['device']}, budget {result['max_steps']} steps or "
             f"{result.get('work_budget', WORK_BUDGET):.3g} multiply-adds of V (the attack's work budget)",
             format_table(headers, rows)]
    for r in result["rows"]:
        if r["status"] != "ok":
            lines.append(f"{r['status'].replace('_', ' ')} {r['activation']} at "
                         f"p = {r['multiple']}: {r['reason']}")
    for name, th in result.get("thresholds", {}).items():
        lo, hi = th["interval_over_dn"]
        lines.append(f"{name}: fitted p*_data/(dn) = {_g(th['location_over_dn'])} ({th['status']}; "
                     f"95 % [{_g(lo)}, {_g(hi)}], {th['runs']} runs; crossing rule, secondary: "
                     f"{_g(th['crossing_over_dn'])})")
    lines.append(f"verdict: {'SUPPORTED' if v['supported'] else 'NOT SUPPORTED'}"
                 f"{'' if v['complete'] else ' (incomplete: ' + str(v['cells_run']) + ' of ' + str(v['cells']) + ' cells ran)'}"
                 f" — labels fit: {v['labels_fit']}; ρ decreases with p: {v['rho_decreases_with_p']}; "
                 f"ends as predicted: {v['ends_as_predicted']}")
    return "\n".join(lines)


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """Originals (top row) above each cell's matched reconstructions, one row per cell that ran,
    titled with its activation, p and official ρ; each image's own ρ above it.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or read back from its JSON).
    stem : str or Path
        Path of the figures without suffix (PNG + PDF).

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    from rftheory.pipeline import significant
    from rftheory.plotting import paper_figure, paper_style

    ran = [r for r in result["rows"] if r["status"] == "ok"]
    originals = _unpixels(result["originals"])
    k = originals.shape[0]
    with paper_style():
        columns = 1 if k <= 5 else 2
        size = (3.35 if columns == 1 else 6.9) / k  # inches per image
        fig, axes = paper_figure(columns, nrows=1 + len(ran), ncols=k, squeeze=False,
                                 height=(1 + len(ran)) * (size + 0.12) + 0.3)
        cmap = "gray_r" if originals.ndim == 3 else None
        for j in range(k):
            axes[0, j].imshow(originals[j], cmap=cmap, interpolation="nearest")
        axes[0, 0].set_ylabel("training", fontsize=6)
        for i, r in enumerate(ran, start=1):
            images = _unpixels(r["images"])
            for j in range(images.shape[0]):
                axes[i, j].imshow(images[j], cmap=cmap, interpolation="nearest")
                axes[i, j].set_title(significant(r["per_sample_rho"][j]), fontsize=5, pad=1)
            axes[i, 0].set_ylabel(f"{r['activation']}\np = {r['multiple']}\n"
                                  f"ρ = {significant(r['rho']['abs'])}", fontsize=6)
        for ax in axes.ravel():
            ax.set_xticks([])
            ax.set_yticks([])
            for spine in ax.spines.values():
                spine.set_visible(False)
        fig.suptitle(f"d = {result['d']} ({result['data']}), n = {result['n']}: official ρ per "
                     "row, each image's ρ above it")
        return save_figure(fig, Path(stem))


if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
