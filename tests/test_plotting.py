"""The shared figure style: shipped with the package, applied in a context, paper widths."""

import matplotlib
import pytest

matplotlib.use("Agg")

from rftheory import plotting
from rftheory.errors import RFTheoryError


def test_style_file_is_shipped_and_restores_the_callers_style():
    import matplotlib.pyplot as plt

    assert plotting.STYLE_FILE.is_file()
    before = plt.rcParams["font.size"]
    with plotting.paper_style():
        assert plt.rcParams["font.size"] == 8
        colours = [c["color"].lower() for c in plt.rcParams["axes.prop_cycle"]]
        assert colours == [c.lower() for c in plotting.PALETTE]
    assert plt.rcParams["font.size"] == before


def test_widths_and_bad_columns():
    import matplotlib.pyplot as plt

    fig, _ = plotting.paper_figure(2, height=2.0)
    assert (fig.get_figwidth(), fig.get_figheight()) == (6.9, 2.0)
    plt.close(fig)
    with pytest.raises(RFTheoryError, match="columns must be 1 or 2"):
        plotting.paper_figure(3)
