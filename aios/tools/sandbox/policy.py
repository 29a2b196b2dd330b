"""The effective sandbox rules for one app: the global config narrowed by its manifest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aios.config import DEFAULT_BLOCK_LIST, SandboxConfig
from aios.protocol import Manifest


@dataclass(frozen=True)
class SandboxPolicy:
    """The effective rules for one app: the global config narrowed by its manifest."""

    workdir: Path
    """Resolved absolute path of the app's workdir (the sandbox root)."""
    config: SandboxConfig = field(default_factory=SandboxConfig)
    shell_whitelist: tuple[str, ...] = ()
    http_domain_whitelist: tuple[str, ...] = ()
    """Empty = any domain."""
    block_list: tuple[tuple[str, tuple[str, ...]], ...] = tuple(DEFAULT_BLOCK_LIST.items())
    """``approvals.block_list``: (rule, program patterns), checked before every command rule."""

    @classmethod
    def build(
        cls,
        config: SandboxConfig,
        workdir: Path,
        manifest: Manifest | None = None,
        block_list: Mapping[str, Sequence[str]] | None = None,
    ) -> SandboxPolicy:
        """Global lists narrowed (never widened) by the manifest's lists."""
        shell = list(config.shell_whitelist)
        if manifest is not None and manifest.shell_whitelist is not None:
            shell = [c for c in manifest.shell_whitelist if c in shell]
        domains = list(config.http_domain_whitelist)
        if manifest is not None and manifest.http_domain_whitelist is not None:
            wanted = [d.lower() for d in manifest.http_domain_whitelist]
            domains = [d for d in wanted if domain_allowed(d, domains)] if domains else wanted
            if not domains:
                # The manifest asked for domains the global list does not allow:
                # narrowing to nothing must mean "nothing", not "anything".
                domains = ["(none)"]
        return cls(
            workdir=workdir.resolve(),
            config=config,
            shell_whitelist=tuple(shell),
            http_domain_whitelist=tuple(d.lower() for d in domains),
            block_list=tuple(
                (rule, tuple(w)) for rule, w in (block_list or DEFAULT_BLOCK_LIST).items()
            ),
        )

    @property
    def whitelist_enabled(self) -> bool:
        return self.config.enable_shell_whitelist


def domain_allowed(host: str, whitelist: list[str] | tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    for entry in whitelist:
        entry = entry.lower().lstrip("*").lstrip(".")
        if host == entry or host.endswith("." + entry):
            return True
    return False
