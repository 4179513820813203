"""The sweep cells: one point of a grid, parameters in, a dict of numbers out.

* :func:`reconstruction_cell` — the cell ``reconstruct``: one
  :func:`rftheory.pipeline.run_reconstruction`, summarised in numbers;
* :func:`label_fit_cell` — the cell ``label_fit``: how well p random features fit n seeded labels;
* :func:`law_cell` — the cell ``law``: a label fit below p = n, a reconstruction from p = n on;
* :func:`cell_memory` — the declared peak memory of any of them (:mod:`rftheory.budget`).

The registry that names them for sweep files is :data:`rftheory.sweep.CELL_KINDS`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from .data import gaussian_labels, sign_labels, sphere_points
from .errors import RFTheoryError
from .features import RandomFeatures
from .fit import train_min_norm
from .pipeline import reconstruction_memory, run_reconstruction

__all__ = ["LABEL_FIT_V_CACHE_BYTES", "reconstruction_cell", "label_fit_cell", "law_cell",
           "cell_memory"]

#: V cache of :func:`label_fit_cell` (four passes over V: eigenvalues, fit, Φᵀa, Φθ).
LABEL_FIT_V_CACHE_BYTES = 2**28


def reconstruction_cell(*, activation: str, d: int, n: int, p: int, seed: int,
                        data: str = "sphere", n_hat: int | None = None,
                        method: str | None = None, max_steps: int | None = None,
                        tol: float = 1e-10) -> dict[str, Any]:
    """The sweep cell ``reconstruct``: one :func:`~rftheory.pipeline.run_reconstruction`, summarised in numbers.

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
        ``"sphere"`` (default), ``"digits"``, ``"patches[:standardised]"`` or ``"cifar10:DIR"``
        (see :func:`rftheory.data.load_dataset`).
    n_hat : int, optional
        Number of candidates (default n).
    method : str, optional
        Reconstruction algorithm (default: :func:`rftheory.reconstruct.reconstruct`'s).
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
        closer to −x_i, sign-invariant matching), ``method`` (the algorithm that ran), ``steps``,
        ``passes`` (streams over V), ``converged``, ``stop_reason`` and ``seconds``. Every number except ``seconds`` is a deterministic function of the
        parameters.
    """
    run = run_reconstruction(activation=activation, d=d, n=n, p=p, seed=seed, data=data,
                             n_hat=n_hat, method=method, max_steps=max_steps, tol=tol)
    m, result = run.matchings, run.result
    return {
        "activation": str(activation), "d": run.d, "n": n, "p": p, "seed": seed, "data": data,
        "n_hat": run.n_hat, "p_over_dn": p / (run.d * n), "p_over_n": p / n,
        "train_residual": run.train_residual,
        "final_loss": result.loss,
        "rho_abs": m["abs"].rho,
        "rho_signed": m["signed"].rho,
        "rho_sign_invariant": m["sign_invariant"].rho,
        "sign_flips": m["sign_invariant"].n_flipped,
        "method": result.method,
        "steps": result.steps,
        "passes": result.passes,
        "converged": result.converged,
        "stop_reason": result.stop_reason,
        "seconds": run.seconds,
    }


def label_fit_cell(*, activation: str, d: int, n: int, p: int, seed: int,
                   labels: str = "gaussian") -> dict:
    """Fit n seeded labels on the √d-sphere with p random features; how well are they fit?

    The sweep cell ``label_fit``, the label-fitting half of the paper's picture: the min-norm interpolator θ* = Φ⁺Y fits
    generic labels once p ≥ n (train residual ≈ 0, Gram ΦΦᵀ of full rank), and for p ≫ n the
    Gram matrix concentrates, λ_min(ΦΦᵀ/p) → λ_min of the RF kernel matrix (> 0 for
    non-polynomial φ and distinct points).

    Parameters
    ----------
    activation : str
        φ (registry name or expression in z).
    d, n, p : int
        Input dimension, training points, features.
    seed : int
        Drives V, the data and the labels through separate streams (:mod:`rftheory.data`).
    labels : {"gaussian", "sign"}

    Returns
    -------
    dict
        ``train_residual`` (‖Φθ*−Y‖/‖Y‖), ``gram_min_eig`` and ``gram_max_eig`` (extreme
        eigenvalues of ΦΦᵀ/p), ``gram_rank`` and ``rank_deficient`` (from the one Gram solve,
        :func:`rftheory.gram.solve_gram`), ``theta_norm`` (‖θ*‖).

    Notes
    -----
    float64 throughout. The numbers' last bits depend on the BLAS thread count (sweeps pin it,
    see :func:`rftheory.sweep.limit_blas_threads`). Eigenvalues from LAPACK ``eigh`` have absolute error
    ~ n·ε·λ_max, so ``gram_min_eig`` below ~1e-14·``gram_max_eig`` means "numerically zero".
    """
    if labels not in ("gaussian", "sign"):
        raise RFTheoryError(f"labels must be 'gaussian' or 'sign', got {labels!r}")
    # V is kept between the four passes (eigenvalues, fit, Φᵀa, Φθ) when it fits in 256 MiB;
    # the cache changes speed only, never the numbers
    features = RandomFeatures(activation, d=d, p=p, seed=seed,
                              v_cache_bytes=LABEL_FIT_V_CACHE_BYTES)
    X = sphere_points(n, d, seed)
    Y = gaussian_labels(n, seed) if labels == "gaussian" else sign_labels(n, seed)
    eigenvalues = np.linalg.eigvalsh(features.gram(X) / p)
    model = train_min_norm(features, X, Y)
    return {
        "train_residual": float(model.train_residual),
        "gram_min_eig": float(eigenvalues[0]),
        "gram_max_eig": float(eigenvalues[-1]),
        "gram_rank": int(model.gram.rank),
        "rank_deficient": bool(model.gram.rank_deficient),
        "theta_norm": float(np.linalg.norm(model.theta)),
    }


def law_cell(*, activation: str, d: int, n: int, p: int, seed: int,
             max_steps: int | None = None, tol: float = 1e-10) -> dict[str, Any]:
    """The sweep cell ``law``: one point of the law of data reconstruction on sphere data.

    With p ≥ n it is :func:`reconstruction_cell` (labels fit, reconstruction, every ρ); with
    p < n — fewer features than candidates, nothing to reconstruct — it is the label fit of
    :func:`label_fit_cell` on the same data and labels. Both carry ``kind``
    (``"reconstruction"`` / ``"label_fit"``), ``train_residual``, ``p_over_dn`` and ``p_over_n``,
    so one grid holds both thresholds (p = n − 1, n and multiples of dn); the ρ keys of a label
    fit are NaN. This is what :mod:`rftheory.claims.law` runs at every point.

    Parameters
    ----------
    activation : str
        Registry name or safe expression in ``z``.
    d, n, p : int
        Input dimension, training-set size, number of random features.
    seed : int
        Drives V, the data, the labels and the optimiser's start.
    max_steps : int, optional
        Optimiser budget (default: :func:`rftheory.reconstruct.reconstruct`'s).
    tol : float
        Target projection loss (default 1e-10).

    Returns
    -------
    dict
        The cell of :func:`reconstruction_cell` with ``kind = "reconstruction"`` (p ≥ n), or
        the parameters, ``kind = "label_fit"``, ``train_residual``, ``gram_rank`` and NaN ρ
        keys (p < n).

    Examples
    --------
    >>> law_cell(activation="relu+tanh", d=3, n=4, p=3, seed=0)["kind"]
    'label_fit'
    """
    if p >= n:
        cell = reconstruction_cell(activation=activation, d=d, n=n, p=p, seed=seed,
                                   max_steps=max_steps, tol=tol)
        cell["kind"] = "reconstruction"
        return cell
    fit = label_fit_cell(activation=activation, d=d, n=n, p=p, seed=seed)
    nan = math.nan
    return {"activation": str(activation), "d": d, "n": n, "p": p, "seed": seed, "data": "sphere",
            "p_over_dn": p / (d * n), "p_over_n": p / n, "kind": "label_fit",
            "train_residual": fit["train_residual"], "gram_rank": fit["gram_rank"],
            "rho_abs": nan, "rho_signed": nan, "rho_sign_invariant": nan}


def cell_memory(kind: str, params: Mapping[str, Any], *, threads: int | None = 1) -> Any:
    """Peak memory of one cell (:func:`reconstruction_cell`, :func:`label_fit_cell`,
    :func:`law_cell`) from its parameters, as a :class:`rftheory.budget.Memory`.

    Parameters
    ----------
    kind : {"reconstruct", "label_fit", "law"}
        The cell's kind (a key of :data:`rftheory.sweep.CELL_KINDS`).
    params : mapping
        Its parameters: ``d``, ``n``, ``p`` required; ``n_hat``, ``method`` used by
        ``reconstruct``.
    threads : int, optional
        Threads drawing V (default 1, as in a sweep worker; None: the cores available).

    Returns
    -------
    rftheory.budget.Memory

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``d``, ``n`` or ``p`` is missing, or the kind is unknown.

    Examples
    --------
    >>> cell_memory("label_fit", {"d": 5, "n": 8, "p": 16}).job
    'label_fit cell (d = 5, n = 8, p = 16)'
    """
    from . import budget
    from .features import stream_memory
    from .fit import train_memory

    try:
        d, n, p = (budget.size(k, params[k]) for k in ("d", "n", "p"))
    except KeyError as exc:
        raise RFTheoryError(f"a {kind} cell needs d, n and p (missing {exc.args[0]})") from None
    if kind == "law":  # law_cell: a label fit below p = n, else a reconstruction
        kind = "reconstruct" if p >= n else "label_fit"
    if kind == "label_fit":
        peak, parts = train_memory(d=d, n=n, p=p, v_cache_bytes=LABEL_FIT_V_CACHE_BYTES,
                                   threads=threads)
        cached = p * d * 8 <= LABEL_FIT_V_CACHE_BYTES
        gram = stream_memory(n, d, p, 8, cached=cached, threads=threads or 1, gram=True)
        sizes = f"d = {budget.show(d)}, n = {budget.show(n)}, p = {budget.show(p)}"
        return budget.Memory(f"label_fit cell ({sizes})", max(peak, gram + parts["V cached"]),
                             tuple(parts.items()))
    if kind == "reconstruct":
        need = reconstruction_memory(d=d, n=n, p=p, n_hat=params.get("n_hat"),
                                     method=params.get("method"), threads=threads)
        return need.named(f"reconstruct cell ({need.job.split('(', 1)[1]}")
    raise RFTheoryError(f"no memory declared for cells of kind {kind!r} (known: label_fit, "
                        "reconstruct, law)")
