"""The network and database policies: domains, loopback ports, DSNs."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from aios.errors import ToolRefused
from aios.protocol.outbound import BadDestination, canonical_host, destination, prepared_url
from aios.tools.sandbox.paths import resolve_path
from aios.tools.sandbox.policy import SandboxPolicy, domain_allowed

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback_host(host: str) -> bool:
    """True for every spelling of this machine: names, ``127.1``, ``2130706433``,
    ``0x7f000001``, ``[::ffff:127.0.0.1]``, ``0.0.0.0``, and the machine's own hostname."""
    try:
        host = canonical_host(host)
    except BadDestination:
        return False
    if host in LOOPBACK_NAMES or host.endswith(".localhost") or host == _hostname():
        return True
    try:
        ip = ipaddress.ip_address(host)  # canonical: an address in any spelling is one now
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


def _hostname() -> str:
    try:
        return socket.gethostname().lower()
    except OSError:
        return "localhost"


def check_url(policy: SandboxPolicy, url: str, forbidden_ports: set[int]) -> None:
    """Scheme, domain whitelist, and never the system's or an app's own port."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise ToolRefused(f"network policy: malformed URL {url!r}: {e}") from e
    if parts.scheme not in ("http", "https"):
        raise ToolRefused(f"network policy: only http and https URLs are allowed, got {url!r}")
    if not parts.hostname:
        raise ToolRefused(f"network policy: URL has no host: {url!r}")
    try:
        # judged as the client will connect (DESIGN §14.5), not as this parser reads it
        host = destination(url)
        port = urlsplit(prepared_url(url)).port
    except (BadDestination, ValueError) as e:
        raise ToolRefused(f"network policy: {e}") from e
    if policy.http_domain_whitelist and not domain_allowed(host, policy.http_domain_whitelist):
        raise ToolRefused(
            f"network policy: domain {host!r} is not in the whitelist "
            f"({', '.join(policy.http_domain_whitelist)})"
        )
    if is_loopback_host(host):
        port = port or (443 if parts.scheme == "https" else 80)
        if port in forbidden_ports:
            raise ToolRefused(
                f"network policy: port {port} on {host} belongs to the system or "
                "another app; use the app protocol instead"
            )


def resolve_dsn(policy: SandboxPolicy, dsn: str) -> str:
    """``sqlite:///notes.db``, ``notes.db`` or ``:memory:`` inside the workdir.

    Returns what ``sqlite3.connect`` should open. Anything else must be on
    the explicit ``db_allowed_dsns`` list.
    """
    if dsn == ":memory:":
        return dsn
    if dsn in policy.config.db_allowed_dsns:
        return dsn.removeprefix("sqlite:///")
    raw = dsn
    if "://" in dsn:
        if not dsn.startswith("sqlite:///"):
            raise ToolRefused(
                f"database policy: only sqlite DSNs inside the workdir are allowed (got {dsn!r})"
            )
        raw = dsn.removeprefix("sqlite:///")
    if raw.startswith("file:") or "?" in raw:
        raise ToolRefused(f"database policy: URI file names are not allowed (got {dsn!r})")
    return str(resolve_path(policy, raw))
