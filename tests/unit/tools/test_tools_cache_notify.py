"""cache_get / cache_set / notify through aios.tools.invoke, on a real store."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from aios.protocol import ToolResult
from aios.store import Store
from aios.tools import ToolContext, invoke
from aios.tools.cache import MAX_VALUE_BYTES, publish_ui_snapshot
from tests.conftest import make_ctx

SNAPSHOT = {
    "elements": [
        {
            "id": "btn_play",
            "type": "button",
            "label": "播放",
            "x": 100,
            "y": 200,
            "width": 80,
            "height": 36,
            "visible": True,
        }
    ]
}


@pytest.fixture
def ctx(workdir: Path, store: Store) -> ToolContext:
    # These tools need no process table, so the context is built directly.
    return make_ctx(workdir, store)


@pytest.fixture
def other(tmp_path: Path, store: Store) -> ToolContext:
    """A second app sharing the same store."""
    return make_ctx((tmp_path / "apps/other/workspace").resolve(), store, app_id="other")


def run(ctx: ToolContext, tool: str, **args: Any) -> ToolResult:
    return invoke(tool, args, ctx)


def audit_status(ctx: ToolContext) -> str:
    assert ctx.store is not None
    return ctx.store.audit_rows(app=ctx.app_id, limit=1)[0]["status"]


# --------------------------------------------------------------------- cache


def test_set_then_get(ctx: ToolContext) -> None:
    value = {"songs": [{"id": "s_001", "title": "七里香"}], "n": 1.5, "ok": True}
    r = run(ctx, "cache_set", key="search:周杰伦", value=value)
    assert r.status == "ok" and r.result == {"key": "search:周杰伦", "stored": True}
    assert audit_status(ctx) == "ok"
    got = run(ctx, "cache_get", key="search:周杰伦")
    assert got.status == "ok" and got.result == value and got.meta == {"hit": True}
    run(ctx, "cache_set", key="search:周杰伦", value=None)
    assert run(ctx, "cache_get", key="search:周杰伦").meta == {"hit": True}


def test_missing_key_is_a_miss_not_an_error(ctx: ToolContext) -> None:
    r = run(ctx, "cache_get", key="never-set")
    assert r.status == "ok" and r.result is None and r.meta == {"hit": False}
    assert audit_status(ctx) == "ok"


def test_entries_expire_after_their_ttl(ctx: ToolContext, store: Store) -> None:
    now = [1_000.0]
    store.clock = lambda: now[0]
    run(ctx, "cache_set", key="short", value="soon gone", ttl=20)
    run(ctx, "cache_set", key="long", value="stays")
    now[0] += 19
    assert run(ctx, "cache_get", key="short").result == "soon gone"
    now[0] += 2
    assert run(ctx, "cache_get", key="short").meta == {"hit": False}
    assert run(ctx, "cache_get", key="long").result == "stays"


def test_another_apps_keys_are_out_of_reach(
    ctx: ToolContext, other: ToolContext, store: Store
) -> None:
    run(ctx, "cache_set", key="secret", value="demo's")
    for key in ("secret", "demo:secret", "demo/secret"):
        r = run(other, "cache_get", key=key)
        assert r.status == "ok" and r.result is None and r.meta == {"hit": False}, key
    # A key prefixed with another app's name lands in the caller's own namespace.
    run(other, "cache_set", key="demo:secret", value="forged")
    assert run(ctx, "cache_get", key="secret").result == "demo's"
    assert store.cache_get("other", "demo:secret") == "forged"
    assert not store.cache_has("demo", "demo:secret")


def test_concurrent_sets_from_threads_lose_nothing(ctx: ToolContext) -> None:
    errors: list[str] = []

    def worker(t: int) -> None:
        for i in range(20):
            r = run(ctx, "cache_set", key=f"k{t}_{i}", value={"t": t, "i": i})
            if r.status != "ok":
                errors.append(r.error or "?")
            r = run(ctx, "cache_set", key="shared", value=t)
            if r.status != "ok":
                errors.append(r.error or "?")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    for t in range(6):
        for i in range(20):
            assert run(ctx, "cache_get", key=f"k{t}_{i}").result == {"t": t, "i": i}
    assert run(ctx, "cache_get", key="shared").result in range(6)
    assert ctx.store is not None
    rows = ctx.store.audit_rows(app="demo", limit=5000)
    assert sum(1 for row in rows if row["tool"] == "cache_set") == 6 * 40


def test_ui_snapshot_needs_desktop_control(workdir: Path, store: Store, ctx: ToolContext) -> None:
    publish_ui_snapshot(store, SNAPSHOT)
    denied = run(ctx, "cache_get", key="desktop:ui_snapshot")
    assert denied.status == "error" and denied.result is None
    assert "desktop.control" in (denied.error or "")
    assert audit_status(ctx) == "denied"

    control = make_ctx(
        workdir, store, app_id="system_control", permissions=frozenset({"desktop.control"})
    )
    r = run(control, "cache_get", key="desktop:ui_snapshot")
    assert r.status == "ok" and r.result == SNAPSHOT and r.meta == {"hit": True}

    forged = run(control, "cache_set", key="desktop:ui_snapshot", value={"elements": []})
    assert forged.status == "error" and "written by the desktop only" in (forged.error or "")
    assert audit_status(control) == "denied"
    assert run(control, "cache_get", key="desktop:ui_snapshot").result == SNAPSHOT


def test_an_app_named_like_a_system_namespace_gets_no_cache(workdir: Path, store: Store) -> None:
    publish_ui_snapshot(store, SNAPSHOT)
    impostor = make_ctx(workdir, store, app_id="desktop")
    r = run(impostor, "cache_set", key="ui_snapshot", value={"elements": []})
    assert r.status == "error" and "reserved" in (r.error or "")
    assert run(impostor, "cache_get", key="ui_snapshot").status == "error"
    assert store.cache_get("desktop", "ui_snapshot") == SNAPSHOT


@pytest.mark.parametrize(
    "args, field",
    [
        ({"key": ""}, "key"),
        ({"key": "k" * 257}, "key"),
        ({"key": "k", "value": object()}, "JSON-serialisable"),
        ({"key": "k", "value": "x" * MAX_VALUE_BYTES}, "over the cache limit"),
        ({"key": "k", "value": 1, "ttl": 0}, "ttl"),
        ({"key": "k", "value": 1, "ttl": -5}, "ttl"),
        ({"key": "k"}, "value"),
    ],
)
def test_bad_cache_set_is_refused_and_stores_nothing(
    ctx: ToolContext, store: Store, args: dict[str, Any], field: str
) -> None:
    r = run(ctx, "cache_set", **args)
    assert r.status == "error" and field in (r.error or "")
    assert audit_status(ctx) == "denied"
    assert not store.cache_has("demo", args["key"])


def test_cache_without_a_store_is_a_clear_error(workdir: Path) -> None:
    r = invoke("cache_get", {"key": "k"}, make_ctx(workdir, None))
    assert r.status == "error" and "not available" in (r.error or "")


# -------------------------------------------------------------------- notify


def test_notify_reaches_the_desktop(workdir: Path, store: Store) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    ctx = make_ctx(workdir, store, emit=lambda kind, data: events.append((kind, data)))
    r = run(ctx, "notify", title="下载完成", body="七里香.mp3", level="success")
    assert r.status == "ok" and r.result["delivered"] is True
    uuid.UUID(r.result["id"])
    [(kind, data)] = events
    assert kind == "notify"
    assert {k: data[k] for k in ("id", "app", "title", "body", "level")} == {
        "id": r.result["id"],
        "app": "demo",
        "title": "下载完成",
        "body": "七里香.mp3",
        "level": "success",
    }
    assert isinstance(data["ts"], float)
    assert audit_status(ctx) == "ok"


def test_notify_defaults_to_info(workdir: Path, store: Store) -> None:
    events: list[dict[str, Any]] = []
    ctx = make_ctx(workdir, store, emit=lambda kind, data: events.append(data))
    run(ctx, "notify", title="hi")
    assert events[0]["level"] == "info" and events[0]["body"] == ""


def test_notify_outside_the_system_is_not_delivered(ctx: ToolContext) -> None:
    r = run(ctx, "notify", title="hello")
    assert r.status == "ok" and r.result["delivered"] is False
    assert r.meta is not None and "no desktop" in r.meta["reason"]


def test_notify_survives_a_broken_event_channel(workdir: Path, store: Store) -> None:
    def broken(kind: str, data: dict[str, Any]) -> None:
        raise ConnectionError("socket closed")

    ctx = make_ctx(workdir, store, emit=broken)
    r = run(ctx, "notify", title="hello")
    assert r.status == "ok" and r.result["delivered"] is False
    assert r.meta is not None and "socket closed" in r.meta["reason"]


@pytest.mark.parametrize(
    "args, field",
    [
        ({"title": "t", "level": "fatal"}, "level"),
        ({"title": ""}, "title"),
        ({"body": "no title"}, "title"),
    ],
)
def test_bad_notify_is_refused_and_nothing_is_shown(
    workdir: Path, store: Store, args: dict[str, Any], field: str
) -> None:
    events: list[Any] = []
    ctx = make_ctx(workdir, store, emit=lambda kind, data: events.append(data))
    r = run(ctx, "notify", **args)
    assert r.status == "error" and field in (r.error or "")
    assert audit_status(ctx) == "denied"
    assert events == []
