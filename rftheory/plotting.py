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

__all__ = ["PALETTE", "WIDTHS", "SYMBOLS", "STYLE_FILE", "paper_style", "paper_figure",
           "log_values", "mark_floor", "log_ticks", "tidy_log_axis", "panel_label", "legend_above"]

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
    "n_hat_over_n": r"$\hat n/n$",
    "width_ratio": r"$p^{(L)}/(dn)$",
    "lambda_min": r"$\lambda_{\min}$",
    "op_error": r"$\|\Phi\Phi^\top/p - K\|_{\mathrm{op}}$",
}
#: The matplotlib style file shipped with the package.
STYLE_FILE = files("rftheory").joinpath("styles", "rftheory.mplstyle")


@contextlib.contextmanager
def paper_style() -> Iterator[None]:
    """Context in which matplotlib draws with rftheory's style (restores the caller's after)."""
    import matplotlib.pyplot as plt

    with plt.style.context(str(STYLE_FILE)):
        yield


def panel_label(ax: Any, label: str) -> None:
    """Write a panel's letter, ``(a)``, at the top left of ``ax``, as captions refer to panels.

    Parameters
    ----------
    ax : Axes
        The panel.
    label : str
        Its letter (``"a"``) or any short text.
    """
    ax.annotate(f"({label})", xy=(0.0, 1.0), xycoords="axes fraction", xytext=(-22, 3),
                textcoords="offset points", ha="left", va="bottom", fontweight="bold")


def log_values(values: Any, floor: float) -> tuple[Any, Any]:
    """Split values for a log axis: those above ``floor``, and a mask of those at or below it.

    Zeros, negative values and values below the axis' floor cannot be drawn on a log axis;
    instead of letting them vanish, plot the first array and mark the masked points with
    :func:`mark_floor`.

    Parameters
    ----------
    values : array_like
        Values to plot (NaN stays NaN and is neither drawn nor marked).
    floor : float
        The smallest value drawn (> 0).

    Returns
    -------
    shown : numpy.ndarray
        ``values`` with the entries ``<= floor`` replaced by NaN (matplotlib leaves a gap).
    below : numpy.ndarray of bool
        Where ``values <= floor``.

    Examples
    --------
    >>> shown, below = log_values([1e-3, 0.0, -2e-5, 0.5], floor=1e-12)
    >>> shown.tolist(), below.tolist()
    ([0.001, nan, nan, 0.5], [False, True, True, False])
    """
    import numpy as np

    v = np.asarray(values, dtype=float)
    below = np.isfinite(v) & (v <= floor)
    return np.where(below, np.nan, v), below


def mark_floor(ax: Any, x: Any, values: Any, floor: float, *, color: Any = "k",
               label: str | None = None) -> int:
    """Mark the values ``<= floor`` of a log-y panel as open down-triangles on the floor.

    Parameters
    ----------
    ax : Axes
        A panel with a logarithmic y axis whose bottom is at most ``floor``.
    x, values : array_like
        Abscissae and values (the same ones given to :func:`log_values`).
    floor : float
        Where the marks are drawn; state in the caption what it means (e.g. "≤ 0").
    color : color, optional
        Edge colour of the marks (the series' colour).
    label : str, optional
        Legend entry of the marks (given only when any is drawn).

    Returns
    -------
    int
        How many values were marked.
    """
    import numpy as np

    _, below = log_values(values, floor)
    if below.any():
        ax.plot(np.asarray(x, dtype=float)[below], np.full(int(below.sum()), floor), "v",
                mfc="none", mec=color, ms=4, clip_on=False, label=label, zorder=3)
    return int(below.sum())


def log_ticks(ax: Any, values: Any, axis: str = "x", fmt: str = "{:g}",
              min_ratio: float = 1.4) -> None:
    """Ticks of a log axis exactly at ``values`` (the grid's own points), labelled plainly.

    A log axis spanning less than a decade gets one labelled tick or none by default; a grid
    of a few values (p/(dn) = 0.5, 1, 2, 8) reads best with a tick at each.

    Parameters
    ----------
    ax : Axes
        The panel.
    values : array_like
        Tick positions (positive).
    axis : {"x", "y"}
        Which axis.
    fmt : str
        Format of the labels.
    min_ratio : float
        A value closer than this factor to the previous tick is skipped (labels never overlap).
    """
    from matplotlib.ticker import FixedLocator, FixedFormatter, NullLocator

    ticks: list[float] = []
    for v in sorted({float(v) for v in values}):
        if not ticks or v >= min_ratio * ticks[-1]:
            ticks.append(v)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(ticks))
    target.set_major_formatter(FixedFormatter([fmt.format(t) for t in ticks]))
    target.set_minor_locator(NullLocator())


def tidy_log_axis(ax: Any, axis: str = "y") -> None:
    """Readable ticks on a log axis: plain labels at 1, 2, 5 × 10^k when it spans under two decades
    (matplotlib would label every minor tick, or none), powers of ten (at most ~7) otherwise.

    Call it after the data and limits are set.

    Parameters
    ----------
    ax : Axes
        The panel.
    axis : {"x", "y"}
        Which axis (must be logarithmic).
    """
    import math

    from matplotlib.ticker import (FuncFormatter, LogFormatterSciNotation, LogLocator,
                                   NullFormatter, NullLocator)

    target = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    decades = math.log10(hi / lo) if lo > 0 else math.inf
    if decades < 2:
        target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    else:
        target.set_major_locator(LogLocator(base=10, numticks=7))
        target.set_major_formatter(LogFormatterSciNotation())
    target.set_minor_locator(NullLocator() if decades > 8 else LogLocator(base=10, subs="auto"))
    target.set_minor_formatter(NullFormatter())


def legend_above(fig: Any, handles: Any = None, labels: Any = None, *, ncol: int | None = None,
                 ax: Any = None) -> Any:
    """One legend for the whole figure, in a row above the panels (never over the data).

    Parameters
    ----------
    fig : Figure
        A figure drawn with constrained layout (the style's default), which makes room for it.
    handles, labels : list, optional
        Legend entries (default: those of ``ax``, or of the figure's first axes).
    ncol : int, optional
        Columns (default: all entries in one row, at most 5).
    ax : Axes, optional
        The panel whose entries are shown when ``handles`` is not given.

    Returns
    -------
    matplotlib.legend.Legend
        The legend.
    """
    if handles is None:
        handles, labels = (ax or fig.axes[0]).get_legend_handles_labels()
    ncol = min(len(handles), 5) if ncol is None else ncol
    return fig.legend(handles, labels, loc="outside upper center", ncol=max(ncol, 1))


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
    height : float, optional
        Height of the figure in inches (instead of ``aspect``).
    **subplots
        Passed to :func:`matplotlib.pyplot.subplots` (``sharex``, ``squeeze``, ...).

    Returns
    -------
    fig : Figure
        The figure.
    axes : Axes or array of Axes
        Its panels, as :func:`matplotlib.pyplot.subplots` returns them.

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
