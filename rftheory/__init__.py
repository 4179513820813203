"""rftheory: numerical and symbolic checks of data reconstruction in random-features models.

Reference: Iurada, Bombari, Tommasi, Mondelli, "A Law of Data Reconstruction for Random Features
(and Beyond)", ICLR 2026, arXiv:2509.22214.
"""

from importlib.metadata import PackageNotFoundError, version as _version
from typing import Any

from .errors import ActivationError, BackendError, RFTheoryError, ShapeError

try:
    __version__ = _version("rftheory")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

_LAZY = {"ACTIVATIONS", "Activation", "get_activation", "parse_activation"}


def __getattr__(name: str) -> Any:
    # rftheory.activations imports sympy and scipy (~1 s): imported when first used, so that
    # `import rftheory` (and the CLI's --help, --version and refused arguments) stays fast
    if name in _LAZY:
        from . import activations

        return getattr(activations, name)
    raise AttributeError(f"module 'rftheory' has no attribute {name!r}")

__all__ = [
    "ACTIVATIONS", "Activation", "get_activation", "parse_activation",
    "RFTheoryError", "ActivationError", "ShapeError", "BackendError", "__version__",
]
