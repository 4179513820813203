"""``python -m verification.sign [--quick] [--seed S] [--out DIR]``: runs :mod:`rftheory.claims.sign`."""

import sys

from rftheory.claims import main_for

if __name__ == "__main__":
    sys.exit(main_for("sign", prog="python -m verification.sign"))
