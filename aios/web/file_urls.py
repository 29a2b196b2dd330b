"""Signed URLs for an app's files and icon, so that no cookie is ever needed.

The desktop page holds the launch token in memory and sends it as a header;
an ``<img>`` cannot send headers, so ``/apps/<id>/files/…`` and
``/apps/<id>/icon`` take ``?exp=<unix time>&sig=<hex>`` instead. The
signature is an HMAC keyed by this launch's token over the app id and the
expiry: it opens that one app's files only, for ``web.file_url_ttl`` seconds.
The page gets one grant per app from ``GET /api/file-grants`` (token needed)
and builds the URLs itself; a view's URL naming another app's files is
refused by the page, and would fail the signature here.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time

_DOMAIN = b"aios-app-files\n"
APP_PATH = re.compile(r"^/apps/([^/]+)/(?:files/.+|icon)$")


def sign(token: str, app_id: str, exp: int) -> str:
    msg = _DOMAIN + app_id.encode() + b"\n" + str(exp).encode()
    return hmac.new(token.encode(), msg, hashlib.sha256).hexdigest()


def grant(token: str, app_id: str, ttl: float, now: float | None = None) -> dict[str, str]:
    """The query parameters that open ``app_id``'s files until now + ttl."""
    exp = int((time.time() if now is None else now) + ttl)
    return {"exp": str(exp), "sig": sign(token, app_id, exp)}


def check(token: str, app_id: str, exp: str, sig: str, now: float | None = None) -> str | None:
    """None when ``sig`` opens ``app_id`` at ``exp`` and ``exp`` is not past; else why not."""
    if not exp.isdigit() or not sig:
        return "app file URL needs ?exp=&sig= (a signed URL from GET /api/file-grants)"
    if int(exp) < (time.time() if now is None else now):
        return "app file URL expired: ask GET /api/file-grants for a new one"
    if not hmac.compare_digest(sig.encode(), sign(token, app_id, int(exp)).encode()):
        return f"app file URL signature invalid for app {app_id!r}"
    return None
