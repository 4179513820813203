"""rftheory: numerical and symbolic checks of data reconstruction in random-features models.

Reference: Iurada, Bombari, Tommasi, Mondelli, "A Law of Data Reconstruction for Random Features
(and Beyond)", ICLR 2026, arXiv:2509.22214.
"""

from importlib.metadata import PackageNotFoundError, version as _version

from .activations import ACTIVATIONS, Activation, get_activation, parse_activation
from .errors import ActivationError, BackendError, RFTheoryError, ShapeError

try:
    __version__ = _version("rftheory")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

__all__ = [
    "ACTIVATIONS", "Activation", "get_activation", "parse_activation",
    "RFTheoryError", "ActivationError", "ShapeError", "BackendError", "__version__",
]
