"""``python -m verification.headline [--quick | --large] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.headline`."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("headline", prog="python -m verification.headline"))
