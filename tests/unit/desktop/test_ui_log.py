"""The log of applied UI changes (aios/desktop/ui_log.py): bounded, undo pops, reset clears."""

from __future__ import annotations

from pathlib import Path

import pytest

from aios.desktop.ui_log import UILog
from aios.errors import BadRequest
from aios.store import Store


def test_the_log_is_bounded_and_undo_reset_take_changes_back(tmp_path: Path) -> None:
    store = Store(tmp_path / "aios.db")
    try:
        log = UILog(store, lambda: 3)
        ops = [{"op": "rotate", "id": "clock", "degrees": d} for d in (1, 2, 3, 4)]
        log.apply([*ops, {"op": "hide", "id": "btn_play", "window": "music"}])
        # the oldest are forgotten beyond the limit
        assert [o.get("degrees") for o in log.ops()] == [3, 4, None]
        assert log.apply([{"op": "reset", "id": "btn_play"}]) == [
            {"op": "reset", "id": "btn_play", "removed": 1}
        ]
        assert log.apply([{"op": "undo"}, {"op": "undo"}, {"op": "undo"}]) == [
            {"op": "undo", "undone": ops[3]},
            {"op": "undo", "undone": ops[2]},
            {"op": "undo"},  # nothing left to take back
        ]
        log.apply(ops[:2])
        assert log.apply([{"op": "reset"}]) == [{"op": "reset", "removed": 2}]
        assert UILog(store, lambda: 3).ops() == []
    finally:
        store.close()


def test_the_snapshot_keeps_elements_with_an_id_and_refuses_too_many(tmp_path: Path) -> None:
    store = Store(tmp_path / "aios.db")
    try:
        log = UILog(store, lambda: 3, lambda: 2)
        kept = log.save_snapshot({"elements": [{"id": "clock"}, {"id": 1}], "viewport": [1, 2]})
        assert kept == 1
        assert store.cache_get("desktop", "ui_snapshot") == {
            "elements": [{"id": "clock"}],
            "viewport": [1, 2],
        }
        for bad in ({"elements": "x"}, {"elements": [{"id": "a"}] * 3}):
            with pytest.raises(BadRequest, match="at most 2"):
                log.save_snapshot(bad)
    finally:
        store.close()
