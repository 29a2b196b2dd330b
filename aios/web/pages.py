"""The desktop page and its static files; an app's own files and its icon."""

from __future__ import annotations

import hashlib
import mimetypes
import os

from flask import Blueprint, Response, make_response, request, send_file

from aios.config import PROJECT_ROOT
from aios.errors import PathNotFound, ToolRefused
from aios.host.safe_open import fd_path
from aios.protocol import icon_file
from aios.tools.sandbox import open_workdir_file
from aios.web.guards import token_ok
from aios.web.request import error, system

bp = Blueprint("pages", __name__)

RENDERER_DIR = PROJECT_ROOT / "renderer"
APP_FILE_CSP = "sandbox; default-src 'none'; img-src 'self'; media-src 'self'"
ICON_CSP = "sandbox; default-src 'none'"


@bp.get("/")
def index() -> Response:
    supplied = request.args.get("token", "")
    if supplied and not token_ok(supplied):
        return error(401, "launch token invalid")
    index_file = RENDERER_DIR / "index.html"
    if not index_file.exists():
        return error(500, "renderer/index.html is missing")
    # No cookie: the page keeps the token in memory (and its tab's sessionStorage) and
    # sends it as a header, so no server on another loopback port ever receives it.
    resp = make_response(send_file(index_file, mimetype="text/html", max_age=0))
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.get("/static/<path:rel>")
def static_file(rel: str) -> Response:
    target = (RENDERER_DIR / rel).resolve()
    if RENDERER_DIR.resolve() not in target.parents or not target.is_file():
        return error(404, f"no such file: {rel}")
    mime = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    if target.suffix == ".js":
        mime = "text/javascript"
    return send_file(target, mimetype=mime, max_age=0)


@bp.get("/apps/<app_id>/files/<path:rel>")
def app_file(app_id: str, rel: str) -> Response:
    """An app's own files, from its workdir only, never executable in our origin."""
    try:
        ctx = system().tool_context(app_id)
    except KeyError:
        return error(404, f"no app named {app_id!r}")
    try:
        fd, st = open_workdir_file(ctx.policy, rel)
    except PathNotFound as e:
        return error(404, str(e))
    except ToolRefused as e:  # outside the workdir, or a hard link
        return error(403, str(e))
    try:
        # The fd was opened race-free; /proc/self/fd/<fd> reaches that very file.
        resp = send_file(
            fd_path(fd),
            mimetype=mimetypes.guess_type(rel)[0],
            download_name=rel.rsplit("/", 1)[-1],
            conditional=True,
            etag=f"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}",
            max_age=0,
        )
    finally:
        os.close(fd)
    resp.headers["Content-Security-Policy"] = APP_FILE_CSP
    return resp


@bp.get("/apps/<app_id>/icon")
def app_icon(app_id: str) -> Response:
    """The image file an app's manifest names as its icon, as read when the app was validated."""
    record = system().launcher.get(app_id)
    if record is None or record.manifest is None:
        return error(404, f"no app named {app_id!r}")
    rel = icon_file(record.manifest.icon)
    if rel is None:
        return error(404, f"app {app_id!r} names no icon file (icon {record.manifest.icon!r})")
    if record.icon is None:
        return error(404, f"icon file {rel!r} not found in the folder of app {app_id!r}")
    # The bytes read (once, without following links) when the app was validated.
    resp = Response(
        record.icon, mimetype=mimetypes.guess_type(rel)[0] or "application/octet-stream"
    )
    resp.set_etag(hashlib.sha256(record.icon).hexdigest()[:32])
    resp.headers["Cache-Control"] = "no-cache"
    resp.headers["Content-Security-Policy"] = ICON_CSP
    resp.make_conditional(request)
    return resp
