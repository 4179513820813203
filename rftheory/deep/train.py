"""Small-step full-batch gradient descent for a deep network, and the span check.

The network f(x) = ⟨head, body(x)⟩ is trained on the mean squared error
L = (1/n) Σ_i (f(x_i) − y_i)² (±1 labels in the claim) by full-batch GD with step
η = ``fraction``·2/λ_max, λ_max the largest curvature of L in all parameters,
taken as its Gauss–Newton part (2/n)·λ_max(JJᵀ) (J the n×P Jacobian of the outputs, JJᵀ
from n VJPs: exact at interpolation, where the residual term vanishes) and re-estimated every
``chunk`` steps (the curvature changes as the network trains). A small
fraction keeps the run near gradient flow: no catapult, and for wide bodies little feature drift.
Once the loss is below ``newton_below`` the run ends with Gauss–Newton steps
w ← w − Jᵀ(JJᵀ)⁻¹(f − y): on the network linearised at w, that is where gradient flow (and GD
at any stable step) converges, reached in one step instead of hundreds.

θ = head − head(0) is a sum of per-step combinations of body_t(x_i); it lies in the span of the
final features body(X) only as far as the body did not move. :func:`check_span` measures this —
the projection loss at the true X, the least loss an attack can reach — and refuses with
:class:`ThetaNotInSpanError` above a tolerance.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidValueError, RFTheoryError, ShapeError
from .backend import float64, require_jax
from .projection import span_loss

__all__ = ["DeepTrained", "ThetaNotInSpanError", "train_gd", "check_span", "SPAN_TOL"]

#: Default span tolerance: the projection loss at the true X above which an attack is refused.
#: Measured (paper_notes/deep_law.md): successful reconstructions (ρ < 0.1) had span losses
#: 2e-4 – 3e-2; above 0.05 the loss an attack can reach at the truth is as large as at the
#: spurious minima found below dn (1e-3 – 4e-2).
SPAN_TOL = 0.05


class ThetaNotInSpanError(InvalidValueError):
    """θ = head − head(0) is not (nearly) in the span of the trained features at the true X."""


@dataclass(frozen=True, eq=False)
class DeepTrained:
    """A trained deep network and what the attack needs.

    Attributes
    ----------
    net : object
        The architecture (e.g. :class:`~rftheory.deep.resnet.ResNet`).
    params0, params : dict
        Initial and trained parameters (numpy float64 pytrees).
    theta : numpy.ndarray, shape (p_L,)
        head − head(0).
    features : numpy.ndarray
        body(X) at the trained body, shape (n, p^(L)).
    steps : int
        GD steps taken.
    train_loss : float
        Final mean squared error.
    label_fit : float
        max_i |f(x_i) − y_i| at the end.
    step_size : float
        The last step η used; ``lambda_max`` the last curvature estimate, η = fraction·2/λ_max.
    lambda_max, fraction : float
    feature_change : float
        ‖body_T(X) − body_0(X)‖_F / ‖body_0(X)‖_F, how far the features drifted.
    span_residual : float
        ‖P⊥_{body(X)}θ‖²/‖θ‖² (:func:`~rftheory.deep.projection.span_loss`).
    stop_reason : str
        ``"tol"`` (loss below tolerance) or ``"max_steps"``.
    seconds : float
        Wall time of the training.
    newton_steps : int
        Gauss–Newton steps that ended the run (0: GD to the end).
    """

    net: Any
    params0: Any
    params: Any
    theta: np.ndarray
    features: np.ndarray
    steps: int
    train_loss: float
    label_fit: float
    step_size: float
    lambda_max: float
    fraction: float
    feature_change: float
    span_residual: float
    stop_reason: str
    seconds: float
    newton_steps: int = 0


def train_gd(net: Any, X: Any, y: Any, *, rng: Any, fraction: float = 0.1, tol: float = 1e-7,
             max_steps: int = 50000, chunk: int = 500,
             newton_below: float | None = 1e-3) -> DeepTrained:
    """Train ``net`` by full-batch GD on the mean squared error with a curvature-derived step.

    Parameters
    ----------
    net : ResNet
        Anything with ``init(rng)``, ``body(params, X)``, ``apply(params, X)`` and ``p_last``.
    X : array, shape (n, d)
        Training inputs.
    y : array, shape (n,)
        Targets (±1 in the claim).
    rng : int, numpy.random.SeedSequence, numpy.random.Generator or None
        Seed of the initialisation (SPEC 7).
    fraction : float
        η = fraction·2/λ_max, in (0, 1) (GD on a quadratic is stable below 1).
    tol : float
        Stop once L < tol (the official code: 1e-7).
    max_steps : int
        Most GD steps.
    chunk : int
        Steps between curvature estimates (one jitted loop each).
    newton_below : float or None
        Below this loss, finish with Gauss–Newton steps (each: the n output gradients and an n×n
        solve); ``None``: GD to the end. A step that does not lower the loss hands the run back
        to GD.

    Returns
    -------
    DeepTrained

    Notes
    -----
    Runs in float64. λ_max is the Gauss–Newton curvature (2/n)·λ_max(JJᵀ), computed exactly (an
    n×n eigenvalue problem); the Hessian adds (2/n)Σ_i r_i∇²f(x_i), which vanishes as the
    residuals r_i do, so early on the true top eigenvalue may differ — a fraction ≤ 0.5 leaves
    room, and if the loss grows over a chunk the step is halved and the chunk repeated from its
    start.

    The Gauss–Newton finish: GD (and gradient flow) on the network linearised at w converges to
    w − Jᵀ(JJᵀ)⁻¹r, the least change that fits the labels, whatever the step; one such step is
    that limit, and the nonlinear remainder is second order in the change left, small once the
    loss is. Measured against GD to the end at the claim's sizes (n = 2, 4; ResNet and ViT;
    sphere, digits, patches; ``benchmarks/bench_deep_fraction.py --finish``): from L = 1e-3 one
    or two steps reach L < 1e-7 (FULL: one in 177 of 216 trainings, two in the rest); θ moves
    by a relative 2e-4 – 9e-4 (GD's own stop at L = 1e-7 leaves a residual of that order), the
    span residual by ≤ 1 %, and 56–65 % of the GD steps are saved (40–93 % over FULL's 216).

    Examples
    --------
    >>> import numpy as np
    >>> from rftheory.data import sphere_points
    >>> from rftheory.deep import ResNet, train_gd
    >>> X, y = sphere_points(2, 64, seed=0), np.array([1.0, -1.0])
    >>> t = train_gd(ResNet(8, (1, 8, 8)), X, y, rng=0)
    >>> t.stop_reason, bool(t.train_loss < 1e-7), t.theta.shape
    ('tol', True, (392,))
    """
    jax = require_jax()
    jnp = jax.numpy
    from jax.flatten_util import ravel_pytree

    if not 0.0 < fraction < 1.0:
        raise RFTheoryError(f"fraction must be in (0, 1), got {fraction!r}")
    if newton_below is not None and not newton_below > 0:
        raise InvalidValueError(f"newton_below must be positive or None, got {newton_below!r}")
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ShapeError(f"need X (n, d) and y (n,), got {X.shape} and {y.shape}")
    t0 = time.perf_counter()
    params0 = net.init(rng)
    fns = _train_fns(net, int(chunk))
    with float64():
        w0, unravel = ravel_pytree(jax.tree_util.tree_map(jnp.asarray, params0))
        Xj, yj = jnp.asarray(X), jnp.asarray(y)
        n = X.shape[0]
        eye = jnp.eye(n, dtype=w0.dtype)

        def top_eig(w: Any, v: Any) -> tuple[Any, float]:
            # Gauss–Newton curvature of the MSE: (2/n)·λ_max(K), K = JJᵀ the n×n tangent kernel
            Jt = jnp.stack([fns["out_vjp"](w, Xj, eye[i]) for i in range(n)])
            return v, 2.0 / n * float(jnp.linalg.eigvalsh(Jt @ Jt.T)[-1])

        # GD chunks stop early at the loss where the Gauss–Newton finish takes over
        newton = newton_below is not None and newton_below > tol
        loss = lambda w: fns["loss"](w, Xj, yj)  # noqa: E731
        w = w0
        v = None
        current = float(loss(w))
        steps, stop, eta, lam, newton_steps = 0, "max_steps", 0.0, 0.0, 0
        while steps < max_steps:
            while newton and tol <= current < newton_below:
                w_new = fns["gauss_newton"](w, Xj, yj)
                l_new = float(loss(w_new))
                if not l_new < current or newton_steps >= 20:
                    newton = False  # not the quadratic regime: GD to the end
                    break
                w, current, newton_steps = w_new, l_new, newton_steps + 1
            level = jnp.asarray(newton_below if newton else tol, dtype=w0.dtype)
            v, lam_j = top_eig(w, v)
            lam = max(float(lam_j), 1e-300)
            eta = fraction * 2.0 / lam
            if current < tol:
                stop = "tol"
                break
            for _ in range(60):  # halve the step until the chunk does not increase the loss
                w_new, l_new, taken = fns["run_chunk"](w, eta, Xj, yj, level)
                l_new = float(l_new)
                if np.isfinite(l_new) and l_new <= current * (1 + 1e-12):
                    break
                eta /= 2.0
            else:
                raise RFTheoryError("gradient descent could not decrease the loss")
            w, current = w_new, l_new
            steps += int(taken)
        else:
            stop = "tol" if current < tol else "max_steps"
        if current < tol:
            stop = "tol"
        params = jax.tree_util.tree_map(np.asarray, unravel(w))
        f = np.asarray(net.apply(params, Xj))
        feats0 = np.asarray(net.body(params0, Xj))
        feats = np.asarray(net.body(params, Xj))
    theta = np.asarray(params["head"]) - np.asarray(params0["head"])
    change = float(np.linalg.norm(feats - feats0) / np.linalg.norm(feats0))
    resid = span_loss(feats, theta) if np.any(theta) else 1.0
    return DeepTrained(net, params0, params, theta, feats, steps, current,
                       float(np.max(np.abs(f - y))), eta, lam, fraction, change, resid, stop,
                       time.perf_counter() - t0, newton_steps=newton_steps)


@functools.lru_cache(maxsize=32)
def _train_fns(net: Any, chunk: int) -> dict[str, Any]:
    """The jitted outputs, output VJP, GD chunk and Gauss–Newton step for one architecture
    (compiled once).

    Everything is built on one VJP of the outputs, (w, X, c) ↦ ∇_w Σ_i c_i f(x_i): the loss
    gradient is it with c = 2(f − y)/n and the per-sample gradients ∇f(x_i) with c = e_i. (A
    Hessian–vector product, forward over reverse, took several times longer for XLA to compile
    than the training itself ran.)
    """
    jax = require_jax()
    jnp = jax.numpy
    from jax.flatten_util import ravel_pytree

    with float64():
        _, unravel = ravel_pytree(jax.tree_util.tree_map(jnp.asarray, net.init(0)))

    def outputs(w: Any, X: Any) -> Any:
        return net.apply(unravel(w), X)

    def out_vjp(w: Any, X: Any, c: Any) -> Any:
        return jax.vjp(lambda u: outputs(u, X), w)[1](c)[0]

    def loss(w: Any, X: Any, y: Any) -> Any:
        r = outputs(w, X) - y
        return jnp.mean(r * r)

    def run_chunk(w: Any, eta: Any, X: Any, y: Any, level: Any) -> tuple[Any, Any, Any]:
        def cond(state: Any) -> Any:
            _, l, i = state
            return (i < chunk) & (l >= level)

        def step(state: Any) -> Any:
            w, _, i = state
            f, back = jax.vjp(lambda u: outputs(u, X), w)
            w = w - eta * back(2.0 * (f - y) / y.shape[0])[0]
            return w, loss(w, X, y), i + 1

        return jax.lax.while_loop(cond, step, (w, loss(w, X, y), 0))

    def gauss_newton(w: Any, X: Any, y: Any) -> Any:
        f, back = jax.vjp(lambda u: outputs(u, X), w)
        Jt = jax.vmap(lambda c: back(c)[0])(jnp.eye(f.shape[0], dtype=f.dtype))  # J, n × P
        return w - Jt.T @ jnp.linalg.solve(Jt @ Jt.T, f - y)

    return {"loss": jax.jit(loss), "out_vjp": jax.jit(out_vjp), "run_chunk": jax.jit(run_chunk),
            "gauss_newton": jax.jit(gauss_newton)}


def check_span(trained: DeepTrained, tol: float = SPAN_TOL) -> float:
    """Refuse an attack that cannot succeed: θ must be (nearly) in the span at the true X.

    Parameters
    ----------
    trained : DeepTrained
        The trained network.
    tol : float
        Largest accepted ‖P⊥_{body(X)}θ‖²/‖θ‖² (default :data:`SPAN_TOL`).

    Returns
    -------
    float
        The span residual, when at most ``tol``.

    Raises
    ------
    ThetaNotInSpanError
        ``"θ not in the span ..."`` when the residual is above ``tol`` (the body moved too much:
        train with a smaller step fraction, or a wider body).
    """
    if not trained.span_residual <= tol:
        raise ThetaNotInSpanError(
            f"θ not in the span of the trained features: projection loss at the training data "
            f"{trained.span_residual:.3g} > {tol:g} (features moved {100 * trained.feature_change:.1f} %)")
    return trained.span_residual
