"""Destinations and taint (DESIGN §14.5): one spelling per host, as the client connects.

Every spelling an attacker tries for a host that was not granted must come out as
that host (never as the granted one), and a URL two parsers read differently must
not be approvable at all.
"""

from __future__ import annotations

import pytest

from aios.protocol.outbound import (
    BadDestination,
    Taint,
    card_text,
    check_domain,
    covers,
    destination,
    read_of,
    why,
)

GRANTED = frozenset({"example.com", "127.0.0.1"})


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://EXAMPLE.com./x", "example.com"),
        ("http://granted.example.com/", "granted.example.com"),
        ("http://example.com@evil.test/", "evil.test"),  # userinfo, not the host
        ("http://example.com:80@evil.test/", "evil.test"),
        ("http://evil.test\\@example.com/", "evil.test"),  # urllib3 ends the authority at \
        ("http://evil.test#@example.com/", "evil.test"),
        ("http://evil.test?@example.com/", "evil.test"),
        ("http://ex%61mple.com/", "example.com"),  # requests decodes the host
        ("http://exаmple.com/", "xn--exmple-4nf.com"),  # a Cyrillic а: punycode, not example
        ("http://пример.рф/", "xn--e1afmkfd.xn--p1ai"),
        ("http://2130706433/", "127.0.0.1"),  # decimal
        ("http://0x7f000001/", "127.0.0.1"),  # hex
        ("http://0177.0.0.1/", "127.0.0.1"),  # octal
        ("http://127.1/", "127.0.0.1"),  # short
        ("http://2130706434/", "127.0.0.2"),
        ("http://[::ffff:7f00:2]/", "127.0.0.2"),  # IPv4-mapped IPv6
        ("http://[0:0:0:0:0:0:0:1]/", "::1"),
    ],
)
def test_every_spelling_of_a_host_is_one_destination(url: str, host: str) -> None:
    assert destination(url) == host


@pytest.mark.parametrize("url", ["http:///nohost", "not a url", "http://[::1/", "ftp://"])
def test_a_url_naming_no_single_destination_is_refused(url: str) -> None:
    with pytest.raises(BadDestination):
        destination(url)


def test_a_grant_covers_its_subdomains_but_an_ip_only_itself() -> None:
    assert covers(GRANTED, "example.com") and covers(GRANTED, "api.example.com")
    assert not covers(GRANTED, "example.com.evil.test")
    assert not covers(GRANTED, "notexample.com")
    assert not covers(GRANTED, "xn--exmple-4nf.com")
    assert covers(GRANTED, "127.0.0.1") and not covers(GRANTED, "127.0.0.2")
    assert not covers(frozenset({"0.1"}), "127.0.0.1")  # no suffix match on addresses


def test_manifest_domains_are_canonical_hosts() -> None:
    assert check_domain("*.Example.COM.") == "example.com"
    assert check_domain("2130706433") == "127.0.0.1"
    assert check_domain("::1") == "::1"
    for bad in ("https://x.com", "x.com/path", "x.com:8080", "user@x.com", "", "*"):
        with pytest.raises(BadDestination):
            check_domain(bad)


def test_the_card_shows_method_full_url_body_size_headers_and_destination() -> None:
    args = {
        "method": "post",
        "url": "http://2130706434:8080/c?a=1",
        "params": {"d": "秘密 data"},
        "body": {"k": "日记"},
        "headers": {"X-Data": "sk-1"},
        "save_to": "out.bin",
    }
    size = len('{"k": "日记"}'.encode())
    assert card_text(args) == (
        "POST http://2130706434:8080/c?a=1&d=%E7%A7%98%E5%AF%86+data (to 127.0.0.2)"
        f" · body {size} bytes · headers X-Data: sk-1 → out.bin"
    )
    long = "http://x.test/?d=" + "a" * 10_000
    assert card_text({"url": long}) == f"GET {long} · body 0 bytes"  # never cut


def test_what_taints_a_run() -> None:
    assert read_of("file_read", {"path": "diary.txt"}) == "diary.txt"
    assert read_of("http_request", {"url": "https://Example.com/a"}) == "a page from example.com"
    assert read_of("http_request", {"url": "https://x.test/", "save_to": "f"}) is None
    assert read_of("db_query", {"dsn": "notes.db", "sql": "SELECT 1"}) == "rows of notes.db"
    assert read_of("launch", {"app": "notes"}) == "the result of notes"
    for tool in ("file_write", "file_list", "cache_get", "cache_set", "shell_exec", "ask"):
        assert read_of(tool, {"path": "x", "key": "k", "cmd": "ls"}) is None
    taint = Taint()
    assert not taint
    for what in ("diary.txt", "a page from example.com", "diary.txt", None, "b", "c"):
        taint.add(what)
    assert why(taint.snapshot()) == "after reading diary.txt, a page from example.com, b and 1 more"
