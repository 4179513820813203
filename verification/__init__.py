"""Runnable checks of the paper's claims, one thin script per claim.

The claims live in the package, :mod:`rftheory.claims`; each script here only runs one of them,
so that ``python -m verification.<claim> [--quick] [--seed S] [--out DIR]`` works from a checkout
(this folder is not installed). ``rftheory verify <claim>`` and ``python -m rftheory.claims.<claim>``
do the same.
"""
