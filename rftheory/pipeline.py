"""The reconstruction pipeline, end to end: data → RandomFeatures → θ* = Φ⁺Y → reconstruct → ρ.

This is the unit of the law of data reconstruction: for an activation, (d, n, p) and a seed,
train the RF model by the min-norm interpolator, measure whether labels are fit, reconstruct the
training inputs from (θ*, V) alone and measure how close they are. It is written once, as two
steps:

* :func:`fit_model` — the data (:func:`rftheory.data.load_dataset`), the labels, the
  :class:`~rftheory.features.RandomFeatures` and θ* (:func:`~rftheory.fit.train_min_norm`),
  returned as a :class:`FittedModel`;
* :func:`recover_training_set` — :func:`rftheory.reconstruct.reconstruct` from (θ*, V) and
  :func:`rftheory.metrics.match` in every ρ variant, returned as a :class:`ReconstructionRun`;

and :func:`run_reconstruction` does both. Everything in the package that reconstructs the
training set of an RF model is a summary of a :class:`ReconstructionRun` — the sweep cell
:func:`rftheory.cells.reconstruction_cell`, ``rftheory reconstruct`` and the claims ``law``, ``nhat`` and
``sign`` — so a run computed anywhere is the same run.

Seeds. One seed drives V, the data, the labels and the optimiser's initial candidates through
independent streams (:mod:`rftheory.data`, :mod:`rftheory.features`, :mod:`rftheory.reconstruct`).
Every number of a run except its timings is a deterministic function of its parameters (and of
the BLAS thread count in the last bits, see :func:`rftheory.sweep.limit_blas_threads`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .backend import namespace, to_host
from .data import Dataset, gaussian_labels, load_dataset, sign_labels
from .errors import RFTheoryError
from .features import RandomFeatures
from .fit import TrainedModel, train_min_norm
from .metrics import VARIANTS, Matching, match
from .reconstruct import METHODS, ReconstructionResult, reconstruct

__all__ = [
    "DEFAULT_V_CACHE_BYTES",
    "LABELS",
    "LABEL_FIT_TOL",
    "derivative_vanishes",
    "FittedModel",
    "ReconstructionRun",
    "fit_model",
    "recover_training_set",
    "run_reconstruction",
    "feature_count",
    "check_method",
    "reconstruction_memory",
    "time_probe",
    "reconstruct_default",
]

#: Bytes of V kept in memory between the optimiser's passes over it (1 GiB): reconstruction
#: revisits V every step. The cache changes speed only, never the numbers.
DEFAULT_V_CACHE_BYTES = 2**30
#: Label kinds of :func:`fit_model`.
LABELS = ("gaussian", "sign")
#: Train residual ‖Φθ* − Y‖/‖Y‖ above which the labels count as not fit (as in the law's check:
#: 1e-16–5e-11 measured for p ≥ n, ≥ 2e-2 for p < n).
LABEL_FIT_TOL = 1e-6


def derivative_vanishes(activation: Any) -> bool:
    """True when φ′ = 0 almost everywhere (φ piecewise constant: ``step``, ``sign``): φ′ is
    then a sum of Dirac deltas, which vanish off a null set.

    Parameters
    ----------
    activation : rftheory.activations.Activation
        A resolved activation (:func:`rftheory.activations.get_activation`); its symbolic
        ``derivative_expr`` is inspected.

    Returns
    -------
    bool
        Whether φ′, with its Dirac deltas set to zero, simplifies to 0.

    Examples
    --------
    >>> from rftheory.activations import get_activation
    >>> derivative_vanishes(get_activation("step")), derivative_vanishes(get_activation("relu"))
    (True, False)
    """
    import sympy as sp

    derivative = activation.derivative_expr
    if not derivative.has(sp.DiracDelta):
        return bool(derivative == 0)
    return bool(sp.simplify(derivative.replace(sp.DiracDelta, lambda *args: sp.S.Zero)) == 0)


@dataclass(frozen=True, eq=False)
class FittedModel:
    """An RF model trained by the min-norm interpolator on seeded data (the pipeline's first half).

    Attributes
    ----------
    activation : str
        φ as it was given (registry name or expression; ``features.activation.name`` is its name).
    data : str
        The data set's spec (``"sphere"``, ``"digits"``, ``"cifar10:DIR"``).
    labels : str
        ``"gaussian"`` or ``"sign"``.
    seed : int
        The seed of V, the data, the labels (and of the optimiser's start, see
        :func:`recover_training_set`).
    device : str
        ``"cpu"`` or ``"gpu"``: the namespace of θ* and of every pass over V.
    dataset : Dataset
        The training inputs (host, float64, rows on the √d-sphere) and how to show them.
    Y : numpy.ndarray
        The labels (host).
    features : RandomFeatures
        The feature map φ(V·).
    model : TrainedModel
        θ* = Φ⁺Y (in the device's namespace), the training residual and the Gram solve's
        diagnostics.
    seconds : float
        Wall time of loading the data and training.
    """

    activation: str
    data: str
    labels: str
    seed: int
    device: str
    dataset: Dataset
    Y: np.ndarray
    features: RandomFeatures
    model: TrainedModel
    seconds: float

    @property
    def X(self) -> np.ndarray:
        """The training inputs, shape (n, d), host float64."""
        return self.dataset.X

    @property
    def theta(self) -> Any:
        """θ*, shape (p,), in the device's namespace."""
        return self.model.theta

    @property
    def n(self) -> int:
        return self.dataset.n

    @property
    def d(self) -> int:
        return self.dataset.d

    @property
    def p(self) -> int:
        return self.features.p

    @property
    def p_over_dn(self) -> float:
        return self.p / (self.d * self.n)

    @property
    def p_over_n(self) -> float:
        return self.p / self.n

    @property
    def train_residual(self) -> float:
        """‖Φθ* − Y‖/‖Y‖: ≈ 0 once p ≥ n (labels fit)."""
        return self.model.train_residual


@dataclass(frozen=True, eq=False)
class ReconstructionRun:
    """One pass of the whole pipeline: the fitted model, the reconstruction and its scores.

    Attributes
    ----------
    fitted : FittedModel
        Data, labels, features and θ*.
    n_hat : int
        Number of candidates n̂.
    result : ReconstructionResult
        The optimiser's result (``X_hat`` and ``coefficients`` in the device's namespace,
        the loss history, steps, stop reason, rounds, evaluations).
    X_hat : numpy.ndarray
        The candidates, shape (n̂, d), on the host.
    coefficients : numpy.ndarray or None
        Their projection weights a = G⁺Φ̂θ*, on the host.
    matchings : mapping
        ``{variant: Matching}`` for every ρ variant of :data:`rftheory.metrics.VARIANTS`
        (``"abs"`` is the paper's official ρ).
    reconstruct_seconds : float
        Wall time of the optimiser.
    seconds : float
        Wall time of the whole pipeline (data, training, reconstruction, matching).
    """

    fitted: FittedModel
    n_hat: int
    result: ReconstructionResult
    X_hat: np.ndarray
    coefficients: np.ndarray | None
    matchings: Mapping[str, Matching]
    reconstruct_seconds: float
    seconds: float

    # -- the fitted model's and the optimiser's numbers, for short summaries ------------------
    @property
    def X(self) -> np.ndarray:
        return self.fitted.X

    @property
    def features(self) -> RandomFeatures:
        return self.fitted.features

    @property
    def theta(self) -> Any:
        return self.fitted.theta

    @property
    def d(self) -> int:
        return self.fitted.d

    @property
    def n(self) -> int:
        return self.fitted.n

    @property
    def p(self) -> int:
        return self.fitted.p

    @property
    def train_residual(self) -> float:
        return self.fitted.train_residual

    @property
    def loss(self) -> float:
        """Projection loss L(X̂) of the returned candidates."""
        return self.result.loss

    @property
    def rho(self) -> dict[str, float]:
        """ρ of every variant, ``{"abs": ..., "signed": ..., "sign_invariant": ...}``."""
        return {v: m.rho for v, m in self.matchings.items()}

    def warnings(self) -> list[str]:
        """What makes this run's ρ not mean what it seems, one sentence each (empty if nothing):

        * the labels are not fit (train residual above :data:`LABEL_FIT_TOL`, or ΦΦᵀ
          numerically rank-deficient): θ* is then not the interpolator the theory is about;
        * φ′ = 0 almost everywhere (a step function): the loss has no gradient, so a
          gradient-based reconstruction cannot move from its start;
        * the optimiser stopped above its tolerance (stalled, or out of steps).
        """
        fitted, result = self.fitted, self.result
        out = []
        gram = fitted.model.gram
        if gram.rank_deficient or not fitted.train_residual <= LABEL_FIT_TOL:
            why = (f"p = {fitted.p} < n = {fitted.n}: fewer features than points"
                   if fitted.p < fitted.n else
                   f"ΦΦᵀ has numerical rank {gram.rank} < n = {fitted.n}" if gram.rank_deficient
                   else "ΦΦᵀ is ill-conditioned at these sizes")
            out.append(f"the labels are not fit (train residual {fitted.train_residual:.3g} > "
                       f"{LABEL_FIT_TOL:g}; {why}), so θ* is not the min-norm interpolator the "
                       "theory is about and ρ does not test it; use more features or another "
                       "activation")
        if derivative_vanishes(fitted.features.activation):
            out.append(f"φ′ = 0 almost everywhere for {fitted.features.activation.name} (φ′ = "
                       f"{fitted.features.activation.derivative_expr}): the loss has no "
                       "gradient, so the gradient-based reconstruction cannot move from its "
                       f"start ({result.steps} steps, {result.stop_reason})")
        elif not result.converged:
            out.append(f"the reconstruction stopped above its tolerance (loss "
                       f"{float(result.loss):.3g}, stop reason {result.stop_reason} after "
                       f"{result.steps} steps): ρ is that of an unfinished search")
        return out

    def summary(self) -> dict[str, Any]:
        """The run as plain JSON: parameters, training, optimiser, every ρ and the official match
        (per-sample ρ, assignment, sign flips) and the loss history (``rftheory reconstruct
        --json``)."""
        fitted, official, result = self.fitted, self.matchings["abs"], self.result
        return {
            "activation": fitted.features.activation.name, "data": fitted.data, "d": fitted.d,
            "n": fitted.n, "n_hat": self.n_hat, "p": fitted.p, "p_over_dn": fitted.p_over_dn,
            "seed": fitted.seed, "labels": fitted.labels, "device": fitted.device,
            "train_residual": float(fitted.model.train_residual),
            "train_rank_deficient": bool(fitted.model.gram.rank_deficient),
            "method": str(result.method), "loss": float(result.loss),
            "steps": int(result.steps), "passes": int(result.passes), "sweeps": int(result.sweeps),
            "converged": bool(result.converged), "stop_reason": str(result.stop_reason),
            "seconds": self.reconstruct_seconds,
            "rho": self.rho,
            "sign_flips": official.n_flipped,
            "unmatched": official.n_unmatched,
            "per_sample_rho": official.per_sample,
            "assignment": official.assignment,
            "flipped": official.flipped,
            "history": tuple(float(v) for v in result.history),
            "warnings": self.warnings(),
        }


def feature_count(p: int | None = None, *, p_mult: float | None = None, d: int, n: int) -> int:
    """The number of features: ``p`` itself, or ``round(p_mult·d·n)`` (at least 1).

    Exactly one of ``p`` and ``p_mult`` is given (``rftheory reconstruct --p-mult``, a sweep
    file's ``p_mult``).

    Parameters
    ----------
    p : int, optional
        The number of features itself (returned unchanged).
    p_mult : float, optional
        Features per unknown: p = round(p_mult·d·n); a positive finite number.
    d, n : int
        Input dimension and training-set size.

    Returns
    -------
    int
        The number of features p.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If both or neither of ``p`` and ``p_mult`` are given, or ``p_mult`` is not positive.

    Examples
    --------
    >>> feature_count(p_mult=2.5, d=5, n=4), feature_count(120, d=5, n=4)
    (50, 120)
    """
    if (p is None) == (p_mult is None):
        raise RFTheoryError("give exactly one of p and p_mult")
    if p_mult is not None:
        if not (math.isfinite(p_mult) and p_mult > 0):
            raise RFTheoryError(f"p_mult must be a positive number, got {p_mult}")
        return max(1, round(p_mult * d * n))
    return p


def fit_model(*, activation: str, n: int, p: int, d: int | None = None, seed: int = 0,
              data: str = "sphere", labels: str = "gaussian", device: str = "cpu",
              v_cache_bytes: int = DEFAULT_V_CACHE_BYTES) -> FittedModel:
    """Load seeded data and labels, draw V, train θ* = Φ⁺Y: the first half of the pipeline.

    Parameters
    ----------
    activation : str
        Registry name or safe expression in ``z``.
    n, p : int
        Training-set size and number of random features.
    d : int, optional
        Input dimension (required for sphere data; fixed by image data).
    seed : int
        Drives V, the data and the labels (independent streams of the same seed).
    data : str
        ``"sphere"`` (default), ``"digits"``, ``"patches"``, ``"patches:standardised"`` or
        ``"cifar10:DIR"`` (see :func:`rftheory.data.load_dataset`).
    labels : {"gaussian", "sign"}
    device : {"cpu", "gpu"}
        Namespace of θ* and of every pass over V (:func:`rftheory.backend.namespace`).
    v_cache_bytes : int
        Keep V in memory when it takes at most this many bytes (speed only; default
        :data:`DEFAULT_V_CACHE_BYTES`, 1 GiB).

    Returns
    -------
    FittedModel
        The data set, labels Y (shape (n,)), features and the trained θ* (shape (p,), in the
        device's namespace), with the wall time of this step.
    """
    if labels not in LABELS:
        raise RFTheoryError(f"labels must be 'gaussian' or 'sign', got {labels!r}")
    start = time.perf_counter()
    xp = namespace(device)
    dataset = load_dataset(data, n, d=d, rng=seed)
    features = RandomFeatures(activation, d=dataset.d, p=p, seed=seed, v_cache_bytes=v_cache_bytes)
    Y = gaussian_labels(n, seed) if labels == "gaussian" else sign_labels(n, seed)
    model = train_min_norm(features, xp.asarray(dataset.X), xp.asarray(Y))
    return FittedModel(activation=str(activation), data=data, labels=labels, seed=seed,
                       device=device, dataset=dataset, Y=Y, features=features, model=model,
                       seconds=time.perf_counter() - start)


def check_method(method: str | None) -> None:
    """Refuse a reconstruction method that is not one of :data:`rftheory.reconstruct.METHODS`
    (None, the default, is accepted), before any work.

    Parameters
    ----------
    method : str or None
        The method's name, or None for the default.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If ``method`` is not None and not a known method.

    Examples
    --------
    >>> check_method("lbfgs")
    >>> check_method("adam")
    Traceback (most recent call last):
    ...
    rftheory.errors.RFTheoryError: unknown reconstruction method 'adam'; choose one of varpro, lbfgs
    """
    if method is not None and method not in METHODS:
        raise RFTheoryError(f"unknown reconstruction method {method!r}; choose one of "
                            f"{', '.join(METHODS)}")


def _check_candidates(p: int, n_hat: int) -> None:
    if p < n_hat:
        raise RFTheoryError(f"p = {p} is smaller than the number of candidates n̂ = {n_hat}: "
                            "their features cannot be independent")


def recover_training_set(fitted: FittedModel, n_hat: int | None = None, *,
                         method: str | None = None, tol: float | None = None,
                         max_steps: int | None = None,
                         callback: Callable[[int, float, Any], Any] | None = None,
                         deadline: Any = None, max_rounds: int | None = None
                         ) -> ReconstructionRun:
    """Reconstruct the training set of ``fitted`` from (θ*, V) alone and score it: the second half.

    Parameters
    ----------
    fitted : FittedModel
        The trained model (:func:`fit_model`): θ*, V and the training set to score against.
    n_hat : int, optional
        Number of candidates (default n).
    method : str, optional
        Reconstruction algorithm, one of :data:`rftheory.reconstruct.METHODS` (default:
        :func:`rftheory.reconstruct.reconstruct`'s, the strongest attack).
    tol, max_steps : optional
        Target loss and iteration budget (default: :func:`rftheory.reconstruct.reconstruct`'s).
    callback : callable, optional
        Passed to :func:`~rftheory.reconstruct.reconstruct` (``callback(step, loss, X_hat)``).
    deadline : rftheory.deadline.Deadline, optional
        Passed to :func:`~rftheory.reconstruct.reconstruct`: the run stops when it passes, with
        its best rows so far (``stop_reason = "time_limit"``).
    max_rounds : int, optional
        Passed to :func:`~rftheory.reconstruct.reconstruct`.

    Returns
    -------
    ReconstructionRun
        ``fitted``, the optimiser's result, the candidates X̂ (shape (n̂, d), on the host) and
        their matchings to ``fitted.X`` in every ρ variant.

    Raises
    ------
    rftheory.errors.RFTheoryError
        If p < n̂ or ``method`` is unknown.

    Notes
    -----
    The optimiser's start is seeded by ``fitted.seed`` (its own stream). ρ is measured in every
    variant against ``fitted.X`` by the Hungarian matching of :func:`rftheory.metrics.match`.
    """
    n_hat = fitted.n if n_hat is None else int(n_hat)
    _check_candidates(fitted.p, n_hat)
    check_method(method)
    start = time.perf_counter()
    options: dict[str, Any] = {"seed": fitted.seed}
    if method is not None:
        options["method"] = method
    if tol is not None:
        options["tol"] = tol
    if max_steps is not None:
        options["max_steps"] = int(max_steps)
    if callback is not None:
        options["callback"] = callback
    if deadline is not None:
        options["deadline"] = deadline
    if max_rounds is not None:
        options["max_rounds"] = int(max_rounds)
    result = reconstruct(fitted.features, fitted.theta, n_hat, **options)
    reconstruct_seconds = time.perf_counter() - start
    X_hat = to_host(result.X_hat)
    coefficients = None if result.coefficients is None else to_host(result.coefficients)
    matchings = {v: match(fitted.X, X_hat, v) for v in VARIANTS}
    return ReconstructionRun(fitted=fitted, n_hat=n_hat, result=result, X_hat=X_hat,
                             coefficients=coefficients, matchings=matchings,
                             reconstruct_seconds=reconstruct_seconds,
                             seconds=fitted.seconds + time.perf_counter() - start)


def run_reconstruction(*, activation: str, n: int, p: int, d: int | None = None, seed: int = 0,
                       data: str = "sphere", labels: str = "gaussian", n_hat: int | None = None,
                       method: str | None = None, tol: float | None = None,
                       max_steps: int | None = None,
                       device: str = "cpu", v_cache_bytes: int = DEFAULT_V_CACHE_BYTES,
                       callback: Callable[[int, float, Any], Any] | None = None
                       ) -> ReconstructionRun:
    """The whole pipeline: :func:`fit_model`, then :func:`recover_training_set`.

    Parameters are those of the two steps; ``p < n_hat`` is refused before any work.

    Parameters
    ----------
    activation : str
        Registry name or safe expression in ``z``.
    n, p : int
        Training-set size and number of random features.
    d : int, optional
        Input dimension (required for sphere data; fixed by image data).
    seed : int
        Drives V, the data, the labels and the optimiser's start (independent streams; default 0).
    data : str
        Data set name (default ``"sphere"``, see :func:`fit_model`).
    labels : {"gaussian", "sign"}
        Label kind (default ``"gaussian"``).
    n_hat : int, optional
        Number of candidates (default n).
    method : str, optional
        Reconstruction algorithm, one of :data:`rftheory.reconstruct.METHODS`.
    tol, max_steps : optional
        Target loss and iteration budget (default: :func:`rftheory.reconstruct.reconstruct`'s).
    device : {"cpu", "gpu"}
        Namespace of θ* and of every pass over V (default ``"cpu"``).
    v_cache_bytes : int
        Keep V in memory up to this many bytes (speed only; default 1 GiB).
    callback : callable, optional
        ``callback(step, loss, X_hat)``, called by the optimiser.

    Returns
    -------
    ReconstructionRun
        The fitted model, the reconstruction and its ρ in every variant.

    Examples
    --------
    >>> run = run_reconstruction(activation="relu+tanh", d=4, n=3, p=120, seed=0)
    >>> run.train_residual < 1e-10, run.rho["abs"] < 1e-3    # labels fit, data recovered
    (True, True)
    """
    _check_candidates(p, n if n_hat is None else int(n_hat))
    check_method(method)
    fitted = fit_model(activation=activation, n=n, p=p, d=d, seed=seed, data=data,
                       labels=labels, device=device, v_cache_bytes=v_cache_bytes)
    return recover_training_set(fitted, n_hat, method=method, tol=tol, max_steps=max_steps,
                                callback=callback)


def reconstruction_memory(*, d: float, n: float, p: float, n_hat: float | None = None,
                          k: float = 1, method: str | None = None, solver: str = "auto",
                          v_cache_bytes: float = DEFAULT_V_CACHE_BYTES, dtype: Any = "float64",
                          threads: int | None = None, single_run: bool = False) -> Any:
    """Peak memory of :func:`fit_model` then :func:`recover_training_set` (what ``rftheory
    reconstruct`` and the ``reconstruct`` cell run), as a :class:`rftheory.budget.Memory`.

    The larger of the training (:func:`rftheory.fit.train_memory`) and the reconstruction
    (:func:`rftheory.reconstruct.memory`), with V's cache and θ held through both.

    Parameters
    ----------
    d, n, p : float
        Input dimension, training points, features (floats: 1e300 is sized).
    n_hat : float, optional
        Candidates (default n).
    k : float
        Outputs.
    method : str, optional
        Reconstruction method (default: :func:`rftheory.reconstruct.reconstruct`'s).
    solver : str
        ``"varpro"``'s solver.
    v_cache_bytes : float
        The model's V cache.
    dtype : str
        Working dtype of the training (``float64`` or ``float32``).
    threads : int, optional
        Threads drawing V (default: the cores available).
    single_run : bool
        ``max_rounds=1``.

    Returns
    -------
    rftheory.budget.Memory

    Examples
    --------
    >>> reconstruction_memory(d=100, n=20, p=20000).peak_bytes < 2**30
    True
    """
    from . import budget
    from .fit import train_memory
    from .reconstruct import memory as reconstruct_memory

    d, n, p, k = (budget.size(name, v) for name, v in (("d", d), ("n", n), ("p", p), ("k", k)))
    n_hat = n if n_hat is None else budget.size("n_hat", n_hat)
    if str(getattr(dtype, "name", dtype)) not in ("float64", "float32"):
        raise RFTheoryError(f"dtype must be float64 or float32, got {dtype!r}")
    itemsize = 4 if "32" in str(getattr(dtype, "name", dtype)) else 8
    method = _default("method") if method is None else method
    train, t_parts = train_memory(d=d, n=n, p=p, k=k, itemsize=itemsize,
                                  v_cache_bytes=v_cache_bytes, threads=threads)
    rec, parts = reconstruct_memory(d=d, p=p, n_hat=n_hat, k=k, method=method, solver=solver,
                                    v_cache_bytes=v_cache_bytes, threads=threads,
                                    single_run=single_run)
    parts["training"] = train - t_parts["V cached"]
    label = ""
    if method == "varpro":
        from types import SimpleNamespace

        from .varpro import Problem

        dense = Problem.dense_for(SimpleNamespace(solver=solver, d=d, p=p), n_hat)  # type: ignore[arg-type]
        label = f", varpro/{'dense' if dense else 'cg'}"
    job = (f"reconstruct (d = {budget.show(d)}, n = {budget.show(n)}, n̂ = {budget.show(n_hat)}, "
           f"p = {budget.show(p)}, {'float32' if itemsize == 4 else 'float64'}{label})")
    return budget.Memory(job, max(train, rec), tuple(parts.items()))


def reconstruct_default(name: str) -> Any:
    """A default of :func:`rftheory.reconstruct.reconstruct` (read from its signature).

    Parameters
    ----------
    name : str
        One of its parameters, e.g. ``"max_steps"``.

    Returns
    -------
    object
        That parameter's default value.

    Examples
    --------
    >>> reconstruct_default("tol")
    1e-10
    """
    import inspect

    from .reconstruct import reconstruct

    return inspect.signature(reconstruct).parameters[name].default


_default = reconstruct_default


def time_probe(*, steps: int = 2, max_steps: int | None = None, max_sweeps: int | None = None,
               n_hat: int | None = None, method: str | None = None,
               **fit_options: Any) -> dict[str, Any]:
    """Measure this job on this machine: :func:`fit_model` (timed), then ``steps`` real
    optimiser steps of :func:`recover_training_set` (a single LM run / round), and scale the
    measured time per step (per sweep) by the step (work) budget — what ``--dry-run
    --time-probe`` prints.

    Parameters
    ----------
    steps : int
        Optimiser steps to time (default 2).
    max_steps : int, optional
        The step budget to scale to (default: :func:`rftheory.reconstruct.reconstruct`'s for
        the method and the data's dimension: :func:`rftheory.reconstruct.step_budget`).
    max_sweeps : int, optional
        The work budget to scale to (default: :func:`rftheory.varpro.default_max_sweeps`).
    n_hat, method : optional
        As in :func:`recover_training_set`.
    **fit_options
        The keywords of :func:`fit_model`.

    Returns
    -------
    dict
        ``fit_seconds``, ``probe_steps``, ``seconds_per_step``, ``max_steps``,
        ``seconds_per_sweep``, ``max_sweeps`` and ``upper_bound_seconds`` = fit + the smaller of
        per step × max_steps and per sweep × max_sweeps (an upper bound at this rate: a run
        that reaches its tolerance stops earlier).
    """
    start = time.perf_counter()
    fitted = fit_model(**fit_options)
    fit_seconds = time.perf_counter() - start
    if max_steps is None:   # reconstruct's default for the method and the data's dimension
        from .reconstruct import step_budget

        max_steps = step_budget(fitted.d, method)
    max_steps = int(max_steps)
    probe = recover_training_set(fitted, n_hat, method=method, max_steps=steps, max_rounds=1)
    done = max(1, probe.result.steps)
    per_step = probe.reconstruct_seconds / done
    if max_sweeps is None:
        from .varpro import default_max_sweeps

        max_sweeps = default_max_sweeps(fitted.p, fitted.d, probe.n_hat)
    per_sweep = probe.reconstruct_seconds / max(1, probe.result.sweeps)
    bound = min(per_step * max_steps, per_sweep * int(max_sweeps))
    return {"fit_seconds": fit_seconds, "probe_steps": done, "seconds_per_step": per_step,
            "max_steps": max_steps, "seconds_per_sweep": per_sweep, "max_sweeps": int(max_sweeps),
            "upper_bound_seconds": fit_seconds + bound}


#: Names that moved to their own modules (one object per file), still importable from here:
#: the sweep cells (:mod:`rftheory.cells`), the figure (:mod:`rftheory.reconstruction_figure`),
#: the number format (:mod:`rftheory.output`).
_MOVED = {"reconstruction_cell": "cells", "label_fit_cell": "cells", "law_cell": "cells",
          "cell_memory": "cells", "plot_reconstruction": "reconstruction_figure",
          "matched_images": "reconstruction_figure", "significant": "output",
          "LABEL_FIT_V_CACHE_BYTES": "cells"}


def __getattr__(name: str) -> Any:
    """A moved name, from its new module (lazily: those modules import this one)."""
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(f"rftheory.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
