"""``python -m aios_sdk new NAME [--dir apps]`` / ``check PATH`` / ``dev PATH``."""

from __future__ import annotations

import sys

from aios_sdk.scaffold import main

if __name__ == "__main__":
    sys.exit(main())
