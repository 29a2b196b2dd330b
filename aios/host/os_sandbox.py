# Longer than ~500 lines on purpose: bubblewrap and cgroup set-up in one place, so what a
# sandboxed command can see is read in one file.
"""The OS-level sandbox for commands (``shell_exec``, ``process_start``).

The argv rules of :mod:`aios.tools.sandbox` see only the words of a command; an
interpreter on the whitelist (``python3 -c "open('/etc/…')"``) hides its
payload in a string. So where bubblewrap works, every command runs inside
``bwrap`` with a fresh mount namespace in which only ``/usr``, ``/etc`` (its
non-world-readable entries masked), a private ``/proc`` and ``/dev``, a small
private ``/tmp`` and the app's workdir exist. Everything else of the host —
``/root``, the project, the data dir, ``config.json``, other apps' workdirs —
is simply absent. The network is unshared too, which blocks loopback as
well: a sandboxed command cannot reach the system's server or any app.

Resource limits are applied in ``preexec_fn`` with
setrlimit: CPU seconds, address space, file size, no core dumps. The
process count needs more care, because of what the kernel actually does
(verified on this machine, kernel 6.18, bwrap 0.8):

* ``RLIMIT_NPROC`` is never enforced for a process whose *real* uid is root,
  and inside bwrap's user namespace the sandbox uid (65534) maps back to
  root when the system runs as root — so as root it is ignored.
* For a normal user, RLIMIT_NPROC counts *all* of the user's processes. Set
  before bwrap (in preexec) it makes bwrap itself fail ("Creating new
  namespace failed: Resource temporarily unavailable") on a desktop with a
  few hundred processes. Set *inside* the new user namespace it counts only
  the sandbox's processes — so with bwrap it is applied by ``prlimit`` run
  inside the sandbox; without bwrap it is set to the user's current task
  count plus the allowance.
* A ``pids`` cgroup, where one is writable (here: root in a container with
  cgroup v1), limits exactly the tasks of one command whatever the uid; it
  is used whenever available.

Where none of these applies (root without a writable pids cgroup) there is
no process-count limit; :func:`detect` logs that once.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import logging
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aios.config import SandboxConfig

log = logging.getLogger(__name__)

SANE_PATH = "/usr/local/bin:/usr/bin:/bin"
"""The only PATH commands are resolved with — never the caller's (pyenv shims are scripts)."""

SANDBOX_UID = 65534
BWRAP_EXTRA_TASKS = 2
"""bwrap's own monitor process and its pid-1 reaper, counted by the pids cgroup."""
ROOT_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
"""Top-level names that are symlinks into /usr on merged-/usr systems (Debian 12)."""
PROBE_TIMEOUT_SECONDS = 10.0
CGROUP_PREFIX = "aios-"
PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
"""Loaded here, not in the child: dlopen takes locks that a fork may have left held."""


@dataclass(frozen=True)
class Limits:
    """Per-command resource limits, from ``tool_sandbox`` in config.json."""

    cpu_seconds: int
    memory_mb: int
    max_file_bytes: int
    max_processes: int

    @classmethod
    def from_config(cls, cfg: SandboxConfig) -> Limits:
        return cls(
            cpu_seconds=cfg.cpu_seconds,
            memory_mb=cfg.memory_mb,
            max_file_bytes=cfg.max_file_bytes,
            max_processes=cfg.max_processes,
        )


@dataclass(frozen=True)
class Capabilities:
    """What this machine offers, probed once."""

    bwrap: str | None
    """Path of a bubblewrap that ran a probe command successfully."""
    bwrap_problem: str | None
    prlimit: str | None
    pids_cgroup: Path | None
    """Directory under which one pids cgroup per command can be made."""
    is_root: bool

    def process_limit(self, in_bwrap: bool) -> str:
        """How the process-count limit is enforced for a command (for docs, logs, tests)."""
        if self.pids_cgroup is not None:
            return "pids cgroup"
        if not self.is_root:
            return (
                "RLIMIT_NPROC in the sandbox's user namespace"
                if in_bwrap and self.prlimit
                else "RLIMIT_NPROC over the user's processes"
            )
        return "none"


# ------------------------------------------------------------------ detection


_detect_lock = threading.Lock()


def detect() -> Capabilities:
    """Probe bubblewrap, prlimit and a pids cgroup once; warn once about what is missing.

    Call it at startup so the warning appears then; the command tools call it
    lazily too (the result is cached for the life of the process).
    """
    with _detect_lock:
        return _detect()


@functools.cache
def _detect() -> Capabilities:
    is_root = os.geteuid() == 0
    prlimit = shutil.which("prlimit", path=SANE_PATH)
    bwrap, problem = _probe_bwrap()
    cgroup = _find_pids_cgroup()
    caps = Capabilities(
        bwrap=bwrap, bwrap_problem=problem, prlimit=prlimit, pids_cgroup=cgroup, is_root=is_root
    )
    if bwrap is None:
        log.warning(
            "OS sandbox unavailable (%s): commands fall back to the argv, path and "
            "rlimit rules only; whitelisted interpreters can read and write anything "
            "this user can",
            problem,
        )
    limit = caps.process_limit(in_bwrap=bwrap is not None)
    if limit == "none":
        log.warning(
            "no process-count limit for commands: RLIMIT_NPROC is ignored for root and "
            "no pids cgroup is writable here"
        )
    else:
        log.info(
            "commands: OS sandbox %s, process limit by %s", "bubblewrap" if bwrap else "off", limit
        )
    return caps


def _probe_bwrap() -> tuple[str | None, str | None]:
    path = shutil.which("bwrap", path=SANE_PATH)
    if path is None:
        return None, "bwrap is not installed (Debian: apt-get install bubblewrap)"
    true = shutil.which("true", path=SANE_PATH) or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="aios-bwrap-probe-") as tmp:
        work = Path(tmp).resolve()
        argv = [
            path,
            *bwrap_options(work, work, {"PATH": SANE_PATH}, tmp_bytes=1 << 20),
            "--",
            true,
        ]
        try:
            r = subprocess.run(
                argv,
                capture_output=True,
                timeout=PROBE_TIMEOUT_SECONDS,
                env={"PATH": SANE_PATH},
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as e:
            return None, f"bwrap could not run: {e}"
    if r.returncode != 0:
        why = r.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"bwrap probe failed: {why[-1] if why else f'exit code {r.returncode}'}"
    return path, None


# ---------------------------------------------------------------- bwrap argv


@functools.cache
def _masked_etc() -> tuple[tuple[str, bool], ...]:
    """Entries of /etc that other users may not read: ``(path, is_dir)``.

    Inside the sandbox the uid maps back to root when the system runs as
    root, so file modes alone would not hide /etc/shadow or private keys.
    """
    found: list[tuple[str, bool]] = []
    for dirpath, dirnames, filenames in os.walk("/etc"):
        for name in list(dirnames):
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and not (
                st.st_mode & stat.S_IROTH and st.st_mode & stat.S_IXOTH
            ):
                found.append((p, True))
                dirnames.remove(name)
        for name in filenames:
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IROTH:
                found.append((p, False))
    return tuple(sorted(found))


def bwrap_options(
    workdir: Path,
    cwd: Path,
    env: dict[str, str],
    *,
    tmp_bytes: int,
    binds: Sequence[tuple[str, Path, Path]] = (),
) -> list[str]:
    """The bwrap options for one command (everything before ``--``).

    ``binds`` are more ``(flag, host path, sandbox path)`` mounts (an app's
    folder, the Python installation…), made before the workdir's, so a
    workdir inside one of them is still writable. The network is always
    unshared: an app granted ``network`` gets pasta on its own namespace
    (:mod:`aios.host.nat`), never the host's.

    Order matters: ``--tmpfs /tmp`` comes before ``--bind workdir`` so that a
    workdir under /tmp (pytest's tmp_path) is the real folder, not a folder
    in the throwaway tmpfs. Outside the workdir everything is read-only or
    absent, except the scratch ``/tmp`` and ``/dev/shm`` (size-limited,
    discarded at exit).
    """
    opts = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
    ]
    for key, value in env.items():
        opts += ["--setenv", key, value]
    opts += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for path, is_dir in _masked_etc():
        opts += (
            ["--tmpfs", path, "--remount-ro", path] if is_dir else ["--ro-bind", "/dev/null", path]
        )
    for name in ROOT_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            opts += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            opts += ["--ro-bind", str(host), str(host)]
    opts += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(tmp_bytes),
        "--tmpfs",
        "/dev/shm",
        "--size",
        str(tmp_bytes),
        "--tmpfs",
        "/tmp",
    ]
    guard = _tmp_guard(workdir)
    if guard is not None:
        opts += ["--tmpfs", guard]
    for flag, source, dest in binds:
        opts += [flag, str(source), str(dest)]
    opts += ["--bind", str(workdir), str(workdir)]
    if guard is not None:
        opts += ["--remount-ro", guard]
    # The root itself is bwrap's tmpfs: make it read-only so nothing can be
    # parked in memory outside /tmp's size limit.
    opts += ["--remount-ro", "/", "--chdir", str(cwd)]
    return opts


def _tmp_guard(workdir: Path) -> str | None:
    """For a workdir deep under /tmp, the folder below /tmp that holds its parents.

    bwrap creates the workdir's parents inside the scratch /tmp, where
    writes "next to the workdir" would silently succeed and vanish. A
    read-only tmpfs on that folder makes them fail with EROFS instead.
    """
    try:
        rel = workdir.relative_to("/tmp")
    except ValueError:
        return None
    return f"/tmp/{rel.parts[0]}" if len(rel.parts) > 1 else None


def visible_in_sandbox(path: Path, workdir: Path) -> bool:
    """Whether a host path (a program to run) exists inside the sandbox."""
    real = path.resolve()
    roots = [Path("/usr"), Path("/etc"), workdir]
    roots += [
        Path("/") / n
        for n in ROOT_LINKS
        if (Path("/") / n).is_dir() and not (Path("/") / n).is_symlink()
    ]
    return any(real == r or r in real.parents for r in roots)


def wrap_argv(
    caps: Capabilities,
    argv: list[str],
    workdir: Path,
    cwd: Path,
    env: dict[str, str],
    limits: Limits,
) -> list[str]:
    """``argv`` as run inside bubblewrap (process limit applied inside when it counts)."""
    assert caps.bwrap is not None
    inner = list(argv)
    if not caps.is_root and caps.prlimit:
        n = limits.max_processes
        inner = [caps.prlimit, f"--nproc={n}:{n}", "--", *inner]
    return [
        caps.bwrap,
        *bwrap_options(workdir, cwd, env, tmp_bytes=limits.max_file_bytes),
        "--",
        *inner,
    ]


# ------------------------------------------------------------------- limits


def make_preexec(
    limits: Limits, *, cgroup: PidsCgroup | None, nproc: int | None, die_with_parent: bool = False
) -> Callable[[], None]:
    """The function run in the child between fork and exec.

    It must not take locks (the server is threaded): only syscalls here.
    Hard limits equal the soft ones so the command cannot raise them, except
    CPU: the soft limit sends SIGXCPU (reported as "CPU time limit") and
    the hard one, a second later, SIGKILL. ``die_with_parent`` (for
    commands outside bwrap, which has its own) sends SIGKILL to the command
    when the thread that started it ends, so a crash of the system does not
    leave commands running.
    """
    join = cgroup.preexec_join() if cgroup is not None else None
    mem = limits.memory_mb * 1024 * 1024

    def preexec() -> None:
        if die_with_parent:
            _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if join is not None:
            join()
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.max_file_bytes, limits.max_file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    return preexec


def fallback_nproc(caps: Capabilities, limits: Limits) -> int | None:
    """RLIMIT_NPROC for a command run without bwrap, or None when it would not count.

    Outside a user namespace the kernel counts every task of the real uid,
    so the allowance is added to what the user runs already.
    """
    if caps.is_root:
        return None
    import psutil

    uid = os.getuid()
    current = 0
    for p in psutil.process_iter(["uids", "num_threads"]):
        uids = p.info.get("uids")
        if uids is not None and uids.real == uid:
            current += p.info.get("num_threads") or 1
    return current + limits.max_processes


# ------------------------------------------------------------ pids cgroup


class PidsCgroup:
    """One pids cgroup for one command: caps its task count, kills what is left in it."""

    _seq = itertools.count(1)

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    @classmethod
    def create(cls, parent: Path | None, max_tasks: int) -> PidsCgroup | None:
        """A new cgroup under ``parent``; None when there is none (the limit is then off)."""
        if parent is None:
            return None
        path = parent / f"{CGROUP_PREFIX}{os.getpid()}-{next(cls._seq)}"
        problem = _make_cgroup(path, max_tasks)
        if problem:
            log.warning("could not create pids cgroup %s: %s", path, problem)
            return None
        return cls(path)

    def preexec_join(self) -> Callable[[], None]:
        """For a ``preexec_fn``: move the forked child into this cgroup (syscalls only)."""
        procs = str(self.procs_file)

        def join() -> None:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

        return join

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in self.procs_file.read_text().split()]
        except (OSError, ValueError):
            return []

    def hit_limit(self) -> bool:
        """Whether a fork was refused because of the limit."""
        try:
            return int((self.path / "pids.events").read_text().split()[1]) > 0
        except (OSError, ValueError, IndexError):
            return False

    def kill_all(self, rounds: int = 50) -> None:
        """SIGKILL every task still in the cgroup (a task may fork while we kill)."""
        for _ in range(rounds):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        self.kill_all()
        for _ in range(50):
            if _rmdir(self.path):
                return
            time.sleep(0.02)
        log.warning("pids cgroup %s could not be removed (still busy)", self.path)


def _make_cgroup(path: Path, max_tasks: int) -> str | None:
    try:
        path.mkdir()
        (path / "pids.max").write_text(str(max_tasks))
    except OSError as e:
        _rmdir(path)
        return str(e)
    return None


def _rmdir(path: Path) -> bool:
    try:
        path.rmdir()
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _find_pids_cgroup() -> Path | None:
    """The directory of our own pids cgroup if we may create children in it."""
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    candidates: list[Path] = []
    for line in own:
        hier, controllers, rel = line.split(":", 2)
        for m in mounts:
            fields = m.split()
            sep = fields.index("-")
            fstype, opts = fields[sep + 1], fields[sep + 3].split(",")
            root, point = fields[3], fields[4]
            if hier == "0" and fstype == "cgroup2":
                d = Path(point) / os.path.relpath(rel, root)
                # cgroup v2 lets a cgroup with processes have no domain
                # children, so only a root with pids delegated is usable.
                try:
                    if "pids" in (d / "cgroup.subtree_control").read_text().split():
                        candidates.append(d)
                except OSError:
                    pass
            elif fstype == "cgroup" and "pids" in opts and "pids" in controllers.split(","):
                candidates.append(Path(point) / os.path.relpath(rel, root))
    for d in candidates:
        d = d.resolve()
        _remove_stale(d)
        probe = d / f"{CGROUP_PREFIX}{os.getpid()}-probe"
        if _make_cgroup(probe, 4) is None:
            _rmdir(probe)
            return d
    return None


def _remove_stale(parent: Path) -> None:
    """Empty cgroups left by an earlier run that died."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for p in entries:
        m = re.fullmatch(rf"{CGROUP_PREFIX}(\d+)-\d+", p.name)
        if m and int(m.group(1)) != os.getpid() and not Path(f"/proc/{m.group(1)}").exists():
            _rmdir(p)
