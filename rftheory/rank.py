"""The numerical rank of a trained last layer θ ∈ R^{p×k}: how many outputs really count.

A network with k outputs gives k·p equations only if its k columns of θ = W_L − W_L(0) are
independent; a θ of rank r gives r(p − n) equations against n(d − 1) unknowns (the count behind
the law, with k replaced by r). :func:`numerical_rank` counts singular values above a stated
tolerance. :func:`compare_abscissae` asks which count the successes of a sweep follow: one fitted
threshold per candidate abscissa (e.g. width/(dn), k·width/(dn), r·width/(dn)) across all runs,
compared by likelihood.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import ShapeError

__all__ = ["numerical_rank", "singular_values", "compare_abscissae", "AIC_MARGIN"]

#: How much lower (better) an abscissa's AIC must be than every other's to be preferred: 2, a
#: likelihood ratio of e (Burnham & Anderson's "substantial support" below ΔAIC = 2 for the others).
AIC_MARGIN = 2.0


def singular_values(theta: Any) -> np.ndarray:
    """Singular values of θ (a vector is one column), descending, float64 numpy.

    Parameters
    ----------
    theta : array, shape (p,) or (p, k)
        The trained weights (k outputs as columns).

    Returns
    -------
    numpy.ndarray, shape (min(p, k),)
        The singular values, largest first.
    """
    t = np.asarray(theta, dtype=np.float64)
    if t.ndim == 1:
        t = t[:, None]
    if t.ndim != 2 or t.size == 0:
        raise ShapeError(f"θ must have shape (p,) or (p, k), got {np.shape(theta)}")
    if not np.all(np.isfinite(t)):
        raise ShapeError("θ has non-finite entries")
    return np.linalg.svd(t, compute_uv=False)


def numerical_rank(theta: Any, rtol: float | None = None) -> int:
    """The number of singular values of θ above ``rtol``·σ_max.

    Parameters
    ----------
    theta : array, shape (p,) or (p, k)
        The trained last layer (or its change), p parameters per output.
    rtol : float, optional
        Relative tolerance. Default max(p, k)·eps: the singular values of θ are computed with
        an absolute error of about max(p, k)·eps·σ_max (backward-stable SVD), so smaller ones are
        indistinguishable from 0.

    Returns
    -------
    int
        r ∈ {0, …, min(p, k)} (0 for θ = 0).

    Examples
    --------
    >>> import numpy as np
    >>> u, v = np.arange(1.0, 6.0), np.array([1.0, -2.0, 0.5])
    >>> numerical_rank(np.outer(u, v)), numerical_rank(np.eye(5, 3)), numerical_rank(u)
    (1, 3, 1)
    >>> theta = np.outer(u, v) + 1e-8 * np.eye(5, 3)
    >>> numerical_rank(theta), numerical_rank(theta, rtol=1e-6)
    (3, 1)
    """
    s = singular_values(theta)
    p, k = (np.shape(theta) + (1,))[:2]
    tol = (max(p, k) * np.finfo(np.float64).eps if rtol is None else float(rtol))
    if not np.isfinite(tol) or tol < 0:
        raise ShapeError(f"rtol must be a non-negative number, got {rtol!r}")
    return int(np.sum(s > tol * s[0])) if s[0] > 0 else 0


def compare_abscissae(abscissae: dict[str, Any], success: Any, *, margin: float = AIC_MARGIN
                      ) -> dict[str, Any]:
    """Which abscissa do the successes collapse in? One threshold per abscissa, compared by AIC.

    For each candidate abscissa x (one value per run), fit the success curve
    P(success) = Φ((log x − log x*)/σ) to all runs together
    (:func:`rftheory.thresholds.fit_threshold`, probit). The runs collapse in the abscissa whose
    single curve explains them best; every fit has the same two parameters, so the AICs differ by
    twice the log-likelihoods.

    Parameters
    ----------
    abscissae : dict of str to array_like
        Candidate abscissae, each with one positive value per run (e.g. ``{"p/(dn)": ...,
        "k·p/(dn)": ..., "r·p/(dn)": ...}``).
    success : array_like of bool
        Whether each run succeeded.
    margin : float
        ΔAIC by which the best abscissa must beat every other to be named (default
        :data:`AIC_MARGIN`).

    Returns
    -------
    dict
        ``fits`` (per abscissa: ``loglik``, ``aic``, ``delta_aic`` to the best, ``location``,
        ``interval``, ``status``), ``best`` (the abscissa with the lowest AIC, or None when
        another is within ``margin``: the data do not tell them apart), ``margin``, ``runs``.

    Raises
    ------
    rftheory.errors.RFTheoryError
        Fewer than two abscissae, or arrays of different lengths (from the fit).

    Notes
    -----
    The verdict can fail: on runs whose success follows k·p/(dn) the test names k·p/(dn), not
    r·p/(dn) (``tests/test_rank.py``). It cannot separate abscissae that are proportional on
    every run (e.g. r = k everywhere): their fits coincide and ``best`` is None. Perfectly
    separated runs give every separating abscissa log-likelihood ≈ 0 (a step): also None.

    Examples
    --------
    >>> import numpy as np
    >>> w = np.repeat([1.0, 2, 4, 8, 16], 4)            # width/(dn), four setups per point
    >>> r = np.tile([1, 1, 3, 3], 5)                     # rank of θ per setup
    >>> ok = r * w > 10
    >>> out = compare_abscissae({"p/(dn)": w, "r·p/(dn)": r * w}, ok)
    >>> out["best"], out["fits"]["p/(dn)"]["delta_aic"] > 2
    ('r·p/(dn)', True)
    """
    from .errors import RFTheoryError
    from .thresholds import fit_threshold

    if len(abscissae) < 2:
        raise RFTheoryError("compare_abscissae needs at least two abscissae")
    fits = {}
    for name, x in abscissae.items():
        f = fit_threshold(x, success)
        fits[name] = {"loglik": f.loglik, "aic": 4.0 - 2.0 * f.loglik, "location": f.location,
                      "interval": list(f.interval), "status": f.status, "width": f.width}
    best_aic = min(v["aic"] for v in fits.values())
    for v in fits.values():
        v["delta_aic"] = v["aic"] - best_aic
    order = sorted(fits, key=lambda k: fits[k]["aic"])
    best = order[0] if all(fits[k]["delta_aic"] >= margin for k in order[1:]) else None
    return {"fits": fits, "best": best, "margin": float(margin),
            "runs": int(np.size(np.asarray(success)))}
