"""Collision patterns of a reconstruction: candidates that pile up on training points.

Theorem 1 of the paper says that a candidate whose feature lies in the span of the training
features is close to a training point; it does not say that the n̂ = n candidates of a zero-loss
reconstruction sit at *distinct* training points. A **collision** assigns the candidates to
training points with multiplicities m_i ≥ 0 (Σ m_i = n̂, some m_i ≥ 2), so that the training
points with m_i = 0 are left out. Its **region**

    D_m(δ) = {X̂ on the √d-sphere : ‖x̂_j − x_{c(j)}‖ ≤ δ√d for every candidate j}

(c(j) the training point of candidate j) contains no reconstruction of the whole set, and the
question of Theorem 2 (proved in the paper for n = 2) is whether the projection loss
L(X̂) = ‖P⊥_{Φ̂}θ‖²/‖θ‖² stays bounded away from 0 there, against the true set's 0.

This module gives, for any collision:

* :func:`collision_types` / :func:`collision_assignments`: the patterns up to relabelling of the
  training points (integer partitions of n̂ with a part ≥ 2) and their placements;
* :func:`collision_limit`: the δ → 0 limit of min over D_m(δ) of L, in closed form (pairs) or by a
  small exact optimisation (triples), streamed over V;
* :func:`collision_region_minimum`: min over D_m(δ) by multi-start L-BFGS-B on geodesic cap
  coordinates (an upper bound on the minimum);
* :func:`zero_threshold`: the dimension count p*(m) = n̂ + ℓ(d − 2) (ℓ = Σ(m_i − 1)) up to which
  the limit is 0 generically.

Notes
-----
*The limit.* Let S = {i : m_i ≥ 1} (the support) and F_S = [φ(x_i)]_{i∈S}. As the candidates of
a point x of multiplicity m tend to x, the span of their features tends to the span of a length-m
*scheme* at x (a limit of m points), which lies in the (m − 1)-th osculating space of the feature
manifold x ↦ φ(Vx), x on the sphere. With J = diag φ′(Vx)·V and B an orthonormal basis of x⊥:

* m = 2: the limits are span{φ(x), J B u}, u a tangent direction;
* m = 3: span{φ(x), JBu₁, JBu₂} (three points collapsing in a tangent plane) or the *curvilinear*
  span{φ(x), JBu, JBs + q(u)} (three points on a curve with velocity u and acceleration s), where
  q(u) = φ″(Vx) ⊙ (VBu)² − (‖u‖²/d) Jx is the second-order term of φ along the sphere;
  every length-3 scheme is one of these two kinds.

Minimising the residual of θ over these directions has a closed form in the directions that
enter linearly: for a rank-one ratio (bᵀw)²/(wᵀMw) the maximum over w is bᵀM⁺b (Cauchy–Schwarz),
and with several points the optimal directions are the coefficient blocks c_i of θ's projection
on the whole space, which then lies in the span of the chosen vectors. Hence

    L₀ = min_{u_t} ‖P⊥_{W(u)} θ‖²/‖θ‖²,
    W(u) = span{F_S, J_iB_i (m_i ≥ 2), q_t(u_t) (m_t = 3)},

which is the closed form ‖P⊥_{span{F_S, J_iB_i}}θ‖²/‖θ‖² when every m_i ≤ 2 (no optimisation
at all), and an optimisation over one unit vector u_t ∈ R^{d−1} per triple (the accelerations s
are absorbed by J_iB_i). For m ≥ 4 this W(u) is still attained (three of the candidates form a
curvilinear triple and the others only enlarge the span), so it is an *upper bound* on L₀, flagged
``exact = False``; the true limit can also use third and higher derivatives.

*Dimension count.* W has dimension s + k(d − 1) for k multiple points (first order), so with pairs
only L₀ = 0 exactly when p ≤ s + k(d − 1) = n̂ + ℓ(d − 2), ℓ = n̂ − s = Σ(m_i − 1) (generic V and
data). Counting the parameters of curvilinear schemes, (m_i − 1)(d − 2) per point, against the
p − n̂ conditions θ ∈ span gives the same p* = n̂ + ℓ(d − 2) for any multiplicities: for one
pair p* = n + d − 2; for all candidates on one point (ℓ = n − 1) p* = nd − n − d + 2 < dn.

*Kinks.* For activations with kinks the Taylor picture holds inside the kink radius
(:func:`kink_radius`, shrinking like 1/p). For ReLU, φ(Vx̂) = Jx̂ exactly there, so every limit
(any m) is the first-order one and the region minimum equals it for all δ below the radius.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np
import scipy.optimize
from array_api_compat import array_namespace, device as array_device
from threadpoolctl import threadpool_limits

from .backend import to_host
from .data import tangent_basis
from .activations import Activation
from .errors import RFTheoryError, ShapeError
from .features import FeatureMap
from .seeding import RNGLike, generator, rng_or_seed
from .gram import GramSolution, solve_gram
from .projection import projection_loss
from .reconstruct import blas_threads_for

__all__ = [
    "Collision",
    "collision_types",
    "collision_assignments",
    "zero_threshold",
    "kink_radius",
    "max_region_radius",
    "CollisionLimit",
    "collision_limit",
    "CollisionSearch",
    "min_collision_limit",
    "limit_configuration",
    "RegionMinimum",
    "collision_region_minimum",
]

#: Columns of P⊥q whose norm is below this fraction of ‖q‖ are in the first-order span up to
#: rounding (ReLU: exactly, inside the kink radius) and are dropped from the second-order part.
SECOND_ORDER_DROP = 1e-8
#: L-BFGS-B options of the region minimisation: losses are O(1e-2..1) and scipy's ftol test is
#: relative to max(|f|, 1), so 1e-13 asks for ~12 digits of the smallest losses.
REGION_LBFGS = {"ftol": 1e-13, "gtol": 1e-11, "maxiter": 3000}
_STREAM = 2**40 + 160  # seed stream of the random starts (disjoint from data and V streams)


# ---------------------------------------------------------------------------------------------
# Patterns
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Collision:
    """An assignment of n̂ candidates to n training points with multiplicities m_i.

    Parameters
    ----------
    multiplicities : sequence of int
        m_i ≥ 0 per training point (length n); n̂ = Σ m_i.

    Examples
    --------
    >>> c = Collision((2, 1, 0))
    >>> c.n, c.n_hat, c.support, c.left_out, c.multiple, c.type
    (3, 3, (0, 1), (2,), (0,), (2, 1))
    >>> c.centres
    (0, 0, 1)
    """

    multiplicities: tuple[int, ...]

    def __post_init__(self) -> None:
        m = tuple(self.multiplicities)
        if not m or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0
                        for v in m):
            raise RFTheoryError(f"multiplicities must be non-negative integers, got {m!r}")
        if sum(m) < 1:
            raise RFTheoryError("a collision needs at least one candidate")
        object.__setattr__(self, "multiplicities", tuple(int(v) for v in m))

    @property
    def n(self) -> int:
        """Number of training points."""
        return len(self.multiplicities)

    @property
    def n_hat(self) -> int:
        """Number of candidates, Σ m_i."""
        return sum(self.multiplicities)

    @property
    def support(self) -> tuple[int, ...]:
        """Training points with at least one candidate."""
        return tuple(i for i, m in enumerate(self.multiplicities) if m >= 1)

    @property
    def left_out(self) -> tuple[int, ...]:
        """Training points with no candidate."""
        return tuple(i for i, m in enumerate(self.multiplicities) if m == 0)

    @property
    def multiple(self) -> tuple[int, ...]:
        """Training points with two or more candidates."""
        return tuple(i for i, m in enumerate(self.multiplicities) if m >= 2)

    @property
    def max_multiplicity(self) -> int:
        return max(self.multiplicities)

    @property
    def type(self) -> tuple[int, ...]:
        """The pattern up to relabelling: the non-zero multiplicities, largest first."""
        return tuple(sorted((m for m in self.multiplicities if m), reverse=True))

    @property
    def is_duplicate(self) -> bool:
        """True when some training point has two or more candidates."""
        return self.max_multiplicity >= 2

    @property
    def lost(self) -> int:
        """ℓ = Σ(m_i − 1) over the support = n̂ − |S| (= the points left out when n̂ = n)."""
        return self.n_hat - len(self.support)

    @property
    def centres(self) -> tuple[int, ...]:
        """Training point of each candidate, in candidate order (points in index order)."""
        return tuple(i for i, m in enumerate(self.multiplicities) for _ in range(m))

    def label(self) -> str:
        """Compact text of the type, e.g. ``"2+1+1"``."""
        return "+".join(str(m) for m in self.type)


def _partitions(total: int, largest: int) -> Iterator[tuple[int, ...]]:
    if total == 0:
        yield ()
        return
    for first in range(min(total, largest), 0, -1):
        for rest in _partitions(total - first, first):
            yield (first,) + rest


def collision_types(n: int, n_hat: int | None = None) -> list[tuple[int, ...]]:
    """Collision patterns up to relabelling: partitions of n̂ into ≤ n parts with a part ≥ 2.

    Parameters
    ----------
    n : int
        Training points.
    n_hat : int, optional
        Candidates (default n).

    Returns
    -------
    list of tuple
        Parts in decreasing order; the list ordered by the number of points left out
        (ℓ = n̂ − parts), then lexicographically from the largest part down.

    Examples
    --------
    >>> collision_types(4)
    [(2, 1, 1), (2, 2), (3, 1), (4,)]
    >>> len(collision_types(8)), len(collision_types(16))
    (21, 230)
    """
    n_hat = n if n_hat is None else n_hat
    for name, v in (("n", n), ("n_hat", n_hat)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise RFTheoryError(f"{name} must be a positive integer, got {v!r}")
    types = [t for t in _partitions(int(n_hat), int(n_hat)) if len(t) <= n and t[0] >= 2]
    return sorted(types, key=lambda t: (n_hat - len(t), t))


def collision_assignments(kind: Sequence[int], n: int) -> Iterator[Collision]:
    """All placements of a collision type on n labelled training points.

    Distinct multiset permutations of ``kind`` padded with zeros: n!/∏_v c_v! of them (c_v the
    number of parts equal to v, zeros included).

    Parameters
    ----------
    kind : sequence of int
        The collision type: multiplicities, largest first (e.g. ``(2, 1)``).
    n : int
        Training points.

    Yields
    ------
    Collision
        One placement: the multiplicity of each training point.

    Examples
    --------
    >>> [c.multiplicities for c in collision_assignments((2, 1), 3)]
    [(2, 1, 0), (2, 0, 1), (1, 2, 0), (1, 0, 2), (0, 2, 1), (0, 1, 2)]
    """
    kind = tuple(int(v) for v in kind)
    if len(kind) > n or any(v < 1 for v in kind):
        raise RFTheoryError(f"type {kind!r} does not fit {n} training points")
    values = sorted(set(kind) | {0}, reverse=True)
    counts = {v: kind.count(v) for v in values}
    counts[0] = n - len(kind)

    def place(prefix: list[int]) -> Iterator[tuple[int, ...]]:
        if len(prefix) == n:
            yield tuple(prefix)
            return
        for v in values:
            if counts[v]:
                counts[v] -= 1
                prefix.append(v)
                yield from place(prefix)
                prefix.pop()
                counts[v] += 1

    for m in place([]):
        yield Collision(m)


def zero_threshold(collision: Collision, d: int) -> int:
    """p*(m) = n̂ + ℓ(d − 2): the largest p at which the δ → 0 limit is generically 0.

    The count of the module Notes (exact for multiplicities ≤ 3 given generic V and data; for
    multiplicity ≥ 4 the count of curvilinear schemes).

    Parameters
    ----------
    collision : Collision
        Multiplicities per training point.
    d : int
        Input dimension.

    Returns
    -------
    int
        p*(m).

    Examples
    --------
    >>> zero_threshold(Collision((2, 1, 1, 0)), d=6), zero_threshold(Collision((2, 2, 0, 0)), d=6)
    (8, 12)
    """
    return collision.n_hat + collision.lost * (d - 2)


# ---------------------------------------------------------------------------------------------
# Geometry helpers
# ---------------------------------------------------------------------------------------------

def kink_radius(features: FeatureMap, X: Any) -> float:
    """Largest δ such that no pre-activation v_kᵀx̂ crosses a kink of φ for ‖x̂ − x‖ ≤ δ√d.

    Minimum over the rows x of X (shape (d,) or (n, d)), the features k and the kinks κ of
    |v_kᵀx − κ|/(‖v_k‖√d); ``inf`` for a smooth activation.

    Parameters
    ----------
    features : FeatureMap
        V and φ (its kinks).
    X : array_like
        The centres, shape (d,) or (n, d).

    Returns
    -------
    float
        The radius δ, in units of √d.
    """
    kinks = features.activation.kinks
    if not kinks:
        return math.inf
    X = np.asarray(to_host(X), dtype=np.float64)
    X = X[None, :] if X.ndim == 1 else X
    best = math.inf
    for blk in features.blocks(X):
        norms = np.linalg.norm(np.asarray(blk.V), axis=1)
        Z = np.asarray(blk.Z)
        for kappa in kinks:
            best = min(best, float(np.min(np.abs(Z - kappa) / norms)))
    return best / math.sqrt(features.d)


def max_region_radius(X: Any, collision: Collision) -> float:
    """Half the smallest distance (in units of √d) from a used centre to another ±x_j.

    Regions D_m(δ) with δ below this contain no other training point nor its negative (odd
    activations cannot tell x from −x), so they are pure collision regions.

    Parameters
    ----------
    X : array_like
        Training points, shape (n, d).
    collision : Collision
        Which training points are centres.

    Returns
    -------
    float
        The radius, in units of √d.
    """
    X = np.asarray(to_host(X), dtype=np.float64)
    if X.shape[0] != collision.n:
        raise ShapeError(f"X has {X.shape[0]} rows but the collision has n = {collision.n}")
    d = X.shape[1]
    best = math.inf
    for i in collision.support:
        for j in range(collision.n):
            if j != i:
                best = min(best, float(np.linalg.norm(X[i] - X[j])), float(np.linalg.norm(X[i] + X[j])))
        best = min(best, float(np.linalg.norm(2 * X[i])))
    return best / (2.0 * math.sqrt(d))


@functools.lru_cache(maxsize=32)
def _derivative_activation(activation: Activation) -> Activation:
    """φ′ as an activation, so that its ``derivative`` is φ″ (kink convention of the class)."""
    return Activation(f"({activation.name})'", activation.derivative_expr)


def _exp_map(x: np.ndarray, B: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Point of the √d-sphere at geodesic distance ‖w‖ from x along the tangent vector B w."""
    d = x.shape[0]
    v = B @ w
    t = float(np.linalg.norm(v))
    if t == 0.0:
        return x.copy()
    return math.cos(t / math.sqrt(d)) * x + math.sqrt(d) * math.sin(t / math.sqrt(d)) * v / t


# ---------------------------------------------------------------------------------------------
# The δ → 0 limit
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CollisionLimit:
    """The δ → 0 limit of min over D_m(δ) of the projection loss (see the module Notes).

    Attributes
    ----------
    collision : Collision
    loss : float
        L₀ = min_u ‖P⊥_{W(u)}θ‖²/‖θ‖² (an upper bound on the limit when ``exact`` is False).
    exact : bool
        True when every multiplicity is ≤ 3 (the limit spans are classified); False for
        multiplicity ≥ 4 (higher derivatives may lower the true limit).
    first_order_loss : float
        L₁ = ‖P⊥_{span{F_S, J_iB_i}}θ‖²/‖θ‖² — equal to ``loss`` when every m_i ≤ 2.
    lower_bound : float or None
        For max multiplicity 3: the residual onto span{F_S, J_iB_i, all second-order columns} (the
        second osculating spaces), ≤ the limit; equal to ``loss`` when every m_i ≤ 2; None for
        m ≥ 4.
    dimension : int
        Columns of the first-order space, |S| + (d − 1)·#{m_i ≥ 2}.
    threshold : int
        :func:`zero_threshold` of the collision.
    directions : dict
        Per multiple point i: ``"u"`` (unit first-order direction, in ambient coordinates, ⊥ x_i)
        and, for m_i ≥ 3, ``"s"`` (the second-order tangent term, ambient) and ``"alpha"`` (the
        weight of q(u) in θ's projection). Used to build starting configurations.
    gram : GramSolution
        Diagnostics of the first-order Gram solve.
    """

    collision: Collision
    loss: float
    exact: bool
    first_order_loss: float
    lower_bound: float | None
    dimension: int
    threshold: int
    directions: dict = field(repr=False)
    gram: GramSolution = field(repr=False)


def _check_inputs(features: FeatureMap, X: Any, theta: Any, collision: Collision):
    if not isinstance(features, FeatureMap):
        raise RFTheoryError(f"features must be a FeatureMap, got {type(features).__name__}")
    if not isinstance(collision, Collision):
        collision = Collision(tuple(collision))
    try:
        xp = array_namespace(theta)
    except TypeError as exc:
        raise ShapeError(f"theta must be an array: {exc}") from None
    if theta.ndim not in (1, 2) or theta.shape[0] != features.p:
        raise ShapeError(f"theta must have shape (p,) or (p, k) with p = {features.p}, "
                         f"got {tuple(theta.shape)}")
    Xh = np.asarray(to_host(X), dtype=np.float64)
    if Xh.ndim != 2 or Xh.shape[1] != features.d:
        raise ShapeError(f"X must have shape (n, {features.d}), got {Xh.shape}")
    if Xh.shape[0] != collision.n:
        raise ShapeError(f"X has {Xh.shape[0]} rows but the collision has n = {collision.n}")
    theta = xp.astype(theta, xp.float64)
    theta2 = theta if theta.ndim == 2 else theta[:, None]
    if float(xp.sum(theta2 * theta2)) == 0.0:
        raise ShapeError("theta is zero: the projection loss is undefined")
    return xp, Xh, theta2, collision


class _LimitColumns:
    """Per block of V: the base columns [F_S, J_iB_i] and the second-order columns Q_t.

    Q_t holds, for a point x_t of multiplicity ≥ 3 and a ≤ b, the columns
    φ″(Vx_t) ⊙ (VB)_a ⊙ (VB)_b − δ_ab (φ′(Vx_t) ⊙ Vx_t)/d, so that q_t(u) = Q_t w(u) with
    w_aa = u_a², w_ab = 2u_a u_b (a < b).
    """

    def __init__(self, features: FeatureMap, Xh: np.ndarray, collision: Collision, xp: Any,
                 dev: Any):
        self.features, self.xp = features, xp
        self.d = features.d
        self.support = collision.support
        self.multiple = collision.multiple
        self.second = tuple(i for i in collision.multiple if collision.multiplicities[i] >= 3)
        self.rows = {i: r for r, i in enumerate(self.support)}
        self.points = xp.asarray(Xh[list(self.support)], device=dev)
        self.bases = {i: tangent_basis(Xh[i]) for i in self.multiple}
        self.bases_x = {i: xp.asarray(B, device=dev) for i, B in self.bases.items()}
        self.n_base = len(self.support) + (self.d - 1) * len(self.multiple)
        iu = np.triu_indices(self.d - 1)
        self.triu = (iu[0], iu[1])
        self.n_q = len(iu[0])
        flat = iu[0] * (self.d - 1) + iu[1]
        self.triu_flat = xp.asarray(flat, device=dev)
        self.diag = xp.asarray((iu[0] == iu[1]).astype(np.float64), device=dev)
        self.second_act = (_derivative_activation(features.activation) if self.second else None)

    def blocks(self):
        return self.features.blocks(self.points, derivative=True)

    def base(self, blk) -> Any:
        xp = self.xp
        cols = [xp.permute_dims(blk.F, (1, 0))]
        for i in self.multiple:
            r = self.rows[i]
            cols.append(blk.D[r, :][:, None] * xp.matmul(blk.V, self.bases_x[i]))
        return xp.concat(cols, axis=1)

    def second_order(self, blk) -> list[Any]:
        xp = self.xp
        out = []
        m = blk.V.shape[0]
        for i in self.second:
            r = self.rows[i]
            z = blk.Z[r, :]
            VB = xp.matmul(blk.V, self.bases_x[i])  # (m, d−1)
            outer = xp.reshape(VB[:, :, None] * VB[:, None, :], (m, (self.d - 1) ** 2))
            quad = xp.take(outer, self.triu_flat, axis=1)
            h = self.second_act.derivative(z)
            jx = blk.D[r, :] * z / self.d
            out.append(h[:, None] * quad - jx[:, None] * self.diag[None, :])
        return out


def _weights(u: np.ndarray, triu: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """w(u) with q(u) = Q w(u): u_a² on the diagonal, 2 u_a u_b above it."""
    a, b = triu
    return np.where(a == b, 1.0, 2.0) * u[a] * u[b]


def _weight_jacobian(u: np.ndarray, triu) -> np.ndarray:
    """∂w/∂u, shape (n_q, d−1): ∂w_ab/∂u_c = κ_ab(δ_ac u_b + δ_bc u_a), κ = 1 (a = b) or 2."""
    a, b = triu
    kappa = np.where(a == b, 1.0, 2.0)
    Jw = np.zeros((len(a), u.shape[0]))
    rows = np.arange(len(a))
    np.add.at(Jw, (rows, a), kappa * u[b])
    np.add.at(Jw, (rows, b), kappa * u[a])
    return Jw


def _gain(us: list[np.ndarray], s: list[np.ndarray], T: list[list[np.ndarray]], triu,
          gradient: bool = False):
    """‖P_{span{Q̃_t w(u_t)}} r₁‖² = gᵀH⁺g with g_t = w_tᵀs_t, H_tq = w_tᵀT_tq w_q.

    Returns (gain, γ = H⁺g, [w_t], gradient or None). The gain is invariant under scaling of
    each u_t; its gradient in u_t is 2γ_t (∂w_t/∂u_t)ᵀ(s_t − Σ_q T_tq w_q γ_q).
    """
    ws = [_weights(u, triu) for u in us]
    K = len(ws)
    g = np.array([ws[t] @ s[t] for t in range(K)])
    H = np.array([[ws[t] @ T[t][q] @ ws[q] for q in range(K)] for t in range(K)])
    gamma = np.linalg.lstsq(H, g, rcond=1e-12)[0]
    value = float(g @ gamma)
    if not gradient:
        return value, gamma, ws, None
    grad = []
    for t in range(K):
        resid = s[t] - sum(T[t][q] @ ws[q] * gamma[q] for q in range(K))
        grad.append(2.0 * gamma[t] * (_weight_jacobian(us[t], triu).T @ resid))
    return value, gamma, ws, np.concatenate(grad)


def collision_limit(features: FeatureMap, X: Any, theta: Any, collision: Collision | Sequence[int],
                    *, starts: int = 32, rng: RNGLike = 0,
                    seed: int | None = None) -> CollisionLimit:
    """δ → 0 limit of min over D_m(δ) of the projection loss (closed form; exact optimisation
    over one tangent direction per triple).

    Parameters
    ----------
    features : FeatureMap
        V and φ.
    X : array, shape (n, d)
        Training points (on the √d-sphere).
    theta : array, shape (p,) or (p, k)
        Trained weights (k outputs: the loss sums over them).
    collision : Collision or sequence of int
        Multiplicities per training point.
    starts : int
        Starts of the optimisation over the direction(s) u_t of the triples (unused without
        triples): the leading eigenvectors of the quadratic form u ↦ q(u)ᵀr₁ plus random ones.
        The gain is a ratio of quartics with local maxima: at (3, 0, 0), d = 5, p = p* − 1 the
        12 starts (the former default) stopped at L = 2.1e-6 for every seed where 24 reach the
        true 0 (≤ 4e-19); the default keeps a margin above that.
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the random starts (SPEC 7, :func:`rftheory.seeding.generator`): an integer seed
        or a SeedSequence gives the function's own stream, a Generator is drawn from as it is.
    seed : int, optional
        The old name of an integer ``rng``.

    Returns
    -------
    CollisionLimit

    Notes
    -----
    Three passes over V, all streamed: (1) the Gram matrix of [F_S, J_iB_i, Q_t] and its product
    with θ; (2) the first-order residual r₁ = θ − [F_S, J_iB_i]β as a direct residual (accurate
    to rounding, not a Gram difference), together with Q̃_t = P⊥Q_t (= Q_t − C Γ) and the small
    matrices Q̃ᵀQ̃, Q̃ᵀr₁; (3) only with triples: the final residual r₁ − Σ_t Q̃_t w(u_t) γ_t and
    the osculating lower bound r₁ − Q̃ T⁺ Q̃ᵀr₁, both direct. The optimisation over u_t runs on the
    (d−1)d/2-dimensional reduced problem (a ratio of quartics in u, multi-start L-BFGS with
    finite-difference gradients); its result is an upper bound on the exact minimum (a missed
    better u only raises it), checked from below by ``lower_bound``.

    Accuracy: the residuals are direct, so ``first_order_loss`` and ``loss`` have relative
    accuracy ~κ·eps with κ the condition of the column Gram matrix (≲ 1e8 at the sizes tested),
    and absolute floor ~1e-30 when θ lies in the span. Second-order columns within
    :data:`SECOND_ORDER_DROP` of the first-order span are dropped (ReLU: all of them).

    Examples
    --------
    >>> from rftheory.features import RandomFeatures, train_min_norm
    >>> from rftheory.data import sphere_points, gaussian_labels
    >>> X, Y = sphere_points(3, 5, 0), gaussian_labels(3, 0)
    >>> f = RandomFeatures("tanh", 5, 40, seed=1)
    >>> theta = train_min_norm(f, X, Y).theta
    >>> lim = collision_limit(f, X, theta, (2, 1, 0))
    >>> lim.dimension, lim.threshold, 0.0 < lim.loss < 1.0, lim.loss == lim.first_order_loss
    (6, 6, True, True)
    >>> tri = collision_limit(f, X, theta, (3, 0, 0))
    >>> tri.exact, tri.lower_bound <= tri.loss <= tri.first_order_loss
    (True, True)
    """
    xp, Xh, theta2, collision = _check_inputs(features, X, theta, collision)
    dev = array_device(theta2)
    if collision.max_multiplicity >= 3 and theta2.shape[1] != 1:
        raise RFTheoryError("collisions of multiplicity >= 3 are implemented for k = 1 output")
    cols = _LimitColumns(features, Xh, collision, xp, dev)
    nb, nq, K = cols.n_base, cols.n_q, len(cols.second)
    N = nb + K * nq
    k = theta2.shape[1]
    # Pass 1: Gram of all columns and their products with θ.
    G = xp.zeros((N, N), dtype=xp.float64, device=dev)
    c = xp.zeros((N, k), dtype=xp.float64, device=dev)
    theta_sq = float(xp.sum(theta2 * theta2))
    for blk in cols.blocks():
        C = xp.concat([cols.base(blk)] + cols.second_order(blk), axis=1)
        G = G + xp.matmul(xp.permute_dims(C, (1, 0)), C)
        c = c + xp.matmul(xp.permute_dims(C, (1, 0)), theta2[blk.rows, :])
    Gh, ch = np.asarray(to_host(G)), np.asarray(to_host(c))
    base = slice(0, nb)
    solved = solve_gram(Gh[base, base], np.concatenate([ch[base], Gh[base, nb:]], axis=1))
    beta, Gamma = solved.solution[:, :k], solved.solution[:, k:]
    beta_x, Gamma_x = xp.asarray(beta, device=dev), xp.asarray(Gamma, device=dev)
    # Pass 2: r₁ (direct) and the reduced second-order quantities.
    r1_sq = 0.0
    T = np.zeros((K * nq, K * nq))
    s = np.zeros((K * nq, k))
    for blk in cols.blocks():
        Cb = cols.base(blk)
        r1 = theta2[blk.rows, :] - xp.matmul(Cb, beta_x)
        r1_sq += float(xp.sum(r1 * r1))
        if K:
            Qt = xp.concat(cols.second_order(blk), axis=1) - xp.matmul(Cb, Gamma_x)
            T += np.asarray(to_host(xp.matmul(xp.permute_dims(Qt, (1, 0)), Qt)))
            s += np.asarray(to_host(xp.matmul(xp.permute_dims(Qt, (1, 0)), r1)))
    first = min(r1_sq / theta_sq, 1.0)
    dimension = nb
    directions: dict = {}
    loss, lower = first, first
    gammas, ws, keep_cols = None, None, None
    if K:
        # Columns of Q̃ that are rounding noise (in the first-order span) are dropped.
        qnorm = np.diag(Gh)[nb:]
        keep_cols = np.diag(T) > (SECOND_ORDER_DROP ** 2) * np.maximum(qnorm, 1e-300)
        sv = np.where(keep_cols, s[:, 0], 0.0)
        Tm = np.where(keep_cols[:, None] & keep_cols[None, :], T, 0.0)
        blocks = [slice(t * nq, (t + 1) * nq) for t in range(K)]
        s_t = [sv[b] for b in blocks]
        T_tq = [[Tm[b1, b2] for b2 in blocks] for b1 in blocks]
        us, gain = _best_directions(s_t, T_tq, cols.triu, cols.d, starts, rng_or_seed(rng, seed))
        if gain > 0.0:
            _, gammas, ws, _ = _gain(us, s_t, T_tq, cols.triu)
        lower_coef = np.linalg.lstsq(Tm, sv, rcond=1e-12)[0]
        # Pass 3: the final residual and the osculating lower bound, both direct.
        fin_sq, low_sq = 0.0, 0.0
        Wg = (np.concatenate([ws[t] * gammas[t] for t in range(K)]) if ws is not None
              else np.zeros(K * nq))
        Wg_x = xp.asarray(Wg, device=dev)
        low_x = xp.asarray(np.where(keep_cols, lower_coef, 0.0), device=dev)
        for blk in cols.blocks():
            Cb = cols.base(blk)
            r1 = theta2[blk.rows, 0] - xp.matmul(Cb, beta_x[:, 0])
            Qt = xp.concat(cols.second_order(blk), axis=1) - xp.matmul(Cb, Gamma_x)
            rf = r1 - xp.matmul(Qt, Wg_x)
            rl = r1 - xp.matmul(Qt, low_x)
            fin_sq += float(xp.sum(rf * rf))
            low_sq += float(xp.sum(rl * rl))
        loss = min(fin_sq / theta_sq, first)
        lower = min(low_sq / theta_sq, loss)
        # Coefficients of the original columns: β′ = β − Γ W γ, α_t = γ_t.
        beta = beta - (Gamma @ Wg)[:, None]
        for t, i in enumerate(cols.second):
            directions[i] = {"u_reduced": us[t] / np.linalg.norm(us[t]),
                             "alpha": 0.0 if gammas is None else float(gammas[t])}
    # Directions from the coefficient blocks of the base columns.
    ns = len(cols.support)
    for j, i in enumerate(cols.multiple):
        B = cols.bases[i]
        cblk = beta[ns + j * (cols.d - 1): ns + (j + 1) * (cols.d - 1), 0]
        entry = directions.setdefault(i, {})
        u_red = entry.pop("u_reduced", None)
        alpha = entry.get("alpha", 0.0)
        if u_red is not None and alpha != 0.0:
            # Curvilinear triple: velocity u, acceleration s with α(JBs + q(u)) = JBc + αq(u).
            u = B @ u_red
            entry["u"] = u / np.linalg.norm(u)
            entry["s"] = B @ cblk / alpha
        else:  # first order only (pairs; triples whose second-order part adds nothing)
            norm = float(np.linalg.norm(cblk))
            entry["u"] = B @ cblk / norm if norm > 0 else B[:, 0]
    exact = collision.max_multiplicity <= 3
    return CollisionLimit(collision, float(loss), exact, float(first),
                          float(lower) if exact else None, dimension,
                          zero_threshold(collision, features.d), directions, solved)


def _best_directions(s_t, T_tq, triu, d, starts, seed) -> tuple[list[np.ndarray], float]:
    """Maximise the second-order gain over one unit direction per triple (multi-start)."""
    K = len(s_t)
    dm = d - 1
    if not any(np.any(v) for v in s_t):
        return [np.eye(dm)[0] for _ in range(K)], 0.0
    rng = generator(seed, _STREAM, K)
    a, b = triu

    def sym(v):  # the quadratic form u ↦ w(u)ᵀv as a symmetric matrix
        M = np.zeros((dm, dm))
        M[a, b] = v
        return M + M.T - np.diag(np.diag(M))

    cand: list[list[np.ndarray]] = []
    eig = [np.linalg.eigh(sym(v))[1] for v in s_t]
    for col in (0, dm - 1):  # extreme eigenvectors of each triple's form
        cand.append([e[:, col] for e in eig])
    while len(cand) < max(starts, 2):
        cand.append([rng.standard_normal(dm) for _ in range(K)])

    def neg(z):
        us = [z[t * dm:(t + 1) * dm] for t in range(K)]
        if any(np.linalg.norm(u) < 1e-150 for u in us):
            return 0.0, np.zeros_like(z)
        value, _, _, grad = _gain(us, s_t, T_tq, triu, gradient=True)
        return -value, -grad

    best = (0.0, cand[0])
    for c0 in cand:
        z0 = np.concatenate([u / np.linalg.norm(u) for u in c0])
        # One BLAS thread: scipy's L-BFGS-B calls BLAS on vectors of a few entries, and waking
        # a second thread for each costs ~6x on a shared 2-core machine.
        with threadpool_limits(limits=1, user_api="blas"):
            out = scipy.optimize.minimize(neg, z0, jac=True, method="L-BFGS-B",
                                          options={"ftol": 1e-15, "gtol": 1e-13, "maxiter": 500})
        val = -float(out.fun)
        if val > best[0]:
            us = [out.x[t * dm:(t + 1) * dm] for t in range(K)]
            best = (val, [u / np.linalg.norm(u) for u in us])
    return best[1], best[0]


@dataclass(frozen=True)
class CollisionSearch:
    """Result of :func:`min_collision_limit`: the smallest δ → 0 limit over the placements of a type.

    Attributes
    ----------
    kind : tuple of int
        The collision type.
    best : CollisionLimit
        The exact limit (:func:`collision_limit`) of the best placement found.
    screened : int
        Placements screened (first-order value and lower bound for each).
    refined : int
        Placements whose exact limit was computed.
    certified : bool
        True when every placement not refined has a screening lower bound above ``best.loss``
        (so ``best`` is the minimum over all placements, up to the accuracy of the screening and
        of the direction optimisation); False when ``max_refine`` stopped the search first.
    table : list of tuple
        (multiplicities, first-order value, lower bound) of the ``keep`` placements with the
        smallest lower bounds (screening values, Gram accuracy).
    """

    kind: tuple[int, ...]
    best: CollisionLimit
    screened: int
    refined: int
    certified: bool
    table: list = field(repr=False)


#: Placements screened per batched solve (memory: batch·m² doubles for m columns).
SCREEN_BATCH = 2048
#: Relative ridge of the batched screening solves (columns scaled to unit norm): keeps the
#: Cholesky factorisation defined when p is below the span's dimension (the value is then 0).
SCREEN_RIDGE = 1e-13
#: Absolute accuracy assumed of screening values (in units of L) by the branch and bound, and
#: the value below which a limit counts as 0 (nothing can beat it).
SCREEN_MARGIN = 1e-9


def _screen(features: FeatureMap, Xh: np.ndarray, theta2: Any, xp: Any, dev: Any,
            collisions: list[Collision], second: bool) -> np.ndarray:
    """(first-order value, lower bound) of every collision, from one pass over V.

    All columns [φ(x_i), J_iB_i, (Q_i)] of all n points are gathered once, scaled to unit norm,
    and their Gram matrix Ĝ and products b̂ = Cᵀθ formed. A collision's value is then the Gram
    difference ‖θ‖² − b_Sᵀ(Ĝ_SS + λI)⁻¹b_S on its columns S, solved for all placements of the
    same size at once (batched Cholesky, ridge λ = :data:`SCREEN_RIDGE`). Accuracy ~κ(Ĝ_SS)·eps
    relative to ‖θ‖² (≲ 1e-10 at the sizes used) — enough to rank placements; the values that
    are reported come from :func:`collision_limit` (direct residuals).
    """
    n = Xh.shape[0]
    every = Collision((3,) * n if second else (2,) * n)
    cols = _LimitColumns(features, Xh, every, xp, dev)
    N = cols.n_base + (n * cols.n_q if second else 0)
    G = xp.zeros((N, N), dtype=xp.float64, device=dev)
    c = xp.zeros((N,), dtype=xp.float64, device=dev)
    theta1 = theta2[:, 0] if theta2.shape[1] == 1 else None
    if theta1 is None:
        raise RFTheoryError("screening is implemented for k = 1 output")
    for blk in cols.blocks():
        C = xp.concat([cols.base(blk)] + (cols.second_order(blk) if second else []), axis=1)
        G = G + xp.matmul(xp.permute_dims(C, (1, 0)), C)
        c = c + xp.matmul(xp.permute_dims(C, (1, 0)), theta1[blk.rows])
    G, c = np.asarray(to_host(G)), np.asarray(to_host(c))
    theta_sq = float(xp.sum(theta1 * theta1))
    scale = np.sqrt(np.maximum(np.diag(G), 1e-300))
    Gs = G / scale[:, None] / scale[None, :]
    cs = c / scale
    dm = features.d - 1

    def columns(col: Collision, with_q: bool) -> list[int]:
        idx = list(col.support)
        for i in col.multiple:
            idx += list(range(n + i * dm, n + (i + 1) * dm))
        if with_q:
            idx += [cols.n_base + i * cols.n_q + j for i in col.multiple
                    if col.multiplicities[i] >= 3 for j in range(cols.n_q)]
        return idx

    def values(index_lists: list[list[int]]) -> np.ndarray:
        out = np.empty(len(index_lists))
        groups: dict[int, list[int]] = {}
        for r, idx in enumerate(index_lists):
            groups.setdefault(len(idx), []).append(r)
        for m, rows in groups.items():
            for b0 in range(0, len(rows), SCREEN_BATCH):
                part = rows[b0:b0 + SCREEN_BATCH]
                I = np.array([index_lists[r] for r in part])
                A = Gs[I[:, :, None], I[:, None, :]] + SCREEN_RIDGE * np.eye(m)
                b = cs[I]
                L = np.linalg.cholesky(A)
                y = np.linalg.solve(L, b[:, :, None])[:, :, 0]
                out[part] = theta_sq - np.sum(y * y, axis=1)
        return np.clip(out / theta_sq, 0.0, 1.0)

    with threadpool_limits(limits=1, user_api="blas"):  # many tiny factorisations
        first = values([columns(col, False) for col in collisions])
        low = values([columns(col, True) for col in collisions]) if second else first.copy()
    return np.stack([first, np.minimum(low, first)], axis=1)


def min_collision_limit(features: FeatureMap, X: Any, theta: Any, kind: Sequence[int], *,
                        max_refine: int = 16, starts: int = 32, rng: RNGLike = 0,
                        keep: int = 10, seed: int | None = None) -> CollisionSearch:
    """The smallest δ → 0 limit over every placement of a collision type on the training points.

    Parameters
    ----------
    features : FeatureMap
        V and φ.
    X : array, shape (n, d)
        Training points.
    theta : array, shape (p,) or (p, k)
        Trained weights.
    kind : sequence of int
        The type (e.g. ``(2, 1, 1)``); placements are :func:`collision_assignments`. A type with
        no part ≥ 2, such as (1,)·(n − 1), gives the baseline of candidates at distinct training
        points with some left out.
    max_refine : int
        Most placements whose exact limit is computed.
    starts, rng, seed
        Passed to :func:`collision_limit`.
    keep : int
        Rows of the screening table kept in the result.

    Returns
    -------
    CollisionSearch

    Notes
    -----
    Branch and bound: one pass over V screens every placement (:func:`_screen`: first-order
    value, and for multiplicity 3 the osculating lower bound; both Gram-based, batched, absolute
    accuracy assumed :data:`SCREEN_MARGIN`). Placements are then refined with
    :func:`collision_limit` (direct residuals) in increasing order of their lower bound until the
    next lower bound exceeds the best exact value by the margin, or the best is 0 (≤ margin).
    With pairs only, lower bound = value, so the first refinement settles it. For multiplicity
    ≥ 4 the values are upper bounds (no lower bound is known): placements are ranked by the
    first-order value and only ``max_refine`` are refined, ``certified`` is False.
    """
    kind = tuple(int(v) for v in kind)
    n = int(np.shape(to_host(X))[0])
    if len(kind) > n:
        raise RFTheoryError(f"type {kind!r} has more parts than the {n} training points")
    xp, Xh, theta2, _ = _check_inputs(features, X, theta, Collision(kind + (0,) * (n - len(kind))))
    dev = array_device(theta2)
    placements = list(collision_assignments(kind, n))
    mmax = max(kind)
    scores = _screen(features, Xh, theta2, xp, dev, placements, second=mmax == 3)
    order = np.argsort(scores[:, 1], kind="stable")
    best, refined, certified = None, 0, True
    for r in order:
        if best is not None and mmax <= 3 and (best.loss <= SCREEN_MARGIN
                                               or scores[r, 1] > best.loss + SCREEN_MARGIN):
            break
        if refined >= max_refine:
            certified = False
            break
        lim = collision_limit(features, Xh, theta, placements[r], starts=starts,
                              rng=rng_or_seed(rng, seed))
        refined += 1
        if best is None or lim.loss < best.loss:
            best = lim
    if mmax >= 4:
        certified = False
    table = [(placements[r].multiplicities, float(scores[r, 0]), float(scores[r, 1]))
             for r in order[:keep]]
    return CollisionSearch(tuple(kind), best, len(placements), refined, certified, table)


def limit_configuration(X: Any, limit: CollisionLimit, angle: float) -> np.ndarray:
    """Candidates at scale ``angle`` (radians) realising the limit span of ``limit``.

    Singles sit at their training point; a pair at exp_x(±angle·√d·u); a triple (or more) on the
    curve exp_x(t u + t² s/2) at t ∈ {−τ, 0, τ} (further candidates at t = ±τ/2, ±τ/3, …), with
    τ chosen so that every point stays within ``angle`` of its centre. These are the starting
    points of :func:`collision_region_minimum` from the limit.

    Parameters
    ----------
    X : array_like
        Training points, shape (n, d).
    limit : CollisionLimit
        A result of :func:`collision_limit`.
    angle : float
        The scale, in radians.

    Returns
    -------
    numpy.ndarray, shape (n̂, d)
        The candidates.
    """
    Xh = np.asarray(to_host(X), dtype=np.float64)
    col = limit.collision
    d = Xh.shape[1]
    sd = math.sqrt(d)
    out = []
    for i, m in enumerate(col.multiplicities):
        if m == 0:
            continue
        x = Xh[i]
        if m == 1:
            out.append(x.copy())
            continue
        eye = np.eye(d)  # ambient tangent vectors: use the identity as "basis"
        u = limit.directions[i]["u"]
        s = limit.directions[i].get("s", np.zeros(d))
        ts = [-1.0, 1.0] if m == 2 else [-1.0, 0.0, 1.0] + [
            sgn / q for q in range(2, m) for sgn in (1.0, -1.0)][: m - 3]
        # Largest τ with ‖τu + τ²s/2‖ ≤ angle·√d (u is unit).
        tau = angle * sd
        for _ in range(60):
            if max(np.linalg.norm(t * tau * u + 0.5 * (t * tau) ** 2 * s) for t in ts) <= angle * sd:
                break
            tau *= 0.7
        for t in ts:
            w = t * tau * u + 0.5 * (t * tau) ** 2 * s
            w = w - (w @ x) * x / d  # tangent at x
            out.append(_exp_map(x, eye, w))
    return np.array(out)


# ---------------------------------------------------------------------------------------------
# The region minimum
# ---------------------------------------------------------------------------------------------

class _Caps:
    """Geodesic coordinates of candidates in caps of angle α around their centres.

    Candidate j is √d(cos a_j e_j + sin a_j B_j û_j), e_j = c_j/√d, 0 ≤ a_j ≤ α (box bounds),
    û_j = u_j/‖u_j‖ with u_j ∈ R^{d−1} free. ‖x̂_j − c_j‖ = 2√d sin(a_j/2), so α = 2 arcsin(δ/2)
    is the cap of D(δ).
    """

    def __init__(self, C: np.ndarray):
        self.m, self.d = C.shape
        self.sd = math.sqrt(self.d)
        self.E = C / np.linalg.norm(C, axis=1, keepdims=True)
        self.B = np.stack([tangent_basis(c) for c in C])  # (m, d, d−1)

    def unpack(self, z: np.ndarray):
        a = z[: self.m]
        U = z[self.m:].reshape(self.m, self.d - 1)
        nu = np.linalg.norm(U, axis=1, keepdims=True)
        nu = np.where(nu > 0, nu, 1.0)
        Ut = U / nu
        W = np.einsum("mij,mj->mi", self.B, Ut)
        X = self.sd * (np.cos(a)[:, None] * self.E + np.sin(a)[:, None] * W)
        return a, Ut, nu, W, X

    def points(self, z: np.ndarray) -> np.ndarray:
        return self.unpack(z)[4]

    def coordinates(self, X: np.ndarray) -> np.ndarray:
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        cos = np.sum(Xn * self.E, axis=1)
        T = np.einsum("mij,mi->mj", self.B, Xn - cos[:, None] * self.E)
        # atan2, not arccos: arccos loses half the digits of small angles (the second-order
        # structure of a collapsed triple lives at angle², ~1e-8 for δ ~ 1e-4).
        a = np.arctan2(np.linalg.norm(T, axis=1), cos)
        small = np.linalg.norm(T, axis=1) <= 1e-300
        T[small] = 1.0
        return np.concatenate([a, T.ravel()])

    def chain(self, z: np.ndarray, g: np.ndarray) -> np.ndarray:
        a, Ut, nu, W, _ = self.unpack(z)
        ga = self.sd * np.sum(g * (-np.sin(a)[:, None] * self.E + np.cos(a)[:, None] * W), axis=1)
        gt = np.einsum("mij,mi->mj", self.B, g)
        gu = self.sd * np.sin(a)[:, None] * (gt - np.sum(gt * Ut, axis=1, keepdims=True) * Ut) / nu
        return np.concatenate([ga, gu.ravel()])


@dataclass(frozen=True)
class RegionMinimum:
    """Result of :func:`collision_region_minimum`.

    Attributes
    ----------
    delta : float
    loss : float
        Smallest loss found (a feasible configuration: an upper bound on the minimum).
    X_hat : numpy.ndarray, shape (n̂, d)
        Its candidates (in the order of :attr:`Collision.centres`).
    losses, iterations : list
        Per start.
    start_kinds : list of str
        ``"limit"``, ``"warm"`` or ``"random"`` per start.
    max_distance : float
        Largest ‖x̂_j − x_{c(j)}‖/√d of the best configuration (≤ δ up to rounding).
    min_separation : float
        Smallest ‖x̂_j − x̂_k‖/√d between candidates sharing a centre (None without collision):
        small values mean the minimiser is collapsed onto a limit span.
    hit_maxiter : int
        Starts that stopped at the iteration limit.
    """

    delta: float
    loss: float
    X_hat: np.ndarray
    losses: list
    iterations: list
    start_kinds: list
    max_distance: float
    min_separation: float | None
    hit_maxiter: int


def collision_region_minimum(features: FeatureMap, X: Any, theta: Any,
                             collision: Collision | Sequence[int], delta: float, *,
                             random_starts: int = 2, rng: RNGLike = 0,
                             warm: Sequence[np.ndarray] = (),
                             limit: CollisionLimit | None = None,
                             options: dict | None = None,
                             seed: int | None = None) -> RegionMinimum:
    """Minimise L(X̂) over D_m(δ) by multi-start L-BFGS-B on geodesic cap coordinates.

    Parameters
    ----------
    features : FeatureMap
        V and φ.
    X : array, shape (n, d)
        Training points (the centres).
    theta : array, shape (p,) or (p, k)
        Trained weights.
    collision : Collision or sequence of int
        Multiplicities per training point.
    delta : float
        Radius in units of √d, 0 < δ < 2.
    random_starts : int
        Random configurations (cap angles uniform in [α/2, α], directions uniform).
    rng : int, numpy.random.SeedSequence or numpy.random.Generator, default 0
        Randomness of the random starts (SPEC 7, :func:`rftheory.seeding.generator`): an integer seed
        or a SeedSequence gives the function's own stream, a Generator is drawn from as it is.
    seed : int, optional
        The old name of an integer ``rng``.
    warm : sequence of arrays (n̂, d)
        Extra starts (e.g. minimisers for a smaller δ: the regions are nested); those outside
        D_m(δ) are skipped.
    limit : CollisionLimit, optional
        If given, :func:`limit_configuration` at the cap's full angle is a start, and so is the
        same at half of it.
    options : dict, optional
        L-BFGS-B options (default :data:`REGION_LBFGS`).

    Returns
    -------
    RegionMinimum

    Notes
    -----
    Objective and gradient: :func:`rftheory.projection.projection_loss`, chained through the cap
    coordinates (box constraints only, handled exactly by L-BFGS-B). Non-convex: more starts can
    only lower the result. Candidates that collapse make the Gram matrix singular; the loss stays
    exact there (pseudo-inverse), so collapsed configurations realise the limit spans only
    approximately — the limit itself is :func:`collision_limit`.
    """
    xp, Xh, theta2, collision = _check_inputs(features, X, theta, collision)
    if not (0.0 < delta < 2.0):
        raise RFTheoryError(f"delta must lie in (0, 2), got {delta!r}")
    theta_in = theta2 if theta.ndim == 2 else theta2[:, 0]
    centres = Xh[list(collision.centres)]
    caps = _Caps(centres)
    m, d = centres.shape
    alpha = 2.0 * math.asin(delta / 2.0)
    rng = generator(rng_or_seed(rng, seed), _STREAM, int(round(delta * 1e9)),
                    *collision.multiplicities)
    opts = dict(REGION_LBFGS if options is None else options)

    def evaluate(Xc: np.ndarray, gradient: bool):
        return projection_loss(features, xp.asarray(Xc), theta_in, gradient=gradient)

    def fun(z):
        res = evaluate(caps.points(z), True)
        return res.loss, caps.chain(z, np.asarray(to_host(res.gradient)))

    starts: list[tuple[str, np.ndarray]] = []
    if limit is not None:
        for frac in (1.0, 0.5):
            Xl = limit_configuration(Xh, limit, alpha * frac * 0.999)
            starts.append(("limit", caps.coordinates(Xl)))
    for Xw in warm:
        Xw = np.asarray(Xw, dtype=np.float64)
        if Xw.shape == centres.shape and np.all(
                np.linalg.norm(Xw - centres, axis=1) <= delta * math.sqrt(d) * (1 + 1e-9)):
            z = caps.coordinates(Xw)
            z[:m] = np.minimum(z[:m], alpha)
            starts.append(("warm", z))
    for _ in range(random_starts):
        starts.append(("random", np.concatenate([alpha * rng.uniform(0.5, 1.0, m),
                                                 rng.standard_normal(m * (d - 1))])))
    if not starts:
        raise RFTheoryError("no starting point: give random_starts >= 1, warm starts or a limit")
    bounds = [(0.0, alpha)] * m + [(None, None)] * (m * (d - 1))
    losses, iterations, best, hit = [], [], (math.inf, None), 0
    for _, z0 in starts:
        z0 = z0.copy()
        z0[:m] = np.clip(z0[:m], 0.0, alpha)
        with blas_threads_for(xp, m, d):
            out = scipy.optimize.minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                                          options=opts)
        Xc = caps.points(out.x)
        loss = evaluate(Xc, False).loss
        losses.append(float(loss))
        iterations.append(int(out.nit))
        hit += int(out.nit >= opts.get("maxiter", 15000))
        if loss < best[0]:
            best = (loss, Xc)
    X_hat = best[1]
    seps = [float(np.linalg.norm(X_hat[j] - X_hat[q])) / math.sqrt(d)
            for j in range(m) for q in range(j + 1, m)
            if collision.centres[j] == collision.centres[q]]
    return RegionMinimum(
        float(delta), float(best[0]), X_hat, losses, iterations, [k for k, _ in starts],
        float(np.max(np.linalg.norm(X_hat - centres, axis=1)) / math.sqrt(d)),
        min(seps) if seps else None, hit)
