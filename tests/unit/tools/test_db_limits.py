"""db_query's result cap in bytes and the SQL functions it denies (DESIGN §11)."""

from __future__ import annotations

from pathlib import Path

from aios.config import SandboxConfig
from aios.store import Store
from aios.tools import invoke
from tests.conftest import make_ctx

CAP = 4096


def test_results_are_capped_in_bytes_with_a_truncated_flag(workdir: Path, store: Store) -> None:
    ctx = make_ctx(workdir, store, sandbox=SandboxConfig(max_output_bytes=CAP))
    sql = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) "
        "SELECT i, printf('%.500c', 'x') FROM n"
    )
    r = invoke("db_query", {"dsn": ":memory:", "sql": sql}, ctx)
    assert r.status == "ok" and r.meta is not None and r.meta["truncated"] is True
    assert 0 < len(r.result["rows"]) < 50
    assert sum(len(v[1]) for v in r.result["rows"]) <= CAP
    # under the cap: everything, not truncated
    r = invoke("db_query", {"dsn": ":memory:", "sql": sql.replace("< 50", "< 3")}, ctx)
    assert r.status == "ok" and len(r.result["rows"]) == 3
    assert r.meta is not None and r.meta["truncated"] is False


def test_fts3_tokenizer_is_denied(workdir: Path, store: Store) -> None:
    ctx = make_ctx(workdir, store)
    r = invoke("db_query", {"dsn": ":memory:", "sql": "SELECT hex(fts3_tokenizer('simple'))"}, ctx)
    assert r.status != "ok"
    assert r.error is not None and "fts3_tokenizer() is not allowed" in r.error
    # positive control: other functions still work
    r = invoke("db_query", {"dsn": ":memory:", "sql": "SELECT hex('a')"}, ctx)
    assert r.status == "ok" and r.result["rows"] == [["61"]]
