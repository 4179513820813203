"""Claim: the empirical feature Gram ΦΦᵀ/p concentrates around the RF kernel K at rate p^{-1/2},
and λ_min(K) is bounded below by its Hermite series.

The measurements are :mod:`rftheory.concentration`; this module runs them for several activations
and follows the protocol of :mod:`rftheory.claims`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

from rftheory.concentration import (
    EXPECTED_SLOPE,
    LAMBDA_RTOL,
    SLOPE_TOLERANCE,
    concentration,
    lambda_min_vs_d,
    plot_curves,
)
from rftheory.claims._common import ClaimConfig, main_for
from rftheory.runtime import TimeLimitReached
from rftheory.deadline import Deadline
from rftheory.data import sphere_points
from rftheory.errors import RFTheoryError
from rftheory.kernel import DEFAULT_ORDER, hadamard_power_bounds
from rftheory.output import format_table

CLAIM = "kernel_concentration"

#: Activations of the full check (ReLU, a smooth odd one, their sum as in the paper, and erf,
#: whose kernel has a closed form to cross-check the series).
DEFAULT_ACTIVATIONS = ("relu", "tanh", "relu+tanh", "erf")


@dataclasses.dataclass(frozen=True)
class Config(ClaimConfig):
    """The concentration check (see :func:`run`); checked on creation.

    Attributes
    ----------
    n, d : int
        Data ``sphere_points(n, d, seed)`` of the concentration curves.
    p : tuple of int
        Numbers of features (sorted, distinct).
    reps : int
        Independent draws of V per p (their errors are averaged before the log–log fit).
    sweep_n : int
        n of the λ_min(K)-against-d sweep.
    sweep_d : tuple of int
        Its values of d.
    activations : tuple of str
    """

    n: int = 50
    d: int = 20
    p: tuple[int, ...] = tuple(2**k for k in range(7, 16))
    reps: int = 8
    sweep_n: int = 300
    sweep_d: tuple[int, ...] = (10, 20, 50, 100, 200, 300, 600)
    activations: tuple[str, ...] = DEFAULT_ACTIVATIONS

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("p", "sweep_d", "activations"):
            self._set(name, tuple(getattr(self, name)))
        if min(self.n, self.d, self.reps, self.sweep_n) < 1 or not self.p or not self.activations:
            raise RFTheoryError("kernel_concentration check needs n, d, reps, sweep_n >= 1, "
                                "values of p and activations")
        if list(self.p) != sorted(set(self.p)) or self.p[0] < 1:
            raise RFTheoryError(f"p must be increasing positive integers, got {self.p}")


FULL = Config()
QUICK = Config(n=20, d=10, p=tuple(2**k for k in range(7, 14)), reps=4, sweep_n=100,
               sweep_d=(10, 20, 50, 100, 200))


# ---------------------------------------------------------------------------------------------
# Protocol: run, plot, summary
# ---------------------------------------------------------------------------------------------

def run(config: Config = FULL, *, progress: Callable[[str], None] | None = None,
        deadline: Deadline | None = None) -> dict:
    """The check for ``config``; see the module docstring for what is measured.

    Parameters
    ----------
    config : Config
        The sizes and seeds (:data:`FULL` by default, :data:`QUICK` for ``--quick``).
    progress : callable, optional
        Called with one line of text per finished step.
    deadline : rftheory.deadline.Deadline, optional
        Checked before each draw of V (:func:`rftheory.concentration.concentration`): once it
        has passed, :class:`~rftheory.runtime.TimeLimitReached` says which activations'
        curves finished (no verdict is drawn from part of the widths); default none.

    Returns
    -------
    dict
        JSON-serialisable: the parameters, one concentration curve per activation
        (``curves``), λ_min(K) against d (``lambda_min_vs_d``) and the ``verdict``.

    Examples
    --------
    A small run (seconds): one activation, two widths.

    >>> from rftheory.claims import kernel_concentration as claim
    >>> config = claim.QUICK.replace(n=5, d=5, p=(64, 1024), reps=2, sweep_n=8, sweep_d=(5, 10),
    ...                              activations=("relu",))
    >>> result = claim.run(config)
    >>> result["verdict"]["supported"], -0.8 < result["curves"][0]["slope"] < -0.2
    (True, True)
    """
    seed, activations = config.seed, config.activations
    X = sphere_points(config.n, config.d, seed)
    powers = hadamard_power_bounds(X, DEFAULT_ORDER)
    curves = []
    for i, a in enumerate(activations):
        curves.append(concentration(a, X, config.p, seed=seed, reps=config.reps, powers=powers,
                                    progress=progress, deadline=deadline))
        if curves[-1].get("stop_reason") == "time_limit":
            raise TimeLimitReached(
                [f"{c['activation']}: every width" for c in curves[:-1]]
                + [f"{a}: p = {', '.join(map(str, curves[-1]['p']))}"] * bool(curves[-1]["p"]),
                [f"{a}: p = {', '.join(map(str, curves[-1]['p_not_run']))}"]
                + [f"{b}: every width" for b in activations[i + 1:]] + ["λ_min(K) against d"])
    sweep = lambda_min_vs_d(activations, config.sweep_n, config.sweep_d, seed=seed,
                            progress=progress)
    sweep_ok = all(all(e["bound_ok"]) for e in sweep["activations"].values())
    verdict = {
        "slopes_within_tolerance": all(c["verdict"]["slope_ok"] for c in curves),
        "lambda_min_converges": all(c["verdict"]["lambda_min_ok"] for c in curves),
        "hermite_bound_holds": sweep_ok and all(c["verdict"]["hermite_bound_ok"] for c in curves),
    }
    verdict["supported"] = all(verdict.values())
    return {
        "claim": CLAIM,
        "statement": ("||PhiPhi^T/p - K||_op ~ p^(-1/2) (log-log slope -1/2 within "
                      f"{SLOPE_TOLERANCE}); lambda_min(PhiPhi^T)/p -> lambda_min(K) (within "
                      f"{LAMBDA_RTOL:.0%} at the largest p); lambda_min(K) >= "
                      "sum_k mu_k^2 lambda_min((XX^T/d)^{o k})"),
        "config": config.as_dict(exclude=("activations",)),
        "activations": list(activations),
        "expected_slope": EXPECTED_SLOPE,
        "slope_tolerance": SLOPE_TOLERANCE,
        "lambda_rtol": LAMBDA_RTOL,
        "curves": curves,
        "lambda_min_vs_d": sweep,
        "verdict": verdict,
    }


def plot(result: dict, stem: Path) -> list[Path]:
    """Draw the concentration figure: (a) ‖ΦΦᵀ/p − K‖_op against p, (b) λ_min(ΦΦᵀ)/p against p,
    (c) λ_min(K) against d.

    (a) The mean over the draws of V (bars from the smallest to the largest draw), a p^{−1/2}
    reference (dashed) and each activation's fitted slope (legend). (b) The mean over the draws
    (bars: the CLT standard deviation σ̂_u/√p) converges to λ_min(K) (solid horizontal line), which
    lies above the Hermite lower bound Σ_k μ_k² λ_min((XXᵀ/d)^∘k) (dotted). (c) λ_min(K) (dots)
    and its Hermite bound (dashed) at fixed n against d, both divided by Σ_{k≥2} μ_k², the value
    they approach at large d. Values ≤ 0, which a log axis cannot show, are open down-triangles on
    the bottom edge. Drawn by :func:`rftheory.concentration.plot_curves`.

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
    return plot_curves(result["curves"], Path(stem), result.get("lambda_min_vs_d"))


def _g(x: Any, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}g}"


def summary(result: dict) -> str:
    """Short tables: slopes and λ_min per activation, then λ_min(K)/Σ_{k>=2}μ_k² against d.

    Parameters
    ----------
    result : dict
        A result of :func:`run` (or its JSON).

    Returns
    -------
    str
        The table, ready to print.
    """
    rows = []
    for c in result["curves"]:
        se = c["slope_standard_error"]
        rows.append([c["activation"], f"{c['slope']:.3f} ± {_g(se, 2)}",
                     _g(c.get("slope_upper_half")),
                     f"{c['op_error_mean'][-1]:.2e}",
                     f"{c['lambda_min_empirical_mean'][-1]:.4e}", f"{c['lambda_min_kernel']:.4e}",
                     f"{c['hermite_bound_k0']:.4e}", f"{c['hermite_bound_k2']:.4e}",
                     f"{c['parseval_tail_k2']:.4e}",
                     "ok" if c["verdict"]["all_ok"] else "FAIL"])
    c0 = result["curves"][0]
    lines = [f"n = {c0['n']}, d = {c0['d']}, p = {c0['p'][0]}..{c0['p'][-1]}, "
             f"{c0['reps']} draws of V per p; expected slope {result['expected_slope']} "
             f"± {result['slope_tolerance']}",
             format_table(["activation", "slope", "slope (upper half of p)", "err(p_max)", "lam_min/p (p_max)",
                           "lam_min(K)", "LB k>=0", "LB k>=2", "sum_k>=2 mu_k^2", "verdict"],
                          rows)]
    sweep = result.get("lambda_min_vs_d")
    if sweep:
        names = list(sweep["activations"])
        rows = []
        for i, d in enumerate(sweep["d"]):
            row = [d]
            for name in names:
                e = sweep["activations"][name]
                s2 = e["parseval_tail_k2"]
                row.append(f"{e['lambda_min_kernel'][i] / s2:.3f} / "
                           f"{e['hermite_bound_k2'][i] / s2:.3f}")
            rows.append(row)
        lines.append(f"lambda_min(K) / sum_k>=2 mu_k^2  and  LB(k>=2) / sum_k>=2 mu_k^2, "
                     f"n = {sweep['n']}:")
        lines.append(format_table(["d"] + names, rows))
    v = result["verdict"]
    lines.append("verdict: " + ", ".join(f"{k} = {v[k]}" for k in v))
    return "\n".join(lines)



if __name__ == "__main__":
    raise SystemExit(main_for(CLAIM))
