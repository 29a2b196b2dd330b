# Longer than ~500 lines on purpose: one tool whose rules (redirects by hand, the resolved
# address, ports, body caps, save_to) must be read together to see that none of them can be
# bypassed.
"""``http_request``: one HTTP(S) request under the network policy (docs/protocol.md §5).

Result shapes follow DESIGN §5: ``result`` is the body (parsed when the
content-type says JSON, decoded text otherwise, a short description for
binary bodies, ``{"path", "size"}`` with ``save_to``); ``meta`` holds
``status_code``, ``headers``, the final ``url`` and ``elapsed_ms``. A non-2xx
answer raises ``ToolFailed("HTTP 404")`` with the body still in ``result``.

The rules of DESIGN §6, and why they live here and not only in
:func:`aios.tools.sandbox.check_url`:

* Redirects are followed by hand (at most :data:`MAX_REDIRECTS`), so every
  ``Location`` passes ``check_url`` *before* anything is sent to it.
* ``check_url`` judges the URL's spelling. ``127.1``, ``2130706433``,
  ``[::ffff:127.0.0.1]`` or a host name that resolves to this machine are
  spelled differently but reach the same sockets, so every new connection is
  checked again on the address it actually connected to, before a byte of
  the request is written (:class:`_GuardedAdapter`).
* The whole transfer has one wall-clock deadline; connect/read timeouts alone
  let a server that drips one byte per second hold the tool forever.
* Bodies are capped while streaming (decoded size, so a gzip bomb stops too).
* ``save_to`` streams into a temporary file beside the target and renames it
  at the end: on any failure the temporary file is removed and an existing
  file is left as it was. The target's folder is looked up when the body
  arrives, race-free from the workdir's fd (:mod:`aios.host.safe_open`), and the
  temp file and the rename are relative to that folder's fd.

Each call uses a fresh session: no cookies survive the call, proxies from the
environment are ignored (``trust_env = False``).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import logging
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urljoin, urlsplit

import requests
from pydantic import Field, JsonValue, field_validator, model_validator
from requests.adapters import HTTPAdapter
from urllib3 import exceptions as u3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from aios.errors import ToolFailed, ToolRefused
from aios.host import safe_open
from aios.protocol.outbound import BadDestination, canonical_host, card_text, covers, destination
from aios.tools.base import Risk, ToolArgs, ToolContext, ToolOutput, atomic_tool
from aios.tools.sandbox import check_url, escaped, relative_display, resolve_path, workdir_rel

log = logging.getLogger(__name__)

USER_AGENT = "TritonAIOS/0.1"
MAX_REDIRECTS = 5
SAVED_FILE_MODE = 0o644
"""A download is an ordinary file."""
CHUNK_BYTES = 64 * 1024
META_MAX_HEADERS = 100
META_MAX_HEADER_CHARS = 2048
"""``meta.headers`` is bounded: it travels back to the app in every tool_results."""

_Conn = TypeVar("_Conn", bound=HTTPConnection)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_TEXT_TYPES = frozenset(
    {
        "application/javascript",
        "application/ecmascript",
        "application/xml",
        "application/x-www-form-urlencoded",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/graphql",
        "application/x-ndjson",
    }
)

Scalar = str | int | float | bool


class HttpRequestArgs(ToolArgs):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] = "GET"
    url: str = Field(min_length=1, description="http(s) URL")
    headers: dict[str, Scalar] = Field(default_factory=dict)
    params: dict[str, Scalar | list[Scalar] | None] = Field(
        default_factory=dict, description="query parameters, added to the URL"
    )
    body: JsonValue = Field(
        default=None, description="a string is sent as is; any other JSON value as JSON"
    )
    timeout: float | None = Field(
        default=None, gt=0, description="seconds for the whole transfer (capped by config)"
    )
    save_to: str | None = Field(
        default=None, description="file in the workdir to stream the body into"
    )

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.strip().upper() if isinstance(v, str) else v

    @field_validator("url")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()

    @field_validator("headers")
    @classmethod
    def _headers(cls, v: dict[str, Scalar]) -> dict[str, Scalar]:
        for name, value in v.items():
            if not _TOKEN.match(name):
                raise ValueError(f"header name {name!r} is not a valid HTTP token")
            if any(c in str(value) for c in "\r\n\x00"):
                raise ValueError(f"header {name!r}: value contains a line break or NUL")
        return v

    @model_validator(mode="after")
    def _save_needs_body(self) -> HttpRequestArgs:
        if self.save_to is not None and self.method == "HEAD":
            raise ValueError("save_to needs a response body; HEAD has none")
        return self


READ_METHODS = frozenset({"GET", "HEAD"})


def _risk(args: dict[str, Any]) -> Risk:
    method = str(args.get("method") or "GET").upper()
    return "low" if method in READ_METHODS and not args.get("save_to") else "medium"


@atomic_tool(
    "http_request",
    HttpRequestArgs,
    "Send one HTTP(S) request. result: the body (JSON parsed, text decoded) or, "
    "with save_to, {path, size}; meta: status_code, headers, url, elapsed_ms. "
    "Non-2xx answers are errors with the body still in result.",
    timeout=30,
    risk=_risk,
    risks=("low", "medium"),
    describe=card_text,  # a request whole: method, full URL, body size (§14.5)
    offer_words=(
        "http://",
        "https://",
        "www.",
        "网址",
        "网页",
        "链接",
        "下载",
        "url",
        "website",
        "download",
        "api",
    ),  # fmt: skip
)
def http_request(ctx: ToolContext, args: HttpRequestArgs) -> ToolOutput:
    forbidden = frozenset(ctx.forbidden_ports())
    check_url(ctx.policy, args.url, set(forbidden))
    try:
        first = destination(args.url, args.params)  # what the card named (DESIGN §14.5)
    except BadDestination as e:
        raise ToolRefused(f"network policy: {e}") from e
    target = _save_target(ctx, args.save_to) if args.save_to is not None else None
    if target is not None:
        ctx.check_workspace()  # over the workspace quota: refused before any request
    transfer = _Transfer(ctx, args, forbidden, first)
    with transfer.session, transfer.errors_mapped():
        resp = transfer.fetch()
        with contextlib.closing(resp):
            meta = transfer.meta(resp)
            ok = 200 <= resp.status_code < 300
            if target is not None and ok:
                size = transfer.save(resp, target, meta)
                meta["elapsed_ms"] = transfer.elapsed_ms()
                return ToolOutput(
                    {"path": relative_display(ctx.policy, target), "size": size}, meta
                )
            cap = ctx.policy.config.max_http_body_bytes
            data = b"".join(transfer.stream(resp, cap, "tool_sandbox.max_http_body_bytes", meta))
            meta["elapsed_ms"] = transfer.elapsed_ms()
            result = _decode(data, resp, args.method, meta)
    if not ok:
        raise ToolFailed(f"HTTP {resp.status_code}", result=result, meta=meta)
    return ToolOutput(result, meta)


# ------------------------------------------------------------------ transfer


class _Transfer:
    """One call: the session, the deadline, and where the request currently is."""

    def __init__(
        self, ctx: ToolContext, args: HttpRequestArgs, forbidden: frozenset[int], first: str
    ):
        self.ctx = ctx
        self.args = args
        self.forbidden = forbidden
        self.timeout = ctx.timeout("http_request", args.timeout)
        self.t0 = time.monotonic()
        self.deadline = self.t0 + self.timeout
        self.url = args.url
        self.hops = 0
        self.first = first
        self.expect = [first]
        """The destination the current hop was judged for: a connection elsewhere is refused."""
        self.session = _session(forbidden, self.expect)

    def elapsed_ms(self) -> float:
        return round((time.monotonic() - self.t0) * 1000, 1)

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ToolFailed(f"timed out after {self.timeout:g}s ({self.url})")
        return left

    def fetch(self) -> requests.Response:
        """Send the request and follow redirects by hand, checking each hop first."""
        method = self.args.method
        headers = {k: _scalar(v) for k, v in self.args.headers.items()}
        data, ctype = _encode_body(self.args.body)
        if ctype and not _has_header(headers, "content-type"):
            headers["Content-Type"] = ctype
        params: dict[str, Any] | None = _params(self.args.params)
        while True:
            left = self.remaining()
            resp = self.session.request(
                method,
                self.url,
                headers=headers,
                params=params,
                data=data,
                stream=True,
                allow_redirects=False,
                timeout=(left, left),
            )
            location = self.session.get_redirect_target(resp)
            if location is None:
                return resp
            resp.close()
            nxt = urljoin(resp.url, location)
            hop_meta = {"status_code": resp.status_code, "url": resp.url, "location": nxt}
            if self.hops >= MAX_REDIRECTS:
                raise ToolFailed(
                    f"too many redirects (more than {MAX_REDIRECTS}); "
                    f"last one from {resp.url} to {nxt}",
                    meta=hop_meta,
                )
            try:
                check_url(self.ctx.policy, nxt, set(self.forbidden))
                self.expect[0] = self._hop_allowed(nxt)
            except ToolRefused as e:
                raise ToolRefused(f"redirect refused: {e.error}", meta=hop_meta) from e
            # Browser semantics: 303 (and 301/302 after a POST) turn into a body-less GET.
            if (
                resp.status_code == 303
                and method != "HEAD"
                or resp.status_code in (301, 302)
                and method == "POST"
            ):
                method, data = "GET", None
                headers = {
                    k: v
                    for k, v in headers.items()
                    if k.lower() not in ("content-type", "content-length")
                }
            if self.session.should_strip_auth(resp.url, nxt):  # type: ignore[no-untyped-call]
                # Credentials meant for one host must not follow a redirect to another.
                headers = {
                    k: v
                    for k, v in headers.items()
                    if k.lower() not in ("authorization", "proxy-authorization", "cookie")
                }
            params = None  # already part of the URL that redirected
            self.url = nxt
            self.hops += 1

    def _hop_allowed(self, url: str) -> str:
        """A redirect's destination, when it may be followed: the one approved for this
        request, or one granted to the app (DESIGN §14.5: a redirect target is a
        destination too). ToolRefused otherwise: nothing is sent to it."""
        try:
            hop = destination(url)
        except BadDestination as e:
            raise ToolRefused(f"network policy: {e}") from e
        granted = self.ctx.destinations
        if granted is not None and hop != self.first and not covers(granted, hop):
            raise ToolRefused(
                f"{hop} is not a destination granted to {self.ctx.app_id} (this request "
                f"was for {self.first}); request {url} itself to be asked about it"
            )
        return hop

    def meta(self, resp: requests.Response) -> dict[str, Any]:
        headers: dict[str, str] = {}
        for k, v in list(resp.headers.items())[:META_MAX_HEADERS]:
            headers[k] = v if len(v) <= META_MAX_HEADER_CHARS else v[:META_MAX_HEADER_CHARS] + "…"
        return {
            "status_code": resp.status_code,
            "headers": headers,
            "url": resp.url,
            "elapsed_ms": self.elapsed_ms(),
            "redirects": self.hops,
        }

    def stream(
        self,
        resp: requests.Response,
        cap: int,
        rule: str,
        meta: dict[str, Any],
        consequence: str = "",
    ) -> Iterator[bytes]:
        """The decoded body in chunks, within the deadline and the size cap."""
        too_big = ToolFailed(f"response body exceeds {cap} bytes ({rule}){consequence}", meta=meta)
        declared = resp.headers.get("Content-Length", "")
        encoded = resp.headers.get("Content-Encoding", "identity").lower() != "identity"
        if declared.isdigit() and int(declared) > cap and not encoded:
            raise too_big
        total = 0
        while True:
            if self.ctx.cancel is not None and self.ctx.cancel.is_set():
                raise ToolFailed("cancelled by the user; the download was stopped", meta=meta)
            _set_socket_timeout(resp, self.remaining())
            chunk = resp.raw.read1(CHUNK_BYTES, decode_content=True)
            if not chunk:
                return
            total += len(chunk)
            if total > cap:
                raise too_big
            self.remaining()
            yield chunk

    def save(self, resp: requests.Response, target: Path, meta: dict[str, Any]) -> int:
        """Stream into a temp file beside ``target``, then rename it into place."""
        policy = self.ctx.policy
        shown = relative_display(policy, target)
        cap, rule = policy.config.max_file_bytes, "tool_sandbox.max_file_bytes"
        room = self.ctx.check_workspace()
        if room is not None and room < cap:
            cap, rule = room, "what is left of the quota workspace_bytes"
        # The folder is pinned only now, when the body arrives: whatever was
        # swapped in while the request was on its way is looked up race-free.
        root = safe_open.open_root(policy.workdir)
        try:
            dfd, name = safe_open.open_parent(root, workdir_rel(policy, target), create=True)
        except OSError as e:
            if e.errno in (errno.EXDEV, errno.ELOOP):
                raise escaped(shown) from e
            raise ToolFailed(f"cannot save to {shown}: {e.strerror or e}", meta=meta) from e
        finally:
            os.close(root)
        try:
            size = self._save_in(resp, dfd, name, shown, cap, rule, meta)
        finally:
            os.close(dfd)
        self.ctx.wrote(size)
        return size

    def _save_in(
        self,
        resp: requests.Response,
        dfd: int,
        name: str,
        shown: str,
        cap: int,
        rule: str,
        meta: dict[str, Any],
    ) -> int:
        try:
            fd, tmp = safe_open.create_temp(dfd, name, ".part", SAVED_FILE_MODE)
        except OSError as e:
            raise ToolFailed(f"cannot save to {shown}: {e.strerror or e}", meta=meta) from e
        size = 0
        try:
            with os.fdopen(fd, "wb") as f:
                declared = resp.headers.get("Content-Length", "")
                expected = int(declared) if declared.isdigit() else None
                reported = 0.0
                for chunk in self.stream(resp, cap, rule, meta, "; nothing saved"):
                    f.write(chunk)
                    size += len(chunk)
                    now = time.monotonic()
                    if self.ctx.progress is not None and now - reported >= PROGRESS_EVERY:
                        reported = now
                        self.ctx.progress({"bytes": size, "total": expected, "path": shown})
                f.flush()
                os.fchmod(f.fileno(), SAVED_FILE_MODE)  # whatever the umask did
                os.fsync(f.fileno())
            safe_open.replace(dfd, tmp, name)
        except BaseException as e:
            safe_open.unlink_quiet(dfd, tmp)
            if isinstance(e, OSError):
                raise ToolFailed(f"cannot save to {shown}: {e.strerror or e}", meta=meta) from e
            raise
        return size

    @contextlib.contextmanager
    def errors_mapped(self) -> Iterator[None]:
        """requests/urllib3 errors become ToolFailed with a message naming the host."""
        try:
            yield
        except requests.RequestException as e:
            raise ToolFailed(_describe(e, self.url, self.timeout)) from e
        except (TimeoutError, u3.HTTPError) as e:  # from resp.raw.read1 while streaming
            raise ToolFailed(_describe(e, self.url, self.timeout)) from e


PROGRESS_EVERY = 0.5
"""Seconds between two progress reports (bytes saved) of a ``save_to`` download."""


def _describe(e: BaseException, url: str, timeout: float) -> str:
    parts = urlsplit(url)
    host = parts.hostname or url
    try:
        where = f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        where = host
    chain = list(_causes(e))

    def has(*types: type[BaseException]) -> bool:
        return any(isinstance(c, types) for c in chain)

    if has(requests.exceptions.SSLError, u3.SSLError):
        return f"TLS error talking to {where}: {_innermost(chain)}"
    # urllib3's NewConnectionError (and so NameResolutionError) subclasses its
    # ConnectTimeoutError, so the specific causes go before the timeout test.
    if has(u3.NameResolutionError, socket.gaierror):
        return f"cannot resolve host {host!r}"
    if has(ConnectionRefusedError):
        return f"connection refused by {where} (nothing is listening there)"
    if has(requests.exceptions.Timeout, u3.TimeoutError, TimeoutError):
        return f"timed out after {timeout:g}s ({url})"
    if has(u3.NewConnectionError):
        return f"cannot connect to {where}: {_innermost(chain)}"
    if has(requests.exceptions.ContentDecodingError, u3.DecodeError):
        return f"cannot decode the response body from {where} (Content-Encoding)"
    if has(
        requests.exceptions.ChunkedEncodingError,
        u3.ProtocolError,
        requests.exceptions.ConnectionError,
    ):
        return f"connection to {where} broke before the response was complete: {_innermost(chain)}"
    if has(
        requests.exceptions.InvalidURL,
        requests.exceptions.InvalidSchema,
        requests.exceptions.MissingSchema,
        u3.LocationParseError,
    ):
        return f"invalid URL {url!r}: {_innermost(chain)}"
    return f"request to {where} failed: {_innermost(chain)}"


def _causes(e: BaseException) -> Iterator[BaseException]:
    """The exception, what it wraps (urllib3 MaxRetryError.reason, args) and its causes."""
    seen: set[int] = set()
    todo: list[BaseException] = [e]
    while todo:
        cur = todo.pop(0)
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        yield cur
        reason = getattr(cur, "reason", None)
        extra = [reason, cur.__cause__, cur.__context__, *cur.args]
        todo.extend(x for x in extra if isinstance(x, BaseException))


def _innermost(chain: list[BaseException]) -> str:
    last = chain[-1]
    return str(last) or type(last).__name__


# ------------------------------------------------------------------- session


def _session(forbidden: frozenset[int], expect: list[str]) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # no proxies, no .netrc credentials from the environment
    session.headers["User-Agent"] = USER_AGENT
    adapter = _GuardedAdapter(forbidden, expect)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class _GuardedAdapter(HTTPAdapter):
    """An adapter whose connections check the address they reached before use."""

    def __init__(self, forbidden: frozenset[int], expect: list[str]):
        self._forbidden = forbidden  # set before super() calls init_poolmanager
        self._expect = expect
        super().__init__(max_retries=0)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _guarded_pools(self._forbidden, self._expect)


def _guarded_pools(
    forbidden: frozenset[int], expect: list[str]
) -> dict[str, type[HTTPConnectionPool]]:
    def guard(base: type[_Conn]) -> type[_Conn]:
        class Guarded(base):  # type: ignore[valid-type,misc]
            def _new_conn(self) -> socket.socket:
                # The host urllib3 connects to is the one that was judged, or nothing is
                # sent (two URL parsers reading one text differently cannot split them).
                if canonical_host(str(self.host)) != expect[0]:
                    raise ToolRefused(
                        f"network policy: the request would go to {self.host}, not to "
                        f"{expect[0]} as its URL reads"
                    )
                sock: socket.socket = super()._new_conn()
                try:
                    _check_peer(sock, self.host, forbidden)
                except BaseException:
                    sock.close()
                    raise
                return sock

        return Guarded

    class Pool(HTTPConnectionPool):
        ConnectionCls = guard(HTTPConnection)

    class TLSPool(HTTPSConnectionPool):
        ConnectionCls = guard(HTTPSConnection)

    return {"http": Pool, "https": TLSPool}


def _check_peer(sock: socket.socket, host: str, forbidden: frozenset[int]) -> None:
    """Refuse a connection that landed on a forbidden port of this machine."""
    try:
        peer, local = sock.getpeername(), sock.getsockname()
    except OSError:
        return
    port = int(peer[1])
    if port not in forbidden:
        return
    try:
        ip = ipaddress.ip_address(str(peer[0]).split("%", 1)[0])
    except ValueError:
        return
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    # A connection to one of this machine's own addresses has that address as its source too.
    if ip.is_loopback or ip.is_unspecified or peer[0] == local[0]:
        raise ToolRefused(
            f"network policy: {host} leads to port {port} on this machine, "
            "which belongs to the system or another app; use the app protocol "
            "instead"
        )


def _set_socket_timeout(resp: requests.Response, seconds: float) -> None:
    """Shrink the per-read timeout to what is left of the deadline (best effort).

    With ``Connection: close`` http.client drops its own reference to the
    socket, so the file object's socket is tried as well.
    """
    raw = resp.raw
    candidates = [getattr(getattr(raw, "connection", None), "sock", None)]
    fp = getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None)
    candidates.append(getattr(fp, "_sock", None))
    for sock in candidates:
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.settimeout(max(seconds, 0.001))
            return


# ------------------------------------------------------------ request parts


def _scalar(v: Scalar) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _params(params: dict[str, Scalar | list[Scalar] | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in params.items():
        if v is None:
            continue
        out[k] = [_scalar(x) for x in v] if isinstance(v, list) else _scalar(v)
    return out


def _encode_body(body: Any) -> tuple[bytes | None, str | None]:
    if body is None:
        return None, None
    if isinstance(body, str):
        return body.encode("utf-8"), "text/plain; charset=utf-8"
    return json.dumps(body, ensure_ascii=False).encode("utf-8"), "application/json"


def _has_header(headers: dict[str, str], name: str) -> bool:
    return any(k.lower() == name for k in headers)


def _save_target(ctx: ToolContext, save_to: str) -> Path:
    target = resolve_path(ctx.policy, save_to)
    if target == ctx.policy.workdir or target.is_dir():
        raise ToolRefused(f"save_to {save_to!r} is a directory; name a file inside the workdir")
    return target


# --------------------------------------------------------------- response body


def _content_type(resp: requests.Response) -> tuple[str, str | None, str]:
    """(mime type, charset or None, the header as sent)."""
    raw = resp.headers.get("Content-Type", "")
    mime, _, rest = raw.partition(";")
    charset = None
    for param in rest.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return mime.strip().lower(), charset, raw


def _is_json(mime: str) -> bool:
    return mime in ("application/json", "text/json") or mime.endswith("+json")


def _is_text(mime: str, data: bytes) -> bool:
    if mime.startswith("text/") or _is_json(mime) or mime in _TEXT_TYPES or mime.endswith("+xml"):
        return True
    if mime:
        return False
    # No content-type at all: text when it looks like text.
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _text(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset name Python does not know
        return data.decode("utf-8", errors="replace")


def _decode(data: bytes, resp: requests.Response, method: str, meta: dict[str, Any]) -> Any:
    mime, charset, raw_type = _content_type(resp)
    if method == "HEAD":
        return None
    if not _is_text(mime, data):
        return {"binary": True, "size": len(data), "content_type": raw_type or None}
    text = _text(data, charset)
    if not _is_json(mime):
        return text
    if not text.strip():
        return None
    try:
        return json.loads(text.lstrip("\ufeff"))
    except json.JSONDecodeError as e:
        meta["json_error"] = f"body is not valid JSON ({e}); returned as text"
        return text
