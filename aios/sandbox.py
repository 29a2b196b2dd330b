"""The sandbox rules of spec §7.3 / DESIGN §6, in one place.

Pure checks (no I/O beyond resolving paths): path confinement, the command
policy, the URL policy, the DSN policy. The tools call these before they act;
each refusal is a :class:`~aios.errors.ToolRefused` whose message names the
rule and the value. Commands additionally run inside an OS sandbox
(bubblewrap) where one works on this machine; see :mod:`aios.os_sandbox`.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from aios.config import SandboxConfig
from aios.errors import ToolRefused
from aios.protocol import Manifest

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True)
class SandboxPolicy:
    """The effective rules for one app: the global config narrowed by its manifest."""

    workdir: Path
    """Resolved absolute path of the app's workdir (the sandbox root)."""
    config: SandboxConfig = field(default_factory=SandboxConfig)
    shell_whitelist: tuple[str, ...] = ()
    http_domain_whitelist: tuple[str, ...] = ()
    """Empty = any domain."""

    @classmethod
    def build(cls, config: SandboxConfig, workdir: Path,
              manifest: Manifest | None = None) -> SandboxPolicy:
        """Global lists narrowed (never widened) by the manifest's lists."""
        shell = list(config.shell_whitelist)
        if manifest is not None and manifest.shell_whitelist is not None:
            shell = [c for c in manifest.shell_whitelist if c in shell]
        domains = list(config.http_domain_whitelist)
        if manifest is not None and manifest.http_domain_whitelist is not None:
            wanted = [d.lower() for d in manifest.http_domain_whitelist]
            domains = ([d for d in wanted if _domain_allowed(d, domains)] if domains
                       else wanted)
            if not domains:
                # The manifest asked for domains the global list does not allow:
                # narrowing to nothing must mean "nothing", not "anything".
                domains = ["(none)"]
        return cls(workdir=workdir.resolve(), config=config, shell_whitelist=tuple(shell),
                   http_domain_whitelist=tuple(d.lower() for d in domains))

    @property
    def whitelist_enabled(self) -> bool:
        return self.config.enable_shell_whitelist


# ------------------------------------------------------------------- paths


def resolve_path(policy: SandboxPolicy, path: str | os.PathLike[str], *,
                 must_exist: bool = False) -> Path:
    """Map a tool's path argument to an absolute path inside the workdir.

    Paths are relative to the workdir; a leading component equal to the
    workdir's own folder name names the workdir itself (the spec writes
    ``workspace/recent.json``). Symlinks are resolved before the check, so a
    link pointing outside is refused too. Absolute paths are refused.
    """
    raw = os.fspath(path)
    if "\x00" in raw:
        raise ToolRefused(f"path confinement: NUL byte in path {raw!r}")
    if raw.strip() == "":
        raw = "."
    p = Path(raw)
    if p.is_absolute():
        raise ToolRefused(f"path confinement: absolute path {raw!r} refused; "
                          "paths are relative to the app's workdir")
    parts = p.parts
    if parts and parts[0] == policy.workdir.name:
        parts = parts[1:]
    candidate = policy.workdir.joinpath(*parts) if parts else policy.workdir
    resolved = candidate.resolve()
    if resolved != policy.workdir and policy.workdir not in resolved.parents:
        raise ToolRefused(f"path confinement: {raw!r} resolves outside the app's workdir")
    if must_exist and not resolved.exists():
        raise ToolRefused(f"path not found: {raw!r}")
    return resolved


def relative_display(policy: SandboxPolicy, path: Path) -> str:
    """How a path inside the workdir is shown back to the app."""
    try:
        rel = path.relative_to(policy.workdir)
    except ValueError:
        return str(path)
    return str(Path(policy.workdir.name) / rel) if str(rel) != "." else policy.workdir.name


# ---------------------------------------------------------------- commands

SHELL_OPERATORS = (";", "&&", "||", "`", "$(", "${", ">", "<", "&", "\n", "\r")


def split_command(policy: SandboxPolicy, cmd: str | list[str]) -> list[list[str]]:
    """Parse a command into pipeline stages of argv lists, refusing shell syntax.

    A string is split like a POSIX shell would split words, with no
    expansion. Shell operators are refused; a plain ``a | b`` pipeline is
    allowed when ``allow_pipes`` is on (each stage is then checked alone).
    """
    if isinstance(cmd, list):
        if not cmd or not all(isinstance(a, str) for a in cmd):
            raise ToolRefused("command policy: cmd must be a non-empty string or list of strings")
        return [list(cmd)]
    text = cmd.strip()
    if not text:
        raise ToolRefused("command policy: empty command")
    for op in SHELL_OPERATORS:
        if op in text:
            raise ToolRefused(f"command policy: shell operator {op!r} is not allowed "
                              f"(commands run without a shell): {cmd!r}")
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars="|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError as e:
        raise ToolRefused(f"command policy: cannot parse {cmd!r}: {e}") from e
    stages: list[list[str]] = [[]]
    for tok in tokens:
        if tok == "|":
            stages.append([])
        elif set(tok) == {"|"}:
            raise ToolRefused(f"command policy: shell operator {tok!r} is not allowed: {cmd!r}")
        else:
            stages[-1].append(tok)
    if any(not s for s in stages):
        raise ToolRefused(f"command policy: empty pipeline stage in {cmd!r}")
    if len(stages) > 1 and not policy.config.allow_pipes:
        raise ToolRefused(f"command policy: pipelines are disabled: {cmd!r}")
    return stages


def check_argv(policy: SandboxPolicy, argv: list[str]) -> None:
    """The whitelist on the first word, and path arguments confined to the workdir."""
    prog = argv[0]
    name = os.path.basename(prog)
    if policy.whitelist_enabled:
        if "/" in prog:
            raise ToolRefused(f"command whitelist: {prog!r} must be named without a path "
                              f"(allowed: {', '.join(policy.shell_whitelist) or 'none'})")
        if name not in policy.shell_whitelist:
            raise ToolRefused(f"command whitelist: {name!r} is not allowed "
                              f"(allowed: {', '.join(policy.shell_whitelist) or 'none'})")
    for arg in argv[1:]:
        _check_path_arg(policy, arg)


def _check_path_arg(policy: SandboxPolicy, arg: str) -> None:
    candidates = [arg]
    if arg.startswith("-") and "=" in arg:
        candidates.append(arg.split("=", 1)[1])
    for value in candidates:
        if value.startswith(("/", "~")) or value == ".." or value.startswith("../") \
                or "/../" in value or value.endswith("/.."):
            if value.startswith("~"):
                raise ToolRefused(f"path confinement: argument {arg!r} points outside the workdir")
            if value.startswith("/"):
                target = Path(value).resolve()
            else:
                target = (policy.workdir / value).resolve()
            if target != policy.workdir and policy.workdir not in target.parents:
                raise ToolRefused(f"path confinement: argument {arg!r} points outside the "
                                  "workdir")


# --------------------------------------------------------------------- URLs


def _domain_allowed(host: str, whitelist: list[str] | tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    for entry in whitelist:
        entry = entry.lower().lstrip("*").lstrip(".")
        if host == entry or host.endswith("." + entry):
            return True
    return False


def is_loopback_host(host: str) -> bool:
    host = host.lower().strip("[]")
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


def check_url(policy: SandboxPolicy, url: str, forbidden_ports: set[int]) -> None:
    """Scheme, domain whitelist, and never the system's or an app's own port."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise ToolRefused(f"network policy: malformed URL {url!r}: {e}") from e
    if parts.scheme not in ("http", "https"):
        raise ToolRefused(f"network policy: only http and https URLs are allowed, got {url!r}")
    host = parts.hostname or ""
    if not host:
        raise ToolRefused(f"network policy: URL has no host: {url!r}")
    if policy.http_domain_whitelist and not _domain_allowed(host, policy.http_domain_whitelist):
        raise ToolRefused(f"network policy: domain {host!r} is not in the whitelist "
                          f"({', '.join(policy.http_domain_whitelist)})")
    if is_loopback_host(host):
        port = port or (443 if parts.scheme == "https" else 80)
        if port in forbidden_ports:
            raise ToolRefused(f"network policy: port {port} on {host} belongs to the system or "
                              "another app; use the app protocol instead")


# ---------------------------------------------------------------------- DSN


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
            raise ToolRefused(f"database policy: only sqlite DSNs inside the workdir are "
                              f"allowed (got {dsn!r})")
        raw = dsn.removeprefix("sqlite:///")
    if raw.startswith("file:") or "?" in raw:
        raise ToolRefused(f"database policy: URI file names are not allowed (got {dsn!r})")
    return str(resolve_path(policy, raw))
