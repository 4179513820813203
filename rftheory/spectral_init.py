"""Spectral initialisation of the attack from the Hermite moments of θ* (issue #26).

For V with rows v_j ~ N(0, I/d) write g_j = √d v_j ~ N(0, I_d). A training point x_i = √d u_i
(u_i a unit vector) gives the features φ(x_i·v_j) = φ(u_i·g_j), and for the Hermite tensors
He_k(g) (probabilists', multivariate)

    E[φ(u·g) He_k(g)] = √(k!) μ_k u^{⊗k},   μ_k = E[φ(z) He_k(z)]/√(k!)

(:func:`rftheory.hermite.hermite_coefficients`). Since θ* = Φᵀa (min-norm interpolation, a
the dual weights), the averages

    T_k = (1/p) Σ_j θ*_j He_k(g_j)  ≈  √(k!) μ_k Σ_i a_i u_i^{⊗k}

reveal the training points without any optimisation: T_2 is a d × d matrix of rank n whose
range is span{u_i}, and T_3 restricted to that span is a symmetric tensor whose rank-one
components are the u_i themselves (Jennrich's algorithm: two random contractions
M_α = T_3(·, ·, α) = W diag(λ_i⟨w_i, α⟩) Wᵀ are simultaneously diagonalised by the
eigenvectors of M_α M_β⁻¹). :func:`spectral_init` computes them in about twenty streams over V
(no d × d matrix) and returns n starting points for the attack.

Notes
-----
*Which orders.* An order is usable only if μ_k ≠ 0 for the activation: relu has μ_3 = 0 (its
odd part is linear), tanh has μ_2 = 0 (it is odd). The span comes from order 2; without it
(μ_2 = 0) there is no span and no initialisation (``spectral_init`` says so in ``note`` and
returns random points). The points come from order 3, else order 4 (Jennrich applies to the
matrix slices T_4(·, ·, α, α) = W diag(λ_i⟨w_i, α⟩²) Wᵀ in the same way), else they are drawn at
random in the span. A coefficient counts as zero below 1e-8·√E[φ²] (the quadrature's error is
~1e-15).

*Variance reduction.* The components of θ* of degree 0 and 1 (μ_0 Σa_i and
μ_1⟨Σa_iu_i, g⟩) carry most of its variance (for relu+tanh μ_1² = 1.22 of E[φ²] = 1.5) and add
only noise to T_2: they are removed first by least squares of θ* on [1, g] (d + 1 regressors).
Before T_3/T_4 the degree-2 part in the span is also removed (least squares on the n(n+1)/2
quadratic monomials of h = U_sᵀg), when p is large enough for that fit (regressors < 0.8p).
Measured at relu+tanh, 4 seeds (``benchmarks/bench_attack.py --init-table``): the mean squared
cosine between the estimated and the true span at 10dn rose from 0.43 to 0.69 at d = 100, n = 20
with the degree-0/1 removal.

*Accuracy.* Each T_k is a mean of p independent terms, so its error is O(√(d/p)) in spectral
norm relative to the spread of θ*, while the signal is ~μ_k|a_i|: the estimate is informative
only when p ≫ dn·E[φ²]/μ_k². Near the counting limit p ≈ dn the span is only partly found
(mean squared cosine ~0.3–0.6 at d ≥ 20, against n/d for a random subspace) and the points
from the third/fourth moment start at ρ barely below a random start's. The module is exact
arithmetic on those estimates (float64, eigen-decompositions of d × d and n × n symmetric or
general matrices); its error is the statistical one above, not rounding. Use it as a start for
the local method, never as an answer.

*Signs.* Jennrich's eigenvectors have arbitrary signs, and φ is not even, so each row's sign is
chosen greedily by the projection loss (one pass over V per row).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .backend import to_host
from .data import to_sphere
from .errors import RFTheoryError, ShapeError
from .features import FeatureMap
from .projection import projection_loss
from .seeding import RNGLike, generator, rng_or_seed

__all__ = ["SpectralInit", "usable_orders", "spectral_init", "residual_directions"]

#: A Hermite coefficient counts as zero below this times √E[φ²].
ZERO_COEFFICIENT = 1e-8
#: Passes of the Richardson iteration that removes the degree-0/1 part of θ (error factor
#: ~(d/p) per pass: at p ≥ 4d, 6 passes leave < 1e-3 of it).
DEFLATION_SWEEPS = 6
#: Random contraction pairs tried by Jennrich's algorithm (the one whose points have the lowest
#: projection loss is kept: one pair's eigenvalue gaps can be small).
JENNRICH_TRIALS = 3
#: Subspace-iteration passes for the top eigenvectors of T_2.
SUBSPACE_SWEEPS = 12
#: Seed stream of residual_directions' subspace iteration (for an integer ``rng``).
_STREAM_DIRECTIONS = 2**40 + 190


@dataclass(frozen=True)
class SpectralInit:
    """The result of :func:`spectral_init` (host float64).

    Attributes
    ----------
    X : ndarray, shape (n, d)
        Starting points on the √d-sphere.
    basis : ndarray, shape (d, s) or None
        Orthonormal basis of the estimated span of the training points (s = min(n, d)); None
        when no span could be estimated (μ_2 = 0).
    span_order : int or None
        Hermite order that gave the span (2), or None.
    point_order : int or None
        Hermite order that gave the points (3 or 4), or None when they were drawn at random (in
        the span when there is one).
    passes : int
        Streams over V made (the loss evaluations of the sign choice included).
    note : str
        What was used, and any fallback, in words.
    """

    X: np.ndarray
    basis: np.ndarray | None
    span_order: int | None
    point_order: int | None
    passes: int
    note: str


def usable_orders(activation: Any, max_order: int = 4) -> tuple[int, ...]:
    """The orders k ≤ ``max_order`` with μ_k ≠ 0 (see module Notes) for an activation.

    Parameters
    ----------
    activation : str or Activation
        φ.
    max_order : int, default 4
        Highest order considered.

    Returns
    -------
    tuple of int
        The usable orders, increasing.

    Examples
    --------
    >>> usable_orders("relu")
    (0, 1, 2, 4)
    >>> usable_orders("relu+tanh")
    (0, 1, 2, 3, 4)
    >>> usable_orders("tanh")
    (1, 3)
    """
    from .hermite import hermite_coefficients   # lazy: keeps sympy off the attack's import

    h = hermite_coefficients(activation, max_order)
    floor = ZERO_COEFFICIENT * math.sqrt(h.second_moment)
    return tuple(k for k, (mu, err) in enumerate(zip(h.values, h.errors))
                 if abs(mu) > max(floor, 10 * err))


def _slice(H: np.ndarray, th: np.ndarray, alpha: np.ndarray, k: int) -> np.ndarray:
    """(1/p) Σ_j θ_j He_k(h_j)(·, ·, α, …, α) for k = 3 or 4 (h_j the rows of H), symmetric."""
    p, s = H.shape
    proj = H @ alpha
    eye = np.eye(s)
    if k == 3:
        w = th * proj
        M = (H * w[:, None]).T @ H / p - eye * w.mean()
        hb = H.T @ th / p
        M -= np.outer(hb, alpha) + np.outer(alpha, hb)
    else:   # k == 4
        a2 = float(alpha @ alpha)
        w = th * proj * proj
        M = (H * w[:, None]).T @ H / p - eye * w.mean()
        M -= a2 * ((H * th[:, None]).T @ H / p)
        hb = H.T @ (th * proj) / p
        M -= 2.0 * (np.outer(alpha, hb) + np.outer(hb, alpha))
        M += th.mean() * (a2 * eye + 2.0 * np.outer(alpha, alpha))
    return 0.5 * (M + M.T)


def _jennrich(H: np.ndarray, th: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Columns W (s, s): the rank-one directions of T_k restricted to the span (unit norm)."""
    s = H.shape[1]
    a, b = rng.standard_normal(s), rng.standard_normal(s)
    Ma, Mb = _slice(H, th, a, k), _slice(H, th, b, k)
    try:
        _, W = np.linalg.eig(np.linalg.solve(Mb.T, Ma.T).T)    # Ma Mb⁻¹
    except np.linalg.LinAlgError:
        _, W = np.linalg.eig(Ma @ np.linalg.pinv(Mb))
    W = np.real(W)
    return W / np.maximum(np.linalg.norm(W, axis=0), 1e-300)


def _stream(features: FeatureMap) -> Any:
    """(first row, G = √d·V for a chunk of rows) over V, host float64."""
    d, sr = features.d, math.sqrt(features.d)
    for start, Vs in features.weight_chunks():
        yield start, np.asarray(to_host(Vs), dtype=np.float64).reshape(-1, d) * sr


def _minus_linear(values: np.ndarray, coef: np.ndarray) -> Any:
    """θ' = θ − c_0 − G c_1 per chunk of rows (θ with its degree-0/1 fit ``coef`` removed)."""
    def deflated(start: int, G: np.ndarray) -> np.ndarray:
        return values[start:start + G.shape[0]] - coef[0] - G @ coef[1:]
    return deflated


def _deflation(features: FeatureMap, th_all: np.ndarray,
               sweeps: int | None = None) -> tuple[np.ndarray, int]:
    """Least-squares coefficients (d + 1, k) of θ on [1, g] and the passes over V made.

    Richardson iteration preconditioned with p·I (AᵀA/p = I + O(√(d/p)) for A = [1, g]), one
    pass over V each, no d × d matrix: ``sweeps`` passes, by default DEFLATION_SWEEPS when
    p > 2(d + 1) and none otherwise (the coefficients stay 0). After one pass the coefficients
    are the first moments (1/p)Σθ_j and (1/p)Σθ_j g_j.
    """
    d, p = features.d, features.p
    coef = np.zeros((d + 1, th_all.shape[1]))
    passes = 0
    if sweeps is None:
        sweeps = DEFLATION_SWEEPS if p > 2 * (d + 1) else 0
    for _ in range(sweeps):
        step = np.zeros_like(coef)
        for start, G in _stream(features):
            r = th_all[start:start + G.shape[0]] - coef[0] - G @ coef[1:]
            step[0] += r.sum(axis=0)
            step[1:] += G.T @ r
        passes += 1
        coef += step / p
    return coef, passes


def _top_eigenvectors(features: FeatureMap, deflated: Any, s: int, k_out: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """(d, s) top eigenvectors of T_2 = (1/p) Σ_j θ'_j (g_j g_jᵀ − I) and the passes made.

    θ' = ``deflated(start, G)`` per chunk; by |λ|, or with k outputs those of Σ_c T_2,c²;
    subspace iteration on q = min(d, 2s + 8) columns, then Rayleigh–Ritz.
    """
    d, p = features.d, features.p
    q = min(d, 2 * s + 8)
    Q = np.linalg.qr(rng.standard_normal((d, q)))[0]
    passes = 0
    for it in range(SUBSPACE_SWEEPS + 1):
        TQ = np.zeros((k_out, d, q))
        tsum = np.zeros(k_out)
        for start, G in _stream(features):
            t = deflated(start, G)
            GQ = G @ Q
            for c in range(k_out):
                TQ[c] += G.T @ (GQ * t[:, c:c + 1])
            tsum += t.sum(axis=0)
        passes += 1
        TQ = (TQ - tsum[:, None, None] * Q[None]) / p
        if it == SUBSPACE_SWEEPS:
            break
        if k_out == 1:
            Q = np.linalg.qr(TQ[0])[0]
        else:   # Σ_c T_c² Q needs a second product: use Σ_c T_c Q (T_c Qᵀ T_c Q) instead
            Q = np.linalg.qr(sum(T @ (Q.T @ T) for T in TQ))[0]
    if k_out == 1:
        R = Q.T @ TQ[0]
        ev, vec = np.linalg.eigh(0.5 * (R + R.T))
        order = np.argsort(-np.abs(ev))[:s]
    else:
        R = sum((Q.T @ T).T @ (Q.T @ T) for T in TQ)
        ev, vec = np.linalg.eigh(0.5 * (R + R.T))
        order = np.argsort(-ev)[:s]
    return Q @ vec[:, order], passes


def spectral_init(features: FeatureMap, theta: Any, n: int, *, rng: RNGLike = 0,
                  seed: int | None = None) -> SpectralInit:
    """n starting points for the attack from the Hermite moments of θ* (module Notes).

    Parameters
    ----------
    features : FeatureMap
        The feature map (V with rows ~ N(0, I/d), as :class:`rftheory.features.RandomFeatures`).
    theta : array, shape (p,) or (p, k)
        The trained parameters θ*. With k outputs, the span is that of Σ_c T_2,c²'s top
        eigenvectors and the points come from one random combination of the outputs.
    n : int
        Number of points to return.
    rng : int, numpy.random.SeedSequence, numpy.random.Generator or None, default 0
        Randomness of the contractions and of any random points (SPEC 7,
        :func:`rftheory.seeding.generator`; an integer gives the fixed stream of that seed).
    seed : int, optional
        The older spelling of an integer ``rng`` (still accepted; not both).

    Returns
    -------
    SpectralInit
        The points, the estimated span, the orders used and a note on any fallback.

    Raises
    ------
    ShapeError
        If θ does not have p rows.
    RFTheoryError
        If n < 1.

    Notes
    -----
    About 20 streams over V, each costing about what a loss evaluation with 2n + 8 candidates
    costs (:data:`DEFLATION_SWEEPS` for the least squares on [1, g], :data:`SUBSPACE_SWEEPS` + 1
    for T_2's subspace iteration, one for the projections h = U_sᵀg), then host work on p × s
    and s × s arrays, and JENNRICH_TRIALS·(n + 1) loss evaluations for the signs. Memory:
    d × (2n + 8) and p × s arrays, never d × d. Accuracy: see the module Notes (statistical, O(√(d/p))).

    Examples
    --------
    >>> import numpy as np
    >>> from rftheory.data import gaussian_labels, sphere_points
    >>> from rftheory.features import RandomFeatures, train_min_norm
    >>> X = sphere_points(4, 6, 0)
    >>> rf = RandomFeatures("relu+tanh", 6, 2000, seed=0)
    >>> theta = train_min_norm(rf, X, gaussian_labels(4, 0)).theta
    >>> init = spectral_init(rf, theta, 4)
    >>> init.X.shape, init.span_order, init.point_order
    ((4, 6), 2, 3)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise RFTheoryError(f"n must be a positive integer, got {n!r}")
    n = int(n)
    d, p = features.d, features.p
    th_all = np.asarray(to_host(theta), dtype=np.float64)
    th_all = th_all[:, None] if th_all.ndim == 1 else th_all
    if th_all.ndim != 2 or th_all.shape[0] != p:
        raise ShapeError(f"theta must have shape ({p},) or ({p}, k), got {th_all.shape}")
    k_out = th_all.shape[1]
    rng = generator(rng_or_seed(rng, seed), 2**26 + 26)
    orders = usable_orders(features.activation)
    s = min(n, d)
    coef, passes = _deflation(features, th_all)
    deflated = _minus_linear(th_all, coef)

    notes = []
    span_order = None
    if n >= d:
        basis = np.eye(d)
        span_order = 2   # the span is all of R^d: nothing to estimate
        notes.append("span: all of R^d (n ≥ d)")
    elif 2 in orders:
        basis, used = _top_eigenvectors(features, deflated, s, k_out, rng)
        passes += used
        span_order = 2
        notes.append("span: order 2")
    else:
        basis = None
        notes.append("no span: μ_2 = 0 for this activation; random start")

    point_order = None
    if basis is None:
        X = to_sphere(rng.standard_normal((n, d)))
    else:
        point_k = next((k for k in (3, 4) if k in orders), None)
        if point_k is None or n > d:
            W = rng.standard_normal((s, n))
            notes.append("points: random in the span" + (" (n > d)" if n > d else
                                                          " (μ_3 = μ_4 = 0)"))
        else:
            # Pass 3: h = U_sᵀg and θ' (the combination of outputs used for the points).
            beta = rng.standard_normal(k_out) if k_out > 1 else np.ones(1)
            Hs, ts = [], []
            for start, G in _stream(features):
                Hs.append(G @ basis)
                ts.append(deflated(start, G) @ beta)
            passes += 1
            H, th = np.concatenate(Hs), np.concatenate(ts)
            iu = np.triu_indices(s)
            if (d + 1 + iu[0].size) < 0.8 * p:
                # Remove the degree-2 part in the span (least squares on the monomials h_a h_b).
                Q = (H[:, :, None] * H[:, None, :])[:, iu[0], iu[1]]
                A2 = np.hstack([np.ones((p, 1)), H, Q])
                c2, *_ = np.linalg.lstsq(A2, th, rcond=None)
                th = th - A2 @ c2
            point_order = point_k
            notes.append(f"points: order {point_k} (Jennrich, best of {JENNRICH_TRIALS})"
                         + (", μ_3 = 0" if point_k == 4 else ""))

    def loss(Y: np.ndarray) -> float:
        return projection_loss(features, Y, th_all, gradient=False).loss

    if basis is None:
        pass
    elif point_order is None:
        X = to_sphere((basis @ W).T)
    else:
        # Jennrich with JENNRICH_TRIALS random pairs of contractions; each result's signs chosen
        # greedily by the projection loss (φ is not even); the lowest loss is kept.
        best = math.inf
        for _ in range(JENNRICH_TRIALS):
            Xt = to_sphere((basis @ _jennrich(H, th, point_order, rng)).T)
            value = loss(Xt)
            passes += 1
            for i in range(n):
                Y = Xt.copy()
                Y[i] = -Y[i]
                flipped = loss(Y)
                passes += 1
                if flipped < value:
                    Xt, value = Y, flipped
            if value < best:
                X, best = Xt, value
    return SpectralInit(X=X, basis=basis, span_order=span_order, point_order=point_order,
                        passes=passes, note="; ".join(notes))


def residual_directions(features: FeatureMap, residual: Any, *, k: int = 3,
                        rng: RNGLike = 0) -> tuple[np.ndarray, int]:
    """Candidate points for what a residual r = P⊥_{Φ̂}θ still contains, from its moments.

    If the candidates X̂ miss some training points, r is (to first order) Σ_miss a_i φ(Vx_i)
    projected off the candidates' features, so its Hermite moments (module Notes) point at the
    missing points: T_1(r) = (1/p) Σ_j r_j g_j ≈ μ_1 Σ_miss a_i u_i, and the top eigenvectors
    of T_2(r) (after the degree-0/1 part of r is removed) ≈ the u_i themselves when the missing
    points are few or nearly orthogonal. Returns ±T_1 and ± each of the top ``k`` eigenvectors,
    on the √d-sphere (signs: φ is not even, and an eigenvector has none).

    Parameters
    ----------
    features : FeatureMap
        The feature map (V with rows ~ N(0, I/d)).
    residual : array, shape (p,) or (p, c)
        r (any namespace; it is brought to the host). With c outputs, T_1 is the top left
        singular vector of the c first moments and T_2 that of Σ_c T_2,c².
    k : int, default 3
        Eigenvectors of T_2 offered (at most d).
    rng : int, numpy.random.SeedSequence, numpy.random.Generator or None, default 0
        Start of the subspace iteration (SPEC 7).

    Returns
    -------
    points : ndarray, shape (2 + 2k, d)
        The candidate points (host float64, norm √d).
    passes : int
        Streams over V made.

    Notes
    -----
    Cost: DEFLATION_SWEEPS passes over V for the degree-0/1 least squares (their g
    coefficients are T_1; one pass when p ≤ 2(d + 1)) and SUBSPACE_SWEEPS + 1 for T_2, each a
    product of V with at most 2k + 8 vectors; memory d × (2k + 8). Accuracy: statistical (the
    moments are means over p features, error O(√(d/p))). With one training point missing and
    the others exact, the median (smallest) |cos| of T_1 and of the top eigenvector with the
    missing point, relu+tanh, seeds 0–1, every point in turn (``python
    benchmarks/bench_attack.py --directions --seeds 2``): 0.92 (0.83) and 0.93 (0.90) at
    (d, n) = (80, 16), p = 1.25dn; 0.92 (0.85) and 0.86 (0.81) at (40, 8), 1.25dn; 0.64 (0.32)
    and 0.80 (0.04) at (10, 10), 1.1dn — where the best of 1000 random points has ~0.42,
    ~0.59 and ~1.

    Examples
    --------
    >>> from rftheory.data import gaussian_labels, sphere_points
    >>> from rftheory.features import RandomFeatures, train_min_norm
    >>> X = sphere_points(1, 40, 0)
    >>> rf = RandomFeatures("relu+tanh", 40, 4000, seed=0)
    >>> theta = train_min_norm(rf, X, gaussian_labels(1, 0)).theta
    >>> points, passes = residual_directions(rf, theta, k=1)
    >>> points.shape, round(float(abs(points[0] @ X[0])) / 40, 1)
    ((4, 40), 1.0)
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= features.d:
        raise RFTheoryError(f"k must be an integer in [0, d], got {k!r}")
    d, p = features.d, features.p
    r_all = np.asarray(to_host(residual), dtype=np.float64)
    r_all = r_all[:, None] if r_all.ndim == 1 else r_all
    if r_all.ndim != 2 or r_all.shape[0] != p:
        raise ShapeError(f"residual must have shape ({p},) or ({p}, c), got {r_all.shape}")
    rng = generator(rng, _STREAM_DIRECTIONS)
    coef, passes = _deflation(features, r_all, None if p > 2 * (d + 1) else 1)
    first = coef[1:]
    t1 = first[:, 0] if first.shape[1] == 1 else np.linalg.svd(first, full_matrices=False)[0][:, 0]
    dirs = [t1, -t1]
    if k:
        basis, used = _top_eigenvectors(features, _minus_linear(r_all, coef), int(k),
                                        r_all.shape[1], rng)
        passes += used
        for i in range(basis.shape[1]):
            dirs += [basis[:, i], -basis[:, i]]
    return to_sphere(np.array(dirs)), passes
