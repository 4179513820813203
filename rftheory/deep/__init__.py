"""Deep feature maps for the law of data reconstruction: the official ResNet, trained by
small-step gradient descent, attacked through its body (JAX; ``pip install 'rftheory[deep]'``).

The paper's "and Beyond" part: for a network f(x) = ⟨head, body(x)⟩ trained by full-batch
gradient descent, θ = head − head(0) is a combination of the per-sample last-layer gradients
body_t(x_i) over the run; when the body barely moves it lies in the span of the *final* features
body(X), and the training set can be recovered from (body, θ) by the projection loss once
p^(L) ≳ dn (p^(L) the number of head parameters).

Modules
-------
:mod:`rftheory.deep.backend`
    JAX import and float64 scope (:func:`~rftheory.deep.backend.float64`).
:mod:`rftheory.deep.resnet`
    :class:`~rftheory.deep.resnet.ResNet`, the official architecture scaled to the input size.
:mod:`rftheory.deep.vit`
    :class:`~rftheory.deep.vit.ViT`, a small bias-free vision transformer (p^(L) = tokens × width)
    behind the same interface.
:mod:`rftheory.deep.train`
    Small-step full-batch GD (step from the loss curvature) and the span check.
:mod:`rftheory.deep.attack`
    The projection loss in JAX and the reconstruction through the body (Levenberg–Marquardt with
    matrix-free Lanczos steps on JVPs/VJPs, one Krylov basis for every damping, and a first-order
    baseline).

Importing this package imports JAX; nothing else in rftheory does.
"""

from .backend import float64, require_jax
from .resnet import ResNet
from .vit import ViT
from .train import DeepTrained, ThetaNotInSpanError, check_span, train_gd
from .attack import DeepReconstruction, projection_loss, reconstruct

__all__ = ["float64", "require_jax", "ResNet", "ViT", "DeepTrained", "ThetaNotInSpanError",
           "check_span", "train_gd", "DeepReconstruction", "projection_loss", "reconstruct"]
