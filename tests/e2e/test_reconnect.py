"""The desktop resumes its event stream (DESIGN §12 "Events"): after the server drops the
WebSocket, the page reconnects with ``?since=`` and shows what was emitted meanwhile, once;
a reload resumes from the tab's stored seq; a stream it cannot resume makes it reload the
runs state (the ``aios:runs-state`` DOM event the approval cards listen to)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import WebSocket, expect

from tests.e2e.conftest import Desk, wait_until

pytestmark = pytest.mark.e2e

SYSTEM_APPS = ["gallery"]

# Installed before the page's scripts: records every aios:runs-state the page dispatches.
RUNS_STATE_PROBE = """
window.__runsStates = [];
document.addEventListener('aios:runs-state', (e) => window.__runsStates.push(e.detail));
"""


def notify(desk: Desk, body: str) -> dict[str, Any]:
    return desk.running.system.bus.emit(
        "notify", {"app": "gallery", "title": "t", "level": "info", "body": body, "id": body}
    )


def query(ws: WebSocket) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(ws.url).query).items()}


def runs_states(desk: Desk) -> list[dict[str, Any]]:
    states: list[dict[str, Any]] = desk.page.evaluate("() => window.__runsStates || []")
    return states


def test_events_emitted_while_the_socket_was_dropped_show_after_it_reconnects(
    desk: Desk,
) -> None:
    page, bus = desk.page, desk.running.system.bus
    sockets: list[WebSocket] = []
    page.on("websocket", lambda ws: sockets.append(ws))
    net = page.locator("#tray_net")
    items = page.locator("#notifications_list .notify-item")

    seen = notify(desk, "before the drop")
    expect(page.locator("#toasts .toast", has_text="before the drop")).to_be_visible()

    assert bus.end_subscriptions() == 1  # the server hangs up on the page
    missed = [notify(desk, f"while away {i}") for i in range(3)]
    expect(net).to_have_attribute("data-state", "open")
    for e in missed:
        expect(page.locator("#toasts .toast", has_text=e["body"])).to_be_visible()

    # the page came back from the last seq it had handled, in this epoch
    wait_until(lambda: len(sockets) >= 1, "the page's reconnect")
    resumed = query(sockets[-1])
    assert resumed["since"] == str(seen["seq"]) and resumed["epoch"] == bus.epoch
    page.locator("#notifications_button").click()
    for body in ["before the drop", "while away 0", "while away 1", "while away 2"]:
        expect(items.filter(has_text=body)).to_have_count(1)  # each shown once


def test_a_reload_resumes_from_the_stored_seq_and_reloads_the_runs_state(desk: Desk) -> None:
    page, bus = desk.page, desk.running.system.bus
    page.context.add_init_script(RUNS_STATE_PROBE)
    last = notify(desk, "before the reload")
    expect(page.locator("#toasts .toast", has_text="before the reload")).to_be_visible()
    sockets: list[WebSocket] = []
    page.on("websocket", lambda ws: sockets.append(ws))

    page.reload()
    expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
    wait_until(lambda: len(sockets) >= 1, "the page's socket")
    q = query(sockets[0])
    assert int(q["since"]) >= last["seq"] and q["epoch"] == bus.epoch
    # the event handled before the reload is not shown again
    after = notify(desk, "after the reload")
    expect(page.locator("#toasts .toast", has_text="after the reload")).to_be_visible()
    expect(page.locator("#toasts .toast", has_text="before the reload")).to_have_count(0)
    assert after["seq"] > last["seq"]
    # a fresh page reads the pending decisions and active runs once
    wait_until(lambda: len(runs_states(desk)) >= 1, "aios:runs-state after the reload")
    state = runs_states(desk)[0]
    assert state["reason"] == "load"
    assert isinstance(state["interactions"], list) and isinstance(state["runs"], list)


def test_a_stream_of_another_epoch_makes_the_page_reload_the_runs_state(desk: Desk) -> None:
    page, bus = desk.page, desk.running.system.bus
    page.context.add_init_script(RUNS_STATE_PROBE)
    # as if the tab's last seq came from a server that has restarted since
    page.evaluate("() => sessionStorage.setItem('aios.events.epoch', 'an-older-epoch')")
    page.reload()
    expect(page.locator("#tray_net")).to_have_attribute("data-state", "open")
    wait_until(
        lambda: any(s["reason"] == "epoch" for s in runs_states(desk)),
        "aios:runs-state for the new epoch",
    )
    assert page.evaluate("() => sessionStorage.getItem('aios.events.epoch')") == bus.epoch
    # and the page goes on with the live stream of this epoch
    notify(desk, "in the new epoch")
    expect(page.locator("#toasts .toast", has_text="in the new epoch")).to_be_visible()
