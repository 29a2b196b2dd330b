"""db_query through aios.tools.invoke, on real SQLite files in the workdir."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from aios.protocol import ToolResult
from aios.store import Store
from aios.tools import ToolContext, invoke
from tests.conftest import make_ctx


@pytest.fixture
def ctx(workdir: Path, store: Store) -> ToolContext:
    # db_query needs no process table, so the context is built directly.
    return make_ctx(workdir, store)


def q(ctx: ToolContext, sql: str, params: Any = None, dsn: str = "notes.db") -> ToolResult:
    args: dict[str, Any] = {"dsn": dsn, "sql": sql}
    if params is not None:
        args["params"] = params
    return invoke("db_query", args, ctx)


def audit_status(ctx: ToolContext) -> str:
    assert ctx.store is not None
    return ctx.store.audit_rows(app=ctx.app_id, limit=1)[0]["status"]


def test_create_insert_select(ctx: ToolContext, workdir: Path) -> None:
    r = q(ctx, "CREATE TABLE songs (id INTEGER PRIMARY KEY, title TEXT, plays INT)")
    assert r.status == "ok"
    assert r.result == {"columns": [], "rows": [], "rowcount": 0}
    r = q(ctx, "INSERT INTO songs (title, plays) VALUES (?, ?)", ["七里香", 3])
    assert r.result["rowcount"] == 1 and r.meta is not None and r.meta["lastrowid"] == 1
    q(ctx, "INSERT INTO songs (title, plays) VALUES (:t, :p)", {"t": "稻香", "p": 5})
    r = q(
        ctx,
        "SELECT title, plays FROM songs WHERE plays >= ? ORDER BY plays",
        [1],
        dsn="sqlite:///notes.db",
    )
    assert r.status == "ok"
    assert r.result == {
        "columns": ["title", "plays"],
        "rows": [["七里香", 3], ["稻香", 5]],
        "rowcount": 2,
    }
    assert r.meta == {"dsn": "workspace/notes.db", "truncated": False}
    assert audit_status(ctx) == "ok"
    # The writes were committed: another connection sees them.
    with sqlite3.connect(workdir / "notes.db") as conn:
        assert conn.execute("SELECT count(*) FROM songs").fetchone() == (2,)
    conn.close()


def test_dsn_forms_name_the_same_file(ctx: ToolContext, workdir: Path) -> None:
    q(ctx, "CREATE TABLE t (x)", dsn="workspace/data/x.db")
    q(ctx, "INSERT INTO t VALUES (1)", dsn="data/x.db")
    r = q(ctx, "SELECT x FROM t", dsn="sqlite:///data/x.db")
    assert r.result["rows"] == [[1]]
    assert (workdir / "data/x.db").is_file()
    assert q(ctx, "SELECT 1 + 1 AS two", dsn=":memory:").result["rows"] == [[2]]


def test_objects_are_stored_as_json_and_blobs_come_back_as_base64(ctx: ToolContext) -> None:
    q(ctx, "CREATE TABLE t (doc TEXT, data BLOB)")
    q(ctx, "INSERT INTO t VALUES (?, x'00ff')", [{"songs": ["七里香"]}])
    r = q(ctx, "SELECT json_extract(doc, '$.songs[0]'), data FROM t")
    assert r.result["rows"] == [["七里香", {"base64": "AP8="}]]


def test_rows_are_capped(ctx: ToolContext) -> None:
    r = q(
        ctx,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1500)"
        " SELECT x FROM c",
    )
    assert r.status == "ok"
    assert len(r.result["rows"]) == 1000 and r.result["rows"][-1] == [1000]
    assert r.meta is not None and r.meta["truncated"] is True


def test_one_statement_per_call(ctx: ToolContext) -> None:
    r = q(ctx, "CREATE TABLE a (x); CREATE TABLE b (x)")
    assert r.status == "error"
    assert "one SQL statement per call" in (r.error or "")
    assert audit_status(ctx) == "error"
    tables = q(ctx, "SELECT name FROM sqlite_master").result["rows"]
    assert tables == []  # neither statement ran
    assert q(ctx, "SELECT 1;").status == "ok"  # a trailing semicolon is fine


def test_sql_errors_carry_the_sqlite_message(ctx: ToolContext) -> None:
    r = q(ctx, "SELECT * FROM missing")
    assert r.status == "error" and "no such table: missing" in (r.error or "")
    r = q(ctx, "SELECT ?", [1, 2])
    assert r.status == "error" and "bindings" in (r.error or "")
    assert audit_status(ctx) == "error"


def test_a_runaway_query_times_out(workdir: Path, store: Store) -> None:
    ctx = make_ctx(workdir, store)
    ctx.timeouts["db_query"] = 0.3
    r = q(
        ctx,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    )
    assert r.status == "error"
    assert r.error == "db_query: timed out after 0.3s"
    assert audit_status(ctx) == "error"


@pytest.mark.parametrize(
    "dsn",
    [
        "../../other/workspace/x.db",
        "/tmp/aios_db_escape.db",
        "sqlite:////tmp/aios_db_escape.db",
        "postgresql://localhost/db",
        "file:x.db?mode=rwc",
    ],
)
def test_databases_outside_the_workdir_are_refused(
    ctx: ToolContext, tmp_path: Path, dsn: str
) -> None:
    r = q(ctx, "CREATE TABLE pwned (x)", dsn=dsn)
    assert r.status == "error"
    assert (r.error or "").startswith(("database policy", "path confinement"))
    assert audit_status(ctx) == "denied"
    assert not Path("/tmp/aios_db_escape.db").exists()
    assert not (tmp_path / "apps/other/workspace/x.db").exists()


def test_attach_outside_the_workdir_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside.db"
    r = q(ctx, f"ATTACH '{outside}' AS o")
    assert r.status == "error"
    assert "ATTACH" in (r.error or "") and "outside the app's workdir" in (r.error or "")
    assert audit_status(ctx) == "denied"
    r = q(ctx, f"VACUUM INTO '{outside}'")
    assert r.status == "error" and "outside" in (r.error or "")
    assert not outside.exists()


def test_attach_forms_that_cannot_be_checked_are_refused(ctx: ToolContext, tmp_path: Path) -> None:
    r = q(ctx, "ATTACH ? AS o", [str(tmp_path / "p.db")])
    assert r.status == "error" and "string literal" in (r.error or "")
    r = q(ctx, "ATTACH 'rel.db' AS o")
    assert r.status == "error" and "absolute path" in (r.error or "")
    r = q(ctx, f"ATTACH 'file:{tmp_path}/u.db' AS o")
    assert r.status == "error" and "URI" in (r.error or "")
    assert not (tmp_path / "p.db").exists() and not Path("rel.db").exists()
    assert audit_status(ctx) == "denied"


def test_attach_inside_the_workdir_works(ctx: ToolContext, workdir: Path) -> None:
    r = q(ctx, f"ATTACH '{workdir / 'second.db'}' AS s")
    assert r.status == "ok"
    assert (workdir / "second.db").exists()


def test_extensions_and_process_wide_pragmas_are_refused(ctx: ToolContext) -> None:
    r = q(ctx, "SELECT load_extension('/tmp/evil.so')")
    assert r.status == "error" and "extensions" in (r.error or "")
    assert audit_status(ctx) == "denied"
    r = q(ctx, "PRAGMA temp_store_directory = '/tmp'")
    assert r.status == "error" and "temp_store_directory" in (r.error or "")
    assert q(ctx, "PRAGMA user_version").status == "ok"


def test_a_folder_is_not_a_database(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "sub").mkdir()
    r = q(ctx, "SELECT 1", dsn="sub")
    assert r.status == "error" and "is a folder" in (r.error or "")


def test_bad_arguments_are_refused(ctx: ToolContext) -> None:
    r = invoke("db_query", {"dsn": "notes.db"}, ctx)
    assert r.status == "error" and "sql" in (r.error or "")
    r = invoke("db_query", {"dsn": "notes.db", "sql": "SELECT 1", "extra": 1}, ctx)
    assert r.status == "error" and "extra" in (r.error or "")
    assert audit_status(ctx) == "denied"
