"""A small vision transformer behind the same interface as :class:`~rftheory.deep.resnet.ResNet` (JAX).

Architecture (pre-norm, single-head, no biases anywhere, parameter-free layer norms):

* patch embedding: the (C, H, H) image cut into T = (H/P)² non-overlapping P×P patches, each
  flattened channels first (C·P·P values) and mapped by E ∈ R^{w×CP²}, plus a learned position
  embedding ``pos`` ∈ R^{T×w}: t⁰ = patches(x)Eᵀ + pos;
* ``blocks`` (default 2) transformer blocks, each
  t ← t + softmax((ûW_q)(ûW_k)ᵀ/√w)(ûW_v)W_o with û = LN(t), then
  t ← t + ReLU(ûW_1)W_2 with û = LN(t) (MLP hidden width ``mlp_ratio``·w);
* features: body(x) = LN(t) ∈ R^{T×w}, flattened token-major (token 0's w values first);
* head: a bias-free linear map of the flattened tokens, f(x) = ⟨head, body(x)⟩, so
  p^(L) = T·w.

LN(u) = (u − mean(u))/√(var(u) + :data:`LN_EPS`) over the w values of one token (no gain, no
bias). Initialisation (the same fan-in rule as the ResNet's): E N(0, 1/(CP²)), ``pos`` N(0, 1),
W_q, W_k, W_v, W_o, W_1 N(0, 1/w), W_2 N(0, 1/(mlp_ratio·w)), head N(0, 1/(T·w)); drawn with
numpy from the seed, as the ResNet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RFTheoryError, ShapeError
from ..seeding import generator
from .backend import float64, require_jax

__all__ = ["ViT", "LN_EPS"]

#: The layer norms' ε (added to the variance): keeps LN smooth where a token is nearly constant.
LN_EPS = 1e-6
_STREAM_INIT = 2**42 + 32


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise RFTheoryError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class ViT:
    """A bias-free vision transformer on (C, H, H) inputs, token width w; p^(L) = tokens·w.

    Parameters
    ----------
    width : int
        Token width w (every layer); p^(L) = T·w.
    image_shape : tuple of int
        (C, H, H), channels first; P must divide H. Rows of X are images flattened in this order
        (d = C·H·H).
    patch : int
        Patch side P (default 2: on 8×8 inputs, T = 16 tokens).
    blocks : int
        Transformer blocks (attention + MLP), default 2.
    mlp_ratio : int
        Hidden width of the MLP over w.

    Examples
    --------
    A width-4 ViT on 1×8×8 inputs: 16 patches of 2×2, p^(L) = 16·4 = 64.

    >>> from rftheory.deep import ViT
    >>> net = ViT(4, (1, 8, 8))
    >>> net.d, net.tokens, net.p_last
    (64, 16, 64)
    >>> params = net.init(0)
    >>> params["embed"].shape, params["pos"].shape, params["blocks"][0]["w1"].shape
    ((4, 4), (16, 4), (4, 8))
    >>> net.features(params, np.ones((3, 64))).shape
    (3, 64)
    """

    width: int
    image_shape: tuple[int, int, int] = (3, 8, 8)
    patch: int = 2
    blocks: int = 2
    mlp_ratio: int = 2

    def __post_init__(self) -> None:
        shape = tuple(int(s) for s in self.image_shape)
        object.__setattr__(self, "image_shape", shape)
        object.__setattr__(self, "width", _positive_int("width", self.width))
        object.__setattr__(self, "patch", _positive_int("patch", self.patch))
        object.__setattr__(self, "blocks", _positive_int("blocks", self.blocks, 0))
        object.__setattr__(self, "mlp_ratio", _positive_int("mlp_ratio", self.mlp_ratio))
        if len(shape) != 3 or shape[1] != shape[2] or shape[0] < 1 or shape[1] < 1:
            raise RFTheoryError(f"image_shape must be (C, H, H), got {self.image_shape!r}")
        if shape[1] % self.patch:
            raise RFTheoryError(f"the patch side {self.patch} must divide H = {shape[1]}")

    @property
    def d(self) -> int:
        """Input dimension C·H·H."""
        c, h, w = self.image_shape
        return c * h * w

    @property
    def tokens(self) -> int:
        """T = (H/P)², the number of patches."""
        return (self.image_shape[1] // self.patch) ** 2

    @property
    def patch_dim(self) -> int:
        """C·P², the values of one patch."""
        return self.image_shape[0] * self.patch * self.patch

    @property
    def p_last(self) -> int:
        """p^(L) = T·w, the head's parameters."""
        return self.tokens * self.width

    def init_std(self) -> dict[str, float]:
        """The initial standard deviations (module docstring)."""
        w = self.width
        return {"embed": 1.0 / math.sqrt(self.patch_dim), "pos": 1.0, "attn": 1.0 / math.sqrt(w),
                "w1": 1.0 / math.sqrt(w), "w2": 1.0 / math.sqrt(self.mlp_ratio * w),
                "head": 1.0 / math.sqrt(self.p_last)}

    def init(self, rng: Any) -> dict[str, Any]:
        """Initial parameters, a function of the seed alone (numpy, as :meth:`ResNet.init`).

        Parameters
        ----------
        rng : int, numpy.random.SeedSequence, numpy.random.Generator or None
            Seed (SPEC 7).

        Returns
        -------
        dict
            ``{"embed": (w, CP²), "pos": (T, w), "blocks": [{"wq", "wk", "wv", "wo": (w, w),
            "w1": (w, mw), "w2": (mw, w)}, ...], "head": (T·w,)}``, numpy float64; a token row
            vector u maps to u·W.
        """
        gen = generator(rng, _STREAM_INIT)
        std = self.init_std()
        w, m = self.width, self.mlp_ratio * self.width
        embed = gen.standard_normal((w, self.patch_dim)) * std["embed"]
        pos = gen.standard_normal((self.tokens, w)) * std["pos"]
        blocks = []
        for _ in range(self.blocks):
            blk = {k: gen.standard_normal((w, w)) * std["attn"] for k in ("wq", "wk", "wv", "wo")}
            blk["w1"] = gen.standard_normal((w, m)) * std["w1"]
            blk["w2"] = gen.standard_normal((m, w)) * std["w2"]
            blocks.append(blk)
        head = gen.standard_normal(self.p_last) * std["head"]
        return {"embed": embed, "pos": pos, "blocks": blocks, "head": head}

    def patches(self, X: Any) -> Any:
        """The patches of X, shape (n, T, C·P²), row-major over the patch grid (traceable)."""
        jnp = require_jax().numpy
        c, h, _ = self.image_shape
        p, g = self.patch, h // self.patch
        z = jnp.reshape(X, (X.shape[0], c, g, p, g, p))
        z = jnp.transpose(z, (0, 2, 4, 1, 3, 5))
        return jnp.reshape(z, (X.shape[0], g * g, c * p * p))

    def body(self, params: Any, X: Any) -> Any:
        """body(X) ∈ R^{n×T·w} (traceable JAX; ``params["head"]`` is not used).

        Parameters
        ----------
        params : dict
            As :meth:`init` (numpy or JAX arrays).
        X : array, shape (n, d)
            Flattened images.
        """
        jax = require_jax()
        jnp = jax.numpy
        X = jnp.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.d:
            raise ShapeError(f"X must have shape (n, {self.d}), got {tuple(X.shape)}")
        hi = jax.lax.Precision.HIGHEST
        P = {k: v for k, v in params.items() if k != "blocks"}
        t = jnp.einsum("ntc,wc->ntw", self.patches(X), jnp.asarray(P["embed"], X.dtype),
                       precision=hi) + jnp.asarray(P["pos"], X.dtype)
        scale = 1.0 / math.sqrt(self.width)
        for blk in params["blocks"]:
            W = {k: jnp.asarray(v, X.dtype) for k, v in blk.items()}
            u = _layer_norm(jnp, t)
            q, k, v = (jnp.matmul(u, W[name], precision=hi) for name in ("wq", "wk", "wv"))
            att = jax.nn.softmax(jnp.einsum("nsw,ntw->nst", q, k, precision=hi) * scale, axis=-1)
            t = t + jnp.matmul(jnp.einsum("nst,ntw->nsw", att, v, precision=hi), W["wo"],
                               precision=hi)
            u = _layer_norm(jnp, t)
            t = t + jnp.matmul(jax.nn.relu(jnp.matmul(u, W["w1"], precision=hi)), W["w2"],
                               precision=hi)
        return jnp.reshape(_layer_norm(jnp, t), (X.shape[0], self.p_last))

    def apply(self, params: Any, X: Any) -> Any:
        """f(X) = body(X)·head, shape (n,) (traceable JAX)."""
        jnp = require_jax().numpy
        return self.body(params, X) @ jnp.asarray(params["head"], jnp.asarray(X).dtype)

    def features(self, params: Any, X: Any) -> np.ndarray:
        """body(X) in float64 as a numpy array, in one batched pass."""
        with float64():
            return np.asarray(self.body(params, np.asarray(X, dtype=np.float64)))


def _layer_norm(jnp: Any, t: Any) -> Any:
    """Parameter-free layer norm over the last axis."""
    mu = jnp.mean(t, axis=-1, keepdims=True)
    c = t - mu
    return c / jnp.sqrt(jnp.mean(c * c, axis=-1, keepdims=True) + LN_EPS)
