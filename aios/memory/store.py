"""Memories: durable facts about the user and for each app, searchable in Chinese and
English (DESIGN §15 "Memories").

Kept in the system database through ``Store``'s pool, transactions and error
mapping (like :mod:`aios.store.runs`). A memory is a dict (see :data:`FIELDS`) whose
``state`` is ``proposed`` (extracted, waiting for the user's yes), ``active``,
``superseded`` (a newer active memory with the same ``key`` replaced it: both are
kept, linked by ``supersedes`` / ``superseded_by``) or ``deleted`` (kept out of every
search and of MEMORY.md). Only active memories are indexed.

Tables: ``memories`` (``rid`` is an INTEGER PRIMARY KEY so the index rows that point
at it survive VACUUM; ``norm`` is the normalized text two memories are compared in;
``grams`` the short-gram text, :func:`aios.memory.text.short_grams`), two contentless
FTS5 tables kept in sync by triggers — ``memories_fts`` (``tokenize='trigram'``, the
text and the tags) and ``memories_grams`` (``unicode61`` over ``grams``, the fallback
for terms under three characters) — and ``memory_vectors`` (:mod:`aios.memory.vectors`).
The triggers index a memory while it is active and take it out with the values it
was indexed with, so an edit or a deletion leaves no stale hit.

**Search** (:meth:`MemoryStore.search`): :func:`aios.memory.text.analyze` turns the
query into quoted terms for each index; each index gives its best
:data:`CANDIDATES` active memories of the scopes by BM25; with an embedder, the
:data:`CANDIDATES` nearest vectors are a third list. Every memory in any list gets

    score = Σ_lists W_list / (RRF_K + rank_in_list)
          + W_RECENT / (RRF_K + rank by ``updated``, newest first)
          + W_USES / (RRF_K + rank by ``uses``, then ``last_used``)   (if used at all)
          + PIN_BOOST                                                  (if pinned)

(reciprocal rank fusion, ranks from 1 among the candidates; W_list is
:data:`W_TEXT` for the trigram and short-gram lists, :data:`W_VECTOR` for vectors),
and the ``k`` best are returned, each with its ``score``. Recency and use break
near-ties of relevance; they never bring in a memory no list found.
"""

from __future__ import annotations

import builtins
import json
import logging
import re
import secrets
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from aios.errors import BadRequest, Conflict, LLMError, NotFound, StoreError
from aios.memory.text import analyze, match_expr, normalize, short_grams
from aios.memory.vectors import Embedder, VectorIndex
from aios.names import APP_ID_PATTERN
from aios.store import Store

if TYPE_CHECKING:
    from sqlite3 import Connection, Row

log = logging.getLogger(__name__)

Memory = dict[str, Any]
Memories = list[Memory]

STATES = ("proposed", "active", "superseded", "deleted")
ADD_STATES = ("active", "proposed")
FIELDS = (
    "id scope text tags source state created updated last_used uses pinned"
    " supersedes superseded_by session_id turn key"
).split()
"""The keys of a memory dict, in order."""
MEMORY_TEXT_MAX = 1000
"""Characters of a memory's text (after stripping)."""
TAGS_MAX = 8
TAG_CHARS_MAX = 32
SCOPE_CHARS_MAX = 64
SOURCE_CHARS_MAX = 160
KEY_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
"""A key names a slot such as ``user.name``."""
LIST_LIMIT_MAX = 1000
SEARCH_K_MAX = 50
ACTIVE_LIMIT_MAX = 1000

CANDIDATES = 50
"""Memories each list (trigram, short grams, vectors) gives to the fusion."""
PREFETCH = 4 * CANDIDATES
"""Best hits of an index a search first filters by scope (see ``MemoryStore._fts``)."""
RRF_K = 60
"""The reciprocal rank fusion constant (ranks deep in a list count almost alike)."""
W_TEXT = 1.0
"""Weight of each text list (trigram BM25, short-gram BM25)."""
W_VECTOR = 1.0
"""Weight of the vector list."""
W_RECENT = 0.25
"""Weight of the rank by last update among the candidates."""
W_USES = 0.15
"""Weight of the rank by uses among the candidates that were ever used."""
PIN_BOOST = 0.5 / (RRF_K + 1)
"""Added for a pinned memory: half of what a first place in one list gives."""
BM25_TRIGRAM = (1.0, 0.5)
"""Column weights of ``memories_fts`` (text, tags)."""
EMBED_RETRY_S = 30.0
"""Seconds without embedding calls after one failed, so a dead endpoint costs no latency."""
CHANNELS = ("trigram", "grams", "vectors")

_TAGS_TEXT = "(SELECT coalesce(group_concat(value, ' '), '') FROM json_each({}.tags))"
_INDEX_NEW = (
    "INSERT INTO memories_fts (rowid, text, tags) SELECT new.rid, new.text, "
    + _TAGS_TEXT.format("new")
    + " WHERE new.state = 'active';"
    " INSERT INTO memories_grams (rowid, grams) SELECT new.rid, new.grams"
    " WHERE new.state = 'active';"
)
_UNINDEX_OLD = (
    "INSERT INTO memories_fts (memories_fts, rowid, text, tags) SELECT 'delete', old.rid,"
    " old.text, " + _TAGS_TEXT.format("old") + " WHERE old.state = 'active';"
    " INSERT INTO memories_grams (memories_grams, rowid, grams)"
    " SELECT 'delete', old.rid, old.grams WHERE old.state = 'active';"
)

SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS memories (
        rid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        scope TEXT NOT NULL,
        text TEXT NOT NULL,
        norm TEXT NOT NULL,
        grams TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        source TEXT NOT NULL,
        state TEXT NOT NULL,
        created REAL NOT NULL,
        updated REAL NOT NULL,
        last_used REAL,
        uses INTEGER NOT NULL DEFAULT 0,
        pinned INTEGER NOT NULL DEFAULT 0,
        supersedes TEXT,
        superseded_by TEXT,
        session_id TEXT,
        turn INTEGER,
        key TEXT
    )
    """,
    "CREATE INDEX IF NOT EXISTS memories_scope_state ON memories (scope, state)",
    "CREATE INDEX IF NOT EXISTS memories_state ON memories (state)",
    "CREATE INDEX IF NOT EXISTS memories_norm ON memories (scope, norm)",
    "CREATE INDEX IF NOT EXISTS memories_key ON memories (scope, key) WHERE key IS NOT NULL",
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5"
    "(text, tags, content='', tokenize='trigram')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories_grams USING fts5"
    "(grams, content='', tokenize='unicode61')",
    f"CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN {_INDEX_NEW} END",
    f"CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN {_UNINDEX_OLD}"
    " DELETE FROM memory_vectors WHERE id = old.id; END",
    "CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE OF text, tags, grams, state"
    f" ON memories BEGIN {_UNINDEX_OLD} {_INDEX_NEW} END",
    "CREATE TRIGGER IF NOT EXISTS memories_stale_vector AFTER UPDATE OF text, state ON memories"
    " WHEN new.text IS NOT old.text OR new.state = 'deleted'"
    " BEGIN DELETE FROM memory_vectors WHERE id = old.id; END",
)
"""One statement each (a trigger's body holds semicolons of its own); after the vectors'."""

_APP_ID = re.compile(APP_ID_PATTERN)
_COLUMNS = ", ".join(FIELDS)


def new_memory_id() -> str:
    return "m_" + secrets.token_hex(6)


# ---------------------------------------------------------------- validation


def _text(text: Any) -> str:
    if not isinstance(text, str):
        raise BadRequest(f"a memory's text must be a string, not {type(text).__name__}")
    out = text.strip()
    if not out:
        raise BadRequest("a memory's text is empty: give the fact to remember")
    if len(out) > MEMORY_TEXT_MAX:
        raise BadRequest(
            f"a memory's text has {len(out)} characters: at most {MEMORY_TEXT_MAX} are kept"
        )
    return out


def _tags(tags: Any) -> list[str]:
    if isinstance(tags, str) or not isinstance(tags, list | tuple):
        raise BadRequest(f"a memory's tags must be a list of strings, not {tags!r:.60}")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not 1 <= len(tag.strip()) <= TAG_CHARS_MAX:
            raise BadRequest(f"a memory's tag must be 1 to {TAG_CHARS_MAX} characters: {tag!r:.60}")
        if tag.strip() not in out:
            out.append(tag.strip())
    if len(out) > TAGS_MAX:
        raise BadRequest(f"a memory has {len(out)} tags: at most {TAGS_MAX}")
    return out


def is_scope(scope: Any) -> bool:
    """Whether ``scope`` is a memory scope: ``user`` or an app id."""
    return isinstance(scope, str) and (
        scope == "user" or (len(scope) <= SCOPE_CHARS_MAX and bool(_APP_ID.match(scope)))
    )


def _scope(scope: Any) -> str:
    if not is_scope(scope):
        raise BadRequest(f"unknown memory scope {scope!r:.80}: use 'user' or an app id")
    return str(scope)


def _source(source: Any) -> str:
    ok = isinstance(source, str) and len(source) <= SOURCE_CHARS_MAX
    if ok and source != "user":
        kind, _, rest = source.partition(":")
        ok = (kind == "app" and bool(_APP_ID.match(rest))) or (
            kind == "extracted" and bool(rest) and not any(c.isspace() for c in rest)
        )
    if not ok:
        raise BadRequest(
            f"unknown memory source {source!r:.80}: use 'user', 'app:<id>' or 'extracted:<session>'"
        )
    return str(source)


def _one_of(what: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise BadRequest(f"unknown memory {what} {value!r:.60}: use one of {', '.join(allowed)}")
    return str(value)


def _optional(value: Any, what: str, kind: type) -> Any:
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise BadRequest(f"a memory's {what} must be {kind.__name__} or null, not {value!r:.60}")
    return value


def _key(key: Any) -> str | None:
    if key is not None and not (isinstance(key, str) and KEY_PATTERN.match(key)):
        raise BadRequest(
            f"a memory's key must look like 'user.name' (1-64 of A-z 0-9 _ . : -): {key!r:.60}"
        )
    return key


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise BadRequest(f"a memory's {what} must be true or false, not {value!r:.60}")
    return value


def _int(value: Any, what: str, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(f"{what} must be an integer, not {value!r:.60}")
    return max(low, min(int(value), high))


def _memory(row: Row) -> Memory:
    d = {name: row[name] for name in FIELDS}
    d["tags"] = json.loads(d["tags"])
    d["pinned"] = bool(d["pinned"])
    return d


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# ---------------------------------------------------------------- the store


class MemoryStore:
    """Memories over ``store`` (its pool, clock and errors); vectors when ``embedder``."""

    def __init__(self, store: Store, *, embedder: Embedder | None = None):
        self.store = store
        self.embedder = embedder
        self.vectors = VectorIndex(store)
        self.channels: tuple[str, ...] = CHANNELS
        """The lists a search fuses (the benchmark measures them one by one)."""
        self._embed_paused_until = 0.0
        self._embed_failing = False
        with store._tx() as db:
            for statement in SCHEMA:
                db.execute(statement)

    # ------------------------------------------------------------ writing

    def add(
        self,
        text: str,
        *,
        scope: str = "user",
        tags: Sequence[str] = (),
        source: str = "user",
        state: str = "active",
        pinned: bool = False,
        session_id: str | None = None,
        turn: int | None = None,
        key: str | None = None,
    ) -> Memory:
        """Add a memory and return it.

        The same text (compared normalized) already active or proposed in the scope is
        returned instead of a copy; a proposed one is accepted when this add is active.
        An active memory with a ``key`` supersedes the active one of the scope with it.
        """
        text, tags = _text(text), _tags(tags)
        scope, source = _scope(scope), _source(source)
        state = _one_of("state", state, ADD_STATES)
        pinned = _bool(pinned, "pinned")
        session_id = _optional(session_id, "session_id", str)
        turn = _optional(turn, "turn", int)
        key = _key(key)
        norm = normalize(text)
        with self.store._tx() as db:
            same = db.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE scope=? AND norm=?"
                " AND state IN ('active', 'proposed') ORDER BY state='active' DESC, rid LIMIT 1",
                (scope, norm),
            ).fetchone()
            if same is not None:
                if same["state"] == "proposed" and state == "active":
                    return self._activate(db, _memory(same))
                return _memory(same)
            mid = new_memory_id()
            supersedes = self._supersede(db, scope, key, mid) if state == "active" else None
            out = self._insert(
                db,
                dict(
                    id=mid, scope=scope, text=text, tags=tags, source=source, state=state,
                    pinned=pinned, supersedes=supersedes, key=key, session_id=session_id,
                    turn=turn,
                ),
            )  # fmt: skip
        self._embed_memories([out])
        return out

    def update(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        tags: Sequence[str] | None = None,
        pinned: bool | None = None,
    ) -> Memory:
        """The user's edit of an active or proposed memory (re-indexed); returns it."""
        fields: dict[str, Any] = {}
        if text is not None:
            fields["text"] = _text(text)
        if tags is not None:
            fields["tags"] = _tags(tags)
        if pinned is not None:
            fields["pinned"] = _bool(pinned, "pinned")
        with self.store._tx() as db:
            current = self._require(db, memory_id)
            if current["state"] not in ADD_STATES:
                raise Conflict(
                    f"the memory {memory_id} is {current['state']}: only active and proposed"
                    " memories can be edited",
                    current,
                )
            changes = {k: v for k, v in fields.items() if current[k] != v}
            if not changes:
                return current
            out = self._write(db, current, changes)
        if "text" in changes:
            self._embed_memories([out])
        return out

    def accept(self, memory_id: str) -> Memory:
        """A proposed memory becomes active (superseding the active one with its key)."""
        with self.store._tx() as db:
            current = self._require(db, memory_id)
            if current["state"] != "proposed":
                raise Conflict(
                    f"the memory {memory_id} is {current['state']}, not proposed", current
                )
            return self._activate(db, current)

    def reject(self, memory_id: str) -> Memory:
        """A proposed memory the user said no to: deleted."""
        with self.store._tx() as db:
            current = self._require(db, memory_id)
            if current["state"] != "proposed":
                raise Conflict(
                    f"the memory {memory_id} is {current['state']}, not proposed", current
                )
            return self._write(db, current, {"state": "deleted"})

    def delete(self, memory_id: str) -> Memory:
        """Delete a memory in any state (again: nothing changes); returns it."""
        with self.store._tx() as db:
            current = self._require(db, memory_id)
            if current["state"] == "deleted":
                return current
            return self._write(db, current, {"state": "deleted"})

    def forget_app(self, app: str) -> int:
        """A removed app: every memory of its scope is deleted. How many were."""
        if app == "user":
            raise BadRequest("'user' is the user's scope, not an app: delete memories one by one")
        with self.store._tx() as db:
            return int(
                db.execute(
                    "UPDATE memories SET state='deleted', updated=? WHERE scope=?"
                    " AND state<>'deleted'",
                    (self.store.clock(), _scope(app)),
                ).rowcount
            )

    def replace_active(self, scope: str, entries: Iterable[dict[str, Any]]) -> dict[str, int]:
        """Make the active memories of ``scope`` what the user's edited MEMORY.md holds.

        ``entries``: ``{"id"?, "text", "tags"?, "pinned"?}``. An entry whose id names an
        active or proposed memory of the scope gives it the entry's text, tags and pin
        (and makes it active); an entry without one is matched to an active or proposed
        memory with the same text, else added (source ``user``). Active memories no
        entry names are deleted. One transaction; counts ``added``, ``changed``, ``deleted``.
        """
        scope = _scope(scope)
        wanted = [self._entry(e) for e in entries]
        counts = {"added": 0, "changed": 0, "deleted": 0}
        embed: Memories = []
        with self.store._tx() as db:
            seen: set[str] = set()
            for entry in wanted:
                current = self._match(db, scope, entry, seen)
                if current is None:
                    out = self._insert(db, {**entry, "id": new_memory_id(), "scope": scope})
                    counts["added"] += 1
                    embed.append(out)
                    seen.add(out["id"])
                    continue
                seen.add(current["id"])
                changes = {
                    k: v
                    for k, v in {**entry, "state": "active"}.items()
                    if k != "id" and current[k] != v
                }
                if changes:
                    out = self._write(db, current, changes)
                    counts["changed"] += 1
                    if "text" in changes:
                        embed.append(out)
            stale = [
                str(r[0])
                for r in db.execute(
                    "SELECT id FROM memories WHERE scope=? AND state='active'", (scope,)
                ).fetchall()
                if r[0] not in seen
            ]
            if stale:
                db.execute(
                    f"UPDATE memories SET state='deleted', updated=?"
                    f" WHERE id IN ({','.join('?' * len(stale))})",
                    (self.store.clock(), *stale),
                )
            counts["deleted"] = len(stale)
        self._embed_memories(embed)
        return counts

    @staticmethod
    def _entry(entry: Any) -> dict[str, Any]:
        if not isinstance(entry, dict):
            raise BadRequest(f"a MEMORY.md entry must be an object, not {entry!r:.60}")
        out: dict[str, Any] = {
            "text": _text(entry.get("text")),
            "tags": _tags(entry.get("tags", [])),
            "pinned": _bool(entry.get("pinned", False), "pinned"),
        }
        mid = entry.get("id")
        if mid is not None:
            out["id"] = _optional(mid, "id", str)
        return out

    def _match(
        self, db: Connection, scope: str, entry: dict[str, Any], seen: set[str]
    ) -> Memory | None:
        live = "state IN ('active', 'proposed')"
        if entry.get("id") and entry["id"] not in seen:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id=? AND scope=? AND {live}",
                (entry["id"], scope),
            ).fetchone()
            if row is not None:
                return _memory(row)
        for row in db.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE scope=? AND norm=? AND {live}"
            " ORDER BY state='active' DESC, rid",
            (scope, normalize(entry["text"])),
        ).fetchall():
            if row["id"] not in seen:
                return _memory(row)
        return None

    def _insert(self, db: Connection, fields: dict[str, Any]) -> Memory:
        """Insert a memory: ``fields`` has id, scope, text and tags; the rest defaults."""
        now = self.store.clock()
        row = {name: fields.get(name) for name in FIELDS}
        row.update(state=fields.get("state", "active"), source=fields.get("source", "user"))
        row.update(created=now, updated=now, uses=0, pinned=int(fields.get("pinned", False)))
        row["tags"] = _dumps(fields["tags"])
        grams = short_grams(" ".join([fields["text"], *fields["tags"]]))
        db.execute(
            f"INSERT INTO memories ({_COLUMNS}, norm, grams)"
            f" VALUES ({','.join('?' * len(FIELDS))}, ?, ?)",
            (*row.values(), normalize(fields["text"]), grams),
        )
        return self._get(db, fields["id"])

    def _write(self, db: Connection, current: Memory, changes: dict[str, Any]) -> Memory:
        """Apply ``changes`` (text, tags, pinned, state) to a memory; ``updated`` moves."""
        merged = {**current, **changes}
        db.execute(
            "UPDATE memories SET text=?, norm=?, grams=?, tags=?, pinned=?, state=?, updated=?"
            " WHERE id=?",
            (
                merged["text"],
                normalize(merged["text"]),
                short_grams(" ".join([merged["text"], *merged["tags"]])),
                _dumps(merged["tags"]),
                int(merged["pinned"]),
                merged["state"],
                self.store.clock(),
                current["id"],
            ),
        )
        return self._get(db, current["id"])

    def _activate(self, db: Connection, current: Memory) -> Memory:
        supersedes = self._supersede(db, current["scope"], current["key"], current["id"])
        db.execute(
            "UPDATE memories SET state='active', updated=?,"
            " supersedes=COALESCE(?, supersedes) WHERE id=?",
            (self.store.clock(), supersedes, current["id"]),
        )
        return self._get(db, current["id"])

    def _supersede(self, db: Connection, scope: str, key: str | None, by: str) -> str | None:
        """Active memories of ``scope`` with ``key`` become superseded by ``by``; the newest
        one's id (what ``by`` supersedes)."""
        if key is None:
            return None
        old = [
            str(r[0])
            for r in db.execute(
                "SELECT id FROM memories WHERE scope=? AND key=? AND state='active' AND id<>?"
                " ORDER BY rid DESC",
                (scope, key, by),
            ).fetchall()
        ]
        if not old:
            return None
        db.execute(
            "UPDATE memories SET state='superseded', superseded_by=?, updated=?"
            f" WHERE id IN ({','.join('?' * len(old))})",
            (by, self.store.clock(), *old),
        )
        return old[0]

    # ------------------------------------------------------------ reading

    def get(self, memory_id: str) -> Memory | None:
        rows = self.store._query(f"SELECT {_COLUMNS} FROM memories WHERE id=?", (memory_id,))
        return _memory(rows[0]) if rows else None

    def list(
        self,
        *,
        scope: str | None = None,
        state: str | None = None,
        source: str | None = None,
        q: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> Memories:
        """Memories newest first: of ``scope``, in ``state`` (None: all but deleted), whose
        source starts with ``source`` ("app:", "extracted:"), whose text or tags contain
        ``q`` (compared normalized)."""
        where: builtins.list[str] = []
        params: builtins.list[Any] = []
        if scope is not None:
            where.append("scope=?")
            params.append(scope)
        if state is None:
            where.append("state<>'deleted'")
        else:
            where.append("state=?")
            params.append(_one_of("state", state, STATES))
        if source:
            where.append("substr(source, 1, ?)=?")
            params.extend([len(source), source])
        if q and normalize(q):
            where.append("(instr(norm, ?) > 0 OR instr(lower(tags), ?) > 0)")
            params.extend([normalize(q), normalize(q)])
        params.append(_int(limit, "limit", 1, LIST_LIMIT_MAX))
        params.append(_int(offset, "offset", 0, 2**62))
        rows = self.store._query(
            f"SELECT {_COLUMNS} FROM memories WHERE {' AND '.join(where)}"
            " ORDER BY created DESC, rid DESC LIMIT ? OFFSET ?",
            tuple(params),
        )
        return [_memory(r) for r in rows]

    def active(self, scope: str, limit: int = 50) -> Memories:
        """Active memories of ``scope``: pinned first, then most used, then most recent."""
        rows = self.store._query(
            f"SELECT {_COLUMNS} FROM memories WHERE scope=? AND state='active'"
            " ORDER BY pinned DESC, uses DESC, COALESCE(last_used, updated) DESC, rid DESC"
            " LIMIT ?",
            (scope, _int(limit, "limit", 1, ACTIVE_LIMIT_MAX)),
        )
        return [_memory(r) for r in rows]

    def added_in(self, session_id: str) -> int:
        """Memories kept or proposed from what was said in ``session_id`` (the session report)."""
        rows = self.store._query(
            "SELECT COUNT(*) AS n FROM memories WHERE session_id=?", (session_id,)
        )
        return int(rows[0]["n"]) if rows else 0

    def kept_by(self, app: str) -> int:
        """What ``app`` holds here: its scope's active memories and the proposals it made
        that wait for the user (its ``memories`` quota)."""
        rows = self.store._query(
            "SELECT count(*) FROM memories WHERE (scope=? AND state='active')"
            " OR (source=? AND state='proposed')",
            (_scope(app), f"app:{app}"),
        )
        return int(rows[0][0])

    def proposed_count(self) -> int:
        return int(self.store._query("SELECT count(*) FROM memories WHERE state='proposed'")[0][0])

    def touch(self, ids: Sequence[str]) -> None:
        """Count one use of each memory of ``ids`` (one statement)."""
        if ids:
            with self.store._tx() as db:
                self._touch(db, ids)

    def _touch(self, db: Connection, ids: Sequence[str]) -> None:
        db.execute(
            "UPDATE memories SET uses = uses + 1, last_used = ?"
            f" WHERE id IN ({','.join('?' * len(ids))})",
            (self.store.clock(), *ids),
        )

    # ------------------------------------------------------------ search

    def search(
        self, query: str, *, scopes: Sequence[str], k: int = 5, touch: bool = True
    ) -> Memories:
        """The ``k`` active memories of ``scopes`` that best answer ``query``, best first,
        each with its ``score`` (the formula is in the module's docstring). Any text is a
        query: nothing in it is FTS syntax; one with no usable term finds nothing."""
        if not isinstance(query, str):
            raise BadRequest(f"a memory query must be a string, not {type(query).__name__}")
        k = _int(k, "k", 1, SEARCH_K_MAX)
        wanted = [scopes] if isinstance(scopes, str) else list(scopes)
        scope_list = list(dict.fromkeys(s for s in wanted if isinstance(s, str)))
        if not scope_list:
            return []
        terms = analyze(query)
        lists: builtins.list[tuple[float, builtins.list[int]]] = []
        facts: dict[int, Row] = {}
        if terms.trigram and "trigram" in self.channels:
            hits = self._fts("memories_fts", match_expr(terms.trigram), scope_list, BM25_TRIGRAM)
            lists.append((W_TEXT, self._note(hits, facts)))
        if terms.short and "grams" in self.channels:
            hits = self._fts("memories_grams", match_expr(terms.short), scope_list, (1.0,))
            lists.append((W_TEXT, self._note(hits, facts)))
        if terms and self.embedder is not None and "vectors" in self.channels:
            near = self._nearest(query, scope_list)
            if near:
                lists.append((W_VECTOR, self._facts_of(near, facts)))
        ranked = _fuse(lists, facts)[:k]
        return self._results(ranked, touch)

    def _fts(
        self, table: str, match: str, scopes: builtins.list[str], weights: tuple[float, ...]
    ) -> builtins.list[Row]:
        """The best :data:`CANDIDATES` active memories of ``scopes`` in ``table`` by BM25.

        First among the index's best :data:`PREFETCH` hits alone (a scope filter over every
        hit of a common term costs a row lookup each); when fewer than CANDIDATES of them
        are in the scopes, over every hit. Both give the same list when the first does."""
        bm25 = f"bm25({table}, {', '.join(map(str, weights))})"
        cols = "m.rid, m.updated, m.uses, m.last_used, m.pinned"
        where = f"m.state='active' AND m.scope IN ({','.join('?' * len(scopes))})"
        rows = self.store._query(
            f"SELECT {cols}, h.s FROM (SELECT rowid AS r, {bm25} AS s FROM {table}"
            f" WHERE {table} MATCH ? ORDER BY s LIMIT ?) h JOIN memories m ON m.rid = h.r"
            f" WHERE {where} ORDER BY h.s LIMIT ?",
            (match, PREFETCH, *scopes, CANDIDATES),
        )
        if len(rows) == CANDIDATES:
            return rows
        return self.store._query(
            f"SELECT {cols}, {bm25} AS s FROM {table} JOIN memories m ON m.rid = {table}.rowid"
            f" WHERE {table} MATCH ? AND {where} ORDER BY s LIMIT ?",
            (match, *scopes, CANDIDATES),
        )

    @staticmethod
    def _note(rows: builtins.list[Row], facts: dict[int, Row]) -> builtins.list[int]:
        for r in rows:
            facts.setdefault(int(r["rid"]), r)
        return [int(r["rid"]) for r in rows]

    def _facts_of(self, rids: builtins.list[int], facts: dict[int, Row]) -> builtins.list[int]:
        missing = [r for r in rids if r not in facts]
        if missing:
            rows = self.store._query(
                "SELECT rid, updated, uses, last_used, pinned FROM memories"
                f" WHERE rid IN ({','.join('?' * len(missing))})",
                tuple(missing),
            )
            self._note(rows, facts)
        return [r for r in rids if r in facts]

    def _results(self, ranked: builtins.list[tuple[int, float]], touch: bool) -> Memories:
        """The memories of ``ranked`` with their scores; with ``touch`` one use counted for
        each first (a store that cannot write, a full disk, still answers the search)."""
        if not ranked:
            return []
        rids = [rid for rid, _ in ranked]
        marks = ",".join("?" * len(rids))
        if touch:
            try:
                with self.store._tx() as db:
                    db.execute(
                        "UPDATE memories SET uses = uses + 1, last_used = ?"
                        f" WHERE rid IN ({marks})",
                        (self.store.clock(), *rids),
                    )
            except StoreError as e:
                log.warning("memory search could not count the uses of what it found: %s", e)
        rows = self.store._query(
            f"SELECT rid, {_COLUMNS} FROM memories WHERE rid IN ({marks})", tuple(rids)
        )
        by_rid = {int(r["rid"]): r for r in rows}
        return [
            {**_memory(by_rid[rid]), "score": round(score, 6)}
            for rid, score in ranked
            if rid in by_rid
        ]

    # ------------------------------------------------------------ vectors

    def _embed(self, texts: builtins.list[str]) -> builtins.list[builtins.list[float]] | None:
        """Vectors of ``texts``, or None (logged once while the endpoint keeps failing)."""
        if self.embedder is None or not texts or time.monotonic() < self._embed_paused_until:
            return None
        try:
            vectors = self.embedder.embed(texts)
        except LLMError as e:
            self._embed_paused_until = time.monotonic() + EMBED_RETRY_S
            level = logging.DEBUG if self._embed_failing else logging.WARNING
            log.log(level, "memory search without vectors for %.0f s: %s", EMBED_RETRY_S, e)
            self._embed_failing = True
            return None
        if self._embed_failing:
            log.info("the embeddings endpoint answers again: memory search uses vectors")
            self._embed_failing = False
        return vectors

    def _embed_memories(self, memories: Memories) -> None:
        if self.embedder is None or not memories:
            return
        vectors = self._embed([m["text"] for m in memories])
        if vectors is not None:
            self.vectors.put(
                [(m["id"], v) for m, v in zip(memories, vectors, strict=True)], self.embedder.model
            )

    def _nearest(self, query: str, scopes: builtins.list[str]) -> builtins.list[int]:
        assert self.embedder is not None
        vectors = self._embed([query])
        if not vectors:
            return []
        near = self.vectors.nearest(vectors[0], self.embedder.model, scopes, CANDIDATES)
        return [rid for rid, _ in near]

    def embed_missing(self, limit: int = 256) -> int:
        """Embed up to ``limit`` active or proposed memories without a vector of the
        embedder's model (after a model change or while the endpoint was down). How many."""
        if self.embedder is None:
            return 0
        rows = self.store._query(
            f"SELECT {_COLUMNS} FROM memories m WHERE state IN ('active', 'proposed')"
            " AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.id = m.id AND v.model = ?)"
            " ORDER BY rid DESC LIMIT ?",
            (self.embedder.model, limit),
        )
        todo = [_memory(r) for r in rows]
        vectors = self._embed([m["text"] for m in todo])
        if vectors is None:
            return 0
        self.vectors.put(
            [(m["id"], v) for m, v in zip(todo, vectors, strict=True)], self.embedder.model
        )
        return len(todo)

    # ------------------------------------------------------------ helpers

    @staticmethod
    def _get(db: Connection, memory_id: str) -> Memory:
        row = db.execute(f"SELECT {_COLUMNS} FROM memories WHERE id=?", (memory_id,)).fetchone()
        if row is None:
            raise NotFound(f"no memory {memory_id}")
        return _memory(row)

    def _require(self, db: Connection, memory_id: Any) -> Memory:
        if not isinstance(memory_id, str):
            raise BadRequest(f"a memory id must be a string, not {memory_id!r:.60}")
        return self._get(db, memory_id)


def _fuse(lists: list[tuple[float, list[int]]], facts: dict[int, Row]) -> list[tuple[int, float]]:
    """``(rid, score)`` best first: the module docstring's formula over ``lists``."""
    score: dict[int, float] = {}
    for weight, rids in lists:
        for rank, rid in enumerate(rids, 1):
            score[rid] = score.get(rid, 0.0) + weight / (RRF_K + rank)
    if not score:
        return []
    by_recent = sorted(score, key=lambda r: (-float(facts[r]["updated"]), -r))
    for rank, rid in enumerate(by_recent, 1):
        score[rid] += W_RECENT / (RRF_K + rank)
    used = [r for r in score if int(facts[r]["uses"]) > 0]
    used.sort(key=lambda r: (-int(facts[r]["uses"]), -float(facts[r]["last_used"] or 0), -r))
    for rank, rid in enumerate(used, 1):
        score[rid] += W_USES / (RRF_K + rank)
    for rid in score:
        if facts[rid]["pinned"]:
            score[rid] += PIN_BOOST
    return sorted(score.items(), key=lambda t: (-t[1], -t[0]))
