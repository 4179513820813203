"""The kinds of sweep cells: a fixed registry of the pipeline's cell functions.

A sweep file names a cell kind by its key (``cell = "reconstruct"``); the key maps to the
function itself, never to a name that would be imported, so no user string decides what runs.
The functions live with the science (:mod:`rftheory.cells`); this registry only
says how the report shows their numbers.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Callable, Mapping

from ..cells import label_fit_cell, law_cell, reconstruction_cell

__all__ = ["CELL_KINDS", "CellKind", "Metric"]


@dataclass(frozen=True)
class Metric:
    """A number a cell returns that the report aggregates over seeds and plots.

    ``label`` is the axis label (the paper's symbol); ``log`` puts the axis on a log scale.

    Attributes
    ----------
    name : str
        The result key.
    label : str
        The axis label (LaTeX for matplotlib's mathtext).
    log : bool
        Log scale (default False).
    """

    name: str
    label: str
    log: bool = False


@dataclass(frozen=True)
class CellKind:
    """A kind of sweep cell: the function to call and how to report its results.

    Attributes
    ----------
    function : callable
        The cell: keyword parameters in, a dict of numbers out. Its signature and annotations
        are what a sweep file is checked against. Sweep files only choose a key of
        :data:`CELL_KINDS`, never a function.
    description : str
        One line saying what the cell computes.
    x : str or None
        The report's abscissa: ``"p_over_dn"`` (p/(dn), the reconstruction threshold),
        ``"p_over_n"`` (p/n, the label-fitting threshold) or None (table only).
    metrics : tuple of Metric
        Headline numbers for the table and figure (the JSON report aggregates every numeric key).
    """

    function: Callable[..., dict]
    description: str
    x: str | None
    metrics: tuple[Metric, ...]


_RHO = Metric("rho_abs", r"$\rho$")
_TRAIN_RESIDUAL = Metric("train_residual", r"$\|\Phi\theta^* - Y\| / \|Y\|$", log=True)

#: The cell kinds a sweep file may name, as a fixed table (never extended from user input).
CELL_KINDS: Mapping[str, CellKind] = types.MappingProxyType({
    "reconstruct": CellKind(
        reconstruction_cell,
        "train θ* = Φ⁺Y, reconstruct the training set from (θ*, V), score ρ",
        "p_over_dn", (_RHO, _TRAIN_RESIDUAL)),
    "label_fit": CellKind(
        label_fit_cell,
        "train θ* = Φ⁺Y on sphere data and measure how well the labels are fit",
        "p_over_n", (_TRAIN_RESIDUAL,
                     Metric("gram_min_eig", r"$\lambda_{\min}(\Phi\Phi^\top / p)$", log=True))),
    "law": CellKind(
        law_cell,
        "one point of the law on sphere data: a label fit below p = n, a reconstruct cell from "
        "p = n on (rftheory verify law)",
        "p_over_dn", (_RHO, _TRAIN_RESIDUAL)),
})
