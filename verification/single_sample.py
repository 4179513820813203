"""``python -m verification.single_sample [--quick] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.single_sample`."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("single_sample", prog="python -m verification.single_sample"))
