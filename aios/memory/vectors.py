"""Embeddings for memory search: the client of an OpenAI-compatible ``/v1/embeddings``
endpoint (Ollama, llama.cpp, vLLM and OpenAI serve it) and the ``memory_vectors``
table with its nearest-neighbour query.

A vector is kept as a float32 BLOB, normalized to length 1, one per memory, with the
model that made it (a vector of another model or dimension is ignored, as if missing).
Cosine similarity is computed in Python over the active memories of the scopes
searched (a dot product of unit vectors). When this Python's ``sqlite3`` can load
extensions and the ``sqlite_vec`` package imports, the query runs in SQL with
``vec_distance_cosine`` instead; that path is a few lines in :meth:`VectorIndex.nearest`
(this machine's ``sqlite3`` has no ``enable_load_extension``, so the Python path is
the one measured). Failures of the endpoint are :class:`aios.errors.LLMError`;
the memory store never lets one fail an add or a search.
"""

from __future__ import annotations

import importlib
import math
import operator
import sqlite3
from array import array
from collections.abc import Sequence
from typing import Any, Protocol

import requests

from aios.errors import LLMError
from aios.llm.providers import normalize_base_url
from aios.store import Store

EMBED_TIMEOUT = 10.0
"""Seconds an embeddings request may take unless the caller says otherwise."""
ERROR_BODY_CHARS = 200
"""Characters of an endpoint's error body quoted in the error."""

SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS memory_vectors (
        id TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vec BLOB NOT NULL
    )
    """,
)


class Embedder(Protocol):
    """Turns texts into vectors; raises :class:`LLMError` when it cannot."""

    model: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def embeddings_url(base_url: str) -> str:
    """``…/v1/embeddings`` from a base URL given with or without ``/v1``."""
    url = normalize_base_url(base_url)
    if url.endswith("/embeddings"):
        return url
    return url + ("/embeddings" if url.endswith("/v1") else "/v1/embeddings")


class EndpointEmbedder:
    """POSTs ``{"model", "input": [texts]}`` to ``/v1/embeddings`` (OpenAI-compatible)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        model: str = "",
        timeout: float = EMBED_TIMEOUT,
    ):
        self.url = embeddings_url(base_url)
        self.model = model
        self.timeout = timeout
        self._session = requests.Session()
        if api_key:
            self._session.headers["Authorization"] = f"Bearer {api_key}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            r = self._session.post(
                self.url, json={"model": self.model, "input": list(texts)}, timeout=self.timeout
            )
        except requests.RequestException as e:
            raise LLMError(f"the embeddings endpoint {self.url} did not answer: {e}") from e
        if r.status_code != 200:
            raise LLMError(
                f"the embeddings endpoint {self.url} answered HTTP {r.status_code}: "
                f"{r.text[:ERROR_BODY_CHARS]}"
            )
        try:
            return _vectors(r.json(), len(texts))
        except (ValueError, KeyError, TypeError) as e:
            raise LLMError(f"the embeddings endpoint {self.url} sent no usable vectors: {e}") from e

    def close(self) -> None:
        self._session.close()


def _vectors(body: Any, n: int) -> list[list[float]]:
    items = sorted(body["data"], key=lambda d: int(d.get("index", 0)))
    out = [[float(x) for x in item["embedding"]] for item in items]
    if len(out) != n:
        raise ValueError(f"{len(out)} vectors for {n} texts")
    if any(len(v) != len(out[0]) or not v for v in out):
        raise ValueError("vectors of different or zero dimensions")
    return out


def pack(vec: Sequence[float]) -> bytes:
    """``vec`` scaled to length 1, as float32 bytes (what sqlite-vec reads too)."""
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return array("f", (x / norm for x in vec)).tobytes()


def unpack(blob: bytes) -> array[float]:
    out = array("f")
    out.frombytes(blob)
    return out


def _sqlite_vec() -> Any | None:
    """The ``sqlite_vec`` module when this Python's sqlite3 can load it, else None."""
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        return None
    try:
        return importlib.import_module("sqlite_vec")
    except ImportError:
        return None


class VectorIndex:
    """The ``memory_vectors`` table over ``store``: put, drop and nearest by cosine."""

    def __init__(self, store: Store):
        self.store = store
        self._vec = _sqlite_vec()
        with store._tx() as db:
            for statement in SCHEMA:
                db.execute(statement)

    def put(self, items: list[tuple[str, list[float]]], model: str) -> None:
        """Store one vector per memory id (replacing an earlier one)."""
        with self.store._tx() as db:
            db.executemany(
                "INSERT OR REPLACE INTO memory_vectors (id, model, dim, vec) VALUES (?,?,?,?)",
                [(mid, model, len(v), pack(v)) for mid, v in items],
            )

    def nearest(
        self, query: list[float], model: str, scopes: list[str], limit: int
    ) -> list[tuple[int, float]]:
        """``(memory rid, cosine)`` of the active memories of ``scopes`` nearest ``query``."""
        marks = ",".join("?" * len(scopes))
        where = (
            "FROM memory_vectors v JOIN memories m ON m.id = v.id WHERE v.model=? AND v.dim=?"
            f" AND m.state='active' AND m.scope IN ({marks})"
        )
        params = (model, len(query), *scopes)
        if self._vec is not None:
            return self._nearest_sql(pack(query), where, params, limit)
        q = unpack(pack(query))
        rows = self.store._query(f"SELECT m.rid, v.vec {where}", params)
        scored = [(int(r[0]), sum(map(operator.mul, q, unpack(r[1])))) for r in rows]
        scored.sort(key=lambda t: -t[1])
        return scored[:limit]

    def _nearest_sql(
        self, blob: bytes, where: str, params: tuple[Any, ...], limit: int
    ) -> list[tuple[int, float]]:
        sql = f"SELECT m.rid, vec_distance_cosine(v.vec, ?) AS d {where} ORDER BY d LIMIT ?"
        try:
            with self.store._conn() as conn:
                try:
                    conn.execute("SELECT vec_version()")
                except sqlite3.OperationalError:
                    conn.enable_load_extension(True)
                    self._vec.load(conn)  # type: ignore[union-attr]
                    conn.enable_load_extension(False)
                rows = conn.execute(sql, (blob, *params, limit)).fetchall()
        except sqlite3.Error as e:
            raise self.store._map(e) from e
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]
