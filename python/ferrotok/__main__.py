"""`python -m ferrotok`: the same command line as the `ferrotok` script (see `ferrotok.cli`)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
