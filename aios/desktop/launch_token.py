"""The desktop's launch token, stable across restarts of the same data dir.

A page opened with ``/?token=…`` keeps its cookie when the system restarts; with a
fresh random token per start every such page got 401 forever. So the token lives in
``<data_dir>/token`` (mode 0600, written atomically) and is reused until the user asks
for a new one (``desktop_app.py --new-token``). ``AIOS_TOKEN`` in the environment
still wins (tests, scripts) and is never written down.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from pathlib import Path

from aios.errors import AIOSError

log = logging.getLogger(__name__)

TOKEN_FILE = "token"
TOKEN_BYTES = 24
"""Random bytes per token (32 URL-safe characters)."""
FILE_MODE = 0o600
_VALID = re.compile(r"^[A-Za-z0-9_-]{16,256}$")


def launch_token(data_dir: Path, *, new: bool = False) -> str:
    """The token stored in ``data_dir``; a new one written there if ``new``, none or unreadable."""
    path = data_dir / TOKEN_FILE
    if not new:
        stored = _read(path)
        if stored is not None:
            return stored
    token = secrets.token_urlsafe(TOKEN_BYTES)
    _write(path, token)
    log.info("new launch token written to %s", path)
    return token


def _read(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        log.warning("launch token file %s unreadable (%s): writing a new one", path, e)
        return None
    if not _VALID.match(text):
        log.warning("launch token file %s is not a token: writing a new one", path)
        return None
    if path.stat().st_mode & 0o777 != FILE_MODE:
        path.chmod(FILE_MODE)
    return text


def _write(path: Path, token: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, FILE_MODE)  # O_CREAT's mode is masked by the umask
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise AIOSError(f"cannot write the launch token to {path}: {e.strerror or e}") from e
