"""Collection rule for the whole checkout: the JAX-only modules (rftheory/deep, the optional
extra ``rftheory[deep]``) are not collected for doctests where JAX is not installed."""

import importlib.util

collect_ignore = [] if importlib.util.find_spec("jax") else ["rftheory/deep"]
