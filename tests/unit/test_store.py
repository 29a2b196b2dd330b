"""The SQLite store: WAL, concurrent writers lose nothing, sessions survive reopening."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from aios.store import Store


def test_wal_mode_and_file_on_disk(tmp_path: Path) -> None:
    s = Store(tmp_path / "d" / "aios.db")
    s.audit(app="a", tool="file_read", args="{}", status="ok", duration_ms=1)
    s.close()
    raw = sqlite3.connect(tmp_path / "d" / "aios.db")
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert raw.execute("SELECT count(*) FROM tool_calls_log").fetchone()[0] == 1
    raw.close()


def test_many_threads_writing_at_once_lose_nothing(store: Store) -> None:
    threads, per_thread = 16, 60
    barrier = threading.Barrier(threads)

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            store.audit(app=f"app{n}", tool="cache_set", args=f'{{"i": {i}}}', status="ok",
                        duration_ms=0.1, session_id="s1")
            store.cache_set(f"app{n}", f"k{i}", {"n": n, "i": i})
            store.add_history("s1", "user", f"{n}-{i}")

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(store.audit_rows(limit=5000)) == threads * per_thread
    assert len(store.history("s1", limit=5000)) == threads * per_thread
    assert all(store.cache_get(f"app{n}", f"k{per_thread - 1}") == {"n": n, "i": per_thread - 1}
               for n in range(threads))


def test_cache_namespaces_and_ttl(store: Store) -> None:
    store.cache_set("music", "playlist", [1, 2])
    assert store.cache_get("notes", "playlist") is None
    assert store.cache_get("music", "playlist") == [1, 2]
    store.cache_set("music", "short", "x", ttl=0.05)
    time.sleep(0.1)
    assert store.cache_get("music", "short", "gone") == "gone"
    assert not store.cache_has("music", "short")


def test_session_memory_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "aios.db"
    s = Store(path)
    sid = s.ensure_session()
    s.add_history(sid, "user", "帮我播放周杰伦的歌")
    s.add_history(sid, "app", {"message": "为你找到 2 首歌"}, app="music")
    s.upsert_task(sid, "t1", app="music", instruction="播放", depends_on=[], status="running")
    s.upsert_task(sid, "t0", app="notes", instruction="打开", depends_on=[], status="done",
                  result={"message": "ok"})
    s.set_context_var(sid, "current_song", "七里香")
    s.set_agent_state(sid, "music", {"volume": 70})
    s.audit(app="music", tool="http_request", args="{}", status="denied", duration_ms=0.3,
            session_id=sid, error="domain not allowed")
    s.close()

    s2 = Store(path)
    mem = s2.session(sid)
    assert mem is not None
    assert [h["content"] for h in mem["history"]] == ["帮我播放周杰伦的歌",
                                                      {"message": "为你找到 2 首歌"}]
    assert [t["task_id"] for t in mem["current_tasks"]] == ["t1"]
    assert mem["completed_tasks"][0]["result"] == {"message": "ok"}
    assert mem["context"] == {"current_song": "七里香"}
    assert mem["agent_states"] == {"music": {"volume": 70}}
    assert mem["tool_calls_log"][0]["status"] == "denied"
    assert s2.session("sess_unknown") is None
    s2.close()
