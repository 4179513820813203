"""``python -m verification.theorem2 [--quick] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.theorem2`."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("theorem2", prog="python -m verification.theorem2"))
