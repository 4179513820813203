"""Claim (n̂ ≠ n): reconstructing with a wrong number of candidates n̂ still reveals the training
set — n̂ > n recovers every training point (the extra candidates are redundant), n̂ < n recovers
at most n̂ of them and cannot drive the projection loss to zero.

The projection loss L(X̂) = ‖P⊥_{Φ̂}θ*‖²/‖θ*‖² only asks that θ* = Φᵀa lie in the span of the
candidates' features. With n̂ > n candidates the training set plus *any* n̂ − n extra points is a
zero of L, so the extras are unconstrained; with n̂ < n no set of n̂ points spans θ* (for p ≳ dn the
n training features are the only representation of θ* by n or fewer features), so L stays positive.

For each n̂ and seed the check runs the reconstruction pipeline
(:func:`rftheory.pipeline.run_reconstruction`, the model of the sweep cell: same data, labels and
V streams) at p = :data:`RATIO`·dn with n̂ candidates, and measures

* ρ of the best matching (:func:`rftheory.metrics.match`, official and sign-invariant; for n̂ < n
  the unmatched training points count as reconstructed by 0, i.e. 1 each);
* coverage — how many training points have *some* candidate within :data:`RHO_CLOSE`
  (per-sample ‖x_i − x̂_j‖/√d, sign-invariant);
* for every candidate left unmatched (n̂ > n): its distance to the nearest training point, to the
  nearest *other* candidate (a near-duplicate of a recovered point?) and its projection
  coefficient |a_j| relative to the largest |a| (does it carry weight?);
* the number of candidates that carry weight (|a_j| ≥ :data:`WEIGHT_CUT`·max|a|) — an estimate
  of n from the reconstruction alone;
* for n̂ < n: whether the candidates sit on training points (each exact) or between them (merged:
  far from every training point).

Verdict: supported when, at every n̂ > n and for every seed, all n training points are covered,
and at every n̂ < n no seed reaches the loss tolerance and at most n̂ points are covered.
"""

from __future__ import annotations

import dataclasses
import math
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rftheory.deadline import Deadline
from rftheory.claims._common import ClaimConfig, TaskProgress, check_activations, main_for
from rftheory.runtime import default_workers, run_tasks, source_digests
from rftheory.errors import RFTheoryError
from rftheory.output import format_table, save_figure

CLAIM = "nhat"

#: p = RATIO·dn, in the regime where n̂ = n succeeds (law threshold ≈ 1.5–2.5·dn).
RATIO = 10.0
#: A training point counts as recovered by a candidate within this per-sample distance
#: (‖x_i ∓ x̂_j‖/√d; failed reconstructions sit at ≈ 0.5–1, successful ones at ≤ 1e-3).
RHO_CLOSE = 0.1
#: Loss tolerance of the optimiser (as in :func:`rftheory.cells.reconstruction_cell`).
TOL = 1e-10
#: A candidate "carries weight" when |a_j| ≥ WEIGHT_CUT·max|a|. Measured (default run, relu+tanh,
#: p = 10·dn, loss ≤ 1e-10): candidates on training points 3e-3–1, extras far from the data
#: 3e-8–3e-4, near-duplicates of a recovered point up to 5e-3. Counting the weighted candidates
#: therefore estimates n (right in 15 of 16 over-complete runs); 1e-3 sits between the groups.
WEIGHT_CUT = 1e-3


@dataclasses.dataclass(frozen=True)
class Config(ClaimConfig):
    """The n̂ ≠ n check's runs (see :func:`run`); checked on creation.

    Attributes
    ----------
    d, n : int
        Input dimension (≥ 1) and training-set size (≥ 2).
    n_hat_factors : tuple of float
        n̂ = max(1, round(factor·n)) for each factor (positive).
    seeds : int
        Runs per n̂; run s uses seed ``seed + s``.
    max_steps : int
        Optimiser budget per reconstruction.
    activation : str
        φ (default ``"relu+tanh"``).
    ratio : float
        p/(dn): p = max(n, round(ratio·dn)).
    """

    d: int = 8
    n: int = 8
    n_hat_factors: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
    seeds: int = 4
    max_steps: int = 3000
    activation: str = "relu+tanh"
    ratio: float = RATIO

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set("n_hat_factors", tuple(self.n_hat_factors))
        for name in ("d", "n", "seeds", "max_steps"):
            self._set(name, int(getattr(self, name)))
        if self.d < 1 or self.n < 2 or self.seeds < 1 or self.max_steps < 1 \
                or not self.n_hat_factors:
            raise RFTheoryError("nhat check needs d >= 1, n >= 2, seeds >= 1, max_steps >= 1, "
                                "factors")
        if any(not (f > 0 and math.isfinite(f)) for f in self.n_hat_factors):
            raise RFTheoryError("n̂/n factors must be positive and finite")
        if self.n_hats[-1] > self.p:
            raise RFTheoryError(f"n̂ = {self.n_hats[-1]} exceeds p = {self.p}")

    @property
    def p(self) -> int:
        return max(self.n, int(round(self.ratio * self.d * self.n)))

    @property
    def n_hats(self) -> list[int]:
        return sorted({max(1, int(round(f * self.n))) for f in self.n_hat_factors})


FULL = Config()
QUICK = Config(d=6, n=8, n_hat_factors=(0.5, 1.0, 1.5), seeds=2, max_steps=1500)


def _pair_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Sign-invariant per-sample distances min(‖a − b‖, ‖a + b‖)/√d, shape (len(A), len(B))."""
    from scipy.spatial.distance import cdist

    return np.minimum(cdist(A, B), cdist(A, -B)) / math.sqrt(A.shape[1])


def analyse(X: np.ndarray, X_hat: np.ndarray, coefficients: np.ndarray) -> dict[str, Any]:
    """Coverage of the training set by the candidates and the role of unmatched candidates.

    Parameters
    ----------
    X : array, shape (n, d)
        Training data.
    X_hat : array, shape (n̂, d)
        Candidates.
    coefficients : array, shape (n̂,)
        Their projection coefficients a = G⁺Φ̂θ.

    Returns
    -------
    dict
        ``rho_abs``, ``rho_sign_invariant`` (best matching), ``covered`` (training points with a
        candidate within :data:`RHO_CLOSE`), ``exact_candidates`` (candidates within it of a
        training point), ``extras`` (one dict per candidate not matched: distance to the nearest
        training point and to the nearest other candidate, whether it duplicates a recovered
        point, |a_j|/max|a|), ``candidates`` (per candidate: nearest-training distance and
        |a_j|/max|a|).
    """
    from rftheory.metrics import match

    n_hat = X_hat.shape[0]
    dist = _pair_distances(X, X_hat)                      # (n, n̂)
    m_abs = match(X, X_hat, "abs")
    m_si = match(X, X_hat, "sign_invariant")
    a = np.abs(np.asarray(coefficients, dtype=np.float64).reshape(n_hat))
    a_rel = a / a.max() if a.max() > 0 else a
    nearest_train = dist.min(axis=0)                      # per candidate
    matched = set(int(j) for j in m_si.assignment if j >= 0)
    extras = []
    if n_hat > 1:
        cc = _pair_distances(X_hat, X_hat)
        np.fill_diagonal(cc, np.inf)
    for j in range(n_hat):
        if j in matched:
            continue
        nearest_other = float(cc[j].min()) if n_hat > 1 else math.inf
        extras.append({"index": j, "nearest_training": float(nearest_train[j]),
                       "nearest_training_index": int(np.argmin(dist[:, j])),
                       "nearest_candidate": nearest_other,
                       "duplicate": bool(nearest_train[j] < RHO_CLOSE),
                       "abs_coefficient_rel": float(a_rel[j])})
    return {
        "rho_abs": m_abs.rho, "rho_sign_invariant": m_si.rho,
        "covered": int(np.sum(dist.min(axis=1) < RHO_CLOSE)),
        "exact_candidates": int(np.sum(nearest_train < RHO_CLOSE)),
        "n_estimate": int(np.sum(a_rel >= WEIGHT_CUT)),
        "extras": extras,
        "candidates": [{"nearest_training": float(nearest_train[j]),
                        "abs_coefficient_rel": float(a_rel[j]), "matched": j in matched}
                       for j in range(n_hat)],
    }


def run_case(task: dict[str, Any]) -> dict[str, Any]:
    """Train, reconstruct with n̂ candidates, analyse (one n̂, one seed): a summary of one
    :func:`rftheory.pipeline.run_reconstruction` (the model of the sweep cell, same streams).

    Parameters
    ----------
    task : dict
        One run's arguments, as :func:`run` makes them (activation, d, n, p, n̂, seed,
        optimiser budget).

    Returns
    -------
    dict
        JSON-serialisable: final loss, ρ, how many training points are covered, and per
        candidate its nearest training point and relative weight.
    """
    from threadpoolctl import threadpool_limits

    from rftheory.pipeline import run_reconstruction

    start = time.perf_counter()
    d, n, p, seed = task["d"], task["n"], task["p"], task["seed"]
    with threadpool_limits(limits=1, user_api="blas"):  # tiny problems: threads only cost
        run = run_reconstruction(activation=task["activation"], d=d, n=n, p=p, seed=seed,
                                 n_hat=task["n_hat"], tol=TOL, max_steps=task["max_steps"])
        info = analyse(run.X, run.X_hat, run.coefficients)
    result = run.result
    return {"activation": task["activation"], "d": d, "n": n, "p": p, "seed": seed,
            "n_hat": task["n_hat"], "n_hat_over_n": task["n_hat"] / n,
            "train_residual": run.train_residual, "final_loss": result.loss,
            "converged": result.converged, "stop_reason": result.stop_reason,
            "steps": result.steps, **info, "seconds": time.perf_counter() - start}


def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None,
        workers: int | None = None, deadline: Deadline | None = None) -> dict[str, Any]:
    """Reconstruct with n̂ = factor·n candidates for several factors; coverage and extras.

    Parameters
    ----------
    config : Config
        The sizes and seeds (:data:`FULL` by default, :data:`QUICK` for ``--quick``).
    progress : callable, optional
        Called with one line of text per finished step.
    workers : int, optional
        Processes for the independent runs (default: one per core, at most the runs).
    deadline : rftheory.deadline.Deadline, optional
        Where the run stops (:func:`rftheory.runtime.run_tasks` raises
        :class:`~rftheory.runtime.TimeLimitReached`, which
        :func:`~rftheory.claims._common.run_claim` saves as a partial result); default none.

    Returns
    -------
    dict
        JSON-serialisable: the parameters, every run (``runs``), per n̂ the coverage
        and the extras' statistics, and the ``verdict``.

    Examples
    --------
    The grid of the quick run (``rftheory verify nhat --quick``) against the full one:

    >>> from rftheory.claims import nhat
    >>> nhat.QUICK.n_hat_factors, nhat.FULL.n_hat_factors
    ((0.5, 1.0, 1.5), (0.5, 0.75, 1.0, 1.25, 1.5, 2.0))
    >>> nhat.QUICK.replace(seeds=1).seeds
    1
    """
    check_activations(config.activation)
    workers = default_workers(workers)
    d, n, p, n_hats, seed = config.d, config.n, config.p, config.n_hats, config.seed
    seeds, max_steps, activation, ratio = config.seeds, config.max_steps, config.activation, config.ratio
    sources = source_digests()  # before any work: the code the workers will run
    tasks = [{"activation": activation, "d": d, "n": n, "p": p, "n_hat": m, "seed": seed + s,
              "max_steps": max_steps} for m in n_hats for s in range(seeds)]
    tick = TaskProgress(progress, len(tasks))
    runs = run_tasks([partial(run_case, t) for t in tasks], workers=workers, deadline=deadline,
                     on_result=lambda i, case: tick(lambda: (
                         f"n̂={case['n_hat']} seed={case['seed']}: loss={case['final_loss']:.1e} "
                         f"covered={case['covered']}/{n} ρ={case['rho_abs']:.1e} "
                         f"({case['seconds']:.1f} s)")))

    rows = []
    for m in n_hats:
        mine = [c for c in runs if c["n_hat"] == m]
        extras = [e for c in mine for e in c["extras"]]
        rows.append({
            "n_hat": m, "n_hat_over_n": m / n,
            "median_final_loss": float(np.median([c["final_loss"] for c in mine])),
            "converged": sum(c["converged"] for c in mine),
            "median_rho_abs": float(np.median([c["rho_abs"] for c in mine])),
            "median_rho_sign_invariant": float(np.median([c["rho_sign_invariant"] for c in mine])),
            "min_covered": min(c["covered"] for c in mine),
            "max_covered": max(c["covered"] for c in mine),
            "mean_covered": float(np.mean([c["covered"] for c in mine])),
            "extras": len(extras),
            "extras_duplicates": sum(e["duplicate"] for e in extras),
            "n_estimate_correct": sum(c["n_estimate"] == n for c in mine),
            "extras_median_abs_coefficient_rel": (float(np.median([e["abs_coefficient_rel"]
                                                                   for e in extras]))
                                                  if extras else None),
            "runs": len(mine),
        })
    over = [r for r in rows if r["n_hat"] > n]
    under = [r for r in rows if r["n_hat"] < n]
    at_n = [r for r in rows if r["n_hat"] == n]
    over_ok = all(r["min_covered"] == n for r in over)
    under_ok = all(r["converged"] == 0 and r["max_covered"] <= r["n_hat"] for r in under)
    return {
        "claim": CLAIM,
        "statement": ("With n̂ > n candidates every training point is recovered (extras are free); "
                      "with n̂ < n at most n̂ are and the projection loss stays positive."),
        "activation": activation, "d": d, "n": n, "p": p, "ratio": ratio, "n_hats": n_hats,
        "seeds": seeds, "base_seed": seed, "max_steps": max_steps, "workers": workers,
        "rho_close": RHO_CLOSE, "tol": TOL, "weight_cut": WEIGHT_CUT, "rows": rows,
        "verdict": {
            "supported": bool(over_ok and under_ok and (over or under)),
            "over_covers_all": bool(over_ok), "under_cannot_fit": bool(under_ok),
            "n_hat_equal_n_covers_all": bool(all(r["min_covered"] == n for r in at_n)),
            "criterion": (f"every run with n̂ > n has all n training points within {RHO_CLOSE} of a "
                          f"candidate; no run with n̂ < n reaches loss ≤ {TOL:g} or covers more than "
                          "n̂ points"),
        },
        "sources": sources, "runs": runs,
    }


def summary(result: dict[str, Any]) -> str:
    """Per n̂: loss, ρ, coverage and the extras' character, as a table.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or its JSON).

    Returns
    -------
    str
        The table, ready to print.
    """
    n = result["n"]
    rows = []
    for r in result["rows"]:
        a = r["extras_median_abs_coefficient_rel"]
        rows.append([r["n_hat"], f"{r['median_final_loss']:.1e}", f"{r['converged']}/{r['runs']}",
                     f"{r['median_rho_abs']:.1e}", f"{r['min_covered']}–{r['max_covered']}/{n}",
                     r["extras"], r["extras_duplicates"], "—" if a is None else f"{a:.1e}",
                     # fewer candidates than n cannot give n weighted ones
                     f"{r['n_estimate_correct']}/{r['runs']}" if r["n_hat"] >= n else "—"])
    headers = ["n̂", "loss", "converged", "ρ (official)", "covered", "extras", "duplicates",
               "median |a_j|/max|a|", "#{|a_j| ≥ cut} = n"]
    v = result["verdict"]
    return "\n".join([
        f"n̂ ≠ n — {result['activation']}, d = {result['d']}, n = {n}, p = {result['p']} "
        f"(= {result['ratio']:g}·dn), {result['seeds']} seeds; covered = training points with a "
        f"candidate within {result['rho_close']} (sign-invariant, per sample)",
        format_table(headers, rows),
        f"verdict: {'SUPPORTED' if v['supported'] else 'NOT SUPPORTED'} — n̂ > n covers all: "
        f"{v['over_covers_all']}; n̂ < n cannot fit: {v['under_cannot_fit']}",
    ])


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """Draw the n̂ ≠ n figure: (a) coverage, (b) final loss against n̂/n, (c) where the extra
    candidates land and what weight they carry.

    (a) Fraction of the training points recovered (within ``rho_close`` per sample, up to sign;
    circles) and fraction of the candidates that sit on a training point (crosses), one mark per
    run, against n̂/n; dashed: min(n̂/n, 1), full coverage by as many candidates as possible.
    (b) The projection loss at the end of each run (dashed: the optimiser's tolerance; open
    down-triangles on the bottom edge: exact zeros). Too few candidates (n̂ < n) cannot fit θ*;
    n̂ ≥ n reaches the tolerance. (c) For n̂ > n: each extra candidate's distance to the nearest
    ±x_i (over √d) against its weight |a_j|/max_k |a_k| in the fit of θ* (coloured by n̂; grey:
    the matched candidates); dashed: ``rho_close``, dotted: the weight below which a candidate
    counts as unused. Extras sit away from the data with negligible weight.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or its JSON).
    stem : path
        Where to write ``stem.png`` and ``stem.pdf``.

    Returns
    -------
    list of Path
        The PNG's and the PDF's paths.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.lines import Line2D

    from rftheory.plotting import (PALETTE, SYMBOLS, legend_above, log_values, mark_floor,
                                   panel_label, paper_figure, paper_style, tidy_log_axis)

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    n = result["n"]
    runs = result["runs"]
    x = np.asarray([c["n_hat_over_n"] for c in runs], dtype=float)
    ticks = sorted(set(x.tolist()))
    with paper_style():
        fig, (ax_c, ax_l, ax_e) = paper_figure(2, ncols=3, aspect=0.85)
        ax_c.plot(x, [c["covered"] / n for c in runs], "o", color=PALETTE[0], mfc="none")
        ax_c.plot(x, [c["exact_candidates"] / c["n_hat"] for c in runs], "x", color=PALETTE[1])
        grid = np.linspace(min(ticks), max(ticks), 100)
        ax_c.plot(grid, np.minimum(grid, 1.0), "k--", lw=0.6)
        ax_c.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax_c.set_xlabel(SYMBOLS["n_hat_over_n"])
        ax_c.set_ylabel("fraction")
        ax_c.set_ylim(-0.04, 1.08)
        panel_label(ax_c, "a")

        floor = 1e-20
        losses = [c["final_loss"] for c in runs]
        ax_l.plot(x, log_values(losses, floor)[0], "o", color=PALETTE[3])
        zeros = mark_floor(ax_l, x, losses, floor, color=PALETTE[3])
        ax_l.axhline(result["tol"], color="k", ls="--", lw=0.6)
        ax_l.axvline(1.0, color="0.5", ls=":", lw=0.6)
        ax_l.set_yscale("log")
        if zeros:
            ax_l.set_ylim(bottom=floor)
        tidy_log_axis(ax_l, "y")
        ax_l.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax_l.set_xlabel(SYMBOLS["n_hat_over_n"])
        ax_l.set_ylabel(SYMBOLS["loss"] + " at the end")
        panel_label(ax_l, "b")

        over = [m for m in result["n_hats"] if m > n]
        for k, m in enumerate(over):
            ex = [e for c in runs if c["n_hat"] == m for e in c["extras"]]
            ax_e.plot([e["nearest_training"] for e in ex],
                      [max(e["abs_coefficient_rel"], 1e-12) for e in ex], "o",
                      color=PALETTE[(k + 2) % len(PALETTE)], ms=3)
        matched = [cd for c in runs if c["n_hat"] >= n for cd in c["candidates"] if cd["matched"]]
        ax_e.plot([cd["nearest_training"] for cd in matched],
                  [max(cd["abs_coefficient_rel"], 1e-12) for cd in matched], ".", color="0.6",
                  ms=2)
        ax_e.axvline(result["rho_close"], color="k", ls="--", lw=0.6)
        ax_e.axhline(result["weight_cut"], color="k", ls=":", lw=0.6)
        ax_e.set_xscale("log")
        ax_e.set_yscale("log")
        tidy_log_axis(ax_e, "x")
        tidy_log_axis(ax_e, "y")
        ax_e.set_xlabel(r"$\min_i\|x_i \mp \hat x_j\|/\sqrt{d}$")
        ax_e.set_ylabel(r"$|a_j|/\max_k |a_k|$")
        panel_label(ax_e, "c")

        key = [Line2D([], [], ls="", marker="o", mfc="none", color=PALETTE[0],
                      label="(a) training points recovered / $n$"),
               Line2D([], [], ls="", marker="x", color=PALETTE[1],
                      label=r"(a) candidates on a training point / $\hat n$"),
               Line2D([], [], ls="--", color="k", lw=0.6, label=r"(a) $\min(\hat n/n, 1)$")]
        key += [Line2D([], [], ls="", marker="o", ms=3, color=PALETTE[(k + 2) % len(PALETTE)],
                       label=rf"(c) extras, $\hat n = {m}$") for k, m in enumerate(over)]
        key.append(Line2D([], [], ls="", marker=".", color="0.6", label="(c) matched candidates"))
        legend_above(fig, key, [k.get_label() for k in key], ncol=3)
        return save_figure(fig, stem)


if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
