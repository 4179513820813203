"""Claim (sign ambiguity): with ReLU the training data are recovered only up to the sign of each
sample (x_i or −x_i); activations with a non-zero odd Hermite coefficient μ_k, k ≥ 3 (e.g.
ReLU + tanh) remove the ambiguity.

The paper's criterion is the Hermite one: ReLU's odd part is z/2, so μ_k = 0 for every odd k ≥ 3
and the RF *kernel* Σ_k μ_k² (⟨x, y⟩/d)^k changes under y ↦ −y only through its linear term. The
check measures what the reconstruction actually does, in the regime where it succeeds
(p = :data:`RATIO`·dn): for each activation and seed, one reconstruction
(:func:`rftheory.pipeline.run_reconstruction`, the model and optimiser call of the sweep cell)
gives the fraction of training points whose matched candidate is closer to −x_i than to x_i
(``flipped`` of the sign-invariant matching of :mod:`rftheory.metrics`) — over the successful runs, and, pooled over all runs, among the
samples recovered up to sign (so partial recoveries count too); next to it stands the verdict of
:func:`rftheory.verdicts.activation_report` ("sign identifiable": some odd μ_k, k ≥ 3, is
non-zero).

What decides it, independently of the optimiser: L depends on the candidates only through the
span of their features, and negating x changes its feature vector from e(Vx) + o(Vx) to
e(Vx) − o(Vx) (e, o the even and odd parts of φ). If φ has a *pure parity* (o = 0: φ even, e.g.
|z|; or e = 0: φ odd, e.g. tanh) the two vectors are equal or opposite, they span the same line,
and x ↦ −x is an exact symmetry of the problem — for odd φ even of θ* itself, since
(x_i, y_i) ↦ (−x_i, −y_i) leaves Φ⁺Y unchanged. If φ has both parts (ReLU: odd part z/2, so the
difference is Vx, in the d-dimensional range of V; ReLU + tanh; leaky ReLU; GELU), the negated
sample's feature is not in the span of the true features when p > n + d, so the negated training
set is **not** a zero of L. The check therefore also evaluates L at the *true* training set with
one sample negated (``loss_one_flipped``, median over which sample) and with all negated
(``loss_all_flipped``): a value far above the optimiser's tolerance means the flip is visible to
the loss. Two predictions are set against the measured flips: the paper's Hermite criterion
(flips ⇔ every odd μ_k, k ≥ 3, vanishes) and the parity criterion (flips ⇔ φ even or odd, from
the symbolic parity verdict of :func:`rftheory.verdicts.activation_report`).

Where the Hermite condition does show up is in the *optimisation*: the slope of the kernel overlap
at the antipode, K'(−1) = E[φ'(g)φ'(−g)] (:func:`rftheory.signs.antipodal_slope`), vanishes for ReLU, so a
candidate near −x_i feels (almost) no pull towards x_i and runs can stall with some samples
recovered as −x_i; those are counted separately (``recovered_minus_failed_runs``).

Verdict: reported per activation as "flips observed" (mean flip fraction over successful runs
> :data:`FLIP_OBSERVED`) against the Hermite prediction; the paper's claim, read as "sign
identifiable ⇔ no flips", is supported only if they agree for every activation.
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
from rftheory.metrics import RHO_SUCCESS
from rftheory.output import format_table, save_figure
from rftheory.signs import antipodal_slope, flipped_truth_losses  # noqa: F401 - re-exported

CLAIM = "sign"

#: p = RATIO·dn: well inside the regime where reconstruction succeeds (the law's threshold is
#: p*/(dn) ≈ 1.5–2.5 for ReLU + tanh, measured by :mod:`rftheory.claims.law`).
RATIO = 10.0
# A run counts as successful when its sign-invariant ρ is below rftheory.metrics.RHO_SUCCESS (the
# flip count is only meaningful when every training point has a close candidate up to sign).
#: "Flips observed" when the mean flip fraction over successful runs exceeds this: an
#: undetectable sign leaves each sample's sign to the random initial candidate, i.e. ≈ 1/2 of
#: them flipped; a detectable one leaves none. 0.1 separates the two with n ≥ 8 samples per run.
FLIP_OBSERVED = 0.1
#: Loss tolerance of the optimiser (as in :func:`rftheory.cells.reconstruction_cell`).
TOL = 1e-10


@dataclasses.dataclass(frozen=True)
class Config(ClaimConfig):
    """The sign check's runs (see :func:`run`); checked on creation.

    The default: d = 6, n = 8 and a budget of 3000 steps, where the activations with a
    near-stationary antipode fail in some runs (so their traps are seen), 8 seeds.

    Attributes
    ----------
    activations : tuple of str
    d, n : int
        Input dimension (≥ 1) and training-set size (≥ 2).
    seeds : int
        Runs per activation; run s uses seed ``seed + s`` (V, data, labels, initial candidates).
    max_steps : int
        Optimiser budget per reconstruction.
    ratio : float
        p/(dn): p = max(n, round(ratio·dn)).
    """

    activations: tuple[str, ...] = ("relu", "relu+tanh", "tanh", "abs", "leaky_relu", "gelu")
    d: int = 6
    n: int = 8
    seeds: int = 8
    max_steps: int = 3000
    ratio: float = RATIO

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set("activations", tuple(self.activations))
        for name in ("d", "n", "seeds", "max_steps"):
            self._set(name, int(getattr(self, name)))
        if not self.activations or self.d < 1 or self.n < 2 or self.seeds < 1 \
                or self.max_steps < 1:
            raise RFTheoryError("sign check needs activations, d >= 1, n >= 2, seeds >= 1, "
                                "max_steps >= 1")
        if not (self.ratio > 0 and math.isfinite(self.ratio)):
            raise RFTheoryError(f"ratio must be positive and finite, got {self.ratio!r}")

    @property
    def p(self) -> int:
        return max(self.n, int(round(self.ratio * self.d * self.n)))


FULL = Config()
QUICK = Config(activations=("relu", "relu+tanh", "abs"), seeds=3)


def run_case(task: dict[str, Any]) -> dict[str, Any]:
    """Reconstruct at p = ratio·dn for one activation and seed; count flips; flipped-truth losses.

    A summary of one :func:`rftheory.pipeline.run_reconstruction` (the model and optimiser call
    of the sweep cell for the same arguments): the sign analysis needs the candidates and the
    model themselves, which the run keeps.

    Parameters
    ----------
    task : dict
        One run's arguments, as :func:`run` makes them (activation, d, n, p, seed, optimiser
        budget).

    Returns
    -------
    dict
        JSON-serialisable: success, ρ variants, the fraction of samples recovered as −x_i and
        the losses of :func:`rftheory.signs.flipped_truth_losses`.
    """
    from threadpoolctl import threadpool_limits

    from rftheory.pipeline import run_reconstruction

    start = time.perf_counter()
    d, n, p, seed = task["d"], task["n"], task["p"], task["seed"]
    with threadpool_limits(limits=1, user_api="blas"):  # tiny problems: threads only cost
        run = run_reconstruction(activation=task["activation"], d=d, n=n, p=p, seed=seed,
                                 tol=TOL, max_steps=task["max_steps"])
        losses = flipped_truth_losses(run.features, run.theta, run.X)
    m, result = run.matchings, run.result
    si = m["sign_invariant"]
    close = si.per_sample < RHO_SUCCESS
    cell = {"activation": task["activation"], "d": d, "n": n, "p": p, "seed": seed,
            "train_residual": run.train_residual, "final_loss": result.loss,
            "steps": result.steps, "stop_reason": result.stop_reason,
            "rho_abs": m["abs"].rho, "rho_signed": m["signed"].rho, "rho_sign_invariant": si.rho,
            "sign_flips": si.n_flipped, "flip_fraction": si.n_flipped / n,
            "success": bool(si.rho < RHO_SUCCESS),
            # samples recovered (within RHO_SUCCESS up to sign) as +x_i and as −x_i: counts
            # flips also in runs that recovered only part of the training set
            "recovered_plus": int(np.sum(close & ~si.flipped)),
            "recovered_minus": int(np.sum(close & si.flipped)),
            **losses, "seconds": time.perf_counter() - start}
    return cell


def hermite_verdict(activation: str) -> dict[str, Any]:
    """The sign-identifiability verdict of :func:`rftheory.verdicts.activation_report`, with μ_1
    and the symmetry of φ (parity verdict).

    Parameters
    ----------
    activation : str
        A registry name or an expression in ``z``.

    Returns
    -------
    dict
        ``sign_identifiable`` (True, False or None when undecided), ``symmetry`` (``"odd"``,
        ``"even"`` or ``"neither"``), ``mu_1`` and the ``antipodal_slope``.

    Examples
    --------
    >>> from rftheory.claims.sign import hermite_verdict
    >>> v = hermite_verdict("tanh")
    >>> v["sign_identifiable"], v["symmetry"]
    (True, 'odd')
    """
    from rftheory.verdicts import activation_report

    report = activation_report(activation, order=9)
    sign = report.sign_identifiability
    return {"sign_identifiable": sign.holds, "basis": sign.basis, "summary": sign.summary,
            "mu_1": float(report.coefficients[1]),
            "mu_odd_3_to_9": [float(report.coefficients[k]) for k in (3, 5, 7, 9)],
            "symmetry": report.parity.numbers.get("symmetry"),
            "antipodal_slope": antipodal_slope(activation),
            # x and −x give parallel features (same span) exactly when φ is even or odd
            "pure_parity": report.parity.numbers.get("symmetry") in ("even", "odd")}


def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None,
        workers: int | None = None, deadline: Deadline | None = None) -> dict[str, Any]:
    """Flip fraction per activation at p = ratio·dn, next to the Hermite verdict.

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
        JSON-serialisable: parameters, every run, per activation the flip statistics,
        the Hermite verdict and the agreement, and the overall verdict.
    """
    activations, d, n, p, seed = config.activations, config.d, config.n, config.p, config.seed
    seeds, max_steps, ratio = config.seeds, config.max_steps, config.ratio
    check_activations(*activations)
    workers = default_workers(workers)
    sources = source_digests()  # before any work: the code the workers will run
    tasks = [{"activation": a, "d": d, "n": n, "p": p, "seed": seed + s, "max_steps": max_steps}
             for a in activations for s in range(seeds)]
    # The Hermite verdicts run next to the reconstructions, in the same workers.
    calls = [partial(hermite_verdict, a) for a in activations] + [partial(run_case, t) for t in tasks]
    tick = TaskProgress(progress, len(tasks))

    def line(cell: dict[str, Any]) -> str:
        return (f"{cell['activation']:10s} seed={cell['seed']}: "
                f"ρ_sign-inv={cell['rho_sign_invariant']:.1e} ρ_signed={cell['rho_signed']:.1e}"
                f" flips={cell['sign_flips']}/{n} loss={cell['final_loss']:.1e} "
                f"L(one flipped)={cell['loss_one_flipped']:.1e} ({cell['seconds']:.1f} s)")

    done = run_tasks(calls, workers=workers, deadline=deadline, on_result=lambda i, out: (
        tick(lambda: line(out)) if i >= len(activations) else None))
    verdicts = dict(zip(activations, done[:len(activations)]))
    runs = done[len(activations):]

    per_activation = []
    for a in activations:
        mine = [c for c in runs if c["activation"] == a]
        ok = [c for c in mine if c["success"]]
        flips_ok = float(np.mean([c["flip_fraction"] for c in ok])) if ok else math.nan
        plus = sum(c["recovered_plus"] for c in mine)
        minus = sum(c["recovered_minus"] for c in mine)
        observed = bool(ok) and flips_ok > FLIP_OBSERVED
        v = verdicts[a]
        predicted_hermite = None if v["sign_identifiable"] is None else not v["sign_identifiable"]
        per_activation.append({
            "activation": a, "runs": len(mine), "successes": len(ok),
            "flip_fraction_successful": flips_ok,
            "flip_fraction_all": float(np.mean([c["flip_fraction"] for c in mine])),
            "recovered_plus": plus, "recovered_minus": minus,
            # samples stuck at −x_i in runs that did not converge: the optimiser's traps
            "recovered_minus_failed_runs": sum(c["recovered_minus"] for c in mine
                                               if not c["success"]),
            "flip_fraction_recovered": minus / (plus + minus) if plus + minus else math.nan,
            "flips_observed": observed,
            "median_rho_sign_invariant": float(np.median([c["rho_sign_invariant"] for c in mine])),
            "median_rho_signed": float(np.median([c["rho_signed"] for c in mine])),
            "median_rho_abs": float(np.median([c["rho_abs"] for c in mine])),
            "median_final_loss": float(np.median([c["final_loss"] for c in mine])),
            "median_loss_one_flipped": float(np.median([c["loss_one_flipped"] for c in mine])),
            "median_loss_all_flipped": float(np.median([c["loss_all_flipped"] for c in mine])),
            "hermite": v,
            "flips_predicted_by_hermite": predicted_hermite,
            "flips_predicted_by_parity": v["pure_parity"],
            "agrees_with_hermite": (None if predicted_hermite is None or not ok
                                    else predicted_hermite == observed),
            "agrees_with_parity": None if not ok else v["pure_parity"] == observed,
        })
    hermite_ok = [e["agrees_with_hermite"] for e in per_activation]
    parity_ok = [e["agrees_with_parity"] for e in per_activation]
    return {
        "claim": CLAIM,
        "statement": ("ReLU reconstructs the training data only up to the sign of each sample; an "
                      "activation with some odd Hermite coefficient μ_k ≠ 0, k ≥ 3 (ReLU + tanh) "
                      "does not."),
        "d": d, "n": n, "p": p, "ratio": ratio, "seeds": seeds, "base_seed": seed,
        "max_steps": max_steps, "workers": workers, "rho_success": RHO_SUCCESS,
        "flip_observed_threshold": FLIP_OBSERVED, "per_activation": per_activation,
        "verdict": {
            "supported": all(x is True for x in hermite_ok),
            "hermite_criterion_matches_every_activation": all(x is True for x in hermite_ok),
            "parity_criterion_matches_every_activation": all(x is True for x in parity_ok),
            "undecided_activations": [e["activation"] for e in per_activation
                                      if e["agrees_with_hermite"] is None],
            "criterion": (f"flips observed (mean flip fraction over runs with ρ_sign-inv < "
                          f"{RHO_SUCCESS} above {FLIP_OBSERVED}) ⇔ no odd μ_k ≠ 0 with k ≥ 3"),
        },
        "sources": sources, "runs": runs,
    }


def _fmt(x: Any, spec: str = ".2f") -> str:
    if x is None:
        return "?"
    if isinstance(x, bool):
        return "yes" if x else "no"
    x = float(x)  # a result read back from JSON holds non-finite numbers as "nan", "inf"
    return "—" if not math.isfinite(x) else format(x, spec)


def summary(result: dict[str, Any]) -> str:
    """Flip fractions, losses of the flipped truth and the verdicts, as a table.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or its JSON).

    Returns
    -------
    str
        The table, ready to print.
    """
    rows = [[e["activation"], f"{e['successes']}/{e['runs']}", _fmt(e["flip_fraction_successful"]),
             f"{e['recovered_minus']}/{e['recovered_plus'] + e['recovered_minus']}",
             e["recovered_minus_failed_runs"],
             f"{e['median_rho_signed']:.1e}", f"{e['median_loss_one_flipped']:.1e}",
             _fmt(e["hermite"]["sign_identifiable"]),
             # quadrature noise of a zero μ_1 (|z|) would print as -0.000
             f"{0.0 if abs(e['hermite']['mu_1']) < 5e-4 else e['hermite']['mu_1']:.3f}",
             f"{e['hermite']['antipodal_slope']:+.3f}",
             e["hermite"]["symmetry"], _fmt(e["agrees_with_hermite"]), _fmt(e["agrees_with_parity"])]
            for e in result["per_activation"]]
    headers = ["activation", "success", "flip frac", "−x_i/recovered", "…in failed runs", "ρ signed", "L(1 flipped)",
               "sign-ident.", "μ_1", "K'(−1)/K'(1)", "parity", "Hermite ok", "parity ok"]
    v = result["verdict"]
    return "\n".join([
        f"sign ambiguity at p = {result['ratio']:g}·dn = {result['p']} (d = {result['d']}, "
        f"n = {result['n']}), {result['seeds']} seeds; success = ρ_sign-inv < {result['rho_success']}; "
        "flip frac = mean over successful runs; −x_i/recovered = samples recovered as −x_i among "
        "all samples recovered within ρ_success up to sign, all runs",
        format_table(headers, rows),
        f"Hermite criterion (flips ⇔ all odd μ_k, k ≥ 3, vanish) matches every activation: "
        f"{_fmt(v['hermite_criterion_matches_every_activation'])}; parity criterion (flips ⇔ φ even "
        f"or odd) matches every activation: {_fmt(v['parity_criterion_matches_every_activation'])}",
        f"verdict: {'SUPPORTED' if v['supported'] else 'NOT SUPPORTED'} ({v['criterion']})",
    ])


def plot(result: dict[str, Any], stem: str | Path) -> list[Path]:
    """Draw the sign figure: (a) how often samples are recovered as −x_i, (b) the loss at the
    sign-flipped training set.

    One group per activation, labelled with its parity (odd, even or mixed); colour: the paper's
    Hermite criterion predicts the sign ambiguity (vermillion) or not (blue). (a) Fraction of
    the samples recovered as −x_i at p = ratio·dn: mean over the successful runs (solid bars, black
    dots: single runs; "n/a" where no run succeeded) and among the samples recovered up to sign
    in all runs (hatched); dashed: the fraction above which flips count as observed. (b) The
    projection loss at the truth with one sample flipped (median over i) and at −X, against the
    optimiser's tolerance (dashed): a flipped training set is a zero of the loss only for odd or
    even φ. Per-activation numbers (μ₁, K′(−1)/K′(1), successes) are in the summary table.

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
    from matplotlib.patches import Patch

    from rftheory.plotting import PALETTE, legend_above, panel_label, paper_figure, paper_style

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    entries = result["per_activation"]
    x = np.arange(len(entries))
    ambiguous, identifiable = PALETTE[1], PALETTE[0]
    colours = [ambiguous if e["hermite"]["sign_identifiable"] is False else identifiable
               for e in entries]
    ticks = [f"{e['activation']}\n"
             f"{ {'neither': 'mixed'}.get(e['hermite']['symmetry'], e['hermite']['symmetry'])}"
             for e in entries]
    bar = 0.38
    with paper_style():
        fig, (ax_f, ax_l) = paper_figure(2, ncols=2, aspect=0.62)
        for i, e in enumerate(entries):
            value = e["flip_fraction_successful"]
            value = float(value) if value not in (None, "nan") else math.nan
            if math.isfinite(value):
                ax_f.bar(i - bar / 2, value, bar, color=colours[i])
            else:
                ax_f.text(i - bar / 2, 0.02, "n/a", ha="center", va="bottom", fontsize=6)
            recovered = e["flip_fraction_recovered"]
            recovered = float(recovered) if recovered not in (None, "nan") else math.nan
            if math.isfinite(recovered):
                ax_f.bar(i + bar / 2, recovered, bar, color="none", edgecolor=colours[i],
                         hatch="////")
            fr = [c["flip_fraction"] for c in result["runs"]
                  if c["activation"] == e["activation"] and c["success"]]
            ax_f.plot(np.full(len(fr), i - bar / 2), fr, "o", color="k", ms=2.5, zorder=3)
        ax_f.axhline(result["flip_observed_threshold"], color="k", ls="--", lw=0.6)
        ax_f.set_xticks(x, ticks)
        ax_f.set_ylim(0, 1.02)
        ax_f.set_ylabel(r"fraction recovered as $-x_i$")
        panel_label(ax_f, "a")

        floor = 1e-32
        for i, e in enumerate(entries):
            ax_l.bar(i - bar / 2, max(e["median_loss_one_flipped"], floor), bar, color=colours[i])
            ax_l.bar(i + bar / 2, max(e["median_loss_all_flipped"], floor), bar, color="none",
                     edgecolor=colours[i], hatch="....")
        ax_l.axhline(1e-10, color="k", ls="--", lw=0.6)
        ax_l.set_yscale("log")
        ax_l.set_xticks(x, ticks)
        ax_l.set_ylabel(r"$\mathcal{L}$ at the flipped truth")
        panel_label(ax_l, "b")
        key = [Patch(color=ambiguous, label="Hermite: ambiguous"),
               Patch(color=identifiable, label="Hermite: identifiable"),
               Patch(facecolor="0.5", label="(a) successful runs; (b) one $x_i$ flipped"),
               Patch(facecolor="none", edgecolor="0.3", hatch="////",
                     label="(a) recovered up to sign"),
               Patch(facecolor="none", edgecolor="0.3", hatch="....", label="(b) $-X$")]
        legend_above(fig, key, [k.get_label() for k in key], ncol=3)
        return save_figure(fig, stem)


if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
