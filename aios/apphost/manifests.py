"""App folders: what makes one valid, and the record the launcher keeps of it.

Spec §3.4, §13.2; DESIGN §3. :func:`load_app` reads one folder (its
``manifest.json``, its role prompt, its icon, its workdir) into an
:class:`AppRecord` and never raises for a bad folder: the record is
``invalid`` and its ``error`` says why. Every file is read through
:mod:`aios.apphost.app_files` (DESIGN §14.1: no links, regular files, caps).
:func:`fingerprint` is what hot reload compares. A
transient failure to read (EMFILE...) raises OSError instead, since it says
nothing about the folder. Processes and ports are not this module's business.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from aios.apphost import confusables
from aios.apphost.app_files import (
    MANIFEST,
    ROLE_FILE,
    AppFileError,
    AppFolder,
    folder_fingerprint,
    raise_if_transient,
)
from aios.apphost.supervisor import AppStatus
from aios.errors import ProtocolError
from aios.names import APP_ID_PATTERN
from aios.protocol import DEFAULT_LOCALE, LOCALES, Manifest, icon_file, parse_manifest

APP_ID_RE = re.compile(APP_ID_PATTERN)


UNCONFINED_NOTICE = (
    "app processes are not confined: each runs as your user and can read and "
    "write what you can; each app is reachable only with its launch secret"
)
"""Said once in the log at start, and in the README's Security section."""


@dataclass
class AppRecord:
    """One app folder, valid or not, and its current process."""

    id: str
    path: Path
    status: AppStatus
    manifest: Manifest | None = None
    role_prompt: str = ""
    workdir: Path | None = None
    icon: bytes | None = field(default=None, repr=False)
    """The icon file's bytes as read at validation (None: no icon file)."""
    port: int | None = None
    token: str = field(default="", repr=False)
    launch_secret: str = field(default="", repr=False)
    """The current launch's secret, which the system shows on every call to the app."""
    error: str | None = None
    pid: int | None = None
    log_path: Path | None = None
    restarts: int = 0
    spawned_at: float | None = None
    """time.monotonic() of the latest spawn."""
    ready_at: float | None = None
    """time.monotonic() when the latest instance first accepted a connection."""
    installed: int = 0
    """Install generation: when the app was first seen (kept in the store across restarts;
    apps found in one scan share one). Name clashes, routing ties and routing words go to
    the app installed first (DESIGN §14.7); within a generation, to the first by id."""
    confined: bool = False
    """Whether the latest launch runs in a sandbox (DESIGN §11)."""
    display_name: str = ""
    """The name the desktop shows: the manifest's, or ``Name (id)`` when an app found
    earlier already has that name (an app cannot pose as another)."""
    display_names: dict[str, str] = field(default_factory=dict)
    """:attr:`display_name` per locale (each locale's names are compared on their own)."""

    @property
    def shown_name(self) -> str:
        return self.display_name or (self.manifest.name if self.manifest else self.id)

    def name_in(self, locale: str | None) -> str:
        """The name the desktop shows in ``locale`` (see :attr:`display_name`)."""
        return self.display_names.get(locale or "") or self.shown_name

    def public(self, locale: str | None = None) -> dict[str, Any]:
        """What the desktop may see (never the token); names and texts in ``locale``.

        ``name`` / ``description`` / ``examples`` are the UI language's; ``names`` and
        ``descriptions`` hold every locale's, so the page can switch without asking.
        """
        m = self.manifest
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name_in(locale),
            "names": {loc: self.name_in(loc) for loc in LOCALES},
            "icon": m.icon if m else "",
            "description": m.description_in(locale) if m else "",
            "descriptions": m.descriptions if m else {},
            "examples": m.examples_in(locale) if m else [],
            "status": str(self.status),
            "port": self.port,
            "endpoint": m.handle_endpoint if m else None,
            "keywords": list(m.keywords) if m else [],
            "permissions": list(m.permissions) if m else [],
            "confined": self.confined,
        }
        if self.error:
            out["error"] = self.error
        return out


def assign_display_names(records: list[AppRecord]) -> None:
    """Give each record its ``display_name``: the app installed first keeps a shared name.

    Names are compared as a person sees them (:func:`aios.apphost.confusables.same_name`:
    NFKC, invisible characters, case, the UTS #39 skeleton), across every
    locale: a later app whose name in any locale looks like a name an earlier
    app shows in any locale is shown as ``Name (id)``. Every shown name has its
    invisible characters removed (:func:`aios.apphost.confusables.shown`).
    """
    taken: set[str] = set()
    for rec in sorted(records, key=lambda r: (r.installed, r.id)):
        if rec.manifest is None:
            rec.display_name, rec.display_names = "", {}
            continue
        names = {loc: confusables.shown(rec.manifest.name_in(loc)) or rec.id for loc in LOCALES}
        keys = {loc: confusables.name_keys(name) for loc, name in names.items()}
        rec.display_names = {
            loc: f"{name} ({rec.id})" if keys[loc] & taken else name for loc, name in names.items()
        }
        rec.display_name = rec.display_names[DEFAULT_LOCALE]
        taken.update(*keys.values())


RESERVED_APP_IDS: frozenset[str] = frozenset(
    {
        # the system's own windows and parts (DESIGN §14.3)
        "settings",
        "audit",
        "memory",
        "trace",
        "traces",
        "conversation",
        "desktop",
        "system",
        "aios",
        # every window and part the renderer draws itself (renderer/js/system/*.js WIN_NAME,
        # the settings pages, the desktop's own elements): an app can look like none of them
        "approvals",
        "permissions",
        "blocklist",
        "taskbar",
        "start",
        "startmenu",
        "tray",
        "clock",
        "calendar",
        "notifications",
        "notify",
        "toasts",
        "modal",
        "intent",
        "sys",
        "triton",
    }
)
"""App ids no app may take (compared after :func:`normalised_id`)."""

_ID_SEPARATORS = str.maketrans("", "", "-_. ")


def normalised_id(app_id: str) -> str:
    """An id as compared with the reserved ones: NFKC, case folded, separators dropped."""
    return unicodedata.normalize("NFKC", app_id).casefold().translate(_ID_SEPARATORS)


def reserved_id_reason(app_id: str) -> str | None:
    """Why ``app_id`` may not be an app's id, or None when it may (DESIGN §14.3)."""
    key = normalised_id(app_id)
    if key in RESERVED_APP_IDS:
        return (
            f"folder name {app_id!r} is reserved for the system's own windows "
            f"(reserved: {', '.join(sorted(RESERVED_APP_IDS))}); rename the app's folder"
        )
    return None


@dataclass(frozen=True)
class Validated:
    """What validating a folder read from it (each file once, by :mod:`aios.apphost.app_files`)."""

    manifest: Manifest
    role: str
    workdir: Path
    icon: bytes | None


def validate(app_id: str, path: Path, *, create_workdir: bool = True) -> Validated:
    """Read and check one folder; ValueError (often :class:`AppFileError`) says why it is bad.

    Every file comes through :class:`AppFolder` (no links, regular, one name, capped).
    Without ``create_workdir`` (``aios_sdk check``) a missing workdir is left missing.
    """
    reserved = reserved_id_reason(app_id)
    if reserved:
        raise ValueError(reserved)
    if not APP_ID_RE.match(app_id):
        raise ValueError(
            f"folder name {app_id!r} is not a valid app id: it must match "
            "[a-z0-9_][a-z0-9_-]* (lowercase letters, digits, '_' and '-')"
        )
    try:
        folder = AppFolder(path)
    except OSError as e:
        raise_if_transient(e)
        raise ValueError(f"the app folder cannot be opened: {e.strerror or e}") from e
    with folder:
        return _validate(folder, create_workdir)


def _validate(folder: AppFolder, create_workdir: bool) -> Validated:
    try:
        text = folder.read(MANIFEST, "manifest").data.decode("utf-8")
        raw = json.loads(text)
    except FileNotFoundError as e:
        raise ValueError(f"no {MANIFEST} in the app folder") from e
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{MANIFEST} is not valid JSON: line {e.lineno} column {e.colno}: {e.msg}"
        ) from e
    except UnicodeDecodeError as e:
        raise ValueError(f"{MANIFEST} cannot be read: {e}") from e
    if not isinstance(raw, dict):
        raise ValueError(f"{MANIFEST} must hold a JSON object, not {type(raw).__name__}")
    try:
        manifest = parse_manifest(raw)
    except ProtocolError as e:
        raise ValueError(str(e)) from e
    try:
        folder.check(manifest.entry, "entry")
    except FileNotFoundError as e:
        raise ValueError(f"entry file {manifest.entry!r} not found in the app folder") from e
    role = (manifest.role_prompt or "").strip()
    if not role:
        role = _read_text(folder, ROLE_FILE, "role")
    if not role:
        raise ValueError(
            f'no role prompt: set "role_prompt" in {MANIFEST} or add a non-empty {ROLE_FILE}'
        )
    icon_rel = icon_file(manifest.icon)
    icon = None
    if icon_rel is not None:
        try:
            icon = folder.read(icon_rel, "icon").data
        except FileNotFoundError:
            icon = None  # the desktop shows the app's initial, as for no icon
    own = [MANIFEST, manifest.entry, *([icon_rel] if icon_rel else [])]
    if not manifest.role_prompt:
        own.append(ROLE_FILE)
    _check_workdir(manifest.workdir, own)
    workdir = folder.workdir(manifest.workdir, create=create_workdir)
    return Validated(manifest, role, workdir, icon)


def _read_text(folder: AppFolder, rel: str, kind: str) -> str:
    """The file's text, stripped; "" when there is none."""
    try:
        data = folder.read(rel, kind).data
    except FileNotFoundError:
        return ""
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError as e:
        raise ValueError(f"{rel} cannot be read: {e}") from e


def _parts(rel: str) -> tuple[str, ...]:
    return tuple(p for p in PurePosixPath(rel).parts if p != ".")


def _check_workdir(workdir: str, own_files: list[str]) -> None:
    """A strict subfolder holding none of the app's own files (DESIGN §14.1)."""
    parts = _parts(workdir)
    if not parts or PurePosixPath(workdir).is_absolute() or ".." in parts or "\\" in workdir:
        raise ValueError(
            f"workdir {workdir!r} is not a subfolder of the app folder: the app could then "
            "rewrite its own code and manifest; use a subfolder such as workspace"
        )
    for rel in own_files:
        if _parts(rel)[: len(parts)] == parts:
            raise ValueError(
                f"workdir {workdir!r} holds the app's own file {rel!r}: the app could "
                "rewrite it; keep the workdir apart from the app's files"
            )


def load_app(path: Path, logs_dir: Path) -> AppRecord:
    """Read and validate one app folder; never raises for a bad folder.

    Raises OSError only for a transient failure to read it (EMFILE...), which
    says nothing about the folder.
    """
    app_id = path.name
    rec = AppRecord(
        id=app_id,
        path=path,
        status=AppStatus.STOPPED,
        log_path=logs_dir / f"{app_id}.log" if APP_ID_RE.match(app_id) else None,
    )
    try:
        found = validate(app_id, path)
    except ValueError as e:
        rec.status, rec.error = AppStatus.INVALID, str(e)
    else:
        rec.manifest, rec.role_prompt, rec.workdir = found.manifest, found.role, found.workdir
        rec.icon = found.icon
    return rec


def fingerprint(path: Path, workdir: str | None) -> tuple[Any, ...]:
    """What hot reload compares: the whole folder outside ``workdir`` (see
    :func:`aios.apphost.app_files.folder_fingerprint`)."""
    return folder_fingerprint(path, workdir)


__all__ = [
    "APP_ID_RE",
    "MANIFEST",
    "RESERVED_APP_IDS",
    "ROLE_FILE",
    "AppFileError",
    "AppRecord",
    "Validated",
    "fingerprint",
    "load_app",
    "normalised_id",
    "reserved_id_reason",
    "validate",
]
