"""Checks of the paper's claims, one module per claim.

Every module ``rftheory/claims/<claim>.py`` defines

* ``CLAIM`` — its name (``rftheory verify <claim>``),
* ``run(quick: bool = False, seed: int = 0, progress=None) -> dict`` — the measurement, returning a
  JSON-serialisable result (inputs, seeds, numbers, the verdict on the claim),
* ``plot(result: dict, stem: pathlib.Path) -> list[pathlib.Path]`` — figures (PNG + PDF) drawn
  from a result, so they can be redrawn from saved JSON,
* ``summary(result: dict) -> str`` — a short human-readable table,

and is run with ``python -m rftheory.claims.<claim> [--quick]``, ``rftheory verify <claim>`` or,
from a checkout, ``python -m verification.<claim>`` (the thin scripts of the top-level
``verification/`` folder); :func:`run_claim` does the saving (``results/<claim>.json`` written
atomically, with package versions) and plotting for all of them.
"""

from ._common import CLAIMS, claim_module, main_for, run_claim

__all__ = ["CLAIMS", "claim_module", "run_claim", "main_for"]
