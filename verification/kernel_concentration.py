"""``python -m verification.kernel_concentration [--quick] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.kernel_concentration`."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("kernel_concentration", prog="python -m verification.kernel_concentration"))
