"""The official ResNet of the paper's deep experiments, scaled to the input size (JAX).

Architecture (``iurada/data-reconstruction-law``, at any input side H ≥ 5):

* stem: ``Conv(C, w, kernel H − 4, padding 1, no bias)`` + ReLU, mapping H×H to 7×7
  (H + 2 − (H − 4) + 1 = 7);
* body: ``blocks`` (default 4) residual blocks, each conv3×3 → ReLU → conv3×3 (padding 1, no
  bias, no normalisation) + identity → ReLU;
* head: ``Linear(49w, 1, no bias)``, so p^(L) = 49w.

Initialisation (as the official code): stem N(0, 1/(C·H·H)), convolutions N(0, 1/(9w)), head
N(0, 1/(49w)). The features are body(x) ∈ R^{49w}, flattened channels first (C, 7, 7) as in
PyTorch, and f(x) = ⟨head, body(x)⟩.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RFTheoryError, ShapeError
from ..seeding import generator
from .backend import float64, require_jax

__all__ = ["ResNet", "SPATIAL", "IM2COL_MAX"]

#: Side of the stem's output map (7×7, as the official network on 32×32 inputs).
SPATIAL = 7
_STREAM_INIT = 2**42 + 29


@dataclass(frozen=True)
class ResNet:
    """The official bias-free ResNet for inputs of shape (C, H, H), of width w.

    Parameters
    ----------
    width : int
        Channels w of every layer; p^(L) = 49w.
    image_shape : tuple of int
        (C, H, H), channels first; H ≥ 5. Rows of X are images flattened in this order
        (d = C·H·H).
    blocks : int
        Residual blocks (4 in the official network).
    conv : {"im2col", "lax"}
        How convolutions are computed: ``"im2col"`` (the default: products with a constant 0/1
        shift tensor, then with the kernel — two ``einsum``; the stem falls back to lax when its
        tensor would exceed :data:`IM2COL_MAX` entries, i.e. at large H) or ``"lax"``
        (``jax.lax.conv_general_dilated``). Both give the same numbers up to
        rounding (``tests/test_deep.py``). im2col is the default on these small inputs because
        XLA's CPU compiler took 13.5 s of CPU to compile one float64 output VJP of the lax
        version at w = 5 (4.8 s at w = 3, 1.7 s at w = 21; jax 0.10.2), and a claim compiles
        its functions once per width. Inputs are still 2-D; slices of padded views (the first
        im2col tried) made the VJP slow to compile too (6.5 s at w = 1).

    Examples
    --------
    A width-2 network on 1×8×8 inputs: the stem kernel is 8 − 4 = 4, the map 7×7, p^(L) = 98.

    >>> from rftheory.deep import ResNet
    >>> net = ResNet(2, (1, 8, 8))
    >>> net.d, net.kernel, net.p_last
    (64, 4, 98)
    >>> params = net.init(0)
    >>> params["stem"].shape, params["blocks"][0][0].shape, params["head"].shape
    ((2, 1, 4, 4), (2, 2, 3, 3), (98,))
    >>> net.features(params, np.ones((3, 64))).shape
    (3, 98)
    """

    width: int
    image_shape: tuple[int, int, int] = (3, 8, 8)
    blocks: int = 4
    conv: str = "im2col"

    def __post_init__(self) -> None:
        shape = tuple(int(s) for s in self.image_shape)
        object.__setattr__(self, "image_shape", shape)
        if len(shape) != 3 or shape[1] != shape[2] or shape[0] < 1 or shape[1] < 5:
            raise RFTheoryError(f"image_shape must be (C, H, H) with H >= 5, got {self.image_shape!r}")
        if isinstance(self.width, bool) or int(self.width) != self.width or self.width < 1:
            raise RFTheoryError(f"width must be a positive integer, got {self.width!r}")
        if isinstance(self.blocks, bool) or int(self.blocks) != self.blocks or self.blocks < 0:
            raise RFTheoryError(f"blocks must be a non-negative integer, got {self.blocks!r}")
        if self.conv not in ("im2col", "lax"):
            raise RFTheoryError(f"conv must be 'im2col' or 'lax', got {self.conv!r}")
        object.__setattr__(self, "width", int(self.width))
        object.__setattr__(self, "blocks", int(self.blocks))

    @property
    def d(self) -> int:
        """Input dimension C·H·H."""
        c, h, w = self.image_shape
        return c * h * w

    @property
    def kernel(self) -> int:
        """Side of the stem's kernel, H − 4 (padding 1 then gives a 7×7 map)."""
        return self.image_shape[1] - 4

    @property
    def p_last(self) -> int:
        """p^(L) = 49w, the head's parameters."""
        return SPATIAL * SPATIAL * self.width

    def init_std(self) -> dict[str, float]:
        """The initial standard deviations: stem 1/√(C·H·H), convs 1/√(9w), head 1/√(49w)."""
        c, h, _ = self.image_shape
        return {"stem": 1.0 / math.sqrt(c * h * h), "conv": 1.0 / math.sqrt(9 * self.width),
                "head": 1.0 / math.sqrt(self.p_last)}

    def init(self, rng: Any) -> dict[str, Any]:
        """Initial parameters, a function of the seed alone.

        Parameters
        ----------
        rng : int, numpy.random.SeedSequence, numpy.random.Generator or None
            Seed (SPEC 7). Drawn with numpy's ``default_rng([seed, stream])``, not JAX's PRNG:
            JAX changed its default random bits in 0.5 (``jax_threefry_partitionable``), so one
            PRNGKey would give different networks on the CPU and GPU machines' JAX versions.

        Returns
        -------
        dict
            ``{"stem": (w, C, k, k), "blocks": [(conv1, conv2), ...] each (w, w, 3, 3),
            "head": (49w,)}``, numpy float64.
        """
        gen = generator(rng, _STREAM_INIT)
        std = self.init_std()
        c, w, k = self.image_shape[0], self.width, self.kernel
        stem = gen.standard_normal((w, c, k, k)) * std["stem"]
        blocks = [(gen.standard_normal((w, w, 3, 3)) * std["conv"],
                   gen.standard_normal((w, w, 3, 3)) * std["conv"]) for _ in range(self.blocks)]
        head = gen.standard_normal(self.p_last) * std["head"]
        return {"stem": stem, "blocks": blocks, "head": head}

    def body(self, params: Any, X: Any) -> Any:
        """body(X) ∈ R^{n×49w} (traceable JAX; ``params["head"]`` is not used).

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
        h = jnp.reshape(X, (X.shape[0],) + self.image_shape)
        h = jax.nn.relu(_conv(jax, self.conv, h, jnp.asarray(params["stem"], X.dtype)))
        for w1, w2 in params["blocks"]:
            z = jax.nn.relu(_conv(jax, self.conv, h, jnp.asarray(w1, X.dtype)))
            h = jax.nn.relu(_conv(jax, self.conv, z, jnp.asarray(w2, X.dtype)) + h)
        return jnp.reshape(h, (X.shape[0], self.p_last))

    def apply(self, params: Any, X: Any) -> Any:
        """f(X) = body(X)·head, shape (n,) (traceable JAX)."""
        jnp = require_jax().numpy
        return self.body(params, X) @ jnp.asarray(params["head"], jnp.asarray(X).dtype)

    def features(self, params: Any, X: Any) -> np.ndarray:
        """body(X) in float64 as a numpy array, in one batched pass."""
        with float64():
            return np.asarray(self.body(params, np.asarray(X, dtype=np.float64)))


#: Largest shift tensor (entries) of the im2col path; above it (the stem at large H) lax is used.
IM2COL_MAX = 2**22


@functools.lru_cache(maxsize=16)
def _shifts(side: int, k: int) -> np.ndarray:
    """S[q, s, t] = 1 where output pixel t reads input pixel s through kernel tap q (padding 1)."""
    out = side + 3 - k
    S = np.zeros((k * k, side * side, out * out))
    for i in range(k):
        for j in range(k):
            for x in range(out):
                for y in range(out):
                    u, v = x + i - 1, y + j - 1
                    if 0 <= u < side and 0 <= v < side:
                        S[i * k + j, u * side + v, x * out + y] = 1.0
    return S


def _conv(jax: Any, how: str, h: Any, w: Any) -> Any:
    """Stride-1 convolution with padding 1 (NCHW, OIHW), at the highest precision (no TF32)."""
    side, k = h.shape[2], w.shape[2]
    if how == "im2col" and k * k * side * side * (side + 3 - k) ** 2 <= IM2COL_MAX:
        jnp = jax.numpy
        n, c = h.shape[:2]
        out_ch = w.shape[0]
        out = side + 3 - k
        S = jnp.asarray(_shifts(side, k), h.dtype)  # (k², side², out²) 0/1
        cols = jnp.einsum("ncs,qst->ncqt", jnp.reshape(h, (n, c, side * side)), S,
                          precision=jax.lax.Precision.HIGHEST)
        y = jnp.einsum("ncqt,ocq->not", cols, jnp.reshape(w, (out_ch, c, k * k)),
                       precision=jax.lax.Precision.HIGHEST)
        return jnp.reshape(y, (n, out_ch, out, out))
    return jax.lax.conv_general_dilated(h, w, (1, 1), ((1, 1), (1, 1)),
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                        precision=jax.lax.Precision.HIGHEST)
