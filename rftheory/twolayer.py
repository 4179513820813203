"""Two-layer networks f(x) = c·W₂ φ(W₁x) trained by full-batch gradient descent.

This is the paper's "and beyond": a network whose first layer moves during training. Its last
layer is still a linear model on the features φ(W₁x), and every gradient step adds to W₂ a
combination of the per-sample last-layer gradients ∂f/∂W₂ = c·φ(W₁x_i). Hence

    ΔW₂ = W₂ − W₂(0) ∈ span{φ(W₁(t)x_i) : i ≤ n, t ≤ T}   (row-wise),

*exactly* in span{φ(W₁x_i)} when W₁ is frozen (then the network is the random-features model of
:mod:`rftheory.features` with V = W₁, trained by GD instead of the pseudo-inverse), and
approximately so — with the features at the trained W₁ — when W₁ moves little. The training set
is then recovered from (W₁, ΔW₂) by the projection loss of :mod:`rftheory.projection` with
θ = ΔW₂ᵀ ∈ R^{width×k}: the k outputs share one feature block (see :attr:`TrainingResult.theta`
and :attr:`TrainingResult.features`). The number of last-layer parameters p^(L) = k·width plays
the role of p in the law p ≳ dn.

Conventions (all choices documented here, once)
-----------------------------------------------
* Data rows on the √d-sphere; W₁(0) has i.i.d. N(0, 1/d) entries, drawn exactly as the V of
  ``RandomFeatures(activation, d, width, seed)`` — so the network with a frozen first layer *is*
  that random-features model, and ``train_min_norm`` on it gives the GD limit's θ*.
* W₂(0): ``"zero"`` (default; GD on the square loss then converges to the min-norm interpolator
  when W₁ is frozen) or ``"normal"``: i.i.d. N(0, s²/width) entries (s = ``last_layer_scale``),
  drawn from ``default_rng([seed, 2**41 + 1])``, a stream disjoint from :mod:`rftheory.data`'s
  streams (V itself uses no numpy stream: :mod:`rftheory.philox`).
* Output scale c (``scaling``): ``"standard"`` c = 1 (the RF model's convention, θ = W₂ᵀ),
  ``"ntk"`` c = 1/√width, ``"mean_field"`` c = 1/width. With the automatic step size below and W₁
  frozen and W₂(0) = 0, the outputs follow the same GD path for every c (W₂ absorbs 1/c); with W₁
  trained, c
  sets how far W₁ moves relative to its initialisation: ‖ΔW₁‖ shrinks with the width under the
  standard and NTK scalings (lazy training) and stays of order one under the mean-field scaling
  (feature learning) — measured values below.
* Losses, averaged over the n samples: ``"square"`` ½‖f(x_i) − y_i‖² (targets (n,) or (n, k));
  ``"logistic"`` log(1 + e^{−y_i f(x_i)}) (k = 1, labels ±1); ``"cross_entropy"``
  logsumexp(f(x_i)) − f(x_i)_{y_i} (k ≥ 2 outputs, integer class labels).
* Step size: by default η = ``lr_scale``·n/(c²·λ_max(Φ₀Φ₀ᵀ)) with Φ₀ = φ(XW₁(0)ᵀ): the inverse of
  the largest curvature of the square loss in W₂. It is stable for the logistic (curvature
  ≤ 1/4 of the square loss's) and cross-entropy (≤ 1/2) losses, and, when W₁ also trains, as long
  as the first layer's share of the curvature stays below the last layer's: true under the
  standard and NTK scalings at the sizes tried (d = n = 8, width 64–640). Under the mean-field
  scaling the first layer's curvature takes over once W₂ has grown and the square loss diverged
  with ``lr_scale`` = 1 (and 0.3 at width 640) but not with 0.1 — a blow-up raises
  :class:`TrainingDivergedError` rather than returning garbage.
* Measured first-layer motion ‖ΔW₁‖_F/‖W₁(0)‖_F after fitting Gaussian labels (square loss,
  W₂(0) = 0, d = n = 8): standard 3e-2 / 3e-3 / 5e-4 at width 64 / 256 / 640; NTK 0.29 / 0.17 /
  0.11; mean-field ≈ 1.2–1.3 at every width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from array_api_compat import array_namespace, device as array_device

from .activations import Activation, get_activation
from .errors import InvalidValueError, RFTheoryError, ShapeError
from .features import DenseFeatures, RandomFeatures, check_data

__all__ = [
    "LOSSES",
    "SCALINGS",
    "LAST_LAYER_INITS",
    "TrainingDivergedError",
    "TwoLayerNetwork",
    "LossEvaluation",
    "TrainingResult",
    "init_network",
    "encode_targets",
    "loss_and_gradients",
    "default_learning_rate",
    "train_two_layer",
]

#: Training losses accepted by :func:`train_two_layer`.
LOSSES = ("square", "logistic", "cross_entropy")
#: Output scalings c of f = c·W₂φ(W₁x).
SCALINGS = ("standard", "ntk", "mean_field")
#: Initialisations of W₂.
LAST_LAYER_INITS = ("zero", "normal")

_STREAM_LAST_LAYER = 2**41 + 1


class TrainingDivergedError(InvalidValueError):
    """Gradient descent blew up (non-finite or exploding loss): the step size is too large."""


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise RFTheoryError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _output_scale(scaling: str, width: int) -> float:
    if scaling == "standard":
        return 1.0
    if scaling == "ntk":
        return 1.0 / math.sqrt(width)
    if scaling == "mean_field":
        return 1.0 / width
    raise RFTheoryError(f"unknown scaling {scaling!r}; choose one of {', '.join(SCALINGS)}")


@dataclass(frozen=True)
class TwoLayerNetwork:
    """The network x ↦ c·W₂ φ(W₁x) ∈ R^k.

    Attributes
    ----------
    activation : Activation
    W1 : array, shape (width, d)
    W2 : array, shape (k, width)
    scaling : str
        One of :data:`SCALINGS`; fixes the output scale c (:attr:`output_scale`).
    """

    activation: Activation
    W1: Any
    W2: Any
    scaling: str = "standard"

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation", get_activation(self.activation))
        for name in ("W1", "W2"):
            A = getattr(self, name)
            try:
                xp = array_namespace(A)
            except TypeError as exc:
                raise ShapeError(f"{name} must be an array: {exc}") from None
            if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
                raise ShapeError(f"{name} must be a non-empty 2-D array, got shape {tuple(A.shape)}")
            if not xp.isdtype(A.dtype, "real floating"):
                raise ShapeError(f"{name} must have a real floating dtype, got {A.dtype}")
            if not bool(xp.all(xp.isfinite(A))):
                raise ShapeError(f"{name} has non-finite entries (NaN or inf)")
        if self.W2.shape[1] != self.W1.shape[0]:
            raise ShapeError(f"W2 has {self.W2.shape[1]} columns but W1 has {self.W1.shape[0]} "
                             "rows (the width)")
        _output_scale(self.scaling, self.W1.shape[0])  # validates the name

    @property
    def d(self) -> int:
        return int(self.W1.shape[1])

    @property
    def width(self) -> int:
        return int(self.W1.shape[0])

    @property
    def k(self) -> int:
        """Number of outputs."""
        return int(self.W2.shape[0])

    @property
    def output_scale(self) -> float:
        """c in f = c·W₂φ(W₁x)."""
        return _output_scale(self.scaling, self.width)

    @property
    def last_layer_parameters(self) -> int:
        """p^(L) = k·width, the count compared with dn in the law."""
        return self.k * self.width

    def features(self) -> DenseFeatures:
        """The feature map x ↦ φ(W₁x) of the current first layer."""
        return DenseFeatures(self.activation, self.W1)

    def __call__(self, X: Any) -> Any:
        """Outputs c·φ(XW₁ᵀ)W₂ᵀ, shape (n, k)."""
        xp = check_data(X, self.d)
        A = self.activation(xp.matmul(X, xp.matrix_transpose(xp.astype(self.W1, X.dtype))))
        return self.output_scale * xp.matmul(A, xp.matrix_transpose(xp.astype(self.W2, X.dtype)))


def init_network(activation: "str | Activation", d: int, width: int, k: int = 1, *,
                 seed: int = 0, scaling: str = "standard", last_layer_init: str = "zero",
                 last_layer_scale: float = 1.0, xp: Any = np, dtype: Any = None,
                 device: Any = None) -> TwoLayerNetwork:
    """A seeded initial network (see the module docstring for the conventions).

    Parameters
    ----------
    activation : str or Activation
        φ.
    d, width, k : int
        Input dimension, hidden width, number of outputs.
    seed : int
        W₁(0) is the V of ``RandomFeatures(activation, d, width, seed)``; W₂(0) (if random) comes
        from a separate stream of the same seed.
    scaling : {"standard", "ntk", "mean_field"}
    last_layer_init : {"zero", "normal"}
    last_layer_scale : float
        s in W₂(0) ~ N(0, s²/width) (``"normal"`` only).
    xp, dtype, device
        Namespace, dtype (default float64) and device of the weights.

    Returns
    -------
    TwoLayerNetwork
        W₁(0), W₂(0), φ and the scaling.
    """
    d, width, k = (_positive_int(name, v) for name, v in (("d", d), ("width", width), ("k", k)))
    seed = _positive_int("seed", seed, 0)
    _output_scale(scaling, width)
    dtype = xp.float64 if dtype is None else dtype
    W1 = RandomFeatures(activation, d, width, seed=seed).weights(xp, dtype, device)
    if last_layer_init == "zero":
        W2_host = np.zeros((k, width))
    elif last_layer_init == "normal":
        if not (math.isfinite(last_layer_scale) and last_layer_scale > 0):
            raise RFTheoryError(f"last_layer_scale must be a positive number, got {last_layer_scale!r}")
        rng = np.random.default_rng([seed, _STREAM_LAST_LAYER])
        W2_host = rng.standard_normal((k, width)) * (last_layer_scale / math.sqrt(width))
    else:
        raise RFTheoryError(f"unknown last_layer_init {last_layer_init!r}; choose one of "
                            f"{', '.join(LAST_LAYER_INITS)}")
    W2 = xp.asarray(W2_host, dtype=dtype, device=device)
    return TwoLayerNetwork(activation, W1, W2, scaling)


def encode_targets(Y: Any, loss: str, n: int, *, n_classes: int | None = None,
                   xp: Any = None, dtype: Any = None, device: Any = None) -> Any:
    """Validate labels for ``loss`` and return the (n, k) float target matrix used in training.

    Parameters
    ----------
    Y : array
        ``"square"``: real targets, shape (n,) (k = 1) or (n, k). ``"logistic"``: labels in
        {−1, +1}, shape (n,) or (n, 1). ``"cross_entropy"``: integer class indices in
        [0, n_classes), shape (n,).
    loss : str
        One of :data:`LOSSES`.
    n : int
        Number of samples (rows of X).
    n_classes : int, optional
        Cross-entropy only: number of outputs k (default: largest label + 1, at least 2).
    xp, dtype, device : optional
        Namespace, dtype (default float64) and device of the result (default: those of ``Y``).

    Returns
    -------
    array, shape (n, k)
        The targets (±1 column for logistic, one-hot rows for cross-entropy).
    """
    if loss not in LOSSES:
        raise RFTheoryError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
    try:
        yxp = array_namespace(Y)
    except TypeError as exc:
        raise ShapeError(f"Y must be an array: {exc}") from None
    xp = yxp if xp is None else xp
    dtype = xp.float64 if dtype is None else dtype
    if Y.ndim not in (1, 2) or Y.shape[0] != n:
        raise ShapeError(f"Y must have shape (n,) or (n, k) with n = {n}, got {tuple(Y.shape)}")
    is_int = yxp.isdtype(Y.dtype, "integral")
    if not is_int and not yxp.isdtype(Y.dtype, "real floating"):
        raise ShapeError(f"Y must be real or integer, got dtype {Y.dtype}")
    if not is_int and not bool(yxp.all(yxp.isfinite(Y))):
        raise ShapeError("Y has non-finite entries (NaN or inf)")
    if loss == "square":
        T = xp.asarray(Y, device=device)
        T = xp.astype(T, dtype)
        return T if T.ndim == 2 else T[:, None]
    if loss == "logistic":
        if Y.ndim == 2 and Y.shape[1] != 1:
            raise ShapeError(f"the logistic loss has k = 1 output; Y has {Y.shape[1]} columns "
                             "(use cross_entropy for several classes)")
        if not bool(yxp.all((Y == 1) | (Y == -1))):
            raise RFTheoryError("logistic labels must be -1 or +1")
        T = xp.astype(xp.asarray(Y, device=device), dtype)
        return T if T.ndim == 2 else T[:, None]
    # cross-entropy
    if Y.ndim != 1 or not is_int:
        raise ShapeError("cross-entropy labels must be a 1-D integer array of class indices, got "
                         f"shape {tuple(Y.shape)} and dtype {Y.dtype}")
    lo, hi = int(yxp.min(Y)), int(yxp.max(Y))
    if lo < 0:
        raise RFTheoryError(f"class labels must be non-negative, got {lo}")
    k = max(hi + 1, 2) if n_classes is None else _positive_int("n_classes", n_classes, 2)
    if hi >= k:
        raise ShapeError(f"class label {hi} does not fit k = {k} outputs")
    labels = xp.asarray(Y, device=device)
    classes = xp.arange(k, dtype=labels.dtype, device=device)
    return xp.astype(labels[:, None] == classes[None, :], dtype)


@dataclass(frozen=True)
class LossEvaluation:
    """Training loss, accuracy and gradients of a network on (X, targets).

    Attributes
    ----------
    loss : float
        Mean training loss.
    accuracy : float
        Fraction of samples classified right: sign(f) = sign(y) for k = 1 (square and logistic),
        argmax f = argmax y for k ≥ 2 (square on one-hot targets, cross-entropy).
    grad_W1 : array or None
        ∂loss/∂W₁, shape (width, d) (None when not requested).
    grad_W2 : array or None
        ∂loss/∂W₂, shape (k, width).
    outputs : array, shape (n, k)
    """

    loss: float
    accuracy: float
    grad_W1: Any
    grad_W2: Any
    outputs: Any


def _loss_value_and_residual(xp: Any, F: Any, T: Any, loss: str) -> tuple[float, Any]:
    """Mean loss and R = ∂(mean loss)/∂F for outputs F and targets T, both (n, k)."""
    n = F.shape[0]
    if loss == "square":
        D = F - T
        return 0.5 * float(xp.sum(D * D)) / n, D / n
    if loss == "logistic":
        margin = T * F
        # log(1 + e^{−m}) without overflow; σ(−m) = (1 − tanh(m/2))/2 is stable for every m.
        value = float(xp.sum(xp.logaddexp(xp.zeros_like(margin), -margin))) / n
        return value, -T * (0.5 * (1.0 - xp.tanh(margin / 2.0))) / n
    shifted = F - xp.max(F, axis=1, keepdims=True)
    E = xp.exp(shifted)
    Z = xp.sum(E, axis=1, keepdims=True)
    value = float(xp.sum(xp.log(Z)) - xp.sum(T * shifted)) / n
    return value, (E / Z - T) / n


def _accuracy(xp: Any, F: Any, T: Any) -> float:
    if F.shape[1] == 1:
        right = xp.sign(F[:, 0]) == xp.sign(T[:, 0])
    else:
        right = xp.argmax(F, axis=1) == xp.argmax(T, axis=1)
    return float(xp.mean(xp.astype(right, F.dtype)))


def loss_and_gradients(network: TwoLayerNetwork, X: Any, targets: Any, loss: str = "square", *,
                       gradient: bool = True, first_layer: bool = True) -> LossEvaluation:
    """Mean training loss of ``network`` on (X, targets) and its gradients in W₁ and W₂.

    Parameters
    ----------
    network : TwoLayerNetwork
        The weights.
    X : array, shape (n, d)
        Training inputs.
    targets : array, shape (n, k)
        As returned by :func:`encode_targets`.
    loss : str
        One of :data:`LOSSES`.
    gradient : bool
        Compute the gradients.
    first_layer : bool
        Also compute ∂loss/∂W₁ (skipped when W₁ is frozen).

    Returns
    -------
    LossEvaluation
        The loss, and the gradients in W₁ and W₂ (None when not computed).

    Notes
    -----
    With Z = XW₁ᵀ, A = φ(Z), F = c·AW₂ᵀ and R = ∂loss/∂F:
    ∂loss/∂W₂ = c·RᵀA and ∂loss/∂W₁ = c·((RW₂) ⊙ φ′(Z))ᵀX. φ′ at a kink follows the activation's
    convention (mean of the one-sided derivatives), a set of measure zero for Gaussian W₁.
    """
    if loss not in LOSSES:
        raise RFTheoryError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
    xp = check_data(X, network.d)
    if targets.ndim != 2 or targets.shape[0] != X.shape[0] or targets.shape[1] != network.k:
        raise ShapeError(f"targets must have shape (n, k) = ({X.shape[0]}, {network.k}), got "
                         f"{tuple(targets.shape)}")
    if loss == "logistic" and network.k != 1:
        raise ShapeError(f"the logistic loss needs k = 1 output, the network has k = {network.k}")
    if loss == "cross_entropy" and network.k < 2:
        raise ShapeError("the cross-entropy loss needs k >= 2 outputs, the network has k = 1")
    return _evaluate(network.activation, network.output_scale, xp.astype(network.W1, X.dtype),
                     xp.astype(network.W2, X.dtype), X, xp.astype(targets, X.dtype), loss,
                     gradient, first_layer)


def _evaluate(activation: Activation, c: float, W1: Any, W2: Any, X: Any, T: Any, loss: str,
              gradient: bool, first_layer: bool) -> LossEvaluation:
    """:func:`loss_and_gradients` on validated arrays of one namespace and dtype."""
    xp = array_namespace(X, W1, W2, T)
    Z = xp.matmul(X, xp.matrix_transpose(W1))
    A = activation(Z)
    F = c * xp.matmul(A, xp.matrix_transpose(W2))
    value, R = _loss_value_and_residual(xp, F, T, loss)
    acc = _accuracy(xp, F, T)
    if not gradient:
        return LossEvaluation(value, acc, None, None, F)
    gW2 = c * xp.matmul(xp.matrix_transpose(R), A)
    gW1 = None
    if first_layer:
        back = xp.matmul(R, W2) * activation.derivative(Z)
        gW1 = c * xp.matmul(xp.matrix_transpose(back), X)
    return LossEvaluation(value, acc, gW1, gW2, F)


def default_learning_rate(network: TwoLayerNetwork, X: Any, lr_scale: float = 1.0) -> float:
    """η = lr_scale·n/(c²·λ_max(ΦΦᵀ)), Φ = φ(XW₁ᵀ): inverse top curvature of the square loss in W₂.

    Parameters
    ----------
    network : TwoLayerNetwork
        The network at which the curvature is measured.
    X : array, shape (n, d)
        Training inputs.
    lr_scale : float
        Factor on the step size.

    Returns
    -------
    float
        The step size η.
    """
    xp = check_data(X, network.d)
    G = network.features().gram(X)
    lam = float(xp.max(xp.linalg.eigvalsh(G)))
    if not lam > 0:
        raise RFTheoryError("the features of the data are all zero: no step size can be derived")
    return lr_scale * X.shape[0] / (network.output_scale ** 2 * lam)


@dataclass(frozen=True)
class TrainingResult:
    """A trained two-layer network and its training record.

    Attributes
    ----------
    network : TwoLayerNetwork
        Weights after training.
    initial : TwoLayerNetwork
        Weights at initialisation.
    loss_name : str
    train_first_layer : bool
    learning_rate : float
    steps : int
        Gradient steps taken.
    train_loss, train_accuracy : float
        At the returned weights.
    history : tuple of (int, float, float)
        (step, loss, accuracy) before the step, every ``record_every`` steps, and at the end.
    stop_reason : str
        ``"tolerance"`` (loss ≤ tol), ``"steps"`` (budget used) or ``"callback"``.
    """

    network: TwoLayerNetwork
    initial: TwoLayerNetwork
    loss_name: str
    train_first_layer: bool
    learning_rate: float
    steps: int
    train_loss: float
    train_accuracy: float
    history: tuple[tuple[int, float, float], ...]
    stop_reason: str

    @property
    def delta_W2(self) -> Any:
        """ΔW₂ = W₂ − W₂(0), shape (k, width)."""
        return self.network.W2 - self.initial.W2

    @property
    def theta(self) -> Any:
        """The reconstruction target θ = ΔW₂ᵀ: shape (width,) for k = 1, (width, k) otherwise.

        The output scale c is left out: the projection loss does not depend on θ's scale.
        """
        D = self.delta_W2
        xp = array_namespace(D)
        return D[0, :] if D.shape[0] == 1 else xp.matrix_transpose(D)

    def features(self) -> DenseFeatures:
        """φ(W₁x) at the trained first layer: the feature map whose span ΔW₂ (nearly) lies in."""
        return self.network.features()

    @property
    def first_layer_change(self) -> float:
        """‖W₁ − W₁(0)‖_F/‖W₁(0)‖_F: how far training moved the features (0 when frozen)."""
        xp = array_namespace(self.network.W1)
        num = float(xp.linalg.vector_norm(self.network.W1 - self.initial.W1))
        return num / float(xp.linalg.vector_norm(self.initial.W1))


def train_two_layer(X: Any, Y: Any, *, width: int | None = None, activation: "str | Activation" = "relu",
                    loss: str = "square", train_first_layer: bool = True, steps: int = 1000,
                    learning_rate: float | None = None, lr_scale: float = 1.0, tol: float = 0.0,
                    seed: int = 0, scaling: str = "standard", last_layer_init: str = "zero",
                    last_layer_scale: float = 1.0, n_classes: int | None = None,
                    initial: TwoLayerNetwork | None = None, record_every: int | None = None,
                    callback: Callable[[int, float], Any] | None = None) -> TrainingResult:
    """Train f(x) = c·W₂φ(W₁x) by full-batch gradient descent from a seeded initialisation.

    Parameters
    ----------
    X : array, shape (n, d)
        Training inputs (any array-API namespace; the weights live in X's namespace and dtype).
    Y : array
        Labels, see :func:`encode_targets` (k follows from them, or from ``n_classes``).
    width : int
        Hidden width (needed unless ``initial`` is given).
    activation : str or Activation
        φ.
    loss : {"square", "logistic", "cross_entropy"}
    train_first_layer : bool
        False freezes W₁: the network is then the RF model with V = W₁(0) trained by GD.
    steps : int
        Most gradient steps (≥ 0).
    learning_rate : float, optional
        Step size η; default :func:`default_learning_rate` at the initial network.
    lr_scale : float
        Factor on the default step size.
    tol : float
        Stop once the training loss is ≤ tol.
    seed, scaling, last_layer_init, last_layer_scale
        Initialisation, see :func:`init_network` (ignored when ``initial`` is given).
    n_classes : int, optional
        Cross-entropy: number of outputs k.
    initial : TwoLayerNetwork, optional
        Start from these weights instead (its k must match the labels').
    record_every : int, optional
        History interval (default: about 200 records per run).
    callback : callable, optional
        ``callback(step, loss)`` after each recorded step; returning True stops training.

    Returns
    -------
    TrainingResult

    Raises
    ------
    RFTheoryError
        Unknown loss or option, bad sizes; :class:`~rftheory.errors.ShapeError` for shapes,
        non-finite data or a k mismatch; :class:`TrainingDivergedError` when the loss blows up.

    Notes
    -----
    With W₁ frozen, W₂(0) = 0 and the square loss, the iterates stay in the row space of Φ and
    converge (η ≤ 2/curvature) to the min-norm interpolator θ* = Φ⁺Y at the linear rate
    1 − η·λ_min⁺(ΦᵀΦ)/n per step (the smallest non-zero eigenvalue): the number of steps needed
    grows with the Gram matrix's condition number.

    Examples
    --------
    With W₁ frozen and W₂(0) = 0, gradient descent converges to the RF model's min-norm
    interpolator:

    >>> from rftheory.data import gaussian_labels, sphere_points
    >>> from rftheory.twolayer import train_two_layer
    >>> X, Y = sphere_points(4, 5, seed=0), gaussian_labels(4, seed=0)
    >>> out = train_two_layer(X, Y, width=64, train_first_layer=False, steps=3000, tol=1e-10)
    >>> out.stop_reason, bool(out.train_loss <= 1e-10)
    ('tolerance', True)
    """
    if loss not in LOSSES:
        raise RFTheoryError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
    steps = _positive_int("steps", steps, 0)
    if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol >= 0):
        raise RFTheoryError(f"tol must be a finite non-negative number, got {tol!r}")
    if not (math.isfinite(lr_scale) and lr_scale > 0):
        raise RFTheoryError(f"lr_scale must be a positive number, got {lr_scale!r}")
    if learning_rate is not None and not (math.isfinite(learning_rate) and learning_rate > 0):
        raise RFTheoryError(f"learning_rate must be a positive number, got {learning_rate!r}")
    if initial is None:
        if getattr(X, "ndim", None) != 2:
            raise ShapeError(f"X must be a 2-D array (n, d), got {getattr(X, 'shape', type(X).__name__)!r}")
        d = X.shape[1]
    else:
        if not isinstance(initial, TwoLayerNetwork):
            raise RFTheoryError(f"initial must be a TwoLayerNetwork, got {type(initial).__name__}")
        d = initial.d
        if loss == "cross_entropy" and n_classes is None:
            n_classes = initial.k
    xp = check_data(X, d)
    n = X.shape[0]
    dev = array_device(X)
    T = encode_targets(Y, loss, n, n_classes=n_classes, xp=xp, dtype=X.dtype, device=dev)
    k = T.shape[1]
    if initial is None:
        if width is None:
            raise RFTheoryError("width is required when no initial network is given")
        initial = init_network(activation, d, width, k, seed=seed, scaling=scaling,
                               last_layer_init=last_layer_init, last_layer_scale=last_layer_scale,
                               xp=xp, dtype=X.dtype, device=dev)
    elif initial.k != k:
        raise ShapeError(f"the labels give k = {k} outputs but the initial network has k = {initial.k}")
    if record_every is None:
        record_every = max(1, steps // 200)
    record_every = _positive_int("record_every", record_every)
    eta = default_learning_rate(initial, X, lr_scale) if learning_rate is None else float(learning_rate)

    W1 = xp.astype(initial.W1, X.dtype)
    W2 = xp.astype(initial.W2, X.dtype)
    c = initial.output_scale
    history: list[tuple[int, float, float]] = []
    first = None
    stop = "steps"
    step = 0
    while True:
        ev = _evaluate(initial.activation, c, W1, W2, X, T, loss, step < steps, train_first_layer)
        first = ev.loss if first is None else first
        # A loss that is non-finite or 1e6 times its start has left the stable region of GD.
        if not math.isfinite(ev.loss) or ev.loss > 1e6 * max(first, 1e-300) + 1.0:
            raise TrainingDivergedError(
                f"gradient descent diverged at step {step} (loss {ev.loss:.3g} from {first:.3g}); "
                f"lower the step size (η = {eta:.3g})")
        recorded = step % record_every == 0 or step == steps or ev.loss <= tol
        if recorded:
            history.append((step, ev.loss, ev.accuracy))
        if ev.loss <= tol:
            stop = "tolerance"
            break
        if step >= steps:
            break
        if recorded and callback is not None and callback(step, ev.loss):
            stop = "callback"
            break
        W2 = W2 - eta * ev.grad_W2
        if train_first_layer:
            W1 = W1 - eta * ev.grad_W1
        step += 1
    if history[-1][0] != step:
        history.append((step, ev.loss, ev.accuracy))
    net = TwoLayerNetwork(initial.activation, W1, W2, initial.scaling)
    return TrainingResult(net, initial, loss, bool(train_first_layer), eta, step, ev.loss,
                          ev.accuracy, tuple(history), stop)
