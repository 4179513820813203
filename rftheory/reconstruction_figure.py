"""The figure of one reconstruction run: images above their reconstructions, or the loss curve.

:func:`matched_images` pairs a run's training images with their matched reconstructions;
:func:`plot_reconstruction` draws them (image data) or the loss curve L(X̂_t) (synthetic data),
as ``rftheory reconstruct --plot`` does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import RFTheoryError
from .output import save_figure, significant
from .pipeline import ReconstructionRun

__all__ = ["matched_images", "plot_reconstruction"]


def matched_images(run: ReconstructionRun, max_images: int = 12
                   ) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The run's training images and their matched reconstructions, ready to show.

    Parameters
    ----------
    run : ReconstructionRun
        A run on image data.
    max_images : int
        At most this many images (default 12).

    Returns
    -------
    shown : list of int
        The first ``max_images`` training indices that were matched (official ρ).
    originals, reconstructions : numpy.ndarray
        Both image stacks in [0, 1] (:meth:`~rftheory.data.Dataset.to_images`: (k, H, W) grey
        or (k, H, W, 3) colour), each reconstruction with the sign of its match corrected (x̂ or
        −x̂, whichever the official match found closer).

    Raises
    ------
    rftheory.errors.RFTheoryError
        If the data set has no images, or no training image was matched.
    """
    fitted, official = run.fitted, run.matchings["abs"]
    if not fitted.dataset.is_image:
        raise RFTheoryError(f"data set {fitted.data!r} has no images to show")
    shown = [i for i in range(fitted.n) if official.assignment[i] >= 0][:max_images]
    if not shown:
        raise RFTheoryError("no training image was matched to a reconstruction")
    signs = np.where(official.flipped[shown], -1.0, 1.0)[:, None]
    originals = fitted.dataset.to_images(fitted.X[shown])
    recon = fitted.dataset.to_images(signs * run.X_hat[official.assignment[shown]])
    return shown, originals, recon


def plot_reconstruction(run: ReconstructionRun, path: str | Path, *,
                        max_images: int = 12) -> list[Path]:
    """The run's figure as PNG and PDF (a ``.png``/``.pdf`` suffix of ``path`` is replaced).

    Image data (grey or colour): originals (top) above their matched reconstructions (bottom), in
    training order, each reconstruction titled with its per-sample ρ and shown with the sign of
    its official-ρ match corrected. Synthetic data: the loss curve L(X̂_t) on a log scale. Drawn
    in the package's style (:func:`rftheory.plotting.paper_style`).

    Parameters
    ----------
    run : ReconstructionRun
        The run to draw.
    path : str or Path
        Where to write; the suffix is replaced by ``.png`` and ``.pdf``.
    max_images : int
        At most this many images for image data (default 12).

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg")
    from .plotting import SYMBOLS, paper_figure, paper_style

    fitted, official = run.fitted, run.matchings["abs"]
    name, p_over_dn = fitted.features.activation.name, fitted.p_over_dn
    title = (f"{fitted.data}: {name}, n = {fitted.n}, p = {fitted.p} "
             f"(p/(dn) = {significant(p_over_dn)}), ρ = {significant(official.rho)}")
    with paper_style():
        if fitted.dataset.is_image:
            shown, originals, recon = matched_images(run, max_images)
            k = len(shown)
            columns = 1 if k <= 5 else 2
            width = 3.35 if columns == 1 else 6.9
            fig, axes = paper_figure(columns, nrows=2, ncols=k, squeeze=False,
                                     height=2 * width / max(k, 4) + 0.45)
            cmap = "gray_r" if originals.ndim == 3 else None
            for j, i in enumerate(shown):
                axes[0, j].imshow(originals[j], cmap=cmap, interpolation="nearest")
                axes[1, j].imshow(recon[j], cmap=cmap, interpolation="nearest")
                axes[1, j].set_title(significant(official.per_sample[i]), fontsize=6, pad=2)
                for ax in axes[:, j]:
                    ax.set_xticks([])
                    ax.set_yticks([])
            axes[0, 0].set_ylabel(r"$x_i$")
            axes[1, 0].set_ylabel(r"$\hat{x}_{\pi(i)}$")
            fig.suptitle(title)
        else:
            fig, ax = paper_figure(1)
            hist = np.asarray(run.result.history, dtype=float)
            # log axis: exact zeros are drawn at the smallest positive double
            ax.semilogy(np.arange(1, hist.size + 1), np.maximum(hist, np.finfo(float).tiny))
            ax.set_xlabel("step $t$")
            ax.set_ylabel(SYMBOLS["loss"])
            ax.set_title(f"{name}, d = {fitted.d}, n = {fitted.n}, p = {fitted.p}, "
                         f"ρ = {significant(official.rho)}")
        return save_figure(fig, path)


# -- memory, declared next to the code it describes (checked by rftheory.budget) ----------------
