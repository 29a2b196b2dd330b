"""Where data leaves the machine, and what a run has read (DESIGN §14.5).

Two ideas, both pure (no I/O, no state):

* **Destinations.** An outbound request goes to a *destination*: the host
  the HTTP client will actually connect to, named one way only.
  :func:`destination` prepares the URL exactly as ``requests`` does before it
  sends (IDNA to punycode, percent-escapes in the host decoded, ``\\`` ending
  the authority as urllib3 reads it) and then spells the host canonically:
  lower case, no trailing dot, IPv4 in any form (``2130706433``,
  ``0x7f000001``, ``127.1``) as dotted quad, IPv6 compressed. An app's
  granted destinations (manifest ``domains`` the user granted, the global
  ``tool_sandbox.http_domain_whitelist``) cover a name and its subdomains
  (:func:`covers`); an IP literal covers only itself.
* **Taint.** A run that has read content the user did not type (a file, a
  web page, database rows, another app's result) is *tainted*: every outbound
  request and command in it asks the user, whatever the mode or the rules, and
  the card says what was read (:class:`Taint`, :func:`read_of`).

The approval rule that uses both is :meth:`aios.runs.approvals.Approvals.data_rule`;
the HTTP tool checks every connection against the same :func:`destination`
(redirect hops included), so what was reviewed is where the bytes go.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from requests.models import PreparedRequest
from urllib3.util import parse_url

from aios.names import MCP_TOOL_PREFIX

OUTBOUND_TOOLS = frozenset({"http_request"})
"""Tools that send data to a destination outside the machine."""
COMMAND_TOOLS = frozenset({"shell_exec", "process_start"})
"""Tools that run a command (which can send anything anywhere: ``curl``, ``python3 -c``)."""
DOMAINS_MAX = 50
"""Destinations one manifest may declare."""
HOST_MAX = 253
DOMAIN_PREFIX = "domain:"
"""A destination as a grant's name beside the permissions (``domain:example.com``)."""
READS_SHOWN = 3
"""Reads a card names; more are counted ("and 2 more")."""
READ_LABEL_MAX = 120


class BadDestination(ValueError):
    """A URL or a manifest entry that names no destination."""


def canonical_host(host: str) -> str:
    """One spelling per host: lower case, no trailing dot, no brackets; IPv4 in any form
    libc accepts as a dotted quad; IPv6 compressed (an IPv4-mapped one as its IPv4)."""
    h = host.strip().strip("[]").rstrip(".").lower()
    if not h:
        raise BadDestination("no host")
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(h.split("%")[0])
    except ValueError:
        try:
            # inet_aton reads the short, decimal, octal and hex forms getaddrinfo accepts
            ip = ipaddress.IPv4Address(socket.inet_aton(h))
        except OSError:
            return h
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def prepared_url(url: str, params: Any = None) -> str:
    """The URL as ``requests`` will send it (query parameters appended); BadDestination
    when it cannot be prepared."""
    return _prepared(url, _params(params))


@functools.lru_cache(maxsize=256)
def _prepared(url: str, query: str | None) -> str:
    p = PreparedRequest()
    try:
        p.prepare_url(url, query)
    except Exception as e:  # noqa: BLE001 - requests raises several kinds for a bad URL
        raise BadDestination(f"malformed URL {url!r}: {e}") from e
    return str(p.url)


def destination(url: str, params: Any = None) -> str:
    """The canonical host this URL connects to; BadDestination when it names none.

    Judged on the prepared URL with urllib3's parser (the one that connects),
    and refused when Python's own parser reads another host out of the same
    text: a URL two parsers disagree on has no single destination to approve.
    (Cached: a plan's review, its card and the tool judge one URL several times.)
    """
    return _destination(prepared_url(url, params), url)


@functools.lru_cache(maxsize=256)
def _destination(prepared: str, url: str) -> str:
    try:
        host = parse_url(prepared).host or ""
        other = urlsplit(prepared).hostname or ""
    except ValueError as e:
        raise BadDestination(f"malformed URL {url!r}: {e}") from e
    if not host:
        raise BadDestination(f"URL has no host: {url!r}")
    host = canonical_host(host)
    if other and canonical_host(other) != host:
        raise BadDestination(
            f"ambiguous URL {url!r}: it connects to {host} but reads as {canonical_host(other)}"
        )
    return host


def check_domain(entry: str) -> str:
    """A manifest ``domains`` entry as a canonical host (``*.`` and a leading dot
    dropped: a domain covers its subdomains); BadDestination naming what is wrong."""
    raw = entry.strip()
    if raw.startswith("*."):
        raw = raw[2:]
    raw = raw.lstrip(".")
    if not raw or len(raw) > HOST_MAX or any(c in raw for c in "/:@?#\\ \t*%"):
        if ":" in raw and is_ip(raw.strip("[]")):
            return canonical_host(raw)
        raise BadDestination(
            f"{entry!r} is not a host name (give a name such as 'example.com' or an IP "
            "address, without scheme, port or path)"
        )
    try:
        host = destination(f"http://{raw}/")
    except BadDestination as e:
        raise BadDestination(f"{entry!r} is not a host name: {e}") from e
    return host


@functools.lru_cache(maxsize=32)
def whitelist_hosts(entries: tuple[str, ...]) -> frozenset[str]:
    """The hosts of ``tool_sandbox.http_domain_whitelist`` (granted to every app)."""
    out = set()
    for entry in entries:
        try:
            out.add(check_domain(entry))
        except BadDestination:
            continue  # never matches anything
    return frozenset(out)


def covers(granted: frozenset[str] | set[str] | tuple[str, ...], host: str) -> bool:
    """Whether a granted destination covers ``host``: the same host, or (for a name, not
    an IP) a subdomain of it."""
    if host in granted:
        return True
    if is_ip(host):
        return False
    return any(not is_ip(g) and host.endswith("." + g) for g in granted)


def body_size(args: dict[str, Any]) -> int:
    """Bytes of the request body as the HTTP tool encodes it."""
    body = args.get("body")
    if body is None:
        return 0
    if isinstance(body, str):
        return len(body.encode("utf-8"))
    try:
        return len(json.dumps(body, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError):
        return len(str(body).encode("utf-8"))


def card_text(args: dict[str, Any]) -> str:
    """A request as its card shows it: method, the full URL with its query (as sent,
    never cut), the destination when the URL spells it otherwise, the body's size,
    the headers given (whole: data can hide there too), and where ``save_to`` puts the answer."""
    method = str(args.get("method") or "GET").strip().upper()
    url = str(args.get("url", "")).strip()
    try:
        shown = prepared_url(url, args.get("params"))
        host = destination(url, args.get("params"))
    except BadDestination:
        shown, host = url, ""
    text = f"{method} {shown}"
    if host and host != (urlsplit(shown).hostname or "").lower().rstrip("."):
        text += f" (to {host})"
    text += f" · body {body_size(args)} bytes"
    headers = args.get("headers")
    if isinstance(headers, dict) and headers:
        text += " · headers " + ", ".join(
            f"{k}: {v}" for k, v in headers.items() if isinstance(k, str)
        )
    save_to = args.get("save_to")
    if save_to:
        text += f" → {save_to}"
    return text


def _params(params: Any) -> Any:
    if not isinstance(params, dict) or not params:
        return None
    pairs = {k: v for k, v in params.items() if v is not None}
    return urlencode(pairs, doseq=True) if pairs else None


# ------------------------------------------------------------------- taint


def read_of(tool: str, args: dict[str, Any], status: str = "ok") -> str | None:
    """What a step that ran with these arguments read that the user did not type, in
    words for the card ("diary.txt", "a page from example.com"); None for a step that
    reads nothing from outside the user (a write, a command's own effect, the app's own
    cache or memory, a file listing, the user's own answer to an ``ask``); the user's
    memories count (what an app sends after reading them is shown on a card)."""
    if status not in ("ok", "error", None):
        return None
    if tool == "file_read":
        return _clip(str(args.get("path") or "a file"))
    if tool == "http_request":
        if args.get("save_to"):
            return None  # the body went to a file, not to the run (reading it taints)
        try:
            host = destination(str(args.get("url", "")), args.get("params"))
        except BadDestination:
            host = "the web"
        return f"a page from {host}"
    if tool == "db_query":
        return _clip(f"rows of {args.get('dsn') or 'a database'}")
    if tool == "launch":
        return _clip(f"the result of {args.get('app') or 'another app'}")
    if tool == "memory_search" and args.get("scope") == "user":
        return "your memories"  # the app's own memory is like its cache: its own
    if tool.startswith(MCP_TOOL_PREFIX):  # DESIGN §17: content the user did not type
        return _clip(f"the result of {tool}")
    return None


def _clip(text: str) -> str:
    return text if len(text) <= READ_LABEL_MAX else text[: READ_LABEL_MAX - 1] + "…"


@dataclass
class Taint:
    """What a run has read that the user did not type, in the order read (each once)."""

    reads: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, what: str | None) -> None:
        if not what:
            return
        with self.lock:
            if what not in self.reads:
                self.reads.append(what)

    def snapshot(self) -> list[str]:
        with self.lock:
            return list(self.reads)

    def __bool__(self) -> bool:
        return bool(self.reads)


def why(reads: list[str]) -> str:
    """The card's reason: "after reading diary.txt, a page from example.com"."""
    shown = reads[:READS_SHOWN]
    text = "after reading " + ", ".join(shown)
    if len(reads) > READS_SHOWN:
        text += f" and {len(reads) - READS_SHOWN} more"
    return text
