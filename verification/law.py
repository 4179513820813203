"""``python -m verification.law [--quick] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.law`."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("law", prog="python -m verification.law"))
