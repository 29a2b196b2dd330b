"""http_request against a real HTTP server on 127.0.0.1, always through invoke()
so the argument check, the sandbox and the audit log run as they do for apps."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aios.config import Config, SandboxConfig
from aios.protocol import ToolResult
from aios.store import Store
from aios.tools import ToolContext, invoke
from tests.conftest import make_ctx
from tests.fakes.http_server import BINARY_BODY, FakeHTTPServer


@pytest.fixture
def server() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as srv:
        yield srv


@pytest.fixture
def system() -> Iterator[FakeHTTPServer]:
    """Stands for the system's own server (or another app): its port is forbidden."""
    with FakeHTTPServer() as srv:
        yield srv


@pytest.fixture
def hctx(workdir: Path, store: Store, system: FakeHTTPServer) -> ToolContext:
    return make_ctx(workdir, store, forbidden_ports=lambda: {system.port})


def call(ctx: ToolContext, **args: Any) -> ToolResult:
    return invoke("http_request", args, ctx)


def last_audit(store: Store) -> dict[str, Any]:
    return store.audit_rows(limit=1)[0]


def workdir_files(workdir: Path) -> list[str]:
    return sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*"))


# ------------------------------------------------------------------ bodies


def test_json_body_is_parsed_and_meta_describes_the_response(hctx, server, store):
    r = call(hctx, url=server.url("/json"))
    assert r.status == "ok", r.error
    assert r.result == {"hello": "世界", "items": [1, 2, 3]}
    assert r.meta["status_code"] == 200
    assert r.meta["url"] == server.url("/json")
    assert r.meta["headers"]["Content-Type"] == "application/json"
    assert r.meta["elapsed_ms"] >= 0
    row = last_audit(store)
    assert (row["tool"], row["status"], row["app"]) == ("http_request", "ok", "demo")


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/text", "你好, world"),  # charset given
        ("/html", "<p>七里香</p>"),  # no charset: UTF-8, not ISO-8859-1
        ("/latin1", "café"),  # charset honoured
    ],
)
def test_text_bodies_are_decoded(hctx, server, path, text):
    r = call(hctx, url=server.url(path))
    assert r.status == "ok", r.error
    assert r.result == text


def test_gzip_encoded_json_is_decoded(hctx, server):
    assert call(hctx, url=server.url("/gzip")).result == {"zipped": True}


def test_binary_body_is_described_not_dumped(hctx, server):
    r = call(hctx, url=server.url("/binary"))
    assert r.status == "ok"
    assert r.result == {
        "binary": True,
        "size": len(BINARY_BODY),
        "content_type": "application/octet-stream",
    }


def test_invalid_json_comes_back_as_text_with_a_note(hctx, server):
    r = call(hctx, url=server.url("/bad-json"))
    assert r.status == "ok"
    assert r.result == "{not json"
    assert "not valid JSON" in r.meta["json_error"]


def test_head_returns_headers_only(hctx, server):
    r = call(hctx, method="head", url=server.url("/json"))
    assert r.status == "ok"
    assert r.result is None
    assert r.meta["headers"]["Content-Type"] == "application/json"
    assert server.last().method == "HEAD"


# --------------------------------------------------------- what is sent


def test_params_headers_and_json_body_reach_the_server(hctx, server):
    r = call(
        hctx,
        method="POST",
        url=server.url("/echo?x=1"),
        params={"keyword": "七里香 周杰伦", "page": 2, "exact": True, "tag": ["a", "b"]},
        headers={"X-Trace": "abc", "X-Num": 7},
        body={"song": "七里香", "n": [1, 2]},
    )
    assert r.status == "ok", r.error
    got = server.last()
    assert got.method == "POST"
    assert got.query == {
        "x": ["1"],
        "keyword": ["七里香 周杰伦"],
        "page": ["2"],
        "exact": ["true"],
        "tag": ["a", "b"],
    }
    assert got.headers["x-trace"] == "abc" and got.headers["x-num"] == "7"
    assert got.headers["content-type"] == "application/json"
    assert got.headers["user-agent"] == "TritonAIOS/0.1"
    assert got.json() == {"song": "七里香", "n": [1, 2]}


def test_string_body_is_sent_as_is_and_explicit_content_type_wins(hctx, server):
    call(
        hctx,
        method="PUT",
        url=server.url("/echo"),
        body="a=1&b=2",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    got = server.last()
    assert (got.method, got.body) == ("PUT", b"a=1&b=2")
    assert got.headers["content-type"] == "application/x-www-form-urlencoded"
    call(hctx, method="PATCH", url=server.url("/echo"), body="plain 文本")
    got = server.last()
    assert got.body == "plain 文本".encode()
    assert got.headers["content-type"] == "text/plain; charset=utf-8"


def test_no_cookie_survives_between_calls(hctx, server):
    assert call(hctx, url=server.url("/cookie")).status == "ok"
    call(hctx, url=server.url("/echo"))
    assert "cookie" not in server.last().headers


def test_proxy_settings_in_the_environment_are_ignored(hctx, server, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:1")
    r = call(hctx, url=server.url("/json"))
    assert r.status == "ok", r.error


def test_secret_headers_are_not_in_the_audit(hctx, server, store):
    call(hctx, url=server.url("/echo"), headers={"Authorization": "Bearer sk-TOPSECRET"})
    assert server.last().headers["authorization"] == "Bearer sk-TOPSECRET"
    assert "sk-TOPSECRET" not in last_audit(store)["args"]


# ------------------------------------------------------------ HTTP errors


def test_404_is_an_error_that_keeps_the_body(hctx, server, store):
    r = call(hctx, url=server.url("/status/404"))
    assert r.status == "error"
    assert r.error == "HTTP 404"
    assert r.result == {"error": "not here", "code": 404}
    assert r.meta["status_code"] == 404
    assert last_audit(store)["status"] == "error"


# -------------------------------------------------------------- redirects


def test_redirects_are_followed(hctx, server):
    r = call(hctx, url=server.url("/chain/2"))
    assert r.status == "ok", r.error
    assert r.result == {"done": True}
    assert r.meta["url"] == server.url("/chain/0")
    assert r.meta["redirects"] == 2
    assert server.paths() == ["/chain/2", "/chain/1", "/chain/0"]


def test_more_than_five_redirects_stop(hctx, server):
    r = call(hctx, url=server.url("/chain/6"))
    assert r.status == "error"
    assert "too many redirects" in r.error
    assert "/chain/0" not in server.paths()


def test_303_turns_a_post_into_a_get_and_307_keeps_it(hctx, server):
    call(hctx, method="POST", url=server.url("/redirect?code=303&to=/echo"), body={"a": 1})
    assert (server.last().method, server.last().body) == ("GET", b"")
    call(hctx, method="POST", url=server.url("/redirect?code=307&to=/echo"), body={"a": 1})
    assert (server.last().method, server.last().json()) == ("POST", {"a": 1})


def test_credentials_do_not_follow_a_redirect_to_another_host(hctx, server):
    secret = {"Authorization": "Bearer sk-1", "Cookie": "sid=1"}
    call(hctx, url=server.url("/redirect?to=/echo", host="localhost"), headers=secret)
    assert server.last().headers["authorization"] == "Bearer sk-1"  # same host: kept
    call(
        hctx,
        url=server.url(f"/redirect?to={server.url('/echo')}", host="localhost"),
        headers=secret,
    )
    assert server.last().path == "/echo"
    assert "authorization" not in server.last().headers
    assert "cookie" not in server.last().headers


def test_redirect_onto_a_forbidden_port_is_refused_before_it_is_fetched(
    hctx, server, system, store
):
    r = call(hctx, url=server.url(f"/redirect?to={system.url('/json')}"))
    assert r.status == "error"
    assert r.error.startswith("redirect refused: network policy: port")
    assert system.requests == []
    assert last_audit(store)["status"] == "denied"


def test_redirect_out_of_the_whitelist_is_refused(workdir, store, server, system):
    ctx = make_ctx(
        workdir,
        store,
        sandbox=SandboxConfig(http_domain_whitelist=["localhost"]),
        forbidden_ports=lambda: {system.port},
    )
    r = call(ctx, url=server.url(f"/redirect?to={server.url('/json')}", host="localhost"))
    assert r.status == "error"
    assert "domain '127.0.0.1' is not in the whitelist" in r.error
    assert server.paths() == ["/redirect"]


# ------------------------------------------------------- network policy


def test_whitelist_allows_listed_domains_and_their_subdomains_only(workdir, store, server):
    ctx = make_ctx(
        workdir,
        store,
        sandbox=SandboxConfig(http_domain_whitelist=["localhost", "example.invalid"]),
    )
    assert call(ctx, url=server.url("/json", host="localhost")).status == "ok"
    # A subdomain passes the policy: what stops it is DNS, not the whitelist.
    r = call(ctx, url="http://api.example.invalid/x")
    assert r.error == "cannot resolve host 'api.example.invalid'"
    assert last_audit(store)["status"] == "error"
    for url in (
        "http://example.invalid.evil.test/",
        "http://notexample.invalid/",
        server.url("/json"),
    ):
        r = call(ctx, url=url)
        assert "not in the whitelist" in r.error, url
        assert last_audit(store)["status"] == "denied"
    assert server.paths() == ["/json"]


def test_a_url_two_parsers_split_differently_is_judged_where_it_connects(workdir, store, server):
    """``http://127.0.0.2:P\\@localhost:P/`` reads as localhost to Python's urlsplit but
    urllib3 connects to 127.0.0.2: the whitelist judges where the request really goes
    (DESIGN §14.5), and nothing reaches the other host."""
    with FakeHTTPServer(host="127.0.0.2") as other:
        ctx = make_ctx(workdir, store, sandbox=SandboxConfig(http_domain_whitelist=["localhost"]))
        r = call(ctx, url=f"http://127.0.0.2:{other.port}\\@localhost:{server.port}/json")
        assert r.status == "error" and "domain '127.0.0.2' is not in the whitelist" in r.error
        assert other.requests == []


def test_a_redirect_goes_only_to_the_requests_own_or_a_granted_destination(workdir, store, server):
    """With the app's granted destinations in its context (smart/manual), a redirect to
    another destination is refused before anything is sent to it."""
    with FakeHTTPServer(host="127.0.0.2") as other:
        ctx = make_ctx(workdir, store)
        ctx.destinations = frozenset({"localhost"})
        away = other.url("/json?d=secret")
        r = call(ctx, url=server.url(f"/redirect?to={away}"))
        assert r.status == "error"
        assert r.error.startswith("redirect refused: 127.0.0.2 is not a destination granted")
        assert other.requests == []
        assert call(ctx, url=server.url("/redirect?to=/json")).status == "ok"  # same host
        ctx.destinations = frozenset({"localhost", "127.0.0.2"})
        assert call(ctx, url=server.url(f"/redirect?to={away}")).status == "ok"
        assert [r.path for r in other.requests] == ["/json"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_systems_own_port_is_refused(hctx, system, store, host):
    r = call(hctx, url=system.url("/json", host=host))
    assert r.status == "error"
    assert f"port {system.port} on {host} belongs to the system or another app" in r.error
    assert last_audit(store)["status"] == "denied"
    assert system.requests == []


@pytest.mark.parametrize("host", ["127.1", "2130706433", "[::ffff:127.0.0.1]"])
def test_the_systems_port_is_refused_however_the_address_is_spelled(hctx, system, store, host):
    r = call(hctx, url=system.url("/json", host=host))
    assert r.status == "error"
    # caught by the URL policy (every loopback spelling) or, failing that, by the
    # connected-address check in the tool: either way nothing reaches the server
    assert f"port {system.port}" in r.error
    assert last_audit(store)["status"] == "denied"
    assert system.requests == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "http://[::1",
        "not a url",
        "http:///nohost",
        "http://example.com:99999/",
    ],
)
def test_malformed_or_non_http_urls_are_refused(hctx, store, url):
    r = call(hctx, url=url)
    assert r.status == "error"
    assert r.error.startswith("network policy:"), r.error
    assert last_audit(store)["status"] == "denied"


def test_connection_refused_is_reported(hctx):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = call(hctx, url=f"http://127.0.0.1:{port}/")
    assert r.status == "error"
    assert r.error.startswith(f"connection refused by 127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"method": "TRACE", "url": "http://x/"}, "method"),
        ({"url": "http://x/", "headers": {"X-A": "1\r\nX-Injected: 2"}}, "line break"),
        ({"url": "http://x/", "headers": {"Bad Name": "1"}}, "not a valid HTTP token"),
        ({"url": "http://x/", "params": {"q": {"nested": 1}}}, "params.q"),
        ({"method": "HEAD", "url": "http://x/", "save_to": "a.txt"}, "HEAD has none"),
        ({"url": "http://x/", "timeout": 0}, "timeout"),
        ({"url": "http://x/", "verify": False}, "verify"),
    ],
)
def test_bad_arguments_are_refused_with_the_field_named(hctx, args, problem):
    r = invoke("http_request", args, hctx)
    assert r.status == "error"
    assert r.error.startswith("http_request: bad arguments")
    assert problem in r.error


# ------------------------------------------------------------- body cap


@pytest.mark.parametrize("length", ["1", "0"])  # with and without Content-Length
def test_body_larger_than_the_cap_fails(workdir, store, server, length):
    ctx = make_ctx(workdir, store, sandbox=SandboxConfig(max_http_body_bytes=4096))
    r = call(ctx, url=server.url(f"/big?size=5000&length={length}"))
    assert r.status == "error"
    assert r.error.startswith("response body exceeds 4096 bytes")
    assert r.result is None
    ok = call(ctx, url=server.url(f"/big?size=4096&length={length}"))
    assert ok.status == "ok" and len(ok.result) == 4096


# ---------------------------------------------------------------- save_to


def test_save_to_streams_the_body_into_the_workdir(hctx, server, workdir):
    r = call(hctx, url=server.url("/binary"), save_to="workspace/downloads/qilixiang.mp3")
    assert r.status == "ok", r.error
    assert r.result == {"path": "workspace/downloads/qilixiang.mp3", "size": len(BINARY_BODY)}
    assert (workdir / "downloads" / "qilixiang.mp3").read_bytes() == BINARY_BODY
    assert workdir_files(workdir) == ["downloads", "downloads/qilixiang.mp3"]


def test_save_to_replaces_an_existing_file(hctx, server, workdir):
    (workdir / "page.html").write_text("old")
    r = call(hctx, url=server.url("/html"), save_to="page.html")
    assert r.status == "ok"
    assert (workdir / "page.html").read_text() == "<p>七里香</p>"
    assert workdir_files(workdir) == ["page.html"]


def test_broken_download_leaves_the_existing_file_intact(hctx, server, workdir):
    (workdir / "song.mp3").write_bytes(b"the old song")
    r = call(hctx, url=server.url("/truncated?size=200000"), save_to="song.mp3")
    assert r.status == "error"
    assert "broke before the response was complete" in r.error
    assert (workdir / "song.mp3").read_bytes() == b"the old song"
    assert workdir_files(workdir) == ["song.mp3"]


def test_download_over_the_file_cap_saves_nothing(workdir, store, server):
    ctx = make_ctx(workdir, store, sandbox=SandboxConfig(max_file_bytes=4096))
    (workdir / "big.txt").write_text("keep me")
    r = call(ctx, url=server.url("/big?size=100000&length=0"), save_to="big.txt")
    assert r.status == "error"
    assert r.error.startswith("response body exceeds 4096 bytes")
    assert "nothing saved" in r.error
    assert (workdir / "big.txt").read_text() == "keep me"
    assert workdir_files(workdir) == ["big.txt"]


def test_error_status_saves_nothing_and_returns_the_body(hctx, server, workdir):
    r = call(hctx, url=server.url("/status/404"), save_to="missing.json")
    assert r.error == "HTTP 404"
    assert r.result == {"error": "not here", "code": 404}
    assert workdir_files(workdir) == []


@pytest.mark.parametrize("target", ["../escape.txt", "/tmp/escape.txt", "workspace"])
def test_save_to_outside_the_workdir_is_refused_before_fetching(
    hctx, server, workdir, store, target
):
    r = call(hctx, url=server.url("/text"), save_to=target)
    assert r.status == "error"
    assert "workdir" in r.error
    assert last_audit(store)["status"] == "denied"
    assert server.requests == []
    assert not (workdir.parent / "escape.txt").exists()
    assert workdir_files(workdir) == []


# --------------------------------------------------------------- timeouts


def test_slow_endpoint_times_out(hctx, server):
    r = call(hctx, url=server.url("/slow?delay=10"), timeout=0.5)
    assert r.status == "error"
    assert r.error.startswith("timed out after 0.5s")


def test_deadline_covers_the_whole_transfer(hctx, server):
    # Each byte arrives well within a read timeout; only a wall-clock deadline stops this.
    r = call(hctx, url=server.url("/drip?n=200&interval=0.05"), timeout=0.5)
    assert r.status == "error"
    assert r.error.startswith("timed out after 0.5s")


def test_requested_timeout_is_capped_by_the_config(workdir, store, server):
    ctx = make_ctx(workdir, store, config=Config(tool_timeout={"http_request": 0.5}))
    r = call(ctx, url=server.url("/slow?delay=10"), timeout=60)
    assert r.error.startswith("timed out after 0.5s")


def test_timed_out_download_leaves_no_partial_file(hctx, server, workdir):
    r = call(hctx, url=server.url("/drip?n=200&interval=0.05"), timeout=0.5, save_to="d.txt")
    assert r.error.startswith("timed out after 0.5s")
    assert workdir_files(workdir) == []
