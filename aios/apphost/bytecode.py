"""Bytecode for the code every app imports, written once on the host (issue 27).

Every app imports the SDK (``aios_sdk``) and the few ``aios`` modules it is
built on. A confined app sees them read-only and runs with
``PYTHONDONTWRITEBYTECODE``, and the system's own environment may say the same:
without a ``__pycache__`` beside them, every start of every app compiles them
from source again (about 40 ms of a minimal app's start on the 2-core machine).
:func:`compile_shared` writes it once per system start, where the files are
writable; it costs a ``stat`` per file when the bytecode is current, and where
it cannot be written (a read-only install, a bundle without sources) the apps
simply compile as before.
"""

from __future__ import annotations

import compileall
import functools
import logging
from pathlib import Path

from aios.config import PROJECT_ROOT

log = logging.getLogger(__name__)

SHARED = (("aios_sdk", 10), ("aios", 0), ("aios/protocol", 0))
"""The folders apps import from, with how deep below each to compile."""


@functools.cache
def compile_shared(root: Path = PROJECT_ROOT) -> bool:
    """Compile what apps import into ``__pycache__`` (once per process); False when some
    of it could not be written."""
    ok = True
    for folder, depth in SHARED:
        path = root / folder
        if not path.is_dir():
            continue
        try:
            ok = bool(compileall.compile_dir(path, maxlevels=depth, quiet=2)) and ok
        except OSError as e:
            log.info("cannot write bytecode under %s (%s): apps compile it at each start", path, e)
            ok = False
    return ok
