"""A stdio MCP server's command line, confined like an app (DESIGN §11, §17).

Where bubblewrap works (``apps.confinement``: the apps' own probe), a stdio
server runs inside the same sandbox an app's commands get
(:func:`aios.host.os_sandbox.bwrap_options`): its own namespaces, no network
(not even the host's loopback: not the desktop, not the apps), ``/usr`` and
``/etc`` read-only, a private ``/tmp``, and one folder of its own,
``<data_dir>/mcp/<name>``, read-write and its working directory. It never sees
the rest of the data dir (the store, the settings, the launch token, the apps'
workdirs). A Python server (``python``/``python3`` as the program) runs with
the desktop's own interpreter, whose installation is bound read-only; any
absolute path the command names (a script, a folder) is bound read-only too,
except a path inside the data dir. Elsewhere the server runs unconfined in its
folder, and the desktop's log says so once.

A server granted ``network`` (``mcp.servers.<name>.network``) gets the network
an app granted ``network`` gets (:mod:`aios.host.nat`): the same sandbox, and
pasta on its own network namespace, never the host's loopback. The SDK spawns
the process, so it spawns :mod:`aios.mcp.netwrap`, which starts bwrap and
pasta and stops them together. Where pasta is missing, such a server does not
start (:class:`~aios.host.nat.NatUnavailable`, its ``failed`` reason): never
the host's network instead.
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from aios.apphost import confinement
from aios.config import PROJECT_ROOT, McpServerConfig
from aios.host import os_sandbox
from aios.host.nat import NatUnavailable, nat_unavailable
from aios.host.os_sandbox import SANE_PATH
from aios.mcp import netwrap

if TYPE_CHECKING:
    from mcp.client.stdio import StdioServerParameters

log = logging.getLogger(__name__)

PYTHON_NAMES = frozenset({"python", "python3", Path(sys.executable).name})
TMP_BYTES = 64 * 1024 * 1024
_warned: set[str] = set()


def folder(data_dir: Path, name: str) -> Path:
    """The server's own folder (created): its working directory, its only writable place."""
    path = (data_dir / "mcp" / name).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def parameters(
    name: str, server: McpServerConfig, data_dir: Path, confinement_mode: str
) -> StdioServerParameters:
    """How to start ``server`` (confined when it can be); OSError when its program is not
    found, :class:`NatUnavailable` when it is granted network and pasta is missing."""
    from mcp.client.stdio import StdioServerParameters

    home = folder(data_dir, name)
    program, *args = server.command
    resolved = sys.executable if program in PYTHON_NAMES else shutil.which(program)
    if resolved is None:
        raise FileNotFoundError(f"program {program!r} not found on PATH")
    env = {**server.env, "HOME": str(home), "PATH": SANE_PATH, "PYTHONDONTWRITEBYTECODE": "1"}
    problem = confinement.unavailable(confinement_mode)
    if problem is not None:
        if name not in _warned:
            _warned.add(name)
            log.warning("MCP server %s runs unconfined: %s", name, problem)
        return StdioServerParameters(command=resolved, args=args, env=env, cwd=str(home))
    if server.network and (why := nat_unavailable()) is not None:
        raise NatUnavailable(why)
    caps = os_sandbox.detect()
    assert caps.bwrap is not None
    binds = _binds(resolved, args, data_dir.resolve())
    opts = os_sandbox.bwrap_options(home, home, env, tmp_bytes=TMP_BYTES, binds=binds)
    sandbox = [caps.bwrap, *opts, "--", resolved, *args]
    if not server.network:
        return StdioServerParameters(command=sandbox[0], args=sandbox[1:], env={}, cwd=str(home))
    # pasta's log lives beside the server's stderr log, out of the server's reach; the
    # wrapper runs there too (never in the server's folder, where it could plant modules)
    runtime = data_dir / "mcp" / "logs" / f"{name}.net"
    runtime.mkdir(parents=True, exist_ok=True)
    program, *rest = netwrap.argv(runtime, sandbox)
    return StdioServerParameters(
        command=program, args=rest, env={"PYTHONPATH": str(PROJECT_ROOT)}, cwd=str(runtime)
    )


def _binds(program: str, args: list[str], data_dir: Path) -> list[tuple[str, Path, Path]]:
    roots: list[Path] = []
    if program == sys.executable:
        roots += confinement._python_roots(program)
    else:
        roots.append(Path(program).resolve().parent)
    for arg in args:
        p = Path(arg)
        if p.is_absolute() and p.exists():
            roots.append(p.resolve())
    out: list[tuple[str, Path, Path]] = []
    for p in roots:
        if p == data_dir or data_dir in p.parents or p in data_dir.parents:
            continue  # never the data dir, nor a folder holding it
        if p == Path("/usr") or Path("/usr") in p.parents:
            continue  # bound anyway
        out.append(("--ro-bind", p, p))
    return out
