"""The sandbox rules (docs/app-guide.md §7; DESIGN §6), one module per kind.

Pure checks (no I/O beyond resolving paths): path confinement
(:mod:`.paths`), the command policy (:mod:`.commands`), the block list
(:mod:`.blocklist`), the URL and DSN policies (:mod:`.urls`), all read from
one :class:`~.policy.SandboxPolicy`. The tools call these before they act;
each refusal is a :class:`~aios.errors.ToolRefused` whose message names the
rule and the value. Commands additionally run inside an OS sandbox
(bubblewrap) where one works on this machine; see :mod:`aios.host.os_sandbox`.
"""

from aios.tools.sandbox.blocklist import BLOCK_REASONS, check_block_list
from aios.tools.sandbox.commands import check_argv, split_command
from aios.tools.sandbox.paths import (
    check_hard_links,
    escaped,
    open_workdir_file,
    relative_display,
    resolve_path,
    workdir_rel,
    workdir_relative,
)
from aios.tools.sandbox.policy import SandboxPolicy, domain_allowed
from aios.tools.sandbox.urls import LOOPBACK_NAMES, check_url, is_loopback_host, resolve_dsn

__all__ = [
    "BLOCK_REASONS",
    "LOOPBACK_NAMES",
    "SandboxPolicy",
    "check_argv",
    "check_block_list",
    "check_hard_links",
    "check_url",
    "domain_allowed",
    "escaped",
    "is_loopback_host",
    "open_workdir_file",
    "relative_display",
    "resolve_dsn",
    "resolve_path",
    "split_command",
    "workdir_rel",
    "workdir_relative",
]
