"""``python -m verification.twolayer_law [--quick] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.twolayer_law`."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("twolayer_law", prog="python -m verification.twolayer_law"))
