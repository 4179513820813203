"""Subcommands of the ``rftheory`` CLI, one module each, discovered by :mod:`rftheory.cli`.

Each public module defines ``register(subparsers)``, which adds its parser and sets
``handler=<function(args) -> int>`` as a default. Shared output helpers live in ``_output``.
"""
