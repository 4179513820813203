"""Recover the training set of a random-features model from (θ*, V) by minimising the projection loss.

:func:`reconstruct` looks for n̂ points on the √d-sphere whose features span θ*: it minimises
L(X̂) = ‖P⊥_{Φ̂}θ*‖²/‖θ*‖² (:func:`rftheory.projection.projection_loss`, the one implementation of
the loss and its gradient) over X̂ ∈ (√d·S^{d−1})^n̂, with no learning rate to tune.

Notes
-----
Algorithm ``method="varpro"`` (default): Levenberg–Marquardt on the variable-projection form of
L (the linear weights eliminated, Kaufman's Jacobian, dense or matrix-free Gauss–Newton systems)
with monotonic basin hopping, grow/exchange rounds and restarts; see :mod:`rftheory.varpro`.
A spectral start from the Hermite moments of θ* (:mod:`rftheory.spectral_init`, issue #26) is
available through ``X_init``; it is not the default: it starts close only where p ≫ dn, and on
6 seeds at (100, 20), 10dn it saved no iterations (``paper_notes/attack.md``).
Measured with ``python benchmarks/bench_attack.py`` (sphere data, Gaussian labels, relu+tanh,
default options, 10 seeds, success = paper's ρ < 0.01; 2026-12-01): 10/10 at p = 1.5dn and
1.25dn for d = n = 10, 10/10 at 1.5dn and 9/10 at 1.25dn for (d, n) = (20, 10) — where the
L-BFGS method below recovered 0/4 at 1.5dn (``paper_notes/attack.md`` has the table, the costs
and what was tried).

Algorithm ``method="lbfgs"`` (the default before issue #14). Rows are parametrised without constraints, x = √d·u/‖u‖, and the loss is
minimised by scipy's L-BFGS-B (its line search picks every step; the gradient is chained through
the normalisation, i.e. projected on the sphere's tangent space and scaled by √d/‖u‖). One
*round* is:

1. optimise an over-complete pool of ⌈2n̂⌉ candidates (the current n̂ rows plus fresh random ones)
   until the loss reaches ``tol`` or stalls;
2. keep n̂ of them by backward elimination on the loss itself: repeatedly drop the candidate whose
   removal raises ‖P⊥θ‖² least (computed exactly from the pool's Gram matrix G = Φ̂Φ̂ᵀ and Φ̂θ —
   one pass over V). Candidates with no weight in the projection, and one of each near-duplicate
   pair, go first; no ground truth is used;
3. polish the n̂ rows with L-BFGS.

Rounds repeat (max ``max_rounds``) until the n̂ rows reach ``tol``, the step budget is spent or the
callback stops the run. From the second round on, the fresh candidates are first fitted (same
L-BFGS, other rows fixed) to the residual r = θ − Φ̂ᵀa of the current rows, normalised by ‖r‖:
a training point of small weight that the first round missed contributes little to L but
dominates r (measured: d=20, n=10, seed 4 stalls at L ≈ 1.6e-8 with 9 of 10 points found for 10
rounds without this step, and converges in round 2 with it). Why this design: fixed-step (momentum) gradient descent needs a
problem-dependent step; plain L-BFGS on n̂ rows converges fast but to non-zero local minima in most
seeds, whose signature is rows that carry almost no weight; an over-complete pool escapes those
minima (the extra rows are free directions), and the exact leave-one-out selection turns the pool
back into n̂ rows without ground truth. Its threshold is set by the optimiser: near p ≈ 1.5–2dn.

Measured (``method="lbfgs"``, then the default) with ``python benchmarks/bench_reconstruct_success.py`` (synthetic sphere data,
Gaussian labels, p = 10dn, default options, seeds 0–9, success = paper's ρ < 0.01; 2 cores, one
benchmark at a time):

* relu+tanh, d=20, n=10: 10/10; median 721 steps (max 2726), median 0.4 s.
* relu, d=20, n=10: 10/10 (sign-invariant ρ equal to ρ); median 369 steps (max 2226), 0.2 s.
* relu, d=100, n=20: 10/10; median 932 steps (max 2428), median 11.5 s (max 28 s).
* relu+tanh, d=100, n=20: 10/10; median 2684 steps (max 3233), median 36.5 s (max 44 s). The
  slowest case: its first pool phase can stall near L ~ 1e-6 and need a second round (6 of 10
  seeds).

Without the pool, plain L-BFGS on n̂ rows recovered 1 of 5 seeds at d=20, n=10 (project notes,
reconstruction-landscape.md); without the residual seeding, d=20 relu+tanh was 9/10 here.

Accuracy: the run stops at loss ≤ ``tol`` (default 1e-10); at that loss the recovered rows are
typically 1e-5–1e-3 (ρ) from the training points. The loss is ‖θ − Φ̂ᵀa‖²/‖θ‖² accumulated directly
in float64 (not as 1 − θᵀPθ), so it keeps its relative accuracy at the small values tol asks for.

Namespaces: θ (and X_init) may be numpy, CuPy or any array-API array; the loss, its gradient and
every pass over V run in θ's namespace and device. The optimiser itself (scipy) works on host
float64 vectors of n̂·d (or 2n̂·d) numbers: each evaluation copies X̂ to the device and the gradient
back (small: n̂·d numbers against the n̂·p·d work of the pass over V).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import scipy.optimize
from array_api_compat import array_namespace, device as array_device

from .errors import RFTheoryError, ShapeError
from .features import FeatureMap, RandomFeatures, check_data
from .backend import to_host
from .data import to_sphere
from .deadline import NO_DEADLINE, TIME_LIMIT_REACHED, Deadline
from .projection import projection_loss
from .seeding import RNGLike, check_rng, generator, rng_or_seed
from .spectral_init import spectral_init
from .varpro import (SOLVERS, hop_angle_for, Problem, default_max_rounds, default_max_steps,
                     default_max_sweeps, loss_passes, minimise,
                     random_points)

__all__ = ["ReconstructionResult", "reconstruct", "memory", "STOP_REASONS", "METHODS",
           "STREAM_CANDIDATES", "LBFGS_MAX_STEPS", "step_budget"]

#: Possible values of :attr:`ReconstructionResult.stop_reason`.
STOP_REASONS = ("tolerance", "stalled", "budget", "callback", "time_limit")
#: Reconstruction algorithms of :func:`reconstruct`; the first is the default.
METHODS = ("varpro", "lbfgs")
#: Default iteration budget of ``method="lbfgs"`` (``"varpro"``'s grows with d:
#: :func:`rftheory.varpro.default_max_steps`).
LBFGS_MAX_STEPS = 20000

#: Stream tag of the random candidates: ``default_rng([seed, tag])`` never coincides with the
#: streams of V's blocks (``[seed, b]``, b < 2**40) nor with rftheory.data's tags (2**40 + 1..4).
STREAM_CANDIDATES = 2**40 + 100
#: Whether ``method="varpro"`` without ``X_init`` starts its first walk from
#: :func:`rftheory.spectral_init.spectral_init` (random features only). Off: measured on 6 seeds
#: (paper_notes/attack.md, issue #26) it gave no gain at (100, 20), 10dn, relu+tanh (median 51
#: iterations either way), cost more for relu (median 148 against 121 from random starts) and
#: starts no closer than a random point near p = dn. Pass ``X_init=spectral_init(...).X`` to use it.
SPECTRAL_START = False


@dataclass(frozen=True)
class ReconstructionResult:
    """Outcome of :func:`reconstruct`.

    Attributes
    ----------
    X_hat : array, shape (n_hat, d)
        Reconstructed inputs, rows on the √d-sphere, in θ's array namespace and device.
    loss : float
        Projection loss L(X̂) of the returned rows (re-evaluated, not the optimiser's last value).
    history : tuple of float
        Loss after each optimiser iteration, all phases and rounds concatenated.
    steps : int
        Optimiser iterations in total (all rounds and phases).
    converged : bool
        ``loss <= tol``.
    stop_reason : str
        ``"tolerance"`` (loss ≤ tol), ``"stalled"`` (no round improved enough / rounds
        exhausted), ``"budget"`` (``max_steps`` iterations or ``max_sweeps`` sweeps used),
        ``"callback"`` (the callback returned True) or ``"time_limit"`` (the deadline passed).
    residual_steps : int
        Of ``steps``, the iterations spent seeding fresh candidates on the residual (rounds ≥ 2);
        ``history`` has ``steps − residual_steps`` entries.
    rounds : int
        Over-complete rounds run (each: optimise ``n_candidates`` rows, select ``n_hat``, polish).
    n_candidates : int
        Size of the over-complete candidate pool of each round.
    evaluations : int
        Loss-and-gradient evaluations in total (line searches evaluate more than once per step).
    coefficients : array, shape (n_hat,) or (n_hat, k)
        Projection weights a = G⁺Φ̂θ of the returned rows.
    wall_time : float
        Seconds spent in :func:`reconstruct`.
    method : str
        The algorithm that ran (one of :data:`METHODS`).
    passes : int
        Streams over V in total: every loss evaluation (one pass, or two when its blocks cannot
        be kept in memory), every Gauss–Newton curvature pass and every matrix-free product —
        the cost measure comparable across methods (an LM iteration is not an L-BFGS step).
    sweeps : int
        Products of V with the candidates as the algorithm asked for them (each loss
        evaluation, curvature pass, matrix-free product and screen batch counts one): what the
        work budget ``max_sweeps`` counts. Unlike ``passes`` it does not depend on the memory at
        hand, so it is the same on every machine.
    """

    X_hat: Any
    loss: float
    history: tuple[float, ...]
    steps: int
    converged: bool
    stop_reason: str
    rounds: int = 0
    residual_steps: int = 0
    n_candidates: int = 0
    evaluations: int = 0
    coefficients: Any = None
    wall_time: float = 0.0
    method: str = "lbfgs"
    passes: int = 0
    sweeps: int = 0


#: Below this many flops per block product (2·n̂_pool·d·BLOCK_ROWS) BLAS runs on one thread during
#: reconstruction: the products are too small to share, and waking a second thread for each of
#: thousands of them cost 50× (35 ms → 1.8 s per step at d = 100, pool 40, on a 2-core machine
#: with one core busy). Larger products keep BLAS's own threading.
_SINGLE_THREAD_FLOPS = 2**28
#: ... unless one sweep over V (p·d·n̂_pool multiply-adds) reaches this: then BLAS keeps its
#: threads even for small blocks, because the sweeps' large GEMMs gain more than the small calls
#: lose. Measured (2026-12-05, 2-core VM, d = 3072, n = 10, relu, patches, seed 1): at p = 10·dn
#: (9.4e9 multiply-adds a sweep) the first 6 LM iterations took 100 s with two
#: threads against 147 s with one (the same 94 passes); at p = dn (9.4e8) 15 iterations took
#: 46–47 s against 42–44 s (the small solves of the CG preconditioner lose more than the
#: products gain).
_THREADED_SWEEP = 2**32


def blas_threads_for(xp: Any, pool_size: int, d: int, p: int = 0):
    """Context manager limiting host BLAS to one thread for small per-block products.

    Parameters
    ----------
    xp : module
        The array namespace of the computation; only numpy's BLAS is limited.
    pool_size : int
        Rows of one product (candidates or points at once).
    d : int
        Input dimension.

    Returns
    -------
    contextlib.AbstractContextManager
        ``threadpoolctl.threadpool_limits(1)`` when the per-block product (2·pool_size·d·
        BLOCK_ROWS flops) is too small to gain from threads and a sweep over V (p·d·pool_size
        multiply-adds, for ``p`` rows of V; 0: unknown) is below :data:`_THREADED_SWEEP`, else
        a null context.
    """
    from contextlib import nullcontext

    from array_api_compat import is_numpy_namespace
    from threadpoolctl import threadpool_limits

    from .features import BLOCK_ROWS

    if is_numpy_namespace(xp) and 2 * pool_size * d * BLOCK_ROWS < _SINGLE_THREAD_FLOPS \
            and p * d * pool_size < _THREADED_SWEEP:
        return threadpool_limits(limits=1, user_api="blas")
    return nullcontext()


class _Stop(Exception):
    """Raised inside the objective to end an L-BFGS run early (tolerance, stall, budget, callback)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Tracker:
    """Objective on the unconstrained parametrisation x = √d·u/‖u‖, with the run's bookkeeping.

    One instance lives for the whole reconstruction: it counts iterations and evaluations across
    rounds, records the loss history, enforces the step budget and calls the user's callback.
    """

    def __init__(self, features, theta, xp, dev, tol, max_steps, callback, callback_every,
                 stall_window, stall_factor, max_sweeps=math.inf):
        self.features, self.theta, self.xp, self.dev = features, theta, xp, dev
        self.d = features.d
        self.tol, self.max_steps = tol, max_steps
        self.callback, self.callback_every = callback, callback_every
        self.stall_window, self.stall_factor = stall_window, stall_factor
        self.steps = 0
        self.residual_steps = 0
        self.evaluations = 0
        self.passes = 0
        self.sweeps = 0
        self.max_sweeps = max_sweeps
        self.history: list[float] = []
        self._last: tuple[float, np.ndarray] | None = None

    def count(self, passes: int, sweeps: int = 1) -> None:
        """Count work over V: ``passes`` streams of it for ``sweeps`` products as asked for."""
        self.passes += passes
        self.sweeps += sweeps

    def loss_and_grad(self, u: np.ndarray, m: int, target: Any) -> tuple[float, np.ndarray]:
        U = u.reshape(m, self.d)
        X, norms = to_sphere(U, return_norms=True)
        res = projection_loss(self.features, self.xp.asarray(X, device=self.dev), target)
        self.evaluations += 1
        self.count(loss_passes(self.features, self.xp, self.dev, m))
        g = to_host(res.gradient, np.float64)
        # Chain rule through x = √d u/‖u‖: project g on the tangent space, scale by √d/‖u‖.
        unit = U / norms
        g_u = (g - np.sum(g * unit, axis=1, keepdims=True) * unit) * (math.sqrt(self.d) / norms)
        self._last = (res.loss, X)
        return res.loss, g_u.ravel()

    def minimise(self, X0: np.ndarray, memory: int,
                 residual: Any = None) -> tuple[np.ndarray, float, str | None]:
        """L-BFGS from X0 until tol, stall, budget or callback; returns (X, loss, stop or None).

        ``stop`` is None when the run merely stalled (the caller decides what comes next).
        With ``residual`` the rows are fitted to that vector instead of θ (a seeding phase): its
        iterations count as steps (and against the budget) but are not part of ``history``, do
        not call the callback and never report "tolerance".
        """
        m = X0.shape[0]
        target = self.theta if residual is None else residual
        local: list[float] = []
        loss0, _ = self.loss_and_grad(X0.ravel(), m, target)
        if residual is None and loss0 <= self.tol:  # already there (e.g. X_init at the answer)
            return X0, loss0, "tolerance"
        best = {"loss": loss0, "X": X0}

        def on_iteration(intermediate_result):
            loss, X = self._last
            self.steps += 1
            local.append(loss)
            if loss < best["loss"]:
                best["loss"], best["X"] = loss, X
            if residual is None:
                self.history.append(loss)
                if self.callback is not None and self.steps % self.callback_every == 0:
                    if self.callback(self.steps, loss, self.xp.asarray(X, device=self.dev)):
                        raise _Stop("callback")
                if loss <= self.tol:
                    raise _Stop("tolerance")
            else:
                self.residual_steps += 1
            if self.steps >= self.max_steps or self.sweeps >= self.max_sweeps:
                raise _Stop("budget")
            if len(local) > self.stall_window:
                before = min(local[:len(local) - self.stall_window])
                if best["loss"] > self.stall_factor * before:
                    raise _Stop("stalled")

        stop = None
        try:
            scipy.optimize.minimize(
                self.loss_and_grad, X0.ravel(), args=(m, target), jac=True, method="L-BFGS-B",
                callback=on_iteration,
                # ftol/gtol 0: scipy's absolute tests (|Δf| ≤ ftol·max(|f|, 1)) would stop at
                # losses ~1e-9; stopping is decided in on_iteration instead.
                options={"maxcor": memory, "ftol": 0.0, "gtol": 0.0,
                         "maxiter": 10**9, "maxfun": 10**9},
            )
        except _Stop as exc:
            stop = exc.reason
        if stop == "stalled":
            stop = None
        return best["X"], best["loss"], stop


def _select_rows(features: RandomFeatures, X: np.ndarray, theta: Any, xp: Any, dev: Any,
                 keep: int) -> np.ndarray:
    """Indices of ``keep`` rows of X chosen by backward elimination on the projection loss.

    Repeatedly drops the row whose removal raises ‖P⊥θ‖² least. Everything follows from the
    Gram matrix G = Φ̂Φ̂ᵀ and c = Φ̂θ of the pool (one pass over V): the residual of a subset S
    is ‖θ‖² − c_Sᵀ G_S⁺ c_S. Near-duplicate rows make each other redundant, so one of each pair
    goes first; rows that carry no weight in the projection go next.
    """
    G, c = features.gram_and_matvec(xp.asarray(X, device=dev), theta)
    G, c = to_host(G, np.float64), to_host(c, np.float64)
    active = list(range(X.shape[0]))
    while len(active) > keep:
        best_j, best_val = None, -math.inf
        for j in active:
            S = [i for i in active if i != j]
            GS = G[np.ix_(S, S)]
            cS = c[S]
            sol = np.linalg.lstsq(GS, cS, rcond=None)[0]
            explained = float(np.sum(cS * sol))  # θᵀP_Sθ (summed over outputs): larger = smaller residual
            if explained > best_val:
                best_j, best_val = j, explained
        active.remove(best_j)
    return np.asarray(active)


def step_budget(d: int, method: str | None = None) -> int:
    """The iteration budget :func:`reconstruct` uses when given none.

    Parameters
    ----------
    d : int
        The data's dimension.
    method : {"varpro", "lbfgs"}, optional
        The reconstruction method (default :func:`reconstruct`'s, ``"varpro"``).

    Returns
    -------
    int
        :func:`rftheory.varpro.default_max_steps` of d for ``"varpro"`` (20 000 up to d = 40,
        then 500·d), :data:`LBFGS_MAX_STEPS` for ``"lbfgs"``.

    Examples
    --------
    >>> step_budget(10), step_budget(80), step_budget(80, "lbfgs")
    (20000, 40000, 20000)
    """
    method = METHODS[0] if method is None else method
    if method not in METHODS:
        raise RFTheoryError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise RFTheoryError(f"d must be a positive integer, got {d!r}")
    return LBFGS_MAX_STEPS if method == "lbfgs" else default_max_steps(d)


def reconstruct(features: FeatureMap, theta: Any, n_hat: int, *, method: str = "varpro",
                rng: RNGLike = 0, seed: int | None = None, X_init: Any = None, tol: float = 1e-10, max_steps: int | None = None,
                max_sweeps: int | None = None,
                callback: Callable[[int, float, Any], Any] | None = None,
                callback_every: int = 10, max_rounds: int | None = None,
                oversample: float | None = None, memory: int | None = None,
                stall_window: int | None = None, stall_factor: float | None = None,
                hop_angle: float | None = None, patience: int = 30,
                solver: str = "auto", deadline: Deadline = NO_DEADLINE) -> ReconstructionResult:
    """Recover n̂ inputs whose features span θ*: minimise L(X̂) = ‖P⊥_{Φ̂}θ‖²/‖θ‖² on the sphere.

    Parameters
    ----------
    features : FeatureMap
        The model's feature map: a :class:`RandomFeatures` (its V) or a
        :class:`~rftheory.features.DenseFeatures` (e.g. a trained network's first layer).
    theta : array, shape (p,) or (p, k)
        Trained weights θ* (numpy, CuPy, ...); k outputs share one feature block (the loss is
        Σ_c‖P⊥θ_c‖²/Σ_c‖θ_c‖²). The result lives in the same namespace/device.
    n_hat : int
        Number of rows to return (n̂). n̂ = n targets the training set; n̂ > n returns a superset
        (extra rows free), n̂ < n the best n̂-row fit found.
    method : {"varpro", "lbfgs"}
        ``"varpro"`` (default): Levenberg–Marquardt on the variable-projection functional with
        monotonic basin hopping (:mod:`rftheory.varpro`). ``"lbfgs"``: the earlier algorithm,
        L-BFGS on an over-complete pool with leave-one-out selection (module Notes).
    rng : int, numpy.random.SeedSequence, numpy.random.Generator or None, default 0
        Randomness of the initial candidates and of the basin-hopping perturbations (SPEC 7;
        :func:`rftheory.seeding.generator`): an integer seed gives the candidates' fixed stream
        (the numbers the package has always drawn for that seed), a Generator is used as it is.
    seed : int, optional
        The older spelling of an integer ``rng`` (still accepted; not both).
    X_init : array, shape (n_hat, d), optional
        Starting rows (projected onto the sphere). ``"lbfgs"`` adds random ones to form the pool.
        Default: random rows (``"varpro"``: with half as many again, pruned back after one LM
        run, where p ≥ 6·n̂d — :func:`rftheory.varpro.wide_rows`). The spectral points of
        :func:`rftheory.spectral_init.spectral_init` (Hermite moments of θ*) are a start to pass
        here; they are not the default (:data:`SPECTRAL_START`, measured no better).
    tol : float
        Target loss; the run stops as soon as the n̂ returned rows reach it.
    max_steps : int, optional
        Budget of optimiser iterations over all rounds: L-BFGS iterations, or accepted LM
        iterations (each one linearisation and one or more trial evaluations; see ``passes``
        in the result for a cost comparable across methods). Default: ``"varpro"``
        :func:`rftheory.varpro.default_max_steps` of the data's dimension (20 000 up to
        d = 40, then 500·d: the iterations a success needs grow with d); ``"lbfgs"``
        :data:`LBFGS_MAX_STEPS` (20 000).
    max_sweeps : int, optional
        Work budget: the run also stops ("budget") once it has made this many sweeps over V
        (products of V with the candidates; ``sweeps`` in the result). Default
        :func:`rftheory.varpro.default_max_sweeps`: 2⁴³ multiply-adds' worth, at least 2000
        sweeps — it binds only at CIFAR's dimension, where ``max_steps`` iterations would take
        hours (d = 3072, n = 10, p = dn: 9 321 sweeps, ~450 LM iterations). A count, not a
        clock: the same on every machine.
    callback : callable, optional
        ``callback(step, loss, X_hat)`` every ``callback_every`` iterations; returning True stops
        the run. ``"lbfgs"``: the current rows of the running phase (the whole pool during an
        over-complete phase); not called while seeding candidates on the residual.
        ``"varpro"``: the best rows found so far and their loss.
    callback_every : int
        Iterations between callback calls.
    max_rounds : int, optional
        Most rounds: over-complete rounds (``"lbfgs"``, default 10) or LM runs, the first from
        the start and every further one from a perturbed best point (``"varpro"``, default
        :func:`rftheory.varpro.default_max_rounds` of the budget: 1000 for 20 000 iterations,
        max_steps/20 above; 1 means a single LM run, free to stop in any local minimum).
    oversample : float, optional
        ``"lbfgs"`` only: pool size factor, ⌈oversample·n̂⌉ candidates per round (default 2,
        capped at p). ``"varpro"`` works on n̂ rows and accepts only 1.
    memory : int, optional
        ``"lbfgs"`` only: L-BFGS memory (correction pairs, default 20).
    stall_window, stall_factor : int, float, optional
        ``"lbfgs"`` only (defaults 200, 0.9): a phase is stalled when its best loss over the last
        ``stall_window`` iterations did not fall below ``stall_factor`` times the best before
        them. (``"varpro"``'s LM runs use :data:`rftheory.varpro.STALL_WINDOW`/``STALL_FACTOR``.)
    hop_angle : float, optional
        ``"varpro"`` only: scale σ of the perturbation of each candidate between LM runs (it
        turns a row by about atan(σ) rad). Default: :func:`rftheory.varpro.hop_angle_for` of
        the data's dimension (0.3 up to d = 10, growing as √d to 0.6 at d = 40).
    patience : int
        ``"varpro"`` only: rounds in a row that do not lower a basin-hopping walk's best loss by
        more than 10 % before the walk is abandoned for a fresh random start (a walk also ends
        after :data:`rftheory.varpro.RETURNS` rounds in a row that come back to its best loss;
        the best point of all walks is returned; the run itself ends at ``tol``, ``max_steps`` or ``max_rounds``).
    solver : {"auto", "dense", "cg"}
        ``"varpro"`` only: how the LM system is solved — dense Gauss–Newton matrix, or matrix-free
        preconditioned CG; ``"auto"`` picks dense for small n̂·d (see
        :func:`rftheory.varpro.Problem.dense_for`). Never changes what is computed, only the
        path (results differ by rounding and CG truncation).
    deadline : rftheory.deadline.Deadline, optional
        A deadline on the clock, checked after every iteration (``"varpro"``: its exchanges'
        iterations and between their parts too): when it has passed the run stops and returns
        its best rows so far with ``stop_reason = "time_limit"``. Default: none.

    Returns
    -------
    ReconstructionResult

    Examples
    --------
    >>> from rftheory.data import gaussian_labels, sphere_points
    >>> from rftheory.features import RandomFeatures, train_min_norm
    >>> from rftheory.metrics import rho
    >>> X = sphere_points(4, 8, seed=1)
    >>> rf = RandomFeatures("relu+tanh", d=8, p=10 * 8 * 4, seed=1)
    >>> theta = train_min_norm(rf, X, gaussian_labels(4, seed=1)).theta
    >>> result = reconstruct(rf, theta, 4, seed=1)
    >>> result.converged, rho(X, result.X_hat) < 0.01
    (True, True)
    """
    t0 = time.perf_counter()
    if method not in METHODS:
        raise RFTheoryError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if not isinstance(features, FeatureMap):
        raise RFTheoryError(f"features must be a FeatureMap (RandomFeatures, DenseFeatures), got {type(features).__name__}")
    try:
        xp = array_namespace(theta)
    except TypeError as exc:
        raise ShapeError(f"theta must be an array: {exc}") from None
    if theta.ndim not in (1, 2) or theta.shape[0] != features.p:
        raise ShapeError(f"theta must have shape (p,) or (p, k) with p = {features.p}, got {tuple(theta.shape)}")
    if not xp.isdtype(theta.dtype, "real floating"):
        raise ShapeError(f"theta must have a real floating dtype, got {theta.dtype}")
    if not bool(xp.all(xp.isfinite(theta))):
        raise ShapeError("theta has non-finite entries (NaN or inf)")
    if float(xp.linalg.vector_norm(theta)) == 0.0:
        raise ShapeError("theta is zero: there is nothing to reconstruct")
    if isinstance(n_hat, bool) or not isinstance(n_hat, (int, np.integer)) or n_hat < 1:
        raise RFTheoryError(f"n_hat must be a positive integer, got {n_hat!r}")
    n_hat = int(n_hat)
    if n_hat > features.p:
        raise RFTheoryError(f"n_hat = {n_hat} exceeds p = {features.p}: at most p candidates "
                            "have linearly independent features")
    max_steps = step_budget(features.d, method) if max_steps is None else max_steps
    lbfgs_only = {"oversample": oversample, "memory": memory, "stall_window": stall_window,
                  "stall_factor": stall_factor}
    if method == "lbfgs":
        oversample = 2.0 if oversample is None else oversample
        memory = 20 if memory is None else memory
        stall_window = 200 if stall_window is None else stall_window
        stall_factor = 0.9 if stall_factor is None else stall_factor
        max_rounds = 10 if max_rounds is None else max_rounds
    else:
        for name, value in lbfgs_only.items():
            if value is not None and not (name == "oversample" and value == 1.0):
                raise RFTheoryError(f"{name} applies to method='lbfgs' only")
        if solver not in SOLVERS:
            raise RFTheoryError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
        if hop_angle is None:
            hop_angle = hop_angle_for(features.d)
        if isinstance(hop_angle, bool) or not isinstance(hop_angle, numbers.Real) \
                or not (hop_angle > 0.0 and math.isfinite(hop_angle)):
            raise RFTheoryError(f"hop_angle must be a positive finite number, got {hop_angle!r}")
    if max_sweeps is None:
        max_sweeps = default_max_sweeps(features.p, features.d, n_hat)
    ints = [("max_steps", max_steps), ("callback_every", callback_every),
            ("max_sweeps", max_sweeps)] + ([] if max_rounds is None else [("max_rounds", max_rounds)])
    ints += [("memory", memory), ("stall_window", stall_window)] if method == "lbfgs" \
        else [("patience", patience)]
    for name, value in ints:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise RFTheoryError(f"{name} must be a positive integer, got {value!r}")
    if max_rounds is None:   # varpro's: grows with the (now checked) budget
        max_rounds = default_max_rounds(max_steps)
    if not (tol >= 0.0 and math.isfinite(tol)):
        raise RFTheoryError(f"tol must be a finite non-negative number, got {tol!r}")
    if method == "lbfgs":
        if not (oversample >= 1.0 and math.isfinite(oversample)):
            raise RFTheoryError(f"oversample must be a finite number ≥ 1, got {oversample!r}")
        if not (0.0 < stall_factor < 1.0):
            raise RFTheoryError(f"stall_factor must lie in (0, 1), got {stall_factor!r}")
    rng = check_rng(rng_or_seed(rng, seed), "seed" if seed is not None else "rng")
    dev = array_device(theta)
    theta = xp.astype(theta, xp.float64)
    d = features.d
    init_rng = rng                    # what spectral_init draws from (its own stream of an integer)
    rng = generator(rng, STREAM_CANDIDATES)
    if X_init is not None:
        check_data(X_init, d, "X_init")
        if X_init.shape[0] != n_hat:
            raise ShapeError(f"X_init has {X_init.shape[0]} rows but n_hat = {n_hat}")
        current = to_host(to_sphere(X_init, d), np.float64)
    else:
        current = random_points(rng, n_hat, d)
    deadline = NO_DEADLINE if deadline is None else deadline
    if method == "varpro":
        theta2 = theta if theta.ndim == 2 else theta[:, None]
        problem = Problem(features, theta2, xp, dev, solver)
        if X_init is None and SPECTRAL_START and isinstance(features, RandomFeatures):
            # The random points above are still drawn, so the rest of the stream is the same.
            init = spectral_init(features, theta2, n_hat, rng=init_rng)
            current = init.X
            problem.passes += init.passes
            problem.sweeps += init.passes
        with blas_threads_for(xp, n_hat, d, features.p):
            out = minimise(problem, current, rng, tol=tol, max_steps=max_steps,
                           max_rounds=max_rounds, patience=patience, hop_angle=hop_angle,
                           callback=callback, callback_every=callback_every,
                           to_user=lambda X: xp.asarray(X, device=dev), max_sweeps=max_sweeps,
                           deadline=deadline, widen=X_init is None)
        return _result(features, theta, xp, dev, out.X, tol, out.stop_reason, t0,
                       method="varpro", history=out.history, steps=out.steps,
                       rounds=out.rounds, residual_steps=out.pool_steps, n_candidates=n_hat,
                       evaluations=out.evaluations, passes=out.passes, sweeps=out.sweeps)
    hook = _DeadlineHook(callback, callback_every, deadline)
    if hook.active:  # the deadline is checked every iteration, the user's callback as asked
        callback, callback_every = hook, 1
    return hook.result(_reconstruct_lbfgs(features, theta, n_hat, xp, dev, rng, current, t0, tol=tol,
                              max_steps=max_steps, max_sweeps=max_sweeps, callback=callback,
                              callback_every=callback_every, oversample=oversample,
                              max_rounds=max_rounds, memory=memory,
                              stall_window=stall_window, stall_factor=stall_factor))


class _DeadlineHook:
    """The optimiser's callback when a deadline is set: stops the run once it has passed, and
    calls the user's callback every ``every`` iterations."""

    def __init__(self, callback: Any, every: int, deadline: Deadline) -> None:
        self.callback, self.every, self.deadline = callback, every, deadline
        self.active = deadline.finite
        self.timed_out = False
        self.next_call = every

    def __call__(self, step: int, loss: float, X_hat: Any) -> bool:
        if self.deadline.passed():
            self.timed_out = True
            return True
        if self.callback is not None and step >= self.next_call:
            self.next_call = step + self.every
            return bool(self.callback(step, loss, X_hat))
        return False

    def result(self, result: ReconstructionResult) -> ReconstructionResult:
        """``result`` with ``stop_reason = "time_limit"`` where the deadline stopped it."""
        if self.timed_out and result.stop_reason == "callback":
            return dataclasses.replace(result, stop_reason=TIME_LIMIT_REACHED)
        return result


def _result(features: FeatureMap, theta: Any, xp: Any, dev: Any, X: np.ndarray, tol: float,
            stop: str, t0: float, **fields: Any) -> ReconstructionResult:
    """The result of a run ending at host rows X: its loss re-evaluated (one more pass)."""
    final = projection_loss(features, xp.asarray(X, device=dev), theta, gradient=False)
    if final.loss <= tol:
        stop = "tolerance"
    return ReconstructionResult(
        X_hat=xp.asarray(X, device=dev), loss=final.loss, history=tuple(fields.pop("history")),
        converged=final.loss <= tol, stop_reason=stop, coefficients=final.coefficients,
        wall_time=time.perf_counter() - t0, **fields)


def _reconstruct_lbfgs(features: FeatureMap, theta: Any, n_hat: int, xp: Any, dev: Any,
                       rng: np.random.Generator, current: np.ndarray, t0: float, *, tol: float,
                       max_steps: int, max_sweeps: int, callback: Any, callback_every: int,
                       oversample: float,
                       max_rounds: int, memory: int, stall_window: int,
                       stall_factor: float) -> ReconstructionResult:
    """The over-complete L-BFGS method (module Notes)."""
    d = features.d
    pool_size = min(features.p, max(n_hat, math.ceil(oversample * n_hat)))

    with blas_threads_for(xp, pool_size, d, features.p):
        tracker = _Tracker(features, theta, xp, dev, tol, max_steps, callback, callback_every,
                           stall_window, stall_factor, max_sweeps)
        stop = None
        best_X, best_loss = current, math.inf
        rounds = 0
        for rounds in range(1, max_rounds + 1):
            if pool_size > n_hat:
                fresh = random_points(rng, pool_size - n_hat, d)
                if rounds > 1:
                    # The current rows stalled above tol: seed the fresh candidates on what they miss,
                    # the residual r = θ − Φ̂ᵀa (normalised, so a missing point of small weight is
                    # as visible as any other).
                    coeff = projection_loss(features, xp.asarray(current, device=dev), theta,
                                            gradient=False).coefficients
                    resid = theta - features.rmatvec(xp.asarray(current, device=dev), coeff)
                    tracker.count(loss_passes(features, xp, dev, n_hat) + 1, sweeps=2)
                    fresh, _, stop = tracker.minimise(fresh, memory, residual=resid)
                    if stop in ("budget",):
                        break
                pool = np.concatenate([current, fresh])
                pool, _, stop = tracker.minimise(pool, memory)
                chosen = _select_rows(features, pool, theta, xp, dev, n_hat)
                tracker.count(1)
                current = pool[chosen]
                if stop in ("budget", "callback"):
                    # Stopped inside the pool phase: the selected rows may still beat the best so far
                    # (in round 1 there is no best yet, and returning the random start would be wrong).
                    loss = projection_loss(features, xp.asarray(current, device=dev), theta,
                                           gradient=False).loss
                    tracker.count(loss_passes(features, xp, dev, n_hat))
                    if loss < best_loss:
                        best_X, best_loss = current, loss
                    break
            current, loss, stop = tracker.minimise(current, memory)
            if loss < best_loss:
                best_X, best_loss = current, loss
            if stop is not None:
                break
    if stop is None:
        stop = "stalled"
    return _result(features, theta, xp, dev, best_X, tol, stop, t0, method="lbfgs",
                   history=tracker.history, steps=tracker.steps, rounds=rounds,
                   residual_steps=tracker.residual_steps, n_candidates=pool_size,
                   evaluations=tracker.evaluations, passes=tracker.passes, sweeps=tracker.sweeps)


# -- memory, declared next to the code it describes (summed and checked by rftheory.budget) -----

def memory(*, d: float, p: float, n_hat: float, k: float = 1, method: str = "varpro",
           solver: str = "auto", oversample: float = 2.0, lbfgs_memory: float = 20,
           v_cache_bytes: float = 0, itemsize: int = 8, threads: int | None = None,
           single_run: bool = False) -> tuple[float, dict]:
    """Peak bytes of :func:`reconstruct` on a :class:`RandomFeatures` (V's cache and θ included).

    ``"varpro"``: :func:`rftheory.varpro.memory` for n̂ rows (its exchanges unless
    ``single_run``). ``"lbfgs"``: a loss evaluation with gradient of the whole pool
    (⌈oversample·n̂⌉ rows, capped at p), the backward elimination's streamed Gram and its
    solves, and the L-BFGS state (2·memory + 6 vectors of pool × d).

    Parameters
    ----------
    d, p, n_hat, k : float
        Input dimension, features, candidates, outputs of θ.
    method, solver, oversample
        As in :func:`reconstruct`.
    lbfgs_memory : float
        ``reconstruct``'s ``memory`` (L-BFGS correction pairs).
    v_cache_bytes : float
        The model's ``v_cache_bytes`` (V is cached when p·d entries fit).
    itemsize : int
        Bytes per entry of V's cache and θ.
    threads : int, optional
        Threads drawing V (default: the cores available).
    single_run : bool
        ``max_rounds=1`` (varpro: no exchange).

    Returns
    -------
    peak : float
        Bytes.
    parts : dict of str to float
        Named terms.

    Examples
    --------
    >>> peak, parts = memory(d=20, p=2000, n_hat=10)
    >>> peak < 2**25
    True
    """
    from . import varpro
    from .features import available_cores, stream_memory
    from .projection import loss_memory

    if method not in METHODS:
        raise RFTheoryError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    threads = available_cores() if threads is None else max(1, int(threads))
    resident = p * d * itemsize <= v_cache_bytes
    if method == "varpro":
        peak, parts = varpro.memory(n_hat, d, p, k, resident=resident, threads=threads,
                                    solver=solver, exchanges=not single_run)
    else:
        pool = min(p, max(n_hat, math.ceil(oversample * n_hat)))
        step = loss_memory(pool, d, p, k, itemsize, resident=resident, threads=threads)
        select = (stream_memory(pool, d, p, itemsize, cached=resident, threads=threads,
                                gram=True, outputs=k) + 3 * pool * pool * 8.0)
        state = (2 * lbfgs_memory + 6) * pool * d * 8.0
        peak = max(step, select) + state
        parts = {"loss evaluation": step, "pool selection": select, "optimiser state": state}
    v_bytes = p * d * itemsize if resident else 0.0
    theta = p * k * itemsize
    parts["V cached"] = v_bytes
    return peak + v_bytes + theta, parts
