"""One figure style for every figure rftheory draws: paper widths, a colour-blind-safe palette.

Every figure the package produces (claim figures, ``rftheory reconstruct --plot``, sweep reports,
activation reports) is drawn inside :func:`paper_style` and sized by :func:`paper_figure`, so
they share fonts, widths and colours, and look like figures a paper would print.

* Widths: :data:`WIDTHS` — ``1`` column of a two-column paper (3.35 in) or ``2`` columns /
  a single-column paper's text width (6.9 in).
* Palette: :data:`PALETTE`, Okabe & Ito's eight colours (distinguishable under the common forms
  of colour blindness); the style's colour cycle uses them in this order.
* Symbols: axis labels use the paper's notation through matplotlib's mathtext
  (:data:`SYMBOLS`), e.g. ``SYMBOLS["p_over_dn"]`` is ``$p/(dn)$``.

Examples
--------
>>> from rftheory.plotting import paper_figure, paper_style
>>> with paper_style():
...     fig, ax = paper_figure(columns=1)
...     _ = ax.plot([1, 2, 3], [1, 4, 9])
>>> float(round(fig.get_figwidth(), 2))
3.35
>>> import matplotlib.pyplot as plt; plt.close(fig)
"""

from __future__ import annotations

import contextlib
from importlib.resources import files
from typing import Any, Iterator

__all__ = ["PALETTE", "WIDTHS", "SYMBOLS", "STYLE_FILE", "paper_style", "paper_figure"]

#: Okabe & Ito's colour-blind-safe palette (blue, vermillion, green, purple, orange, sky, yellow,
#: black), the order of the style's colour cycle.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
#: Figure widths in inches by number of columns of a two-column paper.
WIDTHS = {1: 3.35, 2: 6.9}
#: The paper's symbols for axis labels (matplotlib mathtext).
SYMBOLS = {
    "p_over_dn": r"$p/(dn)$",
    "p_over_n": r"$p/n$",
    "p": r"$p$",
    "rho": r"$\rho$",
    "mu_k": r"$|\mu_k|$",
    "k": r"$k$",
    "loss": r"$\mathcal{L}(\hat X)$",
    "train_residual": r"$\|\Phi\theta^* - Y\|/\|Y\|$",
    "delta": r"$\delta$",
}
#: The matplotlib style file shipped with the package.
STYLE_FILE = files("rftheory").joinpath("styles", "rftheory.mplstyle")


@contextlib.contextmanager
def paper_style() -> Iterator[None]:
    """Context in which matplotlib draws with rftheory's style (restores the caller's after)."""
    import matplotlib.pyplot as plt

    with plt.style.context(str(STYLE_FILE)):
        yield


def paper_figure(columns: int = 1, *, aspect: float = 0.65, nrows: int = 1, ncols: int = 1,
                 height: float | None = None, **subplots: Any) -> tuple[Any, Any]:
    """A figure of a paper's column width with a grid of axes (``plt.subplots``).

    Parameters
    ----------
    columns : {1, 2}
        Width: one column (3.35 in) or two (6.9 in).
    aspect : float
        Height of one row of panels over the figure's width divided by ``ncols``; ignored
        when ``height`` (inches) is given.
    nrows, ncols : int
        Panels.
    **subplots
        Passed to :func:`matplotlib.pyplot.subplots` (``sharex``, ``squeeze``, ...).

    Returns
    -------
    (Figure, Axes or array of Axes)

    Examples
    --------
    >>> with paper_style():
    ...     fig, axes = paper_figure(2, ncols=3)
    >>> axes.shape, float(round(fig.get_figheight(), 2))
    ((3,), 1.5)
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    import matplotlib.pyplot as plt

    from .errors import RFTheoryError

    if columns not in WIDTHS:
        raise RFTheoryError(f"columns must be 1 or 2, got {columns!r}")
    width = WIDTHS[columns]
    if height is None:
        height = aspect * width / ncols * nrows
    return plt.subplots(nrows, ncols, figsize=(width, height), **subplots)
