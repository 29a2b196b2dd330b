"""Permissions are granted, not taken (DESIGN §11.7).

A manifest's ``permissions`` are requests. The user's decision on each one is
kept in the store (``grants`` table) keyed by app id; the first time an app is
seen, the permissions it requests are decided from ``apps.default_grants``
(bundled apps' grants ship there) and every later change is the user's, so a
revocation persists. :class:`Grants` answers "what is granted", applies a
change from the settings window, and builds the refusal an app gets when it
uses a permission it was not granted, with a notice for the user at most once
per app, permission and launch.

Outbound destinations are grants too (DESIGN §14.5): a manifest's ``domains``
are requested as ``domain:<host>`` beside its permissions, granted by default
only to bundled apps (``"domains"`` in ``apps.default_grants``), and the user
grants more by answering "always allow" on a request's card; each one shows in
Settings → App permissions and can be revoked there.

:class:`AppPermissions` is what the rest of the system asks, by app: the grants
of its manifest's requests, the refusal, the settings window's change (audited;
a grant its running sandbox cannot pick up restarts the app) and the
destinations an app may send to.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from aios.apphost.supervisor import AppStatus
from aios.config import Config
from aios.errors import AppError, AppNotFound, BadRequest, PermissionDenied
from aios.names import (
    CONVERSATION_READ as CONVERSATION_READ,
    DESKTOP_CONTROL as DESKTOP_CONTROL,
    NETWORK as NETWORK,
    SETTINGS_PAGE as SETTINGS_PAGE,
    SYSTEM_PROCESSES as SYSTEM_PROCESSES,
    not_granted as not_granted,
)
from aios.protocol import PERMISSIONS
from aios.protocol.outbound import DOMAIN_PREFIX, BadDestination, check_domain, whitelist_hosts
from aios.store import Store

if TYPE_CHECKING:
    from aios.apphost.registry import AppRecord, Launcher

log = logging.getLogger(__name__)

RESTART_NEEDED = frozenset({NETWORK})
"""Grants the running app cannot pick up at once (its sandbox is built at spawn)."""
DEFAULT_DOMAINS = "domains"
"""In ``apps.default_grants``: the app's manifest ``domains`` are granted the first time
it is seen (bundled apps)."""
NOTICE_SENDER = "system"
NOTICE_TEXTS = {
    "zh-CN": ("系统", "需要权限", "{app} 需要“{permission}”权限：请在 设置 → 应用权限 里授予"),
    "en": ("System", "Permission needed", "{app} needs the {permission!r} permission: {hint}"),
}
"""The user's notice of a refusal, per UI language: (sender, title, body)."""


class Grants:
    """The user's grants, cached in memory over the store (the only writer is this object)."""

    def __init__(self, store: Store, defaults: Callable[[], dict[str, list[str]]]):
        self._store = store
        self._defaults = defaults
        self._lock = threading.Lock()
        self._decided: dict[str, dict[str, bool]] = {}
        self._noticed: dict[tuple[str, str], str] = {}
        """(app id, permission) -> the launch token the user was last told about."""
        self.language: Callable[[], str] = lambda: "zh-CN"
        """The UI language of the notices (``config.language``; set by the system)."""

    def _decisions(self, app_id: str, requested: Iterable[str]) -> dict[str, bool]:
        with self._lock:
            decided = self._decided.get(app_id)
            if decided is None:
                decided = self._decided[app_id] = self._store.grants(app_id)
            missing = [p for p in requested if p not in decided]
            if missing:  # first seen: the shipped defaults decide, once
                defaults = set(self._defaults().get(app_id, ()))
                self._store.set_grants(
                    app_id,
                    {
                        p: p in defaults or (is_domain(p) and DEFAULT_DOMAINS in defaults)
                        for p in missing
                    },
                    keep_existing=True,
                )
                decided = self._decided[app_id] = self._store.grants(app_id)
            return dict(decided)

    def granted(self, app_id: str, requested: Sequence[str]) -> frozenset[str]:
        """The requested permissions the user granted (never one the manifest lacks), and
        the destinations granted to the app (``domain:<host>``, the manifest's or not)."""
        decided = self._decisions(app_id, requested)
        extra = {p for p, g in decided.items() if g and is_domain(p)}
        return frozenset({p for p in requested if decided.get(p)} | extra)

    def domains(self, app_id: str, requested: Sequence[str]) -> frozenset[str]:
        """The hosts the app may send to without asking (its granted ``domain:`` grants)."""
        return frozenset(
            p.removeprefix(DOMAIN_PREFIX) for p in self.granted(app_id, requested) if is_domain(p)
        )

    def grant_domain(self, app_id: str, requested: Sequence[str], host: str) -> bool:
        """The user said "always allow" to a request to ``host``: a grant, shown and
        revocable in Settings. True when it is new."""
        name = DOMAIN_PREFIX + check_domain(host)
        if name in self.granted(app_id, requested):
            return False
        self._store.set_grants(app_id, {name: True})
        with self._lock:
            self._decided[app_id] = self._store.grants(app_id)
        return True

    def requested(self, app_id: str, requested: Sequence[str]) -> list[str]:
        """What the app asks for, plus the destinations the user decided on for it
        elsewhere (a card's "always allow"): everything the settings page lists."""
        decided = self._decisions(app_id, requested)
        return list(requested) + [p for p in decided if is_domain(p) and p not in requested]

    def view(self, app_id: str, requested: Sequence[str]) -> dict[str, list[str]]:
        """``{requested, granted}`` as ``GET /api/apps`` shows it."""
        granted = self.granted(app_id, requested)
        listed = self.requested(app_id, requested)
        return {"requested": listed, "granted": [p for p in listed if p in granted]}

    def change(
        self, app_id: str, requested: Sequence[str], body: dict[str, Any]
    ) -> dict[str, bool]:
        """Apply ``{grant: [...], revoke: [...]}``; BadRequest names the first problem.

        Returns what changed (permission -> now granted), only real changes.
        """
        grant, revoke = _names(body, "grant"), _names(body, "revoke")
        if not grant and not revoke:
            raise BadRequest("give 'grant' and/or 'revoke': lists of permission names")
        both = set(grant) & set(revoke)
        if both:
            raise BadRequest(f"permission {sorted(both)[0]!r} is both granted and revoked")
        listed = self.requested(app_id, requested)
        listed += [p for p in grant if is_domain(p) and p not in listed]
        for name in grant:  # a destination may be granted whether the manifest asks or not
            if name not in listed:
                asked = ", ".join(requested) or "none"
                raise BadRequest(
                    f"permission {name!r} cannot be granted to {app_id}: its "
                    f"manifest does not request it (requested: {asked})"
                )
        before = self._decisions(app_id, listed)
        wanted = {**{p: True for p in grant}, **{p: False for p in revoke}}
        changed = {p: g for p, g in wanted.items() if before.get(p) != g}
        if changed:
            self._store.set_grants(app_id, changed)
            with self._lock:
                self._decided[app_id] = self._store.grants(app_id)
        return changed

    def forget(self, app_id: str) -> None:
        """A removed app: drop what is cached of its grants (the store deleted them)."""
        with self._lock:
            self._decided.pop(app_id, None)
            self._noticed = {k: v for k, v in self._noticed.items() if k[0] != app_id}

    def require(
        self,
        app_id: str,
        requested: Sequence[str],
        permission: str,
        token: str,
        notify: Callable[[dict[str, Any]], object],
    ) -> None:
        """PermissionDenied naming ``permission`` unless it is granted.

        The first refusal of a launch (``token``) also tells the user, through
        ``notify``, where to grant it; later ones in the same launch do not.
        """
        if permission in self.granted(app_id, requested):
            return
        message = not_granted(app_id, permission)
        with self._lock:
            first = self._noticed.get((app_id, permission)) != token
            self._noticed[(app_id, permission)] = token
        if first:
            sender, title, body = NOTICE_TEXTS.get(self.language(), NOTICE_TEXTS["zh-CN"])
            notify(
                {
                    "id": uuid.uuid4().hex,
                    "app": NOTICE_SENDER,
                    "app_name": sender,
                    "title": title,
                    "body": body.format(
                        app=app_id, permission=permission, hint=f"grant it in {SETTINGS_PAGE}"
                    ),
                    "level": "warning",
                    "ts": time.time(),
                    "permission": {"app": app_id, "name": permission},
                }
            )
        raise PermissionDenied(message)


class AppPermissions:
    """The grants of the loaded apps, asked by app (the launcher knows their manifests)."""

    def __init__(
        self,
        grants: Grants,
        launcher: Launcher,
        store: Store,
        config: Callable[[], Config],
        notify: Callable[[dict[str, Any]], object],
        audit_args: Callable[[Any], str],
    ):
        self.grants = grants
        self._launcher = launcher
        self._store = store
        self._config = config
        self._notify = notify
        self._audit_args = audit_args
        """:func:`aios.tools.audit_args`, passed in: aios.tools imports this module."""
        self.changed: Callable[[], None] = lambda: None
        """Called when a grant changed: tool contexts built before carry the old set."""

    def granted(self, app_id: str) -> frozenset[str]:
        """What the user granted the app (nothing for an unknown app)."""
        record = self._launcher.get(app_id)
        if record is None:
            return frozenset()
        return self.granted_to(record)

    def granted_to(self, record: AppRecord) -> frozenset[str]:
        return self.grants.granted(record.id, requested(record))

    def require(self, record: AppRecord, permission: str) -> None:
        """PermissionDenied naming ``permission`` unless it is granted (DESIGN §11.7);
        the first refusal of a launch also notifies the user once."""
        self.grants.require(record.id, requested(record), permission, record.token, self._notify)

    def view(self, record: AppRecord) -> dict[str, list[str]]:
        """``{requested, granted}`` of one app."""
        return self.grants.view(record.id, requested(record))

    def destinations(self, app_id: str) -> frozenset[str]:
        """The hosts ``app_id`` may send to without asking (DESIGN §14.5): its granted
        ``domains`` and the hosts of the global ``tool_sandbox.http_domain_whitelist``."""
        record = self._launcher.get(app_id)
        granted = self.grants.domains(app_id, requested(record)) if record is not None else set()
        return frozenset(granted) | whitelist_hosts(
            tuple(self._config().tool_sandbox.http_domain_whitelist)
        )

    def grant_destination(self, app_id: str, host: str) -> None:
        """The user answered "always allow" to a request to ``host``: a domain grant,
        audited, listed (and revocable) in Settings → App permissions."""
        record = self._launcher.get(app_id)
        if record is None or not self.grants.grant_domain(app_id, requested(record), host):
            return
        self.changed()  # tool contexts carry the granted destinations
        self._audit(app_id, {"grant": [DOMAIN_PREFIX + host], "decision": "user"})

    def change(self, app_id: str, body: dict[str, Any]) -> dict[str, list[str]]:
        """Grant/revoke from the settings window: audited, in force at the next call.

        AppNotFound for an unknown app, BadRequest naming a bad permission.
        """
        record = self._launcher.get(app_id)
        if record is None:
            raise AppNotFound(f"no app {app_id!r}")
        changed = self.grants.change(app_id, requested(record), body)
        if changed:
            self.changed()  # tool contexts carry the granted set
            self._audit(
                app_id,
                {
                    "grant": [p for p, g in changed.items() if g],
                    "revoke": [p for p, g in changed.items() if not g],
                    "decision": "user",
                },
            )
            needs_restart = RESTART_NEEDED & set(changed)
            if needs_restart and record.status in (AppStatus.RUNNING, AppStatus.STARTING):
                # The sandbox (its network namespace) is built at spawn: a new grant
                # takes effect in a new launch, which the system starts itself (§11.7).
                log.info("%s: %s changed; restarting the app", app_id, ", ".join(needs_restart))
                threading.Thread(
                    target=self._restart_quietly, args=(app_id,), name=f"regrant-{app_id}"
                ).start()
        return self.view(record)

    def _audit(self, app_id: str, change: dict[str, Any]) -> None:
        self._store.audit(
            app=app_id,
            tool="permissions",
            args=self._audit_args(change),
            status="ok",
            duration_ms=0.0,
        )

    def _restart_quietly(self, app_id: str) -> None:
        try:
            self._launcher.restart(app_id)
        except AppError as e:  # unloaded or shutting down meanwhile
            log.info("%s: not restarted after a permission change: %s", app_id, e)


def requested(record: AppRecord) -> list[str]:
    """The permissions and destinations (``domain:<host>``) the app's manifest asks for."""
    if record.manifest is None:
        return []
    return [*record.manifest.permissions, *domain_grants(record.manifest.domains)]


def is_domain(name: str) -> bool:
    return name.startswith(DOMAIN_PREFIX)


def domain_grants(hosts: Sequence[str]) -> list[str]:
    """A manifest's ``domains`` as grant names (``domain:<host>``)."""
    return [DOMAIN_PREFIX + h for h in hosts]


def _names(body: dict[str, Any], field: str) -> list[str]:
    value = body.get(field, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"field {field!r} must be a list of permission names")
    out = []
    for name in value:
        if is_domain(name):
            try:
                name = DOMAIN_PREFIX + check_domain(name.removeprefix(DOMAIN_PREFIX))
            except BadDestination as e:
                raise BadRequest(f"{field}: {e}") from e
        elif name not in PERMISSIONS:
            raise BadRequest(
                f"unknown permission {name!r} (permissions: {', '.join(PERMISSIONS)}, "
                f"or {DOMAIN_PREFIX}<host> for a destination)"
            )
        out.append(name)
    return list(dict.fromkeys(out))
