"""file_read / file_write / file_list through aios.tools.invoke, on real files."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from aios.config import SandboxConfig
from aios.protocol import ToolResult
from aios.store import Store
from aios.tools import ToolContext, invoke
from tests.conftest import make_ctx


@pytest.fixture
def ctx(workdir: Path, store: Store) -> ToolContext:
    # The file tools need no process table, so the context is built directly.
    return make_ctx(workdir, store)


def run(ctx: ToolContext, tool: str, **args: Any) -> ToolResult:
    return invoke(tool, args, ctx)


def last_audit(ctx: ToolContext) -> dict[str, Any]:
    assert ctx.store is not None
    return ctx.store.audit_rows(app=ctx.app_id, limit=1)[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (not following links) with its bytes.

    The system store (``data/``) is left out: the audit log is written to it.
    """
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and not p.is_symlink() and "data" not in p.relative_to(folder).parts:
            out[str(p.relative_to(folder))] = p.read_bytes()
    return out


# ------------------------------------------------------------------ file_read


def test_read_returns_the_text_itself(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "greeting.txt").write_text("你好", encoding="utf-8")
    r = run(ctx, "file_read", path="greeting.txt")
    assert r.status == "ok"
    assert f"{r.result}，世界" == "你好，世界"
    assert r.meta is not None
    assert r.meta["path"] == "workspace/greeting.txt"
    assert r.meta["size"] == 6
    assert r.meta["truncated"] is False
    assert r.meta["encoding"] == "utf-8"
    row = last_audit(ctx)
    assert (row["tool"], row["status"]) == ("file_read", "ok")
    assert "greeting.txt" in row["args"]


def test_read_accepts_the_workdir_name_as_first_component(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "recent.json").write_text("[]")
    assert run(ctx, "file_read", path="workspace/recent.json").result == "[]"


def test_offset_and_limit_count_characters(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "n.txt").write_text("一二三四五", encoding="utf-8")
    r = run(ctx, "file_read", path="n.txt", offset=1, limit=2)
    assert r.result == "二三"
    assert r.meta is not None and r.meta["next_offset"] == 3
    rest = run(ctx, "file_read", path="n.txt", offset=3)
    assert rest.result == "四五"
    assert rest.meta is not None and "next_offset" not in rest.meta
    assert run(ctx, "file_read", path="n.txt", offset=50).result == ""


def test_read_is_capped_on_a_character_boundary(workdir: Path, store: Store) -> None:
    ctx = make_ctx(workdir, store, sandbox=SandboxConfig(max_read_bytes=1024))
    (workdir / "big.txt").write_text("中" * 1000, encoding="utf-8")  # 3000 bytes
    r = run(ctx, "file_read", path="big.txt")
    assert r.status == "ok"
    assert r.result == "中" * 341  # 1023 bytes: the next character would cross the cap
    assert r.meta is not None
    assert r.meta["truncated"] is True
    assert r.meta["next_offset"] == 341
    more = run(ctx, "file_read", path="big.txt", offset=341)
    assert more.result == "中" * 341
    # A limit larger than the cap does not lift it.
    limited = run(ctx, "file_read", path="big.txt", limit=900)
    assert limited.result == "中" * 341
    assert limited.meta is not None and limited.meta["truncated"] is True


def test_binary_is_decoded_with_replacement_and_says_so(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "blob.bin").write_bytes(b"ab\xff\xfe\x00cd")
    r = run(ctx, "file_read", path="blob.bin")
    assert r.status == "ok"
    assert r.result.startswith("ab\ufffd") and r.result.endswith("\x00cd")
    assert r.meta is not None and "replaced" in r.meta["encoding"]


def test_missing_file_is_an_error_naming_it(ctx: ToolContext) -> None:
    r = run(ctx, "file_read", path="nope.txt")
    assert r.status == "error"
    assert r.error == "file not found: workspace/nope.txt"
    assert last_audit(ctx)["status"] == "error"


@pytest.mark.parametrize(
    "path", ["../../../config.json", "/etc/passwd", "../../other/workspace/private.txt"]
)
def test_read_outside_the_workdir_is_refused(ctx: ToolContext, path: str) -> None:
    r = run(ctx, "file_read", path=path)
    assert r.status == "error"
    assert r.result is None
    assert "path confinement" in (r.error or "")
    row = last_audit(ctx)
    assert (row["tool"], row["status"]) == ("file_read", "denied")


def test_read_through_a_symlink_pointing_outside_is_refused(
    ctx: ToolContext, workdir: Path, tmp_path: Path
) -> None:
    (workdir / "cfg").symlink_to(tmp_path / "config.json")
    r = run(ctx, "file_read", path="cfg")
    assert r.status == "error" and "outside" in (r.error or "")
    assert r.result is None
    assert last_audit(ctx)["status"] == "denied"


def test_read_of_a_folder_is_an_error(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "sub").mkdir()
    r = run(ctx, "file_read", path="sub")
    assert r.status == "error" and "is a directory" in (r.error or "")


def test_read_of_a_fifo_is_refused_without_blocking(ctx: ToolContext, workdir: Path) -> None:
    os.mkfifo(workdir / "pipe")
    r = run(ctx, "file_read", path="pipe")  # would hang forever if opened blocking
    assert r.status == "error"
    assert "FIFO" in (r.error or "")
    assert last_audit(ctx)["status"] == "denied"


# ----------------------------------------------------------------- file_write


def test_write_creates_folders_and_reports_path_and_size(ctx: ToolContext, workdir: Path) -> None:
    r = run(ctx, "file_write", path="notes/day/a.txt", content="héllo")
    assert r.status == "ok"
    assert r.result == {"path": "workspace/notes/day/a.txt", "size": 6}
    assert (workdir / "notes/day/a.txt").read_bytes() == "héllo".encode()
    assert os.listdir(workdir / "notes/day") == ["a.txt"]  # no temp file left behind
    assert last_audit(ctx)["status"] == "ok"


def test_write_of_a_json_value_writes_readable_json(ctx: ToolContext, workdir: Path) -> None:
    value = {"songs": [{"id": "s_001", "name": "七里香"}]}
    r = run(ctx, "file_write", path="workspace/recent.json", content=value)
    assert r.status == "ok"
    text = (workdir / "recent.json").read_text(encoding="utf-8")
    assert "七里香" in text and "\n  " in text  # not \u-escaped, indented
    assert json.loads(run(ctx, "file_read", path="recent.json").result) == value
    assert r.result["size"] == len(text.encode())


def test_append_adds_to_the_end(ctx: ToolContext, workdir: Path) -> None:
    run(ctx, "file_write", path="log.txt", content="one\n")
    r = run(ctx, "file_write", path="log.txt", content="two\n", mode="append")
    assert r.result == {"path": "workspace/log.txt", "size": 8}
    assert (workdir / "log.txt").read_text() == "one\ntwo\n"
    fresh = run(ctx, "file_write", path="new.txt", content="x", mode="append")
    assert fresh.status == "ok" and (workdir / "new.txt").read_text() == "x"


def test_overwrite_keeps_the_file_mode(ctx: ToolContext, workdir: Path) -> None:
    f = workdir / "run.sh"
    f.write_text("old")
    f.chmod(0o750)
    run(ctx, "file_write", path="run.sh", content="new")
    assert f.read_text() == "new" and (f.stat().st_mode & 0o777) == 0o750


def test_too_big_write_is_refused_and_the_old_file_is_intact(workdir: Path, store: Store) -> None:
    ctx = make_ctx(workdir, store, sandbox=SandboxConfig(max_file_bytes=1024))
    old = workdir / "data.txt"
    old.write_bytes(b"old content\x00\xff")
    before = snapshot(workdir)
    r = run(ctx, "file_write", path="data.txt", content="x" * 2000)
    assert r.status == "error"
    assert "max_file_bytes" in (r.error or "") and "unchanged" in (r.error or "")
    assert last_audit(ctx)["status"] == "denied"
    assert snapshot(workdir) == before
    old.write_bytes(b"y" * 1000)
    before = snapshot(workdir)
    r = run(ctx, "file_write", path="data.txt", content="z" * 100, mode="append")
    assert r.status == "error" and "1100 bytes" in (r.error or "")
    assert snapshot(workdir) == before


@pytest.mark.parametrize("path", ["../escape.txt", "../../other/workspace/private.txt"])
def test_write_outside_the_workdir_is_refused(ctx: ToolContext, tmp_path: Path, path: str) -> None:
    before = snapshot(tmp_path)
    r = run(ctx, "file_write", path=path, content="pwned")
    assert r.status == "error" and "outside" in (r.error or "")
    assert last_audit(ctx)["status"] == "denied"
    assert snapshot(tmp_path) == before


def test_absolute_path_write_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    target = tmp_path / "abs.txt"
    r = run(ctx, "file_write", path=str(target), content="pwned")
    assert r.status == "error" and "absolute path" in (r.error or "")
    assert not target.exists()


def test_write_through_a_symlink_pointing_outside_is_refused(
    ctx: ToolContext, workdir: Path, tmp_path: Path
) -> None:
    (workdir / "cfg.json").symlink_to(tmp_path / "config.json")
    (workdir / "other").symlink_to(tmp_path / "apps/other/workspace")
    (workdir / "dangling").symlink_to(tmp_path / "created_by_app.txt")
    before = snapshot(tmp_path)
    for path in ("cfg.json", "other/private.txt", "other/new.txt", "dangling"):
        r = run(ctx, "file_write", path=path, content="pwned")
        assert r.status == "error" and "outside" in (r.error or ""), path
        assert last_audit(ctx)["status"] == "denied"
    assert snapshot(tmp_path) == before
    assert (workdir / "cfg.json").is_symlink()


def test_write_through_a_symlink_inside_updates_its_target(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "real.txt").write_text("old")
    (workdir / "alias.txt").symlink_to("real.txt")
    r = run(ctx, "file_write", path="alias.txt", content="new")
    assert r.result == {"path": "workspace/real.txt", "size": 3}
    assert (workdir / "alias.txt").is_symlink()
    assert (workdir / "real.txt").read_text() == "new"


def test_write_bad_arguments_are_refused_naming_the_field(ctx: ToolContext, workdir: Path) -> None:
    r = run(ctx, "file_write", path="a.txt", content="x", mode="truncate")
    assert r.status == "error" and "mode" in (r.error or "")
    r = run(ctx, "file_write", path="a.txt", content={1, 2})
    assert r.status == "error" and "content" in (r.error or "")
    r = run(ctx, "file_write", path="a.txt")
    assert r.status == "error" and "content" in (r.error or "")
    assert not (workdir / "a.txt").exists()


def test_write_onto_a_folder_is_an_error(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "sub").mkdir()
    r = run(ctx, "file_write", path="sub", content="x")
    assert r.status == "error" and "directory" in (r.error or "")
    assert run(ctx, "file_write", path="workspace", content="x").status == "error"
    assert (workdir / "sub").is_dir()


# ------------------------------------------------------------------ file_list


def test_list_shows_sorted_entries_with_type_size_and_time(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "b.mp3").write_bytes(b"\x00" * 10)
    (workdir / "a.txt").write_text("hi")
    (workdir / "sub").mkdir()
    r = run(ctx, "file_list", path="workspace")
    assert r.status == "ok"
    assert r.result["path"] == "workspace"
    entries = r.result["entries"]
    assert [(e["name"], e["type"], e["size"]) for e in entries] == [
        ("a.txt", "file", 2),
        ("b.mp3", "file", 10),
        ("sub", "dir", None),
    ]
    assert entries[0]["modified"].startswith(time.strftime("%Y", time.gmtime()))
    assert r.meta == {"count": 3, "total": 3, "truncated": False}
    assert run(ctx, "file_list").result == r.result  # default "." is the workdir too
    assert last_audit(ctx)["status"] == "ok"


def test_list_filters_by_pattern(ctx: ToolContext, workdir: Path) -> None:
    for name in ("a.mp3", "b.mp3", "c.txt"):
        (workdir / name).write_text("")
    r = run(ctx, "file_list", path=".", pattern="*.mp3")
    assert [e["name"] for e in r.result["entries"]] == ["a.mp3", "b.mp3"]


def test_list_does_not_follow_links_out_of_the_workdir(
    ctx: ToolContext, workdir: Path, tmp_path: Path
) -> None:
    (workdir / "escape").symlink_to(tmp_path / "apps/other/workspace")
    (workdir / "cfg").symlink_to(tmp_path / "config.json")
    r = run(ctx, "file_list")
    assert [(e["name"], e["type"], e["size"]) for e in r.result["entries"]] == [
        ("cfg", "link", None),
        ("escape", "link", None),
    ]
    inside = run(ctx, "file_list", path="escape")
    assert inside.status == "error" and "outside" in (inside.error or "")
    assert inside.result is None
    assert last_audit(ctx)["status"] == "denied"


def test_list_is_capped(ctx: ToolContext, workdir: Path) -> None:
    for i in range(1005):
        (workdir / f"f{i:04d}").touch()
    r = run(ctx, "file_list")
    assert len(r.result["entries"]) == 1000
    assert r.result["entries"][-1]["name"] == "f0999"
    assert r.meta == {"count": 1000, "total": 1005, "truncated": True}


def test_list_errors(ctx: ToolContext, workdir: Path) -> None:
    (workdir / "a.txt").write_text("")
    missing = run(ctx, "file_list", path="nope")
    assert missing.status == "error" and missing.error == "folder not found: workspace/nope"
    not_dir = run(ctx, "file_list", path="a.txt")
    assert not_dir.status == "error" and "not a folder" in (not_dir.error or "")
    outside = run(ctx, "file_list", path="../..")
    assert outside.status == "error" and "outside" in (outside.error or "")
    statuses = [row["status"] for row in ctx.store.audit_rows(limit=3)]  # type: ignore[union-attr]
    assert statuses == ["denied", "error", "error"]
