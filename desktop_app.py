"""Triton AIOS: start the system and open the desktop window (see ``aios.entry.main``).

    python desktop_app.py                 # window (pywebview), or the browser without a GUI
    python desktop_app.py --headless     # serve only; open the printed URL yourself

Installed, the same program is ``triton-aios``.
"""

from __future__ import annotations

import sys

from aios.entry.main import main

if __name__ == "__main__":
    sys.exit(main())
