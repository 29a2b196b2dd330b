"""``/api/memories`` and ``/api/self/<name>`` (DESIGN §15), for the desktop page.

The user sees what the system keeps about them and corrects it: search and filter,
add, edit, pin, delete, accept or reject what was proposed; and edits the self files
(SOUL, USER, AGENTS, MEMORY). Apps never reach these routes (the launch token guards
them, aios/web/guards.py): an app has the memory tools, scoped to itself.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from aios.errors import BadRequest
from aios.web.request import int_arg, json_body, system

bp = Blueprint("memory_api", __name__, url_prefix="/api")

LIST_PAGE = 100
LIST_PAGE_MAX = 1000
EDITABLE = ("text", "tags", "pinned")
"""What ``PATCH /api/memories/<id>`` changes."""


def _memory() -> Any:
    return system().memory


@bp.get("/memories")
def list_memories() -> Response:
    """``?scope=&state=&source=&q=&limit=&offset=``: newest first; ``q`` filters by text
    (the same search the assistant uses when ``search=1``, best first)."""
    args = request.args
    q = args.get("q", "").strip()
    scope = args.get("scope") or None
    if q and args.get("search") in ("1", "true"):
        scopes = [scope] if scope else _scopes()
        found = _memory().memories.search(
            q, scopes=scopes, k=int_arg("limit", 1, 20, 10), touch=False
        )
        return jsonify({"memories": found, **_memory().status()})
    rows = _memory().listing(
        scope=scope,
        state=args.get("state") or None,
        source=args.get("source") or None,
        q=q or None,
        limit=int_arg("limit", 1, LIST_PAGE_MAX, LIST_PAGE),
        offset=int_arg("offset", 0, None, 0),
    )
    return jsonify({"memories": rows, **_memory().status()})


def _scopes() -> list[str]:
    return sorted({str(m["scope"]) for m in _memory().listing(limit=LIST_PAGE_MAX)} | {"user"})


@bp.post("/memories")
def add_memory() -> tuple[Response, int]:
    body = json_body()
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("field 'text' (what to remember) is required")
    tags = body.get("tags", [])
    if not isinstance(tags, list):
        raise BadRequest("field 'tags' must be a list of words")
    scope = body.get("scope", "user")
    return jsonify(_memory().add(text, tags=tags, scope=scope)), 201


@bp.patch("/memories/<memory_id>")
def edit_memory(memory_id: str) -> Response:
    body = json_body()
    unknown = sorted(set(body) - set(EDITABLE))
    if unknown:
        raise BadRequest(f"cannot change {', '.join(unknown)}: a memory's {', '.join(EDITABLE)}")
    if not body:
        raise BadRequest(f"nothing to change: give one of {', '.join(EDITABLE)}")
    return jsonify(_memory().update(memory_id, **body))


@bp.delete("/memories/<memory_id>")
def delete_memory(memory_id: str) -> Response:
    return jsonify(_memory().delete(memory_id))


@bp.post("/memories/<memory_id>/accept")
def accept_memory(memory_id: str) -> Response:
    return jsonify(_memory().accept(memory_id))


@bp.post("/memories/<memory_id>/reject")
def reject_memory(memory_id: str) -> Response:
    return jsonify(_memory().reject(memory_id))


def _self_name(name: str) -> str:
    """ "soul", "SOUL.md" → "SOUL" (the self files check the name itself)."""
    return name[:-3].upper() if name.lower().endswith(".md") else name.upper()


@bp.get("/self/<name>")
def read_self(name: str) -> Response:
    name = _self_name(name)
    return jsonify({"name": name, "text": _memory().read_self(name)})


@bp.put("/self/<name>")
def write_self(name: str) -> Response:
    body = json_body()
    text = body.get("text")
    if not isinstance(text, str):
        raise BadRequest("field 'text' (the file's new content) is required")
    name = _self_name(name)
    _memory().write_self(name, text)
    return jsonify({"name": name, "text": _memory().read_self(name)})
