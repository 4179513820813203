"""Runnable checks of the paper's claims, one module per claim.

Every module ``verification/<claim>.py`` defines

* ``CLAIM`` — its name (``rftheory verify <claim>``),
* ``run(quick: bool = False, seed: int = 0, progress=None) -> dict`` — the measurement, returning a
  JSON-serialisable result (inputs, seeds, numbers, the verdict on the claim),
* ``plot(result: dict, stem: pathlib.Path) -> list[pathlib.Path]`` — figures (PNG + PDF) drawn
  from a result, so they can be redrawn from saved JSON,
* ``summary(result: dict) -> str`` — a short human-readable table,

and is run with ``python -m verification.<claim> [--quick]`` or ``rftheory verify <claim>``;
:func:`verification.common.run_claim` does the saving (``results/<claim>.json`` written atomically,
with package versions) and plotting for both.
"""
