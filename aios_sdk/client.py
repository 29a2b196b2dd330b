"""System mode: an app's tool, LLM and push calls go to the system over loopback.

The launcher gives each app ``AIOS_SYSTEM_URL`` and a per-launch secret
``AIOS_APP_TOKEN``; every call carries ``Authorization: Bearer <token>``, so
the system knows which app is calling and applies that app's sandbox and
audit. A confined app reaches the system over its runtime dir's socket.
The connections are kept alive between calls (:mod:`aios_sdk._http`): a tool
call mid-request costs no new connection. Transport errors are mapped to our
exceptions here.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any
from urllib.parse import urlsplit

from aios.errors import LLMError, LLMUnavailable, ToolError, ToolFailed, ToolRefused
from aios_sdk._http import Connections, PeerTimeout, PeerUnreachable, Reply
from aios_sdk.boot import SYSTEM_SOCKET_ENV

log = logging.getLogger(__name__)

SYSTEM_CALL_TIMEOUT = 300.0
"""Seconds. The system enforces each tool's own timeout; this only guards against a hung system."""
CONNECT_TIMEOUT = 5.0
_SNIPPET = 300


RequestException = (PeerTimeout, PeerUnreachable)
"""What a call that got no whole answer raises."""


class SystemClient:
    """Talks to ``AIOS_SYSTEM_URL`` on behalf of one app."""

    def __init__(self, base_url: str, token: str, *, timeout: float = SYSTEM_CALL_TIMEOUT):
        self.base_url = base_url.rstrip("/")
        self._timeout = timeout
        parts = urlsplit(self.base_url)
        self._prefix = parts.path
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
        }
        # confined: straight to the runtime dir's socket, not through the relay
        self._peer = Connections(
            parts.hostname or "127.0.0.1",
            parts.port or 80,
            os.environ.get(SYSTEM_SOCKET_ENV) or None,
        )

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Response:
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode()
        reply = self._peer.request(
            method,
            self._prefix + path,
            data,
            self._headers,
            connect_timeout=CONNECT_TIMEOUT,
            read_timeout=self._timeout,
        )
        return Response(reply)

    def _post(self, path: str, body: dict[str, Any]) -> Response:
        return self._call("POST", path, body)

    # ------------------------------------------------------------ tools

    def call_tool(self, name: str, args: dict[str, Any], session_id: str | None) -> Any:
        body = {"tool": name, "args": args, "session_id": session_id}
        try:
            resp = self._post("/api/sys/tool", body)
        except RequestException as e:
            raise ToolFailed(
                f"{name}: cannot reach the system at {self.base_url}: {type(e).__name__}: {e}"
            ) from e
        reply = _json(resp)
        if resp.status_code != 200 or not isinstance(reply, dict) or "status" not in reply:
            message = _error_text(resp, reply)
            cls: type[ToolError] = ToolRefused if 400 <= resp.status_code < 500 else ToolFailed
            raise cls(f"{name}: the system refused the call: {message}")
        if reply.get("status") == "ok":
            return reply.get("result")
        raise ToolFailed(
            str(reply.get("error") or f"{name} failed"),
            result=reply.get("result"),
            meta=reply.get("meta") if isinstance(reply.get("meta"), dict) else None,
        )

    # -------------------------------------------------------------- llm

    def llm(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        session_id: str | None,
        **kw: Any,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {**kw, "messages": messages, "session_id": session_id}
        if tools is not None:
            body["tools"] = tools
        try:
            resp = self._post("/api/sys/llm", body)
        except RequestException as e:
            raise LLMError(
                f"cannot reach the system at {self.base_url} for the LLM: {type(e).__name__}: {e}"
            ) from e
        reply = _json(resp)
        if resp.status_code != 200 or not isinstance(reply, dict):
            message = _error_text(resp, reply)
            if resp.status_code == 503 or "no llm" in message.lower():
                raise LLMUnavailable(f"no LLM configured in the system: {message}")
            raise LLMError(f"the system's LLM call failed: {message}")
        message_dict = reply.get("message", reply)
        if not isinstance(message_dict, dict):
            raise LLMError(
                f"the system's LLM reply has no assistant message: {str(reply)[:_SNIPPET]}"
            )
        return message_dict

    # ------------------------------------------------------------- push

    def push(self, payload: dict[str, Any], session_id: str | None) -> bool:
        # The body is the view or event itself: the system tells them apart by view_type.
        try:
            resp = self._post("/api/sys/push", payload)
        except RequestException as e:
            log.warning("push failed: cannot reach the system at %s: %s", self.base_url, e)
            return False
        if resp.status_code >= 300:
            log.warning(
                "push refused by the system (HTTP %d): %s",
                resp.status_code,
                _error_text(resp, _json(resp)),
            )
            return False
        return True

    # --------------------------------------------------------------- ui

    def ui(self, ops: list[dict[str, Any]], session_id: str | None) -> dict[str, Any]:
        body = {"ops": ops, "session_id": session_id}
        reply: dict[str, Any] = self._post_object(
            "/api/sys/ui", body, "ui", "the system refused the operation: "
        )
        return reply

    def _post_object(self, path: str, body: dict[str, Any], what: str, refused: str = "") -> Any:
        """POST ``body`` to the system and return its JSON object; a 4xx is ToolRefused,
        anything else that is not 200 with an object (or no answer at all) ToolFailed."""
        try:
            resp = self._post(path, body)
        except RequestException as e:
            raise ToolFailed(
                f"{what}: cannot reach the system at {self.base_url}: {type(e).__name__}: {e}"
            ) from e
        reply = _json(resp)
        if resp.status_code != 200 or not isinstance(reply, dict):
            message = _error_text(resp, reply)
            cls: type[ToolError] = ToolRefused if 400 <= resp.status_code < 500 else ToolFailed
            raise cls(f"{what}: {refused}{message}")
        return reply

    # -------------------------------------------------------- processes

    def processes(self) -> list[dict[str, Any]]:
        return self._host_list("processes")

    def disks(self) -> list[dict[str, Any]]:
        return self._host_list("disks")

    def end_process(self, pid: int, session_id: str | None) -> dict[str, Any]:
        path = f"/api/sys/processes/{int(pid)}/end"
        reply: dict[str, Any] = self._post_object(
            path, {"session_id": session_id}, f"end process {pid}"
        )
        return reply

    def _host_list(self, what: str) -> list[dict[str, Any]]:
        """``GET /api/sys/<what>`` -> its list (the host's processes or disks)."""
        try:
            resp = self._call("GET", f"/api/sys/{what}")
        except RequestException as e:
            raise ToolFailed(
                f"{what}: cannot reach the system at {self.base_url}: {type(e).__name__}: {e}"
            ) from e
        reply = _json(resp)
        listed = reply.get(what) if isinstance(reply, dict) else None
        if resp.status_code != 200 or not isinstance(listed, list):
            message = _error_text(resp, reply)
            cls: type[ToolError] = ToolRefused if 400 <= resp.status_code < 500 else ToolFailed
            raise cls(f"{what}: {message}")
        return listed


class Response:
    """The system's answer to one call."""

    def __init__(self, reply: Reply) -> None:
        self.status_code = reply.status
        self.content = reply.body or b""

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.content)


def _json(resp: Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None


def _error_text(resp: Response, reply: Any) -> str:
    if isinstance(reply, dict) and reply.get("error"):
        return str(reply["error"])
    return f"HTTP {resp.status_code}: {resp.text[:_SNIPPET]!r}"
