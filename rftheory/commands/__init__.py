"""Subcommands of the ``rftheory`` CLI, one module each, discovered by :mod:`rftheory.cli`.

Each public module defines ``register(subparsers)``, which adds its parser and sets
``handler=handle`` as a default, and ``handle(args) -> int``, the exit status. Helpers shared by
the handlers (number options, ``--plot`` names, progress on stderr) live in ``_common``; output
formatting in :mod:`rftheory.output`. Library code does not live here: a handler checks the
options, calls the library, prints.
"""
