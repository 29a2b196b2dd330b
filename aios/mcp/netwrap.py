"""A confined stdio MCP server granted ``network``: bwrap with pasta (DESIGN §17, §14.5).

The SDK's ``stdio_client`` spawns the server's process itself, so a server
granted ``network`` (``mcp.servers.<name>.network``) is spawned through this
small wrapper::

    python -P -m aios.mcp.netwrap <runtime_dir> -- <bwrap> <options> -- <program> <args>

It gives the server exactly the network an app granted ``network`` gets
(:mod:`aios.host.nat`): bwrap starts with :class:`~aios.host.nat.Nat`'s
``--info-fd``/``--block-fd`` (and its own ``--die-with-parent``), inheriting
the wrapper's stdin, stdout and stderr (the SDK's pipes); :meth:`Nat.connect`
puts pasta on the sandbox's network namespace before the server runs; then the
wrapper waits for bwrap, stops pasta and exits with bwrap's status.

SIGTERM, SIGINT and SIGHUP are passed on to bwrap (the SDK's stop signals the
whole process group anyway). A wrapper killed outright leaves nothing either:
bwrap dies with its parent, and pasta, started through
:func:`aios.host.procgroup.popen`, has a death signal and the orphan guard.
When pasta cannot connect the namespace, the server never runs: the reason
goes to stderr (the server's stderr tail) and the wrapper exits with
:data:`NO_NETWORK`.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

from aios.host.nat import Nat, NatUnavailable

NO_NETWORK = 75
"""Exit status when the server could not get its network (EX_TEMPFAIL)."""
USAGE = 64
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def argv(runtime_dir: Path, sandbox: list[str]) -> list[str]:
    """How the SDK starts ``sandbox`` (a bwrap command line) with its own network."""
    return [sys.executable, "-P", "-m", __name__, str(runtime_dir), "--", *sandbox]


def run(runtime_dir: Path, sandbox: list[str]) -> int:
    """Run the bwrap command line ``sandbox`` with pasta on its namespace; its exit status."""
    if "--die-with-parent" not in sandbox:
        raise ValueError("the sandbox must die with its parent (bwrap --die-with-parent)")
    runtime_dir.mkdir(parents=True, exist_ok=True)
    nat = Nat(runtime_dir)
    try:
        proc = subprocess.Popen(
            [sandbox[0], *nat.bwrap_options(), *sandbox[1:]], pass_fds=nat.pass_fds
        )

        def forward(signum: int, _frame: FrameType | None) -> None:
            if proc.poll() is None:
                proc.send_signal(signum)

        for s in FORWARDED:
            signal.signal(s, forward)
        try:
            nat.connect()
        except NatUnavailable as e:
            sys.stderr.write(f"MCP server not started: {e}\n")
            sys.stderr.flush()
            proc.kill()
            proc.wait()
            return NO_NETWORK
        code = proc.wait()
    finally:
        nat.close()
    return code if code >= 0 else 128 - code


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: python -m aios.mcp.netwrap RUNTIME_DIR -- BWRAP ARGS...\n")
        return USAGE
    try:
        return run(Path(args[0]), args[2:])
    except (OSError, ValueError) as e:
        sys.stderr.write(f"MCP server not started: {e}\n")
        return NO_NETWORK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
