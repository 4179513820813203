"""``python -m verification.nhat [--quick] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.nhat`."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("nhat", prog="python -m verification.nhat"))
