"""The SQLite store: WAL, concurrent writers lose nothing, sessions survive reopening."""

from __future__ import annotations

import logging
import os
import resource
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from aios.config import RetentionConfig
from aios.errors import StoreError, StoreFull
from aios.store import Store
from aios.store.pruner import Pruner


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
            store.audit(
                app=f"app{n}",
                tool="cache_set",
                args=f'{{"i": {i}}}',
                status="ok",
                duration_ms=0.1,
                session_id="s1",
            )
            store.cache_set(f"app{n}", f"k{i}", {"n": n, "i": i})
            store.add_history("s1", "user", f"{n}-{i}")

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(store.audit_rows(limit=5000)) == threads * per_thread
    assert len(store.history("s1", limit=5000)) == threads * per_thread
    assert all(
        store.cache_get(f"app{n}", f"k{per_thread - 1}") == {"n": n, "i": per_thread - 1}
        for n in range(threads)
    )


def test_cache_namespaces_and_ttl(tmp_path: Path) -> None:
    now = [1_000.0]
    store = Store(tmp_path / "aios.db", clock=lambda: now[0])
    store.cache_set("music", "playlist", [1, 2])
    assert store.cache_get("notes", "playlist") is None
    assert store.cache_get("music", "playlist") == [1, 2]
    store.cache_set("music", "short", "x", ttl=5)
    now[0] += 4.9
    assert store.cache_get("music", "short", "gone") == "x"
    now[0] += 0.2
    assert store.cache_get("music", "short", "gone") == "gone"
    assert not store.cache_has("music", "short")
    assert store.cache_get("music", "playlist") == [1, 2]  # no ttl: never expires
    store.close()


def test_session_memory_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "aios.db"
    s = Store(path)
    sid = s.ensure_session()
    s.add_history(sid, "user", "帮我播放周杰伦的歌")
    s.add_history(sid, "app", {"message": "为你找到 2 首歌"}, app="music")
    s.upsert_task(sid, "t1", app="music", instruction="播放", depends_on=[], status="running")
    s.upsert_task(
        sid,
        "t0",
        app="notes",
        instruction="打开",
        depends_on=[],
        status="done",
        result={"message": "ok"},
    )
    s.set_context_var(sid, "current_song", "七里香")
    s.set_agent_state(sid, "music", {"volume": 70})
    s.audit(
        app="music",
        tool="http_request",
        args="{}",
        status="denied",
        duration_ms=0.3,
        session_id=sid,
        error="domain not allowed",
    )
    s.close()

    s2 = Store(path)
    mem = s2.session(sid)
    assert mem is not None
    assert [h["content"] for h in mem["history"]] == [
        "帮我播放周杰伦的歌",
        {"message": "为你找到 2 首歌"},
    ]
    assert [t["task_id"] for t in mem["current_tasks"]] == ["t1"]
    assert mem["completed_tasks"][0]["result"] == {"message": "ok"}
    assert mem["context"] == {"current_song": "七里香"}
    assert mem["agent_states"] == {"music": {"volume": 70}}
    assert mem["tool_calls_log"][0]["status"] == "denied"
    assert s2.session("sess_unknown") is None
    s2.close()


# ------------------------------------------------------------------ hardening


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_open_fds_stay_bounded_by_the_pool_after_a_100_thread_burst(tmp_path: Path) -> None:
    pool = 4
    s = Store(tmp_path / "aios.db", pool_size=pool)
    baseline = _fds()
    threads = 100
    barrier = threading.Barrier(threads)
    peak = [0]
    done = threading.Event()

    def worker(n: int) -> None:
        barrier.wait()
        for i in range(5):
            s.add_history("s1", "user", f"{n}-{i}")
            s.history("s1", limit=5)

    def sampler() -> None:  # one sampler: listing /proc/self/fd opens an fd itself
        while not done.is_set():
            peak[0] = max(peak[0], _fds())

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    watch = threading.Thread(target=sampler)
    watch.start()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    done.set()
    watch.join()
    # a connection holds the database and its WAL; the shm is shared per process
    bound = baseline + 2 * pool + 1
    assert peak[0] <= bound, f"fds peaked at {peak[0]} (baseline {baseline}, pool {pool})"
    assert _fds() <= bound
    assert len(s.history("s1", limit=1000)) == threads * 5
    s.close()


def test_a_full_database_is_store_full_naming_the_disk_and_recovers(tmp_path: Path) -> None:
    s = Store(tmp_path / "aios.db", pool_size=1)  # one connection: the PRAGMA below holds
    pages = s._query("PRAGMA page_count")[0][0]
    s._query(f"PRAGMA max_page_count={pages}")
    with pytest.raises(StoreFull, match=f"the disk holding {tmp_path} is full"):
        for i in range(10_000):
            s.add_history("s1", "user", "x" * 1000 + str(i))
    assert s.failure() is not None and "is full" in (s.failure() or "")
    s._query(f"PRAGMA max_page_count={pages * 1000}")  # space returns
    assert s.failure() is None  # the health probe's own write clears it
    s.add_history("s1", "user", "after")
    assert s.history("s1", limit=1)[0]["content"] == "after"
    s.close()


def _damage(path: Path, how: str) -> None:
    if how == "bad header":
        with path.open("r+b") as f:
            f.write(b"this is no db!!!")
    elif how == "truncated":
        os.truncate(path, path.stat().st_size // 2)
    else:
        with path.open("r+b") as f:
            f.seek(4096 * 3)
            f.write(os.urandom(4096 * 20))


@pytest.mark.parametrize("how", ["bad header", "truncated", "garbage pages"])
def test_a_damaged_database_at_start_is_moved_aside_with_one_line(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "aios.db"
    s = Store(path)
    for i in range(3000):
        s.add_history("s1", "user", "x" * 200 + str(i))
    s.close()
    _damage(path, how)
    caplog.set_level(logging.WARNING, logger="aios.store")
    s2 = Store(path)
    broken = sorted(tmp_path.glob("aios.db.broken-*"))
    assert s2.moved_aside is not None and s2.moved_aside in broken
    assert s2.history("s1") == []
    s2.add_history("s1", "user", "fresh")
    assert [h["content"] for h in s2.history("s1")] == ["fresh"]
    lines = [r.getMessage() for r in caplog.records if r.name == "aios.store"]
    assert len(lines) == 1 and "\n" not in lines[0] and "moved it to" in lines[0]
    s2.close()


def test_a_zero_length_database_is_a_fresh_one(tmp_path: Path) -> None:
    path = tmp_path / "aios.db"
    path.write_bytes(b"")
    s = Store(path)
    assert s.moved_aside is None and not list(tmp_path.glob("*.broken-*"))
    s.add_history("s1", "user", "hi")
    assert len(s.history("s1")) == 1
    s.close()


def test_tasks_of_every_instruction_are_kept_and_unfinished_ones_are_interrupted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "aios.db"
    s = Store(path)
    sid = s.ensure_session()
    for n in range(4):  # the planner numbers every plan's tasks from t1
        s.upsert_task(
            sid,
            f"run{n}-t1",
            app="echo",
            instruction=f"say {n}",
            depends_on=[],
            status="done",
            result={"message": f"said {n}"},
        )
    s.upsert_task(sid, "run4-t1", app="echo", instruction="hang", depends_on=[], status="running")
    s.close()
    s2 = Store(path)
    assert s2.interrupt_unfinished_tasks() == 1
    mem = s2.session(sid)
    assert mem is not None and mem["current_tasks"] == []
    done = [
        (t["instruction"], (t["result"] or {}).get("message"), t["status"])
        for t in mem["completed_tasks"]
    ]
    assert done == [(f"say {n}", f"said {n}", "done") for n in range(4)] + [
        ("hang", None, "interrupted")
    ]
    s2.close()


def test_history_pages_walk_back_and_say_when_there_is_more(store: Store) -> None:
    sid = store.ensure_session()
    ids = [store.add_history(sid, "user", f"m{i}") for i in range(7)]
    page = store.session(sid, limit=3)
    assert page is not None
    assert [h["content"] for h in page["history"]] == ["m4", "m5", "m6"]
    assert page["has_more"] and page["next_before"] == ids[4]
    page = store.session(sid, before=page["next_before"], limit=3)
    assert page is not None and [h["content"] for h in page["history"]] == ["m1", "m2", "m3"]
    page = store.session(sid, before=page["next_before"], limit=3)
    assert page is not None and [h["content"] for h in page["history"]] == ["m0"]
    assert not page["has_more"] and page["next_before"] is None


def test_prune_keeps_retention_by_count_and_age(store: Store) -> None:
    for i in range(30):
        store.audit(app="a", tool="file_read", args="{}", status="ok", duration_ms=1)
        store.add_history("s1", "user", f"a{i}")
        store.add_history("s2", "user", f"b{i}")
        store.record_llm_usage(provider="p", model="m", latency_ms=1, ok=True)
    store.cache_set("app", "gone", 1, ttl=5)
    store.cache_set("app", "kept", 1, ttl=3600)
    later = time.time() + 10  # the first entry has expired by then, the second not
    deleted = store.prune(
        audit_rows=10,
        audit_days=30,
        history_rows_per_session=5,
        history_days=90,
        llm_usage_rows=8,
        now=later,
    )
    assert deleted["tool_calls_log"] == 20 and deleted["llm_usage"] == 22
    assert deleted["history"] == 50 and deleted["cache"] == 1
    assert [h["content"] for h in store.history("s1")] == [f"a{i}" for i in range(25, 30)]
    assert len(store.audit_rows(limit=100)) == 10
    # a day later with a retention of half a day, everything ages out
    deleted = store.prune(
        audit_rows=10,
        audit_days=0.5,
        history_rows_per_session=5,
        history_days=0.5,
        llm_usage_rows=8,
        now=later + 86400,
    )
    assert store.audit_rows() == [] and store.history("s1") == []
    assert store.session("s1") is None
    before = store.size_bytes()
    store.vacuum()
    assert store.size_bytes() <= before and store.last_vacuum() is not None


def test_the_pruner_thread_prunes_at_start_and_every_interval(tmp_path: Path) -> None:
    s = Store(tmp_path / "aios.db")
    for i in range(50):
        s.add_history("s1", "user", f"m{i}")
    retention = RetentionConfig(history_rows_per_session=10, prune_interval=0.05)
    now = [time.time()]
    pruner = Pruner(s, lambda: retention, clock=lambda: now[0])
    pruner.start()
    try:
        with pruner.passed:
            assert pruner.passed.wait_for(lambda: pruner.passes >= 1, timeout=10)
        assert len(s.history("s1", limit=100)) == 10
        assert s.last_vacuum() == now[0]  # the first start only sets the vacuum clock
        for i in range(20):
            s.add_history("s1", "user", f"n{i}")
        now[0] += retention.vacuum_hours * 3600
        seen = pruner.passes
        with pruner.passed:
            assert pruner.passed.wait_for(lambda: pruner.passes >= seen + 2, timeout=10)
        assert len(s.history("s1", limit=100)) == 10
        assert s.last_vacuum() == now[0]
    finally:
        pruner.stop()
        s.close()


def test_out_of_file_descriptors_is_a_clear_error_and_the_pool_keeps_working(
    tmp_path: Path,
) -> None:
    s = Store(tmp_path / "aios.db", pool_size=1)
    s.add_history("s1", "user", "before")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (_fds() + 16, hard))
    try:
        with pytest.raises(OSError):
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        with pytest.raises(StoreError, match="too many open files"):
            Store(tmp_path / "other.db")
        s.add_history("s1", "user", "during")  # the pooled connection needs no new fd
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert [h["content"] for h in s.history("s1")] == ["before", "during"]
    s.close()


def test_an_app_reply_its_state_and_the_context_are_kept_together(tmp_path: Path) -> None:
    s = Store(tmp_path / "aios.db")
    sid = "sess_reply"
    s.set_context_var(sid, "current_song", "七里香")
    first = s.add_reply(
        sid,
        "music",
        {"message": "播放中"},
        state={"volume": 70},
        context_vars={"last_app": "music"},
    )
    second = s.add_reply(sid, "music", {"message": "暂停"}, context_vars={"last_app": "music"})
    assert second > first
    assert [h["content"]["message"] for h in s.history(sid)] == ["播放中", "暂停"]
    assert s.history(sid)[-1]["app"] == "music" and s.history(sid)[-1]["role"] == "app"
    assert s.agent_state(sid, "music") == {"volume": 70}  # a reply without state keeps it
    assert s.context_vars(sid) == {"current_song": "七里香", "last_app": "music"}
