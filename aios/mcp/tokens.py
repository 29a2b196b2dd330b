"""The bearer tokens MCP clients use to reach the desktop (DESIGN §17 "Server").

The launch token opens the whole desktop; an MCP client (Claude Desktop, goose,
an IDE) gets its own token instead, created in Settings → MCP server, that opens only
``/mcp`` and only the tools it is scoped to:

- ``instruction``: the user's instruction, routed as if typed;
- ``app.*`` (every running app) or ``app.<id>`` (one app);
- ``memory_search``: the user's memories (also needs ``mcp_server.memory_search``).

A token is shown once, when it is made. What is kept in
``<data_dir>/mcp_tokens.json`` (mode 0600, written whole or not at all) is its
SHA-256: a token is 32 random URL-safe characters, so a plain hash is enough and
a leaked file opens nothing. Every lookup reads the current list, so a revoked
token is refused on its next call.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aios.errors import AIOSError, BadRequest, NotFound

log = logging.getLogger(__name__)

TOKENS_FILE = "mcp_tokens.json"
TOKEN_PREFIX = "aios_mcp_"
"""Every MCP token starts with this, so one pasted in the wrong place is recognised."""
TOKEN_BYTES = 24
FILE_MODE = 0o600
NAME_MAX_CHARS = 60
MAX_TOKENS = 100
SCOPES = ("instruction", "app.*", "memory_search")
"""The scopes a token may hold besides ``app.<id>`` for one app."""
DEFAULT_SCOPES = ("instruction", "app.*")
_APP_SCOPE = re.compile(r"^app\.[A-Za-z0-9_-]{1,64}$")
_NAME = re.compile(r"^[^\x00-\x1f\x7f]+$")


@dataclass(frozen=True)
class McpToken:
    """One token as kept (without the secret): who it is for and what it may call."""

    id: str
    name: str
    """The client it was made for ("Claude Desktop"): named in the audit and the panel."""
    scopes: tuple[str, ...]
    created: float
    session_id: str | None = None
    """The conversation its calls go to (made at its first call)."""

    def allows(self, tool: str) -> bool:
        """May this token call ``tool`` (``instruction``, ``app.<id>``, ``memory_search``)?"""
        if tool in self.scopes:
            return True
        return tool.startswith("app.") and "app.*" in self.scopes

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "scopes": list(self.scopes),
            "created": self.created,
            "session_id": self.session_id,
        }


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_scopes(raw: Any) -> tuple[str, ...]:
    """``raw`` as a list of scopes; BadRequest naming the first that does not exist."""
    if raw is None:
        return DEFAULT_SCOPES
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise BadRequest("field 'scopes' must be a list of tool names")
    for s in raw:
        if s not in SCOPES and not _APP_SCOPE.match(s):
            raise BadRequest(
                f"scope {s!r} does not exist: use instruction, app.*, app.<id> or memory_search"
            )
    return tuple(dict.fromkeys(raw))


def check_name(raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip():
        raise BadRequest("field 'name' (the client this token is for) is required")
    name = raw.strip()
    if len(name) > NAME_MAX_CHARS or not _NAME.match(name):
        raise BadRequest(
            f"field 'name' must be at most {NAME_MAX_CHARS} characters, without control characters"
        )
    return name


class McpTokens:
    """The tokens in ``<data_dir>/mcp_tokens.json``: create, list, revoke, verify."""

    def __init__(self, data_dir: Path, clock: Any = time.time):
        self.path = data_dir / TOKENS_FILE
        self._clock = clock
        self._lock = threading.Lock()

    # ------------------------------------------------------------ the API

    def create(self, name: Any, scopes: Any = None) -> dict[str, Any]:
        """A new token: its public form plus ``token``, the secret, shown this once."""
        record = McpToken(
            id=f"mcpt_{secrets.token_hex(6)}",
            name=check_name(name),
            scopes=check_scopes(scopes),
            created=self._clock(),
        )
        secret = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
        with self._lock:
            rows = self._read()
            if len(rows) >= MAX_TOKENS:
                raise BadRequest(f"at most {MAX_TOKENS} MCP tokens: revoke one first")
            rows.append({**record.public(), "hash": _digest(secret)})
            self._write(rows)
        log.info(
            "MCP token %s created for %r (%s)", record.id, record.name, ",".join(record.scopes)
        )
        return {**record.public(), "token": secret}

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            return [_record(r).public() for r in self._read()]

    def revoke(self, token_id: str) -> dict[str, Any]:
        with self._lock:
            rows = self._read()
            kept = [r for r in rows if r.get("id") != token_id]
            if len(kept) == len(rows):
                raise NotFound(f"no MCP token {token_id!r}")
            self._write(kept)
        log.info("MCP token %s revoked", token_id)
        return {"id": token_id, "revoked": True}

    def verify(self, supplied: str | None) -> McpToken | None:
        """The token ``supplied`` is (compared in constant time), or None."""
        if not supplied or not supplied.startswith(TOKEN_PREFIX):
            return None
        digest = _digest(supplied)
        with self._lock:
            rows = self._read()
        found = None
        for r in rows:
            if hmac.compare_digest(str(r.get("hash", "")), digest):
                found = _record(r)
        return found

    def set_session(self, token_id: str, session_id: str) -> None:
        """Remember the conversation a token's calls go to."""
        with self._lock:
            rows = self._read()
            for r in rows:
                if r.get("id") == token_id:
                    r["session_id"] = session_id
            self._write(rows)

    # ------------------------------------------------------------ the file

    def _read(self) -> list[dict[str, Any]]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as e:
            # refusing every token is the safe reading of a damaged file
            log.warning("MCP tokens file %s unreadable (%s): no token is accepted", self.path, e)
            return []
        return [r for r in raw if isinstance(r, dict)] if isinstance(raw, list) else []

    def _write(self, rows: list[dict[str, Any]]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(rows, f, ensure_ascii=False, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, FILE_MODE)
            os.replace(tmp, self.path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise AIOSError(f"cannot write the MCP tokens to {self.path}: {e.strerror or e}") from e


def _record(row: dict[str, Any]) -> McpToken:
    scopes = row.get("scopes")
    return McpToken(
        id=str(row.get("id", "")),
        name=str(row.get("name", "")),
        scopes=tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else (),
        created=float(row.get("created") or 0),
        session_id=row.get("session_id") if isinstance(row.get("session_id"), str) else None,
    )
