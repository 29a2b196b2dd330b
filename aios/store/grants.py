"""The user's decisions about apps: ``grants`` (each permission or destination an app
requested), ``app_installs`` (when each app was first seen: the order that decides whose
words an app may take) and ``route_owners`` (the user's answer when a later app would take
an earlier app's words, DESIGN §14.7)."""

from __future__ import annotations

import time

from aios.store.db import Database


class GrantTables(Database):
    """``grants``, ``app_installs`` and ``route_owners``."""

    def grants(self, app: str) -> dict[str, bool]:
        """Permission -> granted, for every decision recorded for ``app``."""
        rows = self._query("SELECT permission, granted FROM grants WHERE app=?", (app,))
        return {str(r[0]): bool(r[1]) for r in rows}

    def set_grants(
        self, app: str, decisions: dict[str, bool], *, keep_existing: bool = False
    ) -> None:
        """Record decisions; ``keep_existing`` only fills in permissions not decided yet."""
        verb = "INSERT OR IGNORE" if keep_existing else "INSERT OR REPLACE"
        now = time.time()
        with self._tx() as db:
            db.executemany(
                f"{verb} INTO grants (app, permission, granted, ts) VALUES (?, ?, ?, ?)",
                [(app, p, int(g), now) for p, g in decisions.items()],
            )

    # ------------------------------------------------- installs and route owners

    def record_installs(self, apps: list[str]) -> dict[str, int]:
        """Each app's install generation: the one it got when first seen, or a new one.

        Apps first seen together (one scan) share a generation, one more than
        any before; an app seen before keeps its own, across restarts.
        """
        now = time.time()
        with self._tx() as db:
            known = {
                str(r[0]): int(r[1])
                for r in db.execute("SELECT app, generation FROM app_installs").fetchall()
            }
            new = [a for a in dict.fromkeys(apps) if a not in known]
            if new:
                generation = max(known.values(), default=0) + 1
                db.executemany(
                    "INSERT INTO app_installs (app, generation, first_seen) VALUES (?, ?, ?)",
                    [(a, generation, now) for a in new],
                )
                known.update(dict.fromkeys(new, generation))
        return {a: known[a] for a in apps}

    def route_owner_choices(self, newcomer: str) -> dict[str, str]:
        """Owner -> the app the user chose when ``newcomer`` would take the owner's words."""
        rows = self._query("SELECT owner, chosen FROM route_owners WHERE newcomer=?", (newcomer,))
        return {str(r[0]): str(r[1]) for r in rows}

    def set_route_owner_choice(self, owners: list[str], newcomer: str, chosen: str) -> None:
        """Remember the user's answer for each (owner, ``newcomer``) pair that was asked."""
        now = time.time()
        with self._tx() as db:
            db.executemany(
                "INSERT OR REPLACE INTO route_owners (owner, newcomer, chosen, ts) "
                "VALUES (?, ?, ?, ?)",
                [(o, newcomer, chosen, now) for o in owners],
            )
