"""One reconstruction experiment, end to end: data → θ* → reconstruction → ρ.

This is the unit of the law of data reconstruction: for an activation, (d, n, p) and a seed,
train the RF model by the min-norm interpolator, measure whether labels are fit, reconstruct the
training inputs from (θ*, V) alone and measure how close they are. The law sweep
(:mod:`rftheory.claims.law`) and the sweep runner (:mod:`rftheory.sweep`) both call
:func:`reconstruction_cell`, so a cell computed anywhere is the same cell.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .data import gaussian_labels, load_dataset
from .errors import RFTheoryError
from .features import RandomFeatures, train_min_norm
from .metrics import match
from .reconstruct import reconstruct

__all__ = ["reconstruction_cell"]


def reconstruction_cell(*, activation: str, d: int, n: int, p: int, seed: int,
                        data: str = "sphere", n_hat: int | None = None,
                        max_steps: int | None = None, tol: float = 1e-10) -> dict[str, Any]:
    """Train an RF model on n points and try to reconstruct them from (θ*, V).

    Parameters
    ----------
    activation : str
        Registry name or safe expression in ``z``.
    d, n, p : int
        Input dimension, training-set size, number of random features.
    seed : int
        Drives V, the data, the labels and the optimiser's initial candidates (independent
        streams of the same seed).
    data : str
        ``"sphere"`` (default), ``"digits"`` or ``"cifar10:DIR"`` (see :func:`rftheory.data.load_dataset`).
    n_hat : int, optional
        Number of candidates (default n).
    max_steps : int, optional
        Optimiser budget (default: :func:`rftheory.reconstruct.reconstruct`'s).
    tol : float
        Target projection loss.

    Returns
    -------
    dict
        The parameters, plus ``train_residual`` (‖Φθ* − Y‖/‖Y‖, labels fit when ≈ 0),
        ``final_loss`` (projection loss of the reconstruction), ``rho_abs`` (official ρ,
        elementwise |x|), ``rho_signed``, ``rho_sign_invariant``, ``sign_flips`` (matched samples
        closer to −x_i), ``steps``, ``converged``, ``stop_reason`` and ``seconds``. Every number
        except ``seconds`` is a deterministic function of the parameters.
    """
    start = time.perf_counter()
    dataset = load_dataset(data, n, d, seed)
    d = dataset.d
    n_hat = n if n_hat is None else int(n_hat)
    if p < n_hat:
        raise RFTheoryError(f"p = {p} is smaller than the number of candidates n̂ = {n_hat}: "
                            "their features cannot be independent")
    # V cached in memory when it takes at most 1 GiB: reconstruction revisits it every step.
    features = RandomFeatures(activation, d=d, p=p, seed=seed, v_cache_bytes=2**30)
    X = dataset.X
    model = train_min_norm(features, X, gaussian_labels(n, seed))
    options = {} if max_steps is None else {"max_steps": int(max_steps)}
    result = reconstruct(features, model.theta, n_hat, seed=seed, tol=tol, **options)
    X_hat = np.asarray(result.X_hat)
    matchings = {v: match(X, X_hat, variant=v) for v in ("abs", "signed", "sign_invariant")}
    return {
        "activation": str(activation), "d": d, "n": n, "p": p, "seed": seed, "data": data,
        "n_hat": n_hat, "p_over_dn": p / (d * n), "p_over_n": p / n,
        "train_residual": model.train_residual,
        "final_loss": result.loss,
        "rho_abs": matchings["abs"].rho,
        "rho_signed": matchings["signed"].rho,
        "rho_sign_invariant": matchings["sign_invariant"].rho,
        "sign_flips": matchings["sign_invariant"].n_flipped,
        "steps": result.steps,
        "converged": result.converged,
        "stop_reason": result.stop_reason,
        "seconds": time.perf_counter() - start,
    }
