"""Reconstruction of a deep network's training set through its body (JAX).

Given the trained body and θ = head − head(0), find X̂ (n̂ rows on the √d-sphere) minimising
the package's projection loss

    L(X̂) = ‖P⊥_{Φ̂} θ‖²/‖θ‖²,   Φ̂ = body(X̂) ∈ R^{n̂×p^(L)} (one batched pass).

Two methods:

``"lm"`` (default)
    Levenberg–Marquardt on the variable-projection residual r(X̂) = P⊥_{Φ̂}θ/‖θ‖ with Kaufman's
    Jacobian J[V] = −P⊥_{Φ̂}(∂Φ̂[V])ᵀa/‖θ‖ (a = G⁺Φ̂θ), restricted to the tangent space of the
    spheres. J and Jᵀ are matrix free — ``jax.linearize`` of the body gives the JVP and
    ``jax.linear_transpose`` the VJP. The damped normal equations (JᵀJ + μI)δ = −Jᵀr are
    solved in the Krylov space of JᵀJ from g = Jᵀr: ``cg_iters`` Lanczos vectors (fully
    reorthogonalised) reduce JᵀJ to a tridiagonal T, and δ = −Q(T + μI)⁻¹‖g‖e₁ — the iterate
    of as many CG steps, in exact arithmetic. The space does not depend on μ (Krylov spaces are
    shift-invariant), so one basis serves every damping: a rejected step costs one forward pass
    (the trial loss), not another cg_iters products JᵀJq. The step is retracted onto the
    spheres and accepted when it lowers L (μ shrinks by 3, else grows by 4). The products JᵀJq
    that build the basis go through a float32 copy of the linearised body (``product_dtype``); the
    loss, the gradient g, the projection and the Lanczos recurrence stay float64, so a step is
    accepted on the float64 loss and the rounds end at float64 stationary points.
``"adam"``
    The first-order baseline: Adam on the Riemannian gradient 2Jᵀr, with the same retraction.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidValueError, RFTheoryError, ShapeError
from ..seeding import generator
from .backend import float64, require_jax
from .projection import jax_projection

__all__ = ["DeepReconstruction", "METHODS", "projection_loss", "reconstruct"]

#: Attack methods (see the module docstring).
METHODS = ("lm", "adam")
#: Precisions of the LM basis's products JᵀJq through the body.
PRODUCT_DTYPES = ("float32", "float64")
_STREAM_START = 2**42 + 30
#: An LM round stalls when L fell by less than this fraction over the last STALL_WINDOW steps,
#: accepted or rejected: with a trained body the loss stops near the span residual (θ is only
#: nearly in the span), where the Gauss–Newton model predicts gains of ~1e-3 that the steps do
#: not deliver, and later steps no longer move X̂ measurably. Measured (ResNet, 8×8×3 patches,
#: n = 2, 16·dn, seed 0): ρ is 0.0133 from the 11th step on; counting only accepted steps, the
#: rounds went on through chains of up to 13 rejections (λ climbing back ×4 per step) to 104
#: steps, counting every step they stop at 52 (ρ 0.0133 either way); QUICK's 48 runs: 7 085 →
#: 4 802 steps, the same 19 successes.
STALL_DECREASE = 1e-3
STALL_WINDOW = 10


@dataclass(frozen=True, eq=False)
class DeepReconstruction:
    """Result of :func:`reconstruct`.

    Attributes
    ----------
    X_hat : numpy.ndarray, shape (n̂, d)
        The best candidates found (rows on the √d-sphere).
    loss : float
        L(X̂).
    steps : int
        Steps taken over all rounds (LM: accepted and rejected).
    rounds : int
        Starts tried.
    stop_reason : str
        ``"tol"``, ``"stalled"`` or ``"max_steps"`` (of the best round).
    method : str
    seconds : float
    bases : int
        LM: Krylov bases built, one per point the rounds stood at (an accepted step moves to a
        new one; a rejected step re-solves in the same basis at the cost of one forward pass).
        0 for Adam.
    products : int
        LM: products JᵀJq over all bases (≤ ``cg_iters`` each), a JVP and a VJP through the
        body each: the attack's cost. 0 for Adam.
    """

    X_hat: np.ndarray
    loss: float
    steps: int
    rounds: int
    stop_reason: str
    method: str
    seconds: float
    bases: int = 0
    products: int = 0


def _tangent(V: Any, X: Any, d: int) -> Any:
    """Project each row of V on the tangent space at the row of X (‖x‖² = d)."""
    return V - (V * X).sum(axis=1, keepdims=True) * X / d


def _retract(X: Any, d: int) -> Any:
    jnp = require_jax().numpy
    return X * (math.sqrt(d) / jnp.linalg.norm(X, axis=1, keepdims=True))


def _tridiagonal(alpha: Any, beta: Any, mu: Any) -> Any:
    """T + μI for the Lanczos tridiagonal T (diagonal α, off-diagonal β); μ = λα_0 is the
    damping relative to the curvature along g (α_0 = ‖Jg‖²/‖g‖²)."""
    jnp = require_jax().numpy
    return jnp.diag(alpha + mu) + jnp.diag(beta, 1) + jnp.diag(beta, -1)


@functools.lru_cache(maxsize=32)
def _compiled(net: Any, cg_iters: int, product_dtype: str = "float64") -> dict[str, Any]:
    """The jitted loss, LM step and Adam chunk for one architecture (compiled once per net)."""
    jax = require_jax()
    jnp = jax.numpy
    d = net.d
    low = jnp.float32 if product_dtype == "float32" else None

    def loss_grad(params: Any, X: Any, theta: Any) -> tuple[Any, Any]:
        Phi, vjp_fn = jax.vjp(lambda Z: net.body(params, Z), X)
        loss, a, r, _ = jax_projection(Phi, theta)
        # ∂L/∂Φ̂ = −2 a rᵀ/‖θ‖² (a at its optimum: the envelope theorem)
        g = vjp_fn(-2.0 * a[:, None] * r[None, :] / jnp.sum(theta * theta))[0]
        return loss, _tangent(g, X, d)

    def lm_krylov(params: Any, X: Any, theta: Any) -> tuple[Any, ...]:
        """L(X) and the Lanczos basis of JᵀJ from g (cg_iters vectors, fewer when the Krylov
        space is invariant): with :func:`lm_trial`, the LM step for every damping."""
        f = lambda Z: net.body(params, Z)  # noqa: E731
        Phi, jvp_fn = jax.linearize(f, X)
        vjp_fn = jax.linear_transpose(jvp_fn, X)
        loss, a, r, solve = jax_projection(Phi, theta)
        tn = jnp.linalg.norm(theta)
        proj = lambda u: u - Phi.T @ solve(Phi @ u)  # noqa: E731
        jvp_lo, vjp_lo = jvp_fn, vjp_fn
        if low is not None:  # the products through a float32 linearisation of the body
            P_lo = jax.tree_util.tree_map(lambda t: t.astype(low), params)
            _, jvp_32 = jax.linearize(lambda Z: net.body(P_lo, Z), X.astype(low))
            vjp_32 = jax.linear_transpose(jvp_32, X.astype(low))
            jvp_lo = lambda V: jvp_32(V.astype(low)).astype(X.dtype)  # noqa: E731
            vjp_lo = lambda U: (vjp_32(U.astype(low))[0].astype(X.dtype),)  # noqa: E731

        def JTJ(V: Any) -> Any:
            JV = -proj(jvp_lo(_tangent(V, X, d)).T @ a) / tn
            return _tangent(vjp_lo(-(a[:, None] * proj(JV)[None, :]) / tn)[0], X, d)

        g = _tangent(vjp_fn(-(a[:, None] * proj(r / tn)[None, :]) / tn)[0], X, d)
        gn = jnp.sqrt(jnp.sum(g * g))
        k = cg_iters
        Q0 = jnp.zeros((k + 1,) + X.shape, X.dtype).at[0].set(g / jnp.maximum(gn, 1e-300))
        index = jnp.arange(k)

        def grow(s: Any) -> Any:
            Q, alpha, beta, j, _ = s
            q = Q[j]
            w = JTJ(q)
            a_j = jnp.sum(q * w)
            for _ in range(2):  # full reorthogonalisation against q_0 … q_j (later rows are 0)
                w = w - jnp.tensordot(jnp.tensordot(Q, w, axes=((1, 2), (0, 1))), Q, axes=1)
            b_j = jnp.sqrt(jnp.sum(w * w))
            alpha = alpha.at[j].set(a_j)
            # An invariant subspace (b_j ≈ 0): the basis stops there, and the step is exact.
            live = b_j > 1e-12 * jnp.maximum(jnp.max(jnp.abs(alpha)), 1e-300)
            b_j = jnp.where(live, b_j, 0.0)
            Q = Q.at[j + 1].set(jnp.where(live, w / jnp.where(live, b_j, 1.0), 0.0))
            return Q, alpha, beta.at[j].set(b_j), j + 1, live

        def more(s: Any) -> Any:
            return (s[3] < k) & s[4]

        zeros = jnp.zeros(k, X.dtype)
        Q, alpha, beta, used, _ = jax.lax.while_loop(more, grow, (Q0, zeros, zeros, 0, gn > 0))
        # Couplings to vectors beyond the basis are dropped (T of the q_0 … q_{used−1}).
        beta = jnp.where(index < used - 1, beta, 0.0)[:-1]
        return loss, Q[:k], alpha, beta, gn, used

    def lm_trial(params: Any, X: Any, theta: Any, Q: Any, alpha: Any, beta: Any, gn: Any,
                 lam: Any) -> tuple[Any, Any]:
        """L at the retracted LM step for damping λ from a :func:`lm_krylov` basis (Q, α, β,
        ‖g‖; T's rows beyond the basis size are decoupled, α = β = 0, so y is 0 there), and the
        point."""
        y = jnp.linalg.solve(_tridiagonal(alpha, beta, lam * alpha[0]),
                             jnp.zeros_like(alpha).at[0].set(gn))
        y = jnp.where(gn > 0, y, 0.0)  # g = 0 (no basis): the step is 0, as CG's was
        X_new = _retract(X - jnp.tensordot(y, Q, axes=1), d)
        return jax_projection(net.body(params, X_new), theta)[0], X_new

    def adam_chunk(params: Any, X: Any, theta: Any, m: Any, v: Any, t0: Any, lr: Any,
                   steps: int) -> tuple[Any, Any, Any, Any]:
        def step(i: Any, s: Any) -> Any:
            X, m, v, _ = s
            loss, g = loss_grad(params, X, theta)
            t = t0 + i + 1
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            mh, vh = m / (1 - 0.9 ** t), v / (1 - 0.999 ** t)
            X = _retract(X - lr * mh / (jnp.sqrt(vh) + 1e-12), d)
            return X, m, v, loss
        return jax.lax.fori_loop(0, steps, step, (X, m, v, jnp.asarray(1.0, X.dtype)))

    return {"loss": jax.jit(lambda params, X, theta: jax_projection(net.body(params, X), theta)[0]),
            "loss_grad": jax.jit(loss_grad), "lm_krylov": jax.jit(lm_krylov),
            "lm_trial": jax.jit(lm_trial),
            "adam_chunk": jax.jit(adam_chunk, static_argnums=(7,))}


def projection_loss(net: Any, params: Any, X_hat: Any, theta: Any) -> tuple[float, np.ndarray]:
    """L(X̂) = ‖P⊥_{body(X̂)}θ‖²/‖θ‖² and its Riemannian gradient on the spheres, float64.

    Parameters
    ----------
    net : ResNet
        The architecture.
    params : dict
        Its (trained) parameters.
    X_hat : array, shape (n̂, d)
        Candidates on the √d-sphere.
    theta : array, shape (p_L,)
        head − head(0).

    Returns
    -------
    loss : float
    gradient : numpy.ndarray, shape (n̂, d)
        ∂L/∂X̂ projected on the spheres' tangent spaces.

    Notes
    -----
    The Euclidean gradient is the VJP of the body with cotangent −2arᵀ/‖θ‖² (the closed form of
    :mod:`rftheory.projection`); checked against finite differences in ``tests/test_deep.py``.
    """
    X_hat, theta = _check(net, X_hat, theta)
    with float64():
        loss, g = _compiled(net, 1)["loss_grad"](_jax_params(params), X_hat, theta)
        return float(loss), np.asarray(g)


def _jax_params(params: Any) -> Any:
    jax = require_jax()
    return jax.tree_util.tree_map(lambda a: jax.numpy.asarray(a, dtype=jax.numpy.float64), params)


def _check(net: Any, X_hat: Any, theta: Any) -> tuple[np.ndarray, np.ndarray]:
    X_hat = np.asarray(X_hat, dtype=np.float64)
    theta = np.asarray(theta, dtype=np.float64)
    if X_hat.ndim != 2 or X_hat.shape[1] != net.d:
        raise ShapeError(f"X_hat must have shape (n̂, {net.d}), got {X_hat.shape}")
    if theta.shape != (net.p_last,):
        raise ShapeError(f"θ must have shape ({net.p_last},), got {theta.shape}")
    if not np.any(theta) or not np.all(np.isfinite(theta)):
        raise ShapeError("θ must be finite and non-zero")
    return X_hat, theta


def reconstruct(net: Any, params: Any, theta: Any, n_hat: int, *, rng: Any, method: str = "lm",
                max_steps: int = 300, rounds: int = 1, tol: float = 1e-12,
                cg_iters: int = 50, lr: float = 0.02, X0: Any = None,
                restart_above: float | None = None, max_rounds: int | None = None,
                product_dtype: str = "float32") -> DeepReconstruction:
    """Recover the training set from the trained body and θ by minimising the projection loss.

    Parameters
    ----------
    net : ResNet
        The architecture.
    params : dict
        Trained parameters (only the body is used).
    theta : array, shape (p_L,)
        head − head(0).
    n_hat : int
        Candidates n̂.
    rng : int, numpy.random.SeedSequence, numpy.random.Generator or None
        Seed of the random starts (uniform on the √d-sphere).
    method : {"lm", "adam"}
        See the module docstring.
    max_steps : int
        Steps per round (LM steps, or Adam steps).
    rounds : int
        Random starts; the best final loss is kept (later rounds start only while L > ``tol``).
    tol : float
        Stop a round once L < tol.
    cg_iters : int
        Lanczos vectors per LM basis (the Krylov dimension of the step; each costs one product
        JᵀJq, a JVP and a VJP through the body).
    lr : float
        Adam's step (in units of the coordinates, which are O(1) on the √d-sphere).
    X0 : array, shape (n̂, d), optional
        The first round's start instead of a random one.
    restart_above : float, optional
        After ``rounds`` rounds, keep starting new ones while the best loss is above this (up to
        ``max_rounds``). With the span check's tolerance here, a round that ends above it has not
        reached a loss as low as the truth's (an accepted run's loss at the true X is below it):
        e.g. the ViT on digits at 16·dn, whose two stalled rounds ended at 0.30 and 0.46 against
        a loss of 2.5e-5 at the truth (paper_notes/deep_law.md).
    max_rounds : int, optional
        Most rounds with ``restart_above`` (default ``rounds``: no extra round).
    product_dtype : {"float32", "float64"}
        Precision of the LM basis's products JᵀJq through the body (see Notes).

    Returns
    -------
    DeepReconstruction

    Notes
    -----
    float64 throughout but for the LM basis's products JᵀJq, which by default go through a
    float32 linearisation of the body. Their rounding enters only the step's direction — the
    step is taken on the float64 loss and gradient: against the exact damped Gauss–Newton step
    of an explicit Jacobian, the step from a float32 basis is off by ≤ 1.1·eps32·κ(JᵀJ + μI)
    (measured on small networks; ``tests/test_deep.py`` bounds it by 16·eps32·κ). They halve a
    product's cost on CPU (ResNet w = 251: 0.18 → 0.10 s; ViT w = 768: 0.11 → 0.05 s; n = 4,
    one core); FULL against float64 products: ``paper_notes/deep_law.md``. An LM round also
    stops as "stalled" when μ exceeds 1e10 times the
    curvature (no decrease along any damped step) or L fell by less than a relative
    :data:`STALL_DECREASE` over the last :data:`STALL_WINDOW` steps (accepted or rejected).

    Examples
    --------
    The loss at the true X is the span residual, and an attack from there stays there:

    >>> import numpy as np
    >>> from rftheory.data import sphere_points
    >>> from rftheory.deep import ResNet, train_gd, reconstruct
    >>> X = sphere_points(2, 64, seed=1)
    >>> t = train_gd(ResNet(16, (1, 8, 8)), X, np.array([1.0, -1.0]), rng=1)
    >>> rec = reconstruct(t.net, t.params, t.theta, 2, rng=0, X0=X, max_steps=3)
    >>> bool(rec.loss <= t.span_residual * (1 + 1e-6))
    True
    """
    if method not in METHODS:
        raise RFTheoryError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    if isinstance(n_hat, bool) or int(n_hat) != n_hat or n_hat < 1:
        raise RFTheoryError(f"n_hat must be a positive integer, got {n_hat!r}")
    if isinstance(cg_iters, bool) or int(cg_iters) != cg_iters or cg_iters < 1:
        raise RFTheoryError(f"cg_iters must be a positive integer, got {cg_iters!r}")
    if product_dtype not in PRODUCT_DTYPES:
        raise InvalidValueError(f"unknown product_dtype {product_dtype!r}; choose from "
                                f"{', '.join(PRODUCT_DTYPES)}")
    n_hat = int(n_hat)
    d = net.d
    _, theta = _check(net, np.zeros((1, d)), theta)
    gen = generator(rng, _STREAM_START)
    t0 = time.perf_counter()
    fns = _compiled(net, int(cg_iters), product_dtype)
    best: tuple[float, np.ndarray, str] | None = None
    steps = bases = products = 0
    tried = 0
    rounds = max(1, int(rounds))
    most = rounds if max_rounds is None or restart_above is None else max(rounds, int(max_rounds))
    with float64():
        jnp = require_jax().numpy
        P = _jax_params(params)
        th = jnp.asarray(theta)
        for k in range(most):
            if best is not None and best[0] < tol:
                break
            if k >= rounds and best is not None and not best[0] > restart_above:
                break
            tried += 1
            start = (np.asarray(X0, dtype=np.float64) if k == 0 and X0 is not None
                     else gen.standard_normal((n_hat, d)))
            if start.shape != (n_hat, d):
                raise ShapeError(f"X0 must have shape ({n_hat}, {d}), got {start.shape}")
            X = _retract(jnp.asarray(start), d)
            if method == "lm":
                X, loss, used, stop, built, prods = _run_lm(fns, P, X, th, max_steps, tol)
                bases += built
                products += prods
            else:
                X, loss, used, stop = _run_adam(fns, P, X, th, max_steps, tol, lr)
            steps += used
            if best is None or loss < best[0]:
                best = (loss, np.asarray(X), stop)
    loss, X_hat, stop = best  # type: ignore[misc]
    return DeepReconstruction(X_hat, loss, steps, tried, stop, method, time.perf_counter() - t0,
                              bases, products)


def _run_lm(fns: dict, P: Any, X: Any, th: Any, max_steps: int,
            tol: float) -> tuple[Any, float, int, str, int, int]:
    """One LM round; returns (X, loss, steps, stop reason, Krylov bases, products JᵀJq)."""
    lam, loss = 1e-3, math.inf
    # The loss after every step, accepted or rejected (a rejected step leaves it unchanged):
    # the stall test measures progress per step.
    history: list[float] = []
    basis, built, products = None, 0, 0
    for step in range(max_steps):
        if basis is None:  # one basis per point: a rejected step only re-solves T + μI
            basis = fns["lm_krylov"](P, X, th)
            built += 1
            products += int(basis[-1])
            cur = float(basis[0])
        loss = min(loss, cur)
        if cur < tol:
            return X, cur, step, "tol", built, products
        new, X_new = fns["lm_trial"](P, X, th, *basis[1:-1], lam)  # basis[-1]: its size
        new = float(new)
        if np.isfinite(new) and new < cur:
            X, loss, lam, cur, basis = X_new, new, max(lam / 3.0, 1e-12), new, None
            if new < tol:
                return X, new, step + 1, "tol", built, products
        else:
            lam *= 4.0
            if lam > 1e10:
                return X, cur, step + 1, "stalled", built, products
        history.append(loss)
        if len(history) > STALL_WINDOW and (history[-STALL_WINDOW - 1] - loss
                                            <= STALL_DECREASE * history[-STALL_WINDOW - 1]):
            return X, loss, step + 1, "stalled", built, products
    return X, loss, max_steps, "max_steps", built, products


def _run_adam(fns: dict, P: Any, X: Any, th: Any, max_steps: int, tol: float,
              lr: float) -> tuple[Any, float, int, str]:
    jnp = require_jax().numpy
    m = jnp.zeros_like(X)
    v = jnp.zeros_like(X)
    chunk, done = 50, 0
    while done < max_steps:
        k = min(chunk, max_steps - done)
        X, m, v, _ = fns["adam_chunk"](P, X, th, m, v, done, lr, k)
        done += k
        if float(fns["loss"](P, X, th)) < tol:
            return X, float(fns["loss"](P, X, th)), done, "tol"
    return X, float(fns["loss"](P, X, th)), done, "max_steps"
