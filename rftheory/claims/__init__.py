"""Checks of the paper's claims, one module per claim, all following one protocol.

Every module ``rftheory/claims/<claim>.py`` defines

* ``CLAIM`` — its name (``rftheory verify <claim>``);
* ``Config`` — a frozen dataclass (:class:`ClaimConfig`: a ``seed`` and the claim's own fields,
  checked on creation, ``config.replace(field=...)`` for variants) and its two instances ``FULL``
  (the default run) and ``QUICK`` (``--quick``, minutes on 2 cores); a claim with a larger run
  adds a third, ``LARGE`` (``--large``: the law over a d × n grid, the headline at n = 100);
* ``run(config=FULL, *, progress=None, ...) -> dict`` — the measurement, returning a
  JSON-serialisable result (inputs, seeds, numbers, the verdict on the claim); ``progress``
  receives one line per finished step; claims that run tasks in parallel also take ``workers``
  (worker processes, default min(2, cores); results never depend on it), and claims that keep
  files between runs (a resumable sweep store) take ``out_dir``;
* ``plot(result, stem) -> list[Path]`` — figures (PNG + PDF) drawn from a result, so they can be
  redrawn from saved JSON;
* ``summary(result) -> str`` — a short human-readable table.

:func:`run_claim` runs one (``QUICK``/``FULL``/``LARGE`` or any config), saves ``results/<claim>.json``
atomically with package versions, and plots; it serves ``rftheory verify <claim>``,
``python -m rftheory.claims.<claim> [--quick | --large]`` and, from a checkout, ``python -m
verification.<claim>`` (the thin scripts of the top-level ``verification/`` folder).
"""

from ._common import CLAIMS, ClaimConfig, claim_module, main_for, run_claim

__all__ = ["CLAIMS", "ClaimConfig", "claim_module", "run_claim", "main_for"]
