"""``python -m verification.deep_law [--quick] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.deep_law` (needs ``rftheory[deep]``)."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("deep_law", prog="python -m verification.deep_law"))
