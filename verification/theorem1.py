"""``python -m verification.theorem1 [--quick] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.theorem1`."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("theorem1", prog="python -m verification.theorem1"))
