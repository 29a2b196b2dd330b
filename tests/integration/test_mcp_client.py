"""External MCP servers as tools under the same approvals (DESIGN §17, issue 25), for real.

One real desktop (smart mode) with real MCP servers written with the official SDK
(``tests/mcp_servers/toy.py``: stdio, confined by bubblewrap where it works, and the
same server over streamable HTTP behind a bearer token) plus a real third-party
server from PyPI that runs offline (``mcp-server-time``). A hostile-ish app
(``courier``) submits plans with ``mcp.<server>.<tool>`` steps. The server ``crashy``
is the one that crashes, hangs and babbles, so the others show they are unaffected.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import ROOT, children_now, fail_on_leaked_children
from tests.fakes.fake_openai import text, tool_call
from tests.fakes.http_server import FakeHTTPServer
from tests.integration.conftest import FIXTURES, Running, copy_apps, final_view, start_system
from tests.integration.test_generic_app import RoutingFake
from tests.integration.test_launcher import free_port
from tests.util import wait_for, wait_listening

APP = "courier"
TOY = Path(__file__).resolve().parent.parent / "mcp_servers" / "toy.py"
GARBAGE = TOY.parent / "garbage.py"
SLEEPER = "import time; time.sleep(600)"
TOKEN = "mcp-test-token-0451"
WAIT = 30.0
BWRAP_PREFIX = "/usr/bin/bwrap --unshare-all"


@pytest.fixture(scope="module")
def web_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The toy server over streamable HTTP, answering only with the token."""
    port = free_port()
    log = tmp_path_factory.mktemp("webmcp") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(TOY), "http", str(port), TOKEN], stdout=out, stderr=out
        )
    try:
        wait_listening(proc, port, log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def site() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def fake() -> Iterator[RoutingFake]:
    with RoutingFake(api_key="sk-test") as f:
        yield f


@pytest.fixture(scope="module")
def running(
    tmp_path_factory: pytest.TempPathFactory, web_server: str, fake: RoutingFake
) -> Iterator[Running]:
    base = tmp_path_factory.mktemp("mcp")
    apps = copy_apps(base / "apps", [APP], source=FIXTURES / "apps_data")
    copy_apps(apps, ["assistant"], source=ROOT / "apps")
    toy = [sys.executable, str(TOY)]
    servers = {
        "toy": {"command": toy, "apps": [APP, "assistant"], "tools": {"note": {"apps": []}}},
        "time": {"command": ["python3", "-m", "mcp_server_time"], "apps": [APP]},
        "crashy": {"command": toy, "apps": [APP], "timeout": 3},
        "web": {"url": web_server, "token": TOKEN, "apps": [APP]},
        "babbler": {"command": [sys.executable, str(GARBAGE)], "apps": [APP]},
        # never answers: the desktop is ready without it, and it fails after start_timeout
        "sleeper": {"command": [sys.executable, "-c", SLEEPER], "apps": [APP]},
    }
    mcp = {
        "servers": servers,
        "ping_interval": 1,
        "ping_timeout": 2,
        "start_timeout": 15,
        "backoff_initial": 0.2,
        "backoff_max": 1,
    }
    before = children_now()
    tracebacks = _Tracebacks()
    logging.getLogger().addHandler(tracebacks)
    llm = {"api_key": "sk-test", "base_url": fake.url, "model": "fake", "max_retries": 0}
    r = start_system(
        apps, base / "data", approvals={"mode": "smart"}, mcp=mcp, handle_timeout=15, llm=llm
    )
    try:
        grant = r.post(f"/api/apps/{APP}/permissions", {"grant": ["domain:127.0.0.1"]})
        assert grant.status_code == 200, grant.text
        for name in servers:
            if name not in ("babbler", "sleeper"):
                ready(r, name)
        yield r
    finally:
        r.stop()
        logging.getLogger().removeHandler(tracebacks)
        fail_on_leaked_children(before)  # every MCP server the desktop started is gone
    # crashes, hangs, garbage: one line each in the desktop's log, never a traceback
    assert tracebacks.seen == [], tracebacks.seen


class _Tracebacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or "Traceback" in record.getMessage():
            self.seen.append(f"{record.name}: {record.getMessage()[:200]}")


@pytest.fixture(autouse=True)
def no_leaked_children(running: Running) -> Iterator[None]:
    """Here the desktop lives for the module and restarts its MCP servers during the
    tests: those are checked when it stops (``running``); anything else at each test."""
    before = children_now()
    yield
    fail_on_leaked_children(before, ignore=_mcp_server)


def _mcp_server(p: psutil.Process) -> bool:
    try:
        line = " ".join(p.cmdline())
    except psutil.Error:
        return True
    return (
        str(TOY) in line
        or str(GARBAGE) in line
        or "mcp_server_time" in line
        or SLEEPER in line
        or line.startswith(BWRAP_PREFIX)
    )


def status(r: Running, name: str) -> dict[str, Any]:
    return next(s for s in r.system.mcp.status() if s["name"] == name)


def ready(r: Running, name: str) -> dict[str, Any]:
    return wait_for(
        lambda: (s := status(r, name))["status"] == "ready" and s,
        f"MCP server {name} ready",
        timeout=WAIT,
    )


def plan(r: Running, steps: list[dict[str, Any]]) -> dict[str, Any]:
    reply = r.post("/api/action", {"app": APP, "action_id": "plan", "params": {"steps": steps}})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def results(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply.get("state") != "waiting", f"a card was shown: {reply}"
    out: dict[str, Any] = reply["response"]["data"]["results"]
    return out


def step(tool: str, args: dict[str, Any] | None = None, sid: str = "m") -> dict[str, Any]:
    return {"step_id": sid, "tool": tool, "args": args or {}}


def test_tools_are_offered_to_granted_apps_with_their_schemas(running: Running) -> None:
    # the desktop did not wait for the server that never answers (nor for the babbler)
    assert running.get("/api/health").status_code == 200
    offered = running.system.controller.contexts.mcp_tools(APP)
    lookup = offered["mcp.toy.lookup"]
    assert lookup["input_schema"]["properties"]["word"]["type"] == "string"
    assert lookup["annotations"]["readOnlyHint"] is True and lookup["risk"] == "low"
    assert offered["mcp.toy.wipe"]["risk"] == "high"
    assert "mcp.time.get_current_time" in offered and "mcp.web.lookup" in offered
    assert "mcp.toy.note" not in offered  # granted per tool: note is granted to no app
    assert running.system.controller.contexts.mcp_tools("someone_else") == {}


def test_the_assistant_plans_with_an_mcp_tool(running: Running, fake: RoutingFake) -> None:
    """The generic LLM app offers the granted MCP tools to the model as functions (with
    their input schemas) and a call of one is a step ``mcp.<server>.<tool>``."""
    fake.script([tool_call("mcp__toy__lookup", {"word": "晴天"}), text("查到了：两个字。")])
    ask = {"app": "assistant", "action_id": "ask", "value": "查一下 晴天"}
    r = running.post("/api/action", ask)
    assert r.status_code == 200, r.text
    assert r.json().get("state") != "waiting", r.json()
    offered = {
        t["function"]["name"]: t["function"] for t in fake.app_requests()[0].get("tools", [])
    }
    assert offered["mcp__toy__lookup"]["parameters"]["properties"]["word"]["type"] == "string"
    assert "mcp__toy__note" not in offered and "mcp__time__get_current_time" not in offered
    audit = running.get("/api/audit?app=assistant").json()
    assert [a["status"] for a in audit if a["tool"] == "mcp.toy.lookup"] == ["ok"]


def test_read_only_runs_without_a_card_destructive_asks_ungranted_is_refused(
    running: Running,
) -> None:
    got = results(plan(running, [step("mcp.toy.lookup", {"word": "七里香"})]))["step_m"]
    assert got["status"] == "ok" and got["result"] == {"word": "七里香", "length": 3}

    reply = plan(running, [step("mcp.toy.wipe", {"what": "everything"})])
    assert reply.get("state") == "waiting", reply
    (card,) = reply["pending"]
    (asked,) = card["steps"]
    assert asked["rule"] == "ask" and asked["risk"] == "high"
    sub = running.system.bus.subscribe()
    r = running.post(f"/api/interactions/{card['id']}", {"decision": "deny"})
    assert r.status_code == 200, r.text
    view = final_view(sub, reply["run_id"])
    assert view["data"]["results"]["step_m"]["code"] == "denied"

    # the user's rule for one MCP tool of one app: wipe runs without a card from now on
    r = running.post(f"/api/apps/{APP}/policy", {"mcp.toy.wipe": "allow"})
    assert r.status_code == 200 and r.json()["mcp.toy.wipe"] == "allow", r.text
    got = results(plan(running, [step("mcp.toy.wipe", {"what": "old notes"})]))["step_m"]
    assert got["result"] == {"result": "wiped old notes"}
    assert running.post(f"/api/apps/{APP}/policy", {"mcp.toy.wipe": None}).status_code == 200
    r = running.post(f"/api/apps/{APP}/policy", {"mcp.Bad": "allow"})
    assert r.status_code == 400 and "mcp.<server>.<tool>" in r.json()["error"]

    got = results(plan(running, [step("mcp.toy.note", {"text": "hi"})]))["step_m"]
    assert got["status"] == "error" and "not granted to courier" in got["error"]
    rows = running.system.store.audit_rows(limit=50)
    row = next(x for x in rows if x["tool"] == "mcp.toy.note")
    assert row["status"] == "denied"


def test_an_mcp_result_taints_the_run(running: Running, site: FakeHTTPServer) -> None:
    """A granted GET alone runs without a card; after an MCP result it asks (§14.5)."""
    alone = results(plan(running, [step("http_request", {"url": site.url("/json?q=a")}, "send")]))
    assert alone["step_send"]["status"] == "ok"
    reply = plan(
        running,
        [
            step("mcp.toy.lookup", {"word": "x"}),
            step("http_request", {"url": site.url("/json?q=b")}, "send"),
        ],
    )
    assert reply.get("state") == "waiting", reply
    (card,) = reply["pending"]
    send = next(s for s in card["steps"] if s["step_id"] == "step_send")
    assert send["rule"] == "ask" and "mcp.toy.lookup" in send["tainted"]
    sub = running.system.bus.subscribe()
    running.post(f"/api/interactions/{card['id']}", {"decision": "deny"})
    final_view(sub, reply["run_id"])


def test_images_are_saved_and_long_results_capped_into_the_workdir(running: Running) -> None:
    workdir = running.apps_dir / APP / "workspace"
    got = results(plan(running, [step("mcp.toy.picture")]))["step_m"]
    (saved,) = got["result"]["files"]
    assert (workdir / saved["path"]).read_bytes().startswith(b"\x89PNG")
    got = results(plan(running, [step("mcp.toy.big", {"n": 50_000})]))["step_m"]
    assert len(got["result"]) < 21_000 and "the whole result is in" in got["result"]
    whole = (workdir / got["meta"]["truncated"]["file"]).read_text()
    assert "x" * 50_000 in whole


def test_a_stdio_server_cannot_read_the_data_dir(running: Running) -> None:
    secret = running.data_dir / "settings-secret.txt"
    secret.write_text("do not read")
    own = running.data_dir / "mcp" / "toy" / "own.txt"
    own.write_text("mine")
    got = results(
        plan(
            running,
            [
                step("mcp.toy.peek", {"path": str(secret)}, "a"),
                step("mcp.toy.peek", {"path": str(running.data_dir / "aios.db")}, "b"),
                step("mcp.toy.peek", {"path": str(own)}, "c"),
            ],
        )
    )
    assert got["step_a"]["result"]["result"].startswith("cannot read")
    assert got["step_b"]["result"]["result"].startswith("cannot read")
    assert got["step_c"]["result"]["result"] == "read: mine"  # its own folder: yes


def test_the_third_party_server_and_the_http_server_with_a_token(running: Running) -> None:
    got = results(plan(running, [step("mcp.time.get_current_time", {"timezone": "UTC"})]))
    assert got["step_m"]["result"]["timezone"] == "UTC"
    got = results(plan(running, [step("mcp.web.lookup", {"word": "abc"})]))
    assert got["step_m"]["result"] == {"word": "abc", "length": 3}
    assert TOKEN not in str(running.get("/api/config").json())


def test_the_tool_list_refreshes_on_list_changed(running: Running) -> None:
    assert "mcp.web.extra" not in running.system.mcp.tools_for(APP)
    results(plan(running, [step("mcp.web.grow")]))
    wait_for(lambda: "mcp.web.extra" in running.system.mcp.tools_for(APP), "the new tool")


def _others_work(running: Running) -> None:
    got = results(
        plan(
            running,
            [
                step("mcp.toy.lookup", {"word": "ok"}, "a"),
                step("mcp.time.get_current_time", {"timezone": "UTC"}, "b"),
                step("file_list", {"path": "."}, "c"),
            ],
        )
    )
    assert all(got[k]["status"] == "ok" for k in ("step_a", "step_b", "step_c")), got


def test_a_crash_is_failed_with_its_stderr_and_restarts_others_unaffected(
    running: Running,
) -> None:
    before = ready(running, "crashy")["restarts"]
    got = results(plan(running, [step("mcp.crashy.crash")]))["step_m"]
    assert got["status"] == "error"
    failure = wait_for(
        lambda: (s := status(running, "crashy"))["restarts"] > before and s["last_failure"],
        "crashy failed",
    )
    assert "exited" in failure["reason"] or "closed" in failure["reason"]
    assert "crashing on purpose" in failure["stderr"]
    _others_work(running)
    ready(running, "crashy")
    assert (
        results(plan(running, [step("mcp.crashy.lookup", {"word": "a"})]))["step_m"]["status"]
        == "ok"
    )


def test_a_hang_times_out_is_failed_and_does_not_block_other_instructions(
    running: Running,
) -> None:
    before = ready(running, "crashy")["restarts"]
    out: dict[str, Any] = {}
    frozen = threading.Thread(
        target=lambda: out.update(plan(running, [step("mcp.crashy.freeze")])), daemon=True
    )
    frozen.start()
    wait_for(
        lambda: any(r["app"] == APP for r in running.get("/api/runs?active=1").json()),
        "the frozen run",
    )
    _others_work(running)  # while crashy hangs
    frozen.join(WAIT)
    frozen_step = results(out)["step_m"]
    # the call's own timeout (3 s) or the ping (2 s) ends it, whichever comes first
    assert frozen_step["status"] == "error" and "mcp.crashy.freeze" in frozen_step["error"]
    failure = wait_for(
        lambda: (s := status(running, "crashy"))["restarts"] > before and s["last_failure"],
        "crashy failed",
    )
    assert "hung" in failure["reason"]
    ready(running, "crashy")


def test_a_server_answering_garbage_is_failed_and_restarted(running: Running) -> None:
    failure = wait_for(lambda: status(running, "babbler")["last_failure"], "babbler failed")
    assert "garbage" in failure["reason"]
    wait_for(lambda: status(running, "babbler")["restarts"] >= 2, "babbler tried again")
    assert not any(k.startswith("mcp.babbler.") for k in running.system.mcp.tools_for(APP))
    _others_work(running)


def test_a_server_that_never_answers_fails_after_the_start_timeout(running: Running) -> None:
    failure = wait_for(
        lambda: status(running, "sleeper")["last_failure"], "sleeper failed", timeout=WAIT
    )
    assert failure["reason"] == "no tool list within 15s (mcp.start_timeout)"
    _others_work(running)


def test_cancel_stops_the_call_on_the_server_within_5_s(running: Running) -> None:
    mark = running.data_dir / "mcp" / "toy" / "cancelled.mark"
    mark.unlink(missing_ok=True)
    sub = running.system.bus.subscribe()
    out: dict[str, Any] = {}
    t = threading.Thread(
        target=lambda: out.update(plan(running, [step("mcp.toy.slow")])), daemon=True
    )
    t.start()
    deadline = time.monotonic() + WAIT
    progress = None
    while progress is None and time.monotonic() < deadline:
        ev = sub.get(timeout=1)
        if ev and ev.get("type") == "progress" and ev.get("message") == "started":
            progress = ev
    assert progress is not None, "no progress event from the slow tool"
    t0 = time.monotonic()
    r = running.post(f"/api/runs/{progress['run_id']}/cancel")
    assert r.status_code == 200, r.text
    t.join(WAIT)
    took = time.monotonic() - t0
    assert took < 5, took
    assert results(out)["step_m"]["code"] == "cancelled"
    wait_for(mark.exists, "the server saw the cancellation", timeout=5)


def test_settings_api_adds_grants_overrides_disables_and_removes(running: Running) -> None:
    """Settings → MCP's JSON API: what the user does there, end to end."""
    clock = {"name": "clock", "command": ["python3", "-m", "mcp_server_time"], "apps": [APP]}
    r = running.post("/api/mcp/servers", clock)
    assert r.status_code == 201, r.text
    assert running.post("/api/mcp/servers", clock).status_code == 409

    def listed() -> dict[str, Any]:
        servers = running.get("/api/mcp/servers").json()["servers"]
        return next(s for s in servers if s["name"] == "clock")

    view = wait_for(lambda: (v := listed())["status"] == "ready" and v, "clock ready", WAIT)
    tool = next(t for t in view["tools"] if t["tool"] == "get_current_time")
    assert tool["annotations"]["readOnlyHint"] is True and tool["risk"] == "low"
    now = [step("mcp.clock.get_current_time", {"timezone": "UTC"})]
    assert results(plan(running, now))["step_m"]["status"] == "ok"  # read-only: no card

    # the user's override: this tool is high, so it asks
    r = running.http.patch(
        running.url + "/api/mcp/servers/clock",
        json={"tools": {"get_current_time": {"risk": "high"}}},
        timeout=20,
    )
    assert r.status_code == 200, r.text
    reply = plan(running, now)
    assert reply.get("state") == "waiting" and reply["pending"][0]["steps"][0]["risk"] == "high"
    sub = running.system.bus.subscribe()
    running.post(f"/api/interactions/{reply['pending'][0]['id']}", {"decision": "deny"})
    final_view(sub, reply["run_id"])

    # disabled: offered to nobody; a plan naming it anyway asks as high (no server lists
    # it now), and allowing it runs nothing
    r = running.http.patch(
        running.url + "/api/mcp/servers/clock", json={"enabled": False}, timeout=20
    )
    assert r.status_code == 200 and r.json()["status"] == "stopped", r.text
    assert not any(k.startswith("mcp.clock.") for k in running.system.mcp.tools_for(APP))
    reply = plan(running, now)
    assert reply["pending"][0]["steps"][0]["risk"] == "high"
    sub = running.system.bus.subscribe()
    running.post(f"/api/interactions/{reply['pending'][0]['id']}", {"decision": "allow"})
    got = final_view(sub, reply["run_id"])["data"]["results"]["step_m"]
    assert got["status"] == "error" and "not granted" in got["error"]

    assert running.http.delete(running.url + "/api/mcp/servers/clock", timeout=20).ok
    assert (
        running.http.delete(running.url + "/api/mcp/servers/clock", timeout=20).status_code == 404
    )
    assert all(s["name"] != "clock" for s in running.get("/api/mcp/servers").json()["servers"])


def test_bad_servers_are_one_clear_error(running: Running) -> None:
    bad = running.post("/api/mcp/servers", {"name": "Bad Name", "url": "http://127.0.0.1:9/m"})
    assert bad.status_code == 400 and "server name" in bad.json()["error"]
    bad = running.post("/api/mcp/servers", {"name": "x", "url": "ftp://a"})
    assert bad.status_code == 400 and "http://" in bad.json()["error"]
    bad = running.post("/api/mcp/servers", {"name": "x"})
    assert bad.status_code == 400 and "either" in bad.json()["error"]
    bad = running.http.patch(running.url + "/api/mcp/servers/nope", json={}, timeout=20)
    assert bad.status_code == 404
    shown = running.get("/api/mcp/servers").json()["servers"]
    web = next(s for s in shown if s["name"] == "web")
    assert web["config"]["token"].startswith("••••") and TOKEN not in str(shown)


def test_an_apps_synchronous_call_tool_reaches_granted_mcp_tools_only(running: Running) -> None:
    """``self.call_tool("mcp.…")`` from an app, outside a plan (last in this module: what
    it reads taints the app's later calls outside runs)."""
    r = running.post(
        "/api/action",
        {
            "app": APP,
            "action_id": "calls",
            "params": {
                "calls": [
                    {"tool": "mcp.toy.note", "args": {"text": "hi"}},
                    {"tool": "mcp.toy.lookup", "args": {"word": "ab"}},
                ]
            },
        },
    )
    assert r.status_code == 200, r.text
    noted, looked = r.json()["response"]["data"]["results"]
    assert looked == {"result": {"word": "ab", "length": 2}}
    assert "not granted to courier" in noted["error"]
